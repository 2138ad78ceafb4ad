//! What a responder tells the walk: the response it sent (`Answer`) or
//! why its candidate gives way to the next (`Skip`). Small and on the
//! stack: the walk learns from each `Skip` (`walk::Tried`), and once the
//! request is answered the handler counts the `Answer` and writes its log
//! note (`metrics::answered`).

use crate::outcome::Outcome;
use gdn_core::coding::Coding;
use gdn_httpd::Status;
use std::ffi::CStr;

/// A response the handler made (or the status Apache makes one for).
#[derive(Clone, Copy, Debug)]
pub struct Answer {
    pub status: Status,
    /// What was sent, for the counters and the log note.
    pub outcome: Outcome,
    /// The whole body's length (`u64::MAX` when not known).
    pub len: u64,
    /// The coding decoded from and the CPU the decode took.
    pub decode_cpu: Option<(Coding, u64)>,
}

impl Answer {
    pub fn new(status: Status, outcome: Outcome, len: u64) -> Self {
        Answer {
            status,
            outcome,
            len,
            decode_cpu: None,
        }
    }

    /// An answer with no representation (OPTIONS, a refused method or
    /// open, path info).
    pub fn other(status: Status) -> Self {
        Answer::new(status, Outcome::Other, 0)
    }
}

/// Why a candidate gives way to the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip<'r> {
    /// Nothing there: no such file, copy or dictionary.
    Missing,
    /// The sibling is older than the original (warned about when found).
    Stale,
    /// The file could not be opened, or was swapped while it was; a
    /// sibling's coding, so it is not tried again (`None`: a delta).
    Unopenable(Option<Coding>),
    /// The on-demand copy is not made yet: it is asked of the compressor
    /// once the request is answered (`ondemand::ask`).
    WantsCopy,
    /// The sibling could not be decoded (an error line says why).
    Undecodable(Coding),
    /// The sibling version was judged broken (a warning said so once).
    Broken(Coding),
    /// The sibling's window is over the decoding limit.
    TooLarge {
        coding: Coding,
        path: &'r CStr,
        window: u64,
    },
    /// A large zstd window waits for its later turn, after gzip.
    Later,
    /// Too many decodes stream in this process now (`decompress`).
    Busy,
    /// A decode of this sibling was already attempted.
    Tried,
    /// Not to be sent: not a regular file, a stream browsers cannot
    /// decode, a delta whose header names another dictionary.
    Refused,
}

/// The log note (`%{gzip-disk-ng}n`) of a response as it went out:
/// `stale` when the original was sent because its siblings are older.
/// A sibling decoded on the fly is "decompressed" here (the counters'
/// `decoded`); a body an output filter compressed is "on-the-fly", in
/// the filter's coding, as the counters have it.
#[inline]
pub fn note(o: Outcome, stale: bool) -> Option<&'static CStr> {
    use gdn_core::coding::DeltaCoding::*;
    use gdn_core::representation::Representation::*;
    use {Coding::*, Outcome::*};
    let r = match o {
        Outcome::Sent(r) => r,
        OnTheFly(Zstd) => return Some(c"zstd on-the-fly"),
        OnTheFly(Br) => return Some(c"br on-the-fly"),
        OnTheFly(Gzip) => return Some(c"gzip on-the-fly"),
        Dynamic(Zstd) => return Some(c"zstd dynamic"),
        Dynamic(Br) => return Some(c"br dynamic"),
        Dynamic(Gzip) => return Some(c"gzip dynamic"),
        DynamicDelta(Dcz) => return Some(c"dcz dynamic"),
        DynamicDelta(Dcb) => return Some(c"dcb dynamic"),
        NotAcceptable => return Some(c"not-acceptable"),
        Error => return Some(c"error"),
        NotFound | Other => return None,
    };
    Some(match r {
        Sibling(Zstd) => c"zstd precompressed",
        Sibling(Br) => c"br precompressed",
        Sibling(Gzip) => c"gzip precompressed",
        Delta(Dcz) => c"dcz precompressed",
        Delta(Dcb) => c"dcb precompressed",
        Cached(Zstd) => c"zstd cached",
        Cached(Br) => c"br cached",
        Cached(Gzip) => c"gzip cached",
        CachedDelta(Dcz) => c"dcz cached",
        CachedDelta(Dcb) => c"dcb cached",
        Decoded(Zstd) => c"zstd decompressed",
        Decoded(Br) => c"br decompressed",
        Decoded(Gzip) => c"gzip decompressed",
        DecodedCopy(Zstd) => c"zstd decompressed cached",
        DecodedCopy(Br) => c"br decompressed cached",
        DecodedCopy(Gzip) => c"gzip decompressed cached",
        Original if stale => c"stale",
        Original => c"original",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each representation's note starts with the coding the counters
    /// give it; answers without one have the counters' name or none.
    #[test]
    fn notes_agree_with_the_counters() {
        for o in Outcome::ALL {
            let n = note(o, false).map(|n| n.to_str().unwrap_or_default());
            match (o.coding(), n) {
                (Some("identity"), Some(n)) => assert_eq!(n, o.name()),
                (Some(c), Some(n)) => assert_eq!(n.split(' ').next(), Some(c), "{o:?}"),
                (None, Some(n)) => assert_eq!(n.replace('-', "_"), o.name()),
                (_, None) => assert!(matches!(o, Outcome::NotFound | Outcome::Other)),
            }
        }
        assert_eq!(note(Outcome::ORIGINAL, true), Some(c"stale"));
    }
}

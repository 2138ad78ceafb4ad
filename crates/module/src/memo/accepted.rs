//! What an `Accept-Encoding` says, remembered by its bytes: clients send
//! a handful of distinct headers, a browser the same one on every
//! request, and reading a browser's costs more than the rest of the
//! decision (docs/performance.md, "Where the instructions go").

use crate::memo::version::VersionMemo;
use gdn_core::negotiate::Accepted;

/// Headers kept; more distinct ones empty the map, as any memo's do.
const MAX_ENTRIES: usize = 1_024;
/// Longest header remembered (a browser's is about 25 bytes); a longer
/// one is read each time.
const MAX_LEN: usize = 64;

/// A header's bytes, as a key that needs no allocation.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Header {
    len: usize,
    bytes: [u8; MAX_LEN],
}

impl Header {
    fn of(h: &[u8]) -> Option<Header> {
        let mut bytes = [0; MAX_LEN];
        bytes.get_mut(..h.len())?.copy_from_slice(h);
        Some(Header {
            len: h.len(),
            bytes,
        })
    }
}

static MEMO: VersionMemo<Header, Accepted> = VersionMemo::new(MAX_ENTRIES);

/// `Accepted::parse_bytes` of `header`, read once per distinct header.
pub fn parsed(header: Option<&[u8]>) -> Accepted {
    let Some(key) = header.and_then(Header::of) else {
        return Accepted::parse_bytes(header);
    };
    if let Some(a) = MEMO.get(&key) {
        return a;
    }
    let a = Accepted::parse_bytes(header);
    MEMO.put(key, a);
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A remembered header reads as it would afresh: the same, another,
    /// one longer than is remembered, none at all.
    #[test]
    fn a_remembered_header_reads_as_parsed() {
        let long = format!("gzip;q=0.5, {}br", "x, ".repeat(30));
        let headers: [Option<&[u8]>; 9] = [
            Some(b"gzip"),
            Some(b"gzip"),
            Some(b"gzip, deflate, br, zstd"),
            Some(b"gzip, deflate, br, zstd"),
            Some(b"gzip;q=0"),
            None,
            Some(long.as_bytes()),
            Some(b"gzip;q=0"),
            Some(b"GZIP"),
        ];
        for h in headers {
            assert_eq!(parsed(h), Accepted::parse_bytes(h), "{h:?}");
        }
    }
}

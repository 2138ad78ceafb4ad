//! What the module judged of each sibling version (`gdn_core::decode::
//! verdict`): good after the cheap checks or after a decode to its end,
//! refused by browsers, or broken. Keyed by the sibling's version and
//! coding, and held with the original's version it was judged against,
//! so a republished original is judged against afresh. The precompressed
//! path pays one lookup, never a read, for a sibling it judged.

use crate::memo::version::VersionMemo;
use crate::memo::SiblingVersion;
use gdn_httpd::FileVersion;

/// Entries kept.
const MAX_ENTRIES: usize = 16_384;

/// Why a sibling is broken, as a code a memo entry can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    Empty,
    Header,
    Size,
    Undecodable,
    Differs,
}

impl Why {
    pub fn of(b: &gdn_core::decode::verdict::Broken) -> Why {
        use gdn_core::decode::verdict::Broken;
        match b {
            Broken::Empty => Why::Empty,
            Broken::Header(_) => Why::Header,
            Broken::Size { .. } => Why::Size,
            Broken::Undecodable(_) => Why::Undecodable,
            Broken::Differs { .. } => Why::Differs,
        }
    }

    pub fn text(self) -> &'static str {
        match self {
            Why::Empty => "it is empty",
            Why::Header => "its header does not decode",
            Why::Size => "the size it states is not the original's",
            Why::Undecodable => "it does not decode to its end",
            Why::Differs => "it decodes to other content than its original",
        }
    }
}

/// A judgement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judged {
    /// The cheap checks passed; the full check is on its way (off the
    /// request path) or not made (over its bound).
    Cheap,
    /// Decoded to its end, and equal to the original where there is one.
    Whole,
    /// Decodable, but not by browsers (zstd window, large-window brotli):
    /// decoded for clients, never sent as it is.
    Refused,
    /// Never sent nor decoded again in this version; `told` once the
    /// warning was logged and the sibling counted.
    Broken { why: Why, told: bool },
}

static MEMO: VersionMemo<SiblingVersion, (Judged, Option<FileVersion>)> =
    VersionMemo::new(MAX_ENTRIES);

/// The judgement of `key` against the original's version `original`.
#[inline]
pub fn get(key: &SiblingVersion, original: Option<FileVersion>) -> Option<Judged> {
    MEMO.get(key)
        .filter(|&(_, o)| o == original)
        .map(|(j, _)| j)
}

/// Remembers a judgement.
pub fn put(key: SiblingVersion, original: Option<FileVersion>, j: Judged) {
    MEMO.put(key, (j, original));
}

/// Marks a broken sibling's warning as logged; whether this call did
/// (so it is logged and counted once per process and version).
pub fn tell(key: &SiblingVersion) -> bool {
    let mut first = false;
    MEMO.update(key, |(j, _)| {
        if let Judged::Broken { told, .. } = j {
            first = !*told;
            *told = true;
        }
    });
    first
}

/// A full check that ended: its verdict replaces a `Cheap` one (never a
/// broken one found meanwhile).
pub fn checked(key: SiblingVersion, original: Option<FileVersion>, j: Judged) {
    MEMO.update(&key, |(old, o)| {
        if *o == original && *old == Judged::Cheap {
            *old = j;
        }
    });
}

//! The sizes of a file version's representations (its siblings, cached
//! copies), remembered per version of the original (device, inode, mtime,
//! ctime, size), so the default order (smallest first) costs the common
//! request no stat beyond the one of the representation it sends. An
//! ordering hint only: every representation is still looked up, as
//! Apache would serve it, when its candidate is reached.

use crate::memo::version::VersionMemo;
use gdn_core::variant::Sizes;
use gdn_httpd::FileVersion;

/// Entries kept.
const MAX_ENTRIES: usize = 16_384;

/// How long learned sizes are trusted, in seconds: a sibling published
/// or replaced beside an unchanged original is ranked by its size after
/// this long at most (sooner when the one sent changed).
pub const RELEARN_SECS: i64 = 10;

/// The sizes, and the second they were learned.
static MEMO: VersionMemo<FileVersion, (Sizes, i64)> = VersionMemo::new(MAX_ENTRIES);

/// The sizes remembered for this version of the original, if learned
/// within `RELEARN_SECS` of `now` (seconds).
pub fn get(v: &FileVersion, now: i64) -> Option<Sizes> {
    MEMO.get(v)
        .filter(|&(_, at)| (0..RELEARN_SECS).contains(&(now - at)))
        .map(|(s, _)| s)
}

/// Remembers the sizes learned at `now` (seconds).
pub fn put(v: FileVersion, sizes: Sizes, now: i64) {
    MEMO.put(v, (sizes, now));
}

/// Forgets what was learned: a representation turned out otherwise.
pub fn forget(v: &FileVersion) {
    MEMO.update(v, |e| e.1 = i64::MIN);
}

#[cfg(test)]
mod tests {
    use super::*;
    use gdn_core::variant::Size;

    #[test]
    fn remembers_per_version_for_a_while() {
        let v = FileVersion {
            device: 7,
            inode: 8,
            mtime: 9,
            ctime: 9,
            size: 10,
        };
        let mut s = Sizes::default();
        s.codings[1] = Size::Bytes(100);
        assert_eq!(get(&v, 1000), None);
        put(v, s, 1000);
        assert_eq!(get(&v, 1000), Some(s));
        assert_eq!(get(&v, 1000 + RELEARN_SECS - 1), Some(s));
        assert_eq!(get(&v, 1000 + RELEARN_SECS), None);
        // A clock stepped back is not trusted either.
        assert_eq!(get(&v, 999), None);
        assert_eq!(get(&FileVersion { ctime: 10, ..v }, 1000), None);
        forget(&v);
        assert_eq!(get(&v, 1000), None);
    }
}

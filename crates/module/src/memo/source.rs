//! The SHA-256 of each file version's bytes, as this host's compressor
//! recorded it while it read the file (`ondemand::cache::Active::source`):
//! what names the on-demand copies made from those bytes, kept with its
//! hex spelled (`Named`), as the copies' names spell it. Learned once per
//! process and file version (device, inode, mtime, ctime, size), so a hit
//! costs one lookup and no formatting; a version whose digest is not known
//! yet has no copy.

use crate::memo::version::VersionMemo;
use gdn_compressor::key::Named as Source;
use gdn_httpd::FileVersion;

/// Entries kept.
const MAX_ENTRIES: usize = 16_384;

static MEMO: VersionMemo<FileVersion, Source> = VersionMemo::new(MAX_ENTRIES);

/// The digest remembered for this file version.
pub fn get(v: &FileVersion) -> Option<Source> {
    MEMO.get(v)
}

/// Remembers the digest of a file version's bytes.
pub fn put(v: FileVersion, source: Source) {
    MEMO.put(v, source);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewrite_in_place_is_another_version() {
        let v = FileVersion {
            device: 1,
            inode: 2,
            mtime: 3,
            ctime: 4,
            size: 5,
        };
        let s = Source::new([7; 32]);
        put(v, s);
        assert_eq!(get(&v), Some(s));
        // Same inode, size and mtime; only the ctime moved.
        assert_eq!(get(&FileVersion { ctime: 5, ..v }), None);
        assert_eq!(get(&FileVersion { device: 9, ..v }), None);
    }
}

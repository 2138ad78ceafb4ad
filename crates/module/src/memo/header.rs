//! What inspecting a sibling found, remembered per file version (device,
//! inode, mtime, ctime, size), so the precompressed path pays a lookup
//! rather than reads, and decompression can declare a length learned from
//! an earlier complete decode of the same file.

use crate::memo::version::VersionMemo;
use crate::memo::SiblingVersion;
use gdn_core::decode::HeaderFacts;

/// Entries kept.
const MAX_ENTRIES: usize = 16_384;

/// `None`: the sibling could not be inspected (corrupt, truncated), so the
/// precompressed path does not walk it again on every request.
static MEMO: VersionMemo<SiblingVersion, Option<HeaderFacts>> = VersionMemo::new(MAX_ENTRIES);

/// The remembered facts of a file version (`Some(None)`: not inspectable).
pub fn get(key: &SiblingVersion) -> Option<Option<HeaderFacts>> {
    MEMO.get(key)
}

/// Remembers the facts of a file version.
pub fn put(key: SiblingVersion, facts: Option<HeaderFacts>) {
    MEMO.put(key, facts);
}

/// Records the decoded length of a file version after a complete decode,
/// when its headers did not declare one.
pub fn learn_len(key: &SiblingVersion, len: u64) {
    MEMO.update(key, |f| {
        if let Some(f) = f {
            f.declared_len.get_or_insert(len);
        }
    });
}

/// Records that decoding a file version needs `window` bytes of history
/// (its content outgrew a smaller window), so it is passed over up front.
pub fn learn_needed(key: &SiblingVersion, window: u64) {
    MEMO.update(key, |f| {
        if let Some(f) = f {
            f.needed = f.needed.max(window);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use gdn_core::coding::Coding;
    use gdn_httpd::FileVersion;

    fn v(device: u64, inode: u64, mtime: i64, size: u64) -> FileVersion {
        FileVersion {
            device,
            inode,
            mtime,
            ctime: mtime,
            size,
        }
    }

    #[test]
    fn remembers_per_version_learns_lengths_and_stays_bounded() {
        let k = (v(1, 2, 3, 4), Coding::Gzip);
        let f = HeaderFacts {
            window: 32 * 1024,
            needed: 32 * 1024,
            ..HeaderFacts::default()
        };
        put(k, Some(f));
        assert_eq!(get(&k), Some(Some(f)));
        assert_eq!(get(&(v(1, 2, 3, 5), Coding::Gzip)), None);
        // Rewritten in place: same size and mtime, a later ctime.
        let rewritten = FileVersion { ctime: 9, ..k.0 };
        assert_eq!(get(&(rewritten, Coding::Gzip)), None);
        assert_eq!(get(&(v(1, 2, 3, 4), Coding::Zstd)), None);
        learn_len(&k, 777);
        assert_eq!(get(&k).flatten().and_then(|f| f.declared_len), Some(777));
        // A declared length is never overwritten by a learned one.
        learn_len(&k, 778);
        assert_eq!(get(&k).flatten().and_then(|f| f.declared_len), Some(777));
        learn_needed(&k, 16 << 20);
        assert_eq!(get(&k).flatten().map(|f| f.needed), Some(16 << 20));
        let bad = (v(1, 2, 3, 6), Coding::Zstd);
        put(bad, None);
        learn_len(&bad, 5);
        assert_eq!(get(&bad), Some(None));
        // Bounded (in the same test: the map is shared).
        for i in 0..(MAX_ENTRIES as u64 + 10) {
            put((v(9, i, 0, 0), Coding::Br), Some(HeaderFacts::default()));
        }
        assert!(MEMO.len() <= MAX_ENTRIES, "{}", MEMO.len());
    }
}

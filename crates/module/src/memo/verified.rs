//! Sibling versions decoded to their end and found equal to their
//! original (`verdict::Judged::Whole`), shared by every process of the
//! server: the check runs once per version of both files for the whole
//! server, not once per child. A table of fixed size in a shared
//! segment the parent makes before it forks (`attach`), each slot two
//! words of a keyed hash of both files' versions (device, inode, size,
//! mtime, ctime) and the coding; a slot is overwritten by a later entry
//! that hashes to it, which only costs that version another check.
//!
//! Only this positive verdict is shared: a broken sibling is found, and
//! told, by each process, as before. A slot is written one word after
//! the other, without a lock: a reader that meets a half-written slot
//! sees words of two different entries, which match its key only if
//! both hashes of two other versions collide with its own.

use super::verdict::Key;
use gdn_httpd::shm::Counters;
use gdn_httpd::{FileVersion, PostConfig};
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::OnceLock;

/// Entries kept: as many as each process's own verdict memo.
const SLOTS: usize = 16_384;

/// Where the segment hangs on the process pool.
const SEGMENT: &std::ffi::CStr = c"mod_gzip_disk_ng verified siblings";

/// The table's layout, for a segment an earlier build made.
const LAYOUT: u64 = 0x6764_6e76_0000_0001;

static TABLE: Counters<{ 2 * SLOTS }> = Counters::new();

/// The hash's key: drawn in the parent when it first attaches the table
/// (again after a restart that loads the module anew), inherited by the
/// children it forks; entries made under another key never match.
static KEYS: OnceLock<RandomState> = OnceLock::new();

/// Finds or makes the table (post_config, in the parent, before the
/// children fork).
pub fn attach(ctx: &PostConfig<'_>) {
    KEYS.get_or_init(RandomState::new);
    let _ = TABLE.attach(ctx, SEGMENT, LAYOUT);
}

/// The two words naming a sibling version judged against `original`,
/// neither of them zero (an empty slot).
fn words(key: &Key, original: Option<FileVersion>) -> Option<(u64, u64)> {
    let keys = KEYS.get()?;
    let word = |half: u8| keys.hash_one((half, key, original)) | 1;
    Some((word(0), word(1)))
}

/// Whether some process of this server verified `key` against
/// `original`.
pub fn get(key: &Key, original: Option<FileVersion>) -> bool {
    let (Some(t), Some((a, b))) = (TABLE.get(), words(key, original)) else {
        return false;
    };
    let i = 2 * (a as usize % SLOTS);
    t[i].load(Relaxed) == a && t[i + 1].load(Relaxed) == b
}

/// Records that `key` was verified against `original`, for every
/// process of the server.
pub fn put(key: &Key, original: Option<FileVersion>) {
    let (Some(t), Some((a, b))) = (TABLE.get(), words(key, original)) else {
        return;
    };
    let i = 2 * (a as usize % SLOTS);
    t[i].store(a, Relaxed);
    t[i + 1].store(b, Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use gdn_core::coding::Coding;

    fn version(inode: u64) -> FileVersion {
        FileVersion {
            device: 1,
            inode,
            mtime: 2,
            ctime: 3,
            size: 4,
        }
    }

    #[test]
    fn words_name_both_versions_and_the_coding() {
        let _ = KEYS.get_or_init(RandomState::new);
        let k = (version(10), Coding::Gzip);
        let w = words(&k, Some(version(20))).unwrap();
        assert_eq!(words(&k, Some(version(20))), Some(w));
        assert_ne!(words(&k, Some(version(21))), Some(w));
        assert_ne!(words(&k, None), Some(w));
        assert_ne!(
            words(&(version(10), Coding::Br), Some(version(20))),
            Some(w)
        );
        assert_ne!(
            words(&(version(11), Coding::Gzip), Some(version(20))),
            Some(w)
        );
        assert!(w.0 != 0 && w.1 != 0);
    }

    #[test]
    fn without_the_segment_nothing_is_shared() {
        let k = (version(30), Coding::Zstd);
        put(&k, None);
        assert!(!get(&k, None));
    }
}

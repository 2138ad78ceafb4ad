//! What full checks of siblings (and of published deltas, against the
//! dictionary they name) found, shared by every process of the
//! server: a sibling version is decoded to its end once for the whole
//! server, not once per child, and a bomb costs one bounded decode, not
//! one in each child that met it. A table of fixed size in a shared
//! segment the parent makes before it forks (`attach`); each slot is two
//! words of a keyed hash of both files' versions (device, inode, size,
//! mtime, ctime) and the coding, the second word's low byte naming what
//! was found; a slot is overwritten by a later entry that hashes to it,
//! which only costs that version another check.
//!
//! Beside the findings, a check under way holds a claim (its slot's
//! second word the second it was taken) until it ends (`release`), for
//! at most `CLAIM_SECS`: another process that meets the sibling then
//! leaves the check to it. A check that ended leaves no claim, so a
//! process that finds no finding (it was overwritten, or the check could
//! not read the files) checks again; a claim whose check never ended
//! (its process was killed) lapses, and a later request asks again.
//!
//! A slot is written one word after the other, without a lock: a reader
//! that meets a half-written slot sees words of two different entries,
//! which match its key only if both hashes of two other versions collide
//! with its own.

use super::verdict::Why;
use super::SiblingVersion;
use gdn_httpd::shm::Counters;
use gdn_httpd::{FileVersion, PostConfig};
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// Entries kept: as many as each process's own verdict memo.
const SLOTS: usize = 16_384;

/// Where the segment hangs on the process pool.
const SEGMENT: &std::ffi::CStr = c"mod_gzip_disk_ng verified siblings";

/// The table's layout, for a segment an earlier build made.
const LAYOUT: u64 = 0x6764_6e76_0000_0002;

/// How long a check's claim holds off other processes' checks.
const CLAIM_SECS: u64 = 60;

static TABLE: Counters<{ 2 * SLOTS }> = Counters::new();

/// The hash's key: drawn in the parent when it first attaches the table
/// (again after a restart that loads the module anew), inherited by the
/// children it forks; entries made under another key never match.
static KEYS: OnceLock<RandomState> = OnceLock::new();

/// What a full check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// Decoded to its end, equal to its original where there is one.
    Whole,
    /// Decodes past the bound a check decodes without an original: left
    /// to the cheap checks' word.
    PastBound,
    /// Broken, for this reason.
    Broken(Why),
}

impl Found {
    fn tag(self) -> u64 {
        match self {
            Found::Whole => 1,
            Found::PastBound => 2,
            Found::Broken(w) => 3 + w as u64,
        }
    }

    fn of_tag(tag: u64) -> Option<Found> {
        const WHYS: [Why; 5] = [
            Why::Empty,
            Why::Header,
            Why::Size,
            Why::Undecodable,
            Why::Differs,
        ];
        match tag {
            1 => Some(Found::Whole),
            2 => Some(Found::PastBound),
            t => WHYS
                .get(usize::try_from(t.checked_sub(3)?).ok()?)
                .map(|&w| Found::Broken(w)),
        }
    }
}

/// Finds or makes the table (post_config, in the parent, before the
/// children fork).
pub fn attach(ctx: &PostConfig<'_>) {
    KEYS.get_or_init(RandomState::new);
    let _ = TABLE.attach(ctx, SEGMENT, LAYOUT);
}

/// Whether findings are shared (the segment was made).
pub fn shared() -> bool {
    TABLE.get().is_some()
}

/// The two hashes naming a sibling version judged against `original`,
/// for its finding (`kind` 0) or its claim (1); the first never zero (an
/// empty slot).
fn words(key: &impl Hash, original: Option<FileVersion>, kind: u8) -> Option<(u64, u64)> {
    let keys = KEYS.get()?;
    let word = |half: u8| keys.hash_one((kind, half, key, original));
    Some((word(0) | 1, word(1)))
}

/// The slot of first word `a` (whose low bit is always set).
fn slot(t: &[AtomicU64], a: u64) -> (&AtomicU64, &AtomicU64) {
    let i = 2 * ((a >> 1) as usize % (t.len() / 2));
    (&t[i], &t[i + 1])
}

/// What some process of this server's check found of `key` against
/// `original`.
pub fn found(key: &impl Hash, original: Option<FileVersion>) -> Option<Found> {
    let (t, (a, b)) = (TABLE.get()?, words(key, original, 0)?);
    read(t, a, b)
}

fn read(t: &[AtomicU64], a: u64, b: u64) -> Option<Found> {
    let (x, y) = slot(t, a);
    let second = y.load(Relaxed);
    (x.load(Relaxed) == a && second >> 8 == b >> 8)
        .then(|| Found::of_tag(second & 0xff))
        .flatten()
}

/// Records what a check found of `key` against `original`, for every
/// process of the server.
pub fn put(key: &impl Hash, original: Option<FileVersion>, f: Found) {
    if let (Some(t), Some((a, b))) = (TABLE.get(), words(key, original, 0)) {
        write(t, a, b, f);
    }
}

fn write(t: &[AtomicU64], a: u64, b: u64, f: Found) {
    let (x, y) = slot(t, a);
    x.store(a, Relaxed);
    y.store((b & !0xff) | f.tag(), Relaxed);
}

/// Whether this process takes the full check of `key` against
/// `original`: no other process holds a claim of it younger than
/// `CLAIM_SECS`. Without the table, every process checks for itself.
pub fn claim(key: &SiblingVersion, original: Option<FileVersion>) -> bool {
    let (Some(t), Some((a, _))) = (TABLE.get(), words(key, original, 1)) else {
        return true;
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| d.as_secs().max(1));
    take(t, a, now)
}

/// Ends this process's claim of the check of `key` against `original`,
/// whatever the check found: a later request that finds no finding
/// checks again at once, rather than after the claim lapsed.
pub fn release(key: &SiblingVersion, original: Option<FileVersion>) {
    if let (Some(t), Some((a, _))) = (TABLE.get(), words(key, original, 1)) {
        drop_claim(t, a);
    }
}

fn drop_claim(t: &[AtomicU64], a: u64) {
    let (x, y) = slot(t, a);
    if x.load(Relaxed) == a {
        y.store(0, Relaxed);
    }
}

fn take(t: &[AtomicU64], a: u64, now: u64) -> bool {
    let (x, y) = slot(t, a);
    let since = y.load(Relaxed);
    if x.load(Relaxed) == a && now.saturating_sub(since) < CLAIM_SECS {
        return false;
    }
    x.store(a, Relaxed);
    y.store(now, Relaxed);
    true
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
    fn words_name_both_versions_the_coding_and_the_kind() {
        let _ = KEYS.get_or_init(RandomState::new);
        let k = (version(10), Coding::Gzip);
        let w = words(&k, Some(version(20)), 0).unwrap();
        assert_eq!(words(&k, Some(version(20)), 0), Some(w));
        assert_ne!(words(&k, Some(version(20)), 1), Some(w));
        assert_ne!(words(&k, Some(version(21)), 0), Some(w));
        assert_ne!(words(&k, None, 0), Some(w));
        let br = (version(10), Coding::Br);
        assert_ne!(words(&br, Some(version(20)), 0), Some(w));
        let other = (version(11), Coding::Gzip);
        assert_ne!(words(&other, Some(version(20)), 0), Some(w));
        assert!(w.0 != 0);
    }

    #[test]
    fn each_finding_reads_back_and_only_under_its_own_words() {
        let t: Vec<AtomicU64> = (0..8).map(|_| AtomicU64::new(0)).collect();
        let all = [
            Found::Whole,
            Found::PastBound,
            Found::Broken(Why::Empty),
            Found::Broken(Why::Header),
            Found::Broken(Why::Size),
            Found::Broken(Why::Undecodable),
            Found::Broken(Why::Differs),
        ];
        for f in all {
            write(&t, 0x1235, 0xabcd_0000, f);
            assert_eq!(read(&t, 0x1235, 0xabcd_0000), Some(f));
            assert_eq!(read(&t, 0x1235, 0xabce_0000), None, "another second word");
            assert_eq!(read(&t, 0x1239, 0xabcd_0000), None, "another first word");
        }
        assert_eq!(read(&t, 0x2001, 0), None, "an empty slot");
    }

    #[test]
    fn a_claim_holds_others_off_until_it_lapses() {
        let t: Vec<AtomicU64> = (0..8).map(|_| AtomicU64::new(0)).collect();
        assert!(take(&t, 0x51, 1000), "the first takes it");
        assert!(!take(&t, 0x51, 1000 + CLAIM_SECS - 1), "held");
        assert!(take(&t, 0x53, 1001), "another sibling's claim");
        assert!(take(&t, 0x51, 1000 + CLAIM_SECS), "lapsed");
    }

    #[test]
    fn a_claim_released_is_taken_again_at_once() {
        let t: Vec<AtomicU64> = (0..8).map(|_| AtomicU64::new(0)).collect();
        assert!(take(&t, 0x51, 1000));
        drop_claim(&t, 0x59);
        assert!(!take(&t, 0x51, 1001), "another's release leaves it");
        drop_claim(&t, 0x51);
        assert!(take(&t, 0x51, 1001), "its check ended");
        assert!(!take(&t, 0x51, 1002), "and the new claim holds");
    }

    #[test]
    fn every_slot_is_used() {
        let t: Vec<AtomicU64> = (0..8).map(|_| AtomicU64::new(0)).collect();
        let mut used: Vec<usize> = (0..4u64)
            .map(|i| {
                let (x, _) = slot(&t, (i << 1) | 1);
                t.iter().position(|w| std::ptr::eq(w, x)).unwrap_or(99)
            })
            .collect();
        used.sort_unstable();
        assert_eq!(used, [0, 2, 4, 6]);
    }

    #[test]
    fn without_the_segment_nothing_is_shared_and_each_checks() {
        let k = (version(30), Coding::Zstd);
        put(&k, None, Found::Whole);
        assert_eq!(found(&k, None), None);
        assert!(claim(&k, None) && claim(&k, None));
    }
}

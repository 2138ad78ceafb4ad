//! This host's records of which digest each file version has, packed in
//! one table per boot (`hosts/<machine>/<boot>/digests` in the cache
//! root) rather than a file each: a record takes 80 bytes, not a 4 KiB
//! block, and the table's blocks count against `GzipDiskNgCacheMaxSize`
//! with the copies.
//!
//! The table is a file of fixed slots, one record each: the version
//! (size, mtime, device, inode, ctime), the SHA-256 of its bytes, and a
//! check (8 bytes of a SHA-256 over both), so a slot read while it is
//! being written, or never written, is no record. A version's record
//! lies in a window of `WINDOW` slots that starts where the SHA-256 of
//! the version says, so a request reads one window (one `pread`) to
//! learn a version's digest. The compressor writes a version's record
//! in its own slot of the window, else in an empty one, else over
//! another version's (chosen by the new version's hash): a record
//! overwritten only costs its version a second read of the file, as an
//! unknown version is answered as if it had no copy, and queued. The
//! table starts at one block and is made twice as large once a window
//! is more than half taken (`compressor::records`), up to a slot per
//! 4 KiB block the limit holds (80 bytes each, about 2 % of the limit).

use super::key::{SourceHash, Version};
use gdn_core::dictionary;

/// The table's name in this boot's records directory.
pub const TABLE: &str = "digests";

/// Bytes of a record: the version (40), the digest (32), the check (8).
pub const SLOT: usize = 80;

/// Slots a version's record may take, read at once (2,560 bytes): of
/// 100,000 records written to a table that grows once a window is half
/// taken, all were kept with 32 (`records`' test run with N = 100,000),
/// where a table grown once half its slots were taken kept 99,958 with
/// 16 and 99,257 with 8.
pub const WINDOW: usize = 32;

/// Bytes of a window.
pub const WINDOW_BYTES: usize = SLOT * WINDOW;

/// Fewest slots a table has: one window, 2,560 bytes, one 4 KiB block.
const MIN_SLOTS: u64 = 32;

/// Most slots a table has (80 × 2^24 bytes: 1.25 GiB).
const MAX_SLOTS: u64 = 1 << 24;

/// Where a record's version ends and its digest begins.
const VERSION_BYTES: usize = Version::BYTES;

/// Where the digest ends and the check begins.
const CHECKED_BYTES: usize = VERSION_BYTES + 32;

/// The longest table of a cache limited to `max_size` bytes: a slot per
/// 4 KiB block the limit holds (a power of two), as the index holds an
/// entry per block; `table_len(0)` is a new table's length.
pub fn table_len(max_size: u64) -> u64 {
    let slots = (max_size / 4096)
        .clamp(MIN_SLOTS, MAX_SLOTS)
        .next_power_of_two();
    slots * SLOT as u64
}

/// The version as a record spells it.
fn version_bytes(v: &Version) -> [u8; VERSION_BYTES] {
    v.to_le_bytes()
}

/// SHA-256 of `tag` and `body`, written on the stack.
fn tagged_hash(tag: &[u8; 8], body: &[u8]) -> dictionary::Hash {
    let mut buf = [0u8; 8 + CHECKED_BYTES];
    buf[..8].copy_from_slice(tag);
    buf[8..8 + body.len()].copy_from_slice(body);
    dictionary::hash(&buf[..8 + body.len()])
}

/// The byte offset of `v`'s window in a table of `table_len` bytes;
/// `None` for a table too short to hold one (being made, or not one).
pub fn window_of(v: &Version, table_len: u64) -> Option<u64> {
    let slots = table_len / SLOT as u64;
    let homes = slots.checked_sub(WINDOW as u64 - 1).filter(|&h| h > 0)?;
    let h = tagged_hash(b"gdn-slot", &version_bytes(v));
    let mut first = [0u8; 8];
    first.copy_from_slice(&h[..8]);
    Some(u64::from_le_bytes(first) % homes * SLOT as u64)
}

/// The record of `v` having the digest `source`.
pub fn encode(v: &Version, source: &SourceHash) -> [u8; SLOT] {
    let mut slot = [0u8; SLOT];
    slot[..VERSION_BYTES].copy_from_slice(&version_bytes(v));
    slot[VERSION_BYTES..CHECKED_BYTES].copy_from_slice(source);
    let check = tagged_hash(b"gdn-rcrd", &slot[..CHECKED_BYTES]);
    slot[CHECKED_BYTES..].copy_from_slice(&check[..SLOT - CHECKED_BYTES]);
    slot
}

/// The record a slot holds; `None` for an empty, torn or foreign one.
pub fn decode(slot: &[u8]) -> Option<(Version, SourceHash)> {
    let slot: &[u8; SLOT] = slot.try_into().ok()?;
    let check = tagged_hash(b"gdn-rcrd", &slot[..CHECKED_BYTES]);
    if check[..SLOT - CHECKED_BYTES] != slot[CHECKED_BYTES..] {
        return None;
    }
    let mut source = [0u8; 32];
    source.copy_from_slice(&slot[VERSION_BYTES..CHECKED_BYTES]);
    let version = slot[..VERSION_BYTES].try_into().ok()?;
    Some((Version::from_le_bytes(version), source))
}

/// The digest `window` records for `v`, if it holds its record.
pub fn find(window: &[u8], v: &Version) -> Option<SourceHash> {
    let want = version_bytes(v);
    window
        .chunks_exact(SLOT)
        .filter(|s| s[..VERSION_BYTES] == want)
        .find_map(|s| decode(s).filter(|(got, _)| got == v).map(|(_, s)| s))
}

/// Which slot of `window` the record of `v` goes to: its own, else an
/// empty (or torn) one, else another version's, chosen by `v`'s hash so
/// versions sharing a window do not keep overwriting one slot.
pub fn slot_for(window: &[u8], v: &Version) -> usize {
    let slots = || window.chunks_exact(SLOT).enumerate();
    let want = version_bytes(v);
    if let Some((i, _)) = slots().find(|(_, s)| s[..VERSION_BYTES] == want && decode(s).is_some()) {
        return i;
    }
    if let Some((i, _)) = slots().find(|(_, s)| decode(s).is_none()) {
        return i;
    }
    let h = tagged_hash(b"gdn-evct", &want);
    usize::from(h[0]) % (window.len() / SLOT).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Local;

    fn v(n: u64) -> Version {
        Version {
            size: n,
            mtime_us: 1_700_000_000_000_000 + n as i64,
            local: Local {
                device: 2049,
                inode: 1000 + n,
                ctime_us: 1_700_000_000_000_001,
            },
        }
    }

    #[test]
    fn a_record_binds_the_whole_version_to_its_digest() {
        let slot = encode(&v(1), &[7; 32]);
        assert_eq!(decode(&slot), Some((v(1), [7; 32])));
        let mut window = [0u8; WINDOW_BYTES];
        window[SLOT * 3..SLOT * 4].copy_from_slice(&slot);
        assert_eq!(find(&window, &v(1)), Some([7; 32]));
        // Another ctime (a rewrite in place): not this record.
        let mut moved = v(1);
        moved.local.ctime_us += 1;
        assert_eq!(find(&window, &moved), None);
        // Any byte changed (a torn write): no record.
        for i in 0..SLOT {
            let mut torn = slot;
            torn[i] ^= 1;
            assert_eq!(decode(&torn), None, "byte {i}");
        }
        assert_eq!(decode(&[0u8; SLOT]), None, "an empty slot");
    }

    #[test]
    fn records_go_to_their_own_slot_then_an_empty_one_then_evict() {
        let mut window = [0u8; WINDOW_BYTES];
        for n in 0..WINDOW as u64 {
            let i = slot_for(&window, &v(n));
            assert_eq!(i, n as usize, "the first empty slot");
            window[i * SLOT..(i + 1) * SLOT].copy_from_slice(&encode(&v(n), &[n as u8; 32]));
        }
        assert_eq!(slot_for(&window, &v(3)), 3, "its own slot");
        let i = slot_for(&window, &v(100));
        assert!(i < WINDOW);
        window[i * SLOT..(i + 1) * SLOT].copy_from_slice(&encode(&v(100), &[9; 32]));
        assert_eq!(find(&window, &v(100)), Some([9; 32]));
        let kept = (0..WINDOW as u64)
            .filter(|&n| find(&window, &v(n)).is_some())
            .count();
        assert_eq!(kept, WINDOW - 1);
    }

    #[test]
    fn windows_lie_within_the_table() {
        for max in [0, 64 << 10, 1 << 30, u64::MAX] {
            let len = table_len(max);
            assert_eq!(len % SLOT as u64, 0);
            for n in 0..1000 {
                let at = window_of(&v(n), len).unwrap();
                assert!(at + WINDOW_BYTES as u64 <= len);
                assert_eq!(at % SLOT as u64, 0);
            }
        }
        assert_eq!(table_len(1 << 30), 262_144 * SLOT as u64);
        assert_eq!(window_of(&v(1), (SLOT * (WINDOW - 1)) as u64), None);
        assert_eq!(window_of(&v(1), 0), None);
    }
}

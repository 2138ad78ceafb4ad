//! What the cache holds, in memory: each copy's size and how recently it
//! was used, in least-recently-used order, with no I/O of its own so the
//! eviction order is tested alone.
//!
//! Stand-ins (not worth compressing) count 0 bytes against the size limit
//! but are entries like any copy: they leave in least-recently-used order
//! when eviction sweeps past them, and `max_entries` bounds the memory
//! the index needs however many of them there are.

use crate::key::{Kind, SourceHash};
use std::collections::{BTreeMap, HashMap};

/// A copy's identity: the digest of its source bytes and what it holds.
pub(super) type CopyId = (SourceHash, Kind);

/// The block copies are counted in at least: a file that holds a byte
/// takes one block of the filesystem, 4 KiB on ext4 and xfs as made by
/// default (`st_blocks` counts in 512-byte units of them).
pub(super) const BLOCK: u64 = 4096;

/// Least entries allowed, for small limits.
const MIN_ENTRIES: usize = 1 << 16;

/// Most entries kept under a byte limit of `max_size`: as many copies as
/// the limit holds at one block each (stand-ins, of no block, count as
/// entries too); at least `MIN_ENTRIES`. The default 1 GiB allows 262,144
/// entries, whose index takes about 320 bytes each, 82 MB at most
/// (`memory::index_memory_per_entry` measures it); beyond it the least
/// recently used go, whatever the bytes.
pub(super) fn max_entries(max_size: u64) -> usize {
    usize::try_from(max_size / BLOCK)
        .unwrap_or(usize::MAX)
        .max(MIN_ENTRIES)
}

struct Entry {
    size: u64,
    /// Position in `order`.
    tick: u64,
}

/// The copies and stand-ins the cache holds.
pub(super) struct Index {
    entries: HashMap<CopyId, Entry>,
    /// Least recently used first.
    order: BTreeMap<u64, CopyId>,
    next_tick: u64,
    /// The tick of the next entry found at start, below every tick given
    /// meanwhile: what the scan finds is older than what is made beside it.
    found_tick: u64,
    total: u64,
    max_entries: usize,
}

/// Ticks below it are those of entries found at start.
const FOUND_TICKS: u64 = 1 << 48;

impl Default for Index {
    fn default() -> Self {
        Index::with_max_entries(max_entries(u64::MAX))
    }
}

impl Index {
    pub(super) fn with_max_entries(max_entries: usize) -> Index {
        Index {
            entries: HashMap::new(),
            order: BTreeMap::new(),
            next_tick: FOUND_TICKS,
            found_tick: 0,
            total: 0,
            max_entries,
        }
    }

    /// Adds `key`, found at start, as older than every entry added since
    /// it started, unless it is known already.
    pub(super) fn insert_found(&mut self, key: CopyId, size: u64) {
        if self.entries.contains_key(&key) || self.found_tick >= FOUND_TICKS {
            return;
        }
        let tick = self.found_tick;
        self.found_tick += 1;
        self.order.insert(tick, key);
        self.entries.insert(key, Entry { size, tick });
        self.total += size;
    }

    /// Gives back the memory of entries gone, once most have (after an
    /// eviction of many, or a lower limit at restart).
    pub(super) fn shrink(&mut self) {
        if self.entries.capacity() > 2 * self.entries.len().max(1024) {
            self.entries.shrink_to_fit();
        }
    }

    /// Bytes of all copies.
    pub(super) fn total(&self) -> u64 {
        self.total
    }

    pub(super) fn max_entries(&self) -> usize {
        self.max_entries
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(super) fn contains(&self, key: &CopyId) -> bool {
        self.entries.contains_key(key)
    }

    /// Adds (or replaces) `key` as the most recently used.
    pub(super) fn insert(&mut self, key: CopyId, size: u64) {
        self.remove(&key);
        let tick = self.next_tick;
        self.next_tick += 1;
        self.order.insert(tick, key);
        self.entries.insert(key, Entry { size, tick });
        self.total += size;
    }

    /// Marks `key` the most recently used; false when it is unknown.
    pub(super) fn touch(&mut self, key: &CopyId) -> bool {
        let Some(e) = self.entries.get_mut(key) else {
            return false;
        };
        self.order.remove(&e.tick);
        e.tick = self.next_tick;
        self.next_tick += 1;
        self.order.insert(e.tick, *key);
        true
    }

    /// Forgets `key`; its size if it was known.
    pub(super) fn remove(&mut self, key: &CopyId) -> Option<u64> {
        let e = self.entries.remove(key)?;
        self.order.remove(&e.tick);
        self.total -= e.size;
        Some(e.size)
    }

    /// The deltas held against any of the dictionaries `hashes`.
    pub(super) fn deltas_against(&self, hashes: &[gdn_core::dictionary::Hash]) -> Vec<CopyId> {
        self.entries
            .keys()
            .filter(|(_, k)| matches!(k, Kind::Delta(_, h) if hashes.contains(h)))
            .copied()
            .collect()
    }

    /// Forgets the least recently used entries until the copies fit
    /// `max_size` bytes and the most entries; returns them, for their
    /// files to be removed.
    pub(super) fn evict(&mut self, max_size: u64) -> Vec<CopyId> {
        let mut gone = Vec::new();
        while self.total > max_size || self.entries.len() > self.max_entries {
            let Some((_, key)) = self.order.pop_first() else {
                break;
            };
            if let Some(e) = self.entries.remove(&key) {
                self.total -= e.size;
            }
            gone.push(key);
        }
        if !gone.is_empty() {
            self.shrink();
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gdn_core::coding::Coding;

    fn key(n: u64) -> CopyId {
        let mut source = [0; 32];
        source[..8].copy_from_slice(&n.to_le_bytes());
        (source, Kind::Coded(Coding::Br))
    }

    #[test]
    fn least_recently_used_go_first() {
        let mut ix = Index::default();
        for n in 1..=4 {
            ix.insert(key(n), 100);
        }
        ix.insert(key(9), 0); // a stand-in
        assert!(ix.touch(&key(1)));
        assert!(!ix.touch(&key(7)));
        assert_eq!(ix.total(), 400);
        assert_eq!(ix.evict(250), [key(2), key(3)]);
        assert_eq!((ix.total(), ix.len()), (200, 3));
        // The one just made counts: older ones go until it fits.
        ix.insert(key(5), 200);
        assert_eq!(ix.evict(250), [key(4), key(9), key(1)]);
        assert_eq!((ix.total(), ix.len()), (200, 1));
        assert!(ix.contains(&key(5)));
        ix.insert(key(6), 10);
        assert_eq!(ix.evict(250), []);
        ix.insert(key(7), 100);
        assert_eq!(ix.evict(250), [key(5)]);
        assert_eq!(ix.remove(&key(6)), Some(10));
        assert_eq!(ix.remove(&key(7)), Some(100));
        assert_eq!((ix.total(), ix.len()), (0, 0));
    }

    #[test]
    fn entries_are_capped_by_what_the_limit_holds() {
        assert_eq!(max_entries(1 << 30), 262_144);
        assert_eq!(max_entries(1 << 20), MIN_ENTRIES);
        let mut ix = Index::with_max_entries(100);
        for n in 0..103 {
            ix.insert(key(n), 0);
        }
        assert_eq!(ix.evict(u64::MAX), [key(0), key(1), key(2)]);
        assert_eq!(ix.len(), 100);
    }

    #[test]
    fn what_the_start_finds_is_older_than_what_is_made_beside_it() {
        let mut ix = Index::default();
        ix.insert(key(1), 100);
        ix.insert_found(key(2), 100);
        ix.insert_found(key(1), 100);
        ix.insert_found(key(3), 100);
        assert_eq!((ix.len(), ix.total()), (3, 300));
        assert_eq!(ix.evict(100), [key(2), key(3)]);
    }
}

/// The index's memory per entry, as docs/on-demand.md gives it:
/// `cargo test --release --locked -p mod_gzip_disk_ng --lib index_memory -- --ignored --nocapture`.
#[cfg(test)]
mod memory {
    use super::*;
    use gdn_core::coding::Coding;

    fn rss_kb() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("VmRSS")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    #[test]
    #[ignore = "a measurement, printed"]
    fn index_memory_per_entry() {
        const N: u64 = 262_144;
        let before = rss_kb();
        let mut ix = Index::default();
        for n in 0..N {
            let mut source = [0u8; 32];
            source[..8].copy_from_slice(&n.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes());
            ix.insert((source, Kind::Coded(Coding::Br)), 4096);
        }
        let full = rss_kb();
        ix.evict(4096 * N / 8);
        let evicted = rss_kb();
        println!(
            "index: {} bytes per entry at {N} entries; {} kB held after evicting 7/8, {} kB before",
            (full - before) * 1024 / N,
            evicted - before,
            full - before
        );
        assert_eq!(ix.len() as u64, N / 8);
    }
}

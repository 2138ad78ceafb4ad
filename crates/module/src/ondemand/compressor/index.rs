//! What the cache holds, in memory: each copy's size and how recently it
//! was used, in least-recently-used order, with no I/O of its own so the
//! eviction order is tested alone.
//!
//! Markers (not worth compressing) count 0 bytes against the size limit
//! but are entries like any copy: they leave in least-recently-used order
//! when eviction sweeps past them, and `MAX_ENTRIES` bounds the memory
//! the index needs however many of them there are.

use crate::ondemand::key::{Kind, Source};
use std::collections::{BTreeMap, HashMap};

/// A copy's identity: the digest of its source bytes and what it holds.
pub(super) type Key = (Source, Kind);

/// Most entries kept (about 40 MB of index at most): beyond it the least
/// recently used go, whatever the bytes.
pub(super) const MAX_ENTRIES: usize = 1 << 18;

struct Entry {
    size: u64,
    /// Position in `order`.
    tick: u64,
}

/// The copies and markers the cache holds.
#[derive(Default)]
pub(super) struct Index {
    entries: HashMap<Key, Entry>,
    /// Least recently used first.
    order: BTreeMap<u64, Key>,
    next_tick: u64,
    total: u64,
}

impl Index {
    /// Bytes of all copies.
    pub(super) fn total(&self) -> u64 {
        self.total
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(super) fn contains(&self, key: &Key) -> bool {
        self.entries.contains_key(key)
    }

    /// Adds (or replaces) `key` as the most recently used.
    pub(super) fn insert(&mut self, key: Key, size: u64) {
        self.remove(&key);
        let tick = self.next_tick;
        self.next_tick += 1;
        self.order.insert(tick, key);
        self.entries.insert(key, Entry { size, tick });
        self.total += size;
    }

    /// Marks `key` the most recently used; false when it is unknown.
    pub(super) fn touch(&mut self, key: &Key) -> bool {
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
    pub(super) fn remove(&mut self, key: &Key) -> Option<u64> {
        let e = self.entries.remove(key)?;
        self.order.remove(&e.tick);
        self.total -= e.size;
        Some(e.size)
    }

    /// The deltas held against any of the dictionaries `hashes`.
    pub(super) fn deltas_against(&self, hashes: &[gdn_core::dictionary::Hash]) -> Vec<Key> {
        self.entries
            .keys()
            .filter(|(_, k)| matches!(k, Kind::Delta(_, h) if hashes.contains(h)))
            .copied()
            .collect()
    }

    /// Forgets the least recently used entries until the copies fit
    /// `max_size` bytes and `MAX_ENTRIES`; returns them, for their files
    /// to be removed.
    pub(super) fn evict(&mut self, max_size: u64) -> Vec<Key> {
        let mut gone = Vec::new();
        while self.total > max_size || self.entries.len() > MAX_ENTRIES {
            let Some((_, key)) = self.order.pop_first() else {
                break;
            };
            if let Some(e) = self.entries.remove(&key) {
                self.total -= e.size;
            }
            gone.push(key);
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gdn_core::coding::Coding;

    fn key(n: u64) -> Key {
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
        ix.insert(key(9), 0); // a marker
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
    fn entries_are_capped() {
        let mut ix = Index::default();
        for n in 0..MAX_ENTRIES as u64 + 3 {
            ix.insert(key(n), 0);
        }
        assert_eq!(ix.evict(u64::MAX), [key(0), key(1), key(2)]);
        assert_eq!(ix.len(), MAX_ENTRIES);
    }
}

//! A bounded per-process map from file versions (device, inode, mtime,
//! ctime, size) to answers that cost a read or a decode, so a changed
//! file, even one rewritten in place with its old size and mtime, is
//! simply a new key. The map is emptied when full, so memory stays
//! bounded and a republished tree re-learns its answers once.

use rustc_hash::FxHashMap;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard};

/// Keys are a few integers: FxHash, not SipHash, which would cost more
/// than the rest of the lookup on the precompressed path.
type Map<K, V> = FxHashMap<K, V>;

/// A bounded map from file versions (or keys made of them) to answers,
/// shared by the threads of a process.
pub(super) struct VersionMemo<K, V> {
    map: Mutex<Option<Map<K, V>>>,
    max: usize,
}

impl<K: Hash + Eq, V> VersionMemo<K, V> {
    /// An empty memo holding at most `max` entries.
    pub const fn new(max: usize) -> Self {
        VersionMemo {
            map: Mutex::new(None),
            max,
        }
    }

    /// The map, unless a thread panicked holding it (then the memo is
    /// simply not used).
    fn lock(&self) -> Option<MutexGuard<'_, Option<Map<K, V>>>> {
        self.map.lock().ok()
    }

    /// The remembered answer.
    pub fn get(&self, k: &K) -> Option<V>
    where
        V: Copy,
    {
        self.lock()?.as_ref()?.get(k).copied()
    }

    /// Remembers an answer; whether the key was new.
    pub fn put(&self, k: K, v: V) -> bool {
        let Some(mut g) = self.lock() else {
            return true;
        };
        let map = g.get_or_insert_with(Map::default);
        if map.len() >= self.max && !map.contains_key(&k) {
            map.clear();
        }
        map.insert(k, v).is_none()
    }

    /// Changes a remembered answer in place, if there is one.
    pub fn update(&self, k: &K, f: impl FnOnce(&mut V)) {
        if let Some(v) = self.lock().as_mut().and_then(|g| g.as_mut()?.get_mut(k)) {
            f(v);
        }
    }

    /// Entries held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock()
            .and_then(|g| g.as_ref().map(Map::len))
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_updates_and_stays_bounded() {
        let c: VersionMemo<u64, u32> = VersionMemo::new(4);
        assert!(c.put(1, 10));
        assert!(!c.put(1, 11));
        assert_eq!(c.get(&1), Some(11));
        c.update(&1, |v| *v += 1);
        c.update(&2, |v| *v += 1);
        assert_eq!((c.get(&1), c.get(&2)), (Some(12), None));
        for k in 0..10 {
            c.put(k, 0);
            assert!(c.len() <= 4);
        }
    }
}

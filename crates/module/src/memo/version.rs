//! The one kind of per-process memory the module keeps: answers that cost
//! a read or a decode, remembered per file version (device, inode, mtime,
//! ctime, size), so a changed file, even one rewritten in place with its
//! old size and mtime, is simply a new key. Bounded: the map is
//! emptied when full, so memory stays bounded and a republished tree
//! re-learns its answers once.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::{Mutex, MutexGuard};

/// A multiply-rotate hasher (FxHash): keys are a few integers, and SipHash
/// would cost more than the rest of the lookup on the precompressed path.
#[derive(Default)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_usize(&mut self, n: usize) {
        // Enum discriminants arrive here; the default would go byte by byte.
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type Map<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// A bounded map from file versions (or keys made of them) to answers,
/// shared by the threads of a process.
pub struct VersionMemo<K, V> {
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

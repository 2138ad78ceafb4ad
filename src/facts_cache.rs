//! What inspecting a sibling found, remembered per file version (device,
//! inode, mtime, size), so the precompressed path pays a lookup rather than
//! reads, and decompression can declare a length learned from an earlier
//! complete decode of the same file.

use crate::coding::Coding;
use crate::decode::Facts;
use crate::httpd::FileVersion;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;

/// A file version and the coding it is read as.
pub type Key = (FileVersion, Coding);

/// Entries kept; the map is emptied when full, so memory stays bounded and
/// a republished tree simply re-inspects its siblings once.
const MAX_ENTRIES: usize = 16_384;

/// A multiply-rotate hasher (FxHash): keys are a few integers, and SipHash
/// would cost more than the rest of the lookup on the precompressed path.
#[derive(Default)]
struct FxHasher(u64);

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

/// `None`: the sibling could not be inspected (corrupt, truncated), so the
/// precompressed path does not walk it again on every request.
type Map = HashMap<Key, Option<Facts>, BuildHasherDefault<FxHasher>>;

static CACHE: Mutex<Option<Map>> = Mutex::new(None);

/// The remembered facts of a file version (`Some(None)`: not inspectable).
pub fn get(key: &Key) -> Option<Option<Facts>> {
    CACHE.lock().ok()?.as_ref()?.get(key).copied()
}

/// Remembers the facts of a file version.
pub fn put(key: Key, facts: Option<Facts>) {
    if let Ok(mut g) = CACHE.lock() {
        let map = g.get_or_insert_with(Map::default);
        if map.len() >= MAX_ENTRIES {
            map.clear();
        }
        map.insert(key, facts);
    }
}

/// Records the decoded length of a file version after a complete decode,
/// when its headers did not declare one.
pub fn learn_len(key: &Key, len: u64) {
    if let Ok(mut g) = CACHE.lock() {
        if let Some(Some(f)) = g.as_mut().and_then(|m| m.get_mut(key)) {
            f.declared_len.get_or_insert(len);
        }
    }
}

/// Records that decoding a file version needs `window` bytes of history
/// (its content outgrew a smaller window), so it is passed over up front.
pub fn learn_needed(key: &Key, window: u64) {
    if let Ok(mut g) = CACHE.lock() {
        if let Some(Some(f)) = g.as_mut().and_then(|m| m.get_mut(key)) {
            f.needed = f.needed.max(window);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(device: u64, inode: u64, mtime: i64, size: u64) -> FileVersion {
        FileVersion {
            device,
            inode,
            mtime,
            size,
        }
    }

    #[test]
    fn remembers_per_version_learns_lengths_and_stays_bounded() {
        let k = (v(1, 2, 3, 4), Coding::Gzip);
        let f = Facts {
            window: 32 * 1024,
            needed: 32 * 1024,
            ..Facts::default()
        };
        put(k, Some(f));
        assert_eq!(get(&k), Some(Some(f)));
        assert_eq!(get(&(v(1, 2, 3, 5), Coding::Gzip)), None);
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
            put((v(9, i, 0, 0), Coding::Br), Some(Facts::default()));
        }
        let n = CACHE.lock().unwrap().as_ref().map_or(0, |m| m.len());
        assert!(n <= MAX_ENTRIES, "{n}");
    }
}

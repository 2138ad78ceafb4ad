//! Files as a publisher leaves them: originals and siblings with mtimes in
//! the past (so none is stale), and damaged siblings.

use super::codec::encoded;
use gdn_core::coding::Coding;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A moment well before the test, so a file written now is never newer.
fn past() -> SystemTime {
    SystemTime::now() - Duration::from_secs(100)
}

/// Writes `name` with `data` and the given siblings (by suffix), encoded
/// by the publish tool, all with the same mtime so none is stale.
pub fn publish(dir: &Path, name: &str, data: &[u8], original: bool, sibs: &[&str]) {
    let base = dir.join(name);
    if let Some(p) = base.parent() {
        fs::create_dir_all(p).expect("mkdir");
    }
    let t = past();
    if original {
        write_at(&base, data, t);
    }
    for s in sibs {
        let c = match *s {
            ".gz" => Coding::Gzip,
            ".zst" | ".zstd" => Coding::Zstd,
            ".br" => Coding::Br,
            other => panic!("unknown suffix {other}"),
        };
        write_at(&sibling(&base, s), &encoded(c, data), t);
    }
}

/// Writes `name` in `dir` with an mtime in the past, like `publish`.
pub fn put(dir: &Path, name: &str, bytes: &[u8]) {
    write_at(&dir.join(name), bytes, past());
}

fn write_at(p: &Path, bytes: &[u8], t: SystemTime) {
    fs::write(p, bytes).expect("write");
    set_mtime(p, t);
}

/// `p` with `suffix` appended to its name.
pub fn sibling(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

pub fn set_mtime(p: &Path, t: SystemTime) {
    let f = fs::File::options()
        .write(true)
        .open(p)
        .expect("open for mtime");
    f.set_modified(t).expect("set mtime");
}

pub fn mtime(p: &Path) -> SystemTime {
    fs::metadata(p)
        .expect("metadata")
        .modified()
        .expect("mtime")
}

/// Flips 32 bytes in the middle of a file, keeping its mtime (bit rot).
pub fn corrupt(p: &Path) {
    let t = mtime(p);
    let mut d = fs::read(p).expect("read");
    let mid = d.len() / 2;
    let end = (mid + 32).min(d.len());
    for b in &mut d[mid..end] {
        *b ^= 0x55;
    }
    write_at(p, &d, t);
}

/// The sibling of `base` the default order sends a client accepting every
/// coding equally: the smallest, ties by decoding speed (zstd, br, gzip);
/// its coding and bytes.
pub fn smallest_sibling(base: &Path) -> (&'static str, Vec<u8>) {
    Coding::ALL
        .iter()
        .filter_map(|c| {
            let bytes = fs::read(sibling(base, c.suffixes()[0])).ok()?;
            Some((c.token(), bytes))
        })
        .min_by_key(|(_, b)| b.len())
        .expect("a sibling")
}

/// Lets the server's user read `store` as the docs say: 2750 with the
/// server's group (nogroup, where tests run as root and Apache as
/// nobody; the user's own group otherwise), so what the publish tool
/// makes in it takes that group.
pub fn open_store_to_server(store: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if super::harness::is_root() {
        let ok = std::process::Command::new("chgrp")
            .arg("nogroup")
            .arg(store)
            .status()
            .unwrap()
            .success();
        assert!(ok, "chgrp nogroup {}", store.display());
    }
    fs::set_permissions(store, fs::Permissions::from_mode(0o2750)).unwrap();
}

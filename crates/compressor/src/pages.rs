//! The pages a host's site dictionary may be trained from: a function of
//! the files under its `DocumentRoot` alone, never of the traffic, so
//! servers holding the same files (a copy made with `cp -a`, `rsync -a`,
//! an image) choose the same pages and train the same bytes without
//! talking to each other.
//!
//! The rule: the HTML files (`.html`, `.htm`) under the root, walked in
//! path order (names compared as bytes), without following symlinks,
//! leaving out hidden names (a leading `.`: `.htaccess`, the publish
//! tool's store) and files not compressed on demand, up to `MAX_PAGES`
//! files and `MAX_BYTES` bytes. A child judges each with Apache (the
//! `site` module's `judge`) and sends the verdicts with the list's
//! digest; the compressor walks again and trains only if its list has
//! that digest, so both spoke of the same files.

use super::key::compressible;
use gdn_core::dictionary::{self, Hash};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Pages a dictionary is trained from at most.
pub const MAX_PAGES: usize = 512;

/// Bytes of pages trained on at most.
pub const MAX_BYTES: u64 = 32 << 20;

/// Entries of the tree walked at most: a huge tree costs a bounded walk
/// (the same entries on every server, as the order is fixed).
const MAX_ENTRIES: usize = 200_000;

/// A page the rule chose: its path below the root, size and mtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChosenPage {
    /// Below the root, without a leading `/`.
    pub rel: PathBuf,
    pub size: u64,
    /// Microseconds since the epoch.
    pub mtime_us: i64,
}

impl ChosenPage {
    /// Its file under `root`.
    pub fn path(&self, root: &Path) -> PathBuf {
        root.join(&self.rel)
    }

    /// The URI path a direct request for it names (decoded).
    pub fn uri(&self) -> Vec<u8> {
        let mut u = b"/".to_vec();
        u.extend_from_slice(self.rel.as_os_str().as_bytes());
        u
    }
}

fn is_page(name: &[u8]) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(b".html") || lower.ends_with(b".htm")
}

/// The pages under `root`, by the rule above.
pub fn candidates(root: &Path) -> Vec<ChosenPage> {
    let mut out = Vec::new();
    let mut bytes = 0u64;
    let walk = walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by(|a, b| a.file_name().as_bytes().cmp(b.file_name().as_bytes()))
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || e.file_name().as_bytes().first() != Some(&b'.'));
    for entry in walk.take(MAX_ENTRIES) {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name().as_bytes();
        if !entry.file_type().is_file() || !is_page(name) {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        let size = meta.len();
        if !compressible(name, size) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        // A name a request line or a record cannot carry.
        if rel
            .as_os_str()
            .as_bytes()
            .iter()
            .any(|&b| b == b'\n' || b == 0)
        {
            continue;
        }
        if bytes + size > MAX_BYTES {
            break;
        }
        bytes += size;
        out.push(ChosenPage {
            rel: rel.to_path_buf(),
            size,
            mtime_us: meta.mtime() * 1_000_000 + meta.mtime_nsec() / 1000,
        });
        if out.len() == MAX_PAGES {
            break;
        }
    }
    out
}

/// What names a list of pages: SHA-256 of each one's path, size and
/// mtime, in order.
pub fn digest<'a>(pages: impl IntoIterator<Item = &'a ChosenPage>) -> Hash {
    let mut bytes = Vec::new();
    for p in pages {
        bytes.extend_from_slice(p.rel.as_os_str().as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(&p.size.to_le_bytes());
        bytes.extend_from_slice(&p.mtime_us.to_le_bytes());
    }
    dictionary::hash(&bytes)
}

/// Verdicts, a bit per candidate in order: set where it is public.
pub fn bit(bits: &[u8], i: usize) -> bool {
    bits.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0)
}

/// Sets candidate `i`'s bit.
pub fn set_bit(bits: &mut Vec<u8>, i: usize) {
    if bits.len() <= i / 8 {
        bits.resize(i / 8 + 1, 0);
    }
    bits[i / 8] |= 1 << (i % 8);
}

/// A relative path as a record line holds it.
pub fn rel_of(line: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn pages_are_chosen_by_the_files_alone_in_path_order() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        let page = "<html>".repeat(100);
        for p in [
            "b/z.html",
            "a.HTM",
            "b/a.html",
            "c.css",
            ".hidden/x.html",
            "tiny.html",
        ] {
            fs::create_dir_all(r.join(p).parent().unwrap()).unwrap();
            let body = if p == "tiny.html" { "<p>" } else { &page };
            fs::write(r.join(p), body).unwrap();
        }
        std::os::unix::fs::symlink(r.join("a.HTM"), r.join("link.html")).unwrap();
        let c = candidates(r);
        let rels: Vec<_> = c.iter().map(|c| c.rel.to_str().unwrap()).collect();
        assert_eq!(rels, ["a.HTM", "b/a.html", "b/z.html"]);
        assert_eq!(c[1].uri(), b"/b/a.html");
        let d1 = digest(&c);
        assert_eq!(digest(&candidates(r)), d1, "the same tree, the same list");
        fs::write(r.join("b/a.html"), page.repeat(2)).unwrap();
        assert_ne!(digest(&candidates(r)), d1, "a page changed");
    }

    #[test]
    fn bits_round_trip() {
        let mut b = Vec::new();
        for i in [0, 3, 9, 17] {
            set_bit(&mut b, i);
        }
        let set: Vec<_> = (0..20).filter(|&i| bit(&b, i)).collect();
        assert_eq!(set, [0, 3, 9, 17]);
    }
}

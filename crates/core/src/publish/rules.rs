//! Finding the files to work on: directory walks, globs, symlink policy and
//! the rules that skip what would not compress.

use super::atomic::is_temp_name;
use globset::{Glob, GlobSet, GlobSetBuilder};
use std::fmt;
use std::path::{Path, PathBuf};

/// Extensions of formats that are already compressed: recompressing them
/// costs time and saves nothing.
pub const COMPRESSED_EXTENSIONS: &[&str] = &[
    // images
    "png", "jpg", "jpeg", "jpe", "jfif", "gif", "webp", "avif", "heic", "heif", "jxl", "ico", "cur",
    "tif", "tiff", // fonts
    "woff", "woff2", // archives and compressed streams
    "zip", "gz", "tgz", "br", "zst", "zstd", "xz", "txz", "lz", "lzma", "lz4", "bz2", "tbz2", "7z",
    "rar", "jar", "war", "apk", "deb", "rpm", "cab", "dmg", "iso", "z", // audio and video
    "mp3", "mp4", "m4a", "m4v", "aac", "ogg", "oga", "ogv", "opus", "flac", "webm", "mkv", "mov",
    "avi", "wmv", "mpg", "mpeg", // documents that are zip or deflate inside
    "pdf", "docx", "xlsx", "pptx", "odt", "ods", "odp", "epub",
];

/// Why a file was not compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SkipReason {
    /// Its extension names an already-compressed format.
    Compressed,
    /// Smaller than `--min-size`.
    TooSmall,
    /// A symlink, and symlinks are not followed.
    Symlink,
    /// Matched `--exclude`, or missed every `--include`.
    Filtered,
    /// A leftover temporary of an interrupted run.
    Temporary,
    /// Not a regular file (device, socket, fifo).
    NotRegular,
    /// A delta against a dictionary (RFC 9842), made by `compress`.
    Delta,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SkipReason::Compressed => "already compressed type",
            SkipReason::TooSmall => "below minimum size",
            SkipReason::Symlink => "symlink not followed",
            SkipReason::Filtered => "excluded by glob",
            SkipReason::Temporary => "temporary file of an interrupted run",
            SkipReason::NotRegular => "not a regular file",
            SkipReason::Delta => "delta (dictionary transport)",
        })
    }
}

/// One file the walk found.
#[derive(Debug)]
pub enum Found {
    /// A regular file to work on, with its size.
    File(PathBuf, u64),
    /// A file left alone, and why.
    Skipped(PathBuf, SkipReason),
    /// A file or directory that could not be examined.
    Error(PathBuf, String),
}

impl Found {
    /// The path found.
    pub fn path(&self) -> &Path {
        match self {
            Found::File(p, _) | Found::Skipped(p, _) | Found::Error(p, _) => p,
        }
    }
}

/// What to walk and what to leave out.
#[derive(Debug, Default)]
pub struct Filter {
    include: Option<GlobSet>,
    exclude: Option<GlobSet>,
    /// Follow symlinks below the given paths.
    pub follow_symlinks: bool,
    /// Files smaller than this are skipped (compress only).
    pub min_size: u64,
    /// Apply the compress skip rules (extensions, size); verify wants all.
    pub compress_rules: bool,
}

/// One set of `globs`; `None` when there are none.
fn glob_set(globs: &[String]) -> Result<Option<GlobSet>, String> {
    if globs.is_empty() {
        return Ok(None);
    }
    let mut b = GlobSetBuilder::new();
    for g in globs {
        b.add(Glob::new(g).map_err(|e| format!("bad glob {g:?}: {e}"))?);
    }
    b.build().map(Some).map_err(|e| e.to_string())
}

impl Filter {
    /// A filter with the given include and exclude globs.
    pub fn new(include: &[String], exclude: &[String]) -> Result<Filter, String> {
        Ok(Filter {
            include: glob_set(include)?,
            exclude: glob_set(exclude)?,
            ..Filter::default()
        })
    }

    /// Globs match the path relative to the walked argument, or the bare
    /// file name, so both `docs/**/*.html` and `*.html` do what users mean.
    fn matches(set: &GlobSet, rel: &Path) -> bool {
        set.is_match(rel) || rel.file_name().is_some_and(|n| set.is_match(n))
    }

    fn excluded(&self, rel: &Path) -> bool {
        self.exclude.as_ref().is_some_and(|s| Self::matches(s, rel))
    }

    fn included(&self, rel: &Path) -> bool {
        self.include.as_ref().is_none_or(|s| Self::matches(s, rel))
    }

    /// Classifies one regular file.
    fn classify(&self, path: PathBuf, rel: &Path, len: u64) -> Found {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            return Found::Error(path, "file name is not valid UTF-8".into());
        };
        if path.to_str().is_none() {
            return Found::Error(path, "path is not valid UTF-8".into());
        }
        if is_temp_name(name) {
            return Found::Skipped(path, SkipReason::Temporary);
        }
        if self.excluded(rel) || !self.included(rel) {
            return Found::Skipped(path, SkipReason::Filtered);
        }
        if self.compress_rules {
            if let Some(why) = compress_rule(name, len, self.min_size) {
                return Found::Skipped(path, why);
            }
        }
        Found::File(path, len)
    }

    /// Walks every root (file or directory) and classifies what it finds.
    pub fn walk(&self, roots: &[PathBuf]) -> Vec<Found> {
        let mut out = Vec::new();
        for root in roots {
            let walker = walkdir::WalkDir::new(root)
                .follow_links(self.follow_symlinks)
                .sort_by_file_name()
                .into_iter()
                .filter_entry(|e| {
                    // Prune excluded directories, and an in-tree store
                    // an older release left (a dry run leaves it),
                    // without entering them.
                    e.depth() == 0
                        || !e.file_type().is_dir()
                        || !(e.file_name() == crate::dictionary::STORE_DIR
                            || self.excluded(e.path().strip_prefix(root).unwrap_or(e.path())))
                });
            for entry in walker {
                let entry = match entry {
                    Ok(e) => e,
                    Err(e) => {
                        let p = e.path().unwrap_or(root).to_path_buf();
                        let msg = match e.io_error() {
                            Some(io) => io.to_string(),
                            None => e.to_string(),
                        };
                        out.push(Found::Error(p, msg));
                        continue;
                    }
                };
                let ft = entry.file_type();
                if ft.is_dir() {
                    continue;
                }
                let path = entry.path().to_path_buf();
                if ft.is_symlink() {
                    out.push(Found::Skipped(path, SkipReason::Symlink));
                    continue;
                }
                if !ft.is_file() {
                    out.push(Found::Skipped(path, SkipReason::NotRegular));
                    continue;
                }
                let len = match entry.metadata() {
                    Ok(m) => m.len(),
                    Err(e) => {
                        out.push(Found::Error(path, e.to_string()));
                        continue;
                    }
                };
                let rel = if entry.depth() == 0 {
                    PathBuf::from(path.file_name().unwrap_or(path.as_os_str()))
                } else {
                    path.strip_prefix(root).unwrap_or(&path).to_path_buf()
                };
                out.push(self.classify(path, &rel, len));
            }
        }
        out
    }
}

/// Why `compress` leaves a file of this name and length alone, if it does:
/// a delta, an already-compressed format, or under `min_size`. The module's
/// on-demand compression asks the same (without allocating).
pub fn compress_rule(name: &str, len: u64, min_size: u64) -> Option<SkipReason> {
    if crate::dictionary::parse_delta_name(name).is_some() {
        Some(SkipReason::Delta)
    } else if is_compressed_name(name) {
        Some(SkipReason::Compressed)
    } else if len < min_size {
        Some(SkipReason::TooSmall)
    } else {
        None
    }
}

/// `COMPRESSED_EXTENSIONS`, each packed into a `u64`, sorted, built at
/// compile time: the module asks `is_compressed_ext` on every on-demand
/// request, where walking the list cost a thousand instructions.
static COMPRESSED: [u64; COMPRESSED_EXTENSIONS.len()] = {
    let mut v = [0u64; COMPRESSED_EXTENSIONS.len()];
    let mut i = 0;
    while i < v.len() {
        let ext = COMPRESSED_EXTENSIONS[i].as_bytes();
        assert!(ext.len() <= 8, "an extension longer than eight bytes");
        let mut low = [0u8; 8];
        let mut j = 0;
        while j < ext.len() {
            low[j] = ext[j].to_ascii_lowercase();
            j += 1;
        }
        // Insertion sort, as const evaluation allows.
        let k = u64::from_le_bytes(low);
        let mut at = i;
        while at > 0 && v[at - 1] > k {
            v[at] = v[at - 1];
            at -= 1;
        }
        v[at] = k;
        i += 1;
    }
    v
};

/// An extension of at most eight bytes, none NUL, lower-cased into the
/// bytes of a `u64`.
fn packed_ext(ext: &[u8]) -> Option<u64> {
    let mut low = [0u8; 8];
    low.get_mut(..ext.len())?.copy_from_slice(ext);
    let k = u64::from_le_bytes(low);
    // A NUL would pack like a shorter name; none of its bytes may be 0.
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let used = if ext.len() == 8 {
        u64::MAX
    } else {
        (1u64 << (8 * ext.len())) - 1
    };
    let padded = k | !used;
    if padded.wrapping_sub(ONES) & !padded & HIGHS != 0 {
        return None;
    }
    // 'A'..='Z' gain 0x20, all bytes at once: a byte is upper case when
    // adding 0x3f carries it past 0x7f (from 'A') and adding 0x25 does
    // not (up to 'Z'); bytes over 0x7f never count.
    let low7 = k & !HIGHS;
    let upper = (low7 + u64::from_ne_bytes([0x3f; 8])) & !(low7 + u64::from_ne_bytes([0x25; 8]));
    let upper = upper & !k & HIGHS;
    Some(k | (upper >> 2))
}

/// True when the name's extension is an already-compressed format.
pub fn is_compressed_name(name: &str) -> bool {
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => is_compressed_ext(ext.as_bytes()),
        _ => false,
    }
}

/// True when `ext` (a name's last extension, without the dot, in any case)
/// is an already-compressed format.
pub fn is_compressed_ext(ext: &[u8]) -> bool {
    packed_ext(ext).is_some_and(|k| COMPRESSED.binary_search(&k).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// The word-at-a-time packing against the plain one, byte by byte.
    #[test]
    fn packed_ext_lowers_ascii_and_refuses_nul() {
        fn plain(ext: &[u8]) -> Option<u64> {
            let mut low = [0u8; 8];
            if ext.len() > 8 || ext.contains(&0) {
                return None;
            }
            for (l, &b) in low.iter_mut().zip(ext) {
                *l = b.to_ascii_lowercase();
            }
            Some(u64::from_le_bytes(low))
        }
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                assert_eq!(packed_ext(&[a, b]), plain(&[a, b]), "{a} {b}");
                assert_eq!(
                    packed_ext(&[b'X', a, 0x7f, b, b'z', b'@']),
                    plain(&[b'X', a, 0x7f, b, b'z', b'@'])
                );
            }
            let eight = [a, b'A', b'Z', b'[', a, 0xc1, b'`', a];
            assert_eq!(packed_ext(&eight), plain(&eight), "{a}");
        }
        assert_eq!(packed_ext(b""), plain(b""));
        assert_eq!(packed_ext(b"ninebytes"), None);
        assert!(COMPRESSED.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn compressed_extensions() {
        for n in [
            "a.PNG",
            "x.woff2",
            "a.html.gz",
            "b.br",
            "c.zst",
            "v.mp4",
            "f.tar.xz",
        ] {
            assert!(is_compressed_name(n), "{n}");
        }
        for n in [
            "a.html",
            "b.css",
            "c.js",
            "README",
            ".gz",
            "x.svg",
            "data.json",
        ] {
            assert!(!is_compressed_name(n), "{n}");
        }
    }

    #[test]
    fn walk_applies_rules() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        fs::create_dir_all(r.join("sub/skipme")).unwrap();
        fs::write(r.join("a.html"), vec![b'a'; 1000]).unwrap();
        fs::write(r.join("small.css"), b"x").unwrap();
        fs::write(r.join("pic.png"), vec![0; 1000]).unwrap();
        fs::write(r.join("sub/b.js"), vec![b'b'; 1000]).unwrap();
        fs::write(r.join("sub/skipme/c.js"), vec![b'c'; 1000]).unwrap();
        fs::write(r.join("sub/.b.js.gz.tmp12ab"), vec![b'c'; 1000]).unwrap();
        std::os::unix::fs::symlink(r.join("a.html"), r.join("link.html")).unwrap();
        let mut f = Filter::new(&[], &["skipme".into()]).unwrap();
        f.min_size = 256;
        f.compress_rules = true;
        let found = f.walk(&[r.to_path_buf()]);
        let mut files = Vec::new();
        let mut skipped = Vec::new();
        for x in found {
            match x {
                Found::File(p, _) => files.push(p.strip_prefix(r).unwrap().to_path_buf()),
                Found::Skipped(p, why) => {
                    skipped.push((p.strip_prefix(r).unwrap().to_path_buf(), why))
                }
                Found::Error(p, e) => panic!("{p:?}: {e}"),
            }
        }
        assert_eq!(files, [PathBuf::from("a.html"), PathBuf::from("sub/b.js")]);
        assert!(skipped.contains(&("small.css".into(), SkipReason::TooSmall)));
        assert!(skipped.contains(&("pic.png".into(), SkipReason::Compressed)));
        assert!(skipped.contains(&("link.html".into(), SkipReason::Symlink)));
        assert!(skipped.contains(&("sub/.b.js.gz.tmp12ab".into(), SkipReason::Temporary)));
        assert!(!skipped.iter().any(|(p, _)| p.starts_with("sub/skipme")));

        let f = Filter::new(&["*.js".into()], &[]).unwrap();
        let n = f
            .walk(&[r.to_path_buf()])
            .into_iter()
            .filter(|x| matches!(x, Found::File(..)))
            .count();
        assert_eq!(n, 2);
    }
}

//! The rules that skip what would not compress: already-compressed
//! formats, deltas, files too small to be worth it. The publish tool's
//! walk and the module's on-demand compression ask the same.

use crate::coding::DeltaCoding;
use std::fmt;

/// Extensions of formats that are already compressed (images, fonts,
/// archives and compressed streams, audio and video, documents that are
/// zip or deflate inside): recompressing them costs time and saves
/// nothing. Sorted, for `is_compressed_ext`'s binary search.
pub const COMPRESSED_EXTENSIONS: &[&str] = &[
    "7z", "aac", "apk", "avi", "avif", "br", "bz2", "cab", "cur", "deb", "dmg", "docx", "epub",
    "flac", "gif", "gz", "heic", "heif", "ico", "iso", "jar", "jfif", "jpe", "jpeg", "jpg", "jxl",
    "lz", "lz4", "lzma", "m4a", "m4v", "mkv", "mov", "mp3", "mp4", "mpeg", "mpg", "odp", "ods",
    "odt", "oga", "ogg", "ogv", "opus", "pdf", "png", "pptx", "rar", "rpm", "tbz2", "tgz", "tif",
    "tiff", "txz", "war", "webm", "webp", "wmv", "woff", "woff2", "xlsx", "xz", "z", "zip", "zst",
    "zstd",
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

/// Why `compress` leaves a file of this name and length alone, if it does:
/// a delta, an already-compressed format, or under `min_size`. The module's
/// on-demand compression asks the same (`gdn_compressor::key::compressible`).
pub fn compress_rule(name: &str, len: u64, min_size: u64) -> Option<SkipReason> {
    // One search for the last extension answers both questions of the
    // name (the on-demand cache asks this of every request it serves): a
    // delta's name ends in a delta coding's token.
    let last = last_extension(name);
    let delta = |ext: &str| DeltaCoding::ALL.iter().any(|d| d.token() == ext);
    match last {
        Some((_, ext)) if delta(ext) && crate::dictionary::parse_delta_name(name).is_some() => {
            Some(SkipReason::Delta)
        }
        Some((stem, ext)) if !stem.is_empty() && is_compressed_ext(ext.as_bytes()) => {
            Some(SkipReason::Compressed)
        }
        _ if len < min_size => Some(SkipReason::TooSmall),
        _ => None,
    }
}

/// The name before its last dot and its last extension (after it);
/// `None` for a name without a dot.
fn last_extension(name: &str) -> Option<(&str, &str)> {
    let dot = memchr::memrchr(b'.', name.as_bytes())?;
    // A dot is one byte of UTF-8: both sides are whole characters.
    Some((name.get(..dot)?, name.get(dot + 1..)?))
}

/// True when the name's extension is an already-compressed format.
pub fn is_compressed_name(name: &str) -> bool {
    match last_extension(name) {
        Some((stem, ext)) if !stem.is_empty() => is_compressed_ext(ext.as_bytes()),
        _ => false,
    }
}

/// True when `ext` (a name's last extension, without the dot, in any case)
/// is an already-compressed format.
pub fn is_compressed_ext(ext: &[u8]) -> bool {
    // Numbers, not strings, are searched: the on-demand cache asks this
    // of every request it serves, and comparing slices cost several
    // times the rest of its rule (bench/budget.sh).
    ext_key(ext).is_some_and(|k| COMPRESSED_KEYS.binary_search(&k).is_ok())
}

/// Longest extension `ext_key` packs.
const EXT_KEY_MAX: usize = 7;

/// An extension of at most `EXT_KEY_MAX` bytes in one number: its bytes
/// in ASCII lower case, then its length, so two extensions share a key
/// only when they are equal but for case. `None` for a longer one (no
/// compressed format's is).
const fn ext_key(ext: &[u8]) -> Option<u64> {
    if ext.len() > EXT_KEY_MAX {
        return None;
    }
    let mut k = 0u64;
    let mut i = 0;
    while i < EXT_KEY_MAX {
        let b = if i < ext.len() {
            ext[i].to_ascii_lowercase()
        } else {
            0
        };
        k = k << 8 | b as u64;
        i += 1;
    }
    Some(k << 8 | ext.len() as u64)
}

/// `COMPRESSED_EXTENSIONS`' keys, sorted for a binary search.
const COMPRESSED_KEYS: [u64; COMPRESSED_EXTENSIONS.len()] = {
    let mut keys = [0u64; COMPRESSED_EXTENSIONS.len()];
    let mut i = 0;
    while i < keys.len() {
        keys[i] = match ext_key(COMPRESSED_EXTENSIONS[i].as_bytes()) {
            Some(k) => k,
            None => panic!("a compressed extension longer than EXT_KEY_MAX"),
        };
        i += 1;
    }
    // Insertion sort: a const context has no `sort`.
    let mut i = 1;
    while i < keys.len() {
        let mut j = i;
        while j > 0 && keys[j - 1] > keys[j] {
            let t = keys[j];
            keys[j] = keys[j - 1];
            keys[j - 1] = t;
            j -= 1;
        }
        i += 1;
    }
    keys
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_are_sorted_and_lower_case() {
        assert!(COMPRESSED_EXTENSIONS.windows(2).all(|w| w[0] < w[1]));
        for e in COMPRESSED_EXTENSIONS {
            assert_eq!(*e, e.to_ascii_lowercase());
            assert!(is_compressed_ext(e.to_ascii_uppercase().as_bytes()), "{e}");
        }
        assert!(!is_compressed_ext(b"gz\0"));
        assert!(!is_compressed_ext(b"\0gz"));
        assert!(!is_compressed_ext(b"ninebytes"));
        assert!(!is_compressed_ext(b"woff2abc"));
        assert!(!is_compressed_ext(b""));
        assert!(!is_compressed_ext(b"g"));
        assert!(!is_compressed_ext(b"gzi"));
        assert!(!is_compressed_ext(b"html"));
        assert!(is_compressed_ext(b"Zst"));
        assert!(COMPRESSED_KEYS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn the_packed_search_is_the_lists() {
        let listed = |e: &[u8]| {
            COMPRESSED_EXTENSIONS
                .iter()
                .any(|x| x.as_bytes().eq_ignore_ascii_case(e))
        };
        let mut exts: Vec<Vec<u8>> = COMPRESSED_EXTENSIONS
            .iter()
            .flat_map(|e| {
                let e = e.as_bytes();
                [
                    e.to_vec(),
                    e.to_ascii_uppercase(),
                    e[..e.len() - 1].to_vec(),
                    [e, b"x"].concat(),
                    [e, b"\0"].concat(),
                    [b"\0", e].concat(),
                ]
            })
            .collect();
        exts.extend(["", "html", "js", "css", "svg", "txt", "8bytes!!"].map(|e| e.into()));
        exts.push(vec![0xff, b'g', b'z']);
        for e in exts {
            assert_eq!(is_compressed_ext(&e), listed(&e), "{e:?}");
        }
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
    fn one_search_answers_as_each_rule_alone() {
        // The rule as three separate questions, each parsing the name.
        let separate = |name: &str, len: u64, min: u64| {
            let compressed = match name.rsplit_once('.') {
                Some((stem, ext)) => !stem.is_empty() && is_compressed_ext(ext.as_bytes()),
                None => false,
            };
            if crate::dictionary::parse_delta_name(name).is_some() {
                Some(SkipReason::Delta)
            } else if compressed {
                Some(SkipReason::Compressed)
            } else if len < min {
                Some(SkipReason::TooSmall)
            } else {
                None
            }
        };
        let hex = "ab".repeat(32);
        let mut names: Vec<String> = [
            "a.html",
            "a.PNG",
            ".gz",
            ".",
            "a.",
            "noext",
            "a.tar.GZ",
            "x.dcz",
            ".dcz",
            "b.Dcz",
            "caf\u{e9}.html",
            "\u{e9}.\u{e9}",
            "a..gz",
            "a.html.gz.dcz",
        ]
        .map(String::from)
        .into();
        for d in ["dcz", "dcb"] {
            names.extend([
                format!("page.html.{hex}.{d}"),
                format!(".{hex}.{d}"),
                format!("{hex}.{d}"),
                format!("p.{}.{d}", &hex[1..]),
                format!("p.{}.{d}", hex.to_uppercase()),
                format!("p.gz.{hex}.{d}"),
            ]);
        }
        for n in &names {
            for len in [0, 99, 100, 101] {
                assert_eq!(
                    compress_rule(n, len, 100),
                    separate(n, len, 100),
                    "{n} {len}"
                );
            }
        }
    }
}

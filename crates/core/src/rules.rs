//! The rules that skip what would not compress or must not be
//! compressed: already-compressed formats, deltas, server-side scripts,
//! files of no type or of a type that does not compress (`crate::types`),
//! files too small to be worth it. The publish tool's walk and the
//! module's on-demand compression ask the same.

use crate::coding::DeltaCoding;
use crate::types::{ext_key, sorted_keys, TypeKind, Types};
use std::fmt;

/// Extensions of formats that are already compressed (images, fonts,
/// archives and compressed streams, audio and video, documents that are
/// zip or deflate inside): recompressing them costs time and saves
/// nothing. Sorted, for `is_compressed_ext`'s binary search.
pub const COMPRESSED_EXTENSIONS: &[&str] = &[
    "7z", "aac", "apk", "avi", "avif", "br", "bz2", "cab", "cur", "deb", "dmg", "docx", "epub",
    "flac", "gif", "gz", "heic", "heif", "ico", "iso", "jar", "jfif", "jpe", "jpeg", "jpg", "jxl",
    "lz", "lz4", "lzma", "m4a", "m4v", "mkv", "mov", "mp3", "mp4", "mpeg", "mpg", "odp", "ods",
    "odt", "oga", "ogg", "ogv", "opus", "pdf", "png", "pptx", "rar", "rpm", "svgz", "tbz2", "tgz",
    "tif", "tiff", "txz", "war", "webm", "webp", "wmv", "woff", "woff2", "xlsx", "xz", "z", "zip",
    "zst", "zstd",
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
    /// A server-side script (PHP, CGI, server-side includes): Apache runs
    /// it, so its bytes are its source.
    Script,
    /// No MIME type (`lib.inc`, `page.html~`): not a page Apache types.
    Untyped,
    /// A type that does not compress.
    Incompressible,
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
            SkipReason::Script => "server-side script (never sent as bytes)",
            SkipReason::Untyped => "no MIME type",
            SkipReason::Incompressible => "type that does not compress",
        })
    }
}

/// Why `compress` leaves a file of this name and length alone, if it does:
/// a delta, an already-compressed format, a script, a name of no type or
/// of a type that does not compress (`types`), or under `min_size`. The
/// module's on-demand compression asks the same
/// (`gdn_compressor::key::compressible`).
pub fn compress_rule(name: &str, len: u64, min_size: u64, types: &Types) -> Option<SkipReason> {
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
        _ => match types.kind(name.as_bytes()) {
            TypeKind::Script => Some(SkipReason::Script),
            TypeKind::Untyped => Some(SkipReason::Untyped),
            TypeKind::Other => Some(SkipReason::Incompressible),
            TypeKind::Compressible if len < min_size => Some(SkipReason::TooSmall),
            TypeKind::Compressible => None,
        },
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

/// `COMPRESSED_EXTENSIONS`' keys, sorted for a binary search.
const COMPRESSED_KEYS: [u64; COMPRESSED_EXTENSIONS.len()] = sorted_keys(COMPRESSED_EXTENSIONS);

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
        // The rule as separate questions, each parsing the name.
        let types = Types::parse(crate::types::BUILTIN, &[]);
        let separate = |name: &str, len: u64, min: u64| {
            let compressed = match name.rsplit_once('.') {
                Some((stem, ext)) => !stem.is_empty() && is_compressed_ext(ext.as_bytes()),
                None => false,
            };
            if crate::dictionary::parse_delta_name(name).is_some() {
                Some(SkipReason::Delta)
            } else if compressed {
                Some(SkipReason::Compressed)
            } else if types.kind(name.as_bytes()) == TypeKind::Script {
                Some(SkipReason::Script)
            } else if types.kind(name.as_bytes()) == TypeKind::Untyped {
                Some(SkipReason::Untyped)
            } else if types.kind(name.as_bytes()) == TypeKind::Other {
                Some(SkipReason::Incompressible)
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
            "wp-config.php",
            "lib.inc",
            "blob.bin",
            "x.php.gz",
            "index.shtml",
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
                    compress_rule(n, len, 100, &types),
                    separate(n, len, 100),
                    "{n} {len}"
                );
            }
        }
    }
}

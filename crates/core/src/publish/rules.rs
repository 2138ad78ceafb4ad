//! The rules that skip what would not compress: already-compressed
//! formats, deltas, files too small to be worth it. The publish tool's
//! walk and the module's on-demand compression ask the same.

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
    let mut buf = [0u8; 8];
    let Some(low) = buf.get_mut(..ext.len()) else {
        return false;
    };
    low.copy_from_slice(ext);
    low.make_ascii_lowercase();
    COMPRESSED_EXTENSIONS
        .binary_search_by(|e| e.as_bytes().cmp(low))
        .is_ok()
}

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
        assert!(!is_compressed_ext(b"ninebytes"));
        assert!(!is_compressed_ext(b""));
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
}

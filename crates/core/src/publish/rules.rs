//! The rules that skip what would not compress: already-compressed
//! formats, deltas, files too small to be worth it. The publish tool's
//! walk and the module's on-demand compression ask the same.

use std::fmt;

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
}

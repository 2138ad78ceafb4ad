//! Compression dictionary transport (RFC 9842): the `dcz` and `dcb` delta
//! formats, the names deltas have on disk and the old in-tree store's name.
//!
//! A delta of `page.html` against a dictionary lives beside it as
//! `page.html.<64 lowercase hex SHA-256 of the dictionary>.dcz` (or
//! `.dcb`), so a server finds it with one stat from the request's
//! `Available-Dictionary` hash. Its bytes are what goes on the wire:
//!
//! - `dcz`: `5E 2A 4D 18 20 00 00 00` (a zstd skippable frame of 32 bytes),
//!   the 32-byte SHA-256 of the dictionary, then one zstd frame compressed
//!   with the dictionary as raw content (a prefix, as `zstd --patch-from`);
//! - `dcb`: `FF 44 43 42`, the 32-byte SHA-256, then a brotli stream that
//!   uses the dictionary as a raw prefix dictionary.
//!
//! Nothing here knows of Apache or of the publish tool's walks; the
//! tool's encoders, decoders and trainer are in `delta_codec`.

use sha2::{Digest, Sha256};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// The hidden directory at the top of a published tree where releases
/// before the state directory kept earlier versions (the publish tool
/// moves it out). Never served: the module refuses every request with a
/// path component of this name, or that resolves into one.
pub const STORE_DIR: &str = ".gzip-disk-ng";

/// Under a store: `versions/<path relative to the tree>/<hex>.zst`,
/// one zstd-compressed earlier version per file, named by its SHA-256.
pub const VERSIONS_DIR: &str = "versions";

/// Length of a dictionary hash (SHA-256).
pub const HASH_LEN: usize = 32;

/// A dictionary's SHA-256.
pub type Hash = [u8; HASH_LEN];

/// Magic of a `dcz` body: a zstd skippable frame header whose 32 bytes of
/// content are the hash (RFC 9842, section 5.2).
pub const DCZ_MAGIC: [u8; 8] = [0x5E, 0x2A, 0x4D, 0x18, 0x20, 0x00, 0x00, 0x00];

/// Magic of a `dcb` body (RFC 9842, section 5.1).
pub const DCB_MAGIC: [u8; 4] = [0xFF, 0x44, 0x43, 0x42];

pub use crate::coding::DeltaCoding;

impl DeltaCoding {
    /// The bytes before the hash.
    pub fn magic(self) -> &'static [u8] {
        match self {
            DeltaCoding::Dcz => &DCZ_MAGIC,
            DeltaCoding::Dcb => &DCB_MAGIC,
        }
    }

    /// Magic plus hash: 40 bytes for `dcz`, 36 for `dcb`.
    pub fn header_len(self) -> usize {
        self.magic().len() + HASH_LEN
    }
}

/// SHA-256 of a dictionary, as `Available-Dictionary` carries it.
pub fn hash(dictionary: &[u8]) -> Hash {
    Sha256::digest(dictionary).into()
}

/// Lowercase hex of a hash, as in delta file names.
pub fn to_hex(h: &Hash) -> String {
    hex::encode(h)
}

/// The hash 64 lowercase hex digits spell; `None` for anything else.
pub fn from_hex(s: &str) -> Option<Hash> {
    if s.bytes().any(|c| c.is_ascii_uppercase()) {
        return None;
    }
    let mut h = [0u8; HASH_LEN];
    hex::decode_to_slice(s, &mut h).ok()?;
    Some(h)
}

/// The file name of the delta of `original_name` against the dictionary
/// with hash `h`: `<original_name>.<hex>.<token>`.
pub fn delta_file_name(original_name: &str, h: &Hash, coding: DeltaCoding) -> String {
    format!("{original_name}{}", DeltaSuffix::new(h, coding).as_str())
}

/// What a delta's name adds to its original's, `.<hex>.<token>`, built on
/// the stack: the module makes one for each request naming a dictionary.
pub struct DeltaSuffix {
    bytes: [u8; 1 + 2 * HASH_LEN + 4],
    len: usize,
}

impl DeltaSuffix {
    pub fn new(h: &Hash, coding: DeltaCoding) -> DeltaSuffix {
        let mut bytes = [b'.'; 1 + 2 * HASH_LEN + 4];
        // Cannot fail: the slice is exactly twice the hash's length.
        let _ = hex::encode_to_slice(h, &mut bytes[1..1 + 2 * HASH_LEN]);
        let token = coding.token().as_bytes();
        let at = 2 + 2 * HASH_LEN;
        bytes[at..at + token.len()].copy_from_slice(token);
        DeltaSuffix {
            bytes,
            len: at + token.len(),
        }
    }

    /// The suffix's bytes: ASCII, no NUL.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    pub fn as_str(&self) -> &str {
        // ASCII by construction: a dot, hex digits, a dot, a token.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

/// The delta's path beside `original`; `None` for a name that is not UTF-8.
pub fn delta_path(original: &Path, h: &Hash, coding: DeltaCoding) -> Option<PathBuf> {
    let name = original.file_name()?.to_str()?;
    Some(original.with_file_name(delta_file_name(name, h, coding)))
}

/// Splits a delta's file name into its original's name, the dictionary
/// hash and the coding; `None` when the name is not a delta's.
pub fn parse_delta_name(name: &str) -> Option<(&str, Hash, DeltaCoding)> {
    let (rest, token) = name.rsplit_once('.')?;
    let coding = DeltaCoding::ALL.into_iter().find(|c| c.token() == token)?;
    let (original, hex) = rest.rsplit_once('.')?;
    if original.is_empty() {
        return None;
    }
    Some((original, from_hex(hex)?, coding))
}

/// True when a path (a URL path or a file path) goes into the dictionary
/// store: some component of it is `STORE_DIR`.
pub fn in_store(path: &Path) -> bool {
    in_store_bytes(path.as_os_str().as_bytes())
}

/// `in_store` of a path's bytes. The module asks it of every request, so
/// one vectorised search does the common case, with a searcher built once
/// (building one costs more than the search).
pub fn in_store_bytes(path: &[u8]) -> bool {
    static FINDER: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new(STORE_DIR.as_bytes()));
    let name = STORE_DIR.as_bytes();
    FINDER.find_iter(path).any(|at| {
        let before = at.checked_sub(1).map(|i| path[i]);
        let after = path.get(at + name.len()).copied();
        matches!(before, None | Some(b'/')) && matches!(after, None | Some(b'/'))
    })
}

/// The header a delta starts with: magic, then the dictionary's hash.
pub fn header(coding: DeltaCoding, h: &Hash) -> Vec<u8> {
    let mut v = Vec::with_capacity(coding.header_len());
    v.extend_from_slice(coding.magic());
    v.extend_from_slice(h);
    v
}

/// The coding, dictionary hash and compressed payload of a delta's bytes;
/// `None` when they start with neither magic or are too short.
pub fn split_header(delta: &[u8]) -> Option<(DeltaCoding, Hash, &[u8])> {
    let coding = DeltaCoding::ALL
        .into_iter()
        .find(|c| delta.starts_with(c.magic()))?;
    let (head, payload) = delta.split_at_checked(coding.header_len())?;
    let h = head[coding.magic().len()..].try_into().ok()?;
    Some((coding, h, payload))
}

/// Whether a delta's first bytes `head` are the `coding` header naming
/// the dictionary `h`: a file named for one dictionary may hold a delta
/// against another (copied, renamed), which a client would decode to
/// garbage or reject.
pub fn header_names(coding: DeltaCoding, h: &Hash, head: &[u8]) -> bool {
    matches!(split_header(head), Some((c, found, _)) if c == coding && found == *h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_names_its_dictionary_and_coding_only() {
        let (h, other) = (hash(b"dictionary"), hash(b"another"));
        for c in DeltaCoding::ALL {
            let mut d = header(c, &h);
            d.extend_from_slice(b"payload");
            assert!(header_names(c, &h, &d));
            assert!(header_names(c, &h, &d[..c.header_len()]));
            assert!(!header_names(c, &other, &d), "another dictionary");
            assert!(!header_names(c, &h, &d[..c.header_len() - 1]), "short");
        }
        let z = header(DeltaCoding::Dcz, &h);
        assert!(!header_names(DeltaCoding::Dcb, &h, &z), "another coding");
    }

    #[test]
    fn header_bytes_follow_the_rfc() {
        let h = hash(b"dictionary");
        let z = header(DeltaCoding::Dcz, &h);
        assert_eq!(z.len(), 40);
        assert_eq!(z[..8], [0x5E, 0x2A, 0x4D, 0x18, 0x20, 0, 0, 0]);
        assert_eq!(z[8..], h);
        let b = header(DeltaCoding::Dcb, &h);
        assert_eq!(b.len(), 36);
        assert_eq!(b[..4], [0xFF, 0x44, 0x43, 0x42]);
        assert_eq!(
            split_header(&b).map(|s| (s.0, s.1)),
            Some((DeltaCoding::Dcb, h))
        );
        assert!(split_header(&z[..39]).is_none());
        assert!(split_header(b"\x28\xb5\x2f\xfd").is_none());
    }

    #[test]
    fn hash_is_sha256() {
        assert_eq!(
            to_hex(&hash(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn names_round_trip() {
        let h = hash(b"v1");
        let hex = to_hex(&h);
        assert_eq!(from_hex(&hex), Some(h));
        assert_eq!(from_hex(&hex.to_uppercase()), None);
        assert_eq!(from_hex(&hex[1..]), None);
        let name = delta_file_name("app.js", &h, DeltaCoding::Dcz);
        assert_eq!(name, format!("app.js.{hex}.dcz"));
        assert_eq!(
            parse_delta_name(&name),
            Some(("app.js", h, DeltaCoding::Dcz))
        );
        assert_eq!(
            delta_path(Path::new("/s/app.js"), &h, DeltaCoding::Dcb),
            Some(PathBuf::from(format!("/s/app.js.{hex}.dcb")))
        );
        assert_eq!(parse_delta_name("app.js.dcz"), None);
        assert_eq!(parse_delta_name(&format!(".{hex}.dcz")), None);
        assert_eq!(parse_delta_name(&format!("a.{hex}.zst")), None);
    }

    #[test]
    fn store_paths_are_recognised() {
        assert!(in_store(Path::new("/.gzip-disk-ng/versions/a.html/x.zst")));
        assert!(in_store(Path::new("docs/.gzip-disk-ng")));
        assert!(!in_store(Path::new("/docs/.gzip-disk-ng.html")));
        assert!(!in_store(Path::new("/docs/x.gzip-disk-ng")));
        assert!(in_store(Path::new(".gzip-disk-ng")));
        assert!(in_store(Path::new("/a.b/..c/.gzip-disk-ng/x.y")));
        assert!(!in_store(Path::new("/a/..gzip-disk-ng/x")));
        assert!(!in_store(Path::new("/a/.gzip-disk/x")));
        assert!(!in_store(Path::new("/a/.gzip-disk-ngx/.")));
        assert!(!in_store(Path::new("")));
    }
}

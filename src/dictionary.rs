//! Compression dictionary transport (RFC 9842): the `dcz` and `dcb` delta
//! formats, the names deltas have on disk and the dictionary store's place.
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
//! Nothing here knows of Apache or of the publish tool's walks.

use sha2::{Digest, Sha256};
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The hidden directory at the top of a published tree that holds earlier
/// versions kept as dictionaries. Never served: the module refuses every
/// request with a path component of this name.
pub const STORE_DIR: &str = ".gzip-disk-ng";

/// Under `STORE_DIR`: `versions/<path relative to the tree>/<hex>.zst`,
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

/// Largest brotli window a `dcb` may use: 16 MiB (RFC 9842, 5.1).
pub const DCB_LGWIN_MAX: u32 = 24;

/// Largest zstd window a `dcz` may use, whatever the dictionary (RFC 9842,
/// 5.2: 8 MiB or 1.25 times the dictionary, at most 128 MiB).
pub const DCZ_WINDOW_CAP: u64 = 128 << 20;

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
/// one vectorised search does the common case.
pub fn in_store_bytes(path: &[u8]) -> bool {
    let name = STORE_DIR.as_bytes();
    memchr::memmem::find_iter(path, name).any(|at| {
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

/// The largest window RFC 9842 lets a `dcz` use with a dictionary of
/// `dict_len` bytes: 8 MiB or 1.25 times the dictionary, at most 128 MiB.
pub fn dcz_window_max(dict_len: u64) -> u64 {
    (8u64 << 20)
        .max(dict_len.saturating_add(dict_len / 4))
        .min(DCZ_WINDOW_CAP)
}

/// zstd window log for a delta: wide enough to reach the whole dictionary
/// while the whole input is encoded (a prefix is only reachable within the
/// window), within `dcz_window_max`.
pub fn dcz_window_log(dict_len: u64, data_len: u64) -> u32 {
    let max = dcz_window_max(dict_len);
    let max_log = 63 - max.leading_zeros();
    let need = dict_len.saturating_add(data_len).max(1 << 10);
    let need_log = 64 - (need - 1).leading_zeros();
    need_log.min(max_log)
}

/// True when a dictionary and an input fit one `dcb` window together,
/// the only case `encode` makes a `dcb` for: beyond it the encoder would
/// drop the dictionary's start, which decoders see differently; it has
/// not been checked against a browser.
pub fn dcb_fits(dict_len: u64, data_len: u64) -> bool {
    dict_len.saturating_add(data_len).saturating_add(16) <= 1 << DCB_LGWIN_MAX
}

/// Brotli window bits for a delta: the dictionary and the input in one
/// window, so every byte of the dictionary can be referred to.
pub fn dcb_lgwin(dict_len: u64, data_len: u64) -> u32 {
    let need = dict_len.saturating_add(data_len).saturating_add(16);
    let mut bits = 16;
    while bits < DCB_LGWIN_MAX && (1u64 << bits) < need {
        bits += 1;
    }
    bits
}

/// Encoder settings for deltas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeltaLevels {
    /// zstd level, 1..=22.
    pub zstd: i32,
    /// Brotli quality, 0..=11.
    pub brotli_quality: u32,
}

impl Default for DeltaLevels {
    fn default() -> Self {
        DeltaLevels {
            zstd: 19,
            brotli_quality: 11,
        }
    }
}

/// The whole delta (header included) of `data` against `dictionary`.
pub fn encode(
    coding: DeltaCoding,
    levels: &DeltaLevels,
    dictionary: &[u8],
    data: &[u8],
) -> io::Result<Vec<u8>> {
    if coding == DeltaCoding::Dcb && !dcb_fits(dictionary.len() as u64, data.len() as u64) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "dictionary and input exceed the 16 MiB dcb window",
        ));
    }
    let mut out = header(coding, &hash(dictionary));
    match coding {
        DeltaCoding::Dcz => encode_zstd(levels.zstd, dictionary, data, &mut out)?,
        DeltaCoding::Dcb => encode_brotli(levels.brotli_quality, dictionary, data, &mut out)?,
    }
    Ok(out)
}

/// One zstd frame of `data` with `dictionary` as a raw prefix, as
/// `zstd --patch-from` makes: content size and checksum declared.
fn encode_zstd(level: i32, dictionary: &[u8], data: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
    let mut e = zstd::stream::write::Encoder::with_ref_prefix(out, level, dictionary)?;
    e.window_log(dcz_window_log(dictionary.len() as u64, data.len() as u64))?;
    e.include_checksum(true)?;
    e.include_contentsize(true)?;
    e.set_pledged_src_size(Some(data.len() as u64))?;
    e.write_all(data)?;
    e.finish()?;
    Ok(())
}

/// A brotli stream of `data` with `dictionary` as a raw prefix dictionary.
/// With a custom dictionary the encoder leaves brotli's built-in one
/// unused, so a decoder that attaches the dictionary as raw content (RFC
/// 9842's brotli) reads every distance as this encoder meant it.
fn encode_brotli(
    quality: u32,
    dictionary: &[u8],
    data: &[u8],
    out: &mut Vec<u8>,
) -> io::Result<()> {
    let params = brotli::enc::BrotliEncoderParams {
        quality: quality.min(11) as i32,
        lgwin: dcb_lgwin(dictionary.len() as u64, data.len() as u64) as i32,
        size_hint: data.len(),
        ..Default::default()
    };
    let mut input = vec![0u8; 64 * 1024];
    let mut output = vec![0u8; 64 * 1024];
    let mut nop =
        |_: &mut brotli::interface::PredictionModeContextMap<brotli::InputReferenceMut>,
         _: &mut [brotli::interface::StaticCommand],
         _: brotli::InputPair,
         _: &mut brotli::enc::StandardAlloc| ();
    brotli::BrotliCompressCustomIoCustomDict(
        &mut brotli::IoReaderWrapper(&mut &data[..]),
        &mut brotli::IoWriterWrapper(out),
        &mut input,
        &mut output,
        &params,
        brotli::enc::StandardAlloc::default(),
        &mut nop,
        dictionary,
        io::Error::new(io::ErrorKind::UnexpectedEof, "unexpected end of input"),
    )?;
    Ok(())
}

/// Why a delta does not decode against a dictionary.
#[derive(Debug)]
pub enum DeltaError {
    /// Neither magic, or shorter than its header.
    NoHeader,
    /// The header names another dictionary.
    OtherDictionary(Hash),
    /// The payload does not decode.
    Corrupt(io::Error),
}

impl std::fmt::Display for DeltaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeltaError::NoHeader => f.write_str("no dcz or dcb header"),
            DeltaError::OtherDictionary(h) => {
                write!(f, "header names dictionary {}", to_hex(h))
            }
            DeltaError::Corrupt(e) => write!(f, "does not decode: {e}"),
        }
    }
}

/// Decodes a whole delta (header included) against `dictionary`, after
/// checking that its header names that dictionary.
pub fn decode(dictionary: &[u8], delta: &[u8]) -> Result<Vec<u8>, DeltaError> {
    let (coding, h, payload) = split_header(delta).ok_or(DeltaError::NoHeader)?;
    if h != hash(dictionary) {
        return Err(DeltaError::OtherDictionary(h));
    }
    let mut out = Vec::new();
    match coding {
        DeltaCoding::Dcz => {
            let mut d = zstd::stream::read::Decoder::with_ref_prefix(payload, dictionary)
                .map_err(DeltaError::Corrupt)?;
            let max = dcz_window_max(dictionary.len() as u64);
            d.window_log_max(63 - max.leading_zeros())
                .map_err(DeltaError::Corrupt)?;
            d.read_to_end(&mut out).map_err(DeltaError::Corrupt)?;
        }
        DeltaCoding::Dcb => {
            brotli::Decompressor::new_with_custom_dict(payload, 4096, dictionary.to_vec().into())
                .read_to_end(&mut out)
                .map_err(DeltaError::Corrupt)?;
        }
    }
    Ok(out)
}

/// Repeat offsets zstd's trainer writes last in a dictionary's header
/// (`1, 4, 8` as little-endian u32): the content follows them.
const TRAINED_REPCODES: [u8; 12] = [1, 0, 0, 0, 4, 0, 0, 0, 8, 0, 0, 0];

/// The raw content of a dictionary made by zstd's trainer: without its
/// magic, id and entropy tables, which a raw-content user (RFC 9842) would
/// only read as noise, and whose magic would make `zstd -D` (or any
/// decoder that guesses) take the file for a structured dictionary.
pub fn trained_content(trained: &[u8]) -> &[u8] {
    const ZSTD_DICT_MAGIC: [u8; 4] = [0x37, 0xA4, 0x30, 0xEC];
    if !trained.starts_with(&ZSTD_DICT_MAGIC) {
        return trained;
    }
    let head = &trained[..trained.len().min(8 << 10)];
    match head
        .windows(TRAINED_REPCODES.len())
        .skip(8)
        .position(|w| w == TRAINED_REPCODES)
    {
        Some(at) => &trained[8 + at + TRAINED_REPCODES.len()..],
        None => &trained[8..],
    }
}

/// A raw dictionary of at most `size` bytes trained on `samples` with
/// zstd's trainer.
pub fn train<S: AsRef<[u8]>>(samples: &[S], size: usize) -> io::Result<Vec<u8>> {
    let trained = zstd::dict::from_samples(samples, size)?;
    Ok(trained_content(&trained).to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(seed: u32, n: usize) -> Vec<u8> {
        let words = [
            "function ",
            "return ",
            "var ",
            "jQuery",
            "(a,b)",
            "{",
            "}",
            ";\n",
            "this.",
            "=",
        ];
        let mut x = seed;
        let mut v = Vec::with_capacity(n);
        while v.len() < n {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            v.extend_from_slice(words[(x >> 16) as usize % words.len()].as_bytes());
        }
        v.truncate(n);
        v
    }

    /// Version 2: version 1 with a few edits.
    fn edited(v1: &[u8]) -> Vec<u8> {
        let mut v2 = v1.to_vec();
        v2.splice(1000..1000, b"/* new in v2 */".iter().copied());
        v2.truncate(v2.len() - 500);
        v2.extend_from_slice(b"export default jQuery;\n");
        v2
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
    }

    #[test]
    fn windows_stay_within_rfc_limits() {
        assert_eq!(dcz_window_max(0), 8 << 20);
        assert_eq!(dcz_window_max(80 << 20), 100 << 20);
        assert_eq!(dcz_window_max(1 << 30), 128 << 20);
        assert_eq!(dcz_window_log(90_000, 90_000), 18);
        assert_eq!(dcz_window_log(0, 0), 10);
        assert_eq!(dcz_window_log(6 << 20, 6 << 20), 23);
        assert_eq!(dcz_window_log(40 << 20, 40 << 20), 25);
        assert_eq!(dcb_lgwin(90_000, 90_000), 18);
        assert!(dcb_fits(8 << 20, (8 << 20) - 16));
        assert!(!dcb_fits(8 << 20, (8 << 20) - 15));
        let big = vec![0u8; 16 << 20];
        let e = encode(DeltaCoding::Dcb, &DeltaLevels::default(), &big, b"x");
        assert_eq!(e.unwrap_err().kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn dcz_decodes_with_the_zstd_library_and_is_small() {
        let v1 = text(1, 90_000);
        let v2 = edited(&v1);
        let d = encode(DeltaCoding::Dcz, &DeltaLevels::default(), &v1, &v2).unwrap();
        assert!(d.len() < 200, "delta of a small edit: {} bytes", d.len());
        assert_eq!(decode(&v1, &d).unwrap(), v2);
        // Plain zstd with the prefix, as a browser decodes the payload.
        let mut out = Vec::new();
        zstd::stream::read::Decoder::with_ref_prefix(&d[40..], &v1[..])
            .unwrap()
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, v2);
        assert!(matches!(
            decode(&v2, &d),
            Err(DeltaError::OtherDictionary(h)) if h == hash(&v1)
        ));
    }

    #[test]
    fn dcz_decodes_with_the_zstd_cli() {
        let v1 = text(2, 50_000);
        let v2 = edited(&v1);
        let d = encode(DeltaCoding::Dcz, &DeltaLevels::default(), &v1, &v2).unwrap();
        assert_eq!(crate::test_util::zstd_cli_decode_with(&v1, &d[40..]), v2);
    }

    #[test]
    fn dcb_decodes_with_the_brotli_library() {
        let v1 = text(3, 70_000);
        let v2 = edited(&v1);
        let d = encode(DeltaCoding::Dcb, &DeltaLevels::default(), &v1, &v2).unwrap();
        assert!(d.len() < 200, "delta of a small edit: {} bytes", d.len());
        assert_eq!(decode(&v1, &d).unwrap(), v2);
        let mut corrupt = d.clone();
        let last = corrupt.len() - 3;
        corrupt[last] ^= 0x55;
        assert!(decode(&v1, &corrupt).map_or(true, |o| o != v2));
    }

    #[test]
    fn empty_and_unrelated_inputs_round_trip() {
        for c in DeltaCoding::ALL {
            for (dict, data) in [
                (text(4, 10), vec![]),
                (vec![], text(5, 3000)),
                (text(6, 3000), text(7, 3000)),
            ] {
                let d = encode(c, &DeltaLevels::default(), &dict, &data).unwrap();
                assert_eq!(decode(&dict, &d).unwrap(), data, "{c:?}");
            }
        }
    }

    #[test]
    fn trained_dictionary_is_raw_content() {
        let pages: Vec<Vec<u8>> = (0..200)
            .map(|i| {
                let mut p = b"<!DOCTYPE html><html><head><title>Manual</title><link rel=stylesheet href=style.css></head><body><div id=nav>Modules | Directives | FAQ | Glossary | Sitemap</div>".to_vec();
                p.extend_from_slice(&text(i, 800));
                p.extend_from_slice(b"<div id=footer>Copyright 2026 The Apache Software Foundation. Licensed under the Apache License, Version 2.0.</div></body></html>");
                p
            })
            .collect();
        let dict = train(&pages, 8 << 10).unwrap();
        assert!(!dict.is_empty() && dict.len() <= 8 << 10);
        assert!(!dict.starts_with(&[0x37, 0xA4, 0x30, 0xEC]));
        let page = &pages[7];
        let d = encode(DeltaCoding::Dcz, &DeltaLevels::default(), &dict, page).unwrap();
        let plain = zstd::bulk::compress(page, 19).unwrap();
        assert!(
            d.len() - 40 < plain.len(),
            "{} vs {}",
            d.len() - 40,
            plain.len()
        );
        assert_eq!(decode(&dict, &d).unwrap(), *page);
    }
}

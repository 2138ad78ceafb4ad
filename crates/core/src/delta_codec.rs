//! The payloads of deltas (RFC 9842) and of the raw dictionaries they
//! are made against: the `dcz` and `dcb` encoders (within RFC 9842's
//! window limits) and decoders the publish tool makes and verifies deltas
//! with. A site dictionary is learned by `crate::train`. The formats'
//! headers and names, which the module shares, are `crate::dictionary`'s.

use crate::decode::verdict::{same_bytes, OriginalDigest};
use crate::dictionary::{hash, header, split_header, to_hex, DeltaCoding, Hash};
use std::io::{self, Read, Write};

/// Largest brotli window a `dcb` may use: 16 MiB (RFC 9842, 5.1).
const DCB_LGWIN_MAX: u32 = 24;

/// Largest zstd window a `dcz` may use, whatever the dictionary (RFC 9842,
/// 5.2: 8 MiB or 1.25 times the dictionary, at most 128 MiB).
const DCZ_WINDOW_CAP: u64 = 128 << 20;

/// The largest window RFC 9842 lets a `dcz` use with a dictionary of
/// `dict_len` bytes: 8 MiB or 1.25 times the dictionary, at most 128 MiB.
fn dcz_window_max(dict_len: u64) -> u64 {
    (8u64 << 20)
        .max(dict_len.saturating_add(dict_len / 4))
        .min(DCZ_WINDOW_CAP)
}

/// zstd window log for a delta: wide enough to reach the whole dictionary
/// while the whole input is encoded (a prefix is only reachable within the
/// window), within `dcz_window_max`.
fn dcz_window_log(dict_len: u64, data_len: u64) -> u32 {
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
pub(crate) fn dcb_lgwin(dict_len: u64, data_len: u64) -> u32 {
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
    payload_decoder(coding, dictionary, payload)?
        .read_to_end(&mut out)
        .map_err(DeltaError::Corrupt)?;
    Ok(out)
}

/// Whether the whole `coding` delta `delta` reads (header included) names
/// `dictionary` and decodes against it to `original`'s bytes: a server
/// that holds the dictionary knows a published delta to be its page's
/// representation. Reads at most the original's length and a byte of
/// decoded output, so a bomb costs what its original costs.
pub fn decodes_to(
    coding: DeltaCoding,
    dictionary: &[u8],
    mut delta: impl Read,
    original: &OriginalDigest,
) -> Result<bool, DeltaError> {
    let mut head = [0u8; 40];
    let head = &mut head[..coding.header_len()];
    delta.read_exact(head).map_err(|_| DeltaError::NoHeader)?;
    match split_header(head) {
        Some((c, h, _)) if c == coding && h == hash(dictionary) => {}
        Some((_, h, _)) => return Err(DeltaError::OtherDictionary(h)),
        None => return Err(DeltaError::NoHeader),
    }
    let decoded = payload_decoder(coding, dictionary, delta)?;
    same_bytes(decoded, original).map_err(DeltaError::Corrupt)
}

/// A reader of what a delta's `payload` (after its header) decodes to
/// against `dictionary`, within RFC 9842's window limits.
fn payload_decoder<'d>(
    coding: DeltaCoding,
    dictionary: &'d [u8],
    payload: impl Read + 'd,
) -> Result<Box<dyn Read + 'd>, DeltaError> {
    Ok(match coding {
        DeltaCoding::Dcz => {
            let mut d = zstd::stream::read::Decoder::with_ref_prefix(
                io::BufReader::new(payload),
                dictionary,
            )
            .map_err(DeltaError::Corrupt)?;
            let max = dcz_window_max(dictionary.len() as u64);
            d.window_log_max(63 - max.leading_zeros())
                .map_err(DeltaError::Corrupt)?;
            Box::new(d)
        }
        DeltaCoding::Dcb => Box::new(brotli::Decompressor::new_with_custom_dict(
            payload,
            4096,
            dictionary.to_vec().into(),
        )),
    })
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

    /// A delta is its page's representation only when it names the
    /// dictionary given and decodes against it to the page's very bytes;
    /// a bomb is read no further than the page's length and a byte.
    #[test]
    fn decodes_to_names_the_dictionary_and_the_very_bytes() {
        let v1 = text(4, 60_000);
        let v2 = edited(&v1);
        let digest = |b: &[u8]| OriginalDigest::of(b).unwrap();
        for c in DeltaCoding::ALL {
            let delta = encode(c, &DeltaLevels::default(), &v1, &v2).unwrap();
            assert!(
                decodes_to(c, &v1, &delta[..], &digest(&v2)).unwrap(),
                "{c:?}"
            );
            let mut other = v2.clone();
            other[30_000] ^= 1;
            assert!(!decodes_to(c, &v1, &delta[..], &digest(&other)).unwrap());
            assert!(!decodes_to(c, &v1, &delta[..], &digest(&v2[..v2.len() - 1])).unwrap());
            assert!(matches!(
                decodes_to(c, &v2, &delta[..], &digest(&v2)),
                Err(DeltaError::OtherDictionary(_))
            ));
            assert!(matches!(
                decodes_to(c, &v1, &delta[..20], &digest(&v2)),
                Err(DeltaError::NoHeader)
            ));
            let cut = &delta[..delta.len() - 8];
            assert!(!matches!(decodes_to(c, &v1, cut, &digest(&v2)), Ok(true)));
        }
        let other = DeltaCoding::Dcb;
        let dcz = encode(DeltaCoding::Dcz, &DeltaLevels::default(), &v1, &v2).unwrap();
        assert!(
            decodes_to(other, &v1, &dcz[..], &digest(&v2)).is_err(),
            "another coding"
        );
        // 1 MiB against a page of 10 bytes: read no further than the
        // first block past them.
        let long = text(5, 1 << 20);
        for c in DeltaCoding::ALL {
            let bomb = encode(c, &DeltaLevels::default(), &v1, &long).unwrap();
            let mut counted = Counting(&bomb[..], 0);
            assert!(!decodes_to(c, &v1, &mut counted, &digest(&long[..10])).unwrap());
            assert!(
                counted.1 < bomb.len() / 4,
                "{c:?}: {} of {}",
                counted.1,
                bomb.len()
            );
        }
    }

    /// A reader that counts what it gave.
    struct Counting<'a>(&'a [u8], usize);

    impl Read for Counting<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.0.read(buf)?;
            self.1 += n;
            Ok(n)
        }
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
    fn a_trained_dictionary_makes_smaller_deltas() {
        let pages: Vec<Vec<u8>> = (0..200)
            .map(|i| {
                let mut p = b"<!DOCTYPE html><html><head><title>Manual</title><link rel=stylesheet href=style.css></head><body><div id=nav>Modules | Directives | FAQ | Glossary | Sitemap</div>".to_vec();
                p.extend_from_slice(&text(i, 800));
                p.extend_from_slice(b"<div id=footer>Copyright 2026 The Apache Software Foundation. Licensed under the Apache License, Version 2.0.</div></body></html>");
                p
            })
            .collect();
        let dict = crate::train::train(&pages, 8 << 10);
        assert!(!dict.is_empty() && dict.len() <= 8 << 10);
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

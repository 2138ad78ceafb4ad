//! Streaming decoders for the three codings, shared by the module's
//! decompress path and the publish tool's checks.
//!
//! Memory is bounded by the coding's window: gzip 32 KiB, zstd the frame's
//! declared window (refused above 8 MiB, the browsers' limit), brotli the
//! stream's window. `probe` reads a sibling's first bytes (and gzip's last
//! four) to learn its declared size and window before anything is sent.

use crate::coding::Coding;
use std::fmt;
use std::io::{self, BufReader, Read};

/// Largest zstd window accepted: what browsers accept (RFC 9659).
pub const ZSTD_WINDOW_LOG_MAX: u32 = 23;

/// Deflate cannot expand data more than this factor, so a gzip whose
/// compressed size times this stays below 2^32 has an unambiguous ISIZE.
const DEFLATE_MAX_RATIO: u64 = 1032;

/// Why a sibling could not be decoded.
#[derive(Debug)]
pub enum DecodeError {
    /// The data is not valid for its coding.
    Corrupt(String),
    /// The data ends before the stream does.
    Truncated,
    /// Reading the file failed.
    Io(io::Error),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Corrupt(m) => write!(f, "corrupt data: {m}"),
            DecodeError::Truncated => write!(f, "truncated data"),
            DecodeError::Io(e) => write!(f, "read error: {e}"),
        }
    }
}

impl std::error::Error for DecodeError {}

impl From<io::Error> for DecodeError {
    fn from(e: io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::UnexpectedEof => DecodeError::Truncated,
            io::ErrorKind::InvalidData | io::ErrorKind::InvalidInput | io::ErrorKind::Other => {
                DecodeError::Corrupt(e.to_string())
            }
            _ => DecodeError::Io(e),
        }
    }
}

/// What a sibling's header says about its content.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Probe {
    /// Decoded size, when the format declares it unambiguously.
    pub declared_len: Option<u64>,
    /// Bytes of history the decoder must keep.
    pub window: u64,
}

/// Bytes of a sibling's head that `probe` wants.
pub const PROBE_HEAD: usize = 18;

/// Inspects a sibling's first bytes (`head`, up to `PROBE_HEAD`), its total
/// length and, for gzip, its last four bytes.
pub fn probe(
    coding: Coding,
    head: &[u8],
    file_len: u64,
    tail: Option<[u8; 4]>,
) -> Result<Probe, DecodeError> {
    match coding {
        Coding::Gzip => {
            if head.len() < 10 || file_len < 18 {
                return Err(DecodeError::Truncated);
            }
            if head[0] != 0x1f || head[1] != 0x8b || head[2] != 8 {
                return Err(DecodeError::Corrupt("not a gzip stream".into()));
            }
            let declared_len = match tail {
                Some(t) if file_len.saturating_mul(DEFLATE_MAX_RATIO) < (1u64 << 32) => {
                    Some(u64::from(u32::from_le_bytes(t)))
                }
                _ => None,
            };
            Ok(Probe {
                declared_len,
                window: 32 * 1024,
            })
        }
        Coding::Zstd => zstd_probe(head),
        Coding::Br => {
            let first = *head.first().ok_or(DecodeError::Truncated)?;
            Ok(Probe {
                declared_len: None,
                window: 1u64 << brotli_wbits(first),
            })
        }
    }
}

fn zstd_probe(head: &[u8]) -> Result<Probe, DecodeError> {
    if head.len() < 6 {
        return Err(DecodeError::Truncated);
    }
    if head[..4] != [0x28, 0xb5, 0x2f, 0xfd] {
        return Err(DecodeError::Corrupt("not a zstd frame".into()));
    }
    let fhd = head[4];
    let single_segment = fhd & 0x20 != 0;
    let declared_len = match zstd::zstd_safe::get_frame_content_size(head) {
        Ok(n) => n,
        Err(_) => return Err(DecodeError::Corrupt("bad zstd frame header".into())),
    };
    let window = if single_segment {
        declared_len.unwrap_or(0)
    } else {
        let wd = head[5];
        let base = 1u64 << (10 + (wd >> 3));
        base + (base / 8) * u64::from(wd & 7)
    };
    if window > 1u64 << ZSTD_WINDOW_LOG_MAX {
        return Err(DecodeError::Corrupt(format!(
            "zstd window {window} exceeds 8 MiB"
        )));
    }
    Ok(Probe {
        declared_len,
        window,
    })
}

/// WBITS from a brotli stream's first bits (RFC 7932 §9.1).
fn brotli_wbits(b0: u8) -> u32 {
    if b0 & 1 == 0 {
        return 16;
    }
    let n = (b0 >> 1) & 7;
    if n != 0 {
        return 17 + u32::from(n);
    }
    let m = (b0 >> 4) & 7;
    match m {
        // 1 marks large-window brotli, which HTTP does not use.
        0 | 1 => 17,
        m => 8 + u32::from(m),
    }
}

/// A streaming decoder over any reader.
pub struct Decoder<R: Read> {
    inner: Inner<R>,
}

enum Inner<R: Read> {
    Gzip(Box<flate2::read::MultiGzDecoder<BufReader<R>>>),
    Zstd(Box<zstd::stream::read::Decoder<'static, BufReader<R>>>),
    Br(Box<brotli::Decompressor<R>>),
}

/// Input buffer per decoder: small, since decoders keep their own window.
const IN_BUF: usize = 32 * 1024;

impl<R: Read> Decoder<R> {
    /// Wraps `src`, which holds data in `coding`.
    pub fn new(coding: Coding, src: R) -> Result<Decoder<R>, DecodeError> {
        let inner = match coding {
            Coding::Gzip => Inner::Gzip(Box::new(flate2::read::MultiGzDecoder::new(
                BufReader::with_capacity(IN_BUF, src),
            ))),
            Coding::Zstd => {
                let mut d =
                    zstd::stream::read::Decoder::with_buffer(BufReader::with_capacity(IN_BUF, src))
                        .map_err(DecodeError::from)?;
                d.window_log_max(ZSTD_WINDOW_LOG_MAX)
                    .map_err(DecodeError::from)?;
                Inner::Zstd(Box::new(d))
            }
            Coding::Br => Inner::Br(Box::new(brotli::Decompressor::new(src, IN_BUF))),
        };
        Ok(Decoder { inner })
    }

    /// Fills `out` with decoded bytes; 0 means the stream ended cleanly.
    pub fn read(&mut self, out: &mut [u8]) -> Result<usize, DecodeError> {
        loop {
            let r = match &mut self.inner {
                Inner::Gzip(d) => d.read(out),
                Inner::Zstd(d) => d.read(out),
                Inner::Br(d) => d.read(out),
            };
            match r {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other.map_err(DecodeError::from),
            }
        }
    }

    /// Decodes everything into `sink`, returning the decoded length.
    pub fn copy_to(&mut self, sink: &mut impl io::Write) -> Result<u64, DecodeError> {
        let mut buf = vec![0u8; 64 * 1024];
        let mut total = 0u64;
        loop {
            let n = self.read(&mut buf)?;
            if n == 0 {
                return Ok(total);
            }
            sink.write_all(&buf[..n]).map_err(DecodeError::Io)?;
            total += n as u64;
        }
    }
}

/// Decodes a whole buffer; for tests and small checks.
pub fn decode_all(coding: Coding, data: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let mut out = Vec::new();
    Decoder::new(coding, data)?.copy_to(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn sample() -> Vec<u8> {
        (0..200_000u32)
            .map(|i| (i % 251) as u8 ^ (i / 1000) as u8)
            .collect()
    }

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn zst(data: &[u8]) -> Vec<u8> {
        zstd::bulk::compress(data, 19).unwrap()
    }

    fn br(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = brotli::CompressorWriter::new(&mut out, 4096, 9, 22);
        w.write_all(data).unwrap();
        drop(w);
        out
    }

    fn encoded(c: Coding, d: &[u8]) -> Vec<u8> {
        match c {
            Coding::Gzip => gz(d),
            Coding::Zstd => zst(d),
            Coding::Br => br(d),
        }
    }

    #[test]
    fn round_trip_each_coding() {
        let d = sample();
        for c in Coding::ALL {
            assert_eq!(decode_all(c, &encoded(c, &d)).unwrap(), d, "{c:?}");
        }
    }

    #[test]
    fn empty_content_round_trips() {
        for c in Coding::ALL {
            assert_eq!(decode_all(c, &encoded(c, b"")).unwrap(), b"", "{c:?}");
        }
    }

    #[test]
    fn truncated_input_is_an_error() {
        let d = sample();
        for c in Coding::ALL {
            let e = encoded(c, &d);
            for cut in [1, e.len() / 2, e.len() - 1] {
                let r = decode_all(c, &e[..cut]);
                assert!(r.is_err(), "{c:?} cut at {cut} decoded");
            }
        }
    }

    #[test]
    fn corrupt_input_is_an_error() {
        let d = sample();
        for c in Coding::ALL {
            let mut e = encoded(c, &d);
            let mid = e.len() / 2;
            for b in &mut e[mid..mid + 64] {
                *b ^= 0x5a;
            }
            assert!(decode_all(c, &e).is_err(), "{c:?}");
            assert!(
                decode_all(c, b"definitely not compressed").is_err(),
                "{c:?}"
            );
            assert!(decode_all(c, b"").is_err(), "{c:?} empty");
        }
    }

    #[test]
    fn probe_reads_declared_sizes() {
        let d = sample();
        let g = gz(&d);
        let tail: [u8; 4] = g[g.len() - 4..].try_into().unwrap();
        let p = probe(Coding::Gzip, &g[..PROBE_HEAD], g.len() as u64, Some(tail)).unwrap();
        assert_eq!(p.declared_len, Some(d.len() as u64));
        let z = zst(&d);
        let p = probe(Coding::Zstd, &z[..PROBE_HEAD], z.len() as u64, None).unwrap();
        assert_eq!(p.declared_len, Some(d.len() as u64));
        assert!(p.window >= d.len() as u64 / 2);
        let b = br(&d);
        let p = probe(Coding::Br, &b[..PROBE_HEAD], b.len() as u64, None).unwrap();
        assert_eq!(p.declared_len, None);
        assert_eq!(p.window, 1 << 22);
    }

    #[test]
    fn probe_rejects_wrong_magic_and_ambiguous_isize() {
        assert!(probe(Coding::Gzip, b"PK\x03\x04xxxxxxxxxxxxxx", 100, None).is_err());
        assert!(probe(Coding::Zstd, b"\x1f\x8b\x08\0\0\0\0\0", 100, None).is_err());
        assert!(matches!(
            probe(Coding::Gzip, b"\x1f\x8b", 2, None),
            Err(DecodeError::Truncated)
        ));
        let big = probe(
            Coding::Gzip,
            b"\x1f\x8b\x08\0\0\0\0\0\0\x03",
            10 << 20,
            Some([1, 0, 0, 0]),
        )
        .unwrap();
        assert_eq!(big.declared_len, None);
    }

    #[test]
    fn streaming_read_uses_small_output_chunks() {
        let d = sample();
        for c in Coding::ALL {
            let e = encoded(c, &d);
            let mut dec = Decoder::new(c, &e[..]).unwrap();
            let mut out = Vec::new();
            let mut buf = [0u8; 1000];
            loop {
                let n = dec.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                assert!(n <= 1000);
                out.extend_from_slice(&buf[..n]);
            }
            assert_eq!(out, d);
        }
    }
}

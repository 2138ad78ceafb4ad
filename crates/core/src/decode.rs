//! Streaming decoders for the three codings, shared by the module's
//! decompress path and the publish tool's checks.
//!
//! Memory is bounded by the coding's window: gzip 32 KiB, zstd the frame's
//! declared window (refused above 8 MiB, the browsers' limit), brotli the
//! stream's window (the module decodes none above `MAX_WINDOW`). `inspect`
//! reads a sibling's headers (every zstd frame and block header) to learn
//! its window, whether browsers accept it, and whether its decoded length
//! is certain, before anything is sent; for gzip it also reads the last
//! four bytes (ISIZE), which the publish tool's up-to-date check compares
//! with the original's size.
//! `Body` is the module's decompress path: small siblings decoded in one
//! call, others through `Decoder`, with buffers and contexts reused.

use crate::coding::Coding;
use std::fmt;

mod body;
pub mod bounded;
pub mod verdict;
pub use body::Body;
use bounded::{Rewrite, WindowRewrite};
use std::io::{self, BufReader, Read};

/// Largest zstd window accepted: what browsers accept (RFC 9659).
pub const ZSTD_WINDOW_LOG_MAX: u32 = 23;

/// Largest window the module decodes with, so memory per decoding request
/// is capped (plus fixed buffers); also the zstd window browsers accept.
pub const MAX_WINDOW: u64 = 1 << ZSTD_WINDOW_LOG_MAX;

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
    /// Decoding needs more memory than the cap: the stream declared this
    /// window and its content outgrew what the cap holds.
    TooLarge(u64),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Corrupt(m) => write!(f, "corrupt data: {m}"),
            DecodeError::Truncated => write!(f, "truncated data"),
            DecodeError::Io(e) => write!(f, "read error: {e}"),
            DecodeError::TooLarge(w) => write!(
                f,
                "its window of {} is needed: over the {} decoding limit",
                show_size(*w),
                show_size(MAX_WINDOW)
            ),
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

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// One zstd frame header (RFC 8878 3.1.1.1), after the magic.
struct FrameHeader {
    /// Its length in bytes.
    len: u64,
    window: u64,
    /// Frame_Content_Size, unless absent or too large to be a real length.
    content: Option<u64>,
    checksum: bool,
    /// No Window_Descriptor: the window is the content size.
    single: bool,
}

fn zstd_frame_header(h: &[u8]) -> Result<FrameHeader, DecodeError> {
    let fhd = *h.first().ok_or(DecodeError::Truncated)?;
    if fhd & 0x08 != 0 {
        return Err(DecodeError::Corrupt(
            "zstd frame header reserved bit".into(),
        ));
    }
    let single = fhd & 0x20 != 0;
    let wd_len = usize::from(!single);
    let did_len = [0, 1, 2, 4][usize::from(fhd & 3)];
    let fcs_len = match fhd >> 6 {
        0 => usize::from(single),
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let len = 1 + wd_len + did_len + fcs_len;
    let field = h.get(len - fcs_len..len).ok_or(DecodeError::Truncated)?;
    let mut raw = [0u8; 8];
    raw[..fcs_len].copy_from_slice(field);
    let fcs = u64::from_le_bytes(raw) + if fcs_len == 2 { 256 } else { 0 };
    let window = if single {
        fcs
    } else {
        let wd = h[1];
        let base = 1u64 << (10 + (wd >> 3));
        base + (base / 8) * u64::from(wd & 7)
    };
    Ok(FrameHeader {
        len: len as u64,
        window,
        // 2^63 and above cannot be a file's length: unknown, not absurd.
        content: (fcs_len > 0 && fcs < 1 << 63).then_some(fcs),
        checksum: fhd & 0x04 != 0,
        single,
    })
}

/// Window bits from a brotli stream's first bytes (RFC 7932 9.1), and
/// whether it is large-window brotli (code 0010001, then 6 bits), an
/// extension HTTP clients do not accept.
fn brotli_header(b: &[u8]) -> Result<(u32, bool), DecodeError> {
    let b0 = *b.first().ok_or(DecodeError::Truncated)?;
    if b0 & 1 == 0 {
        return Ok((16, false));
    }
    let n = (b0 >> 1) & 7;
    if n != 0 {
        return Ok((17 + u32::from(n), false));
    }
    match (b0 >> 4) & 7 {
        0 => Ok((17, false)),
        1 => {
            let bits = u32::from(*b.get(1).ok_or(DecodeError::Truncated)? & 0x3f);
            if b0 & 0x80 != 0 || !(10..=30).contains(&bits) {
                return Err(DecodeError::Corrupt(
                    "bad large-window brotli header".into(),
                ));
            }
            Ok((bits, true))
        }
        m => Ok((8 + u32::from(m), false)),
    }
}

/// Positional reads, so a sibling can be inspected without a seek.
pub trait ReadAt {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize>;
}

impl ReadAt for [u8] {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let start = usize::try_from(offset).map_or(self.len(), |o| o.min(self.len()));
        let n = buf.len().min(self.len() - start);
        buf[..n].copy_from_slice(&self[start..start + n]);
        Ok(n)
    }
}

/// Reads up to `buf.len()` bytes at `offset`; fewer only at the end.
fn read_at_most<S: ReadAt + ?Sized>(
    src: &S,
    offset: u64,
    buf: &mut [u8],
) -> Result<usize, DecodeError> {
    let mut got = 0;
    while got < buf.len() {
        match src.read_at(offset + got as u64, &mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(DecodeError::Io(e)),
        }
    }
    Ok(got)
}

/// What a sibling's headers say about the whole of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeaderFacts {
    /// Exact decoded length when certain: every zstd frame declares its
    /// size. Gzip cannot tell without decoding (ISIZE is the last member's,
    /// modulo 2^32), brotli never declares one.
    pub declared_len: Option<u64>,
    /// Largest window any part of it declares (what browsers judge).
    pub window: u64,
    /// Most history decoding it must keep: the declared window, or less
    /// where a zstd frame's content is known to be smaller.
    pub needed: u64,
    /// The zstd frame header byte that declares `needed` in place of a
    /// larger window (see `bounded`).
    pub rewrite: Option<WindowRewrite>,
    /// Large-window brotli.
    pub large_window: bool,
    /// gzip: the last member's size (ISIZE), when the file is too small
    /// for it to wrap. Only the publish tool trusts it, to see that a
    /// sibling it wrote (one member) matches the original's size; the
    /// module does not, since a sibling may hold several members.
    pub gzip_isize: Option<u64>,
}

impl HeaderFacts {
    /// Why browsers would refuse this sibling, if they would.
    pub fn browser_refusal(&self, coding: Coding) -> Option<String> {
        match coding {
            Coding::Zstd if self.window > MAX_WINDOW => Some(format!(
                "zstd window of {} exceeds the 8 MiB browsers accept (RFC 9659)",
                show_size(self.window)
            )),
            Coding::Br if self.large_window => {
                Some("large-window brotli, which browsers do not accept".into())
            }
            _ => None,
        }
    }
}

/// A size for log lines: whole MiB when exact.
pub fn show_size(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else {
        format!("{n} bytes")
    }
}

/// Headers `inspect` walks at most (zstd blocks and skippable frames, some
/// 8 GiB of content); past that the length stays unknown.
const INSPECT_MAX_STEPS: u32 = 1 << 16;

/// Reads a sibling's headers (never its data) to learn its window and, for
/// zstd, whether its length is certain. Zstd: every frame, skippable frames
/// anywhere, and each frame's 3-byte block headers, so the file must end
/// exactly where its frames do.
pub fn inspect<S: ReadAt + ?Sized>(
    coding: Coding,
    src: &S,
    len: u64,
) -> Result<HeaderFacts, DecodeError> {
    let mut head = [0u8; 3];
    let n = read_at_most(src, 0, &mut head)?;
    match coding {
        Coding::Gzip if len < 18 || n < 3 => Err(DecodeError::Truncated),
        Coding::Gzip if head != [0x1f, 0x8b, 8] => {
            Err(DecodeError::Corrupt("not a gzip stream".into()))
        }
        Coding::Gzip => Ok(HeaderFacts {
            window: 32 * 1024,
            needed: 32 * 1024,
            gzip_isize: gzip_isize(src, len)?,
            ..HeaderFacts::default()
        }),
        Coding::Br => {
            let (bits, large_window) = brotli_header(&head[..n])?;
            // Standard windows over the cap are read as the cap and
            // decoding fails if the content outgrows it (see `bounded`).
            let needed = if large_window {
                1 << bits
            } else {
                (1 << bits).min(MAX_WINDOW)
            };
            Ok(HeaderFacts {
                window: 1 << bits,
                needed,
                large_window,
                ..HeaderFacts::default()
            })
        }
        Coding::Zstd => zstd_inspect(src, len),
    }
}

/// A gzip file's ISIZE, unless the file is large enough for it to have
/// wrapped. A source that ends before `len` is an I/O error, not a
/// truncated stream: the length came from a stat that the file no longer
/// matches.
fn gzip_isize<S: ReadAt + ?Sized>(src: &S, len: u64) -> Result<Option<u64>, DecodeError> {
    if len.saturating_mul(DEFLATE_MAX_RATIO) >= 1 << 32 {
        return Ok(None);
    }
    let mut t = [0u8; 4];
    if read_at_most(src, len - 4, &mut t)? < t.len() {
        return Err(DecodeError::Io(io::ErrorKind::UnexpectedEof.into()));
    }
    Ok(Some(u64::from(u32::from_le_bytes(t))))
}

fn zstd_inspect<S: ReadAt + ?Sized>(src: &S, len: u64) -> Result<HeaderFacts, DecodeError> {
    let mut facts = HeaderFacts {
        declared_len: Some(0),
        ..HeaderFacts::default()
    };
    let (mut pos, mut steps, mut frames) = (0u64, 0u32, 0u32);
    while pos < len {
        let mut h = [0u8; 18];
        let n = read_at_most(src, pos, &mut h)?;
        if n < 8 {
            return Err(DecodeError::Truncated);
        }
        let magic = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        if magic & 0xffff_fff0 == 0x184d_2a50 {
            pos += 8 + u64::from(u32::from_le_bytes([h[4], h[5], h[6], h[7]]));
            steps += 1;
        } else if h[..4] != ZSTD_MAGIC {
            return Err(DecodeError::Corrupt(format!("no zstd frame at byte {pos}")));
        } else {
            let fh = zstd_frame_header(&h[4..n])?;
            frames += 1;
            facts.window = facts.window.max(fh.window);
            facts.declared_len = facts
                .declared_len
                .zip(fh.content)
                .and_then(|(a, b)| a.checked_add(b));
            let blocks = zstd_blocks_end(src, pos + 4 + fh.len, fh.window, &mut steps)?;
            frame_needs(&mut facts, pos, &fh, blocks.map(|b| b.1));
            let Some((end, _)) = blocks else {
                facts.declared_len = None;
                return Ok(facts);
            };
            pos = end + if fh.checksum { 4 } else { 0 };
        }
        if steps >= INSPECT_MAX_STEPS && pos < len {
            facts.declared_len = None;
            break;
        }
    }
    match (pos > len, frames) {
        (true, _) => Err(DecodeError::Truncated),
        (_, 0) => Err(DecodeError::Corrupt("no zstd data frame".into())),
        _ => Ok(facts),
    }
}

/// Adds what decoding the frame at `pos` needs: its declared window, or,
/// for the first frame whose content (`bound` from its blocks, or its
/// declared size) is smaller, the smallest window holding that content,
/// which its header byte is rewritten to declare. A frame declaring only
/// its content size (single segment) already declares that.
fn frame_needs(facts: &mut HeaderFacts, pos: u64, fh: &FrameHeader, bound: Option<u64>) {
    let content = match (fh.content, bound) {
        (Some(c), Some(b)) => Some(c.min(b)),
        (c, b) => c.or(b),
    };
    let rewrite = content
        .filter(|_| !fh.single && facts.rewrite.is_none())
        .map(|c| WindowRewrite::zstd(pos + 5, c))
        .filter(|&(_, w)| w < fh.window);
    let needed = match rewrite {
        Some((r, w)) => {
            facts.rewrite = Some(r);
            w
        }
        None => fh.window,
    };
    facts.needed = facts.needed.max(needed);
}

/// Where a frame's blocks starting at `pos` end, and how much content
/// they can hold at most; `None` past the step limit. Raw and compressed
/// blocks hold their size, RLE blocks one byte; a compressed block holds
/// at most the frame's block size (its window, at most 128 KiB).
fn zstd_blocks_end<S: ReadAt + ?Sized>(
    src: &S,
    mut pos: u64,
    window: u64,
    steps: &mut u32,
) -> Result<Option<(u64, u64)>, DecodeError> {
    let block_max = window.min(128 << 10);
    let mut bound = 0u64;
    loop {
        let mut b = [0u8; 3];
        if read_at_most(src, pos, &mut b)? < 3 {
            return Err(DecodeError::Truncated);
        }
        *steps += 1;
        let h = u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16;
        let size = u64::from(h >> 3);
        let (stored, holds) = match (h >> 1) & 3 {
            0 => (size, size),
            1 => (1, size),
            2 => (size, block_max),
            _ => return Err(DecodeError::Corrupt("reserved zstd block type".into())),
        };
        pos += 3 + stored;
        bound += holds;
        if h & 1 == 1 {
            return Ok(Some((pos, bound)));
        }
        if *steps >= INSPECT_MAX_STEPS {
            return Ok(None);
        }
    }
}

/// A streaming decoder over any reader, its memory capped (see `bounded`).
pub struct Decoder<R: Read> {
    inner: CodingDecoder<R>,
}

enum CodingDecoder<R: Read> {
    Gzip(Box<flate2::read::MultiGzDecoder<BufReader<R>>>),
    Zstd(Box<zstd::stream::read::Decoder<'static, BufReader<Rewrite<R>>>>),
    Br(Box<bounded::Brotli<R>>),
}

/// Input buffer per decoder: small, since decoders keep their own window.
const IN_BUF: usize = 32 * 1024;

impl<R: Read> Decoder<R> {
    /// Wraps `src`, which holds data in `coding`.
    pub fn new(coding: Coding, src: R) -> Result<Decoder<R>, DecodeError> {
        Decoder::with_facts(coding, src, None)
    }

    /// Wraps `src`, whose headers `inspect` read as `facts`: a zstd frame
    /// whose content needs less than its declared window is decoded with
    /// that much, a brotli stream with the window its known length needs.
    pub fn with_facts(
        coding: Coding,
        src: R,
        facts: Option<&HeaderFacts>,
    ) -> Result<Decoder<R>, DecodeError> {
        let inner = match coding {
            Coding::Gzip => CodingDecoder::Gzip(Box::new(flate2::read::MultiGzDecoder::new(
                BufReader::with_capacity(IN_BUF, src),
            ))),
            Coding::Zstd => {
                let src = Rewrite::zstd(src, facts.and_then(|f| f.rewrite));
                let mut d =
                    zstd::stream::read::Decoder::with_buffer(BufReader::with_capacity(IN_BUF, src))
                        .map_err(DecodeError::from)?;
                d.window_log_max(ZSTD_WINDOW_LOG_MAX)
                    .map_err(DecodeError::from)?;
                CodingDecoder::Zstd(Box::new(d))
            }
            Coding::Br => CodingDecoder::Br(Box::new(bounded::Brotli::new(src, facts))),
        };
        Ok(Decoder { inner })
    }

    /// Fills `out` with decoded bytes; 0 means the stream ended cleanly.
    pub fn read(&mut self, out: &mut [u8]) -> Result<usize, DecodeError> {
        loop {
            let r = match &mut self.inner {
                CodingDecoder::Gzip(d) => d.read(out),
                CodingDecoder::Zstd(d) => d.read(out),
                CodingDecoder::Br(d) => match d.read(out) {
                    Err(DecodeError::Io(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
                    other => return other,
                },
            };
            match r {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other.map_err(DecodeError::from),
            }
        }
    }

    /// Most bytes a brotli decoder's allocations held at once so far.
    pub fn brotli_peak(&self) -> Option<usize> {
        match &self.inner {
            CodingDecoder::Br(d) => Some(d.usage().peak()),
            _ => None,
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
    use crate::test_util::{
        brotli_one_shot, encoded, encoded_with, fast, gzip, noise, zstd, zstd_framed,
    };

    fn sample() -> Vec<u8> {
        (0..200_000u32)
            .map(|i| (i % 251) as u8 ^ (i / 1000) as u8)
            .collect()
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
    fn inspect_reads_declared_sizes() {
        let d = sample();
        let g = gzip(&d);
        let f = facts(Coding::Gzip, &g).unwrap();
        assert_eq!((f.declared_len, f.gzip_isize), (None, Some(d.len() as u64)));
        let f = facts(Coding::Zstd, &zstd(&d)).unwrap();
        assert_eq!(f.declared_len, Some(d.len() as u64));
        assert!(f.window >= d.len() as u64 / 2);
        // One-shot, with the window it asks for whatever the size.
        let f = facts(Coding::Br, &brotli_one_shot(&d, 9, 22)).unwrap();
        assert_eq!((f.declared_len, f.window), (None, 1 << 22));
    }

    #[test]
    fn inspect_rejects_wrong_magic_and_ambiguous_isize() {
        assert!(facts(Coding::Gzip, b"PK\x03\x04xxxxxxxxxxxxxxxxxx").is_err());
        assert!(facts(Coding::Zstd, b"\x1f\x8b\x08\0\0\0\0\0").is_err());
        assert!(matches!(
            facts(Coding::Gzip, b"\x1f\x8b"),
            Err(DecodeError::Truncated)
        ));
        let head = b"\x1f\x8b\x08\0\0\0\0\0\0\x03";
        let big = inspect(Coding::Gzip, &head[..], 10 << 20).unwrap();
        assert_eq!(big.gzip_isize, None);
    }

    #[test]
    fn inspect_tells_a_short_source_from_a_short_stream() {
        let g = gzip(&sample());
        // Stat said longer than what is there: the ISIZE read comes up short.
        assert!(matches!(
            inspect(Coding::Gzip, &g[..], g.len() as u64 + 10),
            Err(DecodeError::Io(_))
        ));
        assert!(matches!(
            inspect(Coding::Gzip, &g[..3], 3),
            Err(DecodeError::Truncated)
        ));
        assert!(facts(Coding::Zstd, b"").is_err());
        assert!(matches!(
            facts(Coding::Zstd, &g),
            Err(DecodeError::Corrupt(_))
        ));
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

    fn skippable(n: u8) -> Vec<u8> {
        let mut v = vec![0x50 + (n & 15), 0x2a, 0x4d, 0x18, n, 0, 0, 0];
        v.extend(std::iter::repeat_n(0xee, usize::from(n)));
        v
    }

    fn facts(c: Coding, e: &[u8]) -> Result<HeaderFacts, DecodeError> {
        inspect(c, e, e.len() as u64)
    }

    #[test]
    fn zstd_frames_sum_their_declared_sizes() {
        let (a, b) = (sample(), b"tail of the page".repeat(999));
        let both = [zstd(&a), zstd(&b)].concat();
        let f = facts(Coding::Zstd, &both).unwrap();
        assert_eq!(f.declared_len, Some((a.len() + b.len()) as u64));
        assert_eq!(decode_all(Coding::Zstd, &both).unwrap(), [a, b].concat());
    }

    #[test]
    fn zstd_skippable_frames_anywhere_are_stepped_over() {
        let d = sample();
        let e = [skippable(4), zstd(&d), skippable(0), skippable(9)].concat();
        let f = facts(Coding::Zstd, &e).unwrap();
        assert_eq!(f.declared_len, Some(d.len() as u64));
        assert_eq!(decode_all(Coding::Zstd, &e).unwrap(), d);
    }

    #[test]
    fn zstd_walk_covers_raw_rle_and_compressed_blocks() {
        let d = [vec![0u8; 1 << 20], noise(300_000, 1), sample()].concat();
        for e in [zstd(&d), encoded_with(Coding::Zstd, &fast(), &d)] {
            assert_eq!(
                facts(Coding::Zstd, &e).unwrap().declared_len,
                Some(d.len() as u64)
            );
        }
        let u = zstd_framed(&d[..], None, 1, 20, false);
        let f = facts(Coding::Zstd, &u).unwrap();
        assert_eq!((f.declared_len, f.window), (None, 1 << 20));
    }

    #[test]
    fn zstd_walk_finds_truncation_and_trailing_garbage() {
        let e = zstd(&sample());
        for cut in [3, 7, 20, e.len() - 1] {
            assert!(facts(Coding::Zstd, &e[..cut]).is_err(), "cut {cut}");
        }
        let junk = [e.clone(), b"junk junk".to_vec()].concat();
        assert!(facts(Coding::Zstd, &junk).is_err());
        let mut bad = e.clone();
        let at = 4 + zstd_frame_header(&e[4..]).unwrap().len as usize;
        bad[at..at + 3].copy_from_slice(&[0x06, 0, 0]); // reserved block type
        assert!(matches!(
            facts(Coding::Zstd, &bad),
            Err(DecodeError::Corrupt(_))
        ));
        assert!(facts(Coding::Zstd, &skippable(3)).is_err());
        assert!(matches!(
            facts(Coding::Zstd, b""),
            Err(DecodeError::Corrupt(_))
        ));
    }

    #[test]
    fn zstd_absurd_content_size_is_unknown() {
        let u = zstd_framed(&sample()[..], None, 1, 20, false);
        assert_eq!(u[4], 0);
        for fcs in [1u64 << 63, u64::MAX - 1] {
            let mut e = vec![0x28, 0xb5, 0x2f, 0xfd, 0xc0, u[5]];
            e.extend_from_slice(&fcs.to_le_bytes());
            e.extend_from_slice(&u[6..]);
            assert_eq!(facts(Coding::Zstd, &e).unwrap().declared_len, None);
        }
    }

    #[test]
    fn zstd_window_over_8_mib_is_refused_for_browsers_and_decoding() {
        let d = sample();
        let wide = zstd_framed(&d[..], None, 1, 25, false);
        let f = facts(Coding::Zstd, &wide).unwrap();
        assert_eq!(f.window, 32 << 20);
        let why = f.browser_refusal(Coding::Zstd).unwrap();
        assert!(why.contains("32 MiB"), "{why}");
        assert!(decode_all(Coding::Zstd, &wide).is_err());
        // Any frame counts, not only the first.
        let later = [zstd(&d), wide].concat();
        assert_eq!(facts(Coding::Zstd, &later).unwrap().window, 32 << 20);
        let ok = zstd_framed(&d[..], None, 1, 23, false);
        assert_eq!(
            facts(Coding::Zstd, &ok)
                .unwrap()
                .browser_refusal(Coding::Zstd),
            None
        );
        assert_eq!(decode_all(Coding::Zstd, &ok).unwrap(), d);
    }

    fn br_params(lgwin: i32, large: bool) -> Vec<u8> {
        let p = brotli::enc::BrotliEncoderParams {
            lgwin,
            large_window: large,
            quality: 5,
            ..Default::default()
        };
        let mut out = Vec::new();
        brotli::BrotliCompress(&mut &sample()[..], &mut out, &p).unwrap();
        out
    }

    #[test]
    fn brotli_windows_and_the_large_window_marker() {
        for bits in [10, 16, 17, 18, 22, 23, 24] {
            let f = facts(Coding::Br, &br_params(bits, false)).unwrap();
            assert_eq!((f.window, f.large_window), (1 << bits, false), "{bits}");
            assert_eq!(f.browser_refusal(Coding::Br), None);
        }
        let lw = br_params(25, true);
        let f = facts(Coding::Br, &lw).unwrap();
        assert_eq!((f.window, f.large_window), (1 << 25, true));
        assert!(f
            .browser_refusal(Coding::Br)
            .unwrap()
            .contains("large-window"));
        // The brotli crate would decode it, with a 32 MiB ring buffer.
        assert!(f.window > MAX_WINDOW);
        assert!(facts(Coding::Br, &lw[..1]).is_err());
        assert!(facts(Coding::Br, b"").is_err());
    }

    #[test]
    fn multi_member_gzip_decodes_whole_without_a_declared_length() {
        let (a, b) = (sample(), b"second member".repeat(100));
        let g = [gzip(&a), gzip(&b)].concat();
        assert_eq!(decode_all(Coding::Gzip, &g).unwrap(), [a, b].concat());
        let f = facts(Coding::Gzip, &g).unwrap();
        assert_eq!((f.declared_len, f.window), (None, 32 * 1024));
        assert!(facts(Coding::Gzip, b"PK\x03\x04 not gzip at all").is_err());
        assert!(matches!(
            facts(Coding::Gzip, &g[..10]),
            Err(DecodeError::Truncated)
        ));
    }

    /// Decodes `e` as the module does: headers first, then with the facts.
    fn decode_bounded(c: Coding, e: &[u8]) -> (HeaderFacts, Result<Vec<u8>, DecodeError>) {
        let f = facts(c, e).unwrap();
        let mut out = Vec::new();
        let r = Decoder::with_facts(c, e, Some(&f)).and_then(|mut d| d.copy_to(&mut out));
        (f, r.map(|_| out))
    }

    #[test]
    fn zstd_frame_content_bounds_its_window() {
        let d = sample();
        // Through a pipe at --ultra -22: 128 MiB declared, no size.
        let wide = zstd_framed(&d[..], None, 3, 27, true);
        let (f, got) = decode_bounded(Coding::Zstd, &wide);
        assert_eq!((f.window, f.needed), (128 << 20, 256 << 10));
        assert_eq!(f.rewrite.unwrap().offset, 5);
        assert_eq!(got.unwrap(), d);
        assert!(f.browser_refusal(Coding::Zstd).is_some());
        // Its declared size bounds it as well.
        let sized = zstd_framed(&d[..], Some(d.len() as u64), 3, 27, false);
        let (f, got) = decode_bounded(Coding::Zstd, &sized);
        assert!(f.needed <= 256 << 10, "{}", f.needed);
        assert_eq!(got.unwrap(), d);
        // Content over 8 MiB really needs the window: refused up front.
        let big = [sample(), sample()].concat().repeat(24);
        let z = zstd_framed(&big[..], None, 1, 27, false);
        let f = facts(Coding::Zstd, &z).unwrap();
        assert_eq!(f.window, 128 << 20);
        assert!(f.needed > MAX_WINDOW, "{}", f.needed);
        assert!(Decoder::with_facts(Coding::Zstd, &z[..], Some(&f))
            .and_then(|mut d| d.copy_to(&mut io::sink()))
            .is_err());
    }

    #[test]
    fn brotli_windows_over_the_cap_decode_while_the_content_fits() {
        let d = [sample(), noise(100_000, 3)].concat();
        for q in [0, 1, 5, 9] {
            let w24 = brotli_one_shot(&d, q, 24);
            let (f, got) = decode_bounded(Coding::Br, &w24);
            assert_eq!((f.window, f.needed), (16 << 20, 8 << 20), "q{q}");
            assert!(got.unwrap() == d, "q{q}");
        }
        // A learned length lowers it further.
        let w24 = brotli_one_shot(&d, 1, 24);
        let f = HeaderFacts {
            declared_len: Some(d.len() as u64),
            ..facts(Coding::Br, &w24).unwrap()
        };
        let mut dec = Decoder::with_facts(Coding::Br, &w24[..], Some(&f)).unwrap();
        let mut out = Vec::new();
        dec.copy_to(&mut out).unwrap();
        assert!(out == d);
        let peak = dec.brotli_peak().unwrap();
        assert!(peak < 2 << 20, "peak {peak}");
    }

    #[test]
    fn brotli_content_outgrowing_the_cap_is_too_large() {
        let big: Vec<u8> = (0..9u32 << 20)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let w24 = brotli_one_shot(&big, 1, 24);
        let mut dec = Decoder::new(Coding::Br, &w24[..]).unwrap();
        let mut out = vec![0u8; 64 << 10];
        let mut total = 0u64;
        let err = loop {
            match dec.read(&mut out) {
                Ok(0) => panic!("decoded {total} bytes"),
                Ok(n) => {
                    assert!(out[..n] == big[total as usize..total as usize + n]);
                    total += n as u64;
                }
                Err(e) => break e,
            }
        };
        assert!(
            matches!(err, DecodeError::TooLarge(w) if w == 16 << 20),
            "{err}"
        );
        assert!(total <= MAX_WINDOW, "{total}");
        assert!(dec.brotli_peak().unwrap() <= bounded::BROTLI_BYTES_MAX + (4 << 20));
        // WBITS 23 holds it: decoded whole.
        assert_eq!(
            decode_all(Coding::Br, &brotli_one_shot(&big, 1, 23))
                .unwrap()
                .len(),
            big.len()
        );
    }
}

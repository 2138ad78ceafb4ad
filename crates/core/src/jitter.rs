//! BREACH jitter: padding spliced into a compressed stream without
//! re-encoding, so the file itself can still go out by sendfile.
//!
//! The response is `head ++ file[start..end] ++ tail`, where only `head`
//! and `tail` are built in memory:
//! - gzip: the member header rewritten with the padding in FCOMMENT;
//! - zstd: a skippable frame appended after the data;
//! - brotli: a metadata meta-block inserted before the final empty last
//!   meta-block, at whatever bit it starts: the file goes out up to the
//!   byte holding the data's last bits, and that byte is rebuilt in memory
//!   with the block's header after them. The same final bits can occur by
//!   chance inside a last meta-block holding data, so a stream qualifies
//!   only once `prove_brotli` has decoded it with the block inserted.
//!
//! The padding length is keyed (HMAC-SHA256 with a server secret): an
//! unkeyed hash of a file anyone can download would be predictable and
//! hide nothing.
//!
//! Nothing here panics on any input; malformed input yields an error.
//!
//! This is the padding's arithmetic, pure: framing, splice points, keyed
//! lengths. Which response gets padding, and how long (random or keyed
//! per file version, remembered), is the module's `respond/padding.rs`.

use crate::coding::Coding;
use crate::decode::{DecodeError, Decoder};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::fmt;
use std::io::Read;

/// The padding text: ASCII, never user data.
const PAD: &[u8] = b"Padding-";

type HmacSha256 = Hmac<Sha256>;

/// The secret that keys padding lengths. `Debug` never shows it.
#[derive(Clone)]
pub struct Secret {
    mac: HmacSha256,
    /// Names the key in caches shared by servers with different keys.
    id: u64,
}

impl Secret {
    /// Keys from `key`'s bytes, as they are.
    pub fn new(key: &[u8]) -> Secret {
        // HMAC accepts keys of any length: the fallback is unreachable.
        let mac = <HmacSha256 as Mac>::new_from_slice(key)
            .unwrap_or_else(|_| <HmacSha256 as Mac>::new(&Default::default()));
        let d = Sha256::digest(key);
        let mut id = [0u8; 8];
        id.copy_from_slice(&d[..8]);
        Secret {
            mac,
            id: u64::from_le_bytes(id),
        }
    }

    /// A short public name for this key (part of a SHA-256 of it).
    pub fn id(&self) -> u64 {
        self.id
    }
}

impl PartialEq for Secret {
    fn eq(&self, other: &Secret) -> bool {
        self.id == other.id
    }
}

impl Eq for Secret {}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret(redacted)")
    }
}

/// Padding length `1 + h mod max`, `h` the HMAC-SHA256 under `secret` of
/// the file's size, its first bytes `head` and its last bytes `tail` (which
/// carry gzip's CRC-32 and zstd's checksum of the whole content, so an
/// edit past `head` still changes the length). Deterministic per file and
/// key, unpredictable without the key.
pub fn keyed_len(max: u32, secret: &Secret, size: u64, head: &[u8], tail: &[u8]) -> u32 {
    let mut m = secret.mac.clone();
    m.update(&size.to_le_bytes());
    m.update(&(head.len() as u64).to_le_bytes());
    m.update(head);
    m.update(tail);
    let d = m.finalize().into_bytes();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    1 + (u64::from_le_bytes(b) % u64::from(max.max(1))) as u32
}

/// Bytes of a file's end that `keyed_len` covers beyond its head.
pub const KEYED_TAIL: u64 = 16;

/// Padding length from a random value.
pub fn random_len(max: u32, random: u32) -> u32 {
    1 + random % max.max(1)
}

/// Padding length for when the random source fails mid-run: the HMAC
/// under `secret` (itself from the random source, at start) of a value
/// never repeated in the process (`nonce`), so as unpredictable as the
/// key, never a fixed or absent padding.
pub fn drawn_len(max: u32, secret: &Secret, nonce: [u64; 3]) -> u32 {
    let mut m = secret.mac.clone();
    m.update(b"random length");
    for n in nonce {
        m.update(&n.to_le_bytes());
    }
    let d = m.finalize().into_bytes();
    random_len(max, u32::from_le_bytes([d[0], d[1], d[2], d[3]]))
}

/// `n` bytes of ASCII padding.
pub fn padding(n: usize) -> Vec<u8> {
    PAD.iter().copied().cycle().take(n).collect()
}

/// How to send a padded representation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Splice {
    pub head: Vec<u8>,
    pub start: u64,
    pub end: u64,
    pub tail: Vec<u8>,
}

impl Splice {
    /// Length of the padded representation.
    pub fn len(&self) -> u64 {
        self.head.len() as u64 + (self.end - self.start) + self.tail.len() as u64
    }

    /// Never empty in practice; for clippy's `len` convention.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why a file is served without jitter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoJitter {
    /// The gzip header is malformed or longer than the bytes read.
    GzipHeader,
    /// The brotli stream's last two set bits do not look like an empty
    /// last meta-block (ISLAST, ISLASTEMPTY, then zero fill).
    BrotliEnding,
    /// The brotli stream's end looks like an empty last meta-block but is
    /// not one: with padding before it, it would not decode alike.
    BrotliUnproven,
    /// The brotli stream decodes to more than `BROTLI_PROOF_MAX` bytes, so
    /// it is not proved.
    BrotliTooLarge,
    /// Reading the file failed.
    Io,
    /// No key to derive the length from (the configuration was not read).
    NoKey,
    /// The file is too short to be a stream of its coding.
    TooShort,
}

/// Plans the padded representation of a `file_len`-byte file whose first
/// bytes are `head` and last bytes `tail`, with `pad` bytes of padding.
pub fn splice(
    coding: Coding,
    head: &[u8],
    tail: &[u8],
    file_len: u64,
    pad: usize,
) -> Result<Splice, NoJitter> {
    match coding {
        Coding::Gzip => gzip_splice(head, file_len, pad),
        Coding::Zstd => Ok(Splice {
            head: Vec::new(),
            start: 0,
            end: file_len,
            tail: zstd_skippable_frame(pad),
        }),
        Coding::Br => brotli_splice(tail, file_len, pad),
    }
}

/// A zstd skippable frame holding `n` padding bytes.
pub fn zstd_skippable_frame(n: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(8 + n);
    f.extend_from_slice(&0x184D_2A50u32.to_le_bytes());
    f.extend_from_slice(&(n as u32).to_le_bytes());
    f.extend(padding(n));
    f
}

const FHCRC: u8 = 0x02;
const FEXTRA: u8 = 0x04;
const FNAME: u8 = 0x08;
const FCOMMENT: u8 = 0x10;

/// Rewrites the gzip member header with the padding as FCOMMENT.
fn gzip_splice(h: &[u8], file_len: u64, pad: usize) -> Result<Splice, NoJitter> {
    if h.len() < 10 || file_len < 18 {
        return Err(NoJitter::TooShort);
    }
    if h[0] != 0x1f || h[1] != 0x8b || h[2] != 8 || h[3] & 0xe0 != 0 {
        return Err(NoJitter::GzipHeader);
    }
    let flg = h[3];
    let mut pos = 10usize;
    let mut extra = 0..0;
    if flg & FEXTRA != 0 {
        let xlen = usize::from(u16::from_le_bytes([
            *h.get(pos).ok_or(NoJitter::GzipHeader)?,
            *h.get(pos + 1).ok_or(NoJitter::GzipHeader)?,
        ]));
        extra = pos..pos + 2 + xlen;
        pos = extra.end;
    }
    let mut name = pos..pos;
    if flg & FNAME != 0 {
        let nul = h
            .get(pos..)
            .and_then(|r| r.iter().position(|&b| b == 0))
            .ok_or(NoJitter::GzipHeader)?;
        name = pos..pos + nul + 1;
        pos = name.end;
    }
    if flg & FCOMMENT != 0 {
        let nul = h
            .get(pos..)
            .and_then(|r| r.iter().position(|&b| b == 0))
            .ok_or(NoJitter::GzipHeader)?;
        pos += nul + 1;
    }
    if flg & FHCRC != 0 {
        pos += 2;
    }
    if pos > h.len() || pos as u64 >= file_len {
        return Err(NoJitter::GzipHeader);
    }
    let mut out = Vec::with_capacity(pos + pad + 1);
    out.extend_from_slice(&h[..3]);
    out.push((flg | FCOMMENT) & !FHCRC);
    out.extend_from_slice(&h[4..10]);
    out.extend_from_slice(h.get(extra).ok_or(NoJitter::GzipHeader)?);
    out.extend_from_slice(h.get(name).ok_or(NoJitter::GzipHeader)?);
    out.extend(padding(pad));
    out.push(0);
    Ok(Splice {
        head: out,
        start: pos as u64,
        end: file_len,
        tail: Vec::new(),
    })
}

/// Little-endian bit writer for brotli's bit-packed headers.
struct Bits {
    out: Vec<u8>,
    used: u32,
}

impl Bits {
    fn new() -> Bits {
        Bits {
            out: Vec::new(),
            used: 0,
        }
    }

    fn put(&mut self, value: u32, n: u32) {
        for i in 0..n {
            if self.used.is_multiple_of(8) {
                self.out.push(0);
            }
            let bit = ((value >> i) & 1) as u8;
            if let Some(last) = self.out.last_mut() {
                *last |= bit << (self.used % 8);
            }
            self.used += 1;
        }
    }

    fn finish(self) -> Vec<u8> {
        self.out
    }
}

/// Writes a metadata meta-block header (RFC 7932 §9.2: ISLAST=0,
/// MNIBBLES code 3 meaning metadata, reserved 0, MSKIPBYTES, MSKIPLEN-1)
/// announcing `len` (0..=16 MiB) skipped bytes.
fn metadata_header(b: &mut Bits, len: usize) {
    b.put(0, 1); // ISLAST
    b.put(3, 2); // MNIBBLES code 3: metadata
    b.put(0, 1); // reserved
    if len == 0 {
        b.put(0, 2); // MSKIPBYTES = 0
        return;
    }
    let skip = (len - 1) as u32;
    let bytes = if skip < 1 << 8 {
        1
    } else if skip < 1 << 16 {
        2
    } else {
        3
    };
    b.put(bytes, 2);
    b.put(skip, 8 * bytes);
}

/// Empty stored deflate blocks (not final) of at least `n` bytes in all,
/// five bytes each: padding a deflate stream can carry wherever it is at a
/// block boundary and byte-aligned (after a sync flush), which decodes to
/// nothing and leaves gzip's CRC-32 and length as they were.
pub fn deflate_empty_blocks(n: usize) -> Vec<u8> {
    const EMPTY_STORED: [u8; 5] = [0x00, 0x00, 0x00, 0xFF, 0xFF];
    EMPTY_STORED.repeat(n.div_ceil(5).max(1))
}

/// A byte-aligned brotli metadata meta-block carrying `data`, which must
/// be at most 16 MiB; longer data is cut.
pub fn brotli_metadata_block(data: &[u8]) -> Vec<u8> {
    let data = &data[..data.len().min(1 << 24)];
    let mut b = Bits::new();
    metadata_header(&mut b, data.len());
    let mut out = b.finish();
    out.extend_from_slice(data);
    out
}

/// The byte-aligned empty last meta-block (ISLAST, ISLASTEMPTY): how a
/// brotli stream ends when it was flushed before being finished.
pub const BROTLI_LAST: u8 = 0x03;

/// Bytes of a brotli file's end that `splice` needs: the final empty last
/// meta-block's two bits may straddle two bytes.
pub fn brotli_tail_len() -> usize {
    2
}

/// Where the data ends (a bit count from the stream's start) in a stream
/// whose last meta-block is empty, at any bit position. Only zero fill
/// follows it, so the highest set bit of the last byte is ISLASTEMPTY and
/// the bit below it must be ISLAST (bits are packed LSB first). `tail`
/// holds the file's last bytes.
fn brotli_data_end(tail: &[u8], file_len: u64) -> Result<u64, NoJitter> {
    let t = &tail[tail.len().saturating_sub(2)..];
    let (&last, before) = t.split_last().ok_or(NoJitter::TooShort)?;
    if file_len == 0 {
        return Err(NoJitter::TooShort);
    }
    if last == 0 {
        return Err(NoJitter::BrotliEnding);
    }
    let top = 7 - last.leading_zeros(); // ISLASTEMPTY, in the last byte
    let islast = match top {
        0 if file_len >= 2 => before.last().ok_or(NoJitter::TooShort)? >> 7,
        0 => return Err(NoJitter::TooShort),
        _ => last >> (top - 1),
    };
    if islast & 1 == 0 {
        return Err(NoJitter::BrotliEnding);
    }
    let q = (file_len - 1).checked_mul(8).ok_or(NoJitter::TooShort)? + u64::from(top);
    Ok(q - 1)
}

/// Inserts the padding block where the data ends, before the final empty
/// last meta-block: the file goes out up to the byte holding the data's
/// last bits; that byte's data bits, the block's header, zero fill, the
/// padding and a byte-aligned `0x03` are built here. Valid only for a
/// stream `prove_brotli` accepted.
fn brotli_splice(tail: &[u8], file_len: u64, pad: usize) -> Result<Splice, NoJitter> {
    let end = brotli_data_end(tail, file_len)?;
    let (whole, part) = (end / 8, (end % 8) as u32);
    let mut b = Bits::new();
    if part > 0 {
        // `whole` is one of the last two bytes (`brotli_data_end` read them).
        let back = usize::try_from(file_len - whole).map_err(|_| NoJitter::TooShort)?;
        let byte = tail
            .len()
            .checked_sub(back)
            .and_then(|i| tail.get(i))
            .ok_or(NoJitter::TooShort)?;
        b.put(u32::from(*byte), part);
    }
    let data = padding(pad.min(1 << 24));
    metadata_header(&mut b, data.len());
    let mut out = b.finish();
    out.extend_from_slice(&data);
    out.push(BROTLI_LAST);
    Ok(Splice {
        head: Vec::new(),
        start: 0,
        end: whole,
        tail: out,
    })
}

/// Largest decoded size `prove_brotli` reads (twice), bounding its cost;
/// bigger streams are served unpadded.
pub const BROTLI_PROOF_MAX: u64 = 64 << 20;

/// Proves that a `size`-byte brotli stream (`open(offset)` reads it from
/// `offset`) whose final bits look like an empty last meta-block may carry
/// padding: spliced as `splice` would, it still decodes, completely and
/// to the same bytes. This holds exactly when the bits before those two
/// end on a meta-block boundary, which only decoding can tell; the result
/// holds for every padding length, since decoders skip metadata blocks
/// alike. `limit` bounds the decoded size (`BROTLI_PROOF_MAX` here).
pub fn prove_brotli<R: Read>(
    mut open: impl FnMut(u64) -> R,
    size: u64,
    limit: u64,
) -> Result<(), NoJitter> {
    let n = size.min(2);
    let mut tail = [0u8; 2];
    let tail = &mut tail[..n as usize];
    open(size - n).read_exact(tail).map_err(|_| NoJitter::Io)?;
    let s = brotli_splice(tail, size, 1)?;
    let plain = brotli_digest(open(0).take(size), limit)?;
    let spliced = brotli_digest(open(0).take(s.end).chain(&s.tail[..]), limit)?;
    if plain == spliced {
        Ok(())
    } else {
        Err(NoJitter::BrotliUnproven)
    }
}

/// Decoded length and CRC-32C of a brotli stream, which must end exactly
/// where its input does.
fn brotli_digest<R: Read>(src: R, limit: u64) -> Result<(u64, u32), NoJitter> {
    let fail = |e: DecodeError| match e {
        DecodeError::Io(_) => NoJitter::Io,
        _ => NoJitter::BrotliUnproven,
    };
    let mut d = Decoder::new(Coding::Br, src).map_err(fail)?;
    let mut buf = vec![0u8; 64 * 1024];
    let (mut len, mut crc) = (0u64, 0u32);
    loop {
        let n = d.read(&mut buf).map_err(fail)?;
        if n == 0 {
            break;
        }
        len += n as u64;
        if len > limit {
            return Err(NoJitter::BrotliTooLarge);
        }
        crc = crc32c::crc32c_append(crc, &buf[..n]);
    }
    // A second read reports input left after the last meta-block.
    match d.read(&mut buf) {
        Ok(0) => Ok((len, crc)),
        _ => Err(NoJitter::BrotliUnproven),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::brotli_ending::{brotli_unaligned_ending, BROTLI_FLUSHED_TAIL};
    use crate::decode::decode_all;
    use crate::test_util::{
        brotli_flushed, brotli_one_shot, encoded_with, have, noise, pipe, xorshift, zstd,
    };
    use std::io::Write;

    fn sample() -> Vec<u8> {
        (0..50_000u32)
            .map(|i| b"abcdefgh<p>"[(i % 11) as usize] ^ (i / 500) as u8)
            .collect()
    }

    fn apply(data: &[u8], s: &Splice) -> Vec<u8> {
        let mut out = s.head.clone();
        out.extend_from_slice(&data[s.start as usize..s.end as usize]);
        out.extend_from_slice(&s.tail);
        out
    }

    fn gz_with(flags: u8, data: &[u8]) -> Vec<u8> {
        let mut b = flate2::GzBuilder::new();
        if flags & FNAME != 0 {
            b = b.filename("page.html");
        }
        if flags & FCOMMENT != 0 {
            b = b.comment("old comment");
        }
        if flags & FEXTRA != 0 {
            b = b.extra(vec![1, 2, 3, 4]);
        }
        let mut e = b.write(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// Flushed, then finished: ends in the byte-aligned `0x03`.
    fn br_tool(data: &[u8]) -> Vec<u8> {
        let out = brotli_flushed(data, 5, 22);
        assert_eq!(out.last(), Some(&BROTLI_LAST));
        out
    }

    fn prove(b: &[u8]) -> Result<(), NoJitter> {
        prove_brotli(|o| &b[o as usize..], b.len() as u64, BROTLI_PROOF_MAX)
    }

    #[test]
    fn gzip_comment_padding_decodes_for_every_header_shape() {
        let d = sample();
        for flags in [0, FNAME, FCOMMENT, FEXTRA, FNAME | FCOMMENT | FEXTRA] {
            let g = gz_with(flags, &d);
            for pad in [1usize, 7, 300] {
                let s = splice(
                    Coding::Gzip,
                    &g[..g.len().min(4096)],
                    &[],
                    g.len() as u64,
                    pad,
                )
                .unwrap();
                let out = apply(&g, &s);
                assert_eq!(
                    decode_all(Coding::Gzip, &out).unwrap(),
                    d,
                    "flags {flags:#x}"
                );
                assert_eq!(out[3] & FCOMMENT, FCOMMENT);
                assert_eq!(out[3] & FHCRC, 0);
                if flags & FCOMMENT == 0 {
                    assert_eq!(out.len(), g.len() + pad + 1);
                }
                assert!(out.windows(pad.min(8)).any(|w| w == &PAD[..pad.min(8)]));
            }
        }
    }

    #[test]
    fn gzip_with_header_crc_drops_it() {
        let d = sample();
        let mut g = gz_with(FNAME, &d);
        // Insert a (dummy) header CRC after the name and set FHCRC.
        let name_end = 10 + g[10..].iter().position(|&b| b == 0).unwrap() + 1;
        g.splice(name_end..name_end, [0xaa, 0xbb]);
        g[3] |= FHCRC;
        let s = splice(Coding::Gzip, &g, &[], g.len() as u64, 5).unwrap();
        let out = apply(&g, &s);
        assert_eq!(decode_all(Coding::Gzip, &out).unwrap(), d);
    }

    #[test]
    fn zstd_skippable_frame_is_skipped() {
        let d = sample();
        let z = zstd(&d);
        for pad in [1usize, 8, 1000] {
            let s = splice(Coding::Zstd, &z, &[], z.len() as u64, pad).unwrap();
            let out = apply(&z, &s);
            assert_eq!(out.len(), z.len() + 8 + pad);
            assert_eq!(decode_all(Coding::Zstd, &out).unwrap(), d);
        }
    }

    #[test]
    fn brotli_metadata_block_decodes() {
        let d = sample();
        let b = br_tool(&d);
        assert_eq!(prove(&b), Ok(()));
        for pad in [1usize, 2, 255, 256, 257, 4000, 65536] {
            let tail = &b[b.len() - brotli_tail_len()..];
            let s = splice(Coding::Br, &[], tail, b.len() as u64, pad).unwrap();
            let out = apply(&b, &s);
            // Header: 6 bits + MSKIPLEN bytes, rounded up to whole bytes.
            let framing = if pad <= 256 { 2 } else { 3 };
            assert_eq!(out.len() - b.len(), pad + framing, "pad {pad}");
            assert_eq!(decode_all(Coding::Br, &out).unwrap(), d, "pad {pad}");
        }
    }

    #[test]
    fn brotli_proof_accepts_streams_ending_on_a_block_boundary() {
        // Incompressible data ends in an uncompressed meta-block, which
        // one-shot encoders close with a byte-aligned 0x03.
        let b = brotli_one_shot(&noise(20_000, 7), 11, 22);
        assert_eq!(b.last(), Some(&BROTLI_LAST));
        assert_eq!(prove(&b), Ok(()));
        // Streams with the signed trailer older publish tools wrote.
        let mut old = br_tool(&sample());
        old.pop();
        old.extend(brotli_metadata_block(b"gzip-disk-ng jitter-ready"));
        old.push(BROTLI_LAST);
        assert_eq!(prove(&old), Ok(()));
        assert_eq!(
            prove_brotli(|o| &old[o as usize..], old.len() as u64, 1000),
            Err(NoJitter::BrotliTooLarge)
        );
    }

    #[test]
    fn brotli_proof_refuses_endings_that_only_look_empty() {
        let mut found = 0;
        let base = sample();
        for seed in 0..4000u32 {
            let d: Vec<u8> = base[..2000 + seed as usize % 500]
                .iter()
                .map(|b| b ^ (seed as u8))
                .collect();
            let b = brotli_one_shot(&d, 5, 22);
            let tail = &b[b.len() - 2..];
            let Ok(s) = splice(Coding::Br, &[], tail, b.len() as u64, 4) else {
                continue;
            };
            if prove(&b) == Err(NoJitter::BrotliUnproven) {
                found += 1;
                // Padding it would indeed break it or change its bytes.
                assert_ne!(decode_all(Coding::Br, &apply(&b, &s)).ok(), Some(d));
                if found == 3 {
                    return;
                }
            }
        }
        panic!("no look-alike ending found ({found})");
    }

    #[test]
    fn brotli_proof_refuses_corrupt_and_short_streams() {
        let b = br_tool(&sample());
        assert_eq!(prove(&[]), Err(NoJitter::TooShort));
        assert!(prove(&b[..1]).is_err());
        assert!(prove(&b[..b.len() - 1]).is_err());
        let mut cut = b[..b.len() / 2].to_vec();
        cut.push(BROTLI_LAST);
        assert_eq!(prove(&cut), Err(NoJitter::BrotliUnproven));
        let mut garbage = vec![0xffu8; 100];
        garbage.push(BROTLI_LAST);
        assert!(prove(&garbage).is_err());
        let ends = [[0x12, 0x00], [0xff, 0x04], [0x7f, 0x01]];
        for t in ends {
            assert_eq!(
                splice(Coding::Br, &[], &t, 10, 1),
                Err(NoJitter::BrotliEnding)
            );
        }
    }

    #[test]
    fn keyed_lengths_are_deterministic_in_range_and_depend_on_the_key() {
        let k1 = Secret::new(b"key one");
        let k2 = Secret::new(b"key two");
        let a = keyed_len(32, &k1, 8, b"one file", b"");
        assert_eq!(
            a,
            keyed_len(32, &Secret::new(b"key one"), 8, b"one file", b"")
        );
        let lens = |k: &Secret| -> Vec<u32> {
            (0..200)
                .map(|i| keyed_len(32, k, 100, format!("file {i}").as_bytes(), b"t"))
                .collect()
        };
        let (l1, l2) = (lens(&k1), lens(&k2));
        assert_ne!(l1, l2, "the key changes the lengths");
        let spread: std::collections::BTreeSet<u32> = l1.iter().copied().collect();
        assert!(spread.len() > 10, "spread over the range");
        assert!(spread.iter().all(|&l| (1..=32).contains(&l)));
        // Size and tail count, not only the head.
        let base = keyed_len(65536, &k1, 100, b"head", b"tail");
        assert_ne!(base, keyed_len(65536, &k1, 101, b"head", b"tail"));
        assert_ne!(base, keyed_len(65536, &k1, 100, b"head", b"tai1"));
        assert_eq!(keyed_len(1, &k1, 1, b"x", b""), 1);
        assert!((1..=9).contains(&random_len(9, u32::MAX)));
        assert_ne!(k1, k2);
        assert_eq!(format!("{k1:?}"), "Secret(redacted)");
    }

    /// Streams as the publish tool writes them, at a quality and window cap.
    fn br_published(data: &[u8], q: u32, lgwin: u32) -> Vec<u8> {
        let l = crate::encode::Levels {
            brotli_quality: q,
            brotli_lgwin: lgwin,
            ..Default::default()
        };
        encoded_with(Coding::Br, &l, data)
    }

    /// Text-like input of random length: words, with some noise bytes.
    fn random_input(next: &mut impl FnMut() -> u64) -> Vec<u8> {
        let words: [&[u8]; 6] = [
            b"<p>", b"apache ", b"module ", b"</p>\n", b"br ", b"jitter ",
        ];
        let n = (next() % 3000) as usize;
        let mut v = Vec::with_capacity(n + 8);
        while v.len() < n {
            match next() % 8 {
                0 => v.push(next() as u8),
                w => v.extend_from_slice(words[w as usize % words.len()]),
            }
        }
        v
    }

    /// `brotli ARGS` over `input`; `None` without the CLI.
    fn brotli_cli(args: &[&str], input: &[u8]) -> Option<Vec<u8>> {
        let out = pipe("brotli", args, input)?;
        assert!(out.status.success(), "brotli {args:?} failed");
        Some(out.stdout)
    }

    /// Pads a proved stream `b` of `d` by 1..=300 bytes and a few longer
    /// paddings; each decodes to `d` and has the length the bits predict.
    fn check_pads(b: &[u8], d: &[u8], what: &str) {
        let tail = &b[b.len() - 2..];
        let end = brotli_data_end(tail, b.len() as u64).unwrap();
        for pad in (1..=300).chain([4000, 65536, 65537, 70_000]) {
            let s = splice(Coding::Br, &[], tail, b.len() as u64, pad).unwrap();
            let out = apply(b, &s);
            let mskip = 1 + usize::from(pad > 256) + usize::from(pad > 65536);
            let header = (end as usize % 8 + 6 + 8 * mskip).div_ceil(8);
            assert_eq!(out.len(), end as usize / 8 + header + pad + 1, "{what}");
            assert_eq!(decode_all(Coding::Br, &out).unwrap(), d, "{what} pad {pad}");
        }
    }

    #[test]
    fn brotli_splice_decodes_at_every_bit_alignment() {
        let mut next = xorshift(42);
        let mut seen = [0u32; 8];
        let settings = [(11, 24), (9, 18), (5, 16), (1, 10), (0, 22), (11, 10)];
        for i in 0..120 {
            let d = random_input(&mut next);
            let (q, w) = settings[i % settings.len()];
            let b = br_published(&d, q, w);
            assert_eq!(prove(&b), Ok(()), "q{q} w{w} len {}", d.len());
            let end = brotli_data_end(&b[b.len() - 2..], b.len() as u64).unwrap();
            // 7: ISLAST ends one byte, ISLASTEMPTY starts the next.
            seen[(end % 8) as usize] += 1;
            check_pads(&b, &d, &format!("q{q} w{w} #{i}"));
            if i < 12 {
                let s = splice(Coding::Br, &[], &b[b.len() - 2..], b.len() as u64, 77).unwrap();
                if let Some(out) = brotli_cli(&["-dc"], &apply(&b, &s)) {
                    assert_eq!(out, d, "brotli -dc q{q} w{w}");
                }
            }
        }
        assert!(
            seen.iter().all(|&n| n > 0),
            "data end bit positions {seen:?}"
        );
    }

    /// The `brotli` CLI's streams end in a last meta-block holding data,
    /// unless it is stored (then a byte-aligned `0x03` follows): whatever
    /// the proof accepts pads correctly, and look-alikes are refused.
    #[test]
    fn brotli_cli_streams_are_padded_only_when_proved() {
        if !have("brotli") {
            return;
        }
        let mut next = xorshift(9);
        let (mut proved, mut refused, mut other) = (0, 0, 0);
        for i in 0..48 {
            let d = if i % 4 == 0 {
                (0..5000 + i * 10).map(|_| next() as u8).collect()
            } else {
                random_input(&mut next)
            };
            let q = ["11", "9", "5", "1"][i % 4];
            let b = brotli_cli(&["-c", "-q", q, "-w", "18"], &d).unwrap();
            match prove(&b) {
                Ok(()) => {
                    proved += 1;
                    check_pads(&b, &d, &format!("cli q{q} #{i}"));
                }
                Err(NoJitter::BrotliUnproven) => refused += 1,
                Err(e) => {
                    assert_eq!(e, NoJitter::BrotliEnding);
                    other += 1;
                }
            }
        }
        assert!(
            proved >= 12,
            "{proved} proved, {refused} refused, {other} other"
        );
    }

    /// Same settings as the tool, flushed then finished, not rewritten.
    fn br_flushed(data: &[u8]) -> Vec<u8> {
        let lgwin = crate::encode::brotli_window(data.len() as u64, 24);
        brotli_flushed(data, 11, lgwin)
    }

    #[test]
    fn publish_rewrite_decodes_alike_and_saves_the_alignment() {
        let mut next = xorshift(11);
        let (mut rewritten, mut saved) = (0, 0);
        for i in 0..40 {
            let d = random_input(&mut next);
            let (b, f) = (br_published(&d, 11, 24), br_flushed(&d));
            assert_eq!(decode_all(Coding::Br, &b).unwrap(), d);
            if let Some(out) = brotli_cli(&["-dc"], &b) {
                assert_eq!(out, d, "brotli -dc #{i}");
            }
            let cut = f.len().saturating_sub(BROTLI_FLUSHED_TAIL);
            let want = match brotli_unaligned_ending(&f[cut..]) {
                Some(end) => [&f[..cut], &end[..]].concat(),
                None => f.clone(),
            };
            assert_eq!(b, want, "#{i}");
            if b != f {
                rewritten += 1;
                saved += f.len() - b.len();
                assert!(f.len() - b.len() <= 2);
            }
            // Its end is an empty last meta-block: padding goes before it.
            assert_eq!(prove(&b), Ok(()), "#{i}");
        }
        assert!(rewritten >= 30, "{rewritten} of 40 rewritten");
        assert!(saved > rewritten, "{saved} bytes saved");
    }

    /// Property test: arbitrary bytes never panic, and whatever is accepted
    /// keeps the file range inside the file.
    #[test]
    fn arbitrary_input_never_panics() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let n = (next() % 64) as usize;
            let mut buf: Vec<u8> = (0..n).map(|_| next() as u8).collect();
            if next().is_multiple_of(2) && buf.len() >= 4 {
                buf[0] = 0x1f;
                buf[1] = 0x8b;
                buf[2] = 8;
                buf[3] &= 0x1f;
            }
            let file_len = next() % 100;
            let pad = (next() % 70_000) as usize;
            for c in Coding::ALL {
                if let Ok(s) = splice(c, &buf, &buf, file_len, pad) {
                    assert!(s.start <= s.end && s.end <= file_len);
                }
            }
            let _ = brotli_metadata_block(&buf);
        }
    }
}

//! BREACH jitter: padding spliced into a compressed stream without
//! re-encoding, so the file itself can still go out by sendfile.
//!
//! The response is `head ++ file[start..end] ++ tail`, where only `head`
//! and `tail` are built in memory:
//! - gzip: the member header rewritten with the padding in FCOMMENT;
//! - zstd: a skippable frame appended after the data;
//! - brotli: a metadata meta-block inserted before the final byte-aligned
//!   empty last meta-block. Only streams that end with this crate's
//!   trailer (a signed metadata block, then `0x03`) qualify, since a final
//!   `0x03` byte alone can occur by chance in other encoders' output.
//!
//! Nothing here panics on any input; malformed input yields `None`.

use crate::coding::Coding;
use sha2::{Digest, Sha256};

/// The padding text: ASCII, never user data.
const PAD: &[u8] = b"Padding-";

/// Metadata carried by the brotli trailer the publish tool writes.
pub const BROTLI_SIGNATURE: &[u8] = b"gzip-disk-ng jitter-ready";

/// Padding length `1 + h mod max` from the served bytes' hash.
pub fn content_len(max: u32, data: &[u8], paranoid: bool) -> u32 {
    let max = max.max(1);
    let h: u64 = if paranoid {
        let d = Sha256::digest(data);
        let mut b = [0u8; 8];
        b.copy_from_slice(&d[..8]);
        u64::from_le_bytes(b)
    } else {
        u64::from(crc32c::crc32c(data))
    };
    1 + (h % u64::from(max)) as u32
}

/// Padding length from a random value.
pub fn random_len(max: u32, random: u32) -> u32 {
    1 + random % max.max(1)
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
    /// The brotli stream lacks the trailer jitter needs.
    BrotliTrailer,
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

/// A byte-aligned brotli metadata meta-block carrying `data` (RFC 7932
/// §9.2: ISLAST=0, MNIBBLES=0, MSKIPLEN bytes skipped by decoders).
/// `data` must be 1..=16 MiB; longer data is cut.
pub fn brotli_metadata_block(data: &[u8]) -> Vec<u8> {
    let data = &data[..data.len().min(1 << 24)];
    let mut b = Bits::new();
    b.put(0, 1); // ISLAST
    b.put(3, 2); // MNIBBLES = 0: metadata
    b.put(0, 1); // reserved
    if data.is_empty() {
        b.put(0, 2); // MSKIPBYTES = 0
        return b.finish();
    }
    let skip = (data.len() - 1) as u32;
    let bytes = if skip < 1 << 8 {
        1
    } else if skip < 1 << 16 {
        2
    } else {
        3
    };
    b.put(bytes, 2);
    b.put(skip, 8 * bytes);
    let mut out = b.finish();
    out.extend_from_slice(data);
    out
}

/// What the publish tool appends after flushing a brotli stream: the
/// signature block, then the empty last meta-block `0x03`.
pub fn brotli_trailer() -> Vec<u8> {
    let mut t = brotli_metadata_block(BROTLI_SIGNATURE);
    t.push(0x03);
    t
}

/// Replaces the final `0x03` of a stream that was flushed and then
/// finished (so it ends in a byte-aligned empty last meta-block) with
/// `brotli_trailer()`. Only for streams made that way.
pub fn seal_brotli(mut stream: Vec<u8>) -> Option<Vec<u8>> {
    if stream.last() != Some(&0x03) {
        return None;
    }
    stream.pop();
    stream.extend(brotli_trailer());
    Some(stream)
}

/// Bytes of a brotli file's end that `splice` needs.
pub fn brotli_tail_len() -> usize {
    brotli_trailer().len()
}

fn brotli_splice(tail: &[u8], file_len: u64, pad: usize) -> Result<Splice, NoJitter> {
    let trailer = brotli_trailer();
    if file_len <= trailer.len() as u64 {
        return Err(NoJitter::TooShort);
    }
    if !tail.ends_with(&trailer) {
        return Err(NoJitter::BrotliTrailer);
    }
    let mut block = brotli_metadata_block(&padding(pad));
    block.push(0x03);
    Ok(Splice {
        head: Vec::new(),
        start: 0,
        end: file_len - 1,
        tail: block,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::decode_all;
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

    fn br_tool(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
            w.write_all(data).unwrap();
            w.flush().unwrap();
        }
        seal_brotli(out).unwrap()
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
        let z = zstd::bulk::compress(&d, 3).unwrap();
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
        assert_eq!(
            decode_all(Coding::Br, &b).unwrap(),
            d,
            "trailer alone is valid"
        );
        for pad in [1usize, 2, 255, 256, 257, 4000, 65536] {
            let tail = &b[b.len() - brotli_tail_len()..];
            let s = splice(Coding::Br, &[], tail, b.len() as u64, pad).unwrap();
            let out = apply(&b, &s);
            assert!(out.len() - b.len() >= pad && out.len() - b.len() <= pad + 4);
            assert_eq!(decode_all(Coding::Br, &out).unwrap(), d, "pad {pad}");
        }
    }

    #[test]
    fn brotli_without_trailer_is_refused() {
        let d = sample();
        let mut out = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
            w.write_all(&d).unwrap();
        }
        let tail = &out[out.len().saturating_sub(brotli_tail_len())..];
        assert_eq!(
            splice(Coding::Br, &[], tail, out.len() as u64, 4),
            Err(NoJitter::BrotliTrailer)
        );
    }

    #[test]
    fn content_lengths_are_deterministic_and_in_range() {
        let a = content_len(32, b"one file", false);
        assert_eq!(a, content_len(32, b"one file", false));
        let lens: std::collections::BTreeSet<u32> = (0..200)
            .map(|i| content_len(32, format!("file {i}").as_bytes(), false))
            .collect();
        assert!(lens.len() > 10, "spread over the range");
        assert!(lens.iter().all(|&l| (1..=32).contains(&l)));
        let p = content_len(32, b"one file", true);
        assert!((1..=32).contains(&p));
        assert_eq!(content_len(1, b"x", true), 1);
        assert!((1..=9).contains(&random_len(9, u32::MAX)));
    }

    /// Property test: arbitrary bytes never panic, and whatever is accepted
    /// keeps the file range inside the file.
    #[test]
    fn arbitrary_input_never_panics() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let n = (next() % 64) as usize;
            let mut buf: Vec<u8> = (0..n).map(|_| next() as u8).collect();
            if next() % 2 == 0 && buf.len() >= 4 {
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

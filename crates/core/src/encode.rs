//! Streaming encoders for the three codings, tuned for what browsers accept.
//!
//! Each encoder reads its input through a bounded buffer and writes to any
//! `Write`, so memory stays bounded whatever the file size; only gzip of
//! files up to `GZIP_IN_MEMORY_MAX` holds the whole input (libdeflate).

use crate::brotli_ending::{brotli_unaligned_ending, BROTLI_FLUSHED_TAIL};
use crate::coding::Coding;
use crate::jitter;
use std::io::{self, Read, Write};

/// Largest brotli window: 23 bits (8 MiB), the module's decompression
/// memory cap. RFC 7932 allows 24, but a 16 MiB window only matters for
/// files over 8 MiB, and there it saved 1.7 % (Apache manual concatenated,
/// 21.9 MB: 2 124 893 bytes at 24, 2 160 147 at 23), while such a sibling
/// could not be decoded for clients without brotli.
pub const BROTLI_LGWIN_MAX: u32 = 23;
/// Smallest brotli window the format allows.
pub const BROTLI_LGWIN_MIN: u32 = 10;
/// Largest zstd window log: 8 MiB, the browsers' cap (RFC 9659).
pub const ZSTD_WINDOW_LOG_MAX: u32 = crate::decode::ZSTD_WINDOW_LOG_MAX;

/// Encoder settings for every coding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Levels {
    /// gzip level, 1..=12: libdeflate's scale, whose 10..=12 are its
    /// near-optimal parser (smaller than `gzip -9`); streamed large files use
    /// zlib's scale, capped at 9. The default 10 is 3 % smaller than
    /// `gzip -9` at 40 % of level 12's time, which is only 0.2 % smaller.
    pub gzip: u32,
    /// Brotli quality, 0..=11.
    pub brotli_quality: u32,
    /// Brotli window bits cap, 10..=23; shrunk further for small inputs.
    pub brotli_lgwin: u32,
    /// zstd level, 1..=22.
    pub zstd: i32,
    /// zstd window log cap, 10..=23.
    pub zstd_window_log: u32,
}

impl Default for Levels {
    fn default() -> Self {
        Levels {
            gzip: 10,
            brotli_quality: 11,
            brotli_lgwin: BROTLI_LGWIN_MAX,
            zstd: 19,
            zstd_window_log: ZSTD_WINDOW_LOG_MAX,
        }
    }
}

/// Files up to this size are gzipped in memory by libdeflate (whole-buffer
/// only, but smaller output and faster than zlib); larger ones are streamed
/// through zlib so memory stays bounded.
pub const GZIP_IN_MEMORY_MAX: u64 = 32 << 20;

/// Read buffer per encoder.
const CHUNK: usize = 128 * 1024;

/// A writer that keeps the first error and counts bytes, because the brotli
/// encoder swallows errors raised while it finishes the stream.
struct Tracked<W: Write> {
    inner: W,
    written: u64,
    error: Option<io::Error>,
}

impl<W: Write> Write for Tracked<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.inner.write(buf) {
            Ok(n) => {
                self.written += n as u64;
                Ok(n)
            }
            Err(e) => {
                let copy = io::Error::new(e.kind(), e.to_string());
                if self.error.is_none() {
                    self.error = Some(e);
                }
                Err(copy)
            }
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Copies `src` into `dst` in `CHUNK` pieces.
fn copy_chunked(src: &mut impl Read, dst: &mut impl Write) -> io::Result<u64> {
    let mut buf = vec![0u8; CHUNK];
    let mut total = 0u64;
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        dst.write_all(&buf[..n])?;
        total += n as u64;
    }
}

/// Brotli window for an input of `len` bytes: about what the data needs
/// (as the brotli CLI picks), rounded to the windows with the shortest
/// header codes (16: 1 bit, 18..=24: 4 bits, the others 7), which is free
/// since a window larger than the input never holds more than the input.
pub fn brotli_window(len: u64, cap: u32) -> u32 {
    let cap = cap.clamp(BROTLI_LGWIN_MIN, BROTLI_LGWIN_MAX);
    let mut bits = BROTLI_LGWIN_MIN;
    while bits < BROTLI_LGWIN_MAX && (1u64 << bits) - 16 < len {
        bits += 1;
    }
    let cheap = match bits {
        ..=16 => 16,
        17 => 18,
        b => b,
    };
    cheap.min(cap)
}

/// Encodes everything `src` yields (expected to be `len` bytes) into `dst`
/// and returns the number of bytes written. `len` is pledged to zstd, so a
/// source of another length makes zstd fail rather than lie in its header.
pub fn encode<R: Read, W: Write>(
    coding: Coding,
    levels: &Levels,
    len: u64,
    mut src: R,
    dst: W,
) -> io::Result<(u64, W)> {
    let mut out = Tracked {
        inner: dst,
        written: 0,
        error: None,
    };
    match coding {
        Coding::Gzip if len <= GZIP_IN_MEMORY_MAX => {
            let mut data = Vec::with_capacity(len as usize);
            (&mut src).take(len + 1).read_to_end(&mut data)?;
            if data.len() as u64 != len {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "input length differs from the expected size",
                ));
            }
            let lvl = libdeflater::CompressionLvl::new(levels.gzip.clamp(1, 12) as i32)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{e:?}")))?;
            let mut c = libdeflater::Compressor::new(lvl);
            let mut buf = vec![0u8; c.gzip_compress_bound(data.len())];
            let n = c
                .gzip_compress(&data, &mut buf)
                .map_err(|e| io::Error::other(format!("gzip: {e:?}")))?;
            out.write_all(&buf[..n])?;
        }
        Coding::Gzip => {
            let mut e = flate2::write::GzEncoder::new(
                &mut out,
                flate2::Compression::new(levels.gzip.clamp(1, 9)),
            );
            copy_chunked(&mut src, &mut e)?;
            e.finish()?;
        }
        Coding::Zstd => {
            let mut e = zstd::stream::write::Encoder::new(&mut out, levels.zstd)?;
            e.include_checksum(true)?;
            e.include_contentsize(true)?;
            e.window_log(levels.zstd_window_log.min(ZSTD_WINDOW_LOG_MAX))?;
            e.set_pledged_src_size(Some(len))?;
            copy_chunked(&mut src, &mut e)?;
            e.finish()?;
        }
        Coding::Br => encode_brotli(levels, len, &mut src, &mut out)?,
    }
    if let Some(e) = out.error.take() {
        return Err(e);
    }
    out.flush()?;
    Ok((out.written, out.inner))
}

/// Brotli, flushed before it is finished, so the data ends on a meta-block
/// boundary that the module can insert jitter at without re-encoding. The
/// flush's byte-alignment block and the byte-aligned `0x03` after it are
/// then replaced by an unaligned empty last meta-block, which saves 1.6
/// bytes per file; the module finds that ending at any bit.
fn encode_brotli<W: Write>(
    levels: &Levels,
    len: u64,
    src: &mut impl Read,
    out: &mut Tracked<W>,
) -> io::Result<()> {
    let params = brotli::enc::BrotliEncoderParams {
        quality: levels.brotli_quality.min(11) as i32,
        lgwin: brotli_window(len, levels.brotli_lgwin) as i32,
        size_hint: usize::try_from(len).unwrap_or(usize::MAX),
        ..Default::default()
    };
    let mut src = Checksum::default().reading(src);
    let mut ending = Ending {
        out: &mut *out,
        held: Vec::with_capacity(CHUNK + BROTLI_FLUSHED_TAIL),
        check: Some(brotli::DecompressorWriter::new(Checksum::default(), 4096)),
    };
    let mut e = brotli::CompressorWriter::with_params(&mut ending, CHUNK, &params);
    copy_chunked(&mut src, &mut e)?;
    e.flush()?;
    drop(e);
    if ending.out.error.is_some() {
        return Ok(()); // `encode` reports the error `Tracked` kept.
    }
    ending.finish(src.digest)
}

/// Length and CRC-32C of bytes seen, to compare a decode with the input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Checksum {
    len: u64,
    crc: u32,
}

impl Checksum {
    fn update(&mut self, b: &[u8]) {
        self.len += b.len() as u64;
        self.crc = crc32c::crc32c_append(self.crc, b);
    }

    fn reading<R: Read>(self, inner: R) -> Digesting<R> {
        Digesting {
            inner,
            digest: self,
        }
    }
}

impl Write for Checksum {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.update(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A reader that digests what it yields.
struct Digesting<R> {
    inner: R,
    digest: Checksum,
}

impl<R: Read> Read for Digesting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.digest.update(&buf[..n]);
        Ok(n)
    }
}

/// Passes a brotli stream on but holds back its last bytes, so its ending
/// can be rewritten, and decodes what it passes, so the rewrite is only
/// kept if the whole stream still decodes to the input.
struct Ending<'a, W: Write> {
    out: &'a mut Tracked<W>,
    held: Vec<u8>,
    /// `None` once the stream failed to decode: the ending is then kept.
    check: Option<brotli::DecompressorWriter<Checksum>>,
}

impl<W: Write> Write for Ending<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.held.extend_from_slice(buf);
        let cut = self.held.len().saturating_sub(BROTLI_FLUSHED_TAIL);
        if cut > 0 {
            self.out.write_all(&self.held[..cut])?;
            if let Some(c) = &mut self.check {
                if c.write_all(&self.held[..cut]).is_err() {
                    self.check = None;
                }
            }
            self.held.drain(..cut);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<W: Write> Ending<'_, W> {
    /// Writes the held bytes, rewritten if the rewrite decodes to `input`.
    fn finish(self, input: Checksum) -> io::Result<()> {
        if self.held.last() != Some(&jitter::BROTLI_LAST) {
            return Err(io::Error::other(
                "flushed brotli stream does not end with a byte-aligned empty last meta-block",
            ));
        }
        let tail = match brotli_unaligned_ending(&self.held) {
            Some(new) if ends_decoding_to(self.check, &new, input) => new,
            _ => self.held,
        };
        self.out.write_all(&tail)
    }
}

/// Whether a decoder fed all but a stream's ending, then `ending`, finished
/// exactly at its end with `input`'s length and CRC.
fn ends_decoding_to(
    check: Option<brotli::DecompressorWriter<Checksum>>,
    ending: &[u8],
    input: Checksum,
) -> bool {
    check.is_some_and(|mut c| {
        c.write_all(ending).is_ok() && c.close().is_ok() && *c.get_ref() == input
    })
}

/// Encodes a buffer; for tests and small inputs.
pub fn encode_vec(coding: Coding, levels: &Levels, data: &[u8]) -> io::Result<Vec<u8>> {
    encode(coding, levels, data.len() as u64, data, Vec::new()).map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{decode_all, inspect};
    use crate::test_util::page;

    #[test]
    fn round_trips_every_coding() {
        let l = Levels::default();
        for n in [0, 1, 300, 70_000] {
            let d = page(n, 1);
            for c in Coding::ALL {
                let e = encode_vec(c, &l, &d).unwrap();
                assert_eq!(decode_all(c, &e).unwrap(), d, "{c:?} {n}");
            }
        }
    }

    #[test]
    fn gzip_streams_large_files_and_refuses_wrong_lengths() {
        let l = Levels::default();
        let big = page(GZIP_IN_MEMORY_MAX as usize + 1000, 1);
        let e = encode_vec(Coding::Gzip, &l, &big).unwrap();
        assert_eq!(decode_all(Coding::Gzip, &e).unwrap(), big);
        let d = page(1000, 1);
        assert!(encode(Coding::Gzip, &l, 999, &d[..], Vec::new()).is_err());
        assert!(encode(Coding::Gzip, &l, 1001, &d[..], Vec::new()).is_err());
    }

    #[test]
    fn brotli_ends_with_an_empty_last_block_the_module_can_pad() {
        for n in [0, 10, 5000, 300_000] {
            let d = page(n, 1);
            let e = encode_vec(Coding::Br, &Levels::default(), &d).unwrap();
            assert_eq!(decode_all(Coding::Br, &e).unwrap(), d);
            // The module can prove it and pad it without re-encoding.
            let proof = jitter::prove_brotli(
                |o| &e[o as usize..],
                e.len() as u64,
                jitter::BROTLI_PROOF_MAX,
            );
            assert_eq!(proof, Ok(()), "len {n}");
            let tail = &e[e.len().saturating_sub(jitter::brotli_tail_len())..];
            let s = jitter::splice(Coding::Br, &[], tail, e.len() as u64, 20).unwrap();
            let mut padded = e[..s.end as usize].to_vec();
            padded.extend_from_slice(&s.tail);
            assert_eq!(decode_all(Coding::Br, &padded).unwrap(), d, "len {n}");
        }
    }

    #[test]
    fn brotli_write_errors_in_the_held_ending_surface() {
        let d = page(5000, 1);
        let full = encode_vec(Coding::Br, &Levels::default(), &d).unwrap();
        for room in [0, 1, full.len() / 2, full.len() - 1] {
            let r = encode(Coding::Br, &Levels::default(), 5000, &d[..], Full(room));
            assert!(r.is_err(), "room {room}");
        }
        let r = encode(
            Coding::Br,
            &Levels::default(),
            5000,
            &d[..],
            Full(full.len()),
        );
        assert_eq!(r.unwrap().0, full.len() as u64);
    }

    #[test]
    fn zstd_declares_content_size_and_small_window() {
        let l = Levels::default();
        for n in [0, 1000, 20 << 20] {
            let d = page(n, 1);
            let e = encode_vec(Coding::Zstd, &l, &d).unwrap();
            let p = inspect(Coding::Zstd, &e[..], e.len() as u64).unwrap();
            assert_eq!(p.declared_len, Some(n as u64));
            assert!(p.window <= 8 << 20, "window {}", p.window);
            // Checksum flag (bit 2 of the frame header descriptor).
            assert_ne!(e[4] & 0x04, 0);
        }
    }

    #[test]
    fn zstd_refuses_a_source_that_does_not_match_the_pledge() {
        let d = page(1000, 1);
        let r = encode(Coding::Zstd, &Levels::default(), 2000, &d[..], Vec::new());
        assert!(r.is_err());
    }

    #[test]
    fn brotli_window_follows_size() {
        assert_eq!(brotli_window(0, 23), 16);
        assert_eq!(brotli_window(5000, 23), 16);
        assert_eq!(brotli_window(70_000, 23), 18);
        assert_eq!(brotli_window(300_000, 23), 19);
        assert_eq!(brotli_window(1 << 30, 23), 23);
        // Never above the decompression cap of 8 MiB.
        assert_eq!(brotli_window(1 << 30, 24), 23);
        assert_eq!(brotli_window(1 << 30, 22), 22);
        assert_eq!(brotli_window(5000, 12), 12);
    }

    struct Full(usize);
    impl Write for Full {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if self.0 < b.len() {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"));
            }
            self.0 -= b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn write_errors_surface_for_every_coding() {
        let d = page(200_000, 1);
        for c in Coding::ALL {
            let r = encode(c, &Levels::default(), d.len() as u64, &d[..], Full(100));
            assert!(r.is_err(), "{c:?}");
        }
    }
}

//! Coding a body as it passes, for responses no file holds (the output
//! filter's coder): bytes in, coded bytes out in pieces, a flush that
//! makes everything given so far decodable at once (a server-sent event,
//! PHP's `flush()`), and an end. Memory is bounded per stream: zstd's
//! window 256 KiB (RFC 9659 allows 8 MiB for HTTP), brotli's 256 KiB, and
//! gzip's 32 KiB.

use crate::coding::Coding;
use crate::dictionary::{self, Hash};
use crate::jitter;
use std::io::{self, Write};
use std::sync::{Mutex, PoisonError};
use zstd::stream::raw::Operation;

mod dcb;
mod gzip;

/// zstd's window for a stream of unknown length: 256 KiB, within the
/// 8 MiB RFC 9659 lets a decoder of `Content-Encoding: zstd` require, and
/// as far back as a page's repeats reach; the coder's memory follows it.
pub const ZSTD_WINDOW_LOG: u32 = 18;

/// zstd's match tables for such a window: 128 Ki hash and 64 Ki chain
/// entries, so a stream holds about 1 MiB (the level's own tables are
/// sized for files of megabytes).
const ZSTD_HASH_LOG: u32 = 17;
const ZSTD_CHAIN_LOG: u32 = 16;

/// A `dcz` coder's match tables: 512 Ki hash and 256 Ki chain entries,
/// which find matches in a dictionary of up to 512 KiB as well as in the
/// page (tables of a plain stream's size lose a third of what a dictionary
/// saves); a coder and its prepared dictionary hold about 7 MiB.
const DCZ_HASH_LOG: u32 = 19;
const DCZ_CHAIN_LOG: u32 = 18;

/// zstd coders kept for the next response, per process: a coder's tables
/// are set up once, not per response.
const ZSTD_POOL: usize = 8;

/// What a kept zstd coder is for: its level, and the dictionary it holds
/// (by hash) for `dcz`. A coder keeps its dictionary's prepared tables
/// across frames, so a kept `dcz` coder does not load the dictionary
/// again for the next response.
type ZstdKey = (i32, Option<Hash>);

/// Idle zstd coders, by what they are for, the least recently kept
/// first.
static ZSTD_IDLE: Mutex<Vec<(ZstdKey, zstd::stream::raw::Encoder<'static>)>> =
    Mutex::new(Vec::new());

/// Brotli's window for a stream: 256 KiB, mod_brotli's default (the
/// encoder's memory and set-up grow with it; a page gains little beyond).
pub const BROTLI_LGWIN: u32 = 18;

/// The level of each coding for a body coded as it is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamLevels {
    pub zstd: i32,
    /// zstd's level against a dictionary (`dcz`): a delta is small
    /// already, and what a higher level gains there is what the
    /// dictionary is for.
    pub dcz: i32,
    pub brotli_quality: u32,
    /// brotli's quality against a dictionary (`dcb`).
    pub dcb: u32,
    pub gzip: u32,
}

impl Default for StreamLevels {
    /// The defaults, chosen by `bench/dynamic.sh` on the Apache manual's
    /// pages rendered through PHP-FPM (docs/dynamic.md has the figures).
    fn default() -> Self {
        StreamLevels {
            zstd: 6,
            dcz: 10,
            brotli_quality: 5,
            dcb: 5,
            gzip: 6,
        }
    }
}

impl StreamLevels {
    /// The levels of a busy server: each coding still, at a fraction of
    /// the CPU (zstd 1, against a dictionary too; brotli 3 at most; gzip
    /// 1).
    pub fn cheaper(self) -> StreamLevels {
        StreamLevels {
            zstd: 1,
            dcz: 1,
            brotli_quality: self.brotli_quality.min(3),
            dcb: self.dcb.min(3),
            gzip: 1,
        }
    }
}

/// A body's coder.
pub struct Encoder {
    inner: CodingEncoder,
    /// Bytes that go out before the coder's first (a `dcz` header).
    head: Vec<u8>,
}

enum CodingEncoder {
    /// With what it is for, under which it goes back to the pool.
    Zstd(zstd::stream::raw::Encoder<'static>, Option<ZstdKey>),
    Br(Box<brotli::CompressorWriter<Vec<u8>>>),
    /// Brotli against a dictionary (`dcb`).
    Dcb(Box<dcb::Dcb>),
    Gzip(gzip::Gzip),
    /// Finished: nothing more is coded.
    Done,
}

/// The brotli coder's own buffer between its state and the output.
const BROTLI_BUFFER: usize = 4096;

/// Whether `dictionary` can be a `dcz` one as a zstd raw-content
/// dictionary: one that starts with zstd's dictionary magic would be read
/// as a structured dictionary, not the raw prefix RFC 9842 names.
pub fn dcz_usable(dictionary: &[u8]) -> bool {
    !dictionary.starts_with(&[0x37, 0xA4, 0x30, 0xEC]) && !dictionary.is_empty()
}

impl Encoder {
    /// A coder of `coding` at `levels`.
    pub fn new(coding: Coding, levels: &StreamLevels) -> io::Result<Encoder> {
        let inner = match coding {
            Coding::Zstd => {
                let key = (levels.zstd, None);
                CodingEncoder::Zstd(zstd_coder(key, &[])?, Some(key))
            }
            Coding::Br => CodingEncoder::Br(Box::new(brotli::CompressorWriter::new(
                Vec::new(),
                BROTLI_BUFFER,
                levels.brotli_quality.min(11),
                BROTLI_LGWIN,
            ))),
            Coding::Gzip => CodingEncoder::Gzip(gzip::Gzip::new(levels.gzip.clamp(1, 9))),
        };
        Ok(Encoder {
            inner,
            head: Vec::new(),
        })
    }

    /// A `dcz` coder against `dictionary` (whose hash is `hash`): the
    /// RFC 9842 header is its first output.
    pub fn dcz(level: i32, dictionary: &[u8], hash: &Hash) -> io::Result<Encoder> {
        if !dcz_usable(dictionary) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a raw dictionary",
            ));
        }
        let key = (level, Some(*hash));
        Ok(Encoder {
            inner: CodingEncoder::Zstd(zstd_coder(key, dictionary)?, Some(key)),
            head: dictionary::header(crate::coding::DeltaCoding::Dcz, hash),
        })
    }

    /// A `dcb` coder against `dictionary` (whose hash is `hash`): the
    /// RFC 9842 header is its first output.
    pub fn dcb(quality: u32, dictionary: &[u8], hash: &Hash) -> Encoder {
        Encoder {
            inner: CodingEncoder::Dcb(Box::new(dcb::Dcb::new(quality, dictionary, hash))),
            head: dictionary::header(crate::coding::DeltaCoding::Dcb, hash),
        }
    }

    /// Codes `input`; coded bytes ready so far are appended to `out`.
    pub fn write(&mut self, input: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        self.start(out);
        match &mut self.inner {
            CodingEncoder::Zstd(e, _) => return zstd_run(e, input, out),
            CodingEncoder::Br(e) => e.write_all(input)?,
            CodingEncoder::Dcb(e) => return e.write(input, out),
            CodingEncoder::Gzip(e) => return e.write(input, out),
            CodingEncoder::Done => return Err(finished()),
        }
        self.drain(out);
        Ok(())
    }

    /// Makes everything written so far decodable from what is in `out`.
    pub fn flush(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        self.start(out);
        match &mut self.inner {
            CodingEncoder::Zstd(e, _) => return zstd_drive(out, |o| e.flush(o)),
            CodingEncoder::Br(e) => e.flush()?,
            CodingEncoder::Dcb(e) => return e.flush(out),
            CodingEncoder::Gzip(e) => return e.flush(out),
            CodingEncoder::Done => return Err(finished()),
        }
        self.drain(out);
        Ok(())
    }

    /// Ends the stream: its last bytes are appended to `out`.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        self.start(out);
        self.drain(out);
        let tail = match std::mem::replace(&mut self.inner, CodingEncoder::Done) {
            CodingEncoder::Zstd(mut e, key) => {
                zstd_drive(out, |o| e.finish(o, true))?;
                if let Some(key) = key {
                    zstd_keep(key, e);
                }
                return Ok(());
            }
            CodingEncoder::Br(e) => e.into_inner(),
            CodingEncoder::Dcb(mut e) => return e.finish(out),
            CodingEncoder::Gzip(e) => return e.finish(out),
            CodingEncoder::Done => return Err(finished()),
        };
        out.extend_from_slice(&tail);
        Ok(())
    }

    /// Ends the stream with about `pad` bytes of BREACH padding that
    /// decode to nothing: a zstd skippable frame after the frame, a
    /// brotli metadata meta-block or empty deflate blocks before the end,
    /// each after a flush has byte-aligned the coder's output.
    pub fn finish_padded(&mut self, pad: usize, out: &mut Vec<u8>) -> io::Result<()> {
        if pad == 0 {
            return self.finish(out);
        }
        match self.inner {
            CodingEncoder::Zstd(..) => {
                self.finish(out)?;
                out.extend_from_slice(&jitter::zstd_skippable_frame(pad));
                return Ok(());
            }
            CodingEncoder::Br(_) | CodingEncoder::Dcb(_) => {
                self.flush(out)?;
                out.extend_from_slice(&jitter::brotli_metadata_block(&jitter::padding(pad)));
            }
            CodingEncoder::Gzip(_) => {
                self.flush(out)?;
                out.extend_from_slice(&jitter::deflate_empty_blocks(pad));
            }
            CodingEncoder::Done => return Err(finished()),
        }
        self.finish(out)
    }

    /// Moves what the coder made into `out`.
    fn drain(&mut self, out: &mut Vec<u8>) {
        let made = match &mut self.inner {
            CodingEncoder::Br(e) => e.get_mut(),
            CodingEncoder::Gzip(_)
            | CodingEncoder::Zstd(..)
            | CodingEncoder::Dcb(_)
            | CodingEncoder::Done => return,
        };
        if out.is_empty() {
            std::mem::swap(out, made);
        } else {
            out.append(made);
        }
    }
}

impl Encoder {
    /// Puts out what goes before the coder's first bytes.
    fn start(&mut self, out: &mut Vec<u8>) {
        if !self.head.is_empty() {
            out.append(&mut self.head);
        }
    }
}

/// A zstd coder for `key`: an idle one for it, else a new one (with
/// `dictionary`, the bytes of the key's dictionary, if it names one).
fn zstd_coder(key: ZstdKey, dictionary: &[u8]) -> io::Result<zstd::stream::raw::Encoder<'static>> {
    let reused = {
        let mut pool = ZSTD_IDLE.lock().unwrap_or_else(PoisonError::into_inner);
        let i = pool.iter().rposition(|(k, _)| *k == key);
        i.map(|i| pool.remove(i).1)
    };
    if let Some(e) = reused {
        return Ok(e);
    }
    let mut e = match key.1 {
        Some(_) => zstd::stream::raw::Encoder::with_dictionary(key.0, dictionary)?,
        None => zstd::stream::raw::Encoder::new(key.0)?,
    };
    zstd_params(&mut e, key.1.is_some())?;
    Ok(e)
}

/// A stream's parameters; `dcz`'s tables are larger (set before the
/// dictionary is first prepared, with the coder's first frame).
fn zstd_params(e: &mut zstd::stream::raw::Encoder<'static>, dcz: bool) -> io::Result<()> {
    use zstd::stream::raw::CParameter;
    let (hash, chain) = if dcz {
        (DCZ_HASH_LOG, DCZ_CHAIN_LOG)
    } else {
        (ZSTD_HASH_LOG, ZSTD_CHAIN_LOG)
    };
    e.set_parameter(CParameter::WindowLog(ZSTD_WINDOW_LOG))?;
    e.set_parameter(CParameter::HashLog(hash))?;
    e.set_parameter(CParameter::ChainLog(chain))?;
    e.set_parameter(CParameter::ChecksumFlag(true))
}

/// Gives a finished coder back for the next response (its parameters
/// and dictionary stay), in place of the least recently kept one when
/// the pool is full: a coder of a retrained dictionary's old version
/// leaves in time.
fn zstd_keep(key: ZstdKey, mut e: zstd::stream::raw::Encoder<'static>) {
    if e.reinit().is_err() {
        return;
    }
    let mut pool = ZSTD_IDLE.lock().unwrap_or_else(PoisonError::into_inner);
    if pool.len() >= ZSTD_POOL {
        pool.remove(0);
    }
    pool.push((key, e));
}

/// Codes all of `input` into `out`.
fn zstd_run(
    e: &mut zstd::stream::raw::Encoder<'static>,
    input: &[u8],
    out: &mut Vec<u8>,
) -> io::Result<()> {
    let mut inb = zstd::stream::raw::InBuffer::around(input);
    while inb.pos() < input.len() {
        room(out);
        let pos = out.len();
        e.run(
            &mut inb,
            &mut zstd::stream::raw::OutBuffer::around_pos(out, pos),
        )?;
    }
    Ok(())
}

/// Runs a flush or an end step until it has nothing more to put out.
fn zstd_drive(
    out: &mut Vec<u8>,
    mut step: impl FnMut(&mut zstd::stream::raw::OutBuffer<'_, Vec<u8>>) -> io::Result<usize>,
) -> io::Result<()> {
    loop {
        room(out);
        let pos = out.len();
        if step(&mut zstd::stream::raw::OutBuffer::around_pos(out, pos))? == 0 {
            return Ok(());
        }
    }
}

/// Spare capacity for a coder's step.
fn room(out: &mut Vec<u8>) {
    const STEP: usize = 16 * 1024;
    if out.capacity() - out.len() < STEP {
        out.reserve(2 * STEP);
    }
}

fn finished() -> io::Error {
    io::Error::other("stream already finished")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn page(n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| b"<p>Apache HTTP Server <a href=x>docs</a></p>\n"[i % 45])
            .collect()
    }

    fn decode(coding: Coding, data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        match coding {
            Coding::Zstd => {
                zstd::stream::read::Decoder::new(data)
                    .and_then(|mut d| d.read_to_end(&mut out))
                    .expect("zstd");
            }
            Coding::Br => {
                brotli::Decompressor::new(data, 4096)
                    .read_to_end(&mut out)
                    .expect("br");
            }
            Coding::Gzip => {
                flate2::read::GzDecoder::new(data)
                    .read_to_end(&mut out)
                    .expect("gzip");
            }
        }
        out
    }

    /// What a streaming decoder yields of a prefix of a stream.
    fn decode_prefix(coding: Coding, data: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; 1 << 20];
        let n = match coding {
            Coding::Zstd => zstd::stream::read::Decoder::new(data)
                .expect("zstd")
                .read(&mut out),
            Coding::Br => brotli::Decompressor::new(data, 4096).read(&mut out),
            Coding::Gzip => flate2::read::GzDecoder::new(data).read(&mut out),
        }
        .unwrap_or(0);
        out.truncate(n);
        out
    }

    #[test]
    fn every_coding_round_trips_in_pieces() {
        let body = page(300_000);
        for coding in [Coding::Zstd, Coding::Br, Coding::Gzip] {
            let mut e = Encoder::new(coding, &StreamLevels::default()).expect("encoder");
            let mut out = Vec::new();
            for piece in body.chunks(7_919) {
                e.write(piece, &mut out).expect("write");
            }
            e.finish(&mut out).expect("finish");
            assert!(out.len() < body.len() / 10, "{coding:?} compresses");
            assert_eq!(decode(coding, &out), body, "{coding:?}");
            assert!(e.write(b"x", &mut out).is_err(), "{coding:?} ended");
        }
    }

    #[test]
    fn a_flush_makes_what_was_written_decodable() {
        for coding in [Coding::Zstd, Coding::Br, Coding::Gzip] {
            let mut e = Encoder::new(coding, &StreamLevels::default()).expect("encoder");
            let mut out = Vec::new();
            e.write(b"data: first event\n\n", &mut out).expect("write");
            e.flush(&mut out).expect("flush");
            assert_eq!(
                decode_prefix(coding, &out),
                b"data: first event\n\n",
                "{coding:?}"
            );
        }
    }

    #[test]
    fn cheaper_levels_cost_less_and_still_code() {
        let body = page(200_000);
        let l = StreamLevels::default();
        let c = l.cheaper();
        assert!(
            c.zstd < l.zstd
                && c.dcz < l.dcz
                && c.brotli_quality < l.brotli_quality
                && c.gzip < l.gzip
        );
        for coding in [Coding::Zstd, Coding::Br, Coding::Gzip] {
            let mut e = Encoder::new(coding, &c).expect("encoder");
            let mut out = Vec::new();
            e.write(&body, &mut out).expect("write");
            e.finish(&mut out).expect("finish");
            assert!(out.len() < body.len() / 5, "{coding:?}");
            assert_eq!(decode(coding, &out), body, "{coding:?}");
        }
    }

    #[test]
    fn padding_decodes_to_nothing_and_lengthens_the_body() {
        let body = page(20_000);
        for coding in [Coding::Zstd, Coding::Br, Coding::Gzip] {
            let coded = |pad| {
                let mut e = Encoder::new(coding, &StreamLevels::default()).expect("encoder");
                let mut out = Vec::new();
                e.write(&body, &mut out).expect("write");
                e.finish_padded(pad, &mut out).expect("finish");
                out
            };
            let (plain, padded) = (coded(0), coded(37));
            assert_eq!(decode(coding, &padded), body, "{coding:?}");
            assert!(
                padded.len() >= plain.len() + 37,
                "{coding:?}: {} {}",
                plain.len(),
                padded.len()
            );
            assert!(padded.len() <= plain.len() + 37 + 16, "{coding:?}");
        }
    }

    /// A `dcz` body of `body` against `dict`, decoded back.
    fn dcz_round_trip(dict: &[u8], body: &[u8]) -> usize {
        let hash = dictionary::hash(dict);
        let mut e = Encoder::dcz(3, dict, &hash).expect("encoder");
        let mut out = Vec::new();
        e.write(body, &mut out).expect("write");
        e.finish(&mut out).expect("finish");
        let head = dictionary::header(crate::coding::DeltaCoding::Dcz, &hash);
        assert!(out.starts_with(&head));
        let mut d = zstd::stream::read::Decoder::with_dictionary(&out[head.len()..], dict)
            .expect("decoder");
        let mut got = Vec::new();
        d.read_to_end(&mut got).expect("decode");
        assert_eq!(got, body);
        out.len()
    }

    #[test]
    fn dcz_starts_with_its_header_and_decodes_with_the_dictionary() {
        let dict = page(50_000);
        dcz_round_trip(&dict, &page(60_000));
    }

    /// A kept `dcz` coder serves the next body against its own dictionary
    /// only: the same dictionary again codes as small, another one (a
    /// retrained dictionary) is its own.
    #[test]
    fn kept_dcz_coders_stay_with_their_dictionary() {
        let dict = page(50_000);
        let body = page(60_000);
        let first = dcz_round_trip(&dict, &body);
        assert_eq!(dcz_round_trip(&dict, &body), first);
        let mut other = b"<p>retrained</p>".repeat(100);
        other.extend_from_slice(&dict[..20_000]);
        dcz_round_trip(&other, &body);
        assert_eq!(dcz_round_trip(&dict, &body), first);
    }

    /// A `dcb` body of `body` against `dict` in pieces, with a flush, and
    /// padded: each prefix up to the flush decodes, the whole decodes back.
    #[test]
    fn dcb_starts_with_its_header_flushes_and_decodes_with_the_dictionary() {
        // Bytes no coder finds repeats in, but in the dictionary.
        let mut x = 1u64;
        let dict: Vec<u8> = (0..300_000)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                (x >> 56) as u8
            })
            .collect();
        let body = [&dict[250_000..], &dict[..100_000]].concat();
        let hash = dictionary::hash(&dict);
        let mut e = Encoder::dcb(5, &dict, &hash);
        let mut out = Vec::new();
        e.write(&body[..1000], &mut out).expect("write");
        e.flush(&mut out).expect("flush");
        let head = dictionary::header(crate::coding::DeltaCoding::Dcb, &hash);
        assert!(out.starts_with(&head));
        let mut first = vec![0u8; 4096];
        let n = brotli::Decompressor::new_with_custom_dict(
            &out[head.len()..],
            4096,
            dict.clone().into(),
        )
        .read(&mut first)
        .expect("prefix");
        assert_eq!(&first[..n], &body[..n.min(1000)]);
        for piece in body[1000..].chunks(7_919) {
            e.write(piece, &mut out).expect("write");
        }
        e.finish_padded(20, &mut out).expect("finish");
        let got = crate::delta_codec::decode(&dict, &out).expect("decodes");
        assert_eq!(got, body);
        // Only the dictionary holds these bytes: all of it was reachable.
        assert!(out.len() < 2000, "{}", out.len());
        assert!(e.write(b"x", &mut out).is_err());
    }

    #[test]
    fn a_structured_zstd_dictionary_is_not_a_dcz_one() {
        assert!(!dcz_usable(&[0x37, 0xA4, 0x30, 0xEC, 1, 2, 3]));
        assert!(!dcz_usable(b""));
        assert!(dcz_usable(b"<html>"));
        let h = dictionary::hash(b"x");
        assert!(Encoder::dcz(3, &[0x37, 0xA4, 0x30, 0xEC], &h).is_err());
    }
}

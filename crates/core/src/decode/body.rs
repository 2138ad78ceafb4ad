//! A sibling's decoded body for the module's decompress path, handed out in
//! chunks of a fixed size. The buffers and decoder contexts come from a
//! small pool of caches (one of each per cache), so once the process has
//! warmed as many caches as it decodes at a time, a request allocates and
//! zeroes nothing.
//!
//! A sibling small enough is decoded whole in one call: gzip by libdeflate,
//! zstd by one reused context, both faster than streaming. Anything larger,
//! brotli, and anything the one-call decoders do not accept, streams through
//! `Decoder` from the file, so the body and its errors are the streaming
//! decoder's, at the same points.

use super::{read_at_most, DecodeError, Decoder, HeaderFacts, ReadAt};
use crate::coding::Coding;
use std::io::{self, Read};
use std::sync::{Mutex, PoisonError};
use zstd::zstd_safe::DCtx;

/// Largest sibling decoded whole; larger ones stream.
const WHOLE_IN_MAX: usize = 256 << 10;

/// Largest body decoded whole. With `WHOLE_IN_MAX`, the most a cache
/// holds in buffers (plus a zstd context and a libdeflate one).
const WHOLE_OUT_MAX: usize = 512 << 10;

/// What a decode leaves for the next one.
#[derive(Default)]
struct Cache {
    /// The sibling's bytes, when it is small enough to be decoded whole.
    input: Vec<u8>,
    /// Decoded bytes. Its length only grows, to at most `WHOLE_OUT_MAX`
    /// or one chunk, so each byte is zeroed once per cache.
    output: Vec<u8>,
    gzip: Option<libdeflater::Decompressor>,
    zstd: Option<DCtx<'static>>,
}

/// Caches not in use. A request takes one, whichever thread served it
/// last, and puts it back when done: the event MPM's many threads then
/// share a few warm caches instead of warming one each. A nested request
/// (a subrequest run while a chunk is passed on) takes another; one that
/// panicked puts nothing back. Never dropped: a static's memory goes with
/// the process, and only children, which exit, ever fill it.
static POOL: Mutex<Vec<Cache>> = Mutex::new(Vec::new());

/// Caches kept at most: what a busy process holds between requests, up to
/// this many times the buffers' bound. More concurrent decodes than this
/// allocate, as every decode once did.
const POOL_MAX: usize = 16;

fn pool() -> std::sync::MutexGuard<'static, Vec<Cache>> {
    // The lock only guards a push or a pop: nothing can be half done.
    POOL.lock().unwrap_or_else(PoisonError::into_inner)
}

fn take_cache() -> Cache {
    pool().pop().unwrap_or_default()
}

fn put_cache(cache: Cache) {
    let mut pool = pool();
    if pool.len() < POOL_MAX {
        pool.push(cache);
    }
}

/// Makes `v` at least `n` long, zeroing only what it grows by, and no
/// larger than asked, so a buffer is bounded by what it was grown to.
fn grow(v: &mut Vec<u8>, n: usize) {
    if v.len() < n {
        v.reserve_exact(n - v.len());
        v.resize(n, 0);
    }
}

/// A sibling read from its start, for the streaming decoder.
struct At<'s, S: ?Sized> {
    src: &'s S,
    pos: u64,
}

impl<S: ReadAt + ?Sized> Read for At<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.src.read_at(self.pos, buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

enum BodyMode<'s, S: ReadAt + ?Sized> {
    /// The whole body is in the cache's output buffer.
    Whole {
        len: usize,
        pos: usize,
    },
    Stream(Decoder<At<'s, S>>),
}

/// A decoded body, one chunk at a time.
pub struct Body<'s, S: ReadAt + ?Sized> {
    /// Always `Some` until dropped.
    cache: Option<Cache>,
    mode: BodyMode<'s, S>,
    chunk: usize,
    /// Where the current chunk is in the output buffer.
    current: std::ops::Range<usize>,
}

impl<'s, S: ReadAt + ?Sized> Body<'s, S> {
    /// Decodes `src`, a sibling of `file_len` bytes in coding `c`, whose
    /// headers `inspect` read as `facts` (its decoded length, when they
    /// declare one or a complete decode learned it), in chunks of `chunk`
    /// bytes. A small sibling is read and, if the one-call decoder accepts
    /// it, decoded here; otherwise it streams from the file, and errors
    /// come from `fill` as they always did.
    pub fn new(
        c: Coding,
        src: &'s S,
        file_len: u64,
        facts: Option<&HeaderFacts>,
        chunk: usize,
    ) -> Result<Body<'s, S>, DecodeError> {
        let declared = facts.and_then(|f| f.declared_len);
        let mut cache = take_cache();
        let len = whole_size(c, file_len, declared)
            .filter(|&n| gzip_fits(c, src, n))
            .filter(|&n| read_whole(src, &mut cache.input, n))
            .and_then(|n| decode_whole(c, &mut cache, n, declared));
        let mode = match len {
            Some(len) => BodyMode::Whole { len, pos: 0 },
            None => BodyMode::Stream(Decoder::with_facts(c, At { src, pos: 0 }, facts)?),
        };
        Ok(Body {
            cache: Some(cache),
            mode,
            chunk,
            current: 0..0,
        })
    }

    /// Decodes the next chunk: its length, and whether the body ended
    /// within it (a chunk filled to the brim is not the end, even if
    /// nothing follows: the next is then empty).
    pub fn fill(&mut self) -> Result<(usize, bool), DecodeError> {
        let Some(cache) = self.cache.as_mut() else {
            return Ok((0, true));
        };
        let n = match &mut self.mode {
            BodyMode::Whole { len, pos } => {
                let n = self.chunk.min(*len - *pos);
                self.current = *pos..*pos + n;
                *pos += n;
                n
            }
            BodyMode::Stream(dec) => {
                grow(&mut cache.output, self.chunk);
                self.current = 0..0;
                let buf = &mut cache.output[..self.chunk];
                let mut filled = 0;
                while filled < buf.len() {
                    match dec.read(&mut buf[filled..])? {
                        0 => break,
                        k => filled += k,
                    }
                }
                self.current = 0..filled;
                filled
            }
        };
        Ok((n, n < self.chunk))
    }

    /// The chunk `fill` decoded last.
    pub fn chunk(&self) -> &[u8] {
        self.cache
            .as_ref()
            .and_then(|c| c.output.get(self.current.clone()))
            .unwrap_or_default()
    }
}

impl<S: ReadAt + ?Sized> Drop for Body<'_, S> {
    /// Puts the cache back for the next request, unless a panic is
    /// unwinding: then the buffers and contexts are freed, not reused.
    fn drop(&mut self) {
        if let Some(cache) = self.cache.take() {
            if !std::thread::panicking() {
                put_cache(cache);
            }
        }
    }
}

/// The sibling's size when it may be decoded whole: gzip within
/// `WHOLE_IN_MAX` (its ISIZE is read later), zstd also declaring a length
/// within `WHOLE_OUT_MAX`.
fn whole_size(c: Coding, file_len: u64, declared: Option<u64>) -> Option<usize> {
    let n = usize::try_from(file_len)
        .ok()
        .filter(|&n| n <= WHOLE_IN_MAX)?;
    match c {
        Coding::Gzip => Some(n),
        Coding::Zstd => declared.filter(|&d| d <= WHOLE_OUT_MAX as u64).map(|_| n),
        Coding::Br => None,
    }
}

/// Largest gzip sibling read whole before its ISIZE is looked at.
const GZIP_READ_BLIND: usize = 64 << 10;

/// Whether a gzip sibling of `len` bytes may decode to `WHOLE_OUT_MAX` or
/// less, by its ISIZE: read first for a larger file, so one whose body is
/// too large is not read twice; a small one is read whole at once.
fn gzip_fits<S: ReadAt + ?Sized>(c: Coding, src: &S, len: usize) -> bool {
    if c != Coding::Gzip || len <= GZIP_READ_BLIND {
        return true;
    }
    let mut tail = [0u8; 4];
    read_at_most(src, len as u64 - 4, &mut tail).is_ok_and(|n| n == 4)
        && u32::from_le_bytes(tail) as usize <= WHOLE_OUT_MAX
}

/// Reads the whole sibling of `len` bytes into `buf`: true if that is all
/// there is (a file that grew since its stat, or that cannot be read,
/// streams). `buf` is read into as it is, so once grown it is not zeroed
/// again.
fn read_whole<S: ReadAt + ?Sized>(src: &S, buf: &mut Vec<u8>, len: usize) -> bool {
    grow(buf, len + 1);
    read_at_most(src, 0, &mut buf[..=len]).is_ok_and(|n| n == len)
}

/// The decoded length, when the one-call decoder accepts the sibling.
/// Both contexts start afresh on each call (libdeflate keeps nothing
/// between calls, zstd begins every frame anew), so one an earlier error
/// left midway is safe to reuse.
fn decode_whole(c: Coding, cache: &mut Cache, n: usize, declared: Option<u64>) -> Option<usize> {
    let input = &cache.input[..n];
    match c {
        Coding::Gzip => {
            let d = cache
                .gzip
                .get_or_insert_with(libdeflater::Decompressor::new);
            gunzip(d, input, &mut cache.output)
        }
        Coding::Zstd => {
            let len = usize::try_from(declared?).ok()?;
            let d = match &mut cache.zstd {
                Some(d) => d,
                none => none.insert(DCtx::try_create()?),
            };
            grow(&mut cache.output, len);
            let got = d.decompress(&mut cache.output[..len], input).ok()?;
            (got == len).then_some(len)
        }
        Coding::Br => None,
    }
}

/// Decodes a gzip file of one member, its ISIZE (the last four bytes)
/// giving the buffer's size: a wrong one fails and the file streams.
/// libdeflate stops after the first member, having checked that its ISIZE
/// field equals what it decoded; those four bytes occurring nowhere after
/// the header but at the very end proves the member ends with the file
/// (a second member or trailing bytes make it stream, as before).
fn gunzip(d: &mut libdeflater::Decompressor, input: &[u8], out: &mut Vec<u8>) -> Option<usize> {
    let n = input.len();
    if n < 18 {
        return None;
    }
    let tail: [u8; 4] = input[n - 4..].try_into().ok()?;
    let len = usize::try_from(u32::from_le_bytes(tail)).ok()?;
    if len > WHOLE_OUT_MAX {
        return None;
    }
    grow(out, len);
    let got = d.gzip_decompress(input, &mut out[..len]).ok()?;
    let once =
        memchr::memchr_iter(tail[0], &input[10..n - 4]).all(|i| input[10 + i..14 + i] != tail);
    (got == len && once).then_some(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{decode_all, inspect};
    use std::io::Write;

    const CHUNK: usize = 4096;

    /// The pool is the process's: its tests run one at a time.
    static ALONE: Mutex<()> = Mutex::new(());

    fn alone() -> std::sync::MutexGuard<'static, ()> {
        ALONE.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn page(n: usize, seed: u32) -> Vec<u8> {
        (0..n as u32)
            .map(|i| b"<p>decoded whole</p>\n"[(i % 21) as usize] ^ ((i / 997 + seed) % 3) as u8)
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

    /// Decodes `e` as the handler does: whether it was decoded whole, and
    /// the body or the error, checking each chunk's size and end.
    fn body(c: Coding, e: &[u8]) -> (bool, Result<Vec<u8>, DecodeError>) {
        let facts = inspect(c, e, e.len() as u64).ok();
        let mut b = match Body::new(c, e, e.len() as u64, facts.as_ref(), CHUNK) {
            Ok(b) => b,
            Err(err) => return (false, Err(err)),
        };
        let whole = matches!(b.mode, BodyMode::Whole { .. });
        let mut out = Vec::new();
        loop {
            match b.fill() {
                Err(err) => return (whole, Err(err)),
                Ok((n, eof)) => {
                    assert_eq!(b.chunk().len(), n);
                    assert!(n <= CHUNK && (eof || n == CHUNK), "{n} {eof}");
                    out.extend_from_slice(b.chunk());
                    if eof {
                        return (whole, Ok(out));
                    }
                }
            }
        }
    }

    /// The body as the streaming decoder alone gives it.
    fn same_as_streaming(c: Coding, e: &[u8]) -> bool {
        let (whole, got) = body(c, e);
        match (got, decode_all(c, e)) {
            (Ok(a), Ok(b)) => assert!(a == b, "{c:?}: bodies differ"),
            (Err(_), Err(_)) => {}
            (a, b) => panic!(
                "{c:?}: {:?} vs {:?}",
                a.map(|v| v.len()),
                b.map(|v| v.len())
            ),
        }
        whole
    }

    #[test]
    fn small_siblings_are_decoded_whole() {
        let _alone = alone();
        for n in [0, 1, CHUNK - 1, CHUNK, 3 * CHUNK, 300_000] {
            let d = page(n, 1);
            for (c, e) in [(Coding::Gzip, gz(&d)), (Coding::Zstd, zst(&d))] {
                assert_eq!(body(c, &e).1.unwrap(), d, "{c:?} {n}");
                // An empty gzip body's ISIZE (0) also occurs in its CRC.
                assert!(same_as_streaming(c, &e) || n == 0, "{c:?} {n}: streamed");
            }
        }
    }

    #[test]
    fn large_siblings_and_brotli_stream() {
        let _alone = alone();
        let big = page(WHOLE_OUT_MAX + 1, 2);
        assert!(!same_as_streaming(Coding::Gzip, &gz(&big)));
        assert!(!same_as_streaming(Coding::Zstd, &zst(&big)));
        let mut br = Vec::new();
        brotli::CompressorWriter::new(&mut br, 4096, 5, 18)
            .write_all(&page(10_000, 3))
            .unwrap();
        assert!(!same_as_streaming(Coding::Br, &br));
    }

    #[test]
    fn a_gzip_body_too_large_is_not_read_whole() {
        let _alone = alone();
        pool().clear();
        let mut x = 7u32;
        let noise: Vec<u8> = (0..100_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let e = gz(&[noise, vec![b'x'; WHOLE_OUT_MAX]].concat());
        assert!(
            e.len() > GZIP_READ_BLIND && e.len() <= WHOLE_IN_MAX,
            "{}",
            e.len()
        );
        assert!(!same_as_streaming(Coding::Gzip, &e));
        assert!(take_cache().input.is_empty(), "read whole");
    }

    #[test]
    fn every_gzip_member_is_decoded() {
        let _alone = alone();
        let (a, b) = (page(20_000, 4), page(9_000, 5));
        for e in [
            [gz(&a), gz(&b)].concat(),
            // The last member's trailer is also the first's.
            [gz(&a), gz(&a)].concat(),
            [gz(&a), gz(&b), gz(&a)].concat(),
        ] {
            assert!(!same_as_streaming(Coding::Gzip, &e));
            assert!(body(Coding::Gzip, &e).1.unwrap().len() > a.len());
        }
    }

    #[test]
    fn bad_gzip_fails_as_streaming_does() {
        let _alone = alone();
        let d = page(50_000, 6);
        let g = gz(&d);
        let n = g.len();
        let mut junk = [g.clone(), b"trailing".to_vec()].concat();
        let mut isize_lies = g.clone();
        isize_lies[n - 4] ^= 1;
        let mut crc_lies = g.clone();
        crc_lies[n - 8] ^= 1;
        let mut corrupt = g.clone();
        corrupt[n / 2] ^= 0x55;
        for e in [
            &junk,
            &isize_lies,
            &crc_lies,
            &corrupt,
            &g[..n - 1],
            &g[..n / 2],
        ] {
            assert!(body(Coding::Gzip, e).1.is_err());
            assert!(!same_as_streaming(Coding::Gzip, e));
        }
        // Trailing bytes that end in the member's own trailer.
        junk.extend_from_slice(&g[n - 8..]);
        assert!(!same_as_streaming(Coding::Gzip, &junk));
    }

    #[test]
    fn zstd_frames_and_wrong_sizes() {
        let _alone = alone();
        let (a, b) = (page(20_000, 7), page(5_000, 8));
        let skip = [0x50, 0x2a, 0x4d, 0x18, 2, 0, 0, 0, 9, 9];
        let e = [skip.to_vec(), zst(&a), zst(&b)].concat();
        assert!(same_as_streaming(Coding::Zstd, &e));
        assert_eq!(body(Coding::Zstd, &e).1.unwrap(), [a.clone(), b].concat());
        // A declared size the frames do not give: streamed, which the
        // handler then finds does not match.
        for wrong in [a.len() as u64 - 1, a.len() as u64 + 1] {
            let z = zst(&a);
            let facts = HeaderFacts {
                declared_len: Some(wrong),
                ..HeaderFacts::default()
            };
            let b = Body::new(Coding::Zstd, &z[..], z.len() as u64, Some(&facts), CHUNK).unwrap();
            assert!(matches!(b.mode, BodyMode::Stream(_)));
        }
        let z = zst(&a);
        let mut bad = z.clone();
        bad[z.len() / 2] ^= 0x55;
        same_as_streaming(Coding::Zstd, &bad);
        assert!(body(Coding::Zstd, &z[..z.len() - 1]).1.is_err());
    }

    #[test]
    fn the_cache_is_bounded_reused_and_dropped_on_panic() {
        let _alone = alone();
        pool().clear();
        let small = gz(&page(100_000, 9));
        let _ = body(Coding::Gzip, &gz(&page(WHOLE_OUT_MAX, 10)));
        let _ = body(Coding::Gzip, &small);
        assert_eq!(pool().len(), 1);
        let c = take_cache();
        assert!(
            c.output.capacity() <= WHOLE_OUT_MAX,
            "{}",
            c.output.capacity()
        );
        assert!(c.input.capacity() <= WHOLE_IN_MAX + 1);
        assert!(c.gzip.is_some());
        let out = c.output.as_ptr();
        put_cache(c);
        let _ = body(Coding::Gzip, &small);
        let c = take_cache();
        assert_eq!(c.output.as_ptr(), out, "not reused");
        put_cache(c);
        let r = std::panic::catch_unwind(|| {
            let _b = Body::new(Coding::Gzip, &small[..], small.len() as u64, None, CHUNK);
            panic!("mid-decode");
        });
        assert!(r.is_err());
        assert!(pool().is_empty(), "a panicked request's cache was kept");
        let held: Vec<_> = (0..POOL_MAX + 3).map(|_| take_cache()).collect();
        held.into_iter().for_each(put_cache);
        assert_eq!(pool().len(), POOL_MAX);
        pool().clear();
    }
}

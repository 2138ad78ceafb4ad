//! Decoding within the memory cap whatever window a sibling declares.
//!
//! A declared window is an upper bound on the history a stream may refer
//! to, not what decoding it needs: no distance can reach further back than
//! the bytes decoded so far. So a stream whose content fits the cap
//! decodes exactly the same with a smaller window declared, and the
//! decoder then holds only that.
//!
//! - zstd: `inspect` bounds each frame's content (its declared size, or
//!   the sum of its block sizes) and, when that is below the declared
//!   window, the frame's Window_Descriptor byte is rewritten as it is read
//!   to the smallest window holding the content.
//! - brotli: the content is unknown until decoded, so a stream declaring
//!   more than the cap (WBITS 24, as the `brotli` CLI writes through a
//!   pipe) is read as declaring the cap (or less, once a complete decode
//!   measured its length), and decoding fails cleanly, before handing out
//!   a byte it could have decoded differently, if the content outgrows it.
//!   Its allocations go through `Capped`, which refuses byte buffers (the
//!   ring buffer above all) beyond the cap, so no header can make the
//!   decoder hold more.

use super::{DecodeError, HeaderFacts, MAX_WINDOW, ZSTD_WINDOW_LOG_MAX};
use brotli::{Allocator, HuffmanCode, SliceWrapper, SliceWrapperMut};
use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// Brotli's ring buffer is its window minus nothing, but the stream may
/// only refer back `(1 << WBITS) - 16` bytes (RFC 7932 9.1): content up
/// to that decodes identically under a smaller WBITS.
const BROTLI_WINDOW_GAP: u64 = 16;

/// Byte buffers a brotli decoder may hold at once: the 8 MiB window, its
/// write-ahead slack, the input buffer (32 KiB) and the context maps
/// (at most 16.25 KiB). Huffman tables are bounded by the format itself
/// (256 trees per category) and are counted, not refused, since the
/// decoder does not check those allocations.
pub const BROTLI_BYTES_MAX: usize = MAX_WINDOW as usize + (128 << 10);

/// What a brotli decoder's allocations amount to, shared by its three
/// allocators.
#[derive(Default)]
pub struct Usage {
    /// Bytes held now, all types.
    live: AtomicUsize,
    /// Of which byte buffers.
    bytes: AtomicUsize,
    /// Most ever held, all types.
    peak: AtomicUsize,
    /// A byte buffer was refused.
    refused: AtomicBool,
}

impl Usage {
    /// Most bytes the decoder held at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }
}

/// A heap block handed to the brotli decoder.
pub struct Block<T>(Box<[T]>);

impl<T> Default for Block<T> {
    fn default() -> Self {
        Block(Box::new([]))
    }
}

impl<T> SliceWrapper<T> for Block<T> {
    fn slice(&self) -> &[T] {
        &self.0
    }
}

impl<T> SliceWrapperMut<T> for Block<T> {
    fn slice_mut(&mut self) -> &mut [T] {
        &mut self.0
    }
}

/// The brotli decoder's allocator: counts what it holds and refuses byte
/// buffers beyond `BROTLI_BYTES_MAX` (the decoder turns an empty ring
/// buffer into an error).
#[derive(Clone, Default)]
pub struct Capped(Arc<Usage>);

impl Capped {
    pub fn usage(&self) -> &Usage {
        &self.0
    }

    fn take(&self, n: usize) {
        let now = self.0.live.fetch_add(n, Ordering::Relaxed) + n;
        self.0.peak.fetch_max(now, Ordering::Relaxed);
    }
}

impl Allocator<u8> for Capped {
    type AllocatedMemory = Block<u8>;
    fn alloc_cell(&mut self, len: usize) -> Block<u8> {
        let held = self.0.bytes.load(Ordering::Relaxed);
        if held.saturating_add(len) > BROTLI_BYTES_MAX {
            self.0.refused.store(true, Ordering::Relaxed);
            return Block::default();
        }
        self.0.bytes.fetch_add(len, Ordering::Relaxed);
        self.take(len);
        Block(vec![0; len].into_boxed_slice())
    }
    fn free_cell(&mut self, b: Block<u8>) {
        self.0.bytes.fetch_sub(b.0.len(), Ordering::Relaxed);
        self.0.live.fetch_sub(b.0.len(), Ordering::Relaxed);
    }
}

macro_rules! counted {
    ($t:ty) => {
        impl Allocator<$t> for Capped {
            type AllocatedMemory = Block<$t>;
            fn alloc_cell(&mut self, len: usize) -> Block<$t> {
                self.take(len * size_of::<$t>());
                Block(vec![<$t>::default(); len].into_boxed_slice())
            }
            fn free_cell(&mut self, b: Block<$t>) {
                let n = b.0.len() * size_of::<$t>();
                self.0.live.fetch_sub(n, Ordering::Relaxed);
            }
        }
    };
}
counted!(u32);
counted!(HuffmanCode);

/// A brotli decoder whose allocations `Capped` counts and bounds.
pub type BrotliReader<R> =
    brotli::reader::DecompressorCustomAlloc<Rewrite<R>, Block<u8>, Capped, Capped, Capped>;

/// Input buffer of a brotli decoder.
const BROTLI_IN_BUF: usize = 32 * 1024;

/// Smallest WBITS that can be written in place of a larger one (18 to 24
/// share one 4-bit code) and still holds `len` bytes of content.
fn brotli_bits_for(len: u64) -> u32 {
    let need = len.saturating_add(BROTLI_WINDOW_GAP).next_power_of_two();
    need.trailing_zeros().clamp(18, ZSTD_WINDOW_LOG_MAX)
}

/// Brotli's WBITS from the first byte when it is one of the 4-bit codes
/// (18 to 24), which can be rewritten without moving a bit.
fn brotli_short_bits(b0: u8) -> Option<u32> {
    let n = (b0 >> 1) & 7;
    (b0 & 1 == 1 && n != 0).then_some(17 + u32::from(n))
}

/// The content bound of a zstd frame whose declared window is larger:
/// the Window_Descriptor byte at `offset` to write instead.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowRewrite {
    pub offset: u64,
    pub byte: u8,
}

impl WindowRewrite {
    /// The descriptor of the smallest power-of-two window holding `bound`
    /// bytes (at least zstd's 1 KiB), and that window.
    pub fn zstd(offset: u64, bound: u64) -> (WindowRewrite, u64) {
        let log = bound.max(1 << 10).next_power_of_two().trailing_zeros();
        let byte = ((log - 10) << 3) as u8;
        (WindowRewrite { offset, byte }, 1 << log)
    }
}

/// A reader that rewrites one header byte as it passes.
pub struct Rewrite<R> {
    inner: R,
    pos: u64,
    what: What,
    /// Brotli: the WBITS the stream declared, when it was lowered.
    lowered_from: Option<u32>,
}

enum What {
    Nothing,
    /// Brotli: WBITS above these bits is read as these.
    BrotliBits(u32),
    Byte(WindowRewrite),
}

impl<R> Rewrite<R> {
    pub fn none(inner: R) -> Rewrite<R> {
        Rewrite {
            inner,
            pos: 0,
            what: What::Nothing,
            lowered_from: None,
        }
    }

    fn brotli(inner: R, bits: u32) -> Rewrite<R> {
        Rewrite {
            what: What::BrotliBits(bits),
            ..Rewrite::none(inner)
        }
    }

    pub fn zstd(inner: R, w: Option<WindowRewrite>) -> Rewrite<R> {
        Rewrite {
            what: w.map_or(What::Nothing, What::Byte),
            ..Rewrite::none(inner)
        }
    }
}

impl<R: Read> Read for Rewrite<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let start = self.pos;
        self.pos += n as u64;
        let (at, byte) = match self.what {
            What::Nothing => return Ok(n),
            What::Byte(w) => (w.offset, w.byte),
            What::BrotliBits(bits) => match buf.first() {
                Some(&b0) if start == 0 && n > 0 => match brotli_short_bits(b0) {
                    Some(declared) if declared > bits => {
                        self.lowered_from = Some(declared);
                        (0, (b0 & 0xf0) | 1 | ((bits - 17) << 1) as u8)
                    }
                    _ => return Ok(n),
                },
                _ => return Ok(n),
            },
        };
        if (start..self.pos).contains(&at) {
            buf[(at - start) as usize] = byte;
        }
        Ok(n)
    }
}

impl<R> Rewrite<R> {
    /// The window a brotli stream declared, when a smaller one was read.
    pub fn lowered_from(&self) -> Option<u64> {
        self.lowered_from.map(|b| 1 << b)
    }
}

/// A bounded brotli decoder.
pub struct Brotli<R: Read> {
    d: BrotliReader<R>,
    alloc: Capped,
    /// Bytes it may still hand out while its window is lowered.
    left: u64,
}

impl<R: Read> Brotli<R> {
    /// A decoder over `src`, its window lowered to what `facts` say the
    /// content needs.
    pub fn new(src: R, facts: Option<&HeaderFacts>) -> Brotli<R> {
        let bits = facts
            .and_then(|f| f.declared_len)
            .map_or(ZSTD_WINDOW_LOG_MAX, brotli_bits_for);
        let alloc = Capped::default();
        let mut a8 = alloc.clone();
        let buffer = Allocator::<u8>::alloc_cell(&mut a8, BROTLI_IN_BUF);
        let d = BrotliReader::new(
            Rewrite::brotli(src, bits),
            buffer,
            a8,
            alloc.clone(),
            alloc.clone(),
        );
        Brotli {
            d,
            alloc,
            left: (1u64 << bits) - BROTLI_WINDOW_GAP,
        }
    }

    /// Decodes into `out`. The cap's refusal, or content outgrowing the
    /// lowered window, is `TooLarge` with the window the stream declared.
    pub fn read(&mut self, out: &mut [u8]) -> Result<usize, DecodeError> {
        let r = self.d.read(out);
        let lowered = self.d.get_ref().lowered_from();
        let too_large = DecodeError::TooLarge(lowered.unwrap_or(MAX_WINDOW * 2));
        match r {
            Ok(n) if n as u64 > self.left && lowered.is_some() => Err(too_large),
            Ok(n) => {
                self.left = self.left.saturating_sub(n as u64);
                Ok(n)
            }
            Err(_) if self.alloc.0.refused.load(Ordering::Relaxed) => Err(too_large),
            Err(e) => Err(DecodeError::from(e)),
        }
    }

    /// What the decoder's allocations amount to.
    pub fn usage(&self) -> &Usage {
        self.alloc.usage()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brotli_bits_cover_the_content_and_stay_rewritable() {
        assert_eq!(brotli_bits_for(0), 18);
        assert_eq!(brotli_bits_for((1 << 18) - 16), 18);
        assert_eq!(brotli_bits_for((1 << 18) - 15), 19);
        assert_eq!(brotli_bits_for(314_000), 19);
        assert_eq!(brotli_bits_for(100 << 20), 23);
        for b0 in 0..=255u8 {
            if let Some(bits) = brotli_short_bits(b0) {
                assert!((18..=24).contains(&bits));
            }
        }
    }

    #[test]
    fn zstd_rewrite_is_the_smallest_power_of_two() {
        assert_eq!(WindowRewrite::zstd(5, 1).1, 1 << 10);
        let (w, size) = WindowRewrite::zstd(5, 314_000);
        assert_eq!((w.offset, size), (5, 1 << 19));
        assert_eq!(w.byte, 9 << 3);
    }

    #[test]
    fn the_cap_refuses_byte_buffers_and_counts_the_rest() {
        let mut a = Capped::default();
        let b = Allocator::<u8>::alloc_cell(&mut a, 1 << 20);
        let t = Allocator::<u32>::alloc_cell(&mut a, 1000);
        assert_eq!(a.usage().peak(), (1 << 20) + 4000);
        let big = Allocator::<u8>::alloc_cell(&mut a, BROTLI_BYTES_MAX);
        assert_eq!(big.slice().len(), 0);
        assert!(a.0.refused.load(Ordering::Relaxed));
        Allocator::<u8>::free_cell(&mut a, b);
        Allocator::<u32>::free_cell(&mut a, t);
        assert_eq!(a.0.live.load(Ordering::Relaxed), 0);
        let fits = Allocator::<u8>::alloc_cell(&mut a, BROTLI_BYTES_MAX);
        assert_eq!(fits.slice().len(), BROTLI_BYTES_MAX);
    }
}

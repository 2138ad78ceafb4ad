//! The decompress path's memory is bounded whatever the file size: peak
//! heap while streaming a large sibling through `Decoder` with the
//! handler's 64 KiB output chunk, measured by a counting allocator.
//! (zstd's C context is allocated outside Rust's allocator; its size is the
//! frame window, capped at 8 MiB by `ZSTD_WINDOW_LOG_MAX`.)

use mod_gzip_disk_ng::coding::Coding;
use mod_gzip_disk_ng::decode::Decoder;
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// Serializes the measurements (the counters are process-wide).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
/// Serializes whole tests: encoding in one would count in another's peak.
static ONE_TEST_AT_A_TIME: Mutex<()> = Mutex::new(());

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::SeqCst) + l.size();
            PEAK.fetch_max(now, Ordering::SeqCst);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        LIVE.fetch_sub(l.size(), Ordering::SeqCst);
    }
}

#[global_allocator]
static A: Counting = Counting;

/// A reader producing `n` bytes of repeated text without holding them.
struct Gen {
    left: u64,
    pos: usize,
}

const TEXT: &[u8] =
    b"<p>Precompressed siblings are served like static files; decoding streams.</p>\n";

impl Read for Gen {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = (buf.len() as u64).min(self.left) as usize;
        for b in &mut buf[..n] {
            *b = TEXT[self.pos % TEXT.len()];
            self.pos += 1;
        }
        self.left -= n as u64;
        Ok(n)
    }
}

fn encode(c: Coding, size: u64) -> Vec<u8> {
    let mut src = Gen { left: size, pos: 0 };
    match c {
        Coding::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            std::io::copy(&mut src, &mut e).unwrap();
            e.finish().unwrap()
        }
        Coding::Zstd => {
            let mut e = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
            e.set_pledged_src_size(Some(size)).unwrap();
            e.window_log(17).unwrap();
            std::io::copy(&mut src, &mut e).unwrap();
            e.finish().unwrap()
        }
        Coding::Br => {
            let mut out = Vec::new();
            {
                let mut w = brotli::CompressorWriter::new(&mut out, 4096, 1, 16);
                std::io::copy(&mut src, &mut w).unwrap();
                w.flush().unwrap();
            }
            out
        }
    }
}

/// Peak heap above the baseline while decoding `data` in 64 KiB chunks.
fn peak_while_decoding(c: Coding, data: &[u8], expect: u64) -> usize {
    let _g = ONE_AT_A_TIME.lock().unwrap();
    let base = LIVE.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let mut out = vec![0u8; 64 * 1024];
    let mut d = Decoder::new(c, data).unwrap();
    let mut total = 0u64;
    loop {
        let n = d.read(&mut out).unwrap();
        if n == 0 {
            break;
        }
        total += n as u64;
    }
    drop(d);
    drop(out);
    assert_eq!(total, expect);
    PEAK.load(Ordering::SeqCst) - base
}

#[test]
fn decoder_memory_does_not_grow_with_size() {
    let _t = ONE_TEST_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for c in [Coding::Gzip, Coding::Zstd, Coding::Br] {
        let small = encode(c, 1 << 20);
        let big = encode(c, 256 << 20);
        let p_small = peak_while_decoding(c, &small, 1 << 20);
        let p_big = peak_while_decoding(c, &big, 256 << 20);
        eprintln!("{c:?}: peak heap {p_small} B for 1 MiB, {p_big} B for 256 MiB");
        assert!(
            p_big <= p_small + 4096,
            "{c:?} grows with size: {p_small} -> {p_big}"
        );
        if c == Coding::Gzip {
            assert!(p_big <= 256 * 1024, "gzip decode uses {p_big} B");
        }
    }
}

/// Brotli's ring buffer is its window once the content outgrows it: the
/// module's 8 MiB cap (WBITS 23) bounds it; WBITS 24 would double it.
/// (Measured: 8 532 991 B at 23, 16 921 599 B at 24.)
#[test]
fn brotli_window_bounds_the_ring_buffer() {
    let _t = ONE_TEST_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let size: u64 = 32 << 20;
    let peak = |lgwin: u32| {
        let mut out = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut out, 4096, 1, lgwin);
            std::io::copy(&mut Gen { left: size, pos: 0 }, &mut w).unwrap();
            w.flush().unwrap();
        }
        peak_while_decoding(Coding::Br, &out, size)
    };
    let (p23, p24) = (peak(23), peak(24));
    eprintln!("brotli 32 MiB: peak heap {p23} B at WBITS 23, {p24} B at WBITS 24");
    assert!(p23 <= (8 << 20) + (512 << 10), "WBITS 23 uses {p23} B");
    assert!(p24 > 16 << 20, "WBITS 24 uses {p24} B");
}

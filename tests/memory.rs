//! The decompress path's memory is bounded whatever the file size: peak
//! heap while streaming a large sibling through `Decoder` with the
//! handler's 64 KiB output chunk, measured by a counting allocator.
//! zstd's C context is allocated outside Rust's allocator: it is measured
//! as the peak RSS growth of a child process that only decodes, and is
//! the frame's window (8 MiB at most, `ZSTD_WINDOW_LOG_MAX`) plus its
//! block buffers.

mod common;

use common::*;
use gdn_core::coding::Coding;
use gdn_core::decode::{self, DecodeError, Decoder, HeaderFacts};
use gdn_core::encode::Levels;
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Read;
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

/// `size` bytes of `Gen` text as the publish tool encodes them at a fast
/// level, with small windows: brotli 64 KiB, zstd 128 KiB.
fn encode(c: Coding, size: u64) -> Vec<u8> {
    let levels = Levels {
        zstd: 3,
        zstd_window_log: 17,
        brotli_lgwin: 16,
        ..fast()
    };
    encoded_stream(c, &levels, size, Gen { left: size, pos: 0 })
}

/// Peak heap above the baseline while decoding `data` in 64 KiB chunks.
fn peak_while_decoding(c: Coding, data: &[u8], expect: u64) -> usize {
    let (peak, total) = peak_decoding_with(c, data, None);
    assert_eq!(total.unwrap(), expect);
    peak
}

/// Peak heap above the baseline while decoding `data` as the module does
/// with `facts`, and the decoded length or the decoder's refusal.
fn peak_decoding_with(
    c: Coding,
    data: &[u8],
    facts: Option<&HeaderFacts>,
) -> (usize, Result<u64, DecodeError>) {
    let _g = ONE_AT_A_TIME.lock().unwrap();
    let base = LIVE.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let mut out = vec![0u8; 64 * 1024];
    let mut d = Decoder::with_facts(c, data, facts).unwrap();
    let mut total = 0u64;
    let r = loop {
        match d.read(&mut out) {
            Ok(0) => break Ok(total),
            Ok(n) => total += n as u64,
            Err(e) => break Err(e),
        }
    };
    drop(d);
    drop(out);
    (PEAK.load(Ordering::SeqCst) - base, r)
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

/// What the publish tool writes for `size` bytes, with its default windows
/// (brotli WBITS 23, zstd window log 23) at a fast level.
fn tool_encoded(c: Coding, size: u64) -> Vec<u8> {
    encoded_stream(c, &fast(), size, Gen { left: size, pos: 0 })
}

/// Brotli's ring buffer is its window once the content outgrows it: the
/// publish tool's 8 MiB window (WBITS 23, the module's cap) bounds it. A
/// stream declaring WBITS 24 is read as 23, so the same 8 MiB holds it
/// until the content outgrows them: then decoding stops, refused, before
/// the decoder could hold more. That is the most a stream can make it
/// hold: byte buffers are refused beyond `BROTLI_BYTES_MAX`, and the
/// Huffman tables are bounded by the format (256 trees per category).
#[test]
fn brotli_window_bounds_the_ring_buffer() {
    let _t = ONE_TEST_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let size: u64 = 32 << 20;
    let p23 = peak_while_decoding(Coding::Br, &tool_encoded(Coding::Br, size), size);
    let w24 = brotli_one_shot_stream(Gen { left: size, pos: 0 }, 1, 24);
    let (p24, r) = peak_decoding_with(Coding::Br, &w24, None);
    let tables = 3 * 256 * 1080 * size_of::<brotli::HuffmanCode>();
    let worst = decode::bounded::BROTLI_BYTES_MAX + tables;
    eprintln!(
        "brotli 32 MiB: peak heap {p23} B at WBITS 23, {p24} B at WBITS 24 ({r:?}); \
         worst a stream can force: {worst} B ({} B of byte buffers + {tables} B of tables)",
        decode::bounded::BROTLI_BYTES_MAX
    );
    assert!(p23 <= (8 << 20) + (512 << 10), "WBITS 23 uses {p23} B");
    assert!(
        matches!(r, Err(DecodeError::TooLarge(w)) if w == 16 << 20),
        "{r:?}"
    );
    assert!(p24 <= (8 << 20) + (512 << 10), "WBITS 24 uses {p24} B");
}

/// A page of Debian's Apache manual (apache2-doc), or HTML-like text of
/// its size where the manual is not installed.
fn manual_page(name: &str, size: usize) -> Vec<u8> {
    std::fs::read(format!("/usr/share/doc/apache2-doc/manual/en/{name}"))
        .unwrap_or_else(|_| page(size, 17))
}

/// What decoding a page piped through `brotli -q 11` holds: the CLI
/// declares WBITS 24 for a pipe; the content decides what is held, the
/// first time (no length known) and once a complete decode learned it.
#[test]
fn brotli_piped_pages_hold_what_their_content_needs() {
    let _t = ONE_TEST_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for (name, size) in [("urlmapping.html", 26_743), ("mod/core.html", 314_161)] {
        let data = manual_page(name, size);
        let br = filter_through("brotli", &["-c", "-q", "11"], &data);
        assert_eq!(br[0] & 0x0f, 0x0f, "{name}: WBITS 24");
        let facts = decode::inspect(Coding::Br, &br[..], br.len() as u64).unwrap();
        let (first, r) = peak_decoding_with(Coding::Br, &br, Some(&facts));
        assert_eq!(r.unwrap(), data.len() as u64);
        let learned = HeaderFacts {
            declared_len: Some(data.len() as u64),
            ..facts
        };
        let (warm, r) = peak_decoding_with(Coding::Br, &br, Some(&learned));
        assert_eq!(r.unwrap(), data.len() as u64);
        eprintln!(
            "brotli -q 11 piped, {name} ({} B): peak heap {first} B, {warm} B with its length known",
            data.len()
        );
        assert!(first <= (8 << 20) + (512 << 10), "{name}: {first} B");
        assert!(
            warm <= first && warm <= 2 * data.len() + (1 << 20),
            "{name}: {warm} B"
        );
    }
}

/// Peak resident set (VmHWM) of this process, in bytes.
fn vm_hwm() -> u64 {
    proc_status_kb("self", "VmHWM").expect("VmHWM") * 1024
}

/// The child side of `rss_growth_decoding`, not a test of its own
/// (ignored, so never counted as one; the parent runs it with
/// `--ignored`): decodes the file `GDN_MEM_CHILD` names as the handler
/// does (64 KiB chunks) and prints how much its peak RSS grew, which
/// counts C allocations (zstd's context) as well as Rust's.
#[test]
#[ignore = "the child process of rss_growth_decoding, which runs it"]
fn child_decodes_and_reports_rss_growth() {
    let spec =
        std::env::var("GDN_MEM_CHILD").expect("run by rss_growth_decoding, with GDN_MEM_CHILD");
    let (c, path) = spec.split_once(' ').unwrap();
    let c = Coding::from_token(c).unwrap();
    let data = std::fs::read(path).unwrap();
    let mut out = vec![0u8; 64 * 1024];
    out.iter_mut().for_each(|b| *b = 1);
    let before = vm_hwm();
    let facts = decode::inspect(c, &data[..], data.len() as u64).ok();
    let result = Decoder::with_facts(c, &data[..], facts.as_ref()).and_then(|mut d| {
        let mut total = 0u64;
        loop {
            match d.read(&mut out)? {
                0 => return Ok(total),
                n => total += n as u64,
            }
        }
    });
    let grew = vm_hwm() - before;
    match result {
        Ok(total) => println!("GDN_RSS decoded {total} grew {grew}"),
        Err(e) => println!("GDN_RSS refused {e}"),
    }
}

/// Decodes `data` in a fresh child process; `Ok((decoded length, peak
/// RSS growth in bytes))`, or `Err` with the decoder's refusal.
fn rss_growth_decoding(c: Coding, data: &[u8]) -> Result<(u64, u64), String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sibling");
    std::fs::write(&path, data).unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "--ignored",
            "child_decodes_and_reports_rss_growth",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("GDN_MEM_CHILD", format!("{} {}", c.token(), path.display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("GDN_RSS ").map(|(_, r)| r))
        .unwrap_or_else(|| panic!("child said nothing: {stdout}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    match words[..] {
        ["decoded", n, "grew", g] => Ok((n.parse().unwrap(), g.parse().unwrap())),
        _ => Err(line.to_string()),
    }
}

/// zstd keeps its window in its C context: a sibling as the publish tool
/// writes it (window 8 MiB) costs that window plus block buffers, a small
/// window costs little, and a frame asking for 16 MiB is refused rather
/// than decoded.
#[test]
fn zstd_window_bounds_the_c_context() {
    // Its encoding would count in another test's peak heap.
    let _t = ONE_TEST_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let size: u64 = 32 << 20;
    let (n, tool) = rss_growth_decoding(Coding::Zstd, &tool_encoded(Coding::Zstd, size)).unwrap();
    assert_eq!(n, size);
    let (n, small) = rss_growth_decoding(Coding::Zstd, &encode(Coding::Zstd, size)).unwrap();
    assert_eq!(n, size);
    let big = zstd_framed(Gen { left: size, pos: 0 }, Some(size), 1, 24, false);
    let refused = rss_growth_decoding(Coding::Zstd, &big);
    // Through a pipe at --ultra -22: 128 MiB declared for a 314 KB page.
    let core = manual_page("mod/core.html", 314_161);
    let ultra = filter_through("zstd", &["-q", "--ultra", "-22", "-c"], &core);
    assert_eq!(zstd_window(&ultra), 128 << 20);
    let (n, piped) = rss_growth_decoding(Coding::Zstd, &ultra).unwrap();
    assert_eq!(n, core.len() as u64);
    eprintln!(
        "zstd 32 MiB: peak RSS +{tool} B with the tool's 8 MiB window, +{small} B with 128 KiB; window 16 MiB: {refused:?}; \
         core.html through `zstd --ultra -22` (128 MiB declared): +{piped} B"
    );
    assert!(piped <= 2 << 20, "a 314 KB page costs {piped} B");
    assert!(
        (8 << 20..=(8 << 20) + (2 << 20)).contains(&tool),
        "8 MiB window costs {tool} B"
    );
    assert!(small <= 1 << 20, "128 KiB window costs {small} B");
    assert!(refused.is_err(), "a 16 MiB window was decoded: {refused:?}");
}

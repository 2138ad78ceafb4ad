//! The decompress path through a real Apache: bodies streamed without a
//! Content-Length (brotli past the first 64 KiB chunk, gzip before its
//! length is learned, zstd frames without a content size), siblings
//! corrupted far into the stream failing the transfer over HTTP/1.1 and
//! h2c, and which sibling is decoded: zstd, then gzip, then brotli, with a
//! zstd window over 128 KiB giving way to gzip (read from the log note);
//! a sibling rewritten in place with its old size and mtime re-inspected.

mod common;

use common::*;
use gdn_core::coding::Coding;
use gdn_core::decode::Decoder;
use std::path::Path;

/// A zstd frame as a streaming encoder without a pledged size writes it
/// (as `zstd -c < file` from a pipe): no content size, a 1 MiB window, a
/// checksum of the content.
fn zstd_unsized(data: &[u8]) -> Vec<u8> {
    zstd_framed(data, None, 3, 20, true)
}

/// How many bytes the module's decoder yields from `sib` before it fails
/// (`None`: it does not fail).
fn decodes_before_failing(c: Coding, sib: &[u8]) -> Option<usize> {
    let mut d = Decoder::new(c, sib).ok()?;
    let mut buf = vec![0u8; 16 * 1024];
    let mut n = 0;
    loop {
        match d.read(&mut buf) {
            Ok(0) => return None,
            Ok(k) => n += k,
            Err(_) => return Some(n),
        }
    }
}

/// `sib` with 64 bytes flipped at the first offset from three quarters of
/// its length on where the module's decoder then fails, after at least
/// 256 KiB of good-looking output (well past the first 64 KiB chunk).
fn corrupt_late(c: Coding, sib: &[u8]) -> Vec<u8> {
    for at in (sib.len() * 3 / 4..sib.len() - 64).step_by(97) {
        let mut bad = sib.to_vec();
        for b in &mut bad[at..at + 64] {
            *b ^= 0x5a;
        }
        if decodes_before_failing(c, &bad).is_some_and(|n| n >= WHOLE_MAX + (256 << 10)) {
            return bad;
        }
    }
    panic!("{c:?}: no late corruption found");
}

/// Decoded bodies up to this size go out whole, with a Content-Length.
const WHOLE_MAX: usize = 1 << 20;

const SIZE: usize = 3 << 20;

fn failing_site(d: &Path) {
    let data = page(SIZE, 21);
    publish(d, "br.html", &data, false, &[".br"]);
    put(d, "zs.html.zst", &zstd_unsized(&data));
    publish(d, "gz.html", &data, false, &[".gz"]);
    put(
        d,
        "badgz.html.gz",
        &corrupt_late(Coding::Gzip, &gzip(&data)),
    );
    put(
        d,
        "badzs.html.zst",
        &corrupt_late(Coding::Zstd, &zstd_unsized(&data)),
    );
    put(
        d,
        "badbr.html.br",
        &corrupt_late(Coding::Br, &brotli(&data)),
    );
}

#[test]
fn bodies_of_unknown_length_stream_and_late_corruption_fails_the_transfer() {
    let data = page(SIZE, 21);
    let a = Apache::start(one_child(), failing_site);
    // Valid siblings whose decoded length nothing declares: streamed
    // chunked on HTTP/1.1, complete, and curl sees a clean end.
    for (p, note) in [
        ("/br.html", "br decompressed"),
        ("/zs.html", "zstd decompressed"),
        ("/gz.html", "gzip decompressed"),
    ] {
        let r = a.get(p, None);
        assert_eq!((r.status, r.exit), (200, 0), "{p}");
        assert_eq!(r.header("Content-Length"), None, "{p}");
        assert_eq!(r.header("Transfer-Encoding"), Some("chunked"), "{p}");
        assert!(r.body == data, "{p}: {} bytes", r.body.len());
        assert!(a.last_access_ends_with(&format!("200 {note}")), "{p}");
        let r = a.request(p, &["--http2-prior-knowledge"]);
        assert_eq!((r.http_version.as_str(), r.exit), ("HTTP/2", 0), "{p}");
        assert!(r.body == data, "{p} over h2c");
    }
    // Corrupt far into the stream: the 200 and over 1 MiB of body have
    // gone out; the client must see a failed transfer (a stream reset on
    // h2c), never a complete-looking body. Never learned, so never a
    // Content-Length. The sibling is then broken in its version: never
    // decoded again, so the next requests get a 500.
    for (p, h2) in [
        ("/badgz.html", false),
        ("/badzs.html", true),
        ("/badbr.html", false),
    ] {
        let r = match h2 {
            false => a.get(p, None),
            true => a.request(p, &["--http2-prior-knowledge"]),
        };
        assert_eq!(r.status, 200, "{p}");
        assert_eq!(r.header("Content-Length"), None, "{p}");
        let cut = if h2 { 92 } else { 18 };
        assert_eq!(
            r.exit, cut,
            "{p}: curl exit {} (18: partial, 92: reset)",
            r.exit
        );
        assert!(r.body.len() >= 64 << 10, "{p}: {} bytes", r.body.len());
        assert!(a.last_access_ends_with("200 error"), "{p}");
        for _ in 0..2 {
            let r = a.get(p, None);
            assert_eq!((r.status, r.exit), (500, 0), "{p}");
        }
    }
    let warnings = a
        .module_log()
        .iter()
        .filter(|l| l.contains(":warn]") && l.contains("broken sibling"))
        .count();
    assert_eq!(warnings, 3, "{:#?}", a.module_log());
    a.assert_no_crash();
}

#[test]
fn decode_order_is_zstd_gzip_brotli_and_wide_zstd_gives_way_to_gzip() {
    let small = page(100_000, 31);
    let wide = page(300_000, 32);
    // A single-segment frame's window is its content size: 128 KiB is
    // still decoded as zstd, one byte more gives way to a gzip sibling.
    let (edge, over) = (page(128 << 10, 33), page((128 << 10) + 1, 34));
    let a = Apache::start(Options::default(), |d| {
        publish(d, "zgb.html", &small, false, &[".zst", ".gz", ".br"]);
        publish(d, "zb.html", &small, false, &[".zst", ".br"]);
        publish(d, "gb.html", &small, false, &[".gz", ".br"]);
        publish(d, "b.html", &wide, false, &[".br"]);
        publish(d, "wide.html", &wide, false, &[".zst", ".gz", ".br"]);
        publish(d, "widebr.html", &wide, false, &[".zst", ".br"]);
        publish(d, "edge.html", &edge, false, &[".zst", ".gz"]);
        publish(d, "over.html", &over, false, &[".zst", ".gz"]);
        assert_eq!(zstd_window(&zstd(&wide)), 300_000);
        assert_eq!(zstd_window(&zstd(&edge)), 128 << 10);
        assert_eq!(zstd_window(&zstd(&over)), (128 << 10) + 1);
    });
    for (p, body, want) in [
        ("/zgb.html", &small, "zstd decompressed"),
        ("/zb.html", &small, "zstd decompressed"),
        ("/gb.html", &small, "gzip decompressed"),
        ("/b.html", &wide, "br decompressed"),
        ("/wide.html", &wide, "gzip decompressed"),
        // The window rule yields to gzip only, not to the slower brotli.
        ("/widebr.html", &wide, "zstd decompressed"),
        ("/edge.html", &edge, "zstd decompressed"),
        ("/over.html", &over, "gzip decompressed"),
    ] {
        for ae in [None, Some("identity"), Some("deflate")] {
            let r = a.get(p, ae);
            assert_eq!((r.status, r.exit), (200, 0), "{p}");
            assert_eq!(r.header("Content-Encoding"), None, "{p}");
            assert_eq!(r.header("Mod-Gzip-Disk-Ng"), Some(":-("), "{p}");
            assert!(r.body == *body, "{p}: {} bytes", r.body.len());
            assert!(
                a.last_access_ends_with(&format!("GET {p} HTTP/1.1 200 {want}")),
                "{p}: want {want}:\n{}",
                a.access_log()
            );
        }
    }
    // The brotli CLI's decoder agrees with what answered.
    let br = std::fs::read(a.docroot.join("b.html.br")).unwrap();
    assert!(oracle_decoded(Some("br"), &br) == wide);
    a.assert_no_crash();
}

/// Contents of another length than `a` whose gzip stream (same header)
/// is as long as `a`'s: found by growing it a byte at a time.
fn same_gzip_length(a: &[u8], seed: u64) -> Vec<u8> {
    let want = gzip(a).len();
    (1..20_000)
        .map(|k| page(a.len() + k, seed))
        .find(|b| gzip(b).len() == want)
        .expect("a longer page of the same gzip length")
}

#[test]
fn a_gzip_sibling_rewritten_in_place_with_its_old_size_and_mtime_is_a_new_version() {
    let old = page(90_000, 41);
    let new = same_gzip_length(&old, 42);
    let (g_old, g_new) = (gzip(&old), gzip(&new));
    let a = Apache::start(one_child(), |d| put(d, "page.html.gz", &g_old));
    let p = a.docroot.join("page.html.gz");
    // Decoded twice: the second answer declares the length learned.
    for _ in 0..2 {
        let r = a.get("/page.html", None);
        assert_eq!((r.status, r.exit), (200, 0));
        assert!(r.body == old);
    }
    assert_eq!(
        a.get("/page.html", None).header("Content-Length"),
        Some(old.len().to_string().as_str())
    );
    let (ino, t) = {
        use std::os::unix::fs::MetadataExt;
        (std::fs::metadata(&p).unwrap().ino(), mtime(&p))
    };
    // Rewritten in place (same inode, size), the mtime put back; only
    // the ctime moves.
    std::thread::sleep(std::time::Duration::from_millis(30));
    {
        use std::io::Write;
        let mut f = std::fs::File::options().write(true).open(&p).unwrap();
        f.write_all(&g_new).unwrap();
    }
    set_mtime(&p, t);
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(&p).unwrap();
    assert_eq!((m.ino(), m.len(), mtime(&p)), (ino, g_old.len() as u64, t));
    // A new version: its own bytes, whole (under the whole-decode bound,
    // so each answer declares their length).
    for i in 0..2 {
        let r = a.get("/page.html", None);
        assert_eq!((r.status, r.exit), (200, 0), "transfer cut");
        assert!(r.body == new, "{} bytes, want {}", r.body.len(), new.len());
        let length = new.len().to_string();
        assert_eq!(
            r.header("Content-Length"),
            Some(length.as_str()),
            "decode {i}"
        );
    }
    a.assert_no_crash();
}

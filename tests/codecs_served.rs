//! Valid but unusual siblings, made by the real `gzip`, `zstd`, `pzstd` and
//! `brotli` tools, served by real Apache: multi-member gzip, multi-frame and
//! skippable-first zstd on the decompress path; zstd windows over 8 MiB and
//! large-window brotli, which browsers refuse, never sent as such; a corrupt
//! sibling giving way to the next; absurd zstd content sizes; the 8 MiB
//! decompression memory limit, which a declared window larger than the
//! content does not reach; and `gzip-disk-ng verify` on such siblings.

mod common;

use common::*;
use std::fs;

#[test]
fn multi_member_gzip_is_served_whole() {
    let (a1, b1) = (page(20_000, 1), page(15_000, 2));
    let (a2, b2) = (page(300_000, 3), page(200_000, 4));
    let small = [a1.clone(), b1.clone()].concat();
    let big = [a2.clone(), b2.clone()].concat();
    let a = Apache::start(one_child(), |d| {
        let cat = |x: &[u8], y: &[u8]| {
            [
                filter_through("gzip", &["-9", "-c"], x),
                filter_through("gzip", &["-1", "-c"], y),
            ]
            .concat()
        };
        put(d, "small.html.gz", &cat(&a1, &b1));
        put(d, "big.html.gz", &cat(&a2, &b2));
    });
    // Fits in the first decoded chunk: exact length.
    let r = a.get("/small.html", None);
    assert_eq!((r.status, r.exit), (200, 0));
    assert_eq!(r.body, small);
    assert_eq!(r.header("Content-Length"), Some("35000"));
    // Longer, up to 1 MiB: decoded whole before the headers, so its
    // exact length too.
    let r = a.get("/big.html", None);
    assert_eq!((r.status, r.exit), (200, 0));
    assert!(r.body == big, "body of {} bytes", r.body.len());
    assert_eq!(r.header("Content-Length"), Some("500000"));
    assert_eq!(r.header("Mod-Gzip-Disk-Ng"), Some(":-("));
    assert!(r.body == big);
    let h = a.request("/big.html", &["-I"]);
    assert_eq!(h.header("Content-Length"), Some("500000"));
    let h2 = a.request("/big.html", &["--http2-prior-knowledge"]);
    assert_eq!((h2.http_version.as_str(), h2.exit), ("HTTP/2", 0));
    assert!(h2.body == big);
    assert!(a.access_log().contains("gzip decompressed"));
    assert_eq!(a.module_log_about(":error]"), Vec::<String>::new());
    a.assert_no_crash();
}

#[test]
fn multi_frame_and_skippable_first_zstd_are_served_whole() {
    let (x, y) = (page(150_000, 5), page(90_000, 6));
    let both = [x.clone(), y.clone()].concat();
    let piped = page(200_000, 7);
    let a = Apache::start(one_child(), |d| {
        let frames = [
            tool_on_file("zstd", &["-q", "-19", "-c"], &x),
            tool_on_file("zstd", &["-q", "-3", "-c"], &y),
        ]
        .concat();
        put(d, "frames.html.zst", &frames);
        let p = tool_on_file("pzstd", &["-q", "-p", "2", "-c"], &both);
        assert_eq!(p[..4], [0x50, 0x2a, 0x4d, 0x18], "pzstd starts skippable");
        put(d, "pzstd.html.zst", &p);
        // From a pipe: no content size in the frames.
        let no_size = [
            filter_through("zstd", &["-q", "-c"], &piped[..100_000]),
            filter_through("zstd", &["-q", "-c"], &piped[100_000..]),
        ]
        .concat();
        put(d, "piped.html.zst", &no_size);
    });
    // Every frame declares its size: the sum is certain.
    let r = a.get("/frames.html", None);
    assert_eq!((r.status, r.exit), (200, 0));
    assert!(r.body == both, "frames: {} bytes", r.body.len());
    assert_eq!(r.header("Content-Length"), Some("240000"));
    let r = a.get("/pzstd.html", None);
    assert_eq!((r.status, r.exit), (200, 0));
    assert!(r.body == both, "pzstd: {} bytes", r.body.len());
    let r = a.get("/piped.html", None);
    assert_eq!((r.status, r.exit), (200, 0));
    assert!(r.body == piped, "piped: {} bytes", r.body.len());
    // Its frames declare no size, but it is decoded whole (1 MiB at most).
    assert_eq!(r.header("Content-Length"), Some("200000"));
    // HTTP/2 too.
    let h2 = a.request("/pzstd.html", &["--http2-prior-knowledge"]);
    assert_eq!((h2.http_version.as_str(), h2.exit), ("HTTP/2", 0));
    assert!(h2.body == both);
    assert!(a.access_log().contains("zstd decompressed"));
    assert_eq!(a.module_log_about(":error]"), Vec::<String>::new());
    a.assert_no_crash();
}

#[test]
fn zstd_window_over_8_mib_is_never_sent_and_gzip_is_decoded() {
    let data = page(300_000, 8);
    let a = Apache::start(one_child(), |d| {
        // A pipe of unknown size keeps the 32 MiB window in the header.
        let big = filter_through("zstd", &["-q", "-3", "--long=25", "-c"], &data);
        assert_eq!(zstd_window(&big), 32 << 20);
        put(d, "wide.html.zst", &big);
        put(d, "wide.html.gz", &gzip(&data));
        fs::write(d.join("orig.html"), &data).unwrap();
        put(d, "orig.html.zst", &big);
        set_mtime(
            &d.join("orig.html"),
            std::time::SystemTime::now() - std::time::Duration::from_secs(200),
        );
        // Content over 8 MiB: the window is really needed.
        let huge = filter_through("zstd", &["-q", "-3", "--long=25", "-c"], &page(9 << 20, 14));
        assert_eq!(zstd_window(&huge), 32 << 20);
        put(d, "alone.html.zst", &huge);
    });
    // Decompress path: the gzip sibling, not a 500.
    let r = a.get("/wide.html", None);
    assert_eq!((r.status, r.exit), (200, 0));
    assert!(r.body == data);
    assert_eq!(r.header("Mod-Gzip-Disk-Ng"), Some(":-("));
    assert!(a.last_access_ends_with("gzip decompressed"));
    // Precompressed path: the next acceptable coding, or the original.
    for _ in 0..3 {
        let r = a.get("/wide.html", Some("zstd, gzip"));
        assert_eq!(r.header("Content-Encoding"), Some("gzip"));
        assert_eq!(r.body, gzip(&data));
        let r = a.get("/orig.html", Some("zstd"));
        assert_eq!(r.status, 200);
        assert_eq!(r.header("Content-Encoding"), None);
        assert!(r.body == data);
    }
    // Only such a sibling: it cannot be decoded within 8 MiB either.
    let r = a.get("/alone.html", None);
    assert_eq!(r.status, 500);
    let r = a.get("/alone.html", Some("zstd"));
    assert_eq!(r.status, 500);
    // Why, once per file version.
    for f in ["wide.html.zst", "orig.html.zst", "alone.html.zst"] {
        let l = a.module_log_about(f);
        let info: Vec<_> = l.iter().filter(|l| l.contains(":info]")).collect();
        assert_eq!(info.len(), 1, "{f}: {l:#?}");
        assert!(info[0].contains("window"), "{}", info[0]);
    }
    let err: Vec<_> = a
        .module_log_about("alone.html")
        .into_iter()
        .filter(|l| l.contains(":error]"))
        .collect();
    assert_eq!(err.len(), 2, "{err:#?}");
    for l in &err {
        assert!(
            l.contains("alone.html.zst")
                && l.contains("32 MiB")
                && l.contains("gzip-disk-ng compress"),
            "{l}"
        );
    }
    a.assert_no_crash();
}

#[test]
fn zstd_window_larger_than_the_content_is_decoded_within_the_cap() {
    let data = page(300_000, 15);
    let a = Apache::start(one_child(), |d| {
        for (name, args) in [
            ("long.html.zst", &["-q", "-3", "--long=27", "-c"][..]),
            ("ultra.html.zst", &["-q", "--ultra", "-22", "-c"][..]),
        ] {
            let z = filter_through("zstd", args, &data);
            assert_eq!(zstd_window(&z), 128 << 20, "{name}");
            put(d, name, &z);
        }
    });
    for p in ["/long.html", "/ultra.html"] {
        let r = a.get(p, None);
        assert_eq!((r.status, r.exit), (200, 0), "{p}");
        assert!(r.body == data, "{p}");
        assert!(a.last_access_ends_with("zstd decompressed"), "{p}");
        // Browsers would refuse the declared window: not sent as zstd.
        let r = a.get(p, Some("zstd"));
        assert_eq!(r.header("Content-Encoding"), None, "{p}");
        assert!(r.body == data, "{p}");
    }
    assert_eq!(a.module_log_about(":error]"), Vec::<String>::new());
    a.assert_no_crash();
}

#[test]
fn large_window_brotli_is_never_sent_as_br() {
    let data = page(100_000, 9);
    let a = Apache::start(one_child(), |d| {
        let lw = tool_on_file("brotli", &["-c", "--large_window=25"], &data);
        // The large-window marker: WBITS code 0010001 (RFC 7932 extension).
        assert_eq!(lw[0] & 0x7f, 0x11, "large-window header");
        put(d, "lw.html.br", &lw);
        put(d, "lw.html.gz", &gzip(&data));
        fs::write(d.join("lworig.html"), &data).unwrap();
        set_mtime(
            &d.join("lworig.html"),
            std::time::SystemTime::now() - std::time::Duration::from_secs(200),
        );
        put(d, "lworig.html.br", &lw);
    });
    for _ in 0..2 {
        let r = a.get("/lw.html", Some("br, gzip"));
        assert_eq!(r.header("Content-Encoding"), Some("gzip"));
        assert_eq!(r.body, gzip(&data));
        let r = a.get("/lw.html", Some("br"));
        assert_eq!((r.status, r.exit), (200, 0));
        assert_eq!(r.header("Content-Encoding"), None);
        assert!(r.body == data);
        let r = a.get("/lworig.html", Some("br"));
        assert_eq!(r.header("Content-Encoding"), None);
        assert!(r.body == data);
    }
    for f in ["lw.html.br", "lworig.html.br"] {
        let l = a.module_log_about(f);
        assert_eq!(l.len(), 1, "{f}: {l:#?}");
        assert!(
            l[0].contains(":info]") && l[0].contains("large-window"),
            "{l:?}"
        );
    }
    a.assert_no_crash();
}

#[test]
fn undecodable_sibling_gives_way_to_the_next() {
    let data = page(20_000, 10);
    let a = Apache::start(Options::default(), |d| {
        let mut z = tool_on_file("zstd", &["-q", "-19", "-c"], &data);
        let mid = z.len() / 2;
        for b in &mut z[mid..mid + 16] {
            *b ^= 0x55;
        }
        put(d, "bad.html.zst", &z);
        put(d, "bad.html.gz", &gzip(&data));
        put(d, "worse.html.zst", &z);
        put(d, "worse.html.gz", &gzip(&data)[..3000]);
    });
    let r = a.get("/bad.html", None);
    assert_eq!((r.status, r.exit), (200, 0));
    assert!(r.body == data);
    assert!(a.last_access_ends_with("gzip decompressed"));
    let l = a.module_log();
    assert_eq!(l.len(), 1, "{l:#?}");
    assert!(
        l[0].contains(":warn]") && l[0].contains("broken sibling") && l[0].contains("bad.html.zst")
    );
    // Both siblings bad: 500, one line for each.
    let r = a.get("/worse.html", None);
    assert_eq!(r.status, 500);
    assert!(a.last_access_ends_with("500 error"));
    let l = a.module_log_about("worse.html");
    assert_eq!(l.len(), 2, "{l:#?}");
    assert!(l[0].contains("worse.html.zst") && l[1].contains("worse.html.gz"));
    // Broken in their versions: never sent as they are either.
    for _ in 0..2 {
        let r = a.get("/worse.html", Some("zstd"));
        assert_eq!((r.status, r.header("Content-Encoding")), (500, None));
    }
    assert_eq!(a.module_log_about("worse.html").len(), 2);
    a.assert_no_crash();
}

#[test]
fn absurd_zstd_content_size_is_not_a_content_length() {
    let data = page(200_000, 11);
    let a = Apache::start(Options::default(), |d| {
        // A frame without content size, checksum or dictionary: magic, a
        // zero descriptor, the window byte, then blocks. Re-declare the
        // size as 2^63 + 5 in an 8-byte field.
        let z = zstd_framed(&data[..], None, 3, 20, false);
        assert_eq!(z[4], 0, "plain descriptor");
        let mut odd = vec![0x28, 0xb5, 0x2f, 0xfd, 0xc0, z[5]];
        odd.extend_from_slice(&((1u64 << 63) + 5).to_le_bytes());
        odd.extend_from_slice(&z[6..]);
        put(d, "absurd.html.zst", &odd);
    });
    // curl rejects a negative Content-Length (exit 8): none is sent. The
    // decoder holds the frame to its declared size, so the sibling's full
    // check finds it broken before anything is sent: a 500, never a body
    // completed wrong.
    let h = a.request("/absurd.html", &["-I"]);
    assert_eq!((h.status, h.exit), (500, 0));
    assert!(h
        .header("Content-Length")
        .is_none_or(|l| !l.starts_with('-')));
    let r = a.get("/absurd.html", None);
    assert_eq!((r.status, r.exit), (500, 0));
    assert!(r.body.len() < 1000, "an error page, not the body");
    a.assert_no_crash();
}

#[test]
fn brotli_window_over_8_mib_is_decoded_while_the_content_fits() {
    let data = page(314_000, 12);
    let huge = page(9 << 20, 16);
    let a = Apache::start(one_child(), |d| {
        let w24 = tool_on_file("brotli", &["-c", "-w", "24"], &data);
        // Through a pipe, at quality 0: many meta-blocks, WBITS 24.
        let piped = filter_through("brotli", &["-c", "-q", "0"], &data);
        assert_eq!((w24[0] & 0x0f, piped[0] & 0x0f), (0x0f, 0x0f));
        put(d, "w24.html.br", &w24);
        put(d, "piped.html.br", &piped);
        let big = filter_through("brotli", &["-c", "-q", "1"], &huge);
        put(d, "huge.html.br", &big);
        put(d, "hugegz.html.br", &big);
        put(d, "hugegz.html.gz", &gzip(&huge));
    });
    for p in ["/w24.html", "/piped.html"] {
        for _ in 0..2 {
            let r = a.get(p, None);
            assert_eq!((r.status, r.exit), (200, 0), "{p}");
            assert!(r.body == data, "{p}");
        }
        let h = a.request(p, &["-I"]);
        assert_eq!(h.status, 200, "{p}");
    }
    // Content over 8 MiB: cut short once, then passed over up front.
    let r = a.get("/huge.html", None);
    assert_eq!(r.status, 200);
    assert_ne!(r.exit, 0, "a cut transfer");
    assert!(r.body.len() <= 8 << 20 && huge.starts_with(&r.body));
    let r = a.get("/huge.html", None);
    assert_eq!(r.status, 500);
    let l = a.module_log_about("huge.html.br");
    let err: Vec<_> = l.iter().filter(|l| l.contains(":error]")).collect();
    assert_eq!(err.len(), 2, "{l:#?}");
    assert!(
        err[1].contains("16 MiB") && err[1].contains("gzip-disk-ng compress"),
        "{l:#?}"
    );
    // With a gzip sibling beside it, that one is decoded instead.
    let _ = a.get("/hugegz.html", None);
    let r = a.get("/hugegz.html", None);
    assert_eq!((r.status, r.exit), (200, 0));
    assert!(r.body == huge);
    // Browsers accept a 16 MiB brotli window: sent as is.
    let r = a.get("/w24.html", Some("br"));
    assert_eq!(r.header("Content-Encoding"), Some("br"));
    a.assert_no_crash();
}

#[test]
fn verify_reports_siblings_browsers_refuse() {
    let d = tempfile::tempdir().unwrap();
    let data = page(50_000, 13);
    fs::write(d.path().join("ok.html"), &data).unwrap();
    fs::write(
        d.path().join("ok.html.zst"),
        tool_on_file("zstd", &["-q", "-c"], &data),
    )
    .unwrap();
    let run = || publish_tool([std::ffi::OsStr::new("verify"), d.path().as_os_str()]);
    assert!(run().status.success(), "clean tree");
    fs::write(
        d.path().join("wide.html.zst"),
        filter_through("zstd", &["-q", "--long=25", "-c"], &data),
    )
    .unwrap();
    fs::write(
        d.path().join("lw.html.br"),
        tool_on_file("brotli", &["-c", "--large_window=25"], &data),
    )
    .unwrap();
    let out = run();
    assert_eq!(out.status.code(), Some(1));
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    let wide: Vec<_> = text
        .lines()
        .filter(|l| l.contains("wide.html.zst"))
        .collect();
    assert!(wide.iter().any(|l| l.contains("window")), "{text}");
    let lw: Vec<_> = text.lines().filter(|l| l.contains("lw.html.br")).collect();
    assert!(lw.iter().any(|l| l.contains("large-window")), "{text}");
}

//! The module in a real Apache: negotiation, the precompressed and
//! decompress paths, HTTP semantics, bad input, MPMs and HTTP/2: the core
//! behaviours (sibling choice, decompression, Range, 304, HEAD) under
//! mpm_event, mpm_worker and mpm_prefork over HTTP/1.1 and h2c; jitter,
//! stale siblings and the no-gzip/no-brotli/no-zstd variables over h2c.
//! The docs' and the package's configuration snippets, guarded by
//! `<IfModule>`, pass `apache2 -t` without the module.

mod common;

use common::*;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const ALL: &[&str] = &[".gz", ".br", ".zst"];

fn standard_site(d: &Path) {
    publish(d, "page.html", &page(300_000, 1), true, ALL);
    publish(d, "only.html", &page(300_000, 2), false, ALL);
    publish(d, "onlygz.html", &page(50_000, 3), false, &[".gz"]);
    publish(d, "plain.html", &page(5_000, 4), true, &[]);
    publish(d, "style.css", &page(20_000, 5), false, &[".br", ".gz"]);
}

#[test]
fn accept_encoding_cases_pick_the_right_sibling() {
    let a = Apache::start(Options::default(), standard_site);
    let orig = page(300_000, 1);
    // Among equal q, the smallest sibling.
    let (smallest, _) = smallest_sibling(&a.docroot.join("page.html"));
    let cases: &[(Option<&str>, Option<&str>)] = &[
        (None, None),
        (Some(""), None),
        (Some("gzip"), Some("gzip")),
        (Some("x-gzip"), Some("gzip")),
        (Some("GZIP"), Some("gzip")),
        (Some("br"), Some("br")),
        (Some("zstd"), Some("zstd")),
        (Some("gzip, deflate, br"), Some("br")),
        (Some("gzip, deflate, br, zstd"), Some(smallest)),
        (Some("gzip;q=1.0, br;q=0.5, zstd;q=0.1"), Some("gzip")),
        (Some("br;q=0.9, gzip;q=0.9"), Some("br")),
        (Some("zstd;q=0, br;q=0, gzip"), Some("gzip")),
        (Some("*"), Some(smallest)),
        (Some("*;q=0.5, gzip"), Some("gzip")),
        (Some("*;q=0, identity"), None),
        (Some("identity"), None),
        (Some("deflate, compress"), None),
        (Some("gzip;q=0"), None),
        (Some("  gzip  ;  q=0.5 ,\tbr ; q=0.4"), Some("gzip")),
        (Some("gzip;q=2, br"), Some("br")),
        (Some("gzip;q=bogus, zstd;q=0.001"), Some("zstd")),
        (Some(",,;;,=,gzip"), Some("gzip")),
    ];
    for (ae, want) in cases {
        let r = a.get("/page.html", *ae);
        assert_eq!(r.status, 200, "AE {ae:?}");
        assert_eq!(r.header("Content-Encoding"), *want, "AE {ae:?}");
        assert_eq!(r.decoded(), orig, "AE {ae:?}");
        assert!(
            r.tokens("Vary").contains(&"Accept-Encoding".to_string()),
            "AE {ae:?}"
        );
        match want {
            Some(_) => assert_eq!(r.header("Mod-Gzip-Disk-Ng"), Some(":-)")),
            None => assert_eq!(r.header("Mod-Gzip-Disk-Ng"), None),
        }
    }
    a.assert_no_crash();
}

#[test]
fn precompressed_path_headers_like_a_static_file() {
    let a = Apache::start(Options::default(), standard_site);
    let mut etags = vec![];
    for (ae, suffix) in [("gzip", ".gz"), ("br", ".br"), ("zstd", ".zst")] {
        let sib = fs::read(a.docroot.join(format!("page.html{suffix}"))).unwrap();
        let r = a.get("/page.html", Some(ae));
        assert_eq!(r.status, 200);
        assert_eq!(r.body, sib, "{ae}: body is the sibling's bytes");
        assert_eq!(r.header("Content-Encoding"), Some(ae));
        assert_eq!(r.header("Content-Type"), Some("text/html"));
        assert_eq!(
            r.header("Content-Length"),
            Some(sib.len().to_string().as_str())
        );
        assert_eq!(r.header("Accept-Ranges"), Some("bytes"));
        assert!(r.header("Last-Modified").is_some());
        let etag = r.header("ETag").unwrap().to_owned();
        assert!(
            etag.starts_with('"') && etag.ends_with(&format!("-{ae}\"")),
            "{etag}"
        );
        etags.push(etag.clone());

        // Conditionals.
        let r304 = a.request(
            "/page.html",
            &[
                "-H",
                &format!("Accept-Encoding: {ae}"),
                "-H",
                &format!("If-None-Match: {etag}"),
            ],
        );
        assert_eq!(r304.status, 304, "{ae}");
        assert!(r304.body.is_empty());
        assert!(
            r304.tokens("Vary").contains(&"Accept-Encoding".to_string()),
            "304 varies"
        );
        let r412 = a.request(
            "/page.html",
            &[
                "-H",
                &format!("Accept-Encoding: {ae}"),
                "-H",
                "If-Match: \"nope\"",
            ],
        );
        assert_eq!(r412.status, 412, "{ae}");
        let lm = r.header("Last-Modified").unwrap();
        let rims = a.request(
            "/page.html",
            &[
                "-H",
                &format!("Accept-Encoding: {ae}"),
                "-H",
                &format!("If-Modified-Since: {lm}"),
            ],
        );
        assert_eq!(rims.status, 304);

        // Ranges are on the compressed bytes, under If-Range naming the
        // representation (tests/ranges.rs); without it, the whole.
        let h = format!("Accept-Encoding: {ae}");
        let rr = a.request("/page.html", &["-H", &h, "-r", "100-199"]);
        assert_eq!((rr.status, &rr.body), (200, &sib), "{ae}");
        let tag = rr.header("ETag").unwrap().to_owned();
        let if_range = format!("If-Range: {tag}");
        let rr = a.request("/page.html", &["-H", &h, "-H", &if_range, "-r", "100-199"]);
        assert_eq!(rr.status, 206, "{ae}");
        assert_eq!(rr.body, &sib[100..200]);
        let n = sib.len();
        let rr = a.request("/page.html", &["-H", &h, "-H", &if_range, "-r", "-10"]);
        assert_eq!(rr.body, &sib[n - 10..]);

        // HEAD: same headers, no body: the socket, read to its close,
        // holds nothing after the blank line.
        let h = raw_request(
            &a,
            "HEAD",
            "/page.html",
            &[("Accept-Encoding", ae.as_bytes())],
        );
        assert_eq!(h.status, 200);
        assert_eq!(h.header("Content-Encoding"), Some(ae));
        assert_eq!(h.header("Content-Length"), r.header("Content-Length"));
        assert_eq!(h.header("ETag"), r.header("ETag"));
        assert!(
            h.after_head.is_empty(),
            "{ae}: HEAD sent {} body bytes",
            h.after_head.len()
        );
    }
    // The original's ETag differs from all coded ones.
    let id = a.get("/page.html", None);
    let id_tag = id.header("ETag").unwrap().to_owned();
    etags.push(id_tag);
    let mut uniq = etags.clone();
    uniq.sort();
    uniq.dedup();
    assert_eq!(uniq.len(), etags.len(), "{etags:?}");
    a.assert_no_crash();
}

#[test]
fn only_siblings_decompress_on_the_fly() {
    // One child: the length learned from a complete decode is per process.
    let opts = Options {
        server: "ServerLimit 1\nMaxRequestWorkers 16\nMinSpareThreads 1\nMaxSpareThreads 16".into(),
        ..Default::default()
    };
    let a = Apache::start(opts, standard_site);
    let orig = page(300_000, 2);
    let r = a.get("/only.html", None);
    assert_eq!(r.status, 200);
    assert_eq!(r.exit, 0);
    assert_eq!(r.header("Content-Encoding"), None);
    assert_eq!(r.header("Mod-Gzip-Disk-Ng"), Some(":-("));
    assert_eq!(r.header("Content-Type"), Some("text/html"));
    // Decoded from gzip (the zstd window is over 128 KiB), whole, since
    // it is under 1 MiB: its exact length.
    assert_eq!(r.header("Content-Length"), Some("300000"));
    assert!(r.tokens("Vary").contains(&"Accept-Encoding".to_string()));
    assert_eq!(r.body, orig);
    let etag = r.header("ETag").unwrap().to_owned();
    assert!(etag.ends_with("-identity\""), "{etag}");
    // Coded responses of the same resource have other ETags.
    for ae in ["gzip", "br", "zstd"] {
        let c = a.get("/only.html", Some(ae));
        assert_eq!(c.header("Content-Encoding"), Some(ae));
        assert_ne!(c.header("ETag"), Some(etag.as_str()));
        assert_eq!(c.decoded(), orig);
    }
    // Conditional GET on the decoded representation.
    let r304 = a.request("/only.html", &["-H", &format!("If-None-Match: {etag}")]);
    assert_eq!(r304.status, 304);
    assert!(r304.tokens("Vary").contains(&"Accept-Encoding".to_string()));
    // Range gets the full body.
    let rr = a.request("/only.html", &["-r", "0-99"]);
    assert_eq!(rr.status, 200);
    assert_eq!(rr.body, orig);
    // HEAD: length without body (nothing after the blank line).
    let h = raw_request(&a, "HEAD", "/only.html", &[]);
    assert_eq!(h.status, 200);
    assert_eq!(h.header("Mod-Gzip-Disk-Ng"), Some(":-("));
    assert_eq!(h.header("Content-Length"), Some("300000"));
    assert!(
        h.after_head.is_empty(),
        "decoded HEAD sent {} body bytes",
        h.after_head.len()
    );
    // Only gzip and only br+gzip: each decoder path.
    let g = a.get("/onlygz.html", Some("identity"));
    assert_eq!(g.body, page(50_000, 3));
    assert_eq!(g.header("Content-Length"), Some("50000"));
    let css = a.get("/style.css", None);
    assert_eq!(css.body, page(20_000, 5));
    assert_eq!(css.header("Content-Type"), Some("text/css"));
    let note = a.access_log();
    assert!(note.contains("decompressed"), "{note}");
    a.assert_no_crash();
}

#[test]
fn large_file_streams_with_declared_length() {
    let big = page(8 << 20, 9);
    // One child: the length learned from a complete decode is per process.
    let one_child = "ServerLimit 1\nMaxRequestWorkers 16\nMinSpareThreads 1\nMaxSpareThreads 16";
    let opts = Options {
        server: one_child.into(),
        ..Default::default()
    };
    let a = Apache::start(opts, |d| {
        publish(d, "big.txt", &big, false, &[".gz"]);
        publish(d, "bigz.txt", &big, false, &[".zst"]);
    });
    let len = (8u64 << 20).to_string();
    for p in ["/big.txt", "/bigz.txt"] {
        let r = a.get(p, None);
        assert_eq!(r.status, 200, "{p}");
        assert_eq!(r.exit, 0, "{p}");
        // zstd declares its size; gzip's is certain after one decode.
        let first = if p == "/bigz.txt" {
            Some(len.as_str())
        } else {
            None
        };
        assert_eq!(r.header("Content-Length"), first, "{p}");
        assert!(r.body == big, "{p}: body differs");
        let r = a.get(p, None);
        assert_eq!(r.header("Content-Length"), Some(len.as_str()), "{p}");
        assert!(r.body == big, "{p}: body differs");
        let h2 = a.request(p, &["--http2-prior-knowledge"]);
        assert_eq!(h2.http_version, "HTTP/2");
        assert!(h2.body == big, "{p} over h2");
    }
    a.assert_no_crash();
}

#[test]
fn original_served_with_vary() {
    let a = Apache::start(Options::default(), standard_site);
    let r = a.get("/plain.html", Some("gzip"));
    assert_eq!(r.status, 200);
    assert_eq!(r.body, page(5_000, 4));
    assert_eq!(r.header("Vary"), None, "no siblings, nothing varies");
    let r = a.get("/page.html", Some("deflate"));
    assert_eq!(r.body, page(300_000, 1));
    assert!(r.tokens("Vary").contains(&"Accept-Encoding".to_string()));
    assert_eq!(r.header("Accept-Ranges"), Some("bytes"));
    let rr = a.request("/page.html", &["-r", "10-19"]);
    assert_eq!(rr.status, 206);
    assert_eq!(rr.body, &page(300_000, 1)[10..20]);
}

#[test]
fn stale_sibling_is_not_served_and_warns() {
    let a = Apache::start(Options::default(), |d| {
        publish(d, "s.html", &page(10_000, 7), true, &[".gz", ".br"]);
        // The original changed after the siblings were made.
        fs::write(d.join("s.html"), page(10_000, 8)).unwrap();
    });
    let r = a.get("/s.html", Some("gzip, br"));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Encoding"), None);
    assert_eq!(r.body, page(10_000, 8));
    assert!(r.tokens("Vary").contains(&"Accept-Encoding".to_string()));
    let log = a.module_log().join("\n");
    assert!(
        log.contains(":warn]") && log.contains("stale sibling") && log.contains("s.html.gz"),
        "{log}"
    );
}

#[test]
fn no_gzip_env_vars_remove_codings() {
    let a = Apache::start(
        Options {
            modules: vec!["setenvif"],
            dir: "SetHandler gzip-disk-ng\nSetEnvIf X-Test nogz no-gzip\nSetEnvIf X-Test nobr no-brotli\nSetEnvIf X-Test nozstd no-zstd".into(),
            ..Default::default()
        },
        standard_site,
    );
    let ae = "Accept-Encoding: gzip, br, zstd";
    let r = a.request("/page.html", &["-H", ae, "-H", "X-Test: nozstd"]);
    assert_eq!(r.header("Content-Encoding"), Some("br"));
    let r = a.request(
        "/page.html",
        &["-H", "Accept-Encoding: gzip", "-H", "X-Test: nogz"],
    );
    assert_eq!(r.header("Content-Encoding"), None);
    assert_eq!(r.body, page(300_000, 1));
    let r = a.request(
        "/page.html",
        &["-H", "Accept-Encoding: br, gzip", "-H", "X-Test: nobr"],
    );
    assert_eq!(r.header("Content-Encoding"), Some("gzip"));
}

#[test]
fn methods_paths_and_missing_files() {
    let a = Apache::start(Options::default(), |d| {
        standard_site(d);
        fs::create_dir(d.join("sub")).unwrap();
    });
    let r = a.request("/only.html", &["-X", "POST", "-d", "x=1"]);
    assert_eq!(r.status, 405);
    let allow = r.tokens("Allow");
    for m in ["GET", "HEAD", "OPTIONS"] {
        assert!(allow.contains(&m.to_string()), "{allow:?}");
    }
    assert!(!allow.contains(&"POST".to_string()), "{allow:?}");
    assert!(
        !String::from_utf8_lossy(&r.body).contains("sibling"),
        "no file body on POST"
    );
    let r = a.request("/page.html", &["-X", "DELETE"]);
    assert_eq!(r.status, 405);
    let r = a.request("/page.html", &["-X", "OPTIONS"]);
    assert_eq!(r.status, 200);
    assert!(r.tokens("Allow").contains(&"GET".to_string()));
    assert_eq!(a.get("/nope.html", Some("gzip")).status, 404);
    assert_eq!(a.get("/page.html/extra", Some("gzip")).status, 404);
    assert_eq!(a.get("/only.html/extra", None).status, 404);
    // A directory is declined to core, which refuses to serve it (no
    // mod_dir or mod_autoindex here): a real 404, not a 500 and not a
    // dropped connection (curl's status 0).
    let r = a.get("/sub/", Some("gzip"));
    assert_eq!((r.status, r.exit), (404, 0));
    assert_eq!(r.header("Mod-Gzip-Disk-Ng"), None);
    // Still healthy.
    assert_eq!(a.get("/page.html", Some("gzip")).status, 200);
    a.assert_no_crash();
}

#[test]
fn rewrite_rule_enables_handler_for_missing_original() {
    let a = Apache::start(
        Options {
            modules: vec!["rewrite"],
            dir: "RewriteEngine On\nRewriteCond %{REQUEST_FILENAME} !-f\nRewriteCond %{REQUEST_FILENAME}.gz -f\nRewriteRule ^ - [H=gzip-disk-ng]".into(),
            ..Default::default()
        },
        standard_site,
    );
    let r = a.get("/onlygz.html", Some("gzip"));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Encoding"), Some("gzip"));
    let r = a.get("/onlygz.html", None);
    assert_eq!(r.body, page(50_000, 3));
    assert_eq!(r.header("Mod-Gzip-Disk-Ng"), Some(":-("));
    // Files with an original are not touched by the rule.
    let r = a.get("/page.html", Some("gzip"));
    assert_eq!(r.header("Content-Encoding"), None);
}

#[test]
fn corrupt_truncated_empty_siblings() {
    let data = page(1_000_000, 11);
    let a = Apache::start(Options::default(), |d| {
        fs::write(
            d.join("corrupt.html.gz"),
            b"this is not gzip at all, not even close",
        )
        .unwrap();
        fs::write(d.join("empty.html.gz"), b"").unwrap();
        fs::write(
            d.join("badzst.html.zst"),
            b"\x28\xb5\x2f\xfd garbage garbage garbage",
        )
        .unwrap();
        fs::write(d.join("badbr.html.br"), b"\xff\xff\xff\xff\xff\xff\xff").unwrap();
        let gz = gzip(&data);
        fs::write(d.join("trunc.html.gz"), &gz[..gz.len() / 2]).unwrap();
        let z = zstd(&data);
        fs::write(d.join("truncz.html.zst"), &z[..z.len() / 2]).unwrap();
        // Corrupt data late in the stream: found mid-transfer.
        let mut late = gz.clone();
        let n = late.len();
        for b in &mut late[n * 3 / 4..n * 3 / 4 + 200] {
            *b ^= 0xa5;
        }
        fs::write(d.join("late.html.gz"), late).unwrap();
        // Two members: ISIZE describes the last one only; decoded whole.
        let mut multi = gzip(&data);
        multi.extend(gzip(&data[..1000]));
        fs::write(d.join("multi.html.gz"), multi).unwrap();
    });
    for p in [
        "/corrupt.html",
        "/empty.html",
        "/badzst.html",
        "/badbr.html",
    ] {
        let r = a.get(p, None);
        assert_eq!(r.status, 500, "{p}");
        assert!(!r.body.starts_with(b"<p>"), "{p}");
    }
    let r = a.get("/multi.html", None);
    assert_eq!((r.status, r.exit), (200, 0));
    assert!(r.body == [data.clone(), data[..1000].to_vec()].concat());
    for p in ["/trunc.html", "/truncz.html", "/late.html"] {
        for h2 in [false, true] {
            let r = if h2 {
                a.request(p, &["--http2-prior-knowledge"])
            } else {
                a.get(p, None)
            };
            // Either a clean 500 before anything was sent, or a transfer
            // the client sees fail: never a complete-looking 200.
            let failed = r.status == 500 || r.exit != 0;
            assert!(failed, "{p} h2={h2}: status {} exit {}", r.status, r.exit);
            if r.status == 200 {
                assert!(
                    r.exit == 18 || r.exit == 92 || r.exit == 56,
                    "{p}: curl exit {}",
                    r.exit
                );
            }
        }
    }
    // Broken in its version: never sent as it is either.
    let r = a.get("/corrupt.html", Some("gzip"));
    assert_eq!((r.status, r.coding()), (500, None));
    // The server still works, and every broken sibling was told.
    assert_eq!(a.get("/corrupt.html", Some("gzip")).status, 500);
    let log = a.module_log();
    let told = log
        .iter()
        .filter(|l| l.contains(":error]") || l.contains("broken sibling"))
        .count();
    assert!(told >= 6, "{log:#?}");
    a.assert_no_crash();
}

#[test]
fn unreadable_or_vanished_sibling_falls_through() {
    let a = Apache::start(Options::default(), |d| {
        publish(d, "u.html", &page(20_000, 12), false, &[".zst", ".gz"]);
        fs::set_permissions(d.join("u.html.zst"), fs::Permissions::from_mode(0o000)).unwrap();
    });
    // A reader that can open 0o000 files (root without dropped privileges)
    // would be served the zstd; Apache's children run unprivileged.
    let r = a.get("/u.html", Some("zstd, gzip"));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Encoding"), Some("gzip"));
    let r = a.get("/u.html", None);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, page(20_000, 12));
    let log = a.module_log().join("\n");
    assert!(log.contains("cannot open sibling"), "{log}");
    // Vanished: the sibling disappears; the next request still works.
    fs::remove_file(a.docroot.join("u.html.gz")).unwrap();
    let r = a.get("/u.html", Some("gzip"));
    // Nothing readable is left: the 404 of a missing file.
    assert_eq!((r.status, r.exit), (404, 0));
    fs::set_permissions(
        a.docroot.join("u.html.zst"),
        fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let r = a.get("/u.html", Some("gzip, zstd"));
    assert_eq!(r.header("Content-Encoding"), Some("zstd"));
    a.assert_no_crash();
}

/// Hostile but legal Accept-Encoding values, all of which Apache passes to
/// the module (a field line stays under LimitRequestFieldSize, 8190
/// bytes): long lists, thousands of members, duplicates, odd q syntax,
/// case. Each gets the exact representation negotiation promises.
#[test]
fn hostile_accept_encoding_headers() {
    let a = Apache::start(Options::default(), standard_site);
    let orig = page(300_000, 1);
    let long = "deflate;q=0.9, ".repeat(520) + "br;q=0.1";
    let many = "a,".repeat(3900) + "zstd;q=0.5, gzip;q=0.6";
    let zeros_after = "br;q=0.9, ".to_string() + &"br;q=0, ".repeat(850) + "gzip;q=0.8";
    let zeros_before = "gzip;q=0, ".repeat(700) + "gzip;q=0.2, br;q=0.1";
    let cases: &[(&str, Option<&str>)] = &[
        (&long, Some("br")),
        (&many, Some("gzip")),
        (&zeros_after, Some("br")),
        (&zeros_before, Some("gzip")),
        ("X-GZIP;Q=0.8, BR;Q=0.7", Some("gzip")),
        ("zstd;q=0., br;q=1.000, gzip;q=0.999", Some("br")),
        ("gzip ; q=0.3 , zstd;q=0.30", Some("zstd")),
        ("gzip;;;q=1", Some("gzip")),
        ("identity;q=0.5, gzip;q=0.4", None),
        (";q=1", None),
        ("q=0.5", None),
    ];
    for (ae, want) in cases {
        assert!(
            ae.len() + "Accept-Encoding: ".len() < 8190,
            "{} bytes would be refused by Apache itself",
            ae.len()
        );
        let r = a.get("/page.html", Some(ae));
        let shown = &ae[ae.len().saturating_sub(60)..];
        assert_eq!(
            (r.status, r.exit, r.header("Content-Encoding")),
            (200, 0, *want),
            "…{shown}"
        );
        assert_eq!(r.decoded(), orig, "…{shown}");
    }
    assert_eq!(a.get("/page.html", Some("gzip")).status, 200);
    a.assert_no_crash();
}

fn mpm_round(mpm: Mpm) {
    let a = Apache::start(
        Options {
            mpm,
            ..Default::default()
        },
        standard_site,
    );
    for proto in [&[][..], &["--http2-prior-knowledge"][..]] {
        for (ae, want) in [
            (Some("gzip"), Some("gzip")),
            (Some("br"), Some("br")),
            (Some("zstd"), Some("zstd")),
            (None, None),
        ] {
            let mut args: Vec<&str> = proto.to_vec();
            let h;
            if let Some(ae) = ae {
                h = format!("Accept-Encoding: {ae}");
                args.extend(["-H", h.as_str()]);
            }
            for path in ["/page.html", "/only.html"] {
                let r = a.request(path, &args);
                assert_eq!(r.status, 200, "{mpm:?} {proto:?} {path}");
                assert_eq!(r.exit, 0);
                if !proto.is_empty() {
                    assert_eq!(r.http_version, "HTTP/2");
                }
                assert_eq!(r.header("Content-Encoding"), want);
                let want_body = if path == "/page.html" {
                    page(300_000, 1)
                } else {
                    page(300_000, 2)
                };
                assert!(r.decoded() == want_body, "{mpm:?} {path}");
            }
        }
        let with = |extra: &[&str]| -> Vec<String> {
            proto.iter().chain(extra).map(|s| s.to_string()).collect()
        };
        // Range: on the compressed bytes; a full 200 when decoded.
        let sib = fs::read(a.docroot.join("page.html.gz")).unwrap();
        let full = curl(
            &a.url("/page.html"),
            &with(&["-H", "Accept-Encoding: gzip"]),
        );
        let if_range = format!("If-Range: {}", full.header("ETag").unwrap());
        let r = curl(
            &a.url("/page.html"),
            &with(&[
                "-H",
                "Accept-Encoding: gzip",
                "-H",
                &if_range,
                "-r",
                "10-19",
            ]),
        );
        assert_eq!(r.status, 206, "{mpm:?} {proto:?}");
        assert_eq!(r.body, &sib[10..20]);
        let r = curl(&a.url("/only.html"), &with(&["-r", "10-19"]));
        assert_eq!(r.status, 200, "{mpm:?} {proto:?}");
        assert!(r.body == page(300_000, 2));
        // 304 and HEAD, precompressed and decompressed.
        for (path, ae) in [("/page.html", "gzip"), ("/only.html", "identity")] {
            let h = format!("Accept-Encoding: {ae}");
            let r = curl(&a.url(path), &with(&["-H", &h]));
            let etag = r.header("ETag").unwrap().to_owned();
            let inm = format!("If-None-Match: {etag}");
            let c = curl(&a.url(path), &with(&["-H", &h, "-H", &inm]));
            assert_eq!(c.status, 304, "{mpm:?} {proto:?} {path}");
            assert!(c.body.is_empty());
            let head = curl(&a.url(path), &with(&["-I", "-H", &h]));
            assert_eq!(head.status, 200, "{mpm:?} {proto:?} {path}");
            assert_eq!(head.header("ETag"), Some(etag.as_str()));
            assert_eq!(
                head.header("Content-Encoding"),
                r.header("Content-Encoding")
            );
            assert!(head.body.starts_with(b"HTTP/") && head.body.len() < 2000);
        }
    }
    a.assert_no_crash();
}

#[test]
fn works_under_event_mpm() {
    mpm_round(Mpm::Event);
}

#[test]
fn works_under_worker_mpm() {
    mpm_round(Mpm::Worker);
}

#[test]
fn works_under_prefork_mpm() {
    mpm_round(Mpm::Prefork);
}

#[test]
fn concurrent_clients_all_get_complete_bodies() {
    let a = Apache::start(Options::default(), standard_site);
    let url = a.url("/only.html");
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let url = url.clone();
            std::thread::spawn(move || {
                for j in 0..10 {
                    let ae = ["gzip", "br", "zstd", "identity"][(i + j) % 4];
                    let r = curl(&url, &["-H".into(), format!("Accept-Encoding: {ae}")]);
                    assert_eq!(r.status, 200);
                    assert_eq!(r.decoded(), page(300_000, 2));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("client thread");
    }
    a.assert_no_crash();
}

#[test]
fn h2c_jitter_conditionals_head_stale_and_env_vars() {
    let h2 = "--http2-prior-knowledge";
    let a = Apache::start(
        Options {
            modules: vec!["setenvif"],
            dir: "SetHandler gzip-disk-ng\nSetEnvIf X-Test nogz no-gzip\n\
                  SetEnvIf X-Test nobr no-brotli\nSetEnvIf X-Test nozstd no-zstd"
                .into(),
            server: "<Location /j>\nGzipDiskNgJitter 32\n</Location>".into(),
            ..Default::default()
        },
        |d| {
            standard_site(d);
            publish(d, "j/p.html", &page(40_000, 6), false, &[".gz", ".zst"]);
            publish(d, "s.html", &page(10_000, 7), true, &[".gz", ".br"]);
            fs::write(d.join("s.html"), page(10_000, 8)).unwrap();
        },
    );
    // Jitter: padded, decodable, a strong ETag naming the length, and
    // 304, HEAD and a range all agree with the padded representation.
    for (ae, suffix) in [("gzip", "gz"), ("zstd", "zst")] {
        let sib = fs::read(a.docroot.join(format!("j/p.html.{suffix}"))).unwrap();
        let h = format!("Accept-Encoding: {ae}");
        let r = a.request("/j/p.html", &[h2, "-H", &h]);
        assert_eq!((r.http_version.as_str(), r.exit), ("HTTP/2", 0));
        assert!(r.body.len() > sib.len() && r.body.len() <= sib.len() + 40);
        assert_eq!(r.decoded(), page(40_000, 6));
        let etag = r.header("ETag").unwrap().to_owned();
        assert!(etag.contains(&format!("-{ae}-j")), "{etag}");
        let inm = format!("If-None-Match: {etag}");
        assert_eq!(
            a.request("/j/p.html", &[h2, "-H", &h, "-H", &inm]).status,
            304
        );
        let head = a.request("/j/p.html", &[h2, "-I", "-H", &h]);
        let len = r.body.len().to_string();
        assert_eq!(head.header("Content-Length"), Some(len.as_str()), "{ae}");
        let if_range = format!("If-Range: {etag}");
        let rr = a.request("/j/p.html", &[h2, "-H", &h, "-H", &if_range, "-r", "-5"]);
        assert_eq!(rr.status, 206);
        assert_eq!(rr.body, &r.body[r.body.len() - 5..]);
    }
    // Stale siblings are not served; the original is.
    let r = a.request("/s.html", &[h2, "-H", "Accept-Encoding: gzip, br"]);
    assert_eq!((r.http_version.as_str(), r.status), ("HTTP/2", 200));
    assert_eq!(r.header("Content-Encoding"), None);
    assert_eq!(r.body, page(10_000, 8));
    assert!(a.last_access_ends_with("GET /s.html HTTP/2.0 200 stale"));
    // The environment variables remove codings.
    let all = "Accept-Encoding: gzip, br, zstd";
    for (env, ae, want) in [
        ("nozstd", all, Some("br")),
        ("nobr", "Accept-Encoding: br, gzip", Some("gzip")),
        ("nogz", "Accept-Encoding: gzip", None),
    ] {
        let x = format!("X-Test: {env}");
        let r = a.request("/page.html", &[h2, "-H", ae, "-H", &x]);
        assert_eq!(r.http_version, "HTTP/2");
        assert_eq!(r.header("Content-Encoding"), want, "{env}");
        assert_eq!(r.decoded(), page(300_000, 1), "{env}");
    }
    a.assert_no_crash();
}

/// The Apache snippets of the README and docs/ that use the module, and
/// the package's confs: each is inside `<IfModule gzip_disk_ng_module>`,
/// so a configuration copied from them still passes `apache2 -t` once the
/// module is gone (`a2dismod`, `dpkg -r`); the package's confs also pass
/// with it loaded.
#[test]
fn doc_snippets_and_shipped_confs_pass_configtest_without_the_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let uses = |t: &str| {
        t.contains("GzipDiskNg")
            || t.contains("SetHandler gzip-disk-ng")
            || t.contains("H=gzip-disk-ng")
    };
    let mut docs = vec![root.join("README.md")];
    docs.extend(
        fs::read_dir(root.join("docs"))
            .expect("docs")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md")),
    );
    let mut snippets = Vec::new();
    for doc in &docs {
        let text = fs::read_to_string(doc).expect("read doc");
        let mut block: Option<Vec<&str>> = None;
        for line in text.lines() {
            match (&mut block, line.trim()) {
                (None, "```apache") => block = Some(Vec::new()),
                (Some(b), "```") => {
                    let s = b.join("\n");
                    if uses(&s) {
                        snippets.push((doc.display().to_string(), s));
                    }
                    block = None;
                }
                (Some(b), _) => b.push(line),
                (None, _) => {}
            }
        }
    }
    assert!(snippets.len() >= 10, "found {} snippets", snippets.len());
    for conf in [
        "apache-conf/gzip_disk_ng.conf",
        "apache-conf/conf-available/gzip-disk-ng.conf",
    ] {
        let text = fs::read_to_string(root.join(conf)).expect("conf");
        let (ok, said) = configtest(&text);
        assert!(ok, "{conf} with the module: {said}");
        snippets.push((conf.to_string(), text));
    }
    for (from, s) in &snippets {
        assert!(
            s.contains("<IfModule gzip_disk_ng_module>"),
            "{from}: not guarded:\n{s}"
        );
        let (ok, said) = configtest_with("", s, &[]);
        assert!(ok, "{from}: without the module:\n{s}\n{said}");
    }
}

//! Real clients: headless Chromium over HTTPS and HTTP/2 (browsers offer br
//! and zstd only over TLS) with a certificate this test makes, plus
//! Python's urllib with its own decoders.

mod common;

use common::*;
use std::fs;
use std::process::Command;

fn html(marker: &str) -> Vec<u8> {
    let mut s = format!("<!doctype html><html><head><meta charset=\"utf-8\"><title>{marker}</title></head><body><h1 id=\"m\">{marker}</h1>\n");
    s += &String::from_utf8_lossy(&page(60_000, 5)).replace(['<', '>'], "");
    s += "</body></html>\n";
    s.into_bytes()
}

#[test]
fn chromium_over_https_h2_renders_every_coding() {
    if chromium_missing() {
        return;
    }
    let certdir = world_readable_tempdir();
    let (cert, key) = make_cert(certdir.path());
    let a = Apache::start(
        Options {
            modules: vec!["ssl", "setenvif"],
            server: format!(
                "SSLEngine on\nSSLCertificateFile {cert}\nSSLCertificateKeyFile {key}\nProtocols h2 http/1.1\n\
                 <Location /z>\nGzipDiskNgEncodings zstd\n</Location>\n<Location /b>\nGzipDiskNgEncodings br\n</Location>\n\
                 <Location /g>\nGzipDiskNgEncodings gzip\n</Location>\nSetEnvIf Request_URI ^/i/ no-zstd\n"
            ),
            ..Default::default()
        },
        |d| {
            for (dir, sib) in [("z", ".zst"), ("b", ".br"), ("g", ".gz")] {
                publish(d, &format!("{dir}/page.html"), &html(&format!("marker-{dir}")), false, &[sib]);
            }
            // Only a zstd sibling, and no-zstd set here: the browser gets
            // a copy decoded on the fly.
            publish(d, "i/page.html", &html("marker-i"), false, &[".zst"]);
        },
    );
    let profile = tempfile::tempdir().unwrap();
    for (dir, want) in [
        ("z", "zstd precompressed"),
        ("b", "br precompressed"),
        ("g", "gzip precompressed"),
        ("i", "zstd decompressed"),
    ] {
        let url = format!("https://127.0.0.1:{}/{dir}/page.html", a.port);
        let out = chromium(profile.path(), &["--ignore-certificate-errors"], &url);
        let dom = String::from_utf8_lossy(&out.stdout);
        assert!(
            dom.contains(&format!("<h1 id=\"m\">marker-{dir}</h1>")),
            "{dir}: page did not render; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The rendered text matches the original's.
        assert!(dom
            .contains(&String::from_utf8_lossy(&page(60_000, 5)).replace(['<', '>'], "")[..2000]));
        let log = a.access_log();
        let line = log
            .lines()
            .rev()
            .find(|l| l.contains(&format!("/{dir}/page.html")))
            .unwrap_or_default()
            .to_owned();
        assert!(line.contains("HTTP/2.0"), "{dir}: not HTTP/2: {line}");
        assert!(line.contains(want), "{dir}: {line}");
    }
}

#[test]
fn python_urllib_decodes_each_coding() {
    let a = Apache::start(Options::default(), |d| {
        publish(
            d,
            "p.html",
            &page(50_000, 6),
            false,
            &[".gz", ".br", ".zst"],
        );
    });
    let script = r#"
import gzip, sys, urllib.request, http.client
url, ae = sys.argv[1], sys.argv[2]
req = urllib.request.Request(url, headers={"Accept-Encoding": ae} if ae else {})
with urllib.request.urlopen(req) as r:
    body = r.read()
    ce = r.headers.get("Content-Encoding")
if ce == "gzip":
    body = gzip.decompress(body)
elif ce == "br":
    import brotli
    body = brotli.decompress(body)
elif ce is not None:
    sys.exit("unexpected coding " + ce)
sys.stdout.buffer.write(body)
"#;
    for ae in ["gzip", "br", ""] {
        if ae == "br"
            && !Command::new("/usr/bin/python3")
                .args(["-c", "import brotli"])
                .status()
                .unwrap()
                .success()
        {
            skip("br through Python: python3-brotli not installed");
            continue;
        }
        let out = Command::new("timeout")
            .args(["-k", "5", "60", "/usr/bin/python3"])
            .args(["-c", script, &a.url("/p.html"), ae])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{ae}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout, page(50_000, 6), "{ae}");
    }
}

/// A script that appends `<tag>-<length of its string>` to the page: it
/// runs only if the browser decoded it whole.
fn script(tag: &str, text: &str) -> Vec<u8> {
    format!(
        "var S = \"{text}\";\ndocument.getElementById('out').textContent += ' {tag}-' + S.length;\n"
    )
    .into_bytes()
}

/// RFC 9842 end to end: Chromium keeps version 1 of two scripts (offered
/// with `Use-As-Dictionary`), the publish tool writes version 2 with deltas
/// against version 1, and Chromium's second visit gets `dcz` for one and
/// `dcb` for the other (its dcz delta removed), and runs exactly version 2.
#[test]
fn chromium_decodes_deltas_against_the_version_it_kept() {
    if chromium_missing() {
        return;
    }
    let certdir = world_readable_tempdir();
    let (cert, key) = make_cert(certdir.path());
    let trust = trust_flag(&cert);
    let v1 = script_text(11);
    let mut v2 = v1.clone();
    v2.replace_range(20_000..20_020, "version two is here ");
    v2.push_str(" and a new ending");
    let mut server = format!(
        "SSLEngine on\nSSLCertificateFile {cert}\nSSLCertificateKeyFile {key}\nProtocols h2 http/1.1\n"
    );
    for d in ["z", "b"] {
        server += &format!(
            "<Location /{d}/>\nGzipDiskNgUseAsDictionary /{d}/app.*.js\nHeader set Cache-Control \"max-age=3600\"\n</Location>\n"
        );
    }
    let a = Apache::start(
        Options {
            modules: vec!["ssl", "headers"],
            server,
            ..Default::default()
        },
        |_| {},
    );
    let doc = a.docroot.clone();
    let html = |n: u32| {
        format!(
            "<!doctype html><html><body><div id=\"out\">run</div>\
             <script src=\"/z/app.{n}.js\"></script><script src=\"/b/app.{n}.js\"></script></body></html>\n"
        )
    };
    let publish_version = |n: u32, text: &str| {
        for d in ["z", "b"] {
            fs::create_dir_all(doc.join(d)).unwrap();
            fs::write(
                doc.join(format!("{d}/app.{n}.js")),
                script(&format!("{d}{n}"), text),
            )
            .unwrap();
        }
        fs::write(doc.join(format!("page{n}.html")), html(n)).unwrap();
        let out = publish_tool(
            [
                "compress",
                "-q",
                "--delta-versions",
                "1",
                "--delta-group",
                "z/app.*.js",
                "--delta-group",
                "b/app.*.js",
            ]
            .iter()
            .map(std::ffi::OsStr::new)
            .chain([doc.as_os_str()]),
        );
        assert!(out.status.success(), "{}", stderr(&out));
    };
    publish_version(1, &v1);
    // Browsers store dictionaries asynchronously; a fresh profile per try.
    let mut dom = String::new();
    for _ in 0..3 {
        let profile = tempfile::tempdir().unwrap();
        let first = load(&a, profile.path(), &trust, "page1.html");
        assert!(
            first.contains("z1-") && first.contains("b1-"),
            "version 1 did not run: {first}"
        );
        if !doc.join("page2.html").exists() {
            publish_version(2, &v2);
            // One delta coding per folder: z's dcz, b's dcb (by default
            // the smaller of the two would go out in both).
            for (d, other) in [("z", ".dcb"), ("b", ".dcz")] {
                for e in fs::read_dir(doc.join(d)).unwrap() {
                    let p = e.unwrap().path();
                    if p.to_string_lossy().ends_with(other) {
                        fs::remove_file(p).unwrap();
                    }
                }
            }
        }
        dom = load(&a, profile.path(), &trust, "page2.html");
        if a.access_log().contains("dcb precompressed")
            && a.access_log().contains("dcz precompressed")
        {
            break;
        }
    }
    let len = v2.chars().count();
    assert!(dom.contains(&format!("z2-{len}")), "dcz: {dom}");
    assert!(dom.contains(&format!("b2-{len}")), "dcb: {dom}");
    let log = a.access_log();
    let line = |path: &str| {
        log.lines()
            .rev()
            .find(|l| l.contains(path))
            .unwrap_or_default()
            .to_owned()
    };
    let z = line("/z/app.2.js");
    let b = line("/b/app.2.js");
    assert!(
        z.contains("HTTP/2.0") && z.contains("dcz precompressed"),
        "{z}\n{log}"
    );
    assert!(b.contains("dcb precompressed"), "{b}\n{log}");
}

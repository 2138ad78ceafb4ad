//! Real clients: headless Chromium over HTTPS and HTTP/2 (browsers offer br
//! and zstd only over TLS) with a certificate this test makes, plus
//! Python's urllib with its own decoders.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;

const CHROMIUM: &str = "/usr/bin/chromium";

fn html(marker: &str) -> Vec<u8> {
    let mut s = format!("<!doctype html><html><head><meta charset=\"utf-8\"><title>{marker}</title></head><body><h1 id=\"m\">{marker}</h1>\n");
    s += &String::from_utf8_lossy(&page(60_000, 5)).replace(['<', '>'], "");
    s += "</body></html>\n";
    s.into_bytes()
}

fn make_cert(dir: &Path) -> (String, String) {
    let key = dir.join("key.pem");
    let cert = dir.join("cert.pem");
    let st = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
        ])
        .args([
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout",
        ])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl");
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    (cert.display().to_string(), key.display().to_string())
}

#[test]
fn chromium_over_https_h2_renders_every_coding() {
    if !Path::new(CHROMIUM).exists() {
        // scripts/test installs Debian's chromium; only a bare dev box lacks it.
        skip(&format!(
            "{CHROMIUM} not installed (scripts/test installs it)"
        ));
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
        // Bounded: a hung browser fails the test instead of the run.
        let out = Command::new("timeout")
            .args(["-k", "10", "120", CHROMIUM])
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--ignore-certificate-errors",
                "--dump-dom",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg(&url)
            .output()
            .expect("run chromium");
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

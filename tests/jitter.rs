//! BREACH jitter in a real Apache: padded bodies decode with every client
//! decoder, lengths stay in range, and Content-Length, ETag, HEAD and Range
//! all describe the padded representation.

mod common;

use common::*;
use mod_gzip_disk_ng::coding::Coding;
use mod_gzip_disk_ng::decode::decode_all;
use mod_gzip_disk_ng::jitter;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

const MAX: u64 = 32;

/// Siblings as the publish tool makes them (sealed brotli, named gzip).
fn tool_siblings(dir: &Path, name: &str, data: &[u8]) {
    let base = dir.join(name);
    fs::create_dir_all(base.parent().unwrap()).unwrap();
    let mut g = flate2::GzBuilder::new()
        .filename(name.rsplit('/').next().unwrap())
        .write(Vec::new(), flate2::Compression::best());
    g.write_all(data).unwrap();
    fs::write(format!("{}.gz", base.display()), g.finish().unwrap()).unwrap();
    fs::write(format!("{}.zst", base.display()), zstd(data)).unwrap();
    let mut b = Vec::new();
    {
        let mut w = brotli::CompressorWriter::new(&mut b, 4096, 11, 22);
        w.write_all(data).unwrap();
        w.flush().unwrap();
    }
    fs::write(
        format!("{}.br", base.display()),
        jitter::seal_brotli(b).unwrap(),
    )
    .unwrap();
}

fn site(d: &Path) {
    for dir in ["content", "paranoid", "random", "off"] {
        for i in 0..6u64 {
            tool_siblings(
                d,
                &format!("{dir}/p{i}.html"),
                &page(30_000 + i as usize * 1000, i),
            );
        }
    }
    // A brotli stream from another encoder: no trailer.
    publish(d, "content/other.html", &page(10_000, 99), false, &[".br"]);
}

fn start() -> Apache {
    Apache::start(
        Options {
            dir: "SetHandler gzip-disk-ng".into(),
            server: {
                let mut s = String::new();
                for (dir, j) in [
                    ("content", "32"),
                    ("paranoid", "32 0 paranoid"),
                    ("random", "32 -1"),
                    ("off", "Off"),
                ] {
                    s += &format!("<Location /{dir}>\nGzipDiskNgJitter {j}\n</Location>\n");
                }
                s
            },
            ..Default::default()
        },
        site,
    )
}

fn suffix(c: &str) -> &'static str {
    match c {
        "gzip" => "gz",
        "br" => "br",
        _ => "zst",
    }
}

/// Runs `cmd args` with `input` on stdin; `None` if it cannot start or
/// (for Python) lacks the module.
fn pipe_through(cmd: &str, args: &[&str], input: &[u8]) -> Option<std::process::Output> {
    let mut child = Command::new(cmd)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().ok()?;
    let _ = writer.join();
    if String::from_utf8_lossy(&out.stderr).contains("No module named") {
        return None;
    }
    Some(out)
}

fn cli_decode(c: &str, body: &[u8]) -> Option<Vec<u8>> {
    let tool = match c {
        "gzip" => "gzip",
        "br" => "brotli",
        _ => "zstd",
    };
    let out = pipe_through(tool, &["-dc"], body)?;
    assert!(out.status.success(), "{tool} -dc rejected the padded body");
    Some(out.stdout)
}

fn python_decode(c: &str, body: &[u8]) -> Option<Vec<u8>> {
    let code = match c {
        "gzip" => {
            "import sys,gzip; sys.stdout.buffer.write(gzip.decompress(sys.stdin.buffer.read()))"
        }
        "br" => {
            "import sys,brotli; sys.stdout.buffer.write(brotli.decompress(sys.stdin.buffer.read()))"
        }
        _ => return None,
    };
    let out = pipe_through("/usr/bin/python3", &["-c", code], body)?;
    assert!(
        out.status.success(),
        "python {c}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(out.stdout)
}

#[test]
fn padded_bodies_decode_everywhere_and_lengths_are_in_range() {
    let a = start();
    for mode in ["content", "paranoid", "random"] {
        for c in ["gzip", "br", "zstd"] {
            let orig = page(30_000, 0);
            let sib = fs::read(a.docroot.join(format!("{mode}/p0.html.{}", suffix(c)))).unwrap();
            let r = a.get(&format!("/{mode}/p0.html"), Some(c));
            assert_eq!(r.status, 200);
            assert_eq!(r.header("Content-Encoding"), Some(c));
            assert_eq!(
                r.header("Content-Length"),
                Some(r.body.len().to_string().as_str())
            );
            let added = r.body.len() as u64 - sib.len() as u64;
            let overhead = match c {
                "gzip" => 1,
                "zstd" => 8,
                _ => 4,
            };
            assert!(
                added > overhead - 1 && added <= MAX + overhead,
                "{mode} {c}: added {added}"
            );
            let coding = Coding::from_token(c).unwrap();
            assert_eq!(decode_all(coding, &r.body).unwrap(), orig, "{mode} {c}");
            if let Some(d) = cli_decode(c, &r.body) {
                assert_eq!(d, orig, "{mode} {c} CLI");
            }
            if let Some(d) = python_decode(c, &r.body) {
                assert_eq!(d, orig, "{mode} {c} python");
            }
            // curl's own decoder.
            let cc = a.request(
                &format!("/{mode}/p0.html"),
                &["--compressed", "-H", &format!("Accept-Encoding: {c}")],
            );
            assert_eq!(cc.exit, 0, "{mode} {c} curl --compressed");
            assert_eq!(cc.body, orig, "{mode} {c} curl --compressed");
            assert!(
                String::from_utf8_lossy(&r.body).contains("Padding-") || added < overhead + 8,
                "ASCII padding visible"
            );
        }
    }
    a.assert_no_crash();
}

#[test]
fn content_based_lengths_are_stable_and_vary_across_files() {
    let a = start();
    for mode in ["content", "paranoid"] {
        for c in ["gzip", "br", "zstd"] {
            let mut lens = vec![];
            for i in 0..6 {
                let p = format!("/{mode}/p{i}.html");
                let r1 = a.get(&p, Some(c));
                let r2 = a.get(&p, Some(c));
                assert_eq!(r1.body, r2.body, "{p} {c}: deterministic");
                assert_eq!(r1.header("ETag"), r2.header("ETag"));
                let etag = r1.header("ETag").unwrap();
                assert!(!etag.starts_with("W/"), "strong ETag: {etag}");
                let sib =
                    fs::read(a.docroot.join(format!("{mode}/p{i}.html.{}", suffix(c)))).unwrap();
                lens.push(r1.body.len() - sib.len());
                // HEAD agrees with GET.
                let h = a.request(&p, &["-I", "-H", &format!("Accept-Encoding: {c}")]);
                assert_eq!(h.header("Content-Length"), r1.header("Content-Length"));
                // A range for the last bytes matches the full body.
                let n = r1.body.len();
                let rr = a.request(&p, &["-H", &format!("Accept-Encoding: {c}"), "-r", "-20"]);
                assert_eq!(rr.status, 206, "{p} {c}");
                assert_eq!(rr.body, &r1.body[n - 20..], "{p} {c}: tail range");
                let rr = a.request(&p, &["-H", &format!("Accept-Encoding: {c}"), "-r", "0-99"]);
                assert_eq!(rr.body, &r1.body[..100], "{p} {c}: head range");
                // The ETag validates the padded representation.
                let r304 = a.request(
                    &p,
                    &[
                        "-H",
                        &format!("Accept-Encoding: {c}"),
                        "-H",
                        &format!("If-None-Match: {etag}"),
                    ],
                );
                assert_eq!(r304.status, 304);
            }
            lens.sort();
            lens.dedup();
            assert!(lens.len() > 1, "{mode} {c}: lengths differ across files");
        }
    }
}

#[test]
fn random_mode_is_weak_and_offers_no_ranges() {
    let a = start();
    for c in ["gzip", "br", "zstd"] {
        let mut lens = std::collections::BTreeSet::new();
        for _ in 0..12 {
            let r = a.get("/random/p1.html", Some(c));
            assert!(r.header("ETag").unwrap().starts_with("W/"), "weak ETag");
            assert_eq!(r.header("Accept-Ranges"), Some("none"));
            lens.insert(r.body.len());
        }
        assert!(lens.len() > 1, "{c}: random lengths vary");
        let rr = a.request(
            "/random/p1.html",
            &["-H", &format!("Accept-Encoding: {c}"), "-r", "0-9"],
        );
        assert_eq!(rr.status, 200);
        assert_eq!(
            decode_all(Coding::from_token(c).unwrap(), &rr.body).unwrap(),
            page(31_000, 1)
        );
    }
}

#[test]
fn jitter_off_and_foreign_brotli_are_unpadded() {
    let a = start();
    for c in ["gzip", "br", "zstd"] {
        let sib = fs::read(a.docroot.join(format!("off/p2.html.{}", suffix(c)))).unwrap();
        let r = a.get("/off/p2.html", Some(c));
        assert_eq!(r.body, sib);
    }
    let sib = fs::read(a.docroot.join("content/other.html.br")).unwrap();
    let r = a.get("/content/other.html", Some("br"));
    assert_eq!(r.body, sib, "no trailer: served as is");
    let log = a.module_log().join("\n");
    assert!(log.contains("without jitter: BrotliTrailer"), "{log}");
}

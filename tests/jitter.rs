//! BREACH jitter in a real Apache: padded bodies decode with every client
//! decoder, lengths stay in range, and Content-Length, ETag, HEAD and Range
//! all describe the padded representation.

mod common;

use common::*;
use gdn_core::jitter;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::Command;

const MAX: u64 = 32;

/// Siblings as the publish tool makes them, but for a gzip header naming
/// the file (as `gzip` writes it).
fn tool_siblings(dir: &Path, name: &str, data: &[u8]) {
    let base = dir.join(name);
    fs::create_dir_all(base.parent().unwrap()).unwrap();
    let g = gzip_named(name.rsplit('/').next().unwrap(), data);
    fs::write(sibling(&base, ".gz"), g).unwrap();
    fs::write(sibling(&base, ".zst"), zstd(data)).unwrap();
    let b = brotli(data);
    let proof = jitter::prove_brotli(|o| &b[o as usize..], b.len() as u64, 1 << 26);
    assert_eq!(proof, Ok(()));
    fs::write(sibling(&base, ".br"), b).unwrap();
}

/// Where the data of a brotli stream ending in an empty last meta-block
/// ends, in bits: the last byte's highest set bit is ISLASTEMPTY, the one
/// below it ISLAST (RFC 7932, bits packed from the least significant).
fn br_data_end(sib: &[u8]) -> u64 {
    let last = *sib.last().unwrap();
    8 * (sib.len() as u64 - 1) + u64::from(7 - last.leading_zeros()) - 1
}

/// Bytes a padding of `pad` adds besides itself to `sib`, from each
/// format's rules: gzip a NUL ending FCOMMENT (our gzip files carry no
/// comment); zstd a skippable frame's 8-byte header; brotli the bits from
/// the data's end (a metadata block header of 6 bits + MSKIPLEN bytes,
/// zero fill, then the byte-aligned empty last meta-block) in place of the
/// file's last bytes.
fn framing(c: &str, sib: &[u8], pad: u64) -> u64 {
    match c {
        "gzip" => 1,
        "zstd" => 8,
        _ => {
            let end = br_data_end(sib);
            let mskip = if pad <= 256 { 1 } else { 2 };
            let header = (end % 8 + 6 + 8 * mskip).div_ceil(8);
            end / 8 + header + 1 - sib.len() as u64
        }
    }
}

/// The padding length a response of `added` more bytes than `sib`
/// carries, if any in 1..=MAX fits the coding's framing.
fn pad_of(c: &str, sib: &[u8], added: u64) -> Option<u64> {
    (1..=MAX).find(|&p| p + framing(c, sib, p) == added)
}

/// The `N` of an ETag ending in `-jN"`.
fn etag_pad(etag: &str) -> Option<u64> {
    etag.trim_end_matches('"').rsplit("-j").next()?.parse().ok()
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
    // A brotli stream from another encoder, not ending in 0x03.
    let other = brotli_one_shot(&page(10_000, 99), 11, 22);
    put(d, "content/other.html.br", &other);
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

/// Options padding by up to `max` bytes under /content.
fn jitter_under_content(max: u32) -> Options {
    Options {
        server: format!("<Location /content>\nGzipDiskNgJitter {max}\n</Location>\n"),
        ..Default::default()
    }
}

fn suffix(c: &str) -> &'static str {
    match c {
        "gzip" => "gz",
        "br" => "br",
        _ => "zst",
    }
}

/// What Python's own decoder (its gzip, brotli or zstandard module,
/// Debian's python3 packages) makes of `body`: a second decoder besides
/// the command-line tools of `oracle_decoded`. Python or its module
/// missing fails the test.
fn python_decode(c: &str, body: &[u8]) -> Vec<u8> {
    let code = match c {
        "gzip" => {
            "import sys,gzip; sys.stdout.buffer.write(gzip.decompress(sys.stdin.buffer.read()))"
        }
        "br" => {
            "import sys,brotli; sys.stdout.buffer.write(brotli.decompress(sys.stdin.buffer.read()))"
        }
        "zstd" => {
            "import sys,zstandard; sys.stdout.buffer.write(zstandard.ZstdDecompressor()\
             .stream_reader(sys.stdin.buffer, read_across_frames=True).read())"
        }
        _ => panic!("no Python decoder for {c}"),
    };
    let out = pipe("/usr/bin/python3", &["-c", code], body)
        .unwrap_or_else(|| panic!("/usr/bin/python3 does not start (scripts/lib.sh installs it)"));
    assert!(
        out.status.success(),
        "python {c}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
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
            let pad = pad_of(c, &sib, added);
            assert!(pad.is_some(), "{mode} {c}: added {added}");
            if mode != "random" {
                let etag = r.header("ETag").unwrap();
                assert_eq!(etag_pad(etag), pad, "{mode} {c}: {etag}");
            }
            assert_eq!(oracle_decoded(Some(c), &r.body), orig, "{mode} {c} CLI");
            assert_eq!(python_decode(c, &r.body), orig, "{mode} {c} python");
            // curl's own decoder.
            let cc = a.request(
                &format!("/{mode}/p0.html"),
                &["--compressed", "-H", &format!("Accept-Encoding: {c}")],
            );
            assert_eq!(cc.exit, 0, "{mode} {c} curl --compressed");
            assert_eq!(cc.body, orig, "{mode} {c} curl --compressed");
            assert!(
                String::from_utf8_lossy(&r.body).contains("Padding-") || pad < Some(8),
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
                let h = format!("Accept-Encoding: {c}");
                let ir = format!("If-Range: {}", r1.header("ETag").unwrap());
                let rr = a.request(&p, &["-H", &h, "-H", &ir, "-r", "-20"]);
                assert_eq!(rr.status, 206, "{p} {c}");
                assert_eq!(rr.body, &r1.body[n - 20..], "{p} {c}: tail range");
                let rr = a.request(&p, &["-H", &h, "-H", &ir, "-r", "0-99"]);
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
        assert_eq!(oracle_decoded(Some(c), &rr.body), page(31_000, 1));
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
    let why = jitter::prove_brotli(|o| &sib[o as usize..], sib.len() as u64, 1 << 26);
    let r = a.get("/content/other.html", Some("br"));
    assert_eq!(r.body, sib, "no empty last meta-block: served as is");
    let log = a.module_log().join("\n");
    let want = format!("without jitter: {:?}", why.unwrap_err());
    assert!(log.contains(&want), "{want} in {log}");
}

/// Every file of the docroot gets the same mtime, so servers with separate
/// copies of the same site (behind a load balancer) agree on `FileETag
/// MTime Size` ETags.
fn same_mtimes(d: &Path) {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
    for e in walkdir::WalkDir::new(d) {
        let e = e.unwrap();
        if e.file_type().is_file() {
            set_mtime(e.path(), t);
        }
    }
}

/// An Apache serving `site` with content-based jitter under `key_line`.
fn keyed_server(mpm: Mpm, key_line: &str, extra: &str, key: Option<&[u8]>) -> Apache {
    Apache::start(
        Options {
            mpm,
            server: format!(
                "FileETag MTime Size\n{key_line}\n{extra}\n<Location /content>\nGzipDiskNgJitter 32\n</Location>\n"
            ),
            ..Default::default()
        },
        |d| {
            site(d);
            same_mtimes(d);
            if let Some(k) = key {
                // Relative key paths resolve against ServerRoot.
                fs::write(d.parent().unwrap().join("jitter.key"), k).unwrap();
            }
        },
    )
}

/// (Content-Length, ETag) of every content page in every coding.
fn fingerprint(a: &Apache) -> Vec<(String, String)> {
    let mut out = vec![];
    for i in 0..6 {
        for c in ["gzip", "br", "zstd"] {
            let r = a.get(&format!("/content/p{i}.html"), Some(c));
            assert_eq!(r.status, 200);
            let sib = fs::read(a.docroot.join(format!("content/p{i}.html.{}", suffix(c)))).unwrap();
            assert!(r.body.len() > sib.len(), "p{i} {c} padded");
            out.push((
                r.header("Content-Length").unwrap().to_owned(),
                r.header("ETag").unwrap().to_owned(),
            ));
        }
    }
    out
}

#[test]
fn padding_lengths_follow_the_key_file() {
    let (_keys, k) = key_files(&[
        b"0123456789abcdef-first-secret",
        b"0123456789abcdef-other-secret",
    ]);
    let (k1, k2) = (&k[0], &k[1]);
    let abs = |k: &Path| format!("GzipDiskNgJitterKey {}", k.display());
    let a = keyed_server(Mpm::Event, &abs(k1), "", None);
    let b = keyed_server(Mpm::Event, &abs(k2), "", None);
    // The same key bytes in another file, named relative to ServerRoot.
    let c = keyed_server(
        Mpm::Event,
        "GzipDiskNgJitterKey jitter.key",
        "",
        Some(b"0123456789abcdef-first-secret"),
    );
    let (fa, fb, fc) = (fingerprint(&a), fingerprint(&b), fingerprint(&c));
    assert_eq!(fa, fc, "same key: same lengths and ETags on every server");
    let differing = fa.iter().zip(&fb).filter(|(x, y)| x != y).count();
    assert!(differing > 3, "another key, other lengths: {fa:?} {fb:?}");
    for (len, etag) in fa.iter().chain(&fb) {
        assert!(!etag.starts_with("W/"), "strong ETag {etag} ({len})");
    }
}

#[test]
fn without_a_key_every_prefork_child_pads_alike_and_servers_differ() {
    // One connection per child: every request meets a freshly forked child,
    // so a key made after the fork would change the padding each time.
    let extra = "MaxConnectionsPerChild 1\nLogFormat \"%P\" pid\nCustomLog pids.log pid";
    let a = keyed_server(Mpm::Prefork, "", extra, None);
    for c in ["gzip", "br"] {
        let first = a.get("/content/p1.html", Some(c));
        for _ in 0..4 {
            let r = a.get("/content/p1.html", Some(c));
            assert_eq!(r.header("ETag"), first.header("ETag"), "{c}");
            assert_eq!(r.body, first.body, "{c}");
        }
    }
    let pids: std::collections::BTreeSet<String> =
        fs::read_to_string(a.root.path().join("pids.log"))
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
    assert!(pids.len() >= 3, "served by several children: {pids:?}");
    // Another server (or a restart) makes another random key.
    let b = keyed_server(Mpm::Event, "", "", None);
    let (fa, fb) = (fingerprint(&a), fingerprint(&b));
    assert!(fa.iter().zip(&fb).filter(|(x, y)| x != y).count() > 3);
    a.assert_no_crash();
}

/// Key files the configurations below name, in their ServerRoot.
const KEY_FILES: &[(&str, &[u8])] = &[("empty.key", b""), ("good.key", b"a secret")];

#[test]
fn configtest_rejects_big_buffers_and_bad_key_files() {
    assert_configtests(
        KEY_FILES,
        &[
            ("GzipDiskNgJitter 32 1048577", "1 MiB"),
            ("GzipDiskNgJitter 32 2000000", "exceeds the maximum"),
            ("GzipDiskNgJitterKey missing.key", "missing.key"),
            ("GzipDiskNgJitterKey empty.key", "empty"),
            ("GzipDiskNgJitterKey /", "not a regular file"),
            (
                "<Location /x>\nGzipDiskNgJitterKey good.key\n</Location>",
                "not allowed in <Location>",
            ),
        ],
        &[
            "GzipDiskNgJitter 32 1048576",
            "GzipDiskNgJitter 32 -1",
            "GzipDiskNgJitterKey good.key\nGzipDiskNgJitter 8",
            "<VirtualHost 127.0.0.1:1>\nGzipDiskNgJitterKey good.key\n</VirtualHost>",
        ],
    );
}

/// A one-shot crate stream whose last byte is `0x03` by chance, inside
/// its last meta-block: padding before it would break the stream.
fn chance_0x03_brotli() -> (Vec<u8>, Vec<u8>) {
    for seed in 0..20_000u64 {
        let d = page(3000 + (seed % 700) as usize, seed);
        let b = brotli_one_shot(&d, 11, 22);
        if b.last() == Some(&jitter::BROTLI_LAST)
            && jitter::prove_brotli(|o| &b[o as usize..], b.len() as u64, 1 << 20).is_err()
        {
            return (d, b);
        }
    }
    panic!("no chance 0x03 ending found");
}

#[test]
fn foreign_brotli_ending_on_a_block_boundary_is_padded() {
    // Bytes that do not compress: brotli stores them in uncompressed
    // meta-blocks, which even a one-shot encoder ends with a separate `0x03`.
    let raw = noise(20_000, 0x2545_f491_4f6c_dd1d);
    let a = Apache::start(jitter_under_content(32), |d| {
        site(d);
        let dir = d.join("content");
        fs::write(dir.join("noise.bin"), &raw).unwrap();
        // The crate, one-shot (no flush), as most encoders write.
        fs::write(dir.join("noise2.bin.br"), brotli_one_shot(&raw, 11, 22)).unwrap();
        // The brotli CLI's one-shot stream (scripts/lib.sh installs it).
        let st = Command::new("brotli")
            .args(["-q", "11", "-k", "-f"])
            .arg(dir.join("noise.bin"))
            .status()
            .expect("the brotli CLI");
        assert!(st.success());
    });
    for name in ["noise2.bin", "noise.bin"] {
        let sib = fs::read(a.docroot.join(format!("content/{name}.br"))).unwrap();
        assert_eq!(sib.last(), Some(&jitter::BROTLI_LAST), "{name}");
        let r = a.get(&format!("/content/{name}"), Some("br"));
        assert_eq!(r.header("Content-Encoding"), Some("br"), "{name}");
        let pad = pad_of("br", &sib, (r.body.len() - sib.len()) as u64);
        assert!(pad.is_some(), "{name}: padded");
        assert_eq!(etag_pad(r.header("ETag").unwrap()), pad);
        assert_eq!(
            oracle_decoded(Some("br"), &r.body),
            raw,
            "{name}: brotli -dc"
        );
        let cc = a.request(
            &format!("/content/{name}"),
            &["--compressed", "-H", "Accept-Encoding: br"],
        );
        assert_eq!(
            (cc.exit, cc.body == raw),
            (0, true),
            "{name}: curl --compressed"
        );
    }
    a.assert_no_crash();
}

#[test]
fn brotli_ending_in_0x03_by_chance_is_served_unpadded() {
    let (data, chance) = chance_0x03_brotli();
    let a = Apache::start(jitter_under_content(32), |d| {
        fs::create_dir_all(d.join("content")).unwrap();
        fs::write(d.join("content/chance.html.br"), &chance).unwrap();
    });
    // The proof fails once and is remembered; each response is the file
    // as is, with one debug line.
    for _ in 0..2 {
        let r = a.get("/content/chance.html", Some("br"));
        assert_eq!(r.body, chance);
        assert_eq!(oracle_decoded(Some("br"), &r.body), data);
    }
    let log = a.module_log().join("\n");
    assert_eq!(
        log.matches("without jitter: BrotliUnproven").count(),
        2,
        "{log}"
    );
    a.assert_no_crash();
}

/// Without `GzipDiskNgJitterKey`, the start-up key is made each time the
/// configuration is read: the padding is the same within a generation and
/// another after a graceful restart (as documented). A key file's padding
/// survives it.
#[test]
fn graceful_restart_makes_a_new_startup_key_and_keeps_a_key_files() {
    let a = keyed_server(Mpm::Event, "", "", None);
    let before = fingerprint(&a);
    assert_eq!(fingerprint(&a), before, "one key per generation");
    graceful(&a);
    let after = fingerprint(&a);
    assert!(before.iter().zip(&after).filter(|(x, y)| x != y).count() > 3);
    assert_eq!(fingerprint(&a), after);
    a.assert_no_crash();
    let keyed = keyed_server(
        Mpm::Event,
        "GzipDiskNgJitterKey jitter.key",
        "",
        Some(b"k1"),
    );
    let before = fingerprint(&keyed);
    graceful(&keyed);
    assert_eq!(fingerprint(&keyed), before, "a key file's padding");
    keyed.assert_no_crash();
}

/// `.br` files written by the publish tool end in an empty last meta-block
/// at any bit: the module pads them over HTTP/1.1 and h2c, every client
/// decoder reads the result, and ranges address the padded bytes,
/// including those rebuilt in memory around the data's last byte.
#[test]
fn tool_brotli_is_padded_over_http1_and_h2c() {
    let pages: Vec<Vec<u8>> = (0..8u64)
        .map(|i| page(3_000 + 977 * i as usize, 40 + i))
        .collect();
    let a = Apache::start(jitter_under_content(300), |d| {
        for (i, p) in pages.iter().enumerate() {
            fs::create_dir_all(d.join("content")).unwrap();
            fs::write(d.join(format!("content/t{i}.html.br")), brotli(p)).unwrap();
        }
    });
    let mut unaligned = 0;
    for (i, orig) in pages.iter().enumerate() {
        let path = format!("/content/t{i}.html");
        let sib = fs::read(a.docroot.join(format!("content/t{i}.html.br"))).unwrap();
        unaligned += usize::from(!br_data_end(&sib).is_multiple_of(8));
        for proto in ["--http1.1", "--http2-prior-knowledge"] {
            check_padded_br(&a, &path, &sib, orig, proto);
        }
    }
    assert!(unaligned >= 4, "{unaligned} of 8 tool streams unaligned");
    a.assert_no_crash();
}

/// One tool `.br` over `proto`: padded as the ETag says, decoded alike by
/// every client decoder, with ranges over the padded bytes.
fn check_padded_br(a: &Apache, path: &str, sib: &[u8], orig: &[u8], proto: &str) {
    let ae = ["-H", "Accept-Encoding: br", proto];
    let r = a.request(path, &ae);
    let want_version = if proto == "--http1.1" {
        "HTTP/1.1"
    } else {
        "HTTP/2"
    };
    assert_eq!((r.status, r.http_version.as_str()), (200, want_version));
    let pad = etag_pad(r.header("ETag").unwrap()).unwrap();
    assert!((1..=300).contains(&pad), "{path}");
    let added = r.body.len() as u64 - sib.len() as u64;
    assert_eq!(added, pad + framing("br", sib, pad), "{path}");
    assert_eq!(
        oracle_decoded(Some("br"), &r.body),
        orig,
        "{path}: brotli -dc"
    );
    assert_eq!(python_decode("br", &r.body), orig, "{path}: python brotli");
    let cc = a.request(path, &[&ae[..], &["--compressed"]].concat());
    assert_eq!(
        (cc.exit, &cc.body[..]),
        (0, orig),
        "{path}: curl --compressed"
    );
    // Ranges: the start, the rebuilt byte, across the seam, the padding;
    // under If-Range naming the representation, whose ETag is strong
    // once its files are a second old.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let tagged = a.request(path, &ae);
    assert_eq!(tagged.body, r.body, "{path}");
    let seam = br_data_end(sib) / 8;
    let n = r.body.len() as u64;
    for (from, to) in [
        (0, 99),
        (seam - 3, (seam + 5).min(n - 1)),
        (seam, n - 1),
        (n - 20, n - 1),
    ] {
        let range = format!("{from}-{to}");
        let ir = format!("If-Range: {}", tagged.header("ETag").unwrap());
        let rr = a.request(path, &[&ae[..], &["-H", &ir, "-r", &range]].concat());
        assert_eq!(rr.status, 206, "{path} {range} {ir}");
        assert_eq!(
            rr.body,
            &r.body[from as usize..=to as usize],
            "{path} {range}"
        );
    }
}

/// A file republished under the same name (new content and mtime, the
/// same inode) gets the padding length of its new version: the one a
/// fresh server with the same key gives those bytes, not the remembered
/// length of the old version.
#[test]
fn republished_file_gets_a_new_padding_length() {
    let (_keys, k) = key_files(&[b"a fixed key for republish checks"]);
    let key = &k[0];
    let server = format!("GzipDiskNgJitterKey {}\nGzipDiskNgJitter 32", key.display());
    let versions: Vec<Vec<u8>> = (0..6)
        .map(|i| page(20_000 + 37 * i, 50 + i as u64))
        .collect();
    let mut o = one_child();
    o.server += &format!("\n{server}");
    let a = Apache::start(o, |d| {
        for c in [".gz", ".zst"] {
            let name = format!("x.html{c}");
            fs::write(
                d.join(&name),
                if c == ".gz" {
                    gzip(&versions[0])
                } else {
                    zstd(&versions[0])
                },
            )
            .unwrap();
            set_mtime(
                &d.join(name),
                std::time::SystemTime::now() - std::time::Duration::from_secs(1000),
            );
        }
    });
    let reference = Apache::start(
        Options {
            server,
            ..Default::default()
        },
        |d| {
            for (i, v) in versions.iter().enumerate() {
                publish(d, &format!("r{i}.html"), v, false, &[".gz", ".zst"]);
            }
        },
    );
    for c in ["gzip", "zstd"] {
        let mut pads = vec![];
        let mut etags = vec![];
        for (i, v) in versions.iter().enumerate() {
            if i > 0 {
                // In place: the same inode, new bytes, a later mtime.
                let p = a.docroot.join(format!("x.html.{}", suffix(c)));
                let ino = std::os::unix::fs::MetadataExt::ino(&fs::metadata(&p).unwrap());
                let bytes = if c == "gzip" { gzip(v) } else { zstd(v) };
                fs::OpenOptions::new()
                    .write(true)
                    .truncate(true)
                    .open(&p)
                    .unwrap()
                    .write_all(&bytes)
                    .unwrap();
                set_mtime(
                    &p,
                    std::time::SystemTime::now()
                        - std::time::Duration::from_secs(1000 - 10 * i as u64),
                );
                assert_eq!(
                    std::os::unix::fs::MetadataExt::ino(&fs::metadata(&p).unwrap()),
                    ino
                );
            }
            let r = a.get("/x.html", Some(c));
            assert_eq!((r.status, r.exit), (200, 0), "{c} v{i}");
            let want = reference.get(&format!("/r{i}.html"), Some(c));
            let etag = r.header("ETag").unwrap().to_owned();
            let pad = etag_pad(&etag).unwrap();
            assert_eq!(
                Some(pad),
                etag_pad(want.header("ETag").unwrap()),
                "{c} v{i}"
            );
            assert!(
                r.body == want.body,
                "{c} v{i}: the new version's padded bytes"
            );
            assert_eq!(oracle_decoded(Some(c), &r.body), *v);
            pads.push(pad);
            etags.push(etag);
        }
        let mut uniq = etags.clone();
        uniq.sort();
        uniq.dedup();
        assert_eq!(
            uniq.len(),
            etags.len(),
            "{c}: a new ETag per version: {etags:?}"
        );
        assert!(pads.iter().any(|&p| p != pads[0]), "{c}: {pads:?}");
    }
}

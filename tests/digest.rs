//! RFC 9530 integrity fields, checked against an independent SHA-256 /
//! SHA-512 of the bytes each representation is made of: every coding of
//! a published page, the original, an on-demand cached copy; the same
//! `Repr-Digest` on 200, 206, HEAD and 304; `Want-Repr-Digest` and
//! `Want-Content-Digest` honoured; a file rewritten in place gets its new
//! content's digest; a sibling decoded on the fly carries its content's
//! digest once a decode of it has run to its end.

mod common;

use base64::Engine;
use common::*;
use sha2::{Digest, Sha256, Sha512};
use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

const PAGE: &str = "/p.html";

fn sha256(b: &[u8]) -> String {
    let d = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(b));
    format!("sha-256=:{d}:")
}

fn sha512(b: &[u8]) -> String {
    let d = base64::engine::general_purpose::STANDARD.encode(Sha512::digest(b));
    format!("sha-512=:{d}:")
}

fn site(d: &Path) {
    publish(d, "p.html", &page(90_000, 3), true, &[".gz", ".br", ".zst"]);
}

fn start() -> Apache {
    Apache::start(
        Options {
            dir: "SetHandler gzip-disk-ng".into(),
            ..Default::default()
        },
        site,
    )
}

/// The bytes of the file a representation is sent from.
fn bytes_of(a: &Apache, coding: Option<&str>) -> Vec<u8> {
    let name = match coding {
        None => "p.html",
        Some("gzip") => "p.html.gz",
        Some("br") => "p.html.br",
        Some("zstd") => "p.html.zst",
        Some(other) => panic!("{other}"),
    };
    fs::read(a.docroot.join(name)).unwrap()
}

#[test]
fn repr_digest_is_the_digest_of_each_representation() {
    let a = start();
    for ae in ["gzip", "br", "zstd", "identity"] {
        let h = format!("Accept-Encoding: {ae}");
        let r = a.request(PAGE, &["-H", &h]);
        assert_eq!(r.status, 200, "{ae}");
        let want = sha256(&bytes_of(&a, r.coding()));
        assert_eq!(r.body, bytes_of(&a, r.coding()), "{ae}");
        assert_eq!(r.header("Repr-Digest"), Some(want.as_str()), "{ae}");
        assert_eq!(r.header("Content-Digest"), None, "{ae}: not asked for");
        // HEAD and 304: the same field.
        let head = a.request(PAGE, &["-I", "-H", &h]);
        assert_eq!(head.header("Repr-Digest"), Some(want.as_str()), "{ae} HEAD");
        let inm = format!("If-None-Match: {}", r.header("ETag").unwrap());
        let nm = a.request(PAGE, &["-H", &h, "-H", &inm]);
        assert_eq!(nm.status, 304, "{ae}");
        assert_eq!(nm.header("Repr-Digest"), Some(want.as_str()), "{ae} 304");
        // A range: the whole representation's digest, no Content-Digest.
        let ir = format!("If-Range: {}", r.header("ETag").unwrap());
        let args = [
            "-H",
            &h,
            "-H",
            &ir,
            "-H",
            "Want-Content-Digest: sha-256",
            "-r",
            "10-99",
        ];
        let part = a.request(PAGE, &args);
        assert_eq!(part.status, 206, "{ae}");
        assert_eq!(part.header("Repr-Digest"), Some(want.as_str()), "{ae} 206");
        assert_eq!(part.header("Content-Digest"), None, "{ae} 206");
    }
    a.assert_no_crash();
}

#[test]
fn want_fields_choose_the_algorithm_and_ask_for_content_digest() {
    let a = start();
    let gz = bytes_of(&a, Some("gzip"));
    let ae = "Accept-Encoding: gzip";
    let r = a.request(
        PAGE,
        &["-H", ae, "-H", "Want-Repr-Digest: sha-256=3, sha-512=10"],
    );
    assert_eq!(r.header("Repr-Digest"), Some(sha512(&gz).as_str()));
    let r = a.request(
        PAGE,
        &["-H", ae, "-H", "Want-Repr-Digest: sha-512=1, sha-256=9"],
    );
    assert_eq!(r.header("Repr-Digest"), Some(sha256(&gz).as_str()));
    let r = a.request(
        PAGE,
        &["-H", ae, "-H", "Want-Repr-Digest: sha-256=0, sha-512=0"],
    );
    assert_eq!(
        r.header("Repr-Digest"),
        None,
        "no supported algorithm wanted"
    );
    let r = a.request(PAGE, &["-H", ae, "-H", "Want-Content-Digest: sha-512=5"]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Digest"), Some(sha512(&r.body).as_str()));
    assert_eq!(r.header("Repr-Digest"), Some(sha256(&gz).as_str()));
    // HEAD has no content: no Content-Digest.
    let r = a.request(
        PAGE,
        &["-I", "-H", ae, "-H", "Want-Content-Digest: sha-256"],
    );
    assert_eq!(r.header("Content-Digest"), None);
    a.assert_no_crash();
}

#[test]
fn a_file_rewritten_in_place_gets_its_new_digest() {
    let a = start();
    let ae = "Accept-Encoding: gzip";
    let before = a.request(PAGE, &["-H", ae]);
    assert_eq!(
        before.header("Repr-Digest"),
        Some(sha256(&bytes_of(&a, Some("gzip"))).as_str())
    );
    // Same size, other bytes, the same mtime as the original: a new
    // version by its change time only.
    let p = a.docroot.join("p.html.gz");
    let mtime = fs::metadata(&p).unwrap().modified().unwrap();
    let mut gz = fs::read(&p).unwrap();
    // In the header's MTIME: the bytes change, the size and the content
    // it decodes to do not (a changed CRC would be a broken sibling).
    gz[4] ^= 0xff;
    std::thread::sleep(Duration::from_millis(20));
    fs::write(&p, &gz).unwrap();
    set_mtime(&p, mtime);
    let after = a.request(PAGE, &["-H", ae]);
    assert_eq!(after.body, gz);
    assert_eq!(after.header("Repr-Digest"), Some(sha256(&gz).as_str()));
    assert_ne!(after.header("Repr-Digest"), before.header("Repr-Digest"));
    a.assert_no_crash();
}

#[test]
fn a_cached_copy_carries_its_own_digest() {
    let data = page(80_000, 9);
    let a = Apache::start(
        Options {
            dir: "SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On".into(),
            server: "GzipDiskNgCacheRoot {docroot}/../cache".into(),
            ..Default::default()
        },
        |d| {
            fs::write(d.join("c.html"), &data).unwrap();
            set_mtime(
                &d.join("c.html"),
                SystemTime::now() - Duration::from_secs(100),
            );
            make_cache_root(&d.join("../cache"));
        },
    );
    let mut cached = None;
    wait_for("a cached br copy", || {
        let r = a.get("/c.html", Some("br"));
        let hit = r.coding() == Some("br");
        if hit {
            cached = Some(r);
        }
        hit
    });
    let r = cached.unwrap();
    assert_eq!(r.decoded(), data);
    assert_eq!(r.header("Repr-Digest"), Some(sha256(&r.body).as_str()));
    let original = a.get("/c.html", None);
    assert_eq!(original.header("Repr-Digest"), Some(sha256(&data).as_str()));
    a.assert_no_crash();
}

/// A sibling decoded on the fly (no original beside it): the first decode
/// that runs to its end learns the content's digest, and later responses
/// (200, HEAD, 304) carry it, in the algorithm each asks for. A response
/// never carries a wrong one.
#[test]
fn a_decoded_sibling_carries_its_contents_digest_once_learned() {
    let data = page(120_000, 5);
    let a = Apache::start(Options::default(), |d| {
        publish(d, "only.html", &data, false, &[".gz", ".zst"]);
    });
    for (want, expect) in [
        (None, sha256(&data)),
        (Some("Want-Repr-Digest: sha-512=9"), sha512(&data)),
    ] {
        let mut args = vec!["-H", "Accept-Encoding: identity"];
        args.extend(want.iter().flat_map(|w| ["-H", *w]));
        // Each child learns from its own first decode.
        let mut seen = None;
        for _ in 0..40 {
            let r = a.request("/only.html", &args);
            assert_eq!((r.status, r.coding()), (200, None));
            assert_eq!(r.body, data, "decoded whole");
            if let Some(d) = r.header("Repr-Digest") {
                assert_eq!(d, expect, "{want:?}");
                seen = Some(r);
                break;
            }
        }
        let r = seen.unwrap_or_else(|| panic!("no Repr-Digest in 40 decodes ({want:?})"));
        let head: Vec<&str> = ["-I"].into_iter().chain(args.iter().copied()).collect();
        let tag = format!("If-None-Match: {}", r.header("ETag").expect("ETag"));
        // HEAD and 304 carry it too, from a child that has decoded once
        // (another may not know it yet): present within 40 requests.
        for extra in [head, [args.clone(), vec!["-H", &tag]].concat()] {
            let r = (0..40)
                .map(|_| a.request("/only.html", &extra))
                .find(|r| r.header("Repr-Digest").is_some())
                .unwrap_or_else(|| panic!("no Repr-Digest in 40 requests ({extra:?})"));
            assert_eq!(r.header("Repr-Digest"), Some(expect.as_str()), "{extra:?}");
        }
    }
    let r = (0..40)
        .map(|_| {
            a.request(
                "/only.html",
                &[
                    "-H",
                    "Accept-Encoding: identity",
                    "-H",
                    "Want-Content-Digest: sha-256",
                ],
            )
        })
        .find(|r| r.header("Content-Digest").is_some())
        .expect("Content-Digest once learned");
    assert_eq!(r.header("Content-Digest"), Some(sha256(&data).as_str()));
    a.assert_no_crash();
}

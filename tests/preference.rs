//! The default preference against a real Apache: among the codings a
//! client accepts at its best q, the smallest representation (sibling,
//! on-demand copy or delta) is sent, ties by decoding speed; an admin's
//! `GzipDiskNgEncodings` keeps its fixed order; q-values still win; the
//! choice for a file version is the same on every request, with the
//! validators, ranges and HEAD of the representation sent.

mod common;

use common::*;
use gdn_core::coding::Coding;
use gdn_core::dictionary::{delta_file_name, hash, DeltaCoding};
use gdn_core::encode::Levels;
use sha2::{Digest, Sha256};
use std::fs;
use std::path::Path;

/// What a browser sends.
const BROWSER: &str = "gzip, deflate, br, zstd";

/// The publish tool's default levels, but `coding` at its fastest: that
/// coding's sibling comes out larger than the others.
fn weak(coding: Coding) -> Levels {
    let mut l = Levels::default();
    match coding {
        Coding::Zstd => l.zstd = 1,
        Coding::Br => l.brotli_quality = 1,
        Coding::Gzip => l.gzip = 1,
    }
    l
}

/// `name` and its three siblings, encoded with `levels`; the siblings'
/// bytes by coding.
fn publish_with(d: &Path, name: &str, data: &[u8], levels: &Levels) -> [Vec<u8>; 3] {
    put(d, name, data);
    let t = mtime(&d.join(name));
    Coding::ALL.map(|c| {
        let bytes = encoded_with(c, levels, data);
        let p = sibling(&d.join(name), c.suffixes()[0]);
        fs::write(&p, &bytes).unwrap();
        set_mtime(&p, t);
        bytes
    })
}

/// Two pages: on `br.html` the brotli sibling is the smallest, on
/// `zstd.html` the zstd one (checked, so the test cannot pass by chance).
struct Site {
    br: [Vec<u8>; 3],
    zstd: [Vec<u8>; 3],
}

fn site(d: &Path) -> Site {
    let data = page(40_000, 7);
    let br = publish_with(d, "br.html", &data, &weak(Coding::Zstd));
    let mut zl = weak(Coding::Br);
    zl.gzip = 1;
    let zstd = publish_with(d, "zstd.html", &data, &zl);
    let (z, b, g) = (
        Coding::Zstd.index(),
        Coding::Br.index(),
        Coding::Gzip.index(),
    );
    assert!(br[b].len() < br[z].len() && br[b].len() < br[g].len());
    assert!(zstd[z].len() < zstd[b].len() && zstd[z].len() < zstd[g].len());
    Site { br, zstd }
}

fn start(opts: Options) -> (Apache, Site) {
    let mut s = None;
    let a = Apache::start(opts, |d| s = Some(site(d)));
    (a, s.unwrap())
}

#[test]
fn a_browser_gets_the_smallest_sibling_every_time() {
    let (a, s) = start(Options::default());
    for (path, coding, bytes) in [
        ("/br.html", "br", &s.br[Coding::Br.index()]),
        ("/zstd.html", "zstd", &s.zstd[Coding::Zstd.index()]),
    ] {
        // The first request learns the sizes, the later ones remember them.
        for _ in 0..3 {
            let r = a.get(path, Some(BROWSER));
            assert_eq!((r.status, r.coding()), (200, Some(coding)), "{path}");
            assert!(r.body == *bytes, "{path}: the sibling as published");
            assert!(r.tokens("Vary").iter().any(|t| t == "Accept-Encoding"));
        }
        let r = a.get(path, Some(BROWSER));
        let etag = r.header("ETag").expect("ETag").to_string();
        assert!(etag.ends_with(&format!("-{coding}\"")), "{etag}");
        let ae = format!("Accept-Encoding: {BROWSER}");
        let inm = format!("If-None-Match: {etag}");
        assert_eq!(a.request(path, &["-H", &ae, "-H", &inm]).status, 304);
        let if_range = format!("If-Range: {etag}");
        let r = a.request(
            path,
            &["-H", &ae, "-H", "Range: bytes=0-9", "-H", &if_range],
        );
        assert_eq!((r.status, r.body.as_slice()), (206, &bytes[..10]));
        let r = a.request(path, &["-H", &ae, "-I"]);
        assert_eq!(r.coding(), Some(coding));
        assert_eq!(
            r.header("Content-Length"),
            Some(bytes.len().to_string().as_str())
        );
        assert!(a.last_access_ends_with(&format!("{coding} precompressed")));
    }
    a.assert_no_crash();
}

#[test]
fn q_values_win_over_sizes() {
    let (a, s) = start(Options::default());
    let r = a.get("/br.html", Some("br;q=0.5, zstd"));
    assert_eq!(r.coding(), Some("zstd"));
    assert!(r.body == s.br[Coding::Zstd.index()]);
    // Among the lower q, the smallest again.
    let r = a.get(
        "/br.html",
        Some("identity;q=0, br;q=0.5, zstd;q=0.5, gzip;q=0.1"),
    );
    assert_eq!(r.coding(), Some("br"));
    // One coding named: no size matters.
    assert_eq!(a.get("/zstd.html", Some("gzip")).coding(), Some("gzip"));
}

#[test]
fn an_admins_order_is_fixed() {
    let opts = Options {
        server: "<Location /fixed>\nGzipDiskNgEncodings zstd br gzip\n</Location>\n\
                 Alias /fixed {docroot}"
            .into(),
        modules: vec!["alias"],
        ..Options::default()
    };
    let (a, _) = start(opts);
    for _ in 0..2 {
        assert_eq!(
            a.get("/fixed/br.html", Some(BROWSER)).coding(),
            Some("zstd")
        );
        assert_eq!(a.get("/br.html", Some(BROWSER)).coding(), Some("br"));
    }
}

#[test]
fn a_sibling_replaced_beside_an_unchanged_original_is_ranked_again() {
    let (a, s) = start(one_child());
    assert_eq!(a.get("/br.html", Some(BROWSER)).coding(), Some("br"));
    // Republished with a weaker brotli: larger than the zstd sibling now.
    let docroot = a.docroot.clone();
    let orig = docroot.join("br.html");
    let data = fs::read(&orig).unwrap();
    let bigger = encoded_with(Coding::Br, &weak(Coding::Br), &data);
    assert!(bigger.len() > s.br[Coding::Zstd.index()].len());
    let p = sibling(&orig, ".br");
    fs::write(&p, &bigger).unwrap();
    set_mtime(&p, mtime(&orig));
    // The remembered order still says br; what goes out is the new br,
    // whole and with its own validators.
    let r = a.get("/br.html", Some(BROWSER));
    assert_eq!(r.coding(), Some("br"));
    assert!(r.body == bigger);
    // Seen to differ, the sizes are learned again: the smallest now.
    let mut now = s.br.clone();
    now[Coding::Br.index()] = bigger;
    let smallest = |now: &[Vec<u8>; 3], gone: &[Coding]| {
        Coding::ALL
            .into_iter()
            .filter(|c| !gone.contains(c))
            .min_by_key(|c| now[c.index()].len())
            .unwrap()
    };
    let first = smallest(&now, &[]);
    assert_ne!(first, Coding::Br);
    for _ in 0..2 {
        let r = a.get("/br.html", Some(BROWSER));
        assert_eq!(r.coding(), Some(first.token()));
        assert!(r.body == now[first.index()]);
    }
    // A sibling gone is passed over as before.
    fs::remove_file(sibling(&orig, first.suffixes()[0])).unwrap();
    let next = smallest(&now, &[first]);
    for _ in 0..2 {
        assert_eq!(
            a.get("/br.html", Some(BROWSER)).coding(),
            Some(next.token())
        );
    }
    // A stale one too: never served, whatever its size.
    let z = sibling(&docroot.join("zstd.html"), ".zst");
    set_mtime(
        &z,
        mtime(&docroot.join("zstd.html")) - std::time::Duration::from_secs(10),
    );
    let r = a.get("/zstd.html", Some(BROWSER));
    assert_ne!(r.coding(), Some("zstd"));
    a.assert_no_crash();
}

#[test]
fn on_demand_copies_are_ranked_with_the_siblings() {
    let data = page(120_000, 31);
    let weak_zstd = encoded_with(Coding::Zstd, &weak(Coding::Zstd), &data);
    let opts = Options {
        dir: "SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On".into(),
        server: "GzipDiskNgCacheRoot {docroot}/../cache".into(),
        ..Options::default()
    };
    let a = Apache::start(opts, |d| {
        put(d, "page.html", &data);
        let p = d.join("page.html.zst");
        fs::write(&p, &weak_zstd).unwrap();
        set_mtime(&p, mtime(&d.join("page.html")));
        make_cache_root(&d.join("../cache"));
    });
    let br_copy = encoded(Coding::Br, &data);
    assert!(br_copy.len() < weak_zstd.len());
    // The first request gets the sibling and asks for the br copy; once
    // it is made (fast, then again at the best level once served), it is
    // the smallest.
    wait_for("the br copy ranked first", || {
        let r = a.get("/page.html", Some(BROWSER));
        r.coding() == Some("br") && r.body == br_copy
    });
    let r = a.get("/page.html", Some(BROWSER));
    assert!(r.body == br_copy, "the publish tool's bytes");
    assert!(a.last_access_ends_with("br cached"));
    // Only zstd accepted: its sibling, as before.
    assert!(a.get("/page.html", Some("zstd")).body == weak_zstd);
    a.assert_no_crash();
}

#[test]
fn a_delta_is_sent_when_it_is_the_smallest() {
    let data = page(60_000, 41);
    let mut near = data.clone();
    near.truncate(59_000);
    let far = noise(60_000, 42);
    let mut deltas = vec![];
    let a = Apache::start(Options::default(), |d| {
        publish(d, "app.js", &data, true, &[".br", ".gz"]);
        let t = mtime(&d.join("app.js"));
        for (dict, level) in [(&near, "-19"), (&far, "-1")] {
            let body = dcz_cli(dict, &data, level);
            let p = d.join(delta_file_name("app.js", &hash(dict), DeltaCoding::Dcz));
            fs::write(&p, &body).unwrap();
            set_mtime(&p, t);
            deltas.push(body);
        }
    });
    let br = fs::read(a.docroot.join("app.js.br")).unwrap();
    assert!(deltas[0].len() < br.len() && deltas[1].len() > br.len());
    let ask = |dict: &[u8]| {
        let hash = Sha256::digest(dict);
        let announced = sfv::ItemSerializer::new().bare_item(&hash[..]).finish();
        let ae = format!("Accept-Encoding: {BROWSER}, dcb, dcz");
        let ad = format!("Available-Dictionary: {announced}");
        a.request("/app.js", &["-H", &ae, "-H", &ad])
    };
    for _ in 0..2 {
        let r = ask(&near);
        assert_eq!(r.coding(), Some("dcz"));
        assert!(r.body == deltas[0]);
        // A delta against an unrelated dictionary is larger than brotli.
        let r = ask(&far);
        assert_eq!(r.coding(), Some("br"));
        assert!(r.body == br);
    }
}

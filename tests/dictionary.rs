//! Dictionary transport (RFC 9842) as the module serves it, against a real
//! Apache: a delta made beside the original is sent, zero-copy, to a client
//! that announces the dictionary and names `dcz`; every other request gets
//! the normal negotiation, as does one whose delta's header names
//! another dictionary.

mod common;

use base64::Engine;
use common::*;
use gdn_core::dictionary::{delta_file_name, hash, DeltaCoding};
use sha2::{Digest, Sha256};
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;

const AE: &str = "gzip, deflate, br, zstd, dcb, dcz";

/// The delta's file name beside `name`.
fn delta_name(name: &str, dictionary: &[u8], coding: DeltaCoding) -> String {
    delta_file_name(name, &hash(dictionary), coding)
}

/// Decodes a dcz body with the zstd CLI and the dictionary.
fn undcz(dictionary: &[u8], body: &[u8]) -> Vec<u8> {
    oracle_decoded_delta("dcz", dictionary, body)
}

/// Two versions of a script, the second published with its siblings and a
/// delta against the first.
struct Site {
    v1: Vec<u8>,
    v2: Vec<u8>,
    delta: Vec<u8>,
}

fn site(docroot: &Path) -> Site {
    let v1 = page(60_000, 1);
    let mut v2 = v1.clone();
    v2.splice(30_000..30_010, b"version 2!".iter().copied());
    v2.extend_from_slice(b"/* appended in version 2 */\n");
    publish(docroot, "app.js", &v2, true, &[".gz", ".br"]);
    let delta = dcz_cli(&v1, &v2, "-19");
    let p = docroot.join(delta_name("app.js", &v1, DeltaCoding::Dcz));
    fs::write(&p, &delta).unwrap();
    set_mtime(
        &p,
        fs::metadata(docroot.join("app.js"))
            .unwrap()
            .modified()
            .unwrap(),
    );
    Site { v1, v2, delta }
}

fn with_dictionary(
    a: &Apache,
    path: &str,
    dictionary: &[u8],
    ae: &str,
    extra: &[&str],
) -> Response {
    let mut args = vec![
        "-H".to_string(),
        format!("Accept-Encoding: {ae}"),
        "-H".to_string(),
        format!("Available-Dictionary: {}", announce(dictionary)),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    curl(&a.url(path), &args)
}

#[test]
fn delta_is_served_like_a_sibling() {
    let mut s = None;
    let a = Apache::start(Options::default(), |d| s = Some(site(d)));
    let s = s.unwrap();
    let r = with_dictionary(&a, "/app.js", &s.v1, AE, &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Encoding"), Some("dcz"));
    assert_eq!(r.body, s.delta, "the file as published");
    assert_eq!(undcz(&s.v1, &r.body), s.v2);
    assert!(s.delta.len() * 10 < s.v2.len(), "a delta, not a whole file");
    // RFC 9530: the digest of the delta's bytes, the representation sent.
    let digest = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(&s.delta));
    let want = format!("sha-256=:{digest}:");
    assert_eq!(r.header("Repr-Digest"), Some(want.as_str()));
    let vary = r.tokens("Vary");
    assert!(
        vary.iter()
            .any(|t| t.eq_ignore_ascii_case("Accept-Encoding")),
        "{vary:?}"
    );
    assert!(
        vary.iter()
            .any(|t| t.eq_ignore_ascii_case("Available-Dictionary")),
        "{vary:?}"
    );
    assert_eq!(
        r.header("Content-Length"),
        Some(s.delta.len().to_string().as_str())
    );
    assert_eq!(r.header("Mod-Gzip-Disk-Ng"), Some(":-)"));
    assert!(r.header("Last-Modified").is_some());
    let etag = r.header("ETag").unwrap().to_owned();
    assert!(
        etag.ends_with("-dcz\"") && !etag.starts_with("W/"),
        "{etag}"
    );
    assert!(
        a.last_access_ends_with("200 dcz precompressed"),
        "{}",
        a.access_log()
    );
    let gz = a.get("/app.js", Some(AE));
    assert_eq!(gz.header("Content-Encoding"), Some("br"));
    assert_ne!(
        gz.header("ETag"),
        Some(etag.as_str()),
        "an ETag per representation"
    );

    let inm = format!("If-None-Match: {etag}");
    let r = with_dictionary(&a, "/app.js", &s.v1, AE, &["-H", &inm]);
    assert_eq!(r.status, 304);
    let r = with_dictionary(&a, "/app.js", &s.v1, AE, &["-H", "Range: bytes=0-39"]);
    assert_eq!(r.status, 200, "a Range without If-Range: the whole delta");
    let if_range = format!("If-Range: {etag}");
    let r = with_dictionary(
        &a,
        "/app.js",
        &s.v1,
        AE,
        &["-H", "Range: bytes=0-39", "-H", &if_range],
    );
    assert_eq!(r.status, 206);
    assert_eq!(r.body, s.delta[..40]);
    let announced = announce(&s.v1);
    let h = raw_request(
        &a,
        "HEAD",
        "/app.js",
        &[
            ("Accept-Encoding", AE.as_bytes()),
            ("Available-Dictionary", announced.as_bytes()),
        ],
    );
    assert_eq!(h.status, 200);
    assert_eq!(h.header("Content-Encoding"), Some("dcz"));
    assert!(h.after_head.is_empty(), "HEAD sent a body");
    assert_eq!(
        h.header("Content-Length"),
        Some(s.delta.len().to_string().as_str())
    );
    a.assert_no_crash();
}

#[test]
fn anything_else_gets_the_normal_negotiation() {
    let mut s = None;
    let a = Apache::start(Options::default(), |d| s = Some(site(d)));
    let s = s.unwrap();
    let other = page(1000, 99);
    // Vary names Available-Dictionary where it was read: a request that
    // names a dictionary coding.
    for (ae, dictionary, read, why) in [
        ("gzip, br, dcb, dcz", &other, true, "unknown hash"),
        (
            "gzip, br, dcz;q=0, dcb",
            &s.v1,
            true,
            "dcz;q=0, no dcb delta",
        ),
        ("gzip, br, dcz;q=0", &s.v1, false, "dcz;q=0"),
        ("*", &s.v1, false, "only *"),
        ("gzip, br", &s.v1, false, "dcz not named"),
    ] {
        let r = with_dictionary(&a, "/app.js", dictionary, ae, &[]);
        assert_eq!(r.status, 200, "{why}");
        assert_eq!(r.header("Content-Encoding"), Some("br"), "{why}");
        let varies = r.tokens("Vary").iter().any(|t| t == "Available-Dictionary");
        assert_eq!(varies, read, "{why}");
    }
    for bad in ["garbage", ":AAAA:", "", ":!!!!:", "sha-256=:AAAA:"] {
        let r = a.request(
            "/app.js",
            &[
                "-H",
                &format!("Accept-Encoding: {AE}"),
                "-H",
                &format!("Available-Dictionary: {bad}"),
            ],
        );
        assert_eq!(r.status, 200, "{bad}");
        assert_eq!(r.header("Content-Encoding"), Some("br"), "{bad}");
    }
    // No announcement: the normal answer, which a client announcing a
    // dictionary would not get, so it varies too.
    let r = a.get("/app.js", Some(AE));
    assert_eq!(r.header("Content-Encoding"), Some("br"));
    assert!(r.tokens("Vary").iter().any(|t| t == "Available-Dictionary"));
    let r = a.get("/app.js", Some("gzip, br"));
    assert!(!r.tokens("Vary").iter().any(|t| t == "Available-Dictionary"));
    let r = a.get("/app.js", None);
    assert_eq!(r.body, s.v2);
    a.assert_no_crash();
}

#[test]
fn deltas_obey_access_rules_and_freshness() {
    let mut s = None;
    let server = "<Directory {docroot}/denied>\n<FilesMatch \"\\.dcz$\">\nRequire all denied\n</FilesMatch>\n</Directory>\n";
    let a = Apache::start(
        Options {
            server: server.into(),
            ..Default::default()
        },
        |d| {
            s = Some(site(d));
            let sub = d.join("denied");
            fs::create_dir(&sub).unwrap();
            site(&sub);
            let stale = d.join("stale");
            fs::create_dir(&stale).unwrap();
            site(&stale);
            let dz = stale.join(delta_name("app.js", &page(60_000, 1), DeltaCoding::Dcz));
            set_mtime(
                &dz,
                std::time::SystemTime::now() - std::time::Duration::from_secs(5000),
            );
        },
    );
    let s = s.unwrap();
    assert_eq!(
        with_dictionary(&a, "/app.js", &s.v1, AE, &[]).header("Content-Encoding"),
        Some("dcz")
    );
    let r = with_dictionary(&a, "/denied/app.js", &s.v1, AE, &[]);
    assert_eq!(
        r.header("Content-Encoding"),
        Some("br"),
        "the delta's own name is denied"
    );
    let r = with_dictionary(&a, "/stale/app.js", &s.v1, AE, &[]);
    assert_eq!(
        r.header("Content-Encoding"),
        Some("br"),
        "a delta older than its original"
    );
    a.assert_no_crash();
}

#[test]
fn use_as_dictionary_and_the_store() {
    let server = "<Location /self>\nGzipDiskNgUseAsDictionary self v1\n</Location>\n\
                  <Location /assets>\nGzipDiskNgUseAsDictionary /assets/app.*.js\n</Location>\n\
                  Alias /plain {docroot}\n";
    let a = Apache::start(
        Options {
            server: server.into(),
            modules: vec!["alias"],
            ..Default::default()
        },
        |d| {
            for sub in ["self", "assets"] {
                publish(&d.join(sub), "app.1.js", &page(5000, 3), true, &[".gz"]);
            }
            publish(d, "x.js", b"plain", true, &[]);
            let store = d.join(".gzip-disk-ng");
            fs::create_dir(&store).unwrap();
            fs::write(store.join("secret.js"), b"an earlier version").unwrap();
        },
    );
    let r = a.get("/self/app.1.js", Some("gzip"));
    assert_eq!(
        r.header("Use-As-Dictionary"),
        Some(r#"match="/self/app.1.js", id="v1""#)
    );
    assert!(r.tokens("Vary").iter().any(|t| t == "Available-Dictionary"));
    let r = a.get("/self/app.1.js", None);
    assert_eq!(
        r.header("Use-As-Dictionary"),
        Some(r#"match="/self/app.1.js", id="v1""#)
    );
    let r = a.get("/assets/app.1.js", Some("gzip"));
    assert_eq!(
        r.header("Use-As-Dictionary"),
        Some(r#"match="/assets/app.*.js""#)
    );
    let r = a.get("/x.js", None);
    assert_eq!(r.header("Use-As-Dictionary"), None);
    for path in [
        "/.gzip-disk-ng/secret.js",
        "/plain/.gzip-disk-ng/secret.js",
        "/.gzip-disk-ng/",
    ] {
        let r = a.get(path, None);
        assert_eq!(r.status, 404, "{path}");
        assert!(!r.body.windows(7).any(|w| w == b"earlier"), "{path}");
    }
    assert!(a.error_log().contains("dictionary store refused"));
    a.assert_no_crash();
}

/// The earlier version an old release of the publish tool kept in the
/// tree, and what its stored file is called there.
struct OldStore {
    secret: Vec<u8>,
    hex: String,
}

/// Lays out an in-tree store holding an earlier version of `x.html`, and
/// symlinks into it: a directory link, a file link, and the current
/// page's zstd and gzip siblings. Controls beside them take the same
/// shapes without the store: a hash-named file behind a directory link,
/// and a sibling linked elsewhere.
fn old_store_with_links(d: &Path) -> OldStore {
    let mut secret = page(6000, 9);
    secret.extend_from_slice(b"WITHDRAWN earlier version");
    let hex = gdn_core::dictionary::to_hex(&hash(&secret));
    let stored_bytes = zstd::encode_all(&secret[..], 19).unwrap();
    publish(d, "x.html", &page(6000, 10), true, &[]);
    publish(d, "y.html", &page(6000, 11), true, &[]);
    let t = mtime(&d.join("x.html"));
    let versions = d.join(".gzip-disk-ng/versions/x.html");
    fs::create_dir_all(&versions).unwrap();
    let stored = versions.join(format!("{hex}.zst"));
    fs::write(&stored, &stored_bytes).unwrap();
    set_mtime(&stored, t); // As new as the page: not stale as a sibling.
    symlink(d.join(".gzip-disk-ng"), d.join("link")).unwrap();
    symlink(&stored, d.join("old.html")).unwrap();
    symlink(&stored, d.join("x.html.zst")).unwrap();
    symlink(&stored, d.join("x.html.gz")).unwrap();
    fs::create_dir(d.join("plain")).unwrap();
    put(&d.join("plain"), &format!("{hex}.zst"), &stored_bytes);
    symlink(d.join("plain"), d.join("plainlink")).unwrap();
    let y_zst = d.join("plain/y.zst");
    fs::write(&y_zst, zstd::encode_all(&page(6000, 11)[..], 19).unwrap()).unwrap();
    set_mtime(&y_zst, t);
    symlink(&y_zst, d.join("y.html.zst")).unwrap();
    OldStore { secret, hex }
}

/// Lines of the module's log refusing `path` (a docroot-relative path).
fn refusals(a: &Apache, path: &str) -> usize {
    let full = format!("refused: {}/{path}", a.docroot.display());
    a.module_log_about(&full)
        .iter()
        .filter(|l| l.contains(&format!("{full} ")) || l.ends_with(&full))
        .count()
}

#[test]
fn the_old_in_tree_store_is_never_served_through_symlinks() {
    let mut s = None;
    let a = Apache::start(
        Options {
            dir: "SetHandler gzip-disk-ng\nOptions FollowSymLinks".into(),
            ..Default::default()
        },
        |d| s = Some(old_store_with_links(d)),
    );
    let OldStore { secret, hex } = s.unwrap();
    let leaks = |r: &Response| {
        let body = oracle_decode(r.header("Content-Encoding"), &r.body).unwrap_or_default();
        body.windows(9).any(|w| w == b"WITHDRAWN") || r.body.windows(9).any(|w| w == b"WITHDRAWN")
    };
    // Controls: the same shapes outside the store are served.
    let r = a.get(&format!("/plainlink/{hex}.zst"), None);
    assert_eq!(r.status, 200, "a hash-named file behind a directory link");
    assert_eq!(oracle_decoded(Some("zstd"), &r.body), secret);
    let r = a.get("/y.html", Some("zstd"));
    assert_eq!(r.coding(), Some("zstd"), "a sibling linked elsewhere");

    let direct = a.get(&format!("/.gzip-disk-ng/versions/x.html/{hex}.zst"), None);
    assert_eq!(direct.status, 404);
    // (a) A directory link: the stored file, and its name without `.zst`
    // (which the module would answer from the `.zst` as a sibling).
    let via_dir = [
        format!("link/versions/x.html/{hex}.zst"),
        format!("link/versions/x.html/{hex}"),
    ];
    for (path, ae) in via_dir.iter().zip([None, Some("zstd")]) {
        let r = a.get(&format!("/{path}"), ae);
        assert_eq!(r.status, direct.status, "{path}");
        assert!(!leaks(&r), "{path}");
        assert_eq!(refusals(&a, path), 1, "{path}: {:?}", a.module_log());
    }
    // (b) A file link, whatever the client accepts.
    let r = a.get("/old.html", None);
    assert_eq!((r.status, leaks(&r)), (404, false));
    assert_eq!(refusals(&a, "old.html"), 1);
    // (c) Siblings linked into the store give way to the original.
    let r = a.get("/x.html", Some("zstd, gzip"));
    assert_eq!((r.status, r.coding()), (200, None));
    assert!(r.body == page(6000, 10) && !leaks(&r));
    for sib in ["x.html.zst", "x.html.gz"] {
        assert_eq!(refusals(&a, sib), 1, "{sib}: {:?}", a.module_log());
    }
    a.assert_no_crash();
}

/// A `.dcz` whose header names another dictionary than its file name (a
/// delta against v0 renamed for v1) is not sent to a client holding v1:
/// it gets the normal negotiation, and one warning says why.
#[test]
fn a_delta_whose_header_names_another_dictionary_is_not_sent() {
    let mut s = None;
    let v0 = page(60_000, 7);
    let a = Apache::start(one_child(), |d| {
        let site = site(d);
        let p = d.join(delta_name("app.js", &site.v1, DeltaCoding::Dcz));
        let t = mtime(&p);
        fs::write(&p, dcz_cli(&v0, &site.v2, "-19")).unwrap();
        set_mtime(&p, t);
        s = Some(site);
    });
    let s = s.unwrap();
    for _ in 0..3 {
        let r = with_dictionary(&a, "/app.js", &s.v1, AE, &[]);
        assert_eq!(r.status, 200);
        assert_eq!(
            r.header("Content-Encoding"),
            Some("br"),
            "the negotiated sibling"
        );
        assert_eq!(r.decoded(), s.v2);
    }
    // A client holding v0 asks by v0's hash: no file is named for it.
    let r = with_dictionary(&a, "/app.js", &v0, AE, &[]);
    assert_eq!(r.header("Content-Encoding"), Some("br"));
    let warned = a.module_log_about("does not name the dictionary");
    assert_eq!(warned.len(), 1, "{warned:#?}");
    a.assert_no_crash();
}

/// Publishes `v1` of `page.html` and of the group member `assets/app.1.js`,
/// then `v2` of the page and `assets/app.2.js`, with deltas, into `store`.
fn publish_with_store(d: &Path, store: &Path, v1: &[u8], v2: &[u8]) {
    let group = ["--delta-group", "assets/app.*.js", "--delta-versions", "2"];
    let run = |d: &Path| {
        let mut args = vec!["compress".to_string(), "--store".into()];
        args.push(store.display().to_string());
        args.extend(group.iter().map(|s| s.to_string()));
        args.push(d.display().to_string());
        let o = publish_tool(&args);
        assert!(o.status.success(), "{}", stderr(&o));
    };
    fs::create_dir(d.join("assets")).unwrap();
    fs::write(d.join("page.html"), v1).unwrap();
    fs::write(d.join("assets/app.1.js"), v1).unwrap();
    set_mtime(
        &d.join("assets/app.1.js"),
        std::time::SystemTime::now() - std::time::Duration::from_secs(60),
    );
    run(d);
    fs::write(d.join("page.html"), v2).unwrap();
    set_mtime(
        &d.join("page.html"),
        std::time::SystemTime::now() + std::time::Duration::from_secs(5),
    );
    fs::write(d.join("assets/app.2.js"), v2).unwrap();
    run(d);
    for name in ["page.html", "assets/app.2.js"] {
        let delta = d.join(delta_name(name, v1, DeltaCoding::Dcz));
        assert!(delta.is_file(), "no delta {}", delta.display());
    }
}

/// With the tree's publish store named (`GzipDiskNgDeltaStore`), a
/// published delta beside its original is verified against the
/// dictionary the store holds (the page's earlier version, or the group
/// member its catalogue names) and sent without asking its own name,
/// which `<FilesMatch>` refuses; a store the server cannot read, or a
/// catalogued file no longer the dictionary, leaves the delta to its own
/// name's rules (refused: br) until the dictionary is found again, with
/// one warning for the unreadable store and none for the rest.
#[test]
fn published_deltas_are_verified_against_the_publish_store() {
    let v1 = page(60_000, 7);
    let mut v2 = v1.clone();
    v2.splice(20_000..20_012, b"second issue".iter().copied());
    let holder = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let store = holder.path().join("store");
    fs::create_dir(&store).unwrap();
    open_store_to_server(holder.path());
    let server = format!(
        "GzipDiskNgDeltaStore {{docroot}} {}\n\
         <FilesMatch \"\\.(dcz|dcb)$\">\nRequire all denied\n</FilesMatch>\n",
        store.display()
    );
    // One child: what it found missing it remembers for all requests.
    let mut o = one_child();
    o.server = format!("{}\n{server}", o.server);
    let a = Apache::start(o, |d| publish_with_store(d, &store, &v1, &v2));
    let coding = |path: &str| {
        let r = with_dictionary(&a, path, &v1, AE, &[]);
        assert_eq!(r.status, 200, "{path}");
        r.header("Content-Encoding").map(str::to_owned)
    };
    // Private, as the tool made it: not readable by the server.
    // (As the server's own user, no mode at all.)
    let private = if is_root() { 0o700 } else { 0o000 };
    fs::set_permissions(&store, fs::Permissions::from_mode(private)).unwrap();
    assert_eq!(coding("/page.html").as_deref(), Some("br"));
    let warned = |a: &Apache| {
        a.error_log()
            .lines()
            .filter(|l| l.contains("GzipDiskNgDeltaStore") && l.contains("[gzip_disk_ng:warn]"))
            .count()
    };
    assert_eq!(warned(&a), 1, "{}", a.error_log());
    open_store_to_server(&store);
    // Over HTTP/1.1 and h2c.
    let delta = |path: &str| {
        for extra in [&[][..], &["--http2-prior-knowledge"]] {
            let r = with_dictionary(&a, path, &v1, AE, extra);
            let c = r.header("Content-Encoding").unwrap_or_default();
            assert!(c == "dcz" || c == "dcb", "{c}: {:?}", a.module_log());
            assert_eq!(
                oracle_decoded_delta(c, &v1, &r.body),
                v2,
                "{path} {extra:?}"
            );
            let h2 = !extra.is_empty();
            assert_eq!(r.http_version == "HTTP/2", h2, "{path}: {}", r.http_version);
        }
    };
    // A dictionary not found is looked for again after a while (10 s),
    // not by every request.
    let sent_soon = |path: &str| {
        assert_eq!(
            coding(path).as_deref(),
            Some("br"),
            "{path} looked for at once"
        );
        wait_for(&format!("a delta of {path}"), || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            matches!(coding(path).as_deref(), Some("dcz" | "dcb"))
        });
        delta(path);
    };
    sent_soon("/page.html");
    // The group member the catalogue names, rewritten: not the
    // dictionary any more, so not used; restored, it verifies the delta.
    let member = a.docroot.join("assets/app.1.js");
    let kept = fs::metadata(&member).unwrap().modified().unwrap();
    fs::write(&member, &v2).unwrap();
    assert_eq!(coding("/assets/app.2.js").as_deref(), Some("br"));
    fs::write(&member, &v1).unwrap();
    set_mtime(&member, kept);
    sent_soon("/assets/app.2.js");
    assert_eq!(warned(&a), 1, "{}", a.error_log());
    a.assert_no_crash();
}

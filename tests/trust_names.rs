//! An on-demand copy is served only for the bytes it was made from,
//! against a real Apache: two virtual hosts with no `ServerName` and
//! different document roots, each holding a file at the same path with
//! the same size and mtime, one behind `Require ip 192.0.2.1` (or a
//! login), the other public, never answer with each other's copies,
//! whichever was compressed first (a leak one way, poisoning the other);
//! a `.gz` and a `.br` of one page with one size and mtime, each for
//! another client, never share a decoded copy; and a page rewritten in
//! place keeping its inode, size and mtime (only its ctime moves) is
//! answered with its new bytes.

mod common;

use common::*;
use gdn_core::coding::Coding;
use std::fs;
use std::io::{Seek, Write};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// A compressible page of exactly `n` bytes carrying `marker`.
fn text(marker: &str, n: usize, seed: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(n + 64);
    let filler = page(n, seed);
    let mut at = 0;
    while v.len() < n {
        v.extend_from_slice(format!("<p>{marker}</p>\n").as_bytes());
        let end = (at + 400).min(filler.len());
        v.extend_from_slice(&filler[at..end]);
        at = if end == filler.len() { 0 } else { end };
    }
    v.truncate(n);
    v
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Writes `bytes` at `dir/rel` with the mtime `at`.
fn put_at(dir: &Path, rel: &str, bytes: &[u8], at: SystemTime) {
    let p = dir.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(&p, bytes).unwrap();
    set_mtime(&p, at);
}

const GZIP: &str = "Accept-Encoding: gzip";

/// Requests `path` from the host `host` until it is answered from a
/// gzip copy, checking on the way that every answer is `want`.
fn until_cached(a: &Apache, host: &str, path: &str, extra: &[&str], want: &[u8], what: &str) {
    let h = format!("Host: {host}");
    let mut args = vec!["-H", GZIP, "-H", h.as_str()];
    args.extend_from_slice(extra);
    wait_for(&format!("{what}: the gzip copy"), || {
        let r = a.request(path, &args);
        assert_eq!(r.status, 200, "{what}");
        assert!(
            r.decoded() == want,
            "{what}: answered with other bytes than the file's ({:?})",
            r.coding()
        );
        r.coding() == Some("gzip")
    });
}

/// The same-sized, same-dated files of the two hosts.
struct Pair {
    secret: Vec<u8>,
    public: Vec<u8>,
    real: Vec<u8>,
    forged: Vec<u8>,
}

/// Two name-based virtual hosts with no `ServerName` (both take the main
/// server's), different document roots, `/p/leak.html` and
/// `/p/poison.html` at the same path with the same size and mtime in
/// each. The first host's are for alice or 192.0.2.1 only, the second's
/// are public.
fn two_hosts() -> (Apache, Pair, tempfile::TempDir, tempfile::TempDir) {
    let (users_dir, users) = users_file();
    let other = world_readable_tempdir();
    let n = 30_000;
    let when = SystemTime::now() - Duration::from_secs(1000);
    let pair = Pair {
        secret: text("PRIVATE-REPORT-4c1e", n, 1),
        public: text("PUBLIC-UPLOAD-77ab", n, 2),
        real: text("REAL-PAGE-0d5f", n, 3),
        forged: text("FORGED-BY-UPLOAD-e2c9", n, 4),
    };
    put_at(other.path(), "p/leak.html", &pair.public, when);
    put_at(other.path(), "p/poison.html", &pair.forged, when);
    let server = format!(
        "GzipDiskNgCacheRoot {{docroot}}/../cache\n\
         <VirtualHost *>\nServerAlias a.test\nDocumentRoot {{docroot}}\n</VirtualHost>\n\
         <VirtualHost *>\nServerAlias b.test\nDocumentRoot {other}\n</VirtualHost>\n\
         <Directory {other}>\nRequire all granted\nSetHandler gzip-disk-ng\n\
         GzipDiskNgOnDemand On\n</Directory>\n\
         <Directory {{docroot}}/p>\nAuthType Basic\nAuthName gdn\nAuthUserFile {users}\n\
         <RequireAny>\nRequire ip 192.0.2.1\nRequire valid-user\n</RequireAny>\n</Directory>\n",
        other = other.path().display(),
        users = users.display(),
    );
    let modules = vec![
        "auth_basic",
        "authn_core",
        "authn_file",
        "authz_user",
        "authz_host",
    ];
    let a = Apache::start(
        Options {
            dir: "SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On".into(),
            server,
            modules,
            ..Default::default()
        },
        |d| {
            put_at(d, "p/leak.html", &pair.secret, when);
            put_at(d, "p/poison.html", &pair.real, when);
            make_cache_root(&d.join("../cache"));
        },
    );
    // Refused without the login.
    let anon = a.request("/p/leak.html", &["-H", GZIP, "-H", "Host: a.test"]);
    assert_eq!(anon.status, 401);
    (a, pair, users_dir, other)
}

const ALICE: &[&str] = &["-u", "alice:secret"];

/// The restricted page compressed first: the public one beside it in
/// the other host gets its own bytes only, never the copies made for
/// the restricted one.
#[test]
fn a_restricted_pages_copies_never_go_out_through_another_host() {
    let (a, pair, _users, _other) = two_hosts();
    until_cached(
        &a,
        "a.test",
        "/p/leak.html",
        ALICE,
        &pair.secret,
        "restricted",
    );
    until_cached(&a, "b.test", "/p/leak.html", &[], &pair.public, "public");
    for _ in 0..5 {
        let r = a.request("/p/leak.html", &["-H", GZIP, "-H", "Host: b.test"]);
        assert!(!contains(&r.decoded(), b"PRIVATE-REPORT-4c1e"));
    }
    a.assert_no_crash();
}

/// An upload in the other host, with the page's path, size and mtime,
/// compressed first: the page keeps its own bytes in every answer.
#[test]
fn an_upload_with_a_pages_path_size_and_mtime_never_replaces_it() {
    let (a, pair, _users, _other) = two_hosts();
    until_cached(&a, "b.test", "/p/poison.html", &[], &pair.forged, "upload");
    until_cached(&a, "a.test", "/p/poison.html", ALICE, &pair.real, "page");
    let r = a.request(
        "/p/poison.html",
        &["-H", GZIP, "-H", "Host: a.test", "-u", "alice:secret"],
    );
    assert!(!contains(&r.decoded(), b"FORGED-BY-UPLOAD-e2c9"));
    a.assert_no_crash();
}

/// A `.gz` and a `.br` of `n` bytes each, of different content.
fn siblings_of_one_size() -> (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>) {
    for seed in 0..50 {
        let gz_content = text("ONLY-FOR-THE-GZ-CLIENT-91d0", 40_000, seed);
        let gz = encoded(Coding::Gzip, &gz_content);
        let n = gz.len();
        for m in n.saturating_sub(40)..n {
            let br_content = noise(m, 100 + seed);
            let br = encoded(Coding::Br, &br_content);
            if br.len() == n {
                return (gz_content, gz, br_content, br);
            }
        }
    }
    panic!("no gzip and brotli streams of one size");
}

/// A page published only as `.gz` and `.br` of one size and mtime, the
/// `.gz` for one client and the `.br` for another (by a header): each,
/// accepting no coding, gets its own sibling decoded, from the decoded
/// copies too.
#[test]
fn a_gz_and_a_br_of_one_size_never_share_a_decoded_copy() {
    let (gz_content, gz, br_content, br) = siblings_of_one_size();
    assert_eq!(gz.len(), br.len());
    let when = SystemTime::now() - Duration::from_secs(1000);
    let server = "GzipDiskNgCacheRoot {docroot}/../cache\n\
                  <Directory {docroot}/d>\n\
                  <Files \"page.html.gz\">\nRequire expr \"%{HTTP:X-Who} == 'gz'\"\n</Files>\n\
                  <Files \"page.html.br\">\nRequire expr \"%{HTTP:X-Who} == 'br'\"\n</Files>\n\
                  </Directory>\n"
        .to_string();
    let a = Apache::start(
        Options {
            dir: "SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On".into(),
            server,
            ..Default::default()
        },
        |d| {
            put_at(d, "d/page.html.gz", &gz, when);
            put_at(d, "d/page.html.br", &br, when);
            make_cache_root(&d.join("../cache"));
        },
    );
    let cache = a.root.path().join("cache");
    let decoded_copies = || {
        copies(&cache)
            .into_iter()
            .filter(|(name, len)| name.ends_with(".id") && *len > 0)
            .count()
    };
    let ask = |who: &str| {
        let h = format!("X-Who: {who}");
        a.request(
            "/d/page.html",
            &["-H", "Accept-Encoding: identity", "-H", &h],
        )
    };
    wait_for("the gz sibling's decoded copy", || {
        let r = ask("gz");
        assert_eq!(r.status, 200);
        assert!(r.body == gz_content, "the gz client got other bytes");
        decoded_copies() >= 1
    });
    for _ in 0..3 {
        assert!(ask("gz").body == gz_content);
    }
    wait_for("the br sibling's decoded copy", || {
        let r = ask("br");
        assert_eq!(r.status, 200);
        assert!(
            !contains(&r.body, b"ONLY-FOR-THE-GZ-CLIENT-91d0"),
            "the br client was sent the gz sibling's content"
        );
        assert!(r.body == br_content, "the br client got other bytes");
        decoded_copies() >= 2
    });
    for _ in 0..3 {
        assert!(ask("br").body == br_content);
        assert!(ask("gz").body == gz_content);
    }
    a.assert_no_crash();
}

/// A page rewritten in place, keeping its inode, size and mtime (only
/// its ctime moves), is answered with its new bytes, not its old copy.
#[test]
fn a_rewrite_keeping_inode_size_and_mtime_is_a_new_version() {
    let n = 40_000;
    let when = SystemTime::now() - Duration::from_secs(1000);
    let old = text("OLD-EDITION-5a5a", n, 7);
    let new = text("NEW-EDITION-b6b6", n, 8);
    let a = Apache::start(
        Options {
            dir: "SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On".into(),
            server: "GzipDiskNgCacheRoot {docroot}/../cache".into(),
            ..Default::default()
        },
        |d| {
            put_at(d, "page.html", &old, when);
            make_cache_root(&d.join("../cache"));
        },
    );
    let p = a.docroot.join("page.html");
    until_cached(
        &a,
        "localhost",
        "/page.html",
        &[],
        &old,
        "the first edition",
    );
    let before = fs::metadata(&p).unwrap();
    {
        let mut f = fs::File::options().write(true).open(&p).unwrap();
        f.rewind().unwrap();
        f.write_all(&new).unwrap();
    }
    set_mtime(&p, when);
    let after = fs::metadata(&p).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        (
            before.ino(),
            before.len(),
            before.mtime(),
            before.mtime_nsec()
        ),
        (after.ino(), after.len(), after.mtime(), after.mtime_nsec())
    );
    assert!(before.ctime() != after.ctime() || before.ctime_nsec() != after.ctime_nsec());
    for _ in 0..3 {
        let r = a.request("/page.html", &["-H", GZIP]);
        assert!(
            !contains(&r.decoded(), b"OLD-EDITION-5a5a"),
            "the old edition's copy was served ({:?})",
            r.coding()
        );
    }
    until_cached(&a, "localhost", "/page.html", &[], &new, "the new edition");
    a.assert_no_crash();
}

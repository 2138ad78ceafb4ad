//! Deltas on demand (RFC 9842 dcz and dcb made by the compressor, no
//! publish step) through a real Apache: a file rewritten in place, or
//! renamed over, gets deltas against the versions the server served
//! before it (same-path mode), a new member of a versioned group against
//! the earlier members (group mode); they are served like a cached copy
//! (Vary, strong ETag, 304, ranges, HEAD, marker, log note) over HTTP/1.1
//! and h2c, survive graceful and full restarts, go with their kept
//! version when it is evicted, and never answer a dictionary the cache
//! does not hold. Also: republished (in place and renamed over) while
//! clients ask, every delta decodes to content the file held; a published
//! delta comes first; `GzipDiskNgDeltaVersions` 0 and its refused values.

mod common;

use base64::Engine as _;
use common::*;
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

/// What a browser holding a dictionary sends (Chromium's list).
const AE_ALL: &str = "gzip, br, zstd, dcb, dcz";

/// What a client asking for one delta coding in particular sends: with
/// both named, the module answers with the smaller.
fn ae_for(coding: &str) -> &'static str {
    match coding {
        "dcb" => "dcb",
        _ => "gzip, br, zstd, dcz",
    }
}

/// What a client without dictionaries sends.
const AE_PLAIN: &str = "zstd, br, gzip";

/// The cache root beside the docroot.
fn cache_of(a: &Apache) -> PathBuf {
    a.root.path().join("cache")
}

/// On-demand compression in the docroot with `lines` added there, the
/// cache beside the docroot.
fn on_demand_with(lines: &str) -> Options {
    Options {
        dir: format!("SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On\n{lines}"),
        server: "GzipDiskNgCacheRoot {docroot}/../cache".into(),
        ..Options::default()
    }
}

/// Same-path mode: every earlier version of a file is a dictionary.
fn same_path() -> Options {
    on_demand_with("GzipDiskNgUseAsDictionary self")
}

/// A moment `secs` before now: files written with it have strong ETags
/// (Apache makes an ETag weak for a file changed within the last second).
fn ago(secs: u64) -> SystemTime {
    SystemTime::now() - Duration::from_secs(secs)
}

/// Writes `name` in the docroot `d` and makes the cache root.
fn fill(d: &Path, files: &[(&str, &[u8])]) {
    for (name, bytes) in files {
        let p = d.join(name);
        if let Some(dir) = p.parent() {
            fs::create_dir_all(dir).expect("mkdir");
        }
        fs::write(&p, bytes).expect("write");
        set_mtime(&p, ago(300));
    }
    make_cache_root(&d.join("../cache"));
}

/// Version 1 of a script of about `n` bytes.
fn script(n: usize, seed: u64) -> Vec<u8> {
    let mut v = format!("/* app.js, seed {seed} */\n").into_bytes();
    v.extend_from_slice(&page(n, seed));
    v
}

/// `prev` after a minor release `i`: a few bytes changed in the middle
/// and a line appended, so a delta is small and every release distinct.
fn minor_release(prev: &[u8], i: usize) -> Vec<u8> {
    let mut v = prev.to_vec();
    let at = (v.len() / 3 + 977 * i) % (v.len() - 32);
    v.splice(at..at + 12, format!("release {:04}", i % 10_000).bytes());
    v.extend_from_slice(format!("/* fixed in release {i} */\n").as_bytes());
    v
}

fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

fn hex_of(data: &[u8]) -> String {
    hex::encode(sha256(data))
}

/// A GET (or whatever `extra` makes it) with `Accept-Encoding: ae` and,
/// with `dictionary`, the `Available-Dictionary` naming it; over h2c
/// with `h2`.
fn ask(
    a: &Apache,
    path: &str,
    ae: &str,
    dictionary: Option<&[u8]>,
    h2: bool,
    extra: &[&str],
) -> Response {
    let mut args = vec!["-H".to_string(), format!("Accept-Encoding: {ae}")];
    if let Some(d) = dictionary {
        args.push("-H".into());
        args.push(format!("Available-Dictionary: {}", announce(d)));
    }
    if h2 {
        args.push("--http2-prior-knowledge".into());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    curl(&a.url(path), &args)
}

/// The access log's last line notes `note` (maybe followed by
/// ` queued`, when the request also asked for copies still missing),
/// waiting a little: Apache logs after the response has gone out.
fn assert_logged(a: &Apache, note: &str) {
    let noted = |l: &str| l.ends_with(note) || l.ends_with(&format!("{note} queued"));
    for _ in 0..40 {
        if a.access_log().lines().last().is_some_and(noted) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no {note:?} last in the access log:\n{}", a.access_log());
}

/// Waits (up to 60 s: a hang guard, long enough for a compressor behind
/// a busy machine) until `done` holds; on a timeout, says what the
/// server logged, so a failure shows what the module did.
fn wait_on(a: &Apache, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        if Instant::now() > deadline {
            let access = a.access_log();
            let tail: Vec<&str> = access.lines().rev().take(12).collect();
            let module = a.module_log();
            let last = &module[module.len().saturating_sub(30)..];
            panic!("timed out waiting for {what}\naccess log (last first): {tail:#?}\nmodule log: {last:#?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Requests `path` as a browser without dictionaries does (queueing
/// every coding), then until its zstd copy is served: the compressor has
/// then made the copy an earlier version is recovered from. (Asked with
/// the other codings too, the module may prefer a smaller br copy.)
fn serve_until_cached(a: &Apache, path: &str, want: &[u8]) {
    let r = ask(a, path, AE_PLAIN, None, false, &[]);
    assert_eq!(r.status, 200, "{path}");
    assert!(r.decoded() == want, "{path}: another version was served");
    wait_on(a, &format!("the zstd copy of {path}"), || {
        let r = ask(a, path, "zstd", None, false, &[]);
        assert_eq!(r.status, 200, "{path}");
        assert!(r.decoded() == want, "{path}: another version was served");
        r.coding() == Some("zstd")
    });
    assert_logged(a, "zstd cached");
}

/// Rewrites the file at `p` in place: same inode, new content, an mtime
/// of its own in the past.
fn rewrite_in_place(p: &Path, data: &[u8], secs_ago: u64) {
    let ino = fs::metadata(p).expect("file").ino();
    fs::write(p, data).expect("rewrite");
    set_mtime(p, ago(secs_ago));
    assert_eq!(fs::metadata(p).expect("file").ino(), ino, "not in place");
}

/// Rewrites `p` in place with `data` and gives it back its mtime, as a
/// tool that keeps timestamps does: only its ctime tells the versions
/// apart where the sizes are equal.
fn rewrite_keeping_mtime(p: &Path, data: &[u8]) {
    let was = mtime(p);
    fs::write(p, data).expect("rewrite");
    set_mtime(p, was);
}

/// Writes `data` to a temporary name beside `p` and renames it over `p`
/// (a new inode), as deploy tools and editors do.
fn rename_over(p: &Path, data: &[u8], secs_ago: u64) {
    let tmp = p.with_file_name(".gdn-next");
    fs::write(&tmp, data).expect("write");
    set_mtime(&tmp, ago(secs_ago));
    let old = fs::metadata(p).expect("file").ino();
    fs::rename(&tmp, p).expect("rename");
    assert_ne!(fs::metadata(p).expect("file").ino(), old, "same inode");
}

/// Asks for `path` against `dictionary`, accepting what `ae` says, until
/// a delta coding comes back (the first requests queue the new version).
fn wait_for_delta_with(a: &Apache, path: &str, dictionary: &[u8], ae: &str, h2: bool) -> Response {
    let mut last = None;
    wait_on(a, &format!("a delta of {path} for {ae}"), || {
        let r = ask(a, path, ae, Some(dictionary), h2, &[]);
        assert_eq!((r.status, r.exit), (200, 0), "{path}");
        let done = matches!(r.coding(), Some("dcz" | "dcb"));
        last = Some(r);
        done
    });
    last.expect("a response")
}

/// Asks for `path` against `dictionary` until a `coding` delta comes back.
fn wait_for_delta(a: &Apache, path: &str, dictionary: &[u8], coding: &str, h2: bool) -> Response {
    let r = wait_for_delta_with(a, path, dictionary, ae_for(coding), h2);
    assert_eq!(r.coding(), Some(coding), "{:?}", r.headers);
    r
}

/// The dictionary hash a delta body's header names, by its coding.
fn named_hash(coding: &str, body: &[u8]) -> Option<[u8; 32]> {
    let (magic, start): (&[u8], usize) = match coding {
        "dcz" => (&DCZ_MAGIC, 8),
        "dcb" => (&DCB_MAGIC, 4),
        _ => return None,
    };
    if body.len() < start + 32 || !body.starts_with(magic) {
        return None;
    }
    body[start..start + 32].try_into().ok()
}

/// `r` is a `coding` delta of `want` against `dictionary`, served as a
/// cached copy is: header, decoding, Vary, strong ETag, length, marker.
fn assert_delta(r: &Response, coding: &str, dictionary: &[u8], want: &[u8]) {
    assert_eq!((r.status, r.coding()), (200, Some(coding)));
    assert_eq!(
        named_hash(coding, &r.body),
        Some(sha256(dictionary)),
        "the {coding} header names another dictionary"
    );
    let decoded = oracle_decode_delta(coding, dictionary, &r.body)
        .unwrap_or_else(|e| panic!("{coding} does not decode: {e}"));
    assert!(decoded == want, "{coding} decodes to something else");
    // The control: the same body with its last byte flipped is refused.
    let mut flipped = r.body.clone();
    *flipped.last_mut().expect("a body") ^= 0xff;
    let got = oracle_decode_delta(coding, dictionary, &flipped);
    assert!(
        got.as_deref().ok() != Some(want),
        "the oracle decoded a {coding} with its last byte flipped"
    );
    assert!(
        r.body.len() * 10 < want.len(),
        "not a delta: {}",
        r.body.len()
    );
    let vary = r.tokens("Vary");
    for t in ["Accept-Encoding", "Available-Dictionary"] {
        assert!(vary.iter().any(|v| v.eq_ignore_ascii_case(t)), "{vary:?}");
    }
    let etag = r.header("ETag").expect("an ETag");
    assert!(
        etag.ends_with(&format!("-{coding}\"")) && !etag.starts_with("W/"),
        "{etag}"
    );
    let len = r.body.len().to_string();
    assert_eq!(r.header("Content-Length"), Some(len.as_str()));
    assert_eq!(r.header("Mod-Gzip-Disk-Ng"), Some(":-)"));
}

/// The delta `r` (a `coding` of the file at `path` against `dictionary`)
/// answers conditional, range and HEAD requests as a copy does.
fn assert_delta_protocol(a: &Apache, path: &str, dictionary: &[u8], r: &Response, h2: bool) {
    let ae = ae_for(r.coding().expect("a coding"));
    let etag = r.header("ETag").expect("an ETag");
    let inm = format!("If-None-Match: {etag}");
    let c = ask(a, path, ae, Some(dictionary), h2, &["-H", &inm]);
    assert_eq!(c.status, 304, "If-None-Match {etag}");
    let other = ["-H", "If-Match: \"another\""];
    let c = ask(a, path, ae, Some(dictionary), h2, &other);
    assert_eq!(c.status, 412, "If-Match another ETag");
    let if_range = format!("If-Range: {etag}");
    let range = ["-H", "Range: bytes=0-39", "-H", &if_range];
    let p = ask(a, path, ae, Some(dictionary), h2, &range);
    assert_eq!(p.status, 206, "a range of the delta");
    assert!(p.body == r.body[..40], "not a range of the encoded bytes");
    let want_range = format!("bytes 0-39/{}", r.body.len());
    assert_eq!(p.header("Content-Range"), Some(want_range.as_str()));
    assert_head(a, path, ae, dictionary, r, h2);
}

/// A HEAD for what `r` answered sends its header fields and no body: over
/// HTTP/1.1 read off the socket, over h2c by curl told only the method
/// (with -I it would write the head where the body goes).
fn assert_head(a: &Apache, path: &str, ae: &str, dictionary: &[u8], r: &Response, h2: bool) {
    let announced = announce(dictionary);
    let (status, headers, body) = if h2 {
        let h = ask(a, path, ae, Some(dictionary), true, &["-X", "HEAD"]);
        // curl, not told it is a HEAD, expects Content-Length bytes:
        // the stream ending without any is its "partial transfer" (18).
        assert!(matches!(h.exit, 0 | 18), "curl's HEAD over h2c: {}", h.exit);
        (h.status, h.headers, h.body)
    } else {
        let fields = [
            ("Accept-Encoding", ae.as_bytes()),
            ("Available-Dictionary", announced.as_bytes()),
        ];
        let h = raw_request(a, "HEAD", path, &fields);
        (h.status, h.headers, h.after_head)
    };
    assert_eq!(status, 200);
    assert!(body.is_empty(), "HEAD sent {} bytes of body", body.len());
    let same = [
        "content-encoding",
        "etag",
        "content-length",
        "mod-gzip-disk-ng",
        "vary",
    ];
    for name in same {
        assert_eq!(headers.get(name), r.headers.get(name), "HEAD's {name}");
    }
}

/// Every file under the cache root, by its path there.
fn cache_files(cache: &Path) -> BTreeSet<String> {
    walkdir::WalkDir::new(cache)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| {
            let rel = e.path().strip_prefix(cache).ok()?;
            Some(rel.to_string_lossy().into_owned())
        })
        .collect()
}

/// The cache's files that name `content`'s hash as a dictionary: its
/// kept version and the deltas made against it (not its own copies,
/// which begin with it).
fn naming(cache: &Path, content: &[u8]) -> Vec<String> {
    let hex = hex_of(content);
    let against = format!(".{hex}.");
    cache_files(cache)
        .into_iter()
        .filter(|f| f == &kept_path(content) || f.contains(&against))
        .collect()
}

/// The kept copy of `content`, as the spec lays it out.
fn kept_path(content: &[u8]) -> String {
    let hex = hex_of(content);
    format!("kept/{}/{hex}.zst", &hex[..2])
}

/// The cache's kept versions and deltas: what only deltas on demand make.
fn delta_state(cache: &Path) -> BTreeSet<String> {
    cache_files(cache)
        .into_iter()
        .filter(|f| f.starts_with("kept/") || f.ends_with(".dcz") || f.ends_with(".dcb"))
        .collect()
}

/// A server in same-path mode whose `app.js` was served at `v1`, then
/// rewritten in place to `v2`, and has both deltas against `v1`.
fn served_then_rewritten(v1: &[u8], v2: &[u8]) -> Apache {
    let a = Apache::start(same_path(), |d| fill(d, &[("app.js", v1)]));
    serve_until_cached(&a, "/app.js", v1);
    rewrite_in_place(&a.docroot.join("app.js"), v2, 200);
    for coding in ["dcz", "dcb"] {
        let r = wait_for_delta(&a, "/app.js", v1, coding, false);
        assert_delta(&r, coding, v1, v2);
    }
    a
}

#[test]
fn a_file_rewritten_in_place_gets_dcz_and_dcb_against_the_version_served() {
    let v1 = script(120_000, 1);
    let v2 = minor_release(&v1, 1);
    let a = Apache::start(same_path(), |d| fill(d, &[("app.js", &v1)]));
    serve_until_cached(&a, "/app.js", &v1);
    rewrite_in_place(&a.docroot.join("app.js"), &v2, 200);
    // A browser's request: a delta, whichever is ready (and smaller).
    let r = wait_for_delta_with(&a, "/app.js", &v1, AE_ALL, false);
    assert_delta(&r, r.coding().expect("a coding"), &v1, &v2);
    for h2 in [false, true] {
        for coding in ["dcz", "dcb"] {
            let r = wait_for_delta(&a, "/app.js", &v1, coding, h2);
            assert_delta(&r, coding, &v1, &v2);
            let note = format!("200 {coding} cached");
            assert_logged(&a, &note);
            if h2 {
                assert_eq!(r.http_version, "HTTP/2", "not over h2c");
            }
            assert_delta_protocol(&a, "/app.js", &v1, &r, h2);
        }
    }
    // The kept version and both deltas are in the cache as laid out.
    let cache = cache_of(&a);
    let files = naming(&cache, &v1);
    assert!(files.contains(&kept_path(&v1)), "{files:?}");
    for ext in ["dcz", "dcb"] {
        let n = files.iter().filter(|f| f.ends_with(ext)).count();
        assert_eq!(n, 1, "one {ext} against v1: {files:?}");
    }
    // Without the dictionary, the normal answer: v2.
    let r = ask(&a, "/app.js", AE_ALL, None, false, &[]);
    assert!(!matches!(r.coding(), Some("dcz" | "dcb")));
    assert!(r.decoded() == v2);
    a.assert_no_crash();
}

#[test]
fn a_file_renamed_over_gets_deltas_against_the_last_versions() {
    let v1 = script(120_000, 2);
    let v2 = minor_release(&v1, 2);
    let v3 = minor_release(&v2, 3);
    let a = served_then_rewritten(&v1, &v2);
    // v2's zstd copy is what v2 is recovered from once it is replaced.
    serve_until_cached(&a, "/app.js", &v2);
    rename_over(&a.docroot.join("app.js"), &v3, 100);
    for dictionary in [&v2, &v1] {
        for coding in ["dcz", "dcb"] {
            let r = wait_for_delta(&a, "/app.js", dictionary, coding, false);
            assert_delta(&r, coding, dictionary, &v3);
            let note = format!("200 {coding} cached");
            assert_logged(&a, &note);
        }
    }
    let cache = cache_of(&a);
    for v in [&v1, &v2] {
        assert!(cache_files(&cache).contains(&kept_path(v)));
    }
    a.assert_no_crash();
}

#[test]
fn a_new_member_of_a_group_gets_deltas_against_the_member_served_before() {
    let server = "GzipDiskNgCacheRoot {docroot}/../cache\n\
                  <LocationMatch \"^/assets/app\\.[^/]+\\.js$\">\n\
                  GzipDiskNgUseAsDictionary /assets/app.*.js\n\
                  </LocationMatch>";
    let opts = Options {
        server: server.into(),
        ..on_demand_with("")
    };
    let one = script(120_000, 3);
    let two = minor_release(&one, 4);
    let a = Apache::start(opts, |d| fill(d, &[("assets/app.1.js", &one)]));
    let r = ask(&a, "/assets/app.1.js", AE_PLAIN, None, false, &[]);
    assert_eq!(
        r.header("Use-As-Dictionary"),
        Some(r#"match="/assets/app.*.js""#)
    );
    serve_until_cached(&a, "/assets/app.1.js", &one);
    let p = a.docroot.join("assets/app.2.js");
    fs::write(&p, &two).expect("write");
    set_mtime(&p, ago(100));
    for coding in ["dcz", "dcb"] {
        let r = wait_for_delta(&a, "/assets/app.2.js", &one, coding, false);
        assert_delta(&r, coding, &one, &two);
        let note = format!("200 {coding} cached");
        assert_logged(&a, &note);
        assert_delta_protocol(&a, "/assets/app.2.js", &one, &r, false);
    }
    // The first member, still on disk and asked for with its own hash,
    // is no delta of itself.
    let r = ask(&a, "/assets/app.1.js", AE_ALL, Some(&one), false, &[]);
    assert!(!matches!(r.coding(), Some("dcz" | "dcb")));
    assert!(r.decoded() == one);
    a.assert_no_crash();
}

/// The number of times the error log says the server (re)started.
fn generations(a: &Apache) -> usize {
    a.error_log().matches("resuming normal operations").count()
}

/// Apache started again after `Apache::stop` from the configuration the
/// harness wrote: the same ServerRoot, docroot, port and cache root, so a
/// full restart. Stopped on drop (the harness's handle no longer knows
/// the new pid).
struct StartedAgain {
    pid: i32,
}

fn start_again(a: &Apache) -> StartedAgain {
    let root = a.root.path();
    let _ = fs::remove_file(root.join("httpd.pid"));
    let out = Command::new(APACHE)
        .arg("-d")
        .arg(root)
        .arg("-f")
        .arg(root.join("httpd.conf"))
        .args(["-k", "start"])
        .output()
        .expect("run apache2");
    assert!(out.status.success(), "{}", stderr(&out));
    let mut pid = None;
    wait_on(a, "the server to listen again", || {
        pid = fs::read_to_string(root.join("httpd.pid"))
            .ok()
            .and_then(|p| p.trim().parse().ok());
        pid.is_some() && std::net::TcpStream::connect(("127.0.0.1", a.port)).is_ok()
    });
    StartedAgain {
        pid: pid.expect("pid"),
    }
}

impl Drop for StartedAgain {
    fn drop(&mut self) {
        let pid = self.pid.to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline && std::path::Path::new(&format!("/proc/{pid}")).exists() {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn deltas_survive_a_graceful_and_a_full_restart_and_answer_the_first_request() {
    let v1 = script(120_000, 5);
    let v2 = minor_release(&v1, 5);
    let mut a = served_then_rewritten(&v1, &v2);
    let pid = apache_pid(&a);
    let before = compressors(pid);
    let st = Command::new("kill")
        .args(["-USR1", &pid.to_string()])
        .status();
    assert!(st.is_ok_and(|s| s.success()));
    // No request until the new generation runs, so the next one is the
    // first it answers.
    wait_on(&a, "the graceful restart", || {
        let now = compressors(pid);
        generations(&a) == 2 && now.len() == 1 && !before.contains(&now[0])
    });
    let r = ask(&a, "/app.js", ae_for("dcz"), Some(&v1), false, &[]);
    assert_delta(&r, "dcz", &v1, &v2);
    assert_logged(&a, "200 dcz cached");

    a.stop();
    let again = start_again(&a);
    wait_on(&a, "the full restart", || {
        generations(&a) == 3 && compressors(again.pid).len() == 1
    });
    let r = ask(&a, "/app.js", ae_for("dcz"), Some(&v1), false, &[]);
    assert_delta(&r, "dcz", &v1, &v2);
    assert_logged(&a, "200 dcz cached");
    let r = ask(&a, "/app.js", "dcb", Some(&v1), true, &[]);
    assert_delta(&r, "dcb", &v1, &v2);
    a.assert_no_crash();
}

/// `r` is the normal negotiation's answer for `want`: a cached copy or
/// the original, never a delta; in a scope offering dictionaries it
/// varies by the announcement too, as a delta would.
fn assert_normal(r: &Response, want: &[u8], why: &str) {
    assert_eq!((r.status, r.exit), (200, 0), "{why}");
    let vary = r.tokens("Vary");
    let varies = |t: &str| vary.iter().any(|v| v.eq_ignore_ascii_case(t));
    let both = varies("Accept-Encoding") && varies("Available-Dictionary");
    assert!(both, "{why}: {vary:?}");
    let coding = r.coding();
    assert!(
        matches!(coding, None | Some("br" | "zstd" | "gzip")),
        "{why}: {coding:?}"
    );
    assert!(r.decoded() == want, "{why}: another body");
}

#[test]
fn unknown_malformed_current_and_refused_dictionaries_get_the_normal_negotiation() {
    let v1 = script(120_000, 6);
    let v2 = minor_release(&v1, 6);
    let a = served_then_rewritten(&v1, &v2);
    let cache = cache_of(&a);
    let state = delta_state(&cache);
    let forged = page(5000, 66);
    // Hashes the cache does not hold as an earlier version.
    for (dictionary, why) in [(&forged, "never served"), (&v2, "the current version")] {
        for h2 in [false, true] {
            let r = ask(&a, "/app.js", AE_ALL, Some(dictionary), h2, &[]);
            assert_normal(&r, &v2, why);
        }
    }
    // Refused or unusable announcements of a dictionary the cache holds.
    let short = base64::engine::general_purpose::STANDARD.encode(&sha256(&v1)[..31]);
    let v1_hash = announce(&v1);
    let malformed = [
        "garbage".to_string(),
        ":AAAA:".into(),
        ":!!!!:".into(),
        format!("sha-256={v1_hash}"),
        format!(":{short}:"),
        v1_hash.trim_matches(':').to_string(),
    ];
    for bad in &malformed {
        let hdr = format!("Available-Dictionary: {bad}");
        let ae = format!("Accept-Encoding: {AE_ALL}");
        let r = a.request("/app.js", &["-H", &ae, "-H", &hdr]);
        assert_normal(&r, &v2, bad);
    }
    let r = ask(
        &a,
        "/app.js",
        "gzip, br, zstd, dcz;q=0",
        Some(&v1),
        false,
        &[],
    );
    assert_normal(&r, &v2, "dcz;q=0");
    let r = ask(&a, "/app.js", "*", Some(&v1), false, &[]);
    assert_normal(&r, &v2, "only *");
    // Nothing was queued for them: no kept version, no delta appears.
    std::thread::sleep(Duration::from_millis(1200));
    for (dictionary, why) in [(&forged, "never served"), (&v2, "the current version")] {
        let files = naming(&cache, dictionary);
        assert!(files.is_empty(), "{why}: {files:?}");
    }
    assert_eq!(delta_state(&cache), state, "the cache's deltas changed");
    a.assert_no_crash();
}

#[test]
fn an_evicted_version_is_never_offered_again() {
    let v1 = script(60_000, 7);
    let v2 = minor_release(&v1, 7);
    let fillers: Vec<(String, Vec<u8>)> = (0..16)
        .map(|i| (format!("f{i}.html"), page(60_000, 700 + i)))
        .collect();
    let mut files: Vec<(&str, &[u8])> = vec![("app.js", &v1)];
    files.extend(fillers.iter().map(|(n, d)| (n.as_str(), d.as_slice())));
    let mut opts = same_path();
    // Room for both versions' copies, the kept version and its deltas,
    // but not for them and all the fillers' copies.
    opts.server += "\nGzipDiskNgCacheMaxSize 160K";
    let a = Apache::start(opts, |d| fill(d, &files));
    serve_until_cached(&a, "/app.js", &v1);
    rewrite_in_place(&a.docroot.join("app.js"), &v2, 200);
    let r = wait_for_delta(&a, "/app.js", &v1, "dcz", false);
    assert_delta(&r, "dcz", &v1, &v2);
    let cache = cache_of(&a);
    assert!(cache_files(&cache).contains(&kept_path(&v1)));
    // Newer copies push the kept version out (least recently used).
    for (n, _) in &fillers {
        let p = format!("/{n}");
        wait_on(&a, n, || {
            ask(&a, &p, AE_PLAIN, None, false, &[]).coding().is_some()
        });
        if !cache_files(&cache).contains(&kept_path(&v1)) {
            break;
        }
    }
    wait_on(&a, "the kept version's eviction", || {
        !cache_files(&cache).contains(&kept_path(&v1))
    });
    for i in 0..6 {
        let r = ask(&a, "/app.js", AE_ALL, Some(&v1), i % 2 == 1, &[]);
        assert_normal(&r, &v2, "an evicted dictionary");
        std::thread::sleep(Duration::from_millis(200));
    }
    let left = naming(&cache, &v1);
    assert!(left.is_empty(), "left after the eviction: {left:?}");
    a.assert_no_crash();
}

/// The versions of the concurrent test, and how each was republished.
struct Releases {
    versions: Vec<Vec<u8>>,
    /// Written in place (truncated, then written) rather than renamed over.
    in_place: Vec<bool>,
}

impl Releases {
    /// Whether the file held `body` at some moment: a version, or the
    /// part of one written in place so far (a reader may see that too).
    fn held(&self, body: &[u8]) -> bool {
        self.versions
            .iter()
            .zip(&self.in_place)
            .any(|(v, &in_place)| v[..] == *body || (in_place && v.starts_with(body)))
    }
}

/// What the clients of the concurrent test saw.
#[derive(Default)]
struct Seen {
    /// "ETag coding" of a cached answer → the SHA-256 of its content.
    etags: HashMap<String, [u8; 32]>,
    /// Delta responses, each checked.
    deltas: usize,
    requests: usize,
}

/// The content a delta `r` carries, decoded against the dictionary its
/// header names, which must be the one the request announced.
fn delta_content(r: &Response, rel: &Releases, announced: usize, why: &str) -> Vec<u8> {
    let coding = r.coding().unwrap_or_default();
    let h =
        named_hash(coding, &r.body).unwrap_or_else(|| panic!("{why}: {coding} without its header"));
    let d = rel.versions.iter().position(|v| sha256(v) == h);
    let d = d.unwrap_or_else(|| panic!("{why}: {coding} against an unknown dictionary"));
    // A client can decode only against the dictionary it holds.
    assert_eq!(d, announced, "{why}: {coding} against another dictionary");
    oracle_decode_delta(coding, &rel.versions[d], &r.body)
        .unwrap_or_else(|e| panic!("{why}: {coding} against v{d}: {e}"))
}

/// One checked response of the concurrent test. An answer from the cache
/// (a delta or a copy, marked `:-)`) is an immutable file named by the
/// version it was made from: it must come whole, decode to content the
/// file held, and its ETag must always name that content. Core's answers
/// from the file itself, read while it may be rewritten in place, can mix
/// two versions: only their status is checked.
fn check_concurrent(r: &Response, rel: &Releases, announced: usize, seen: &Mutex<Seen>, why: &str) {
    assert_eq!(r.status, 200, "{why}");
    let coding = r.coding().unwrap_or("identity");
    let delta = matches!(coding, "dcz" | "dcb");
    let cached = r.header("Mod-Gzip-Disk-Ng") == Some(":-)");
    assert!(cached || !delta, "{why}: a {coding} without the marker");
    let mut seen = seen.lock().expect("lock");
    seen.requests += 1;
    if !cached {
        return;
    }
    assert_eq!(r.exit, 0, "{why}: curl");
    let len = r.body.len().to_string();
    assert_eq!(r.header("Content-Length"), Some(len.as_str()), "{why}");
    let body = match delta {
        true => delta_content(r, rel, announced, why),
        false => r.decoded(),
    };
    assert!(
        rel.held(&body),
        "{why}: {coding} of content the file never held"
    );
    seen.deltas += usize::from(delta);
    let tag = r
        .header("ETag")
        .unwrap_or_else(|| panic!("{why}: a copy without an ETag"));
    let key = format!("{tag} {coding}");
    let was = *seen.etags.entry(key.clone()).or_insert(sha256(&body));
    assert!(was == sha256(&body), "{why}: {key} named two contents");
}

/// One client of the concurrent test: asks for `/app.js` with each
/// earlier version in turn as its dictionary until `stop` (or 300
/// requests).
fn concurrent_client(
    a: &Apache,
    t: usize,
    rel: &Releases,
    current: &AtomicUsize,
    stop: &AtomicBool,
    seen: &Mutex<Seen>,
) {
    let aes = [AE_ALL, "dcz", "dcb", "br, dcz, dcb"];
    for i in 0..300 {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let cur = current.load(Ordering::Relaxed);
        let d = if cur == 0 { 0 } else { (t + i) % cur };
        let ae = aes[(t + i) % aes.len()];
        let h2 = (t + i).is_multiple_of(3);
        let r = ask(a, "/app.js", ae, Some(&rel.versions[d]), h2, &[]);
        let why = format!("client {t} request {i}: {ae}, v{d}'s hash, h2 {h2}");
        check_concurrent(&r, rel, d, seen, &why);
    }
}

/// `K` releases of a script, every other one written in place.
fn releases(k: usize) -> Releases {
    let mut versions = vec![script(120_000, 8)];
    for i in 1..k {
        let next = minor_release(&versions[i - 1], i);
        versions.push(next);
    }
    let in_place = (0..k).map(|i| i % 2 == 1).collect();
    Releases { versions, in_place }
}

#[test]
fn republished_while_clients_ask_every_delta_decodes_to_a_version() {
    const K: usize = 8;
    let rel = releases(K);
    let a = Apache::start(same_path(), |d| fill(d, &[("app.js", &rel.versions[0])]));
    serve_until_cached(&a, "/app.js", &rel.versions[0]);
    let (current, stop, seen) = (
        AtomicUsize::new(0),
        AtomicBool::new(false),
        Mutex::default(),
    );
    let p = a.docroot.join("app.js");
    std::thread::scope(|s| {
        for t in 0..4 {
            let (a, rel, current, stop, seen) = (&a, &rel, &current, &stop, &seen);
            s.spawn(move || concurrent_client(a, t, rel, current, stop, seen));
        }
        for (i, v) in rel.versions.iter().enumerate().skip(1) {
            std::thread::sleep(Duration::from_millis(800));
            match rel.in_place[i] {
                true => rewrite_in_place(&p, v, 200 - i as u64),
                false => rename_over(&p, v, 200 - i as u64),
            }
            current.store(i, Ordering::Relaxed);
        }
        std::thread::sleep(Duration::from_millis(1500));
        stop.store(true, Ordering::Relaxed);
    });
    let seen = seen.into_inner().expect("lock");
    assert!(
        seen.deltas > 0,
        "no delta among {} responses",
        seen.requests
    );
    // Once quiet, the last version gets a delta against the newest
    // earlier version kept (one replaced before its copy was made cannot
    // be recovered, so not necessarily the one before it).
    let cache = cache_of(&a);
    let kept = (0..K - 1)
        .rev()
        .find(|&i| cache_files(&cache).contains(&kept_path(&rel.versions[i])));
    let kept = kept.expect("no earlier version kept");
    let (dictionary, last) = (&rel.versions[kept], &rel.versions[K - 1]);
    let r = wait_for_delta(&a, "/app.js", dictionary, "dcz", false);
    assert_delta(&r, "dcz", dictionary, last);
    a.assert_no_crash();
}

#[test]
fn a_published_delta_beside_the_file_comes_first() {
    let v1 = script(120_000, 9);
    let v2 = minor_release(&v1, 9);
    let a = served_then_rewritten(&v1, &v2);
    assert_logged(&a, "200 dcb cached");
    let original = a.docroot.join("app.js");
    let published = dcz_cli(&v1, &v2, "-19");
    let p = a.docroot.join(format!("app.js.{}.dcz", hex_of(&v1)));
    fs::write(&p, &published).expect("write");
    set_mtime(&p, mtime(&original));
    // A browser's list: the published dcz comes before the cached dcb too.
    let r = ask(&a, "/app.js", AE_ALL, Some(&v1), false, &[]);
    assert_eq!(r.coding(), Some("dcz"));
    assert!(
        r.body == published,
        "the cached delta, not the published one"
    );
    assert_logged(&a, "200 dcz precompressed");
    // dcb has no published delta: still the cached one.
    let r = ask(&a, "/app.js", "dcb", Some(&v1), false, &[]);
    assert_delta(&r, "dcb", &v1, &v2);
    assert_logged(&a, "200 dcb cached");
    a.assert_no_crash();
}

/// Writes `body` as the published `coding` delta of `app.js` against
/// `dictionary` (a new inode, the original's mtime), as a deploy would.
fn publish_delta(a: &Apache, dictionary: &[u8], coding: &str, body: &[u8]) {
    let original = a.docroot.join("app.js");
    let p = a
        .docroot
        .join(format!("app.js.{}.{coding}", hex_of(dictionary)));
    let tmp = a.docroot.join(".gdn-delta");
    fs::write(&tmp, body).expect("write");
    set_mtime(&tmp, mtime(&original));
    fs::rename(&tmp, &p).expect("rename");
}

/// A published delta beside its original, against a version the cache
/// keeps, is the page's representation once it decodes to the page: sent
/// where its own name is refused (`<FilesMatch>` here; a rate limiter
/// counting its twin alike), since the page's own request was allowed.
/// One that decodes to other bytes is never sent; without the kept
/// dictionary, the delta's own name decides, and refuses it.
#[test]
fn a_published_delta_verified_against_the_kept_version_needs_no_twin() {
    let v1 = script(120_000, 11);
    let v2 = minor_release(&v1, 11);
    let refused = "GzipDiskNgUseAsDictionary self\n\
                   <FilesMatch \"\\.dcz$\">\nRequire all denied\n</FilesMatch>";
    let a = Apache::start(on_demand_with(refused), |d| fill(d, &[("app.js", &v1)]));
    serve_until_cached(&a, "/app.js", &v1);
    rewrite_in_place(&a.docroot.join("app.js"), &v2, 200);
    let cached = wait_for_delta(&a, "/app.js", &v1, "dcz", false);
    assert_delta(&cached, "dcz", &v1, &v2);
    let published = dcz_cli(&v1, &v2, "-5");
    assert!(
        published != cached.body,
        "the published delta is the cached one"
    );
    publish_delta(&a, &v1, "dcz", &published);
    let own = format!("/app.js.{}.dcz", hex_of(&v1));
    assert_eq!(ask(&a, &own, "identity", None, false, &[]).status, 403);
    for h2 in [false, true] {
        let r = ask(&a, "/app.js", "dcz", Some(&v1), h2, &[]);
        assert_eq!(r.coding(), Some("dcz"));
        assert!(r.body == published, "the published delta was not sent");
        assert_logged(&a, "200 dcz precompressed");
    }
    // Named for v1, decoding to something else: the cached delta answers.
    let mut other = v2.clone();
    other[60_000] ^= 0x20;
    publish_delta(&a, &v1, "dcz", &dcz_cli(&v1, &other, "-19"));
    let r = ask(&a, "/app.js", "dcz", Some(&v1), false, &[]);
    assert_delta(&r, "dcz", &v1, &v2);
    assert_logged(&a, "200 dcz cached");
    let warned = |a: &Apache| {
        a.module_log()
            .iter()
            .filter(|l| l.contains("does not decode to its page"))
            .count()
    };
    assert_eq!(warned(&a), 1, "{:?}", a.module_log());
    ask(&a, "/app.js", "dcz", Some(&v1), false, &[]);
    assert_eq!(warned(&a), 1, "told again");
    // Verified, then its original rewritten in place with its size and
    // mtime kept: the delta no longer decodes to the page, and is not sent.
    publish_delta(&a, &v1, "dcz", &published);
    let r = ask(&a, "/app.js", "dcz", Some(&v1), false, &[]);
    assert!(
        r.body == published,
        "the published delta was not sent again"
    );
    rewrite_keeping_mtime(&a.docroot.join("app.js"), &other);
    let r = ask(&a, "/app.js", "dcz", Some(&v1), false, &[]);
    assert!(r.body != published, "sent under the version before");
    match r.coding() {
        Some("dcz") => assert_delta(&r, "dcz", &v1, &other),
        _ => assert_normal(&r, &other, "the page rewritten in place"),
    }
    rewrite_keeping_mtime(&a.docroot.join("app.js"), &v2);
    // Settled: the compressor has made this version's deltas (and kept
    // what it keeps) before the kept version is taken away.
    let r = wait_for_delta(&a, "/app.js", &v1, "dcb", false);
    assert_delta(&r, "dcb", &v1, &v2);
    // The kept version gone: the delta's own name decides, and refuses it.
    fs::remove_file(cache_of(&a).join(kept_path(&v1))).expect("the kept version");
    publish_delta(&a, &v1, "dcz", &published);
    let r = ask(&a, "/app.js", "dcz", Some(&v1), false, &[]);
    assert!(
        r.body != published,
        "sent without its check nor its own name's"
    );
    a.assert_no_crash();
}

#[test]
fn delta_versions_0_makes_no_deltas() {
    let v1 = script(120_000, 10);
    let v2 = minor_release(&v1, 10);
    let opts = on_demand_with("GzipDiskNgUseAsDictionary self\nGzipDiskNgDeltaVersions 0");
    let a = Apache::start(opts, |d| fill(d, &[("app.js", &v1)]));
    serve_until_cached(&a, "/app.js", &v1);
    rewrite_in_place(&a.docroot.join("app.js"), &v2, 200);
    let r = ask(&a, "/app.js", AE_ALL, Some(&v1), false, &[]);
    assert_normal(&r, &v2, "the first request for v2");
    // Deltas would be made before v2's copies: once these are served,
    // any would be there.
    serve_until_cached(&a, "/app.js", &v2);
    std::thread::sleep(Duration::from_millis(1000));
    for h2 in [false, true] {
        let r = ask(&a, "/app.js", AE_ALL, Some(&v1), h2, &[]);
        assert_normal(&r, &v2, "GzipDiskNgDeltaVersions 0");
    }
    let state = delta_state(&cache_of(&a));
    assert!(state.is_empty(), "{state:?}");
    a.assert_no_crash();
}

#[test]
fn configtest_refuses_delta_versions_out_of_range() {
    let scoped = |n: &str| format!("<Directory /tmp>\nGzipDiskNgDeltaVersions {n}\n</Directory>");
    let (seventeen, abc, minus) = (scoped("17"), scoped("abc"), scoped("-1"));
    let accepted: Vec<String> = ["0", "3", "16"].iter().map(|n| scoped(n)).collect();
    let accepted: Vec<&str> = accepted.iter().map(String::as_str).collect();
    assert_configtests(
        &[],
        &[
            (&seventeen, "GzipDiskNgDeltaVersions"),
            (&abc, "GzipDiskNgDeltaVersions"),
            (&minus, "GzipDiskNgDeltaVersions"),
        ],
        &accepted,
    );
}

#[test]
fn deltas_on_demand_are_counted_with_what_they_saved_against_br() {
    let v1 = script(120_000, 9);
    let v2 = minor_release(&v1, 9);
    let mut opts = same_path();
    opts.server += "\n<Location /metrics>\nSetHandler gzip-disk-ng-metrics\n</Location>";
    let a = Apache::start(opts, |d| fill(d, &[("app.js", &v1)]));
    serve_until_cached(&a, "/app.js", &v1);
    rewrite_in_place(&a.docroot.join("app.js"), &v2, 200);
    wait_for_delta(&a, "/app.js", &v1, "dcz", false);
    // The br copy of v2, made after the deltas.
    let br = {
        let mut got = None;
        wait_on(&a, "the br copy of v2", || {
            let r = ask(&a, "/app.js", "br", None, false, &[]);
            let done = r.coding() == Some("br");
            got = Some(r.body.len() as u64);
            done
        });
        got.expect("br")
    };
    let sent = r#"gzip_disk_ng_responses_total{outcome="cached_delta",coding="dcz"}"#;
    let saved = r#"gzip_disk_ng_delta_saved_vs_br_bytes_total{coding="dcz"}"#;
    let (sent0, saved0) = (metric(&a, sent), metric(&a, saved));
    let r = ask(&a, "/app.js", ae_for("dcz"), Some(&v1), false, &[]);
    assert_eq!(r.coding(), Some("dcz"));
    let dcz = r.body.len() as u64;
    assert!(dcz < br, "{dcz} bytes of dcz, {br} of br");
    assert_eq!(metric(&a, sent), sent0 + 1, "one more cached delta counted");
    assert_eq!(
        metric(&a, saved),
        saved0 + (br - dcz),
        "what it saved against br"
    );
    a.assert_no_crash();
}

//! The counters through a real Apache with mod_status: after a known mix
//! of requests spread over prefork's children and event's threads, every
//! counter in `server-status?auto` equals what the test itself counted of
//! the responses it got (exactly), bytes saved is the sum of (original −
//! sent); the metrics handler's text passes `promtool check metrics` and
//! agrees; counts survive a graceful restart; the log notes; the
//! on-demand counters against the cache directory; a soak of concurrent
//! clients; and the status section as headless Chromium renders it.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const LOCATIONS: &str = "<Location /server-status>\nSetHandler server-status\n</Location>\n\
                         <Location /metrics>\nSetHandler gzip-disk-ng-metrics\n</Location>\n\
                         LogFormat \"%P:%{tid}P %{gzip-disk-ng-original}n %{gzip-disk-ng-ratio}n %B %r\" pids\n\
                         CustomLog {docroot}/../pids.log pids\n";

fn options(mpm: Mpm) -> Options {
    Options {
        mpm,
        modules: vec!["status"],
        server: LOCATIONS.into(),
        ..Options::default()
    }
}

/// The pages: `a.html` with every sibling, `g.html` only as `.gz`,
/// `plain.html` without siblings, `s.html` with a stale `.gz`.
fn fill(d: &Path) -> usize {
    let a = page(120_000, 1);
    publish(d, "a.html", &a, true, &[".zst", ".br", ".gz"]);
    publish(d, "g.html", &page(40_000, 2), false, &[".gz"]);
    put(d, "plain.html", &page(30_000, 3));
    publish(d, "s.html", &page(20_000, 4), true, &[".gz"]);
    // The original edited after its sibling was made: the sibling is stale.
    set_mtime(&d.join("s.html"), std::time::SystemTime::now());
    a.len()
}

/// The counts the test expects, by `?auto` key.
#[derive(Default)]
struct Expected(BTreeMap<String, u64>);

impl Expected {
    fn add(&mut self, key: &str, n: u64) {
        *self.0.entry(key.to_owned()).or_default() += n;
    }

    /// One response: its outcome key (as `?auto` spells outcome and
    /// coding), body bytes, and bytes uncompressed.
    fn response(&mut self, outcome: &str, sent: u64, original: u64) {
        self.add(&format!("GzipDiskNgResponses{outcome}"), 1);
        self.add(&format!("GzipDiskNgSentBytes{outcome}"), sent);
        self.add(&format!("GzipDiskNgOriginalBytes{outcome}"), original);
        self.add("GzipDiskNgResponses", 1);
        self.add("GzipDiskNgSentBytes", sent);
        self.add("GzipDiskNgOriginalBytes", original);
        self.add("GzipDiskNgSavedBytes", original - sent);
    }
}

/// The request kinds of the mix, each checked as it is answered and
/// counted as the test saw it.
fn one_request(a: &Apache, kind: usize, a_len: u64, etag: &str, e: &mut Expected) {
    let body_len = |r: &Response| r.body.len() as u64;
    match kind {
        0..=2 => {
            let (ae, key) = [("zstd", "Zstd"), ("br", "Br"), ("gzip", "Gzip")][kind];
            let r = a.get("/a.html", Some(ae));
            assert_eq!((r.status, r.coding()), (200, Some(ae)));
            e.response(&format!("Precompressed{key}"), body_len(&r), a_len);
        }
        3 => {
            let r = a.get("/a.html", None);
            assert_eq!((r.status, r.coding()), (200, None));
            e.response("OriginalIdentity", body_len(&r), body_len(&r));
        }
        4 => {
            let r = a.get("/g.html", None);
            assert_eq!((r.status, r.coding()), (200, None));
            e.response("DecodedGzip", body_len(&r), body_len(&r));
        }
        5 => {
            let r = a.get("/plain.html", Some("gzip, br, zstd"));
            assert_eq!((r.status, r.coding()), (200, None));
            e.response("OriginalIdentity", body_len(&r), body_len(&r));
        }
        6 => {
            let r = a.get("/s.html", Some("gzip"));
            assert_eq!(
                (r.status, r.coding()),
                (200, None),
                "stale sibling passed over"
            );
            e.response("OriginalIdentity", body_len(&r), body_len(&r));
            e.add("GzipDiskNgSiblingsPassedOverStaleGzip", 1);
        }
        7 => {
            assert_eq!(a.get("/missing.html", Some("gzip")).status, 404);
            e.response("NotFound", 0, 0);
        }
        8 => {
            let r = a.request("/a.html", &["-I", "-H", "Accept-Encoding: zstd"]);
            assert_eq!(r.status, 200);
            e.response("PrecompressedZstd", 0, 0);
        }
        9 => {
            let inm = format!("If-None-Match: {etag}");
            let r = a.request("/a.html", &["-H", "Accept-Encoding: br", "-H", &inm]);
            assert_eq!(r.status, 304);
            e.response("PrecompressedBr", 0, 0);
        }
        10 => {
            let r = a.request("/a.html", &["-H", "Accept-Encoding: gzip", "-r", "0-99"]);
            assert_eq!((r.status, r.body.len()), (206, 100));
            e.response("PrecompressedGzip", 100, 100);
        }
        11 => {
            let r = a.request(
                "/a.html",
                &["--http2-prior-knowledge", "-H", "Accept-Encoding: zstd"],
            );
            assert_eq!((r.status, r.http_version.as_str()), (200, "HTTP/2"));
            e.response("PrecompressedZstd", body_len(&r), a_len);
        }
        _ => {
            let r = a.request("/a.html", &["-X", "POST", "-d", "x=1"]);
            assert_eq!(r.status, 405);
            e.response("Other", 0, 0);
        }
    }
}

const KINDS: usize = 13;

/// `?auto` as a map.
fn auto(a: &Apache) -> BTreeMap<String, String> {
    let r = a.get("/server-status?auto", None);
    assert_eq!(r.status, 200);
    String::from_utf8_lossy(&r.body)
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// Every counted key of the module equals the expectation (zero where
/// the test expects none).
fn assert_counts(got: &BTreeMap<String, String>, e: &Expected) {
    let counted = [
        "GzipDiskNgResponses",
        "GzipDiskNgSentBytes",
        "GzipDiskNgOriginalBytes",
        "GzipDiskNgSavedBytes",
        "GzipDiskNgSiblingsPassedOver",
    ];
    let mut checked = 0;
    for (k, v) in got {
        if !counted.iter().any(|p| k.starts_with(p)) {
            continue;
        }
        let want = e.0.get(k).copied().unwrap_or(0);
        assert_eq!(v.parse::<u64>().ok(), Some(want), "{k}");
        checked += 1;
    }
    assert!(checked > 60, "only {checked} keys in ?auto");
    for k in e.0.keys() {
        assert!(got.contains_key(k), "?auto has no {k}");
    }
}

/// Runs `rounds` of every kind from `threads` clients at once.
fn mix(a: &Apache, threads: usize, rounds: usize, a_len: u64) -> Expected {
    let first = a.get("/a.html", Some("br"));
    let etag = first.header("ETag").unwrap_or("").to_owned();
    let total = Mutex::new(Expected::default());
    total
        .lock()
        .unwrap()
        .response("PrecompressedBr", first.body.len() as u64, a_len);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (total, etag) = (&total, &etag);
            s.spawn(move || {
                let mut e = Expected::default();
                for i in 0..rounds * KINDS {
                    one_request(a, (i + t) % KINDS, a_len, etag, &mut e);
                }
                let mut all = total.lock().unwrap();
                for (k, v) in e.0 {
                    all.add(&k, v);
                }
            });
        }
    });
    total.into_inner().unwrap()
}

/// The distinct server processes (prefork) or threads (event) that
/// answered, from the access log.
fn pids_in_log(a: &Apache) -> usize {
    let log = fs::read_to_string(a.root.path().join("pids.log")).unwrap_or_default();
    let mut pids: Vec<&str> = log.lines().filter_map(|l| l.split(' ').next()).collect();
    pids.sort_unstable();
    pids.dedup();
    pids.len()
}

fn counts_match_under(mpm: Mpm) {
    let mut a_len = 0;
    let mut a = Apache::start(options(mpm), |d| a_len = fill(d) as u64);
    let e = mix(&a, 4, 3, a_len);
    assert_counts(&auto(&a), &e);
    assert!(
        pids_in_log(&a) >= 2,
        "requests spread over processes or threads"
    );
    a.assert_no_crash();
    a.stop();
}

#[test]
fn every_counter_equals_what_was_sent_under_prefork() {
    counts_match_under(Mpm::Prefork);
}

#[test]
fn every_counter_equals_what_was_sent_under_event() {
    counts_match_under(Mpm::Event);
}

/// The metrics handler's text: `promtool check metrics` accepts it, and
/// each sample agrees with `?auto`.
fn check_metrics(a: &Apache) {
    let r = a.get("/metrics", None);
    assert_eq!(r.status, 200);
    assert!(r
        .header("Content-Type")
        .unwrap_or("")
        .starts_with("text/plain; version=0.0.4"));
    let text = String::from_utf8(r.body).expect("utf-8");
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (scripts/test installs prometheus)");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let auto = auto(a);
    let sample = |name: &str| -> u64 {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let responses = "gzip_disk_ng_responses_total{outcome=\"precompressed\",coding=\"zstd\"}";
    assert_eq!(
        sample(responses).to_string(),
        auto["GzipDiskNgResponsesPrecompressedZstd"]
    );
    let sent = "gzip_disk_ng_sent_bytes_total{outcome=\"original\",coding=\"identity\"}";
    assert_eq!(
        sample(sent).to_string(),
        auto["GzipDiskNgSentBytesOriginalIdentity"]
    );
    assert!(sample(responses) > 0);
}

#[test]
fn metrics_pass_promtool_and_agree_with_status() {
    let mut a_len = 0;
    let mut a = Apache::start(options(Mpm::Event), |d| a_len = fill(d) as u64);
    mix(&a, 2, 1, a_len);
    check_metrics(&a);
    let post = a.request("/metrics", &["-X", "POST", "-d", "x"]);
    assert_eq!(post.status, 405);
    a.stop();
}

/// Sends `apache2 -k graceful` (or `restart`) and waits for the new
/// generation to answer.
fn restart(a: &Apache, how: &str) {
    let conf = a.root.path().join("httpd.conf");
    let st = Command::new(APACHE)
        .arg("-d")
        .arg(a.root.path())
        .arg("-f")
        .arg(&conf)
        .args(["-k", how])
        .status()
        .expect("apache2 -k");
    assert!(st.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let gen = auto(a).get("ParentServerConfigGeneration").cloned();
        if gen.as_deref() == Some("2") {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("no new generation after {how}");
}

#[test]
fn counts_survive_a_graceful_restart() {
    let mut a_len = 0;
    let mut a = Apache::start(options(Mpm::Event), |d| a_len = fill(d) as u64);
    let mut e = mix(&a, 1, 1, a_len);
    assert_counts(&auto(&a), &e);
    restart(&a, "graceful");
    let r = a.get("/a.html", Some("zstd"));
    e.response("PrecompressedZstd", r.body.len() as u64, a_len);
    assert_counts(&auto(&a), &e);
    a.assert_no_crash();
    a.stop();
}

/// `%{gzip-disk-ng-original}n` and `%{gzip-disk-ng-ratio}n`, beside `%B`.
#[test]
fn log_notes_give_the_original_size_and_the_ratio() {
    let mut a_len = 0;
    let mut a = Apache::start(options(Mpm::Event), |d| a_len = fill(d) as u64);
    let br = a.get("/a.html", Some("br"));
    let plain = a.get("/plain.html", None);
    let head = a.request("/a.html", &["-I", "-H", "Accept-Encoding: br"]);
    assert_eq!((br.status, plain.status, head.status), (200, 200, 200));
    let want = [
        format!(
            "{a_len} {} {}",
            br.body.len() as u64 * 100 / a_len,
            br.body.len()
        ),
        format!("{0} 100 {0}", plain.body.len()),
        "- - 0 HEAD".to_owned(),
    ];
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut lines = Vec::new();
    while Instant::now() < deadline && lines.len() < 3 {
        let log = fs::read_to_string(a.root.path().join("pids.log")).unwrap_or_default();
        lines = log
            .lines()
            .map(|l| l.split_once(' ').unwrap().1.to_owned())
            .collect();
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(lines[0].starts_with(&want[0]), "{lines:?}");
    assert!(lines[1].starts_with(&want[1]), "{lines:?}");
    assert!(lines[2].starts_with(&want[2]), "{lines:?}");
    a.stop();
}

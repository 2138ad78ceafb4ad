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
        dir: "SetHandler gzip-disk-ng\n<FilesMatch \"^r\\.html\\.br$\">\nRequire all denied\n</FilesMatch>".into(),
        modules: vec!["status"],
        server: LOCATIONS.into(),
        ..Options::default()
    }
}

/// The pages: `a.html` with every sibling, `g.html` only as `.gz`,
/// `plain.html` without siblings, `s.html` with a stale `.gz`, `r.html`
/// whose `.br` the access rules refuse, `u.html` only as a corrupt `.gz`.
fn fill(d: &Path) -> usize {
    let a = page(120_000, 1);
    publish(d, "a.html", &a, true, &[".zst", ".br", ".gz"]);
    publish(d, "g.html", &page(40_000, 2), false, &[".gz"]);
    put(d, "plain.html", &page(30_000, 3));
    publish(d, "s.html", &page(20_000, 4), true, &[".gz"]);
    // The original edited after its sibling was made: the sibling is stale.
    set_mtime(&d.join("s.html"), std::time::SystemTime::now());
    publish(d, "r.html", &page(25_000, 5), true, &[".br"]);
    publish(d, "u.html", &page(25_000, 6), false, &[".gz"]);
    corrupt(&d.join("u.html.gz"));
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
        13 => {
            let r = a.get("/r.html", Some("br"));
            assert_eq!(
                (r.status, r.coding()),
                (200, None),
                "refused sibling passed over"
            );
            e.response("OriginalIdentity", body_len(&r), body_len(&r));
            e.add("GzipDiskNgSiblingsPassedOverRefusedBr", 1);
        }
        14 => {
            assert_eq!(a.get("/u.html", None).status, 500);
            e.response("Error", 0, 0);
            e.add("GzipDiskNgSiblingsPassedOverUndecodableGzip", 1);
        }
        _ => {
            let r = a.request("/a.html", &["-X", "POST", "-d", "x=1"]);
            assert_eq!(r.status, 405);
            e.response("Other", 0, 0);
        }
    }
}

const KINDS: usize = 15;

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

/// `%{gzip-disk-ng-original}n` and `%{gzip-disk-ng-ratio}n`, beside `%B`:
/// set for a body in a content coding only.
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
        format!("- - {} GET /plain.html", plain.body.len()),
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

fn num(m: &BTreeMap<String, String>, k: &str) -> u64 {
    m.get(k)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {k}"))
}

/// Every copy asked for has an end: merged, made, not worth it, failed.
fn settled(m: &BTreeMap<String, String>) -> bool {
    let ended: u64 = ["Merged", "Done", "NotWorth", "Failed"]
        .iter()
        .map(|s| num(m, &format!("GzipDiskNgOndemandCopies{s}")))
        .sum();
    num(m, "GzipDiskNgOndemandCopiesQueued") == ended && ended > 0
}

#[test]
fn on_demand_counters_match_the_cache_and_the_compressor() {
    let data = page(80_000, 7);
    let noise = noise(20_000, 8);
    let opts = Options {
        dir: "SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On".into(),
        server: format!("{LOCATIONS}GzipDiskNgCacheRoot {{docroot}}/../cache\n"),
        ..options(Mpm::Event)
    };
    let mut a = Apache::start(opts, |d| {
        put(d, "x.html", &data);
        put(d, "noise.html", &noise);
        make_cache_root(&d.join("../cache"));
    });
    let cache = a.root.path().join("cache");
    let ae = Some("gzip, br, zstd");
    assert_eq!(a.get("/x.html", ae).coding(), None, "a miss");
    assert_eq!(a.get("/noise.html", ae).coding(), None, "a miss");
    wait_for("the copies", || settled(&auto(&a)));
    // zstd alone: among equal q the smallest copy would go out.
    let hits = (0..3)
        .filter(|_| a.get("/x.html", Some("zstd")).coding() == Some("zstd"))
        .count();
    assert_eq!(hits, 3);
    let m = auto(&a);
    let files: Vec<u64> = copies(&cache).into_iter().map(|(_, n)| n).collect();
    assert_eq!(num(&m, "GzipDiskNgCacheEntries"), files.len() as u64);
    assert_eq!(num(&m, "GzipDiskNgCacheBytes"), files.iter().sum::<u64>());
    let made = files.iter().filter(|&&n| n > 0).count() as u64;
    assert_eq!(num(&m, "GzipDiskNgOndemandCopiesDone"), made);
    assert_eq!(
        num(&m, "GzipDiskNgOndemandCopiesNotWorth"),
        files.len() as u64 - made
    );
    assert_eq!(num(&m, "GzipDiskNgOndemandCopiesDropped"), 0);
    assert_eq!(num(&m, "GzipDiskNgResponsesCachedZstd"), 3);
    assert_ne!(m["GzipDiskNgCompressorCpuSeconds"], "0.000000");
    let ppid = apache_pid(&a);
    let first = compressors(ppid);
    assert_eq!(first.len(), 1);
    assert_eq!(num(&m, "GzipDiskNgCompressorPid"), first[0] as u64);
    assert_eq!(
        (
            num(&m, "GzipDiskNgCompressorStarts"),
            num(&m, "GzipDiskNgCompressorRestarts")
        ),
        (1, 0)
    );
    let killed = Command::new("kill")
        .args(["-9", &first[0].to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    wait_for("a new compressor", || {
        let m = auto(&a);
        num(&m, "GzipDiskNgCompressorRestarts") == 1
            && compressors(ppid).first().map(|&p| p as u64)
                == Some(num(&m, "GzipDiskNgCompressorPid"))
    });
    assert_eq!(num(&auto(&a), "GzipDiskNgCompressorStarts"), 2);
    a.assert_no_crash();
    a.stop();
}

/// Many clients at once under worker: the totals equal what the clients
/// counted themselves.
#[test]
fn under_concurrent_load_the_totals_match_the_clients_count() {
    let mut a_len = 0;
    let mut a = Apache::start(options(Mpm::Worker), |d| a_len = fill(d) as u64);
    let e = mix(&a, 8, 4, a_len);
    let m = auto(&a);
    assert_eq!(num(&m, "GzipDiskNgResponses"), (8 * 4 * KINDS + 1) as u64);
    assert_counts(&m, &e);
    a.assert_no_crash();
    a.stop();
}

/// The status page as an admin sees it, rendered by headless Chromium
/// to a PNG (kept at target/status-section.png for the docs).
#[test]
fn chromium_renders_the_status_section() {
    const CHROMIUM: &str = "/usr/bin/chromium";
    if !Path::new(CHROMIUM).exists() {
        skip("chromium not installed (scripts/test installs it)");
        return;
    }
    let mut a_len = 0;
    let opts = Options {
        dir: "SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On".into(),
        server: format!("{LOCATIONS}GzipDiskNgCacheRoot {{docroot}}/../cache\n"),
        ..options(Mpm::Event)
    };
    let mut a = Apache::start(opts, |d| {
        a_len = fill(d) as u64;
        make_cache_root(&d.join("../cache"));
    });
    // A day's traffic in small: browsers, gzip-only clients, none.
    for round in 0..3 {
        for path in [
            "/a.html",
            "/g.html",
            "/plain.html",
            "/s.html",
            "/missing.html",
        ] {
            for ae in [Some("gzip, deflate, br, zstd"), Some("gzip"), None] {
                assert!(a.get(path, ae).status > 0);
            }
        }
        if round == 0 {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let png = dir.path().join("status.png");
    let out = Command::new("timeout")
        .args(["-k", "10", "120", CHROMIUM])
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .args(["--disable-background-networking", "--hide-scrollbars"])
        .arg("--window-size=1000,2700")
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("profile").display()
        ))
        .arg(format!("--screenshot={}", png.display()))
        .arg(a.url("/server-status"))
        .output()
        .expect("run chromium");
    let bytes = fs::read(&png).unwrap_or_default();
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000,
        "no screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let keep = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/status-section.png");
    let _ = fs::write(keep, &bytes);
    let html = String::from_utf8_lossy(&a.get("/server-status", None).body).into_owned();
    assert!(html.contains("<h2>mod_gzip_disk_ng</h2>") && html.contains("saved"));
    a.stop();
}

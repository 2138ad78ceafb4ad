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
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const LOCATIONS: &str = "<Location /server-status>\nSetHandler server-status\n</Location>\n\
                         <Location /metrics>\nSetHandler gzip-disk-ng-metrics\n</Location>\n\
                         <Location /gzip-disk-ng-status>\nSetHandler gzip-disk-ng-status\n</Location>\n\
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
/// only as a `.gz` and a `.br` the access rules refuse (a sibling without
/// its original, which its own name's rules decide), `u.html` only as a corrupt `.gz`.
fn fill(d: &Path) -> usize {
    let a = page(120_000, 1);
    publish(d, "a.html", &a, true, &[".zst", ".br", ".gz"]);
    publish(d, "g.html", &page(40_000, 2), false, &[".gz"]);
    put(d, "plain.html", &page(30_000, 3));
    publish(d, "s.html", &page(20_000, 4), true, &[".gz"]);
    // The original edited after its sibling was made: the sibling is stale.
    set_mtime(&d.join("s.html"), std::time::SystemTime::now());
    publish(d, "r.html", &page(25_000, 5), false, &[".br", ".gz"]);
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

    /// One response whose size uncompressed is not known: its bytes are
    /// counted apart, and it saves nothing that can be told.
    fn unknown(&mut self, outcome: &str, sent: u64) {
        self.add(&format!("GzipDiskNgResponses{outcome}"), 1);
        self.add(&format!("GzipDiskNgSentBytes{outcome}"), sent);
        self.add(&format!("GzipDiskNgUnknownSizeSentBytes{outcome}"), sent);
        self.add("GzipDiskNgResponses", 1);
        self.add("GzipDiskNgSentBytes", sent);
        self.add("GzipDiskNgUnknownSizeSentBytes", sent);
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
            // The gzip ETag, from a HEAD (counted as one).
            let ir = a.if_range("/a.html", &["-I", "-H", "Accept-Encoding: gzip"]);
            e.response("PrecompressedGzip", 0, 0);
            let r = a.request(
                "/a.html",
                &["-H", "Accept-Encoding: gzip", "-H", &ir, "-r", "0-99"],
            );
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
            assert_eq!(r.body, page(25_000, 5), "decoded from the .gz");
            e.response("DecodedGzip", body_len(&r), body_len(&r));
            e.add("GzipDiskNgSiblingsPassedOverRefusedBr", 1);
        }
        12 => {
            let r = a.get("/g.html", Some("gzip"));
            assert_eq!((r.status, r.coding()), (200, Some("gzip")));
            e.unknown("PrecompressedGzip", body_len(&r));
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

const KINDS: usize = 16;

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
        "GzipDiskNgUnknownSizeSentBytes",
        "GzipDiskNgSiblingsPassedOver",
    ];
    let mut checked = 0;
    for (k, v) in got {
        if !counted.iter().any(|p| k.starts_with(p)) {
            continue;
        }
        if k.starts_with("GzipDiskNgSiblingsPassedOverBroken") {
            // Once per sibling version and child, when found: at least
            // once where a broken sibling was met, at most once per
            // request that met it.
            let met = e.0.get(&k.replace("Broken", "Undecodable")).copied();
            let n = v.parse::<u64>().unwrap_or(u64::MAX);
            let met = met.unwrap_or(0);
            assert!(
                (met == 0 && n == 0) || (1..=met).contains(&n),
                "{k}: {n} of {met}"
            );
            checked += 1;
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
    // Each sibling of a.html is checked by the first request that meets
    // it; one met meanwhile by another thread is not sent until that check
    // ends. One request each, before the mix, so the mix knows its codings.
    let total = Mutex::new(Expected::default());
    let mut etag = String::new();
    for (ae, key) in [("zstd", "Zstd"), ("gzip", "Gzip"), ("br", "Br")] {
        let r = a.get("/a.html", Some(ae));
        assert_eq!((r.status, r.coding()), (200, Some(ae)));
        etag = r.header("ETag").unwrap_or("").to_owned();
        let mut all = total.lock().unwrap();
        all.response(&format!("Precompressed{key}"), r.body.len() as u64, a_len);
    }
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
    let out = piped(
        Command::new("promtool").args(["check", "metrics"]),
        &text,
        "promtool (scripts/test installs prometheus)",
    );
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
    // A browser asked for br alone; zstd alone asks for its own copy.
    assert_eq!(a.get("/x.html", Some("zstd")).coding(), None, "a miss");
    wait_for("the zstd copy", || {
        settled(&auto(&a)) && a.get("/x.html", Some("zstd")).coding() == Some("zstd")
    });
    let hits = (0..3)
        .filter(|_| a.get("/x.html", Some("zstd")).coding() == Some("zstd"))
        .count();
    assert_eq!(hits, 3);
    // The copies served are made again at the best levels meanwhile: the
    // counters match the cache once that is done.
    let on_disk = || {
        let mut files = Vec::new();
        // The copies' fan-out directories (two hex digits), not this
        // host's digest records beside them.
        let fan_out = |p: &std::path::Path| {
            let top = p.strip_prefix(&cache).ok().and_then(|r| r.iter().next());
            top.is_some_and(|t| {
                t.len() == 2 && t.as_encoded_bytes().iter().all(u8::is_ascii_hexdigit)
            })
        };
        for f in walkdir::WalkDir::new(&cache).min_depth(2) {
            let f = f.unwrap();
            let name = f.file_name().to_string_lossy().into_owned();
            if f.file_type().is_file() && !name.starts_with('.') && fan_out(f.path()) {
                let m = f.metadata().unwrap();
                files.push((m.len(), m.blocks() * 512));
            }
        }
        files
    };
    let mut m = auto(&a);
    wait_for("the counters to match the cache", || {
        m = auto(&a);
        let files = on_disk();
        num(&m, "GzipDiskNgCacheEntries") == files.len() as u64
            && num(&m, "GzipDiskNgCacheBytes") == files.iter().map(|f| f.1).sum::<u64>()
    });
    let files: Vec<u64> = on_disk().into_iter().map(|f| f.0).collect();
    let made = files.iter().filter(|&&n| n > 0).count() as u64;
    assert_eq!(num(&m, "GzipDiskNgOndemandCopiesDone"), made);
    assert_eq!(
        num(&m, "GzipDiskNgOndemandCopiesNotWorth"),
        files.len() as u64 - made
    );
    assert_eq!(num(&m, "GzipDiskNgOndemandCopiesDropped"), 0);
    assert_eq!(num(&m, "GzipDiskNgResponsesCachedZstd"), 4);
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
    // Each round's kinds, the range's HEAD beside its request, and the
    // three requests made before the mix.
    assert_eq!(
        num(&m, "GzipDiskNgResponses"),
        (8 * 4 * (KINDS + 1) + 3) as u64
    );
    assert_counts(&m, &e);
    a.assert_no_crash();
    a.stop();
}

/// Options for a server whose responses mod_brotli and mod_deflate
/// compress where the module sent the original or decoded a sibling.
fn filtered() -> Options {
    Options {
        modules: vec!["status", "filter", "deflate", "brotli"],
        dir: "SetHandler gzip-disk-ng\nSetOutputFilter BROTLI_COMPRESS;DEFLATE".into(),
        ..options(Mpm::Event)
    }
}

/// `plain.html` without siblings, `b.html` only as `.br`, `g.html` only
/// as `.gz`; their sizes uncompressed.
fn fill_filtered(d: &Path) -> (u64, u64) {
    let plain = page(30_000, 3);
    let b = page(40_000, 9);
    put(d, "plain.html", &plain);
    publish(d, "b.html", &b, false, &[".br"]);
    publish(d, "g.html", &page(20_000, 2), false, &[".gz"]);
    (plain.len() as u64, b.len() as u64)
}

/// The access log's lines (after the pid), once `n` are there.
fn log_lines(a: &Apache, n: usize) -> Vec<String> {
    let mut lines = Vec::new();
    wait_for("the access log", || {
        let log = fs::read_to_string(a.root.path().join("pids.log")).unwrap_or_default();
        lines = log
            .lines()
            .filter_map(|l| l.split_once(' ').map(|x| x.1.to_owned()))
            .collect();
        lines.len() >= n
    });
    lines
}

/// What mod_deflate and mod_brotli compress of the handler's responses
/// counts in the coding it went out in, with the size the handler passed
/// as uncompressed; a sibling without its original counts as of unknown
/// size, and its log notes are absent rather than a ratio of 100.
#[test]
fn filtered_bodies_count_in_the_coding_they_went_out_in() {
    let mut sizes = (0, 0);
    let mut a = Apache::start(filtered(), |d| sizes = fill_filtered(d));
    let (plain, b) = sizes;
    let mut e = Expected::default();
    let checks: [(&str, &str, &str, u64); 3] = [
        ("/plain.html", "gzip", "OnTheFlyGzip", plain),
        ("/plain.html", "br", "OnTheFlyBr", plain),
        ("/b.html", "gzip", "OnTheFlyGzip", b),
    ];
    for (path, ae, key, size) in checks {
        let r = a.get(path, Some(ae));
        assert_eq!((r.status, r.coding()), (200, Some(ae)), "{path} {ae}");
        assert_eq!(r.decoded().len() as u64, size, "{path} {ae}");
        assert!((r.body.len() as u64) < size / 2, "{path} {ae} compressed");
        e.response(key, r.body.len() as u64, size);
    }
    let g = a.get("/g.html", Some("gzip"));
    assert_eq!(g.coding(), Some("gzip"));
    e.unknown("PrecompressedGzip", g.body.len() as u64);
    let identity = a.get("/plain.html", None);
    assert_eq!(identity.coding(), None);
    e.response("OriginalIdentity", plain, plain);
    assert_counts(&auto(&a), &e);
    let lines = log_lines(&a, 5);
    let first = a.get("/plain.html", Some("gzip")).body.len() as u64;
    assert!(
        lines[0].starts_with(&format!(
            "{plain} {} {first} GET /plain.html",
            first * 100 / plain
        )),
        "{lines:?}"
    );
    assert!(
        lines[3].starts_with(&format!("- - {} GET /g.html", g.body.len())),
        "{lines:?}"
    );
    a.stop();
}

/// What `cmd` gives for `input` on its standard input.
fn piped(cmd: &mut Command, input: &str, what: &str) -> std::process::Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect(what);
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write");
    drop(stdin);
    child.wait_with_output().expect("wait")
}

/// `tidy`'s verdict on an HTML document: its warnings and errors.
fn tidy(html: &str) -> String {
    let out = piped(
        Command::new("tidy").args(["-q", "-e", "--show-warnings", "yes", "--gnu-emacs", "yes"]),
        html,
        "tidy (scripts/test installs it)",
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The module's own page: the figures first (the same as mod_status's
/// section), then the chart; valid HTML, no script or external asset,
/// HEAD, `?auto` equal to mod_status's lines, 405 for POST.
#[test]
fn the_status_page_shows_the_figures_then_a_chart() {
    let mut sizes = (0, 0);
    let mut a = Apache::start(filtered(), |d| sizes = fill_filtered(d));
    for (path, ae) in [
        ("/plain.html", "gzip"),
        ("/b.html", "gzip"),
        ("/g.html", "gzip"),
    ] {
        assert_eq!(a.get(path, Some(ae)).status, 200);
    }
    let r = a.get("/gzip-disk-ng-status", None);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Type"), Some("text/html; charset=utf-8"));
    assert_eq!(r.header("Cache-Control"), Some("no-store"));
    let html = String::from_utf8(r.body).expect("utf-8");
    let verdict = tidy(&html);
    assert!(verdict.trim().is_empty(), "tidy: {verdict}\n{html}");
    let figures = html.find("<h3>Bytes by coding sent</h3>").expect("figures");
    let chart = html.find("<svg").expect("chart");
    assert!(figures < chart && html[..figures].contains("saved"));
    for never in ["<script", "src=", "href=", "url(", "@import"] {
        assert!(!html.contains(never), "{never} in the page");
    }
    let row = |label: &str| {
        html.lines()
            .find(|l| l.starts_with(&format!("<tr><td>{label}</td>")))
            .unwrap_or_else(|| panic!("no row {label}:\n{html}"))
            .to_owned()
    };
    assert!(row("gzip on the fly").contains("<td class=\"n\">2</td>"));
    assert!(row("gzip precompressed")
        .ends_with("<td class=\"n\">-</td><td class=\"n\">-</td><td class=\"n\">-</td></tr>"));
    assert!(
        html.contains("gzip on the fly</text>")
            && html.contains("(uncompressed size unknown)</text>")
    );
    let status = String::from_utf8_lossy(&a.get("/server-status", None).body).into_owned();
    let section = &status[status
        .find("<h3>Bytes by coding sent</h3>")
        .expect("section")..];
    let mine = &html[figures..chart];
    let tables = |t: &str| t[..t.rfind("</table>").expect("tables")].to_owned();
    assert_eq!(tables(mine), tables(section), "the same figures");
    let head = raw_request(&a, "HEAD", "/gzip-disk-ng-status", &[]);
    assert_eq!((head.status, head.after_head.len()), (200, 0));
    assert_eq!(
        head.header("Content-Type"),
        Some("text/html; charset=utf-8")
    );
    let length = head
        .header("Content-Length")
        .and_then(|n| n.parse::<usize>().ok());
    assert!(
        length.is_some_and(|n| n.abs_diff(html.len()) < 10),
        "{length:?}"
    );
    let auto_page = String::from_utf8(a.get("/gzip-disk-ng-status?auto", None).body).unwrap();
    let ours: BTreeMap<String, String> = auto(&a)
        .into_iter()
        .filter(|(k, _)| k.starts_with("GzipDiskNg"))
        .collect();
    let page_keys: BTreeMap<String, String> = auto_page
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    assert_eq!(page_keys, ours);
    let post = a.request("/gzip-disk-ng-status", &["-X", "POST", "-d", "x"]);
    assert_eq!(post.status, 405);
    a.stop();
}

/// The compressor as an admin looks for it: every line about it in the
/// error log carries the module's tag, and `ps -ef` shows its name, while
/// the parent's command line stays as it was.
#[test]
fn the_compressor_is_tagged_in_the_log_and_named_in_ps() {
    let opts = Options {
        dir: "SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On".into(),
        server: format!("{LOCATIONS}GzipDiskNgCacheRoot {{docroot}}/../cache\n"),
        ..options(Mpm::Event)
    };
    let mut a = Apache::start(opts, |d| {
        put(d, "x.html", &page(80_000, 7));
        make_cache_root(&d.join("../cache"));
    });
    let ppid = apache_pid(&a);
    let mut pid = 0;
    wait_for("the compressor", || {
        pid = compressors(ppid).first().copied().unwrap_or(0);
        pid > 0
    });
    assert_eq!(a.get("/x.html", Some("gzip")).status, 200);
    wait_for("the copies", || settled(&auto(&a)));
    let cmdline = |p: i32| {
        let raw = fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
        String::from_utf8_lossy(&raw)
            .replace('\0', " ")
            .trim()
            .to_owned()
    };
    assert_eq!(cmdline(pid), "apache2: gdn-compressor");
    let parent = cmdline(ppid);
    assert!(
        parent.contains(APACHE) && !parent.contains("gdn-compressor"),
        "{parent}"
    );
    let ps = Command::new("ps").arg("-ef").output().expect("ps");
    let found: Vec<String> = String::from_utf8_lossy(&ps.stdout)
        .lines()
        .filter(|l| l.contains("gdn-compressor"))
        .map(str::to_owned)
        .collect();
    assert!(
        found
            .iter()
            .any(|l| l.split_whitespace().nth(1) == Some(&pid.to_string())),
        "ps -ef | grep gdn-compressor: {found:?}"
    );
    Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    wait_for("a new compressor", || {
        compressors(ppid).first().is_some_and(|&p| p != pid)
    });
    let log = a.error_log();
    let about: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("gdn-compressor") || l.contains(&format!("[pid {pid}")))
        .collect();
    assert!(
        about.iter().any(|l| l.contains("gdn-compressor started")),
        "{log}"
    );
    assert!(about.iter().any(|l| l.contains("died")), "{log}");
    let untagged: Vec<&&str> = about
        .iter()
        .filter(|l| !l.contains("[gzip_disk_ng:"))
        .collect();
    assert!(
        untagged.is_empty(),
        "lines without the module's tag: {untagged:?}"
    );
    a.stop();
}

/// The pixels of an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium
/// writes), as RGB triples.
fn png_pixels(png: &[u8]) -> Vec<[u8; 3]> {
    let (mut at, mut data) = (8, Vec::new());
    let (mut width, mut channels) = (0usize, 0usize);
    while at + 8 <= png.len() {
        let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
        let body = &png[at + 8..at + 8 + len];
        match &png[at + 4..at + 8] {
            b"IHDR" => {
                width = u32::from_be_bytes(body[0..4].try_into().unwrap()) as usize;
                assert_eq!((body[8], body[12]), (8, 0), "8 bits, not interlaced");
                channels = match body[9] {
                    2 => 3,
                    6 => 4,
                    t => panic!("colour type {t}"),
                };
            }
            b"IDAT" => data.extend_from_slice(body),
            _ => {}
        }
        at += 12 + len;
    }
    let mut raw = Vec::new();
    use std::io::Read;
    flate2::read::ZlibDecoder::new(&data[..])
        .read_to_end(&mut raw)
        .expect("zlib");
    let stride = width * channels;
    let mut prev = vec![0u8; stride];
    let mut out = Vec::new();
    for line in raw.chunks(stride + 1) {
        let mut cur = line[1..].to_vec();
        for i in 0..stride {
            let a = if i >= channels {
                cur[i - channels] as i16
            } else {
                0
            };
            let (b, c) = (
                prev[i] as i16,
                if i >= channels {
                    prev[i - channels] as i16
                } else {
                    0
                },
            );
            let add = match line[0] {
                0 => 0,
                1 => a,
                2 => b,
                3 => (a + b) / 2,
                _ => {
                    let p = a + b - c;
                    let (pa, pb, pc) = ((p - a).abs(), (p - b).abs(), (p - c).abs());
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
            };
            cur[i] = cur[i].wrapping_add(add as u8);
        }
        out.extend(cur.chunks(channels).map(|p| [p[0], p[1], p[2]]));
        prev = cur;
    }
    out
}

/// Headless Chromium's screenshot of `url`, `size` as "W,H".
fn screenshot(url: &str, size: &str) -> Vec<u8> {
    const CHROMIUM: &str = "/usr/bin/chromium";
    let dir = tempfile::tempdir().expect("tempdir");
    let png = dir.path().join("shot.png");
    let out = Command::new("timeout")
        .args(["-k", "10", "120", CHROMIUM])
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .args(["--disable-background-networking", "--hide-scrollbars"])
        .args([
            "--force-color-profile=srgb",
            "--force-device-scale-factor=1",
        ])
        .arg(format!("--window-size={size}"))
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("profile").display()
        ))
        .arg(format!("--screenshot={}", png.display()))
        .arg(url)
        .output()
        .expect("run chromium");
    let bytes = fs::read(&png).unwrap_or_default();
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000,
        "no screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    bytes
}

/// The status pages as an admin sees them, rendered by headless
/// Chromium: mod_status's section (kept at target/status-section.png)
/// and the module's own page, whose chart's bars must show in the
/// picture (kept at target/status-page.png; with GDN_UPDATE_DOCS=1, also
/// at docs/status-page.png, the picture in docs/status.md).
#[test]
fn chromium_renders_the_status_pages() {
    if !Path::new("/usr/bin/chromium").exists() {
        skip("chromium not installed (scripts/test installs it)");
        return;
    }
    let mut a_len = 0;
    let opts = Options {
        dir: "SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On\n\
              SetOutputFilter BROTLI_COMPRESS;DEFLATE"
            .into(),
        server: format!("{LOCATIONS}GzipDiskNgCacheRoot {{docroot}}/../cache\n"),
        ..filtered()
    };
    let mut a = Apache::start(opts, |d| {
        a_len = fill(d) as u64;
        publish(d, "b.html", &page(40_000, 9), false, &[".br"]);
        make_cache_root(&d.join("../cache"));
    });
    // A day's traffic in small: browsers, gzip-only clients, none.
    for round in 0..3 {
        for path in [
            "/a.html",
            "/g.html",
            "/b.html",
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
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
    let section = screenshot(&a.url("/server-status"), "1000,2700");
    let _ = fs::write(target.join("status-section.png"), &section);
    let html = String::from_utf8_lossy(&a.get("/server-status", None).body).into_owned();
    assert!(html.contains("<h2>mod_gzip_disk_ng</h2>") && html.contains("saved"));
    let shot = screenshot(&a.url("/gzip-disk-ng-status"), "1000,1950");
    let _ = fs::write(target.join("status-page.png"), &shot);
    let pixels = png_pixels(&shot);
    let near = |p: &[u8; 3], c: [u8; 3]| p.iter().zip(c).all(|(&x, y)| x.abs_diff(y) <= 3);
    let sent = pixels
        .iter()
        .filter(|p| near(p, [0x08, 0x51, 0x9c]))
        .count();
    let uncompressed = pixels
        .iter()
        .filter(|p| near(p, [0x9e, 0xca, 0xe1]))
        .count();
    assert!(
        sent > 2000 && uncompressed > 5000,
        "bars drawn: {sent} sent, {uncompressed} uncompressed pixels"
    );
    if std::env::var_os("GDN_UPDATE_DOCS").is_some() {
        fs::write(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/status-page.png"),
            &shot,
        )
        .expect("docs/status-page.png");
    }
    a.stop();
}

//! Soak with live republish: concurrent clients with mixed Accept-Encoding
//! while the same files are republished atomically (write temp, rename)
//! every 100 ms. Every response must be complete, decode to one of the
//! published versions, and carry headers that match it; no 5xx; child RSS
//! growth stays under half of what leaking one 64 KiB buffer per
//! decompressed response would add. Each half lasts until it has served
//! enough decoded responses for that allowance to stand clear of the
//! noise and the files were republished under load, and at least half of
//! `SOAK_SECS` (8 s by default, 8 clients; `SOAK_SECS=600` for a long run,
//! 64 clients unless `SOAK_CLIENTS` says otherwise): counts, not speeds,
//! with a hang guard. Clients alternate HTTP/1.1 and h2c.

mod common;

use common::*;
use gdn_core::coding::Coding;
use gdn_core::encode::Levels;
use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

const VERSIONS: u64 = 8;
/// Accept-Encoding values the clients cycle through: every coding, and
/// identity half the time (decoded on the fly for the files published
/// without an original).
const AES: [&str; 8] = [
    "gzip",
    "identity",
    "br",
    "identity",
    "zstd",
    "identity",
    "gzip, br, zstd",
    "identity",
];

fn version(name: usize, v: u64) -> Vec<u8> {
    page(
        40_000 + (v as usize) * 3_001 + name * 7,
        v * 100 + name as u64,
    )
}

/// Writes `data` to `path` atomically.
fn atomic_write(path: &Path, data: &[u8], mtime: SystemTime) {
    let tmp = path.with_extension(format!(
        "tmp{}",
        std::process::id() as u64
            ^ mtime
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
    ));
    fs::write(&tmp, data).unwrap();
    set_mtime(&tmp, mtime);
    fs::rename(&tmp, path).unwrap();
}

/// Publishes version `v` of file `name`: siblings first, then the original.
fn republish(dir: &Path, name: usize, v: u64, with_original: bool) {
    let data = version(name, v);
    let base = dir.join(format!("f{name}.html"));
    let now = SystemTime::now();
    // Fast levels keep the 100 ms republish pace.
    let levels = Levels {
        brotli_quality: 4,
        zstd: 3,
        ..fast()
    };
    for c in Coding::ALL {
        atomic_write(
            &sibling(&base, c.suffixes()[0]),
            &encoded_with(c, &levels, &data),
            now,
        );
    }
    if with_original {
        atomic_write(&base, &data, now);
    }
}

/// The resident sets of Apache's children, summed, in kB.
fn child_rss_kb(a: &Apache) -> u64 {
    a.child_pids()
        .iter()
        .filter_map(|p| proc_status_kb(&p.to_string(), "VmRSS"))
        .sum()
}

#[test]
fn soak_with_live_republish() {
    let secs: u64 = std::env::var("SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    const FILES: usize = 4;
    let a = Apache::start(
        Options {
            dir: "SetHandler gzip-disk-ng\n".into(),
            ..Default::default()
        },
        |d| {
            for n in 0..FILES {
                republish(d, n, 0, n % 2 == 0);
            }
        },
    );
    // All published bodies, by file.
    let versions: Vec<Vec<Vec<u8>>> = (0..FILES)
        .map(|n| (0..VERSIONS).map(|v| version(n, v)).collect())
        .collect();
    let versions = Arc::new(versions);
    let long_run = std::env::var_os("SOAK_SECS").is_some();
    let clients_n: usize = std::env::var("SOAK_CLIENTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if long_run { 64 } else { 8 });
    // Warm up the children with the load they will see (as many clients at
    // once, every coding and protocol) before the first RSS sample, so
    // threads, stacks and buffers reached at first load are not counted as
    // growth.
    let warm: Vec<_> = (0..clients_n)
        .map(|i| {
            let base = a.url("");
            std::thread::spawn(move || {
                for j in 0..10 {
                    let ae = ["gzip", "br", "zstd", "identity", "gzip, br, zstd"][(i + j) % 5];
                    let mut args = vec!["-H".to_string(), format!("Accept-Encoding: {ae}")];
                    if (i + j).is_multiple_of(2) {
                        args.push("--http2-prior-knowledge".into());
                    }
                    curl(&format!("{base}/f{}.html", (i + j) % FILES), &args);
                }
            })
        })
        .collect();
    for w in warm {
        w.join().unwrap();
    }
    let rss_before = child_rss_kb(&a);

    let stop = Arc::new(AtomicBool::new(false));
    let docroot = a.docroot.clone();
    // Republish rounds done.
    let rounds_done = Arc::new(AtomicUsize::new(0));
    let publisher = {
        let (stop, rounds_done) = (stop.clone(), rounds_done.clone());
        std::thread::spawn(move || {
            let mut v = 1;
            while !stop.load(Ordering::Relaxed) {
                for n in 0..FILES {
                    republish(&docroot, n, v % VERSIONS, n % 2 == 0);
                }
                v += 1;
                rounds_done.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(100));
            }
            v
        })
    };
    let ok = Arc::new(AtomicUsize::new(0));
    // Good responses over h2c, and decoded on the fly (those allocate the
    // 64 KiB output chunk).
    let ok_h2 = Arc::new(AtomicUsize::new(0));
    let decompressed = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    // ETag → body length seen: one ETag must always mean one representation.
    let etags = Arc::new(Mutex::new(HashMap::<String, usize>::new()));
    let clients_stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..clients_n)
        .map(|i| {
            let (ok, ok_h2, decompressed, failures, etags, versions, stop) = (
                ok.clone(),
                ok_h2.clone(),
                decompressed.clone(),
                failures.clone(),
                etags.clone(),
                versions.clone(),
                clients_stop.clone(),
            );
            let base = a.url("");
            std::thread::spawn(move || {
                let mut j = i;
                while !stop.load(Ordering::Relaxed) {
                    j += 1;
                    let n = (j / 2) % FILES;
                    let ae = AES[j % AES.len()];
                    let h2 = (i + j / AES.len()).is_multiple_of(2);
                    let mut args = vec!["-H".to_string(), format!("Accept-Encoding: {ae}")];
                    if h2 {
                        args.push("--http2-prior-knowledge".into());
                    }
                    let r = curl(&format!("{base}/f{n}.html"), &args);
                    let fail = |m: String| {
                        failures
                            .lock()
                            .unwrap()
                            .push(format!("f{n} {ae} h2={h2}: {m}"))
                    };
                    if r.status != 200 || r.exit != 0 {
                        fail(format!("status {} exit {}", r.status, r.exit));
                        continue;
                    }
                    if r.header("Content-Length").map(|l| l.parse::<usize>().ok())
                        != Some(Some(r.body.len()))
                        && !h2
                    {
                        fail(format!(
                            "Content-Length {:?} vs body {}",
                            r.header("Content-Length"),
                            r.body.len()
                        ));
                        continue;
                    }
                    let body = match oracle_decode(r.header("Content-Encoding"), &r.body) {
                        Ok(b) => b,
                        Err(e) => {
                            fail(e);
                            continue;
                        }
                    };
                    if !versions[n].contains(&body) {
                        fail(format!(
                            "body of {} bytes is no published version",
                            body.len()
                        ));
                        continue;
                    }
                    let Some(tag) = r.header("ETag") else {
                        fail("a 200 without an ETag".to_owned());
                        continue;
                    };
                    let key = format!("{n} {tag}");
                    let mut e = etags.lock().unwrap();
                    let prev = *e.entry(key).or_insert(r.body.len());
                    if prev != r.body.len() {
                        drop(e);
                        fail(format!(
                            "ETag {tag} named bodies of {prev} and {} bytes",
                            r.body.len()
                        ));
                        continue;
                    }
                    drop(e);
                    ok.fetch_add(1, Ordering::Relaxed);
                    if h2 {
                        ok_h2.fetch_add(1, Ordering::Relaxed);
                    }
                    if r.header("Mod-Gzip-Disk-Ng") == Some(":-(") {
                        decompressed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    // A half ends once it has served PER_HALF more decoded responses
    // (each would leak 64 KiB) and 3 more republish rounds ran under the
    // load, and half of SOAK_SECS has passed; the guard only stops a hang.
    const PER_HALF: usize = 100;
    let half = Duration::from_secs(secs) / 2;
    let guard = Duration::from_secs(300 + 2 * secs);
    let started = Instant::now();
    let end_of_half = |k: usize| {
        let from = Instant::now();
        let (d0, r0) = (
            decompressed.load(Ordering::Relaxed),
            rounds_done.load(Ordering::Relaxed),
        );
        while decompressed.load(Ordering::Relaxed) < d0 + PER_HALF
            || rounds_done.load(Ordering::Relaxed) < r0 + 3
            || from.elapsed() < half
        {
            let failed = failures.lock().unwrap().len();
            assert!(
                started.elapsed() < guard && failed < 100,
                "hang guard: half {k} not over in {guard:?} ({} decoded, {} rounds, {failed} failures)",
                decompressed.load(Ordering::Relaxed),
                rounds_done.load(Ordering::Relaxed),
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    // The second sample: halfway, once every thread and buffer the load
    // reaches has been reached; growth after it is what a leak would add.
    end_of_half(1);
    let rss_mid = child_rss_kb(&a);
    let decompressed_mid = decompressed.load(Ordering::Relaxed);
    end_of_half(2);
    clients_stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let rounds = publisher.join().unwrap();
    let rss_after = child_rss_kb(&a);
    let failures = failures.lock().unwrap();
    let ok = ok.load(Ordering::Relaxed);
    let ok_h2 = ok_h2.load(Ordering::Relaxed);
    let decompressed = decompressed.load(Ordering::Relaxed);
    eprintln!(
        "soak: {clients_n} clients, {ok} good responses ({ok_h2} h2c, {decompressed} decompressed), {} failures, {rounds} republish rounds, child RSS {rss_before} -> {rss_mid} -> {rss_after} kB",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures, first: {:#?}",
        failures.len(),
        &failures[..failures.len().min(10)]
    );
    assert!(
        ok_h2 > 0 && ok_h2 < ok,
        "both protocols: {ok_h2} h2c of {ok}"
    );
    // Leaking one 64 KiB buffer per decompressed response would add at
    // least 64 kB each in the second half; allow half that (the second
    // half served at least PER_HALF of them, by its end's condition).
    let late = decompressed - decompressed_mid;
    let allowed_kb = late as u64 * 32;
    assert!(
        rss_after < rss_mid + allowed_kb,
        "child RSS grew from {rss_mid} to {rss_after} kB in the second half, over {allowed_kb} kB for {late} decompressed responses"
    );
    assert!(!a.error_log().contains("panic"), "{}", a.error_log());
    a.assert_no_crash();
}

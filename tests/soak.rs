//! Soak with live republish: concurrent clients with mixed Accept-Encoding
//! while the same files are republished atomically (write temp, rename)
//! every 100 ms. Every response must be complete, decode to one of the
//! published versions, and carry headers that match it; no 5xx; child RSS
//! growth stays bounded. Short by default; `SOAK_SECS=600` for a long run.

mod common;

use common::*;
use mod_gzip_disk_ng::coding::Coding;
use mod_gzip_disk_ng::decode::decode_all;
use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

const VERSIONS: u64 = 8;

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
    let mut br = Vec::new();
    {
        use std::io::Write;
        // A fast quality keeps the 100 ms republish pace.
        let mut w = brotli::CompressorWriter::new(&mut br, 4096, 4, 20);
        w.write_all(&data).unwrap();
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &data).unwrap();
    let gz = gz.finish().unwrap();
    let zst = zstd::bulk::compress(&data, 3).unwrap();
    for (suffix, enc) in [(".gz", gz), (".br", br), (".zst", zst)] {
        atomic_write(
            Path::new(&format!("{}{}", base.display(), suffix)),
            &enc,
            now,
        );
    }
    if with_original {
        atomic_write(&base, &data, now);
    }
}

fn child_rss_kb(root_pid: i32) -> u64 {
    let mut total = 0;
    if let Ok(entries) = fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let ppid: i32 = stat
                .rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().nth(1))
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            if ppid != root_pid {
                continue;
            }
            if let Ok(status) = fs::read_to_string(format!("/proc/{pid}/status")) {
                for l in status.lines() {
                    if let Some(v) = l.strip_prefix("VmRSS:") {
                        total += v
                            .trim()
                            .trim_end_matches(" kB")
                            .trim()
                            .parse::<u64>()
                            .unwrap_or(0);
                    }
                }
            }
        }
    }
    total
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
    let pid: i32 = fs::read_to_string(a.root.path().join("httpd.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Warm up the children before the first RSS sample.
    for n in 0..FILES {
        for ae in ["gzip", "br", "zstd", "identity"] {
            a.get(&format!("/f{n}.html"), Some(ae));
        }
    }
    let rss_before = child_rss_kb(pid);

    let stop = Arc::new(AtomicBool::new(false));
    let docroot = a.docroot.clone();
    let publisher = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut v = 1;
            while !stop.load(Ordering::Relaxed) {
                for n in 0..FILES {
                    republish(&docroot, n, v % VERSIONS, n % 2 == 0);
                }
                v += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            v
        })
    };
    let ok = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    // ETag → body length seen: one ETag must always mean one representation.
    let etags = Arc::new(Mutex::new(HashMap::<String, usize>::new()));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let clients: Vec<_> = (0..4)
        .map(|i| {
            let (ok, failures, etags, versions) = (
                ok.clone(),
                failures.clone(),
                etags.clone(),
                versions.clone(),
            );
            let base = a.url("");
            std::thread::spawn(move || {
                let mut j = i;
                while Instant::now() < deadline {
                    j += 1;
                    let n = j % FILES;
                    let ae = ["gzip", "br", "zstd", "identity", "gzip, br, zstd"][j % 5];
                    let h2 = j % 3 == 0;
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
                    let body = match r.header("Content-Encoding") {
                        None => r.body.clone(),
                        Some(ce) => match Coding::from_token(ce).map(|c| decode_all(c, &r.body)) {
                            Some(Ok(b)) => b,
                            other => {
                                fail(format!(
                                    "{ce} body does not decode: {:?}",
                                    other.map(|o| o.err())
                                ));
                                continue;
                            }
                        },
                    };
                    if !versions[n].contains(&body) {
                        fail(format!(
                            "body of {} bytes is no published version",
                            body.len()
                        ));
                        continue;
                    }
                    if let Some(tag) = r.header("ETag") {
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
                    }
                    ok.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let rounds = publisher.join().unwrap();
    let rss_after = child_rss_kb(pid);
    let failures = failures.lock().unwrap();
    let ok = ok.load(Ordering::Relaxed);
    eprintln!(
        "soak: {ok} good responses, {} failures, {rounds} republish rounds, child RSS {rss_before} -> {rss_after} kB",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures, first: {:#?}",
        failures.len(),
        &failures[..failures.len().min(10)]
    );
    assert!(ok > 50, "too few requests: {ok}");
    assert!(rounds > 5, "publisher too slow: {rounds}");
    assert!(
        rss_after < rss_before + 64 * 1024,
        "child RSS grew from {rss_before} to {rss_after} kB"
    );
    assert!(!a.error_log().contains("panic"), "{}", a.error_log());
    a.assert_no_crash();
}

//! On-demand compression through a real Apache: a miss answers as before
//! and queues the file; the compressor (its own process, supervised by
//! Apache's parent) writes what `gzip-disk-ng compress` writes into the
//! cache; later requests are served from there as a sibling is, under
//! event, worker and prefork, HTTP/1.1 and h2c. Fresh siblings first, a
//! stale one giving way to a copy; decoded copies for a sibling without
//! its original; a republished original is a new version; files that are
//! not compressed; the compressor killed and restarted; the channel
//! without a name; `apache2 -t` on bad cache roots, and its warning when
//! the server's user cannot use one; unwritable and full
//! caches; two instances on one cache root (copies named by the bytes
//! they were made from); planted copies and roots
//! others can write; the size limit after each job.

mod common;

use common::*;
use gdn_compressor::key::{copy_name, Kind, NameBuf};
use gdn_core::coding::Coding;
use gdn_core::dictionary;
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The cache root beside the docroot.
fn cache_of(a: &Apache) -> PathBuf {
    a.root.path().join("cache")
}

/// Options with the cache beside the docroot and on-demand on.
fn on_demand(mpm: Mpm) -> Options {
    Options {
        mpm,
        dir: "SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On".into(),
        server: format!("GzipDiskNgCacheRoot {{docroot}}/../cache{METRICS}"),
        ..Options::default()
    }
}

/// The metrics handler, whose counters tell when the compressor is done.
const METRICS: &str = "\n<Location /metrics>\n    SetHandler gzip-disk-ng-metrics\n</Location>";

/// Waits until the compressor has settled every copy it was sent (made,
/// not worth it, or failed), by the module's own counters: what those
/// jobs would write or log has then been written (a failure is counted
/// before its warning is logged: see `settled_then_warnings`).
fn wait_jobs_settled(a: &Apache) {
    let m = |s: &str| {
        metric(
            a,
            &format!("gzip_disk_ng_ondemand_copies_total{{state=\"{s}\"}}"),
        )
    };
    wait_for("every copy sent to the compressor settled", || {
        let queued = m("queued");
        queued > 0 && m("done") + m("not_worth") + m("failed") >= queued
    });
}

/// The compressor's warnings once every job settled and the first
/// warning was logged (its jobs count a failure, then log it).
fn settled_then_warnings(a: &Apache) -> Vec<String> {
    wait_jobs_settled(a);
    wait_for("a compressor warning", || {
        !compressor_warnings(a).is_empty()
    });
    compressor_warnings(a)
}

/// Fills the docroot with `files` and makes the cache root, writable by
/// the user Apache runs as.
fn fill(d: &Path, files: &[(&str, &[u8])]) {
    for (name, bytes) in files {
        fs::write(d.join(name), bytes).expect("write");
        // Older than a second, so Apache's ETags are strong.
        set_mtime(
            &d.join(name),
            std::time::SystemTime::now() - Duration::from_secs(100),
        );
    }
    make_cache_root(&d.join("../cache"));
}

/// What `gzip-disk-ng compress` writes for `data` in `coding`.
fn published(data: &[u8], suffix: &str) -> Vec<u8> {
    let d = tempfile::tempdir().expect("tempdir");
    let p = d.path().join("page.html");
    fs::write(&p, data).expect("write");
    let out = publish_tool([
        std::ffi::OsStr::new("compress"),
        std::ffi::OsStr::new("-q"),
        p.as_os_str(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    fs::read(d.path().join(format!("page.html{suffix}"))).expect("sibling")
}

const CODINGS: [(&str, &str); 3] = [("zstd", ".zst"), ("br", ".br"), ("gzip", ".gz")];

/// Miss, then hit with the publish tool's exact bytes, for each coding.
fn miss_then_hit(a: &Apache, path: &str, data: &[u8], h2: bool) {
    let extra: &[&str] = if h2 {
        &["--http2-prior-knowledge"]
    } else {
        &[]
    };
    for (coding, suffix) in CODINGS {
        let want = published(data, suffix);
        let ae = format!("Accept-Encoding: {coding}");
        let mut args = vec!["-H", ae.as_str()];
        args.extend_from_slice(extra);
        // Made fast first, then again at the publish tool's levels once
        // served.
        wait_for(
            &format!("{coding} copy of {path} at the best level"),
            || {
                let r = a.request(path, &args);
                assert_eq!(r.status, 200);
                r.header("Content-Encoding") == Some(coding) && r.body == want
            },
        );
        let r = a.request(path, &args);
        assert!(
            r.body == want,
            "{coding}: cached bytes differ from the publish tool's"
        );
        assert_eq!(r.header("Mod-Gzip-Disk-Ng"), Some(":-)"));
        assert!(
            r.tokens("Vary")
                .iter()
                .any(|t| t.eq_ignore_ascii_case("accept-encoding")),
            "{:?}",
            r.header("Vary")
        );
        let etag = r.header("ETag").expect("etag").to_string();
        assert!(
            etag.ends_with(&format!("-{coding}\"")) && !etag.starts_with("W/"),
            "{etag}"
        );
        assert!(a.last_access_ends_with(&format!("{coding} cached")));
        let inm = format!("If-None-Match: {etag}");
        let mut args304 = args.clone();
        args304.extend(["-H", inm.as_str()]);
        assert_eq!(a.request(path, &args304).status, 304);
        let mut range = args.clone();
        let if_range = a.if_range(path, &args);
        range.extend(["-H", "Range: bytes=0-9", "-H", &if_range]);
        let r = a.request(path, &range);
        assert_eq!((r.status, r.body.as_slice()), (206, &want[..10]));
    }
}

#[test]
fn miss_then_hit_with_the_publish_tools_bytes_under_every_mpm() {
    let data = page(120_000, 21);
    for mpm in [Mpm::Event, Mpm::Worker, Mpm::Prefork] {
        let a = Apache::start(on_demand(mpm), |d| fill(d, &[("page.html", &data)]));
        let r = a.get("/page.html", Some("zstd, br, gzip"));
        assert_eq!((r.status, r.header("Content-Encoding")), (200, None));
        assert!(r.body == data);
        assert!(r
            .tokens("Vary")
            .iter()
            .any(|t| t.eq_ignore_ascii_case("accept-encoding")));
        assert!(
            a.last_access_ends_with("original queued"),
            "{}",
            a.access_log()
        );
        miss_then_hit(&a, "/page.html", &data, false);
        miss_then_hit(&a, "/page.html", &data, true);
        // A client accepting nothing still gets the original.
        let r = a.get("/page.html", None);
        assert!(r.body == data && r.header("Content-Encoding").is_none());
        let pid = apache_pid(&a);
        assert_eq!(compressors(pid).len(), 1, "one compressor");
        assert!(a.error_log().contains("gdn-compressor started (pid"));
        a.assert_no_crash();
    }
}

#[test]
fn a_republished_original_is_a_new_version() {
    let (v1, v2) = (page(50_000, 22), page(51_000, 23));
    let a = Apache::start(on_demand(Mpm::Event), |d| fill(d, &[("p.html", &v1)]));
    wait_for("v1 copy", || {
        a.get("/p.html", Some("gzip")).coding() == Some("gzip")
    });
    fs::write(a.docroot.join("p.html"), &v2).expect("republish");
    let r = a.get("/p.html", Some("gzip"));
    assert!(r.decoded() == v2, "a copy of the old version was served");
    wait_for("v2 copy", || {
        a.get("/p.html", Some("gzip")).coding() == Some("gzip")
    });
    let r = a.get("/p.html", Some("gzip"));
    assert!(r.decoded() == v2);
    a.assert_no_crash();
}

#[test]
fn a_sibling_without_its_original_is_decoded_once_then_served_from_a_copy() {
    let data = page(200_000, 24);
    let a = Apache::start(on_demand(Mpm::Event), |d| {
        fill(d, &[("only.html.gz", &gzip(&data))])
    });
    let first = a.get("/only.html", None);
    assert!(first.body == data);
    assert!(a.last_access_ends_with("gzip decompressed"));
    wait_for("decoded copy", || {
        a.get("/only.html", None);
        a.last_access_ends_with("gzip decompressed cached")
    });
    let r = a.get("/only.html", None);
    assert!(r.body == data);
    assert_eq!(r.header("ETag"), first.header("ETag"));
    assert_eq!(r.header("Mod-Gzip-Disk-Ng"), Some(":-("));
    assert_eq!(
        r.header("Content-Length"),
        Some(data.len().to_string().as_str())
    );
    let h = a.request("/only.html", &["-I"]);
    assert_eq!(h.status, 200);
    a.assert_no_crash();
}

#[test]
fn incompressible_tiny_and_off_scope_files_are_never_cached() {
    let a = Apache::start(on_demand(Mpm::Event), |d| {
        fill(
            d,
            &[
                ("photo.png", &noise(50_000, 1)),
                ("tiny.html", b"<p>hi</p>"),
                ("noise.txt", &noise(60_000, 2)),
            ],
        )
    });
    for p in ["/photo.png", "/tiny.html", "/noise.txt"] {
        for _ in 0..3 {
            assert_eq!(a.get(p, Some("zstd, br, gzip")).status, 200);
        }
    }
    // The incompressible one is tried once and remembered as not worth it.
    wait_for("noise judged", || {
        copies(&cache_of(&a)).iter().any(|(_, n)| *n == 0)
    });
    wait_jobs_settled(&a);
    let all = copies(&cache_of(&a));
    assert!(all.iter().all(|(_, n)| *n == 0), "{all:?}");
    let r = a.get("/noise.txt", Some("zstd, br, gzip"));
    assert_eq!(r.header("Content-Encoding"), None);
    assert!(
        !a.last_access_ends_with("queued"),
        "queued again: {}",
        a.access_log()
    );
    a.assert_no_crash();
}

#[test]
fn a_killed_compressor_is_restarted_and_requests_go_on() {
    let data = page(80_000, 25);
    let a = Apache::start(on_demand(Mpm::Event), |d| {
        fill(d, &[("k.html", &data), ("l.html", &data[..40_000])])
    });
    let pid = apache_pid(&a);
    wait_for("a compressor", || compressors(pid).len() == 1);
    let old = compressors(pid)[0];
    assert_eq!(unsafe_kill(old), 0);
    assert_eq!(a.get("/k.html", Some("gzip")).status, 200);
    wait_for("a new compressor", || {
        compressors(pid).iter().any(|&p| p != old)
    });
    wait_for("a copy after the restart", || {
        a.get("/l.html", Some("br")).coding() == Some("br")
    });
    assert!(a.error_log().contains("died"), "{}", a.error_log());
    a.assert_no_crash();
}

/// The compressor's warning lines.
fn compressor_warnings(a: &Apache) -> Vec<String> {
    a.module_log()
        .into_iter()
        .filter(|l| l.contains(":warn]") && l.contains("gdn-compressor"))
        .collect()
}

/// `kill -9 pid`, by the kill command.
fn unsafe_kill(pid: i32) -> i32 {
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .map(|s| s.code().unwrap_or(1))
        .unwrap_or(1)
}

#[test]
fn the_job_channel_has_no_name_anyone_could_open() {
    let a = Apache::start(on_demand(Mpm::Event), |d| fill(d, &[]));
    let pid = apache_pid(&a);
    wait_for("a compressor", || compressors(pid).len() == 1);
    let c = compressors(pid)[0];
    let inodes: Vec<String> = fs::read_dir(format!("/proc/{c}/fd"))
        .expect("fds")
        .flatten()
        .filter_map(|e| fs::read_link(e.path()).ok())
        .map(|l| l.to_string_lossy().into_owned())
        .filter_map(|l| {
            l.strip_prefix("socket:[")
                .map(|s| s.trim_end_matches(']').to_string())
        })
        .collect();
    assert!(!inodes.is_empty(), "the compressor holds its channel");
    let unix = fs::read_to_string("/proc/net/unix").expect("/proc/net/unix");
    for line in unix.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() > 6 && inodes.contains(&f[6].to_string()) {
            assert!(f.len() == 7, "the channel has a name: {line}");
        }
    }
    a.assert_no_crash();
}

#[test]
fn configtest_refuses_a_plain_or_served_cache_root() {
    let d = world_readable_tempdir();
    let file = d.path().join("file");
    fs::write(&file, b"x").expect("write");
    let docs = d.path().join("docs");
    fs::create_dir_all(docs.join("cache")).expect("mkdir");
    for (lines, says) in [
        (
            format!("GzipDiskNgCacheRoot {}", file.display()),
            "not a directory",
        ),
        (
            format!(
                "DocumentRoot {}\nGzipDiskNgCacheRoot {}/cache",
                docs.display(),
                docs.display()
            ),
            "inside DocumentRoot",
        ),
        (
            format!(
                "DocumentRoot {}\nGzipDiskNgCacheRoot {}/docs/../docs/cache",
                docs.display(),
                d.path().display()
            ),
            "inside DocumentRoot",
        ),
    ] {
        let (ok, text) = configtest(&lines);
        assert!(!ok && text.contains(says), "{lines}: {text}");
    }
    let (ok, text) = configtest("GzipDiskNgCacheMaxSize 12Q");
    assert!(!ok && text.contains("GzipDiskNgCacheMaxSize"), "{text}");
    // A publish store is refused where its earlier versions would be
    // served: inside its tree or inside any DocumentRoot.
    let tree = d.path().join("tree");
    fs::create_dir_all(tree.join("store")).expect("mkdir");
    for (lines, says) in [
        (
            format!("GzipDiskNgDeltaStore {0} {0}/store", tree.display()),
            "inside the tree",
        ),
        (
            format!(
                "DocumentRoot {}\nGzipDiskNgDeltaStore {} {}/cache",
                docs.display(),
                tree.display(),
                docs.display()
            ),
            "inside DocumentRoot",
        ),
        (
            format!("GzipDiskNgDeltaStore {}", tree.display()),
            "two arguments",
        ),
    ] {
        let (ok, text) = configtest(&lines);
        assert!(
            !ok && text.contains(says) && text.contains("GzipDiskNgDeltaStore"),
            "{lines}: {text}"
        );
    }
    let (ok, text) = configtest(&format!(
        "DocumentRoot {}\nGzipDiskNgDeltaStore {} {}/store",
        docs.display(),
        tree.display(),
        d.path().display()
    ));
    assert!(ok, "{text}");
}

/// `apache2 -t` as an admin runs it: `User` set (as root; otherwise the
/// server runs as this user), and a cache root that is missing, or that
/// the server's user cannot write, passes with a warning naming the
/// directive and the remedy; one made for the server's user passes quietly.
#[test]
fn configtest_warns_when_the_server_user_cannot_use_the_cache_root() {
    let d = world_readable_tempdir();
    let docs = d.path().join("docs");
    fs::create_dir(&docs).expect("mkdir");
    let user = if is_root() {
        "nobody".to_string()
    } else {
        server_uid().to_string()
    };
    let root = d.path().join("cache");
    let shown = root.display().to_string();
    let lines = format!(
        "User nobody\nGroup nogroup\nDocumentRoot {}\nGzipDiskNgCacheRoot {shown}\n\
         GzipDiskNgCacheMaxSize 64M\nGzipDiskNgCompressorWorkers 2\nGzipDiskNgOnDemand On",
        docs.display()
    );
    let warned = |what: &str, remedy: &str| {
        let (ok, text) = configtest(&lines);
        assert!(ok && text.contains("Syntax OK"), "{what}: {text}");
        let warning = format!("GzipDiskNgCacheRoot {shown} {what}");
        assert!(
            text.contains(&warning)
                && text.contains(remedy)
                && text.contains("[gzip_disk_ng:warn]"),
            "{what}: {text}"
        );
    };
    warned(
        "does not exist",
        &format!("install -d -o {user} -m 0750 {shown}"),
    );
    // mkdir as the admin (root), or a root the user made read-only.
    fs::create_dir(&root).expect("mkdir");
    fs::set_permissions(&root, fs::Permissions::from_mode(0o555)).expect("chmod");
    warned(
        &format!("cannot be written by User {user}"),
        &format!("chown {user} {shown}"),
    );
    fs::remove_dir(&root).expect("rmdir");
    make_cache_root(&root);
    let (ok, text) = configtest(&lines);
    assert!(ok && !text.contains("GzipDiskNgCacheRoot"), "{text}");
}

#[test]
fn many_clients_missing_one_file_compress_it_once_per_coding() {
    let data = page(300_000, 26);
    let a = Apache::start(on_demand(Mpm::Event), |d| fill(d, &[("hot.html", &data)]));
    std::thread::scope(|s| {
        for i in 0..16 {
            let a = &a;
            s.spawn(move || {
                let ae = ["zstd", "br", "gzip", "zstd, br, gzip"][i % 4];
                for _ in 0..5 {
                    assert_eq!(a.get("/hot.html", Some(ae)).status, 200);
                }
            });
        }
    });
    for (coding, _) in CODINGS {
        wait_for(coding, || {
            a.get("/hot.html", Some(coding)).coding() == Some(coding)
        });
    }
    let made: Vec<String> = a
        .module_log()
        .into_iter()
        .filter(|l| l.contains("hot.html: ") && l.contains(" copy of "))
        .collect();
    // Temporaries of the copies being made again at the best level aside.
    let files: Vec<_> = copies(&cache_of(&a))
        .into_iter()
        .filter(|(name, _)| !name.starts_with('.'))
        .collect();
    assert_eq!(files.len(), 3, "one copy per coding: {files:?}");
    assert_eq!(made.len(), 3, "each coding compressed once: {made:#?}");
    a.assert_no_crash();
}

#[test]
fn the_size_cap_holds_while_a_hot_file_survives() {
    let pages: Vec<(String, Vec<u8>)> = (0..12)
        .map(|i| (format!("p{i}.html"), page(60_000, 100 + i)))
        .collect();
    let files: Vec<(&str, &[u8])> = pages
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    let mut opts = on_demand(Mpm::Event);
    // Room for about four gzip copies of these pages.
    opts.server += "\nGzipDiskNgCacheMaxSize 64K";
    let a = Apache::start(opts, |d| fill(d, &files));
    wait_for("hot copy", || {
        a.get("/p0.html", Some("gzip")).coding() == Some("gzip")
    });
    for (n, _) in &pages[1..] {
        let p = format!("/{n}");
        wait_for(n, || a.get(&p, Some("gzip")).coding() == Some("gzip"));
        // The hot file is asked for between every other.
        assert_eq!(
            a.get("/p0.html", Some("gzip")).coding(),
            Some("gzip"),
            "hot file evicted"
        );
        std::thread::sleep(Duration::from_millis(1100));
    }
    let total: u64 = copies(&cache_of(&a)).iter().map(|(_, n)| n).sum();
    assert!(total <= 64 << 10, "cache holds {total} bytes");
    a.assert_no_crash();
}

#[test]
fn restarts_reuse_the_cache() {
    let data = page(70_000, 27);
    let a = Apache::start(on_demand(Mpm::Event), |d| fill(d, &[("r.html", &data)]));
    wait_for("copy", || {
        a.get("/r.html", Some("br")).coding() == Some("br")
    });
    let pid = apache_pid(&a);
    let before = compressors(pid);
    for signal in ["-USR1", "-HUP"] {
        let st = std::process::Command::new("kill")
            .args([signal, &pid.to_string()])
            .status();
        assert!(st.is_ok_and(|s| s.success()));
        wait_for("a new compressor", || {
            let now = compressors(pid);
            now.len() == 1 && !before.contains(&now[0])
        });
        wait_for("served again", || {
            a.get("/r.html", Some("br")).status == 200
        });
        let r = a.get("/r.html", Some("br"));
        assert_eq!(
            r.coding(),
            Some("br"),
            "the copy was not reused after {signal}"
        );
        assert!(r.decoded() == data);
    }
    a.assert_no_crash();
}

#[test]
fn an_unwritable_cache_warns_once_and_requests_go_on() {
    let data = page(40_000, 28);
    let mut opts = on_demand(Mpm::Event);
    // A cache root that is a directory no one can write below: its
    // fan-out directories are files.
    opts.server = format!("GzipDiskNgCacheRoot {{docroot}}/../cache{METRICS}");
    let a = Apache::start(opts, |d| {
        fill(d, &[("u.html", &data), ("v.html", &data[..30_000])]);
        for i in 0..256 {
            fs::write(d.join(format!("../cache/{i:02x}")), b"not a directory").expect("block");
        }
    });
    for _ in 0..5 {
        for p in ["/u.html", "/v.html"] {
            let r = a.get(p, Some("gzip"));
            assert_eq!((r.status, r.header("Content-Encoding")), (200, None));
        }
        // Each round's jobs done before the next asks again.
        wait_jobs_settled(&a);
    }
    let warn = settled_then_warnings(&a);
    assert_eq!(warn.len(), 1, "{warn:#?}");
    a.assert_no_crash();
}

/// Version `i` of the soak page: distinct content, so a body names its
/// version.
fn soak_version(i: usize) -> Vec<u8> {
    let mut v = format!("<!-- version {i} -->\n").into_bytes();
    v.extend_from_slice(&page(90_000 + 1000 * (i % 7), 40 + i as u64));
    v
}

#[test]
fn republished_in_place_while_clients_run_every_body_is_a_version_and_its_etag_is_its_own() {
    let versions: Vec<Vec<u8>> = (0..12).map(soak_version).collect();
    let a = Apache::start(on_demand(Mpm::Event), |d| {
        fill(d, &[("soak.html", &versions[0])])
    });
    let seen = std::sync::Mutex::new(std::collections::HashMap::<String, usize>::new());
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for t in 0..4 {
            let (a, versions, seen, stop) = (&a, &versions, &seen, &stop);
            s.spawn(move || {
                let aes = ["zstd, br, gzip", "br", "gzip", "identity"];
                let mut i = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let ae = aes[(t + i) % aes.len()];
                    let h2 = (t + i) % 3 == 0;
                    let hdr = format!("Accept-Encoding: {ae}");
                    let mut args = vec!["-H", hdr.as_str()];
                    if h2 {
                        args.push("--http2-prior-knowledge");
                    }
                    let r = a.request("/soak.html", &args);
                    assert_eq!((r.status, r.exit), (200, 0), "{ae}");
                    let body = r.decoded();
                    let v = versions.iter().position(|v| *v == body);
                    let v = v.unwrap_or_else(|| panic!("{ae}: a body that was never published"));
                    let tag = r.header("ETag").unwrap_or_else(|| panic!("{ae}: no ETag"));
                    let key = format!("{tag} {}", r.coding().unwrap_or("identity"));
                    let mut seen = seen.lock().unwrap();
                    let was = *seen.entry(key.clone()).or_insert(v);
                    assert_eq!(was, v, "{key} named two versions");
                    drop(seen);
                    i += 1;
                }
            });
        }
        for (i, v) in versions.iter().enumerate().skip(1) {
            std::thread::sleep(Duration::from_millis(400));
            // In place: the new version renamed over the old name.
            let tmp = a.docroot.join(format!(".soak.{i}"));
            fs::write(&tmp, v).expect("write");
            set_mtime(
                &tmp,
                std::time::SystemTime::now() - Duration::from_secs(100 - i as u64),
            );
            fs::rename(&tmp, a.docroot.join("soak.html")).expect("rename");
        }
        std::thread::sleep(Duration::from_millis(1500));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let served = seen.lock().unwrap().len();
    assert!(served > 12, "only {served} representations seen");
    assert!(
        a.access_log().contains(" cached"),
        "no copy served during the soak"
    );
    a.assert_no_crash();
}

#[test]
fn a_full_cache_warns_once_and_requests_go_on() {
    let pages: Vec<(String, Vec<u8>)> = (0..6)
        .map(|i| (format!("f{i}.html"), noise_page(i)))
        .collect();
    let files: Vec<(&str, &[u8])> = pages
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    // A cache far smaller than the pages' copies: the disk fills up.
    let opts = Options {
        tmpfs: Some(Tmpfs {
            dir: "cache",
            size: "96k",
        }),
        ..on_demand(Mpm::Event)
    };
    let a = Apache::start(opts, |d| fill(d, &files));
    for _ in 0..4 {
        for (n, d) in &pages {
            let r = a.get(&format!("/{n}"), Some("zstd, br, gzip"));
            assert_eq!(r.status, 200);
            assert!(r.decoded() == *d, "{n}");
        }
        wait_jobs_settled(&a);
    }
    let warn = settled_then_warnings(&a);
    assert_eq!(warn.len(), 1, "{warn:#?}");
    assert!(warn[0].contains("No space left"), "{}", warn[0]);
    a.assert_no_crash();
}

/// A page that compresses, but not much: its copies fill a small cache.
fn noise_page(i: usize) -> Vec<u8> {
    let mut v = page(40_000, 60 + i as u64);
    v.extend_from_slice(&noise(60_000, 70 + i as u64));
    v
}

/// Names of the cache's copies made from the file `name` in the docroot
/// `d` (the SHA-256 of its bytes begins a copy's name).
fn copies_of(cache: &Path, d: &Path, name: &str) -> Vec<String> {
    let key = dictionary::to_hex(&dictionary::hash(&fs::read(d.join(name)).expect("file")));
    copies(cache)
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| {
            let file = name.rsplit('/').next().unwrap_or_default();
            file.split('.').next() == Some(key.as_str())
        })
        .collect()
}

/// Two instances on one cache root, serving copies of the same files
/// (new inodes, the mtimes kept, as `cp -a` and `rsync -t` leave them):
/// both compressors make copies, and each serves the other's.
#[test]
fn two_instances_share_a_cache_root_and_both_make_copies() {
    let (one, two) = (page(60_000, 31), page(50_000, 32));
    let a = Apache::start(on_demand(Mpm::Event), |d| {
        fill(d, &[("one.html", &one), ("two.html", &two)])
    });
    wait_for("the first compressor's start", || {
        !a.module_log_about("gdn-compressor: cache ").is_empty()
    });
    let cache = cache_of(&a);
    let opts = Options {
        server: format!("GzipDiskNgCacheRoot {}{METRICS}", cache.display()),
        ..on_demand(Mpm::Event)
    };
    let b = Apache::start(opts, |d| {
        for name in ["one.html", "two.html"] {
            let from = a.docroot.join(name);
            fs::copy(&from, d.join(name)).expect("copy");
            let mtime = fs::metadata(&from).and_then(|m| m.modified());
            set_mtime(&d.join(name), mtime.expect("mtime"));
        }
    });
    wait_for("the first's copy", || {
        a.get("/one.html", Some("zstd")).coding() == Some("zstd")
    });
    assert!(a.last_access_ends_with("zstd cached"), "{}", a.access_log());
    // The second learns the digest of its own file once (its compressor
    // reads it), then serves the copy the first made of those bytes.
    // Copies a compressor made (a copy made again at the best level once
    // served is not counted: it replaces one).
    let done = |s: &Apache| metric(s, "gzip_disk_ng_ondemand_copies_total{state=\"done\"}");
    assert!(copy_at(&cache, &a.docroot, "one.html", Kind::Coded(Coding::Zstd)).is_file());
    let first_done = done(&a);
    wait_for("the first's copy, served by the second", || {
        b.get("/one.html", Some("zstd")).coding() == Some("zstd")
    });
    let r = b.get("/one.html", Some("zstd"));
    assert_eq!(r.header("Mod-Gzip-Disk-Ng"), Some(":-)"));
    assert!(r.decoded() == one);
    assert!(b.last_access_ends_with("zstd cached"), "{}", b.access_log());
    assert_eq!(done(&b), 0, "the first's copy, not one of its own");
    // The second's compressor makes copies too; the first serves them.
    wait_for("the second's copy", || {
        b.get("/two.html", Some("br")).coding() == Some("br")
    });
    assert!(!copies_of(&cache, &b.docroot, "two.html").is_empty());
    assert!(copy_at(&cache, &b.docroot, "two.html", Kind::Coded(Coding::Br)).is_file());
    wait_for("the second's copy, served by the first", || {
        a.get("/two.html", Some("br")).coding() == Some("br")
    });
    let r = a.get("/two.html", Some("br"));
    assert_eq!(
        done(&a),
        first_done,
        "the second's copy, not one of its own"
    );
    assert!(r.decoded() == two);
    for s in [&a, &b] {
        let dropped = s.module_log_about("job dropped");
        assert!(dropped.is_empty(), "{dropped:#?}");
        s.assert_no_crash();
    }
}

/// Fresh siblings are the admin's choice and come first; a coding without
/// one is cached; a stale sibling gives way to the cache; a copy's ETag
/// is the one its sibling had (FileETag MTime Size, Apache's default).
#[test]
fn fresh_siblings_come_first_and_a_stale_one_gives_way_to_a_copy_with_its_etag() {
    let data = page(80_000, 41);
    let br = published(&data, ".br");
    let a = Apache::start(on_demand(Mpm::Event), |d| {
        fill(d, &[("s.html", &data), ("s.html.br", &br)]);
        // As the publish tool (and gzip -k) leave it: the original's mtime.
        let mtime = fs::metadata(d.join("s.html")).and_then(|m| m.modified());
        set_mtime(&d.join("s.html.br"), mtime.expect("mtime"));
    });
    for _ in 0..3 {
        let r = a.get("/s.html", Some("br"));
        assert_eq!((r.status, r.coding()), (200, Some("br")));
        assert!(r.body == br);
        assert!(
            a.last_access_ends_with("br precompressed"),
            "{}",
            a.access_log()
        );
    }
    let sibling_etag = a
        .get("/s.html", Some("br"))
        .header("ETag")
        .map(str::to_owned);
    // gzip has no sibling: it is cached, br is not.
    wait_for("gzip copy", || {
        a.get("/s.html", Some("gzip")).coding() == Some("gzip")
    });
    assert!(a.last_access_ends_with("gzip cached"));
    let kinds: Vec<String> = copies_of(&cache_of(&a), &a.docroot, "s.html");
    assert!(kinds.iter().all(|n| !n.ends_with(".br")), "{kinds:?}");
    // Older than its original: never served, the cache serves br instead.
    set_mtime(
        &a.docroot.join("s.html.br"),
        std::time::SystemTime::now() - Duration::from_secs(3600),
    );
    let r = a.get("/s.html", Some("br"));
    assert!(r.decoded() == data);
    assert_ne!(
        r.header("Mod-Gzip-Disk-Ng"),
        Some(":-)"),
        "the stale sibling was sent"
    );
    // Made fast first, then again at the publish tool's levels once
    // served.
    wait_for("br copy at the best level", || {
        let r = a.get("/s.html", Some("br"));
        r.coding() == Some("br") && r.body == br
    });
    let r = a.get("/s.html", Some("br"));
    assert!(a.last_access_ends_with("br cached"), "{}", a.access_log());
    assert!(r.body == br, "the copy is the publish tool's bytes");
    assert_eq!(r.header("ETag").map(str::to_owned), sibling_etag);
    a.assert_no_crash();
}

/// A copy made at the fast levels before a graceful restart is made
/// again at the best level once served after it: the compressor told to
/// stop writes its fast copies down, and the next one takes them over.
#[test]
fn a_fast_copy_made_before_a_restart_is_made_again_after_it() {
    let data = page(40_000, 71);
    let best = published(&data, ".br");
    let a = Apache::start(on_demand(Mpm::Event), |d| fill(d, &[("u.html", &data)]));
    let copy = copy_at(&cache_of(&a), &a.docroot, "u.html", Kind::Coded(Coding::Br));
    // Asked for, and made fast, but not served before the restart.
    a.get("/u.html", Some("br"));
    wait_for("the fast br copy", || {
        fs::metadata(&copy).is_ok_and(|m| m.len() > 0)
    });
    assert!(fs::read(&copy).expect("copy") != best, "made fast first");
    graceful(&a);
    wait_for("br copy at the best level after the restart", || {
        let r = a.get("/u.html", Some("br"));
        r.coding() == Some("br") && r.body == best
    });
    assert!(!a
        .module_log_about("copies made at the fast levels before a restart taken over")
        .is_empty());
    a.assert_no_crash();
}

/// The copy name of `kind` for the file `name` in the docroot `d` (the
/// SHA-256 of its bytes), under the cache root.
fn copy_at(cache: &Path, d: &Path, name: &str, kind: Kind) -> PathBuf {
    let source = dictionary::hash(&fs::read(d.join(name)).expect("original"));
    cache.join(copy_name(&source, kind, &mut NameBuf::new()))
}

/// What another local user could plant at a copy's name is never served:
/// a symlink (to a valid gzip stream the server can read) and, as root,
/// a regular file owned by another uid. The original is served instead.
#[test]
fn planted_copies_are_not_served() {
    let (one, two) = (page(40_000, 51), page(40_000, 52));
    let planted = gzip(b"planted content, not the page");
    let a = Apache::start(on_demand(Mpm::Event), |d| {
        fill(d, &[("one.html", &one), ("two.html", &two)]);
        let cache = d.join("../cache");
        let target = d.join("../planted.gz");
        fs::write(&target, &planted).expect("planted target");
        let link = copy_at(&cache, d, "one.html", Kind::Coded(Coding::Gzip));
        fs::create_dir_all(link.parent().unwrap()).expect("fan-out");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        if is_root() {
            let file = copy_at(&cache, d, "two.html", Kind::Coded(Coding::Gzip));
            fs::create_dir_all(file.parent().unwrap()).expect("fan-out");
            fs::write(&file, &planted).expect("planted file");
            std::os::unix::fs::chown(&file, Some(4242), Some(4242)).expect("chown");
        }
    });
    for _ in 0..8 {
        for (p, data) in [("/one.html", &one), ("/two.html", &two)] {
            let r = a.get(p, Some("gzip"));
            assert_eq!(r.status, 200);
            assert!(r.decoded() == *data, "{p}: a planted copy was served");
        }
        std::thread::sleep(Duration::from_millis(150));
    }
    a.assert_no_crash();
}

/// A copy is the server user's alone (0600) whatever its page's mode; one
/// that others could write (as copies were when they took their page's
/// mode) is never served, and is made anew.
#[test]
fn copies_are_the_servers_alone_and_one_others_could_write_is_made_anew() {
    let data = page(40_000, 61);
    let a = Apache::start(on_demand(Mpm::Event), |d| {
        fill(d, &[("open.html", &data)]);
        fs::set_permissions(d.join("open.html"), fs::Permissions::from_mode(0o666)).expect("chmod");
    });
    let served = |a: &Apache| {
        let r = a.get("/open.html", Some("gzip"));
        assert_eq!(r.status, 200);
        assert!(r.decoded() == data, "a rewritten copy was served");
        r.coding() == Some("gzip")
    };
    wait_for("a gzip copy", || served(&a));
    let copy = copy_at(
        &cache_of(&a),
        &a.docroot,
        "open.html",
        Kind::Coded(Coding::Gzip),
    );
    let mode = |p: &Path| fs::metadata(p).expect("copy").permissions().mode() & 0o7777;
    assert_eq!(mode(&copy), 0o600);
    // Made writable by others and rewritten in place, through one open
    // descriptor, as another user who may write it would: once it is
    // 0666 the compressor may remove it and make it anew at any moment,
    // and a test running as root would write the new copy, the server's
    // own, were it to open the name again. Never created anew either: a
    // file this test made would be another user's, not one others could
    // write.
    let rewrite = fs::OpenOptions::new()
        .write(true)
        .open(&copy)
        .and_then(|mut f| {
            f.set_permissions(fs::Permissions::from_mode(0o666))?;
            f.set_len(0)?;
            f.write_all(&gzip(b"rewritten by another user"))
        });
    if let Err(e) = rewrite {
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "rewrite: {e}");
    }
    for _ in 0..4 {
        served(&a);
    }
    wait_for("the copy made anew", || {
        fs::metadata(&copy).is_ok_and(|m| m.permissions().mode() & 0o022 == 0) && served(&a)
    });
    assert_eq!(mode(&copy), 0o600);
    a.assert_no_crash();
}

/// A cache root others could write gives one warning naming it, no
/// compressor and no copies; the site is served as without the cache.
#[test]
fn a_root_others_can_write_turns_on_demand_off_with_one_warning() {
    let data = page(40_000, 53);
    let a = Apache::start(on_demand(Mpm::Event), |d| {
        fill(d, &[("page.html", &data)]);
        fs::set_permissions(d.join("../cache"), fs::Permissions::from_mode(0o777)).expect("chmod");
    });
    for _ in 0..5 {
        let r = a.get("/page.html", Some("gzip"));
        assert_eq!((r.status, r.header("Content-Encoding")), (200, None));
        assert!(r.body == data);
        std::thread::sleep(Duration::from_millis(150));
    }
    let warned = a.module_log_about("another user could plant copies there");
    assert_eq!(warned.len(), 1, "{warned:#?}");
    assert!(
        warned[0].contains(&cache_of(&a).display().to_string()) && warned[0].contains("writable")
    );
    assert!(compressors(apache_pid(&a)).is_empty());
    assert!(copies(&cache_of(&a)).is_empty());
    a.assert_no_crash();
}

/// `GzipDiskNgCacheMaxSize 128K`: a page whose copy alone is larger
/// leaves no copy of it, and smaller pages keep the total under the limit
/// after each job.
#[test]
fn the_cache_limit_holds_after_each_job_the_new_copy_included() {
    let mut big = page(600_000, 54);
    big.extend_from_slice(&noise(600_000, 55));
    let small: Vec<Vec<u8>> = (0..5).map(|i| page(100_000, 56 + i)).collect();
    let names: Vec<String> = (0..5).map(|i| format!("s{i}.html")).collect();
    let mut files: Vec<(&str, &[u8])> = vec![("big.html", &big)];
    files.extend(
        names
            .iter()
            .map(|n| n.as_str())
            .zip(small.iter().map(|d| d.as_slice())),
    );
    let mut opts = on_demand(Mpm::Event);
    opts.server += "\nGzipDiskNgCacheMaxSize 128K";
    let a = Apache::start(opts, |d| fill(d, &files));
    let total = || copies(&cache_of(&a)).iter().map(|(_, n)| n).sum::<u64>();
    a.get("/big.html", Some("gzip"));
    wait_for("the big page's job", || {
        !a.module_log_about("not kept").is_empty()
    });
    assert!(total() <= 128 << 10, "cache holds {}", total());
    for n in &names {
        let p = format!("/{n}");
        wait_for(n, || a.get(&p, Some("zstd, br, gzip")).coding().is_some());
        assert!(total() <= 128 << 10, "after {n}: cache holds {}", total());
    }
    a.assert_no_crash();
}

/// A file core's handler sends through the `GZIP_DISK_NG` filter (on by
/// type for a whole site) is coded on the fly once and its copy asked
/// for; from then on the cache's copy goes out in its place, with its
/// length, a weak suffixed tag that revalidates to a 304, and GET's
/// headers for HEAD. A body another filter changed (mod_include) is never
/// taken over, and a page rewritten is never answered with its old copy.
#[test]
fn a_file_through_the_filter_is_coded_once_then_sent_from_the_cache() {
    let data = page(40_000, 71);
    let shtml = [
        &page(20_000, 72)[..],
        b"<!--#echo var=\"DOCUMENT_NAME\" -->\n",
    ]
    .concat();
    let opts = Options {
        dir: "GzipDiskNgOnDemand On\nOptions +Includes\nAddType text/html .shtml\n\
              AddOutputFilter INCLUDES .shtml\nAddOutputFilterByType GZIP_DISK_NG text/html"
            .into(),
        modules: vec!["filter", "include"],
        ..on_demand(Mpm::Event)
    };
    let a = Apache::start(opts, |d| {
        fill(d, &[("page.html", &data), ("page.shtml", &shtml)])
    });
    for c in [Coding::Zstd, Coding::Br, Coding::Gzip] {
        let token = c.token();
        let copy = copy_at(&cache_of(&a), &a.docroot, "page.html", Kind::Coded(c));
        let mut last = None;
        // The cache's copy, byte for byte (made at the fast level first,
        // then again at the best once served).
        wait_for(&format!("the {token} copy sent"), || {
            let r = a.get("/page.html", Some(token));
            assert_eq!((r.status, r.coding()), (200, Some(token)));
            assert!(r.decoded() == data, "{token}: not the page");
            let cached =
                r.header("Content-Length").is_some() && fs::read(&copy).is_ok_and(|b| b == r.body);
            last = Some(r);
            cached
        });
        let r = last.expect("a response");
        assert_eq!(r.header("Content-Length"), Some(&*r.body.len().to_string()));
        let tag = r.header("ETag").expect("a tag").to_owned();
        assert!(
            tag.starts_with("W/\"") && tag.ends_with(&format!("-{token}\"")),
            "{tag}"
        );
        let head = a.request(
            "/page.html",
            &["-I", "-H", &format!("Accept-Encoding: {token}")],
        );
        // The copy's length (the copy may have been made again since).
        assert!(
            head.header("Content-Length").is_some(),
            "{:?}",
            head.headers
        );
        assert_eq!(head.header("Content-Encoding"), Some(token));
        let inm = format!("If-None-Match: {tag}");
        let ae = format!("Accept-Encoding: {token}");
        let again = a.request("/page.html", &["-H", &inm, "-H", &ae]);
        assert_eq!(again.status, 304, "{token}: {tag}");
    }
    let cached = r#"gzip_disk_ng_responses_total{outcome="cached",coding="gzip"}"#;
    assert!(metric(&a, cached) > 0, "{cached}");
    // mod_include's output is coded as it passes, each time.
    let want = [&page(20_000, 72)[..], b"page.shtml\n"].concat();
    for _ in 0..6 {
        let r = a.get("/page.shtml", Some("gzip"));
        assert_eq!(r.coding(), Some("gzip"));
        assert!(
            r.decoded() == want,
            "mod_include's output was not what was sent"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let raw = copy_at(
        &cache_of(&a),
        &a.docroot,
        "page.shtml",
        Kind::Coded(Coding::Gzip),
    );
    assert!(
        !raw.exists(),
        "a copy of a file mod_include changes was asked for"
    );
    // Rewritten: the new bytes, never the old copy.
    let new = page(40_000, 73);
    let tmp = a.docroot.join(".page.html.new");
    fs::write(&tmp, &new).expect("write");
    fs::rename(&tmp, a.docroot.join("page.html")).expect("rename");
    for _ in 0..4 {
        let r = a.get("/page.html", Some("gzip"));
        assert!(
            r.decoded() == new,
            "an old copy was sent for a rewritten page"
        );
    }
    wait_for("the new version's copy sent", || {
        let r = a.get("/page.html", Some("gzip"));
        assert!(
            r.decoded() == new,
            "an old copy was sent for a rewritten page"
        );
        r.header("Content-Length").is_some()
    });
    a.assert_no_crash();
}

/// Under `GzipDiskNgJitter` a file through the filter is still sent from
/// the cache's copy once made, padded as the handler pads (the same
/// keyed length each time for one copy): never coded again per request.
#[test]
fn a_padded_file_through_the_filter_is_sent_from_the_cache_padded() {
    let data = page(40_000, 74);
    let opts = Options {
        dir: "GzipDiskNgOnDemand On\nGzipDiskNgJitter 64\n\
              AddOutputFilterByType GZIP_DISK_NG text/html"
            .into(),
        modules: vec!["filter"],
        ..on_demand(Mpm::Event)
    };
    let a = Apache::start(opts, |d| fill(d, &[("page.html", &data)]));
    for c in [Coding::Zstd, Coding::Br, Coding::Gzip] {
        let token = c.token();
        let copy = copy_at(&cache_of(&a), &a.docroot, "page.html", Kind::Coded(c));
        let mut last: Option<Vec<u8>> = None;
        // Two padded copies alike in a row, each the copy now in the
        // cache and some padding: the fast copy first sent is replaced by
        // one made at its best level, so the copy is read beside each
        // answer, not after the wait.
        wait_for(&format!("the {token} copy sent padded"), || {
            let r = a.get("/page.html", Some(token));
            assert_eq!((r.status, r.coding()), (200, Some(token)));
            assert!(r.decoded() == data, "{token}: not the page");
            let cached = a.last_access_ends_with(&format!("{token} cached"));
            let same = last.as_ref() == Some(&r.body);
            last = Some(r.body.clone());
            if cached {
                assert_eq!(r.header("Content-Length"), Some(&*r.body.len().to_string()));
            }
            let made = fs::metadata(&copy).map_or(0, |m| m.len() as usize);
            let padded = made > 0 && r.body.len() > made && r.body.len() <= made + 64 + 16;
            cached && same && padded
        });
    }
    a.assert_no_crash();
}

//! The module and its C shim under valgrind's memcheck: one Apache run
//! as a single process (`apache2 -X`, mpm_prefork) inside valgrind,
//! serving precompressed siblings, decompression, a dictionary delta,
//! jitter padding, ranges, 304s and HEAD, the on-demand cache and the
//! status and metrics handlers over HTTP/1.1, then stopped. Any memcheck
//! error (invalid read or write, uninitialised value, definite leak) that
//! tests/memcheck.supp does not explain fails the test, as does a wrong
//! answer. The run is bounded (each request by curl's timeout, the start
//! and stop by deadlines), so it fits in CI.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use gdn_core::dictionary::{delta_file_name, hash, DeltaCoding};
use sha2::{Digest, Sha256};
use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const VALGRIND: &str = "/usr/bin/valgrind";

/// The exit status valgrind gives when memcheck found an error.
const ERROR_EXIT: i32 = 97;

/// The bytes the site serves, kept for checking the answers.
struct Site {
    page: Vec<u8>,
    gz_only: Vec<u8>,
    v1: Vec<u8>,
    v2: Vec<u8>,
    plain: Vec<u8>,
    docs: std::path::PathBuf,
}

/// A page with all three siblings, one with only `.gz` (decompressed for
/// a client that takes none), a script with a delta against its former
/// version, the page again under jitter, and a file without siblings for
/// the on-demand cache.
fn site(docs: &Path) -> Site {
    let text = page(40_000, 7);
    publish(docs, "page.html", &text, true, &[".gz", ".br", ".zst"]);
    publish(docs, "padded/page.html", &text, true, &[".gz", ".br"]);
    let gz_only = page(30_000, 8);
    publish(docs, "gz-only.html", &gz_only, false, &[".gz"]);
    let v1 = page(30_000, 9);
    let mut v2 = v1.clone();
    v2.extend_from_slice(b"/* version 2 */\n");
    publish(docs, "app.js", &v2, true, &[".gz"]);
    let delta = dcz_cli(&v1, &v2, "-19");
    let p = docs.join(delta_file_name("app.js", &hash(&v1), DeltaCoding::Dcz));
    fs::write(&p, &delta).unwrap();
    set_mtime(&p, mtime(&docs.join("app.js")));
    let plain = page(20_000, 10);
    fs::create_dir_all(docs.join("fresh/js")).unwrap();
    put(docs, "fresh/plain.html", &plain);
    put(docs, "fresh/js/app.js", &v1);
    Site {
        page: text,
        gz_only,
        v1,
        v2,
        plain,
        docs: docs.to_path_buf(),
    }
}

/// Apache's configuration: one process, the module with every feature
/// above, mod_status and the module's two handlers.
fn config(root: &Path, port: u16) -> String {
    let r = root.display();
    let user = if is_root() {
        "User nobody\nGroup nogroup\n"
    } else {
        ""
    };
    format!(
        "ServerRoot {r}\nDefaultRuntimeDir {r}\nPidFile {r}/httpd.pid\n\
         ErrorLog {r}/error.log\nLogLevel info gzip_disk_ng:debug\n\
         Listen 127.0.0.1:{port}\nServerName localhost\n{user}\
         LoadModule mpm_prefork_module {MODULES}/mod_mpm_prefork.so\n\
         LoadModule authz_core_module {MODULES}/mod_authz_core.so\n\
         LoadModule mime_module {MODULES}/mod_mime.so\n\
         LoadModule status_module {MODULES}/mod_status.so\n\
         LoadModule gzip_disk_ng_module {module}\n\
         TypesConfig /etc/mime.types\nDocumentRoot {r}/docs\n\
         GzipDiskNgCacheRoot {r}/cache\nGzipDiskNgCacheMaxSize 16M\n\
         <Directory {r}/docs>\nRequire all granted\nSetHandler gzip-disk-ng\n</Directory>\n\
         <Directory {r}/docs/padded>\nGzipDiskNgJitter 32\n</Directory>\n\
         <Directory {r}/docs/fresh>\nGzipDiskNgOnDemand On\n</Directory>\n\
         <Directory {r}/docs/fresh/js>\nGzipDiskNgUseAsDictionary self\n</Directory>\n\
         <Location /server-status>\nSetHandler server-status\n</Location>\n\
         <Location /metrics>\nSetHandler gzip-disk-ng-metrics\n</Location>\n\
         <Location /gzip-disk-ng-status>\nSetHandler gzip-disk-ng-status\n</Location>\n",
        module = module_path().display()
    )
}

/// `apache2 -X` inside valgrind; its log goes to `vg.<pid>.log` in `root`
/// (a forked compressor writes its own).
fn start(root: &Path, port: u16) -> Child {
    let conf = root.join("httpd.conf");
    fs::write(&conf, config(root, port)).unwrap();
    let supp = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/memcheck.supp");
    Command::new(VALGRIND)
        .args([
            "--tool=memcheck",
            &format!("--error-exitcode={ERROR_EXIT}"),
            "--leak-check=full",
            "--show-leak-kinds=definite",
            "--errors-for-leak-kinds=definite",
            "--num-callers=30",
            // Apache unloads the module before the leak check: keep its
            // symbols so stacks name its functions.
            "--keep-debuginfo=yes",
            &format!("--suppressions={supp}"),
            &format!("--log-file={}/vg.%p.log", root.display()),
        ])
        .arg(APACHE)
        .arg("-X")
        .arg("-d")
        .arg(root)
        .arg("-f")
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run valgrind")
}

/// Waits until the server answers, or its start failed.
fn wait_ready(child: &mut Child, port: u16, root: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Some(st) = child.try_wait().unwrap() {
            panic!("apache under valgrind exited ({st}): {}", logs(root));
        }
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = child.kill();
    panic!("apache under valgrind did not start: {}", logs(root));
}

/// SIGTERM, as `apache2 -k stop` sends, then the exit status valgrind
/// gives once its leak check ran.
fn stop(mut child: Child, root: &Path) -> i32 {
    let pid = child.id().to_string();
    let _ = Command::new("kill").args(["-TERM", &pid]).status();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Some(st) = child.try_wait().unwrap() {
            return st.code().unwrap_or(-1);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = child.kill();
    panic!("apache under valgrind did not stop: {}", logs(root));
}

/// The error log and every valgrind log of the run.
fn logs(root: &Path) -> String {
    let mut out = fs::read_to_string(root.join("error.log")).unwrap_or_default();
    for e in fs::read_dir(root).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("vg.") {
            out += &format!("\n== {name} ==\n{}", fs::read_to_string(e.path()).unwrap());
        }
    }
    out
}

/// The error count of each process's `ERROR SUMMARY: N errors` line.
fn error_counts(log: &str) -> Vec<u64> {
    log.lines()
        .filter_map(|l| l.split_once("ERROR SUMMARY: "))
        .filter_map(|(_, rest)| rest.split_whitespace().next()?.parse().ok())
        .collect()
}

fn get(port: u16, path: &str, headers: &[&str]) -> Response {
    let mut args: Vec<String> = vec!["--http1.1".into()];
    for h in headers {
        args.push("-H".into());
        args.push((*h).into());
    }
    curl(&format!("http://127.0.0.1:{port}{path}"), &args)
}

/// The requests: each feature once or twice, every answer checked.
fn exercise(port: u16, s: &Site) {
    for (ae, coding) in [("zstd", "zstd"), ("br, gzip", "br"), ("gzip", "gzip")] {
        let r = get(port, "/page.html", &[&format!("Accept-Encoding: {ae}")]);
        assert_eq!((r.status, r.coding()), (200, Some(coding)), "{ae}");
        assert_eq!(r.decoded(), s.page, "{ae}");
    }
    let r = get(port, "/page.html", &[]);
    assert_eq!((r.status, r.coding()), (200, None));
    assert_eq!(r.body, s.page, "the original");
    let r = get(port, "/gz-only.html", &["Accept-Encoding: identity"]);
    assert_eq!((r.status, r.coding()), (200, None));
    assert_eq!(r.body, s.gz_only, "decompressed");
    let etag = get(port, "/page.html", &["Accept-Encoding: br"])
        .header("ETag")
        .unwrap()
        .to_owned();
    let if_range = format!("If-Range: {etag}");
    let r = get(
        port,
        "/page.html",
        &["Accept-Encoding: br", "Range: bytes=0-99", &if_range],
    );
    assert_eq!((r.status, r.body.len()), (206, 100));
    let r = get(
        port,
        "/page.html",
        &["Accept-Encoding: br", &format!("If-None-Match: {etag}")],
    );
    assert_eq!(r.status, 304);
    let announced = sfv::ItemSerializer::new()
        .bare_item(&Sha256::digest(&s.v1)[..])
        .finish();
    let r = get(
        port,
        "/app.js",
        &[
            "Accept-Encoding: gzip, dcz",
            &format!("Available-Dictionary: {announced}"),
        ],
    );
    assert_eq!((r.status, r.coding()), (200, Some("dcz")));
    assert_eq!(zstd_cli_decode_with(&s.v1, &r.body[40..]), s.v2);
    for ae in ["gzip", "br"] {
        let r = get(
            port,
            "/padded/page.html",
            &[&format!("Accept-Encoding: {ae}")],
        );
        assert_eq!(r.coding(), Some(ae));
        assert_eq!(r.decoded(), s.page, "padded {ae}");
    }
    // The first answer queues a copy; a later one is served from it.
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let r = get(port, "/fresh/plain.html", &["Accept-Encoding: gzip"]);
        assert_eq!((r.status, r.decoded()), (200, s.plain.clone()));
        if r.coding() == Some("gzip") {
            break;
        }
        assert!(Instant::now() < deadline, "no copy made on demand");
        std::thread::sleep(Duration::from_millis(500));
    }
    delta_on_demand(port, s);
    let r = get(port, "/server-status?auto", &[]);
    let text = String::from_utf8_lossy(&r.body);
    assert!(text.contains("GzipDiskNgResponses: "), "{text}");
    for path in [
        "/metrics",
        "/gzip-disk-ng-status",
        "/gzip-disk-ng-status?auto",
    ] {
        let r = get(port, path, &[]);
        assert_eq!(r.status, 200, "{path}");
        assert!(!r.body.is_empty(), "{path}");
    }
}

/// Polls `path` with `headers` until it comes in `coding` (bounded).
fn until_coded(port: u16, path: &str, headers: &[&str], coding: &str) -> Response {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = get(port, path, headers);
        assert_eq!(r.status, 200, "{path}");
        if r.coding() == Some(coding) {
            return r;
        }
        assert!(Instant::now() < deadline, "no {coding} for {path}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A script rewritten in place gets a delta on demand against the
/// version served before, made by the compressor and served from the
/// cache.
fn delta_on_demand(port: u16, s: &Site) {
    let path = "/fresh/js/app.js";
    until_coded(port, path, &["Accept-Encoding: gzip"], "gzip");
    fs::write(s.docs.join("fresh/js/app.js"), &s.v2).unwrap();
    let announced = sfv::ItemSerializer::new()
        .bare_item(&Sha256::digest(&s.v1)[..])
        .finish();
    let headers = [
        "Accept-Encoding: gzip, dcz",
        &format!("Available-Dictionary: {announced}"),
    ];
    let r = until_coded(port, path, &headers, "dcz");
    assert_eq!(zstd_cli_decode_with(&s.v1, &r.body[40..]), s.v2);
}

#[test]
fn module_and_shim_are_clean_under_memcheck() {
    if !Path::new(VALGRIND).exists() {
        return skip("valgrind is not installed");
    }
    let root = world_readable_tempdir();
    let docs = root.path().join("docs");
    fs::create_dir(&docs).unwrap();
    let s = site(&docs);
    make_cache_root(&root.path().join("cache"));
    let port = free_port();
    let started = Instant::now();
    let mut child = start(root.path(), port);
    wait_ready(&mut child, port, root.path());
    exercise(port, &s);
    let code = stop(child, root.path());
    // A helper process (the compressor) ends after the parent: wait for
    // every process's summary.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut log = logs(root.path());
    while log.matches("== vg.").count() > error_counts(&log).len() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        log = logs(root.path());
    }
    eprintln!(
        "memcheck run: {:.1} s, valgrind exit {code}",
        started.elapsed().as_secs_f64()
    );
    let summaries = error_counts(&log);
    assert!(
        !summaries.is_empty() && summaries.iter().all(|&n| n == 0),
        "memcheck found errors ({summaries:?}):\n{log}"
    );
    assert_ne!(code, ERROR_EXIT, "{log}");
    assert!(!log.contains("panicked"), "{log}");
}

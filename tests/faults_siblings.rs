//! Faults an operator meets, against a real Apache, every body checked
//! against the file's current content with decoders independent of the
//! module (the `gzip`, `brotli` and `zstd` programs): broken siblings of
//! each kind for clients that accept their coding and clients that do
//! not (no body that does not decode, from the first request on, one
//! warning per broken file, counted); a compressor killed mid-job or
//! ended by a graceful restart (its claim taken over at once, no claim or
//! temporary left); slow readers on decoded pages (another client still
//! answered within a second).

mod common;

use common::*;
use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// A page's bytes as the client must see them, decoded by the program
/// for its Content-Encoding (not the module's decoders).
fn independently_decoded(coding: Option<&str>, body: &[u8]) -> Result<Vec<u8>, String> {
    let prog = match coding {
        None => return Ok(body.to_vec()),
        Some("gzip") => "gzip",
        Some("br") => "brotli",
        Some("zstd") => "zstd",
        Some(other) => return Err(format!("unexpected coding {other}")),
    };
    if body.is_empty() {
        return Err(format!("an empty {prog} body"));
    }
    let out = pipe(prog, &["-d", "-c"], body).ok_or_else(|| format!("{prog} does not start"))?;
    match out.status.success() {
        true => Ok(out.stdout),
        false => Err(format!(
            "{prog} -d fails: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

fn write_with_mtime(p: &Path, bytes: &[u8], t: SystemTime) {
    fs::write(p, bytes).expect("write");
    set_mtime(p, t);
}

fn past() -> SystemTime {
    SystemTime::now() - Duration::from_secs(100)
}

/// `zstd`'s own output, with its checksum.
fn zstd_cli(data: &[u8]) -> Vec<u8> {
    filter_through("zstd", &["-q", "-c", "-3"], data)
}

/// One byte flipped in the middle.
fn flipped(mut b: Vec<u8>) -> Vec<u8> {
    let mid = b.len() / 2;
    b[mid] ^= 0x10;
    b
}

/// Every broken sibling of the issue's kinds, each beside good siblings
/// of the other codings: (page, broken suffix, its bytes).
fn broken_kinds(data: &[u8]) -> Vec<(&'static str, &'static str, Vec<u8>)> {
    let gz = gzip(data);
    let mut badsum = zstd_cli(data);
    let last = badsum.len() - 1;
    badsum[last] ^= 0xff;
    vec![
        ("trunc_gz", ".gz", gz[..gz.len() / 2].to_vec()),
        ("garbage_br", ".br", noise(20_000, 9)),
        ("badsum_zst", ".zst", badsum),
        ("flip_gz", ".gz", flipped(gz.clone())),
        ("flip_zst", ".zst", flipped(zstd(data))),
        ("empty_gz", ".gz", vec![]),
        ("empty_br", ".br", vec![]),
        ("empty_zst", ".zst", vec![]),
    ]
}

const SUFFIXES: [&str; 3] = [".gz", ".br", ".zst"];

/// Writes the fault pages into `d`: with the original (`o_<kind>.html`),
/// without it (`s_<kind>.html`), and a page whose three siblings are
/// newer than the original and hold other content of the same length
/// (`newer.html`). Returns each page's current content.
fn broken_tree(d: &Path) -> Vec<(String, Vec<u8>, PathBuf)> {
    let mut pages = vec![];
    let t = past();
    for (prefix, original) in [("o", true), ("s", false)] {
        let data = page(150_000, 11);
        for (kind, suffix, bytes) in broken_kinds(&data) {
            let name = format!("{prefix}_{kind}.html");
            let base = d.join(&name);
            if original {
                write_with_mtime(&base, &data, t);
            }
            for s in SUFFIXES.iter().filter(|s| **s != suffix) {
                let good = match *s {
                    ".gz" => gzip(&data),
                    ".br" => brotli(&data),
                    _ => zstd(&data),
                };
                write_with_mtime(&sibling(&base, s), &good, t);
            }
            let broken = sibling(&base, suffix);
            write_with_mtime(&broken, &bytes, t);
            pages.push((name, data.clone(), broken));
        }
    }
    let (old, new) = (page(150_000, 12), page(150_000, 13));
    assert_eq!(old.len(), new.len());
    let base = d.join("newer.html");
    write_with_mtime(&base, &old, t);
    for s in SUFFIXES {
        let bytes = match s {
            ".gz" => gzip(&new),
            ".br" => brotli(&new),
            _ => zstd(&new),
        };
        let p = sibling(&base, s);
        write_with_mtime(&p, &bytes, t + Duration::from_secs(50));
        pages.push(("newer.html".into(), old.clone(), p));
    }
    pages
}

const CLIENTS: [Option<&str>; 5] = [
    Some("gzip"),
    Some("br"),
    Some("zstd"),
    Some("gzip, br, zstd"),
    None,
];

fn metrics_server() -> String {
    "<Location /metrics>\nSetHandler gzip-disk-ng-metrics\n</Location>".into()
}

/// Requests every page for every client, `rounds` times; every body must
/// decode (independently) to the page's current content.
fn check_every_body(a: &Apache, pages: &[(String, Vec<u8>, PathBuf)], rounds: usize) {
    let mut wrong = vec![];
    let mut seen = std::collections::BTreeSet::new();
    for round in 0..rounds {
        for (name, data, _) in pages {
            if !seen.insert((round, name.clone())) {
                continue;
            }
            for ae in CLIENTS {
                let r = a.get(&format!("/{name}"), ae);
                let what = format!(
                    "round {round} /{name} {ae:?}: {} {:?}",
                    r.status,
                    r.coding()
                );
                if r.status != 200 || r.exit != 0 {
                    wrong.push(format!("{what}: status or transfer (curl {})", r.exit));
                    continue;
                }
                match independently_decoded(r.coding(), &r.body) {
                    Ok(body) if body == *data => {}
                    Ok(body) => wrong.push(format!("{what}: other content ({} bytes)", body.len())),
                    Err(e) => wrong.push(format!("{what}: {e}")),
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong bodies:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// Broken siblings, the on-demand cache off: no client ever gets a body
/// that does not decode to the page, from the first request on; each
/// broken file is named once in a warning that says how to fix it, and
/// counted.
#[test]
fn broken_siblings_never_reach_clients() {
    if !have("brotli") || !have("zstd") || !have("gzip") {
        return skip("gzip, brotli and zstd programs");
    }
    let mut pages = vec![];
    let a = Apache::start(
        Options {
            server: one_child().server + "\n" + &metrics_server(),
            log_level: "info",
            ..Default::default()
        },
        |d| pages = broken_tree(d),
    );
    check_every_body(&a, &pages, 3);
    let log = a.module_log();
    for (name, _, broken) in &pages {
        let file = broken.file_name().unwrap().to_string_lossy().to_string();
        let about: Vec<&String> = log
            .iter()
            .filter(|l| l.contains(&format!("/{file}")))
            .collect();
        assert_eq!(about.len(), 1, "{name}: one line about {file}: {about:#?}");
        assert!(
            about[0].contains("[gzip_disk_ng:warn]") && about[0].contains("gzip-disk-ng compress"),
            "{file}: {}",
            about[0]
        );
    }
    let broken: u64 = ["gzip", "br", "zstd"]
        .iter()
        .map(|c| {
            metric(
                &a,
                &format!(
                    "gzip_disk_ng_siblings_passed_over_total{{reason=\"broken\",coding=\"{c}\"}}"
                ),
            )
        })
        .sum();
    assert_eq!(
        broken,
        pages.len() as u64,
        "each broken sibling counted once"
    );
    a.assert_no_crash();
}

/// The on-demand cache's options, one child.
fn on_demand_options(log_level: &'static str) -> Options {
    Options {
        dir: "SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On".into(),
        server: "GzipDiskNgCacheRoot {docroot}/../cache\n".to_string() + &one_child().server,
        log_level,
        ..Default::default()
    }
}

/// The coding a sibling's name gives.
fn coding_of(p: &Path) -> &'static str {
    match p.extension().and_then(|e| e.to_str()) {
        Some("gz") => "gzip",
        Some("br") => "br",
        _ => "zstd",
    }
}

/// The same with the on-demand cache on: a broken sibling beside its
/// original gives way to the cache's copy of its coding, which is made
/// and then served.
#[test]
fn broken_siblings_give_way_to_cached_copies() {
    if !have("brotli") || !have("zstd") || !have("gzip") {
        return skip("gzip, brotli and zstd programs");
    }
    let mut pages = vec![];
    let a = Apache::start(on_demand_options("info"), |d| {
        pages = broken_tree(d);
        make_cache_root(&d.join("../cache"));
    });
    check_every_body(&a, &pages, 2);
    for (name, _, broken) in &pages {
        let coding = coding_of(broken);
        if a.docroot.join(name).exists() && name != "newer.html" {
            wait_for(&format!("/{name} from the cache in {coding}"), || {
                a.get(&format!("/{name}"), Some(coding)).coding() == Some(coding)
            });
        }
    }
    check_every_body(&a, &pages, 1);
    a.assert_no_crash();
}

/// A FIFO `.gz` and an unreadable `.zst` beside an original do not keep
/// their coding from the on-demand cache.
#[test]
fn unopenable_siblings_give_way_to_cached_copies() {
    let data = page(150_000, 14);
    let a = Apache::start(on_demand_options("info"), |d| {
        let t = past();
        write_with_mtime(&d.join("fifo.html"), &data, t);
        assert!(std::process::Command::new("mkfifo")
            .arg(d.join("fifo.html.gz"))
            .status()
            .unwrap()
            .success());
        write_with_mtime(&d.join("unreadable.html"), &data, t);
        write_with_mtime(&d.join("unreadable.html.zst"), &zstd(&data), t);
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(
            d.join("unreadable.html.zst"),
            fs::Permissions::from_mode(0o000),
        )
        .unwrap();
        make_cache_root(&d.join("../cache"));
    });
    for (page, coding) in [("/fifo.html", "gzip"), ("/unreadable.html", "zstd")] {
        for ae in [coding, "gzip, br, zstd"] {
            wait_for(&format!("{page} from the cache in {coding} ({ae})"), || {
                let r = a.get(page, Some(ae));
                assert_eq!(independently_decoded(r.coding(), &r.body).unwrap(), data);
                r.coding() == Some(coding) || (ae != coding && r.coding().is_some())
            });
        }
    }
    a.assert_no_crash();
}

/// The cache root beside the docroot.
fn cache_root(a: &Apache) -> PathBuf {
    a.root.path().join("cache")
}

/// Claims and temporaries in the cache's fan-out directories.
fn leftovers(root: &Path) -> Vec<String> {
    copies(root)
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| n.starts_with('.') && n.contains(".tmp"))
        .collect()
}

/// A page whose br copy takes the compressor a while, even at the fast
/// level a first copy is made at, but well under `COPY_FOLLOWS`: 40 MiB.
fn slow_page() -> Vec<u8> {
    page(40 << 20, 21)
}

fn on_demand_apache(page_bytes: &[u8]) -> Apache {
    let data = page_bytes.to_vec();
    Apache::start(
        Options {
            dir: "SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On".into(),
            server: "GzipDiskNgCacheRoot {docroot}/../cache\n".to_string() + &one_child().server,
            log_level: "info gzip_disk_ng:debug",
            ..Default::default()
        },
        move |d| {
            write_with_mtime(&d.join("slow.html"), &data, past());
            make_cache_root(&d.join("../cache"));
        },
    )
}

/// Asks for the br copy of /slow.html and waits until its compressor
/// holds the claim.
fn claim_taken(a: &Apache) {
    let r = a.get("/slow.html", Some("br"));
    assert_eq!(r.status, 200);
    let root = cache_root(a);
    wait_for("the copy's claim", || {
        leftovers(&root).iter().any(|n| n.ends_with(".tmp0"))
    });
    let made = copies(&root)
        .into_iter()
        .any(|(n, _)| !n.starts_with('.') && n.ends_with(".br"));
    assert!(!made, "the job ended before it could be cut short");
}

/// A claim left by a job cut short would hold its copy back for 600 s
/// (the claim's age-out); the copy must follow well before that. 60 s
/// leaves room for a 40 MiB brotli copy on a loaded machine and is still
/// a tenth of the age-out.
const COPY_FOLLOWS: Duration = Duration::from_secs(60);

/// After the compressor's job was cut short: the next request's copy is
/// made within `COPY_FOLLOWS`, and served.
fn copy_follows_soon(a: &Apache, data: &[u8]) {
    let start = Instant::now();
    let r = a.get("/slow.html", Some("br"));
    assert_eq!(independently_decoded(r.coding(), &r.body).unwrap(), data);
    loop {
        let r = a.get("/slow.html", Some("br"));
        if r.coding() == Some("br") {
            assert_eq!(independently_decoded(r.coding(), &r.body).unwrap(), data);
            break;
        }
        assert!(
            start.elapsed() < COPY_FOLLOWS,
            "no br copy {COPY_FOLLOWS:?} after the next request: {:?}",
            copies(&cache_root(a))
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A compressor killed (SIGKILL) mid-job: its claim dies with it, so the
/// next request's copy is made at once, not after the claim ages out.
#[test]
fn compressor_killed_mid_job_blocks_nothing() {
    let data = slow_page();
    let a = on_demand_apache(&data);
    let ppid = apache_pid(&a);
    wait_for("the compressor", || !compressors(ppid).is_empty());
    claim_taken(&a);
    let old = compressors(ppid);
    for pid in &old {
        // SAFETY: a signal to the compressor of the Apache this test started.
        assert_eq!(unsafe { libc::kill(*pid, libc::SIGKILL) }, 0);
    }
    wait_for("a new compressor", || {
        let now = compressors(ppid);
        !now.is_empty() && now.iter().all(|p| !old.contains(p))
    });
    copy_follows_soon(&a, &data);
    a.assert_no_crash();
}

/// A graceful restart mid-job leaves no claim and no temporary, and the
/// copy is made soon after the next request.
#[test]
fn graceful_restart_mid_job_leaves_nothing() {
    let data = slow_page();
    let a = on_demand_apache(&data);
    let ppid = apache_pid(&a);
    wait_for("the compressor", || !compressors(ppid).is_empty());
    claim_taken(&a);
    graceful(&a);
    wait_for("the new compressor", || !compressors(ppid).is_empty());
    let root = cache_root(&a);
    wait_for("no claim or temporary left", || leftovers(&root).is_empty());
    copy_follows_soon(&a, &data);
    a.assert_no_crash();
}

/// A connection that sends a request and never reads its answer, with a
/// small receive buffer so the server's writes block early.
fn slow_reader(port: u16, path: &str) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let size: libc::c_int = 4096;
    // SAFETY: setsockopt on a socket this test owns, with a c_int option.
    unsafe {
        use std::os::fd::AsRawFd;
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    s
}

/// 20 clients that never read, on pages decoded from a large `.gz` with
/// no original, hold no worker another client needs: it is answered
/// within a second; those over the streaming bound get a 503 with
/// `Retry-After`, the rest their body.
#[test]
fn slow_readers_on_decoded_pages_hold_no_worker() {
    slow_readers_leave_workers(one_child());
}

/// The streaming bound is the server's, not each process's: 12 workers
/// in three processes of four threads, or in twelve prefork processes,
/// are not all taken by 20 clients that never read (4 streams a process
/// took all twelve).
#[test]
fn slow_readers_leave_workers_whatever_the_processes() {
    slow_readers_leave_workers(Options {
        server: "ServerLimit 3\nStartServers 3\nThreadsPerChild 4\nMaxRequestWorkers 12\n\
                 MinSpareThreads 4\nMaxSpareThreads 12"
            .into(),
        ..Default::default()
    });
    // Prefork: a keep-alive connection holds its process, for core's
    // files as for the module's answers.
    slow_readers_leave_workers(Options {
        mpm: Mpm::Prefork,
        server: "KeepAlive Off\nServerLimit 12\nStartServers 12\nMaxRequestWorkers 12\n\
                 MinSpareServers 12\nMaxSpareServers 12"
            .into(),
        ..Default::default()
    });
}

fn slow_readers_leave_workers(opts: Options) {
    let big = page(24 << 20, 31);
    let small = page(200_000, 32);
    let a = Apache::start(
        Options {
            log_level: "info",
            ..opts
        },
        |d| {
            publish(d, "big.html", &big, false, &[".gz"]);
            publish(d, "small.html", &small, false, &[".gz"]);
            publish(d, "other.html", &small, true, &[".gz"]);
        },
    );
    let mut held = vec![];
    for _ in 0..20 {
        held.push(slow_reader(a.port, "/big.html"));
    }
    std::thread::sleep(Duration::from_millis(1500));
    for path in ["/other.html", "/small.html"] {
        let start = Instant::now();
        let r = a.request(path, &["--max-time", "5"]);
        let took = start.elapsed();
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(independently_decoded(r.coding(), &r.body).unwrap(), small);
        assert!(
            took < Duration::from_secs(1),
            "{path} answered after {took:?}"
        );
    }
    // The slow readers: each a 200 or a 503 with Retry-After.
    let mut statuses = vec![];
    for mut s in held {
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut head = [0u8; 512];
        let n = s.read(&mut head).unwrap_or(0);
        let text = String::from_utf8_lossy(&head[..n]).to_string();
        let status = text.get(9..12).unwrap_or("").to_string();
        if status == "503" {
            assert!(text.to_ascii_lowercase().contains("retry-after:"), "{text}");
        }
        statuses.push(status);
    }
    assert!(
        statuses.iter().all(|s| s == "200" || s == "503"),
        "{statuses:?}"
    );
    a.assert_no_crash();
}

/// A sibling past what the request that meets it decodes (512 KiB) is its
/// page only once the checker thread decoded it to the original's bytes:
/// one that holds other content of the same length, fresh by its mtime,
/// is never sent, from the first request on; a good one is sent once
/// verified.
#[test]
fn a_large_sibling_is_sent_only_once_verified() {
    let half = |seed| [noise(600_000, seed), page(600_000, seed)].concat();
    let (old, new, good) = (half(21), half(22), half(23));
    assert_eq!(old.len(), new.len());
    let a = Apache::start(one_child(), |d| {
        let t = past();
        write_with_mtime(&d.join("big.html"), &old, t);
        write_with_mtime(
            &d.join("big.html.gz"),
            &gzip(&new),
            t + Duration::from_secs(50),
        );
        write_with_mtime(&d.join("good.html"), &good, t);
        write_with_mtime(&d.join("good.html.gz"), &gzip(&good), t);
    });
    assert!(gzip(&new).len() > 512 << 10, "past the in-request check");
    for _ in 0..10 {
        let r = a.get("/big.html", Some("gzip"));
        assert_eq!(r.status, 200);
        assert!(
            r.decoded() == old,
            "other content sent as the page ({:?})",
            r.coding()
        );
    }
    wait_for("the good sibling verified and sent", || {
        let r = a.get("/good.html", Some("gzip"));
        assert!(r.decoded() == good);
        r.coding() == Some("gzip")
    });
    a.assert_no_crash();
}

/// A sibling is decoded to its end once per version for the whole
/// server: the first request verifies it, and the other children serving
/// it later take that verdict instead of decoding it again.
#[test]
fn a_sibling_is_verified_once_for_every_child() {
    let data = page(60_000, 41);
    // A bomb with no original: its check decodes to the bound, once.
    let bomb = vec![0u8; 80 << 20];
    let a = Apache::start(
        Options {
            mpm: Mpm::Prefork,
            server: "KeepAlive Off\nStartServers 4\nMinSpareServers 4\nMaxSpareServers 8".into(),
            log_level: "info gzip_disk_ng:trace1",
            ..Default::default()
        },
        |d| {
            publish(d, "v.html", &data, true, &[".gz"]);
            publish(d, "b.html", &bomb, false, &[".gz"]);
        },
    );
    for path in ["/v.html", "/b.html"] {
        let r = a.get(path, Some("gzip"));
        assert_eq!((r.status, r.coding()), (200, Some("gzip")));
    }
    // Concurrent requests, so that children other than the first serve.
    for _ in 0..4 {
        let clients: Vec<_> = ["/v.html", "/b.html"]
            .iter()
            .cycle()
            .take(12)
            .map(|path| {
                let url = a.url(path);
                std::thread::spawn(move || {
                    curl(&url, &["-H".into(), "Accept-Encoding: gzip".into()])
                })
            })
            .collect();
        for c in clients {
            let r = c.join().unwrap();
            assert_eq!((r.status, r.coding()), (200, Some("gzip")));
            assert!(r.decoded() == data || r.decoded() == bomb);
        }
    }
    let log = a.module_log();
    let decoded = log
        .iter()
        .filter(|l| l.contains("sibling decoded to its end"))
        .count();
    let count = |what: &str| log.iter().filter(|l| l.contains(what)).count();
    assert_eq!(decoded, 1, "decoded more than once: {log:?}");
    assert!(
        count("judged by another check (Whole)") > 0,
        "no other child served it: {log:?}"
    );
    assert_eq!(
        count("sibling decodes past 64 MiB"),
        1,
        "the bomb decoded more than once: {log:?}"
    );
    assert!(
        count("judged by another check (PastBound)") > 0,
        "no other child served the bomb: {log:?}"
    );
    a.assert_no_crash();
}

//! A fleet: two and three real Apaches with on-demand compression behind a real
//! HAProxy balancing round-robin, sharing one cache root, with (i) one
//! shared docroot and (ii) a docroot copied to each server (`cp -a`: new
//! inodes and ctimes, the mtimes kept, as `rsync -t` deploys). A
//! browser-like client (Accept-Encoding with dcz and dcb, the site
//! dictionary the pages link fetched and announced) visits the pages
//! through the balancer. Every body decodes to the page; every server's
//! compressor made copies and every server served them (no standby);
//! the share of pages that came as deltas is at least 95 % of what one
//! server alone gives in the same test; all servers link and serve the
//! same site dictionary, under a URL that names its content.

mod common;

use base64::Engine as _;
use common::*;
use sha2::{Digest, Sha256};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const HAPROXY: &str = "/usr/sbin/haproxy";

/// The site dictionary's configured path.
const DICTIONARY: &str = "/gdn-site.dict";

/// Pages the client visits: more than the 16 that start training.
const PAGES: usize = 24;

/// What a browser holding dictionaries sends.
const AE_BROWSER: &str = "Accept-Encoding: gzip, deflate, br, zstd, dcb, dcz";

/// How long any one wait (copies, training, deltas) may take.
const WAIT: Duration = Duration::from_secs(90);

/// One page of the site: a shared template around text of its own.
struct Page {
    path: String,
    html: Vec<u8>,
}

fn pages() -> Vec<Page> {
    let nav: String = (0..PAGES)
        .map(|n| {
            format!("<li><a href=\"/pages/p{n:02}.html\">Section {n:02} of the guide</a></li>\n")
        })
        .collect();
    let foot = &script_text(900)[..1500];
    (0..PAGES)
        .map(|n| {
            let text = &script_text(100 + n as u64)[..3000];
            let html = format!(
                "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
                 <title>Page {n:02} | Example Site</title></head>\n<body><header>Example Site</header>\n\
                 <nav><ul>\n{nav}</ul></nav>\n<main><h1>Page {n:02}</h1>\n<p>{text}</p></main>\n\
                 <footer><p>{foot}</p><p>Copyright Example Site.</p></footer>\n</body></html>\n"
            );
            Page {
                path: format!("/pages/p{n:02}.html"),
                html: html.into_bytes(),
            }
        })
        .collect()
}

/// Writes the pages under `docroot` with an mtime in the past.
fn fill(docroot: &Path, pages: &[Page]) {
    fs::create_dir_all(docroot.join("pages")).expect("pages dir");
    for p in pages {
        put(docroot, &p.path[1..], &p.html);
    }
}

/// How the servers get their files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Docroot {
    /// One docroot both serve (a shared filesystem).
    Shared,
    /// A copy each, made with `cp -a` from the deployed tree.
    Copied,
}

/// The lines every server of the fleet has: the shared cache root, the
/// site dictionary, the metrics.
fn server_lines(cache: &Path) -> String {
    format!(
        "GzipDiskNgCacheRoot {}\nGzipDiskNgSiteDictionary {DICTIONARY}\n\
         <Location /metrics>\nSetHandler gzip-disk-ng-metrics\n</Location>\n",
        cache.display()
    )
}

/// A server of the fleet over `shared` (holding `docs` and `cache`).
fn server(shared: &Path, docroot: Docroot) -> Apache {
    let on_demand = "SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On";
    let mut server = server_lines(&shared.join("cache"));
    let docs = shared.join("docs");
    if docroot == Docroot::Shared {
        server += &format!(
            "DocumentRoot {d}\n<Directory {d}>\nRequire all granted\n{on_demand}\n</Directory>\n",
            d = docs.display()
        );
    }
    let opts = Options {
        dir: on_demand.into(),
        server,
        ..Options::default()
    };
    Apache::start(opts, |d| {
        if docroot == Docroot::Copied {
            let st = Command::new("cp")
                .arg("-a")
                .arg(docs.join("pages"))
                .arg(d)
                .status();
            assert!(st.is_ok_and(|s| s.success()), "cp -a");
        }
    })
}

/// HAProxy balancing round-robin over `servers`; stopped on drop.
struct Balancer {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Balancer {
    fn start(servers: &[&Apache]) -> Balancer {
        let dir = world_readable_tempdir();
        let port = free_port();
        let mut cfg = format!(
            "global\n    log stderr format short local0 notice\n\
             defaults\n    mode http\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n\
             frontend site\n    bind 127.0.0.1:{port}\n    default_backend fleet\n\
             backend fleet\n    balance roundrobin\n"
        );
        for (i, a) in servers.iter().enumerate() {
            cfg += &format!("    server s{i} 127.0.0.1:{}\n", a.port);
        }
        let conf = dir.path().join("haproxy.cfg");
        fs::write(&conf, cfg).expect("haproxy.cfg");
        let out = fs::File::create(dir.path().join("haproxy.out")).expect("log");
        let child = Command::new(HAPROXY)
            .arg("-db")
            .arg("-f")
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("dup"))
            .stderr(out)
            .spawn()
            .expect("run haproxy");
        let b = Balancer {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "haproxy did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        b
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `ask` until it gives something, for up to `WAIT`.
fn poll<T>(what: &str, mut ask: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(t) = ask() {
            return t;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn get(url: &str, headers: &[&str]) -> Response {
    let args: Vec<String> = headers
        .iter()
        .flat_map(|h| ["-H".to_string(), h.to_string()])
        .collect();
    curl(url, &args)
}

/// The dictionary URL a page's `Link` header names, if any.
fn linked_dictionary(r: &Response) -> Option<String> {
    let links = r.headers.get("link")?;
    links.iter().find_map(|l| {
        l.contains("rel=\"compression-dictionary\"").then(|| {
            l.split_once('<')?
                .1
                .split_once('>')
                .map(|(u, _)| u.to_owned())
        })?
    })
}

/// The `Available-Dictionary` header naming `dictionary`.
fn available(dictionary: &[u8]) -> String {
    let h = Sha256::digest(dictionary);
    let b64 = base64::engine::general_purpose::STANDARD.encode(h);
    format!("Available-Dictionary: :{b64}:")
}

/// Crawls through `url_of` (a server, or the balancer) as a cache
/// warmer would, until every page comes coded from the cache and the
/// site dictionary is linked; the dictionary's URL.
fn warm(url_of: &dyn Fn(&str) -> String, pages: &[Page]) -> String {
    let ae = "Accept-Encoding: zstd, br, gzip";
    for p in pages {
        let r = get(&url_of(&p.path), &[ae]);
        assert_eq!(r.status, 200, "{}: {r:?}", p.path);
        assert!(r.decoded() == p.html, "{}: not the page", p.path);
    }
    for p in pages {
        // Twice in a row: through the balancer, once from each server.
        poll(&format!("cached copies of {}", p.path), || {
            let coded = (0..2).all(|_| get(&url_of(&p.path), &[ae]).coding().is_some());
            coded.then_some(())
        });
    }
    poll("the site dictionary's link", || {
        let links: Vec<_> = (0..2)
            .map(|_| linked_dictionary(&get(&url_of(&pages[0].path), &[ae])))
            .collect();
        (links[0].is_some() && links[0] == links[1]).then(|| links[0].clone())?
    })
}

/// A browser's visit: every page once, holding the dictionary a page
/// links from then on; how many pages came as deltas. Every body must
/// decode to its page.
fn visit(url_of: &dyn Fn(&str) -> String, pages: &[Page]) -> usize {
    let mut held: Option<(String, Vec<u8>)> = None;
    let mut deltas = 0;
    for p in pages {
        let mut headers = vec![AE_BROWSER.to_string()];
        if let Some((_, d)) = &held {
            headers.push(available(d));
        }
        let hs: Vec<&str> = headers.iter().map(String::as_str).collect();
        let r = get(&url_of(&p.path), &hs);
        assert_eq!(r.status, 200, "{}: {r:?}", p.path);
        let body = match (r.coding(), &held) {
            (Some(c @ ("dcz" | "dcb")), Some((_, d))) => {
                deltas += 1;
                oracle_decode_delta(c, d, &r.body)
                    .unwrap_or_else(|e| panic!("{}: a delta that does not decode: {e}", p.path))
            }
            _ => r.decoded(),
        };
        assert!(body == p.html, "{}: decodes to something else", p.path);
        let link = linked_dictionary(&r);
        if let Some(url) = link.filter(|u| held.as_ref().is_none_or(|(h, _)| h != u)) {
            let d = get(&url_of(&url), &[]);
            assert_eq!(d.status, 200, "{url}: {d:?}");
            held = Some((url, d.body));
        }
    }
    deltas
}

/// The best of `rounds` visits (the compressor makes a delta on the
/// first request naming its dictionary, so a first visit may miss some).
fn delta_rate(url_of: &dyn Fn(&str) -> String, pages: &[Page]) -> usize {
    let mut best = 0;
    let deadline = Instant::now() + WAIT;
    while best < PAGES - 1 && Instant::now() < deadline {
        best = best.max(visit(url_of, pages));
    }
    best
}

/// Copies a server's compressor made.
fn made(a: &Apache) -> u64 {
    metric(a, "gzip_disk_ng_ondemand_copies_total{state=\"done\"}")
}

/// Responses a server sent from the cache (its access log's notes).
fn served_cached(a: &Apache) -> usize {
    a.access_log()
        .lines()
        .filter(|l| l.ends_with(" cached"))
        .count()
}

/// What one server alone gives: its delta rate and the copies it made.
fn one_server(pages: &[Page]) -> (usize, u64) {
    let shared = world_readable_tempdir();
    fill(&shared.path().join("docs"), pages);
    make_cache_root(&shared.path().join("cache"));
    let a = server(shared.path(), Docroot::Copied);
    let url_of = |p: &str| a.url(p);
    warm(&url_of, pages);
    let rate = delta_rate(&url_of, pages);
    a.assert_no_crash();
    (rate, made(&a))
}

/// `n` servers behind the balancer: the fleet's delta rate and the
/// copies they made, after checking every server worked and all agree
/// on the dictionary.
fn fleet(pages: &[Page], docroot: Docroot, n: usize) -> (usize, u64) {
    let shared = world_readable_tempdir();
    fill(&shared.path().join("docs"), pages);
    let cache: PathBuf = shared.path().join("cache");
    make_cache_root(&cache);
    let servers: Vec<Apache> = (0..n).map(|_| server(shared.path(), docroot)).collect();
    let refs: Vec<&Apache> = servers.iter().collect();
    let front = Balancer::start(&refs);
    let url_of = |p: &str| front.url(p);
    let linked = warm(&url_of, pages);
    let rate = delta_rate(&url_of, pages);
    for s in &servers {
        let r = s.get(&pages[1].path, Some("zstd, br, gzip"));
        assert_eq!(
            linked_dictionary(&r).as_deref(),
            Some(linked.as_str()),
            "{docroot:?}: one URL"
        );
        assert!(
            made(s) > 0,
            "{docroot:?}: a compressor made nothing\n{}",
            s.error_log()
        );
        assert!(served_cached(s) > 0, "{docroot:?}: a server served no copy");
        s.assert_no_crash();
    }
    let dictionaries: Vec<Response> = servers.iter().map(|s| s.get(&linked, None)).collect();
    for d in &dictionaries {
        assert_eq!(d.status, 200, "{linked}");
        assert!(
            d.body == dictionaries[0].body,
            "{docroot:?}: two dictionaries at {linked}"
        );
        let cc = d.header("Cache-Control").unwrap_or_default();
        assert!(cc.contains("immutable"), "{linked}: Cache-Control: {cc:?}");
    }
    assert_eq!(
        linked,
        site_dictionary_url(DICTIONARY, &dictionaries[0].body),
        "the URL names the content"
    );
    let made_each: Vec<u64> = servers.iter().map(made).collect();
    let served_each: Vec<usize> = servers.iter().map(served_cached).collect();
    eprintln!(
        "fleet of {n} ({docroot:?}): {rate}/{PAGES} deltas; copies made {made_each:?}, served from the cache {served_each:?}; dictionary {linked} ({} bytes)",
        dictionaries[0].body.len()
    );
    (rate, made_each.iter().sum())
}

#[test]
fn servers_behind_a_balancer_get_one_servers_savings() {
    assert!(
        Path::new(HAPROXY).exists(),
        "{HAPROXY} not installed: scripts/test installs it"
    );
    let pages = pages();
    let (one, one_made) = one_server(&pages);
    eprintln!("one server: {one}/{PAGES} deltas; copies made {one_made}");
    assert!(one > PAGES / 2, "one server: {one}/{PAGES} deltas");
    for (n, docroot) in [
        (2, Docroot::Shared),
        (2, Docroot::Copied),
        (3, Docroot::Copied),
    ] {
        let (rate, made) = fleet(&pages, docroot, n);
        assert!(
            rate * 100 >= one * 95,
            "{n} servers, {docroot:?}: {rate}/{PAGES} deltas through the balancer, {one}/{PAGES} from one server"
        );
        // Each copy is made once in the fleet, not once per server.
        assert!(
            made * 4 <= one_made * 5,
            "{n} servers, {docroot:?}: {made} copies made by the fleet, {one_made} by one server"
        );
    }
}

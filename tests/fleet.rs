//! A fleet: two and three real Apaches with on-demand compression behind a real
//! HAProxy balancing round-robin, (i) sharing one cache root, with one
//! shared docroot or a docroot copied to each server (`cp -a`: new
//! inodes and ctimes, the mtimes kept, as `rsync -t` deploys), and (ii)
//! each with a cache root of its own and a copied docroot, talking to no
//! other. A browser-like client (Accept-Encoding with dcz and dcb, the
//! site dictionary the pages link fetched and announced; a 404 for it is
//! never held) visits the pages through the balancer. Every body decodes
//! to the page; every server's compressor made copies and every server
//! served them (no standby); the share of pages that came as deltas is
//! at least 95 % of what one server alone gives in the same test; all
//! servers link and serve the same site dictionary, under a URL that
//! names its content. A deploy half done (one server's copy of a page
//! changed) serves no wrong body, keeps the deltas of a client holding
//! the dictionary from before, and recovers within a training period
//! once every server has the same files.

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

/// Deploys `bytes` at `name` under `docroot` as a deploy tool does: a
/// temporary beside it (a dot-name no training reads), its mtime set to
/// `mtime`, then renamed over the page. A training period that falls
/// within an in-place write would read a page truncated or one with the
/// mtime of the moment, and train a dictionary of a version neither
/// server keeps.
fn deploy(docroot: &Path, name: &str, bytes: &[u8], mtime: std::time::SystemTime) {
    let target = docroot.join(name);
    let dir = target.parent().expect("a page's folder");
    let temp = dir.join(".deploy.tmp");
    fs::write(&temp, bytes).expect("write the deployed page");
    set_mtime(&temp, mtime);
    fs::rename(&temp, &target).expect("rename the deployed page");
}

/// The training period the servers judge and choose the pages in.
const PERIOD: u64 = 2;

/// How the servers keep their copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cache {
    /// One cache root all write (a shared filesystem).
    Shared,
    /// A cache root each, on its own disk.
    Own,
}

/// How the servers get their files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Docroot {
    /// One docroot both serve (a shared filesystem).
    Shared,
    /// A copy each, made with `cp -a` from the deployed tree.
    Copied,
}

/// The lines every server of the fleet has: its cache root, the site
/// dictionary and its training period, the metrics.
fn server_lines(cache: &Path) -> String {
    format!(
        "GzipDiskNgCacheRoot {}\nGzipDiskNgSiteDictionary {DICTIONARY}\n\
         <IfDirective GzipDiskNgSiteDictionaryPeriod>\nGzipDiskNgSiteDictionaryPeriod {PERIOD}\n</IfDirective>\n\
         <Location /metrics>\nSetHandler gzip-disk-ng-metrics\n</Location>\n",
        cache.display()
    )
}

/// A server of the fleet over `shared` (holding `docs`), with the cache
/// root `cache`.
fn server(shared: &Path, docroot: Docroot, cache: &Path) -> Apache {
    let on_demand = "SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On";
    let mut server = server_lines(cache);
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
            if let Some(d) = fetch_dictionary(&url_of(&url)) {
                held = Some((url, d));
            }
        }
    }
    deltas
}

/// A linked dictionary as a browser fetches it: its bytes, or `None` for
/// a 404 (another server's dictionary this one does not keep), which
/// must tell no one to keep it.
fn fetch_dictionary(url: &str) -> Option<Vec<u8>> {
    let d = get(url, &[]);
    if d.status == 404 {
        assert!(
            d.header("Use-As-Dictionary").is_none(),
            "{url}: a 404 to keep"
        );
        let cc = d.header("Cache-Control").unwrap_or_default();
        assert!(
            cc.contains("no-store"),
            "{url}: a 404 with Cache-Control {cc:?}"
        );
        return None;
    }
    assert_eq!(d.status, 200, "{url}: {d:?}");
    assert!(d.header("Use-As-Dictionary").is_some(), "{url}");
    Some(d.body)
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
    let a = server(shared.path(), Docroot::Copied, &shared.path().join("cache"));
    let url_of = |p: &str| a.url(p);
    let linked = warm(&url_of, pages);
    let rate = delta_rate(&url_of, pages);
    savings(&url_of, pages, &linked);
    a.assert_no_crash();
    (rate, made(&a))
}

/// Prints what the site dictionary saves: the median page's dcz and dcb
/// size over its br copy's, and the dictionary's size in br.
fn savings(url_of: &dyn Fn(&str) -> String, pages: &[Page], linked: &str) {
    let dictionary = get(&url_of(linked), &[]).body;
    let dict_br = get(&url_of(linked), &["Accept-Encoding: br"]).body.len();
    let mut ratios = [Vec::new(), Vec::new()];
    for p in pages {
        let br = get(&url_of(&p.path), &["Accept-Encoding: br"]);
        assert_eq!(br.coding(), Some("br"), "{}", p.path);
        for (i, d) in ["dcz", "dcb"].iter().enumerate() {
            let hs = [format!("Accept-Encoding: {d}"), available(&dictionary)];
            let hs: Vec<&str> = hs.iter().map(String::as_str).collect();
            let r = get(&url_of(&p.path), &hs);
            if r.coding() == Some(d) {
                ratios[i].push(r.body.len() as f64 / br.body.len() as f64);
            }
        }
    }
    for r in &mut ratios {
        r.sort_by(f64::total_cmp);
    }
    let median = |r: &[f64]| r.get(r.len() / 2).copied().unwrap_or(f64::NAN);
    eprintln!(
        "site dictionary of {} pages: {} bytes ({dict_br} in br); median page dcz/br {:.3} ({} pages), dcb/br {:.3} ({} pages)",
        pages.len(),
        dictionary.len(),
        median(&ratios[0]),
        ratios[0].len(),
        median(&ratios[1]),
        ratios[1].len()
    );
}

/// `n` servers over `shared`, with the docroot and cache roots as said.
fn servers(shared: &Path, docroot: Docroot, cache: Cache, n: usize) -> Vec<Apache> {
    (0..n)
        .map(|i| {
            let root: PathBuf = match cache {
                Cache::Shared => shared.join("cache"),
                Cache::Own => shared.join(format!("cache{i}")),
            };
            if i == 0 || cache == Cache::Own {
                make_cache_root(&root);
            }
            server(shared, docroot, &root)
        })
        .collect()
}

/// Waits for the wall clock's next second: a process links the
/// dictionary it looked up in the current second (`site::page_link`), so
/// one that looked before the latest training links the one before until
/// that second ends, and from the next on every process links what its
/// server holds now.
fn next_second() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let left = Duration::from_secs(1) - Duration::from_nanos(u64::from(now.subsec_nanos()));
    std::thread::sleep(left + Duration::from_millis(20));
}

/// What each server's processes judged of its pages, period by period,
/// and what its compressor trained from them (the module's lines): what
/// a disagreement about the dictionary is read from.
fn judgments(servers: &[Apache]) -> String {
    let mut out = String::new();
    for (i, s) in servers.iter().enumerate() {
        for l in s.module_log_about("site dictionary") {
            out += &format!("server {i}: {l}\n");
        }
    }
    out
}

/// Checks that every server links `linked` and serves the same bytes for
/// it; those bytes.
fn one_dictionary(servers: &[Apache], pages: &[Page], linked: &str, what: &str) -> Vec<u8> {
    next_second();
    for s in servers {
        let r = s.get(&pages[1].path, Some("zstd, br, gzip"));
        assert_eq!(
            linked_dictionary(&r).as_deref(),
            Some(linked),
            "{what}: one URL; each server's judgments and trainings:\n{}",
            judgments(servers)
        );
    }
    let dictionaries: Vec<Response> = servers.iter().map(|s| s.get(linked, None)).collect();
    for d in &dictionaries {
        assert_eq!(d.status, 200, "{what}: {linked}");
        assert!(
            d.body == dictionaries[0].body,
            "{what}: two dictionaries at {linked}"
        );
        let cc = d.header("Cache-Control").unwrap_or_default();
        assert!(cc.contains("immutable"), "{linked}: Cache-Control: {cc:?}");
    }
    assert_eq!(
        linked,
        site_dictionary_url(DICTIONARY, &dictionaries[0].body),
        "the URL names the content"
    );
    dictionaries[0].body.clone()
}

/// `n` servers behind the balancer: the fleet's delta rate and the
/// copies they made, after checking every server worked and all agree
/// on the dictionary.
fn fleet(pages: &[Page], docroot: Docroot, cache: Cache, n: usize) -> (usize, u64) {
    let shared = world_readable_tempdir();
    fill(&shared.path().join("docs"), pages);
    let servers = servers(shared.path(), docroot, cache, n);
    let refs: Vec<&Apache> = servers.iter().collect();
    let front = Balancer::start(&refs);
    let url_of = |p: &str| front.url(p);
    let linked = warm(&url_of, pages);
    let rate = delta_rate(&url_of, pages);
    let what = format!("{docroot:?} docroot, {cache:?} cache");
    let dictionary = one_dictionary(&servers, pages, &linked, &what);
    for s in &servers {
        assert!(
            made(s) > 0,
            "{what}: a compressor made nothing\n{}",
            s.error_log()
        );
        assert!(served_cached(s) > 0, "{what}: a server served no copy");
        s.assert_no_crash();
    }
    let made_each: Vec<u64> = servers.iter().map(made).collect();
    let served_each: Vec<usize> = servers.iter().map(served_cached).collect();
    eprintln!(
        "fleet of {n} ({what}): {rate}/{PAGES} deltas; copies made {made_each:?}, served from the cache {served_each:?}; dictionary {linked} ({} bytes)",
        dictionary.len()
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
        let (rate, made) = fleet(&pages, docroot, Cache::Shared, n);
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

/// Servers with a cache root each and copied docroots, which share
/// nothing and never talk, train the same site dictionary from the same
/// files: every one links and serves the same URL, and a client through
/// the balancer gets deltas as from one server.
#[test]
fn servers_with_their_own_cache_roots_train_one_dictionary() {
    assert!(
        Path::new(HAPROXY).exists(),
        "{HAPROXY} not installed: scripts/test installs it"
    );
    let pages = pages();
    let (one, _) = one_server(&pages);
    eprintln!("one server: {one}/{PAGES} deltas");
    assert!(one > PAGES / 2, "one server: {one}/{PAGES} deltas");
    for (n, docroot) in [
        (2, Docroot::Copied),
        (3, Docroot::Copied),
        (2, Docroot::Shared),
    ] {
        let (rate, _) = fleet(&pages, docroot, Cache::Own, n);
        assert!(
            rate * 100 >= one * 95,
            "{n} servers, {docroot:?} docroot, own cache roots: {rate}/{PAGES} deltas through the balancer, {one}/{PAGES} from one server"
        );
    }
}

/// The pages as server `i` has them in a deploy half done: `changed`'s
/// page is new on server 0 only.
fn page_on(pages: &[Page], changed: usize, server: usize, new: &[u8], path: &str) -> Vec<u8> {
    match pages.iter().position(|p| p.path == path) {
        Some(i) if i == changed && server == 0 => new.to_vec(),
        Some(i) => pages[i].html.clone(),
        None => Vec::new(),
    }
}

/// A deploy half done: server 0's copy of one page changes. Its next
/// training makes another dictionary, which server 1 does not have; no
/// body is ever wrong, a client holding the dictionary from before keeps
/// getting deltas of the pages that did not change from both servers
/// (and is linked to what it holds), the other server answers the new
/// dictionary's URL with a 404 no one keeps, and once server 1 has the
/// same files both link and serve one dictionary again within a period.
#[test]
fn a_deploy_half_done_loses_deltas_only_for_what_changed() {
    let pages = pages();
    let shared = world_readable_tempdir();
    fill(&shared.path().join("docs"), &pages);
    let servers = servers(shared.path(), Docroot::Copied, Cache::Own, 2);
    let refs: Vec<&Apache> = servers.iter().collect();
    let front = Balancer::start(&refs);
    let url_of = |p: &str| front.url(p);
    let before = warm(&url_of, &pages);
    let old = one_dictionary(&servers, &pages, &before, "before the deploy");
    // Server 0 gets the new version of one page.
    let changed = 5;
    let mut new = pages[changed].html.clone();
    new.extend_from_slice(b"<p>A paragraph the new release adds to this page only.</p>\n");
    let mtime = std::time::SystemTime::now() - Duration::from_secs(3600);
    deploy(&servers[0].docroot, &pages[changed].path[1..], &new, mtime);
    let after = poll("server 0's next dictionary", || {
        let r = servers[0].get(&pages[1].path, Some("br"));
        linked_dictionary(&r).filter(|l| *l != before)
    });
    assert_eq!(
        servers[1].get(&after, None).status,
        404,
        "server 1 cannot have server 0's new dictionary"
    );
    assert!(fetch_dictionary(&servers[1].url(&after)).is_none());
    // A client holding the dictionary from before, through the balancer:
    // every body is a version some server has; every unchanged page
    // comes as a delta (its first request on a server may be answered
    // while the delta is made: the best of a few visits).
    let mut best = 0;
    let deadline = Instant::now() + WAIT;
    while best < PAGES - 1 && Instant::now() < deadline {
        let mut unchanged_deltas = 0;
        for (i, p) in pages.iter().enumerate() {
            let hs = [AE_BROWSER.to_string(), available(&old)];
            let hs: Vec<&str> = hs.iter().map(String::as_str).collect();
            let r = get(&url_of(&p.path), &hs);
            assert_eq!(r.status, 200, "{}: {r:?}", p.path);
            let body = match r.coding() {
                Some("dcz" | "dcb") => {
                    if i != changed {
                        unchanged_deltas += 1;
                    }
                    r.decoded_delta(&old)
                }
                _ => r.decoded(),
            };
            let ok = (0..2).any(|s| body == page_on(&pages, changed, s, &new, &p.path));
            assert!(ok, "{}: decodes to no version of the page", p.path);
            // Linked to what it holds, on either server.
            assert_eq!(
                linked_dictionary(&r).as_deref(),
                Some(before.as_str()),
                "{}",
                p.path
            );
        }
        best = best.max(unchanged_deltas);
    }
    eprintln!(
        "deploy half done: {best}/{} unchanged pages as deltas",
        PAGES - 1
    );
    assert_eq!(best, PAGES - 1, "unchanged pages lost their deltas");
    // The deploy completes: within a training period (and the time a
    // training takes), both link and serve one dictionary again.
    deploy(&servers[1].docroot, &pages[changed].path[1..], &new, mtime);
    // Both servers now hold the same files, so both train server 0's
    // new dictionary: wait until every process of both links it (each
    // looks the dictionary up again within a second). Asking for "one
    // dictionary" alone could be met by two processes still linking
    // the old one.
    let done = Instant::now();
    poll(
        "every process of both servers links the new dictionary",
        || {
            servers
                .iter()
                .all(|s| {
                    (0..4).all(|_| {
                        let r = s.get(&pages[1].path, Some("zstd, br, gzip"));
                        linked_dictionary(&r).as_deref() == Some(after.as_str())
                    })
                })
                .then_some(())
        },
    );
    let took = done.elapsed();
    eprintln!("deploy done: one dictionary again after {took:?}");
    assert!(
        took <= Duration::from_secs(PERIOD * 3 + 5),
        "{took:?} to agree again, with a training period of {PERIOD} s"
    );
    let linked = after;
    let mut now_pages = pages;
    now_pages[changed].html = new;
    one_dictionary(&servers, &now_pages, &linked, "after the deploy");
    let rate = delta_rate(&url_of, &now_pages);
    eprintln!("after the deploy: {rate}/{PAGES} deltas");
    assert!(rate >= PAGES - 2, "after the deploy: {rate}/{PAGES} deltas");
    for s in &servers {
        s.assert_no_crash();
    }
}

//! Deltas on demand (RFC 9842) with a real browser: headless Chromium over
//! HTTPS and HTTP/2, a certificate it trusts, and no publish step.
//!
//! - Same path: Chromium keeps version 1 of a script served with
//!   `GzipDiskNgUseAsDictionary self`; the script is rewritten in place;
//!   once the compressor has made the delta, Chromium's next visit gets
//!   `dcz` or `dcb` and runs exactly version 2.
//! - Site dictionary: a crawl caches twenty pages sharing a template, the
//!   compressor trains a dictionary served at `GzipDiskNgSiteDictionary`'s
//!   path and announced by a `Link` header; Chromium fetches it from one
//!   page and its navigations to the others get `dcz` or `dcb`.
//! - The site dictionary through curl alone: 404 before training, then a
//!   delta per page that decodes against the dictionary's bytes.

mod common;

use base64::Engine;
use common::*;
use sha2::{Digest, Sha256};
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

/// A certificate for 127.0.0.1 and what uses it: Apache's lines, curl's
/// trust, and the flag that makes Chromium trust exactly it (it keeps
/// and offers dictionaries only over a certificate it trusts).
struct Tls {
    _dir: tempfile::TempDir,
    cert: String,
    key: String,
    trust: String,
}

impl Tls {
    fn new() -> Tls {
        // Readable by Apache's `User` when the tests run as root.
        let dir = world_readable_tempdir();
        let (cert, key) = make_cert(dir.path());
        let trust = trust_flag(&cert);
        Tls {
            _dir: dir,
            cert,
            key,
            trust,
        }
    }

    /// Server lines: TLS with HTTP/2, as browsers use it.
    fn server_lines(&self) -> String {
        format!(
            "SSLEngine on\nSSLCertificateFile {}\nSSLCertificateKeyFile {}\nProtocols h2 http/1.1\n",
            self.cert, self.key
        )
    }
}

/// How curl reaches the server: the start of every URL and the flags.
struct Client {
    base: String,
    flags: Vec<String>,
}

impl Client {
    /// HTTPS and HTTP/2, trusting the test certificate only.
    fn https(a: &Apache, tls: &Tls) -> Client {
        Client {
            base: format!("https://127.0.0.1:{}", a.port),
            flags: vec!["--http2".into(), "--cacert".into(), tls.cert.clone()],
        }
    }

    /// Plain HTTP/1.1.
    fn plain(a: &Apache) -> Client {
        Client {
            base: format!("http://127.0.0.1:{}", a.port),
            flags: vec![],
        }
    }

    /// GET `path` with the given header lines (`Name: value`).
    fn get(&self, path: &str, headers: &[&str]) -> Response {
        let mut args = self.flags.clone();
        for h in headers {
            args.push("-H".into());
            args.push((*h).to_owned());
        }
        curl(&format!("{}{path}", self.base), &args)
    }
}

/// The `Available-Dictionary` line naming `dictionary`: its SHA-256 as a
/// structured-field byte sequence.
fn available(dictionary: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(dictionary));
    format!("Available-Dictionary: :{b64}:")
}

/// Asks `ask` every 100 ms until it returns something, for at most
/// `secs` seconds: the compressor works in the background, at its pace.
/// A timeout panics with the server's logs, which say what it did.
fn poll<T>(a: &Apache, what: &str, secs: u64, mut ask: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(t) = ask() {
            return t;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}\n{}",
            logs(a)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The ends of the access log and of the module's lines in the error log.
fn logs(a: &Apache) -> String {
    let tail = |lines: Vec<String>| lines[lines.len().saturating_sub(40)..].join("\n");
    let access = a.access_log().lines().map(str::to_owned).collect();
    format!(
        "access log (end):\n{}\nmodule log (end):\n{}",
        tail(access),
        tail(a.module_log())
    )
}

/// The last access-log line for `GET path` written after the log was
/// `from` bytes long (Apache logs once the response is out, so it may
/// come a moment after the browser is done).
fn served(a: &Apache, from: usize, path: &str) -> String {
    let request = format!("GET {path} ");
    poll(a, &format!("a log line for {path}"), 5, || {
        let log = a.access_log();
        log.get(from..)?
            .lines()
            .rev()
            .find(|l| l.starts_with(&request))
            .map(str::to_owned)
    })
}

/// Whether a log line says a delta went out from the cache (perhaps
/// with ` queued` after it: the version's other copies still to make).
fn is_cached_delta(line: &str) -> bool {
    line.contains(" dcz cached") || line.contains(" dcb cached")
}

/// A page that moves on to the path after its `#` a moment after it
/// loads. Chromium reads its dictionary store asynchronously when it
/// starts, so a navigation in its first instants may go out without the
/// dictionary (seen with Debian's Chromium 156); a visitor following a
/// link a moment later has it.
const LAUNCHER: &str =
    "<!doctype html><html><head><meta charset=\"utf-8\"><title>go</title></head>\
<body><script>setTimeout(function () { location.replace(location.hash.slice(1)); }, 1500);</script>\
</body></html>\n";

/// Chromium opening `path` with `profile` (where it keeps dictionaries)
/// and an HTTP cache in `http_cache`: the DOM it ends with.
fn visit(a: &Apache, tls: &Tls, profile: &Path, http_cache: &Path, path: &str) -> String {
    let url = format!("https://127.0.0.1:{}{path}", a.port);
    let cache_flag = format!("--disk-cache-dir={}", http_cache.display());
    // Virtual time lets the page's timers run and the browser fetch what
    // it fetches when idle (a `Link`ed dictionary) before the DOM is dumped.
    let flags = [
        tls.trust.as_str(),
        "--virtual-time-budget=5000",
        &cache_flag,
    ];
    let out = chromium(profile, &flags, &url);
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        dom.contains("</html>"),
        "{path}: no DOM from Chromium ({}); stderr:\n{}",
        out.status,
        stderr(&out)
    );
    dom
}

// ---------------------------------------------------------------------
// Same path: a script rewritten in place.
// ---------------------------------------------------------------------

/// A script that writes `ran <tag> <length> <checksum>` of its string
/// into `#out`: the page shows which version ran and that all of it
/// arrived intact.
fn app_script(tag: &str, text: &str) -> Vec<u8> {
    format!(
        "var S = \"{text}\";\n(function () {{\n  var h = 0;\n  for (var i = 0; i < S.length; i++) {{\n    \
         h = (Math.imul(h, 31) + S.charCodeAt(i)) | 0;\n  }}\n  \
         document.getElementById('out').textContent = 'ran {tag} ' + S.length + ' ' + (h >>> 0);\n}})();\n"
    )
    .into_bytes()
}

/// What `app_script(tag, text)` writes when it runs.
fn ran(tag: &str, text: &str) -> String {
    let sum = text
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    format!("ran {tag} {} {sum}", text.len())
}

/// Version 1's text (120 000 letters and spaces) and version 2's, a minor
/// release: twenty characters changed and a few added at the end.
fn script_versions() -> (String, String) {
    let v1 = script_text(11) + &script_text(12);
    let mut v2 = v1.clone();
    v2.replace_range(50_000..50_020, "version two is here ");
    v2.push_str(" and a new ending");
    (v1, v2)
}

/// `/js/` compressed on demand, each response of a script the dictionary
/// for its own next version, cacheable (browsers keep dictionaries only
/// from cacheable responses).
fn same_path_options(tls: &Tls) -> Options {
    Options {
        modules: vec!["ssl", "headers"],
        server: tls.server_lines()
            + "GzipDiskNgCacheRoot {docroot}/../cache\n\
               <Location /js/>\nSetHandler gzip-disk-ng\nGzipDiskNgOnDemand On\n\
               GzipDiskNgUseAsDictionary self\nHeader set Cache-Control \"max-age=3600\"\n</Location>\n",
        ..Default::default()
    }
}

/// The docroot: the page, the launcher, version 1 of the script (older
/// than a second, as a deployed file is: `put`) and the cache root.
fn fill_same_path(d: &Path, v1: &[u8]) {
    fs::create_dir(d.join("js")).unwrap();
    put(d, "js/app.js", v1);
    put(
        d,
        "index.html",
        b"<!doctype html><html><head><meta charset=\"utf-8\"><title>app</title></head><body>\
          <div id=\"out\">not run</div><script src=\"/js/app.js\"></script></body></html>\n",
    );
    put(d, "go.html", LAUNCHER.as_bytes());
    make_cache_root(&d.join("../cache"));
}

/// Waits until the server answers `path` with a delta against `old`
/// (the compressor makes it in the background) and checks it decodes to
/// `new`; the coding it used.
fn wait_for_delta(a: &Apache, web: &Client, path: &str, old: &[u8], new: &[u8]) -> String {
    let dictionary = available(old);
    let r = poll(a, &format!("a delta of {path}"), 60, || {
        let r = web.get(path, &[&dictionary, "Accept-Encoding: dcz, dcb, br"]);
        assert_eq!(r.status, 200, "{path}: {r:?}");
        matches!(r.coding(), Some("dcz" | "dcb")).then_some(r)
    });
    let coding = r.coding().unwrap_or_default();
    let decoded = oracle_decode_delta(coding, old, &r.body)
        .unwrap_or_else(|e| panic!("{path}: the delta does not decode: {e}"));
    assert!(
        decoded == new,
        "{path}: the delta decodes to something else"
    );
    r.coding().unwrap_or_default().to_owned()
}

/// Waits until the version of `path` now on disk is cached, which is
/// when the compressor records it in the scope's history: only then can
/// the next version get a delta against it. Checks on the way that its
/// responses make it a dictionary for its own path.
fn wait_until_recorded(a: &Apache, web: &Client, path: &str) {
    let r = web.get(path, &[]);
    let uad = r.header("Use-As-Dictionary").unwrap_or_default();
    assert!(
        uad.contains(&format!("match=\"{path}\"")),
        "Use-As-Dictionary: {uad:?}"
    );
    poll(a, &format!("the zstd copy of {path}"), 60, || {
        let r = web.get(path, &["Accept-Encoding: zstd"]);
        (r.coding() == Some("zstd")).then_some(())
    });
}

/// Chromium keeps version 1 of `/js/app.js`; the file is rewritten in
/// place; the compressor makes the deltas by itself; Chromium's next
/// visit gets one and runs exactly version 2.
#[test]
fn chromium_gets_a_delta_of_a_script_rewritten_in_place() {
    if chromium_missing() {
        return;
    }
    let tls = Tls::new();
    let (t1, t2) = script_versions();
    let (v1, v2) = (app_script("v1", &t1), app_script("v2", &t2));
    let a = Apache::start(same_path_options(&tls), |d| fill_same_path(d, &v1));
    let web = Client::https(&a, &tls);
    let profile = tempfile::tempdir().unwrap();
    let caches = tempfile::tempdir().unwrap();
    let dom = visit(
        &a,
        &tls,
        profile.path(),
        &caches.path().join("1"),
        "/index.html",
    );
    assert!(
        dom.contains(&ran("v1", &t1)),
        "version 1 did not run: {dom}"
    );
    wait_until_recorded(&a, &web, "/js/app.js");
    // In place, as a CMS or a minor release does: same inode, new content.
    fs::write(a.docroot.join("js/app.js"), &v2).unwrap();
    let coding = wait_for_delta(&a, &web, "/js/app.js", &v1, &v2);
    eprintln!("the server has a {coding} delta of version 2 against version 1");
    let from = a.access_log().len();
    // A fresh HTTP cache, as when the cached copy was evicted: else
    // Chromium runs its fresh copy of version 1 without asking. The
    // dictionaries stay in the profile.
    let dom = visit(
        &a,
        &tls,
        profile.path(),
        &caches.path().join("2"),
        "/go.html#/index.html",
    );
    assert!(
        dom.contains(&ran("v2", &t2)),
        "version 2 did not run: {dom}"
    );
    let line = served(&a, from, "/js/app.js");
    assert!(
        line.contains("HTTP/2.0") && is_cached_delta(&line),
        "no delta for Chromium: {line}\n{}",
        a.access_log()
    );
    a.assert_no_crash();
}

// ---------------------------------------------------------------------
// Site dictionary: pages sharing a template.
// ---------------------------------------------------------------------

/// Where the site dictionary is served.
const DICTIONARY: &str = "/dictionary.dat";

/// How many pages the site has: more than the 16 that start training.
const PAGES: usize = 20;

/// One page of the site: its path, its bytes, and text only it holds.
struct SitePage {
    path: String,
    title: String,
    html: Vec<u8>,
    text: String,
}

/// The shared head and navigation of every page: what a trained
/// dictionary is good at.
fn template_head(title: &str) -> String {
    let mut s = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title} | Example Site</title>\n<style>\n"
    );
    for (i, rule) in ["header", "nav", "main", "footer", "article", "aside"]
        .iter()
        .enumerate()
    {
        s += &format!(
            "{rule} {{ margin: 0 auto; padding: {i}em; max-width: 60em; font-family: sans-serif; color: #{i}{i}{i}; }}\n"
        );
    }
    s += "</style></head>\n<body><header><a class=\"brand\" href=\"/\">Example Site</a></header>\n<nav><ul>\n";
    for n in 0..PAGES {
        s += &format!(
            "<li><a href=\"/pages/page-{n:02}.html\">Section {n:02} of the guide</a></li>\n"
        );
    }
    s + "</ul></nav>\n"
}

/// The shared footer.
fn template_foot() -> String {
    format!(
        "<footer><p>{}</p><p>Copyright Example Site. All rights reserved.</p></footer>\n</body></html>\n",
        &script_text(900)[..1500]
    )
}

/// The site's pages: the template around a body of their own.
fn site_pages() -> Vec<SitePage> {
    (0..PAGES)
        .map(|n| {
            let title = format!("Page {n:02}");
            let text = script_text(100 + n as u64)[..3000].to_owned();
            let html = format!(
                "{}<main><h1 id=\"title\">{title}</h1>\n<p id=\"text\">{text}</p></main>\n{}",
                template_head(&title),
                template_foot()
            );
            SitePage {
                path: format!("/pages/page-{n:02}.html"),
                title,
                html: html.into_bytes(),
                text,
            }
        })
        .collect()
}

/// The whole site compressed on demand with a trained dictionary;
/// `tls` for Chromium.
fn site_options(tls: Option<&Tls>) -> Options {
    let mut server = format!(
        "GzipDiskNgCacheRoot {{docroot}}/../cache\nGzipDiskNgSiteDictionary {DICTIONARY}\n"
    );
    if let Some(tls) = tls {
        server = tls.server_lines() + &server;
    }
    server += "<Directory {docroot}/app>\nOptions +ExecCGI\nSetHandler cgi-script\n\
               AddOutputFilterByType GZIP_DISK_NG text/html\n</Directory>\n";
    // mod_proxy and mod_proxy_fcgi as a PHP-FPM site loads them: its
    // pages are learned all the same.
    let mut modules = vec!["cgid", "filter", "proxy", "proxy_fcgi"];
    if tls.is_some() {
        modules.push("ssl");
    }
    Options {
        modules,
        dir: "SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On".into(),
        server,
        ..Default::default()
    }
}

/// What the site's dynamic page (a CGI) says in its own words.
const DYNAMIC_TEXT: &str = "Rendered for this visit by the application.";

/// The site's dynamic page: the template around a body no file holds,
/// printed by a CGI.
fn dynamic_page() -> Vec<u8> {
    format!(
        "{}<main><h1 id=\"title\">Dynamic</h1>\n<p id=\"text\">{DYNAMIC_TEXT}</p></main>\n{}",
        template_head("Dynamic"),
        template_foot()
    )
    .into_bytes()
}

fn put_dynamic_page(d: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fs::create_dir(d.join("app")).unwrap();
    let script = d.join("app/page.cgi");
    let mut text = b"#!/bin/sh\nprintf 'Content-Type: text/html\\n\\n'\ncat <<'EOF'\n".to_vec();
    text.extend(dynamic_page());
    text.extend(b"EOF\n");
    fs::write(&script, text).unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
}

/// The docroot: the pages (older than a second: `put`), the launcher,
/// and the cache root.
fn fill_site(d: &Path, pages: &[SitePage]) {
    fs::create_dir(d.join("pages")).unwrap();
    for p in pages {
        put(d, &p.path[1..], &p.html);
    }
    put(d, "go.html", LAUNCHER.as_bytes());
    put_dynamic_page(d);
    make_cache_root(&d.join("../cache"));
}

/// Crawls the site as a search engine or a cache warmer would: once to
/// queue every page, then until each is served from the cache; then
/// waits for the compressor to train the dictionary. The dictionary's
/// response.
fn crawl_until_trained(a: &Apache, web: &Client, pages: &[SitePage]) -> Response {
    let ae = "Accept-Encoding: zstd, br, gzip";
    for p in pages {
        let r = web.get(&p.path, &[ae]);
        assert_eq!(r.status, 200, "{}: {r:?}", p.path);
        assert!(r.decoded() == p.html, "{}: not the page", p.path);
    }
    for p in pages {
        poll(a, &format!("the cached copy of {}", p.path), 60, || {
            // Encoded only when served from the cache: no siblings here.
            let r = web.get(&p.path, &[ae]);
            r.coding().is_some().then_some(())
        });
    }
    poll(a, "the trained site dictionary", 60, || {
        let r = web.get(DICTIONARY, &[]);
        (r.status == 200).then_some(r)
    })
}

/// The dictionary is offered to every navigation of the site, for a
/// day, under a strong ETag; the pages point browsers to it under a name
/// carrying its content's hash, which answers with those bytes only,
/// immutable.
fn assert_announced(web: &Client, dictionary: &Response, page: &SitePage) {
    let uad = dictionary.header("Use-As-Dictionary").unwrap_or_default();
    assert!(
        uad.contains("match=\"/*\"") && uad.contains("match-dest=(\"document\")"),
        "Use-As-Dictionary: {uad:?}"
    );
    let cc = dictionary.header("Cache-Control").unwrap_or_default();
    assert!(cc.contains("max-age=86400"), "Cache-Control: {cc:?}");
    let etag = dictionary.header("ETag").unwrap_or_default();
    assert!(etag.starts_with('"'), "not a strong ETag: {etag:?}");
    assert_eq!(
        dictionary.header("Content-Type"),
        Some("application/octet-stream")
    );
    assert!(
        !dictionary.body.is_empty() && dictionary.body.len() <= 192 * 1024,
        "a dictionary of {} bytes",
        dictionary.body.len()
    );
    let named = site_dictionary_url(DICTIONARY, &dictionary.body);
    wait_for_link(web, page, &named);
    let r = web.get(&named, &[]);
    assert_eq!(r.status, 200, "{named}");
    assert!(r.body == dictionary.body, "{named}: other bytes");
    let cc = r.header("Cache-Control").unwrap_or_default();
    assert!(cc.contains("immutable"), "{named}: Cache-Control: {cc:?}");
    let other = format!("{DICTIONARY}?h=0123456789abcdef");
    assert_eq!(web.get(&other, &[]).status, 404, "{other}");
}

/// `page` as a browser asks for it.
fn get_page(web: &Client, page: &SitePage) -> Response {
    web.get(&page.path, &["Accept-Encoding: zstd, br, gzip"])
}

/// Whether `r` links the dictionary at `named` for compression.
fn links_to(r: &Response, named: &str) -> bool {
    let links = r.headers.get("link").cloned().unwrap_or_default();
    links
        .iter()
        .any(|l| l.contains(&format!("<{named}>")) && l.contains("rel=\"compression-dictionary\""))
}

/// Asks for `page` until it links the dictionary at `named` (each child
/// looks for a trained dictionary at most once a second).
fn wait_for_link(web: &Client, page: &SitePage, named: &str) {
    wait_for(&format!("the Link header on {}", page.path), || {
        links_to(&get_page(web, page), named)
    });
}

/// Pages in a burst all link `dictionary`, and each child looked it up
/// for their links at most once in each second the burst spanned (its
/// debug line), not once per response.
fn assert_linked_once_a_second(a: &Apache, web: &Client, dictionary: &[u8], page: &SitePage) {
    let named = site_dictionary_url(DICTIONARY, dictionary);
    wait_for_link(web, page, &named);
    // One child links it now; another may have found no dictionary (or
    // another one) earlier in this second and keeps that answer for the
    // rest of it. From the next second on, every child has looked again.
    std::thread::sleep(Duration::from_millis(1100));
    // Long enough to cross into another second, where a child looks
    // again.
    let from = a.error_log().len();
    let start = Instant::now();
    let mut pages = 0;
    while pages < 40 || start.elapsed() < Duration::from_millis(1500) {
        let r = get_page(web, page);
        assert!(links_to(&r, &named), "{}: {r:?}\n{}", page.path, logs(a));
        pages += 1;
    }
    // The seconds the burst touched, of each child (mpm_event runs two
    // at most here).
    let seconds = start.elapsed().as_secs() as usize + 2;
    let log = a.error_log();
    let looked = log[from..]
        .lines()
        .filter(|l| l.contains("pages link the site dictionary as"))
        .count();
    assert!(
        (1..=2 * seconds).contains(&looked) && looked < pages,
        "the dictionary looked up {looked} times for {pages} pages in {seconds} s:\n{}",
        &log[from..]
    );
}

/// Chromium on the first page until it has fetched the dictionary the
/// `Link` header names (it does so when idle, so perhaps not at once).
fn first_visit(a: &Apache, tls: &Tls, profile: &Path, http_cache: &Path, page: &SitePage) {
    for _ in 0..3 {
        let from = a.access_log().len();
        let dom = visit(a, tls, profile, http_cache, &page.path);
        assert!(
            dom.contains(&page.text),
            "{} did not render: {dom}",
            page.path
        );
        std::thread::sleep(Duration::from_millis(500));
        let log = a.access_log();
        let fetched = log[from..]
            .lines()
            .any(|l| l.starts_with(&format!("GET {DICTIONARY}?h=")) && l.contains(" HTTP/2.0 200"));
        if fetched {
            return;
        }
    }
    panic!("Chromium never fetched {DICTIONARY}:\n{}", a.access_log());
}

/// After the crawl has trained the site dictionary, Chromium fetches it
/// from the first page's `Link`, and its navigations to other pages get
/// deltas against it and show those pages.
#[test]
fn chromium_navigations_get_deltas_against_the_site_dictionary() {
    if chromium_missing() {
        return;
    }
    let tls = Tls::new();
    let pages = site_pages();
    let a = Apache::start(site_options(Some(&tls)), |d| fill_site(d, &pages));
    let web = Client::https(&a, &tls);
    let dictionary = crawl_until_trained(&a, &web, &pages);
    assert_announced(&web, &dictionary, &pages[0]);
    let profile = tempfile::tempdir().unwrap();
    let http_cache = tempfile::tempdir().unwrap();
    first_visit(&a, &tls, profile.path(), http_cache.path(), &pages[0]);
    for p in [&pages[3], &pages[8], &pages[13], &pages[19]] {
        let from = a.access_log().len();
        let go = format!("/go.html#{}", p.path);
        let dom = visit(&a, &tls, profile.path(), http_cache.path(), &go);
        assert!(
            dom.contains(&format!("<h1 id=\"title\">{}</h1>", p.title)) && dom.contains(&p.text),
            "{} did not render: {dom}",
            p.path
        );
        let line = served(&a, from, &p.path);
        assert!(
            line.contains("HTTP/2.0") && is_cached_delta(&line),
            "no delta for Chromium's navigation: {line}\n{}",
            a.access_log()
        );
    }
    // A page no file holds, coded by the GZIP_DISK_NG filter against the
    // same dictionary, is shown as the CGI made it.
    let from = a.access_log().len();
    let dom = visit(
        &a,
        &tls,
        profile.path(),
        http_cache.path(),
        "/go.html#/app/page.cgi",
    );
    assert!(
        dom.contains(DYNAMIC_TEXT),
        "the dynamic page did not render: {dom}"
    );
    let line = served(&a, from, "/app/page.cgi");
    assert!(
        line.contains("HTTP/2.0") && line.contains(" dcz dynamic"),
        "no dcz for Chromium's dynamic page: {line}\n{}",
        a.access_log()
    );
    a.assert_no_crash();
}

/// Without a browser: no dictionary before training; after it, pages
/// link it without a child opening it for each, and each page comes as
/// a delta against the dictionary's bytes in both delta codings, as a
/// cached copy is served.
#[test]
fn site_dictionary_deltas_decode_against_the_served_dictionary() {
    let pages = site_pages();
    let a = Apache::start(site_options(None), |d| fill_site(d, &pages));
    let web = Client::plain(&a);
    assert_eq!(
        web.get(DICTIONARY, &[]).status,
        404,
        "a dictionary before training"
    );
    let dictionary = crawl_until_trained(&a, &web, &pages);
    let dict = dictionary.body.as_slice();
    let named = available(dict);
    // Fetched as a browser fetches it: compressed, the same dictionary.
    for coding in ["br", "zstd", "gzip"] {
        let r = web.get(DICTIONARY, &[&format!("Accept-Encoding: {coding}")]);
        assert_eq!((r.status, r.coding()), (200, Some(coding)), "{r:?}");
        assert!(r.decoded() == dict, "the dictionary in {coding}");
        assert!(r.body.len() < dict.len(), "{coding}: not smaller");
        assert_ne!(r.header("ETag"), dictionary.header("ETag"), "{coding}");
    }
    assert_linked_once_a_second(&a, &web, dict, &pages[0]);
    for (p, coding) in [(&pages[5], "dcz"), (&pages[6], "dcb")] {
        let ae = format!("Accept-Encoding: {coding}");
        let r = poll(&a, &format!("a {coding} delta of {}", p.path), 60, || {
            let r = web.get(&p.path, &[&named, &ae]);
            assert_eq!(r.status, 200, "{}: {r:?}", p.path);
            (r.coding() == Some(coding)).then_some(r)
        });
        let magic: &[u8] = if coding == "dcz" {
            &[0x5e, 0x2a, 0x4d, 0x18, 0x20, 0, 0, 0]
        } else {
            &[0xff, 0x44, 0x43, 0x42]
        };
        assert!(r.body.starts_with(magic), "{coding}: no {coding} header");
        let decoded = oracle_decode_delta(coding, dict, &r.body)
            .unwrap_or_else(|e| panic!("{}: {coding} does not decode: {e}", p.path));
        assert!(
            decoded == p.html,
            "{}: {coding} decodes to something else",
            p.path
        );
        assert_delta_headers(&r, coding);
        assert!(
            a.last_access_ends_with(&format!("{coding} cached")),
            "{}",
            a.access_log()
        );
    }
    assert_dynamic_dcz(&a, &web, dict, &named);
    // A dictionary the server never made gets the normal negotiation.
    let forged = available(b"not the site dictionary");
    let r = web.get(&pages[5].path, &[&forged, "Accept-Encoding: dcz, dcb, br"]);
    assert_eq!((r.status, r.coding()), (200, Some("br")), "{r:?}");
    // A page asked without any dictionary still varies on one, so a cache
    // in front never hands it out for a delta's request or the reverse.
    let r = web.get(&pages[5].path, &["Accept-Encoding: br"]);
    let vary = r.tokens("Vary");
    assert!(
        vary.iter()
            .any(|t| t.eq_ignore_ascii_case("available-dictionary")),
        "Vary: {vary:?}"
    );
    a.assert_no_crash();
}

/// The dynamic page (a CGI through the GZIP_DISK_NG filter): `dcz`
/// against the site dictionary for a client that announces it, smaller
/// than zstd alone and decoding to what the CGI printed; zstd for one
/// that does not, or names another dictionary; linking the dictionary.
fn assert_dynamic_dcz(a: &Apache, web: &Client, dict: &[u8], named: &str) {
    let page = dynamic_page();
    let ae = "Accept-Encoding: dcz, zstd, br, gzip";
    let r = web.get("/app/page.cgi", &[named, ae]);
    assert_eq!((r.status, r.coding()), (200, Some("dcz")), "{r:?}");
    let decoded = oracle_decode_delta("dcz", dict, &r.body).expect("dcz decodes");
    assert!(decoded == page, "the dynamic dcz decodes to something else");
    let vary = vary_of(&r);
    assert!(
        vary.contains(&"available-dictionary".to_owned()),
        "Vary: {vary:?}"
    );
    assert!(a.last_access_ends_with("dcz dynamic"), "{}", a.access_log());
    let plain = web.get("/app/page.cgi", &[ae]);
    assert_eq!(plain.coding(), Some("zstd"), "{plain:?}");
    assert!(plain.decoded() == page);
    assert!(
        r.body.len() * 2 < plain.body.len(),
        "dcz {} bytes against zstd's {}",
        r.body.len(),
        plain.body.len()
    );
    assert!(
        links_to(&plain, &site_dictionary_url(DICTIONARY, dict)),
        "{plain:?}"
    );
    let forged = available(b"not the site dictionary");
    let r = web.get("/app/page.cgi", &[&forged, ae]);
    assert_eq!(r.coding(), Some("zstd"), "{r:?}");
    assert_dynamic_dcb(a, web, dict, named, &page);
}

/// The same page in `dcb` for a client that prefers it (or takes no
/// zstd), decoded by an independent brotli decoder against the
/// dictionary; `dcz` where both are offered alike.
fn assert_dynamic_dcb(a: &Apache, web: &Client, dict: &[u8], named: &str, page: &[u8]) {
    for ae in ["dcb, br, gzip", "dcz;q=0.5, dcb, zstd, br"] {
        let r = web.get("/app/page.cgi", &[named, &format!("Accept-Encoding: {ae}")]);
        assert_eq!((r.status, r.coding()), (200, Some("dcb")), "{ae}: {r:?}");
        let decoded = oracle_decode_delta("dcb", dict, &r.body).expect("dcb decodes");
        assert!(
            decoded == page,
            "{ae}: the dynamic dcb decodes to something else"
        );
        assert!(a.last_access_ends_with("dcb dynamic"), "{}", a.access_log());
    }
    let r = web.get("/app/page.cgi", &[named, "Accept-Encoding: dcb, dcz, br"]);
    assert_eq!(r.coding(), Some("dcz"), "{r:?}");
}

/// The `Vary` of `r`, lowercased.
fn vary_of(r: &Response) -> Vec<String> {
    r.tokens("Vary")
        .iter()
        .map(|t| t.to_ascii_lowercase())
        .collect()
}

/// What a delta from the cache carries: caches must key it on the
/// dictionary too, its own strong ETag, the module's marker.
fn assert_delta_headers(r: &Response, coding: &str) {
    let vary = vary_of(r);
    assert!(
        vary.contains(&"accept-encoding".to_owned())
            && vary.contains(&"available-dictionary".to_owned()),
        "Vary: {vary:?}"
    );
    let etag = r.header("ETag").unwrap_or_default();
    assert!(
        etag.starts_with('"') && etag.ends_with(&format!("-{coding}\"")),
        "ETag: {etag:?}"
    );
    assert_eq!(r.header("Mod-Gzip-Disk-Ng"), Some(":-)"));
}

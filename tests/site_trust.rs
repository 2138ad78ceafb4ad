//! The site dictionary, which anyone may fetch, holds only pages every
//! client may GET, judged whenever it is trained: never a page behind a
//! deny-list (`Require not ip`, `Deny from`, `Require not env` set from
//! the User-Agent), which a client no rule names passes; and a page
//! restricted after it was learned (an `.htaccess` added later, the file
//! unchanged) leaves it: the dictionary holding it stops being served and
//! linked within a training period.

mod common;

use common::*;
use std::fs;
use std::time::{Duration, Instant};

/// Where the site dictionary is served.
const DICTIONARY: &str = "/gdn-site.dict";

/// Every page's template: what a trained dictionary holds anyway.
fn template() -> (String, String) {
    let mut head = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
                    <title>Example Site</title></head>\n<body><header>Example Site</header>\n<nav><ul>\n"
        .to_string();
    for n in 0..12 {
        head += &format!("<li><a href=\"/pub/s{n}.html\">Chapter {n} of the guide</a></li>\n");
    }
    head += "</ul></nav>\n<main>\n";
    let foot = "</main>\n<footer><p>Copyright Example Site.</p></footer>\n</body></html>\n";
    (head, foot.to_string())
}

/// A page: the template around text of its own and `marker` said over
/// and over, so a trainer that sees the page keeps it.
fn site_page(marker: &str, seed: u64, times: usize) -> Vec<u8> {
    let (head, foot) = template();
    let mut v = head.into_bytes();
    v.extend_from_slice(&page(2_000, seed));
    for i in 0..times {
        v.extend_from_slice(format!("<p>{marker} {marker} item {i}</p>\n").as_bytes());
    }
    v.extend_from_slice(foot.as_bytes());
    v
}

/// Writes `bytes` at the URL path `path` under `docroot`, making its
/// directories.
fn put_page(docroot: &std::path::Path, path: &str, bytes: &[u8]) {
    let file = docroot.join(&path[1..]);
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    put(docroot, &path[1..], bytes);
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The body as a client reads it.
fn readable(r: &Response) -> Vec<u8> {
    decode_body(r.coding(), &r.body).unwrap_or_else(|_| r.body.clone())
}

/// The 20 public pages under `/pub/`.
fn public_pages() -> Vec<(String, Vec<u8>)> {
    (0..20)
        .map(|n| {
            let marker = format!("PUBLIC-MARK-{n:02}-a");
            (format!("/pub/s{n}.html"), site_page(&marker, n, 40))
        })
        .collect()
}

/// The server lines every test here has: the cache, the dictionary, a
/// training period of a second (where the module knows the directive).
fn server_lines(extra: &str) -> String {
    format!(
        "GzipDiskNgCacheRoot {{docroot}}/../cache\nGzipDiskNgSiteDictionary {DICTIONARY}\n\
         <IfDirective GzipDiskNgSiteDictionaryPeriod>\nGzipDiskNgSiteDictionaryPeriod 1\n</IfDirective>\n{extra}"
    )
}

/// Requests each of `paths` (with `extra` curl arguments) until it is
/// served from the cache.
fn crawl(a: &Apache, paths: &[(&str, &[&str])]) {
    let ae = "Accept-Encoding: zstd, br, gzip";
    for (path, extra) in paths {
        let mut args = vec!["-H", ae];
        args.extend_from_slice(extra);
        assert_eq!(a.request(path, &args).status, 200, "{path} {extra:?}");
    }
    for (path, extra) in paths {
        let mut args = vec!["-H", ae];
        args.extend_from_slice(extra);
        wait_for(&format!("the copy of {path}"), || {
            a.request(path, &args).coding().is_some()
        });
    }
}

/// The dictionary at the bare path, once one is served.
fn trained(a: &Apache) -> Vec<u8> {
    let mut d = None;
    wait_for("the trained site dictionary", || {
        let r = a.get(DICTIONARY, None);
        d = (r.status == 200).then_some(r.body);
        d.is_some()
    });
    d.unwrap_or_default()
}

#[test]
fn deny_lists_keep_a_page_out_of_the_site_dictionary() {
    let hidden: [(&str, &str); 3] = [
        ("/notip/p.html", "HIDDEN-SECRET-NOT-IP-3e8a"),
        ("/deny/p.html", "HIDDEN-SECRET-DENY-FROM-91c2"),
        ("/notenv/p.html", "HIDDEN-SECRET-NOT-ENV-5f07"),
    ];
    let public = public_pages();
    let server = server_lines(
        "SetEnvIf User-Agent \"EvilBot\" bad\n\
         <Directory {docroot}/notip>\n<RequireAll>\nRequire all granted\nRequire not ip 10.9.8.7\n</RequireAll>\n</Directory>\n\
         <Directory {docroot}/deny>\nOrder allow,deny\nAllow from all\nDeny from 10.9.8.7\n</Directory>\n\
         <Directory {docroot}/notenv>\n<RequireAll>\nRequire all granted\nRequire not env bad\n</RequireAll>\n</Directory>\n",
    );
    let a = Apache::start(
        Options {
            dir: "SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On".into(),
            server,
            modules: vec!["authz_host", "access_compat", "setenvif"],
            ..Default::default()
        },
        |d| {
            for (i, (path, secret)) in hidden.iter().enumerate() {
                put_page(d, path, &site_page(secret, 60 + i as u64, 200));
            }
            for (path, html) in &public {
                put_page(d, path, html);
            }
            make_cache_root(&d.join("../cache"));
        },
    );
    // The deny-list refuses a client it names.
    let evil = a.request("/notenv/p.html", &["-A", "EvilBot/1.0"]);
    assert_eq!(evil.status, 403, "Require not env: {evil:?}");
    // This client reads every page, the hidden ones as the 14th to 16th,
    // so a trainer of the pages served, newest first, learns them (zstd's
    // trainer learns from the first samples and tests on the last).
    let public_paths: Vec<(&str, &[&str])> =
        public.iter().map(|(p, _)| (p.as_str(), &[][..])).collect();
    let mut pages = public_paths[..13].to_vec();
    pages.extend(hidden.iter().map(|(p, _)| (*p, &[][..])));
    pages.extend_from_slice(&public_paths[13..]);
    crawl(&a, &pages);
    let dictionary = trained(&a);
    // Served a few periods on: judged again, still without them.
    std::thread::sleep(Duration::from_secs(3));
    crawl(&a, &pages[12..16]);
    for ae in [None, Some("br"), Some("zstd"), Some("gzip")] {
        let r = a.get(DICTIONARY, ae);
        assert_eq!(r.status, 200, "{ae:?}");
        let body = readable(&r);
        for (path, secret) in &hidden {
            assert!(
                !contains(&body, secret.as_bytes()),
                "the site dictionary ({ae:?}) learned {path}, which a deny-list refuses to some clients"
            );
        }
        // What the hidden pages share, and no public page holds.
        assert!(
            !contains(&body, b"HIDDEN-SECRET-"),
            "the site dictionary ({ae:?}) learned pages a deny-list refuses to some clients"
        );
    }
    let (head, _) = template();
    assert!(
        head.as_bytes()
            .windows(32)
            .any(|w| contains(&dictionary, w)),
        "the dictionary holds nothing of the public pages"
    );
    a.assert_no_crash();
}

#[test]
fn a_page_restricted_after_it_was_learned_leaves_the_site_dictionary() {
    let (later, secret) = ("/later/p.html", "LATER-RESTRICTED-c41d");
    let public = public_pages();
    let server =
        server_lines("<Directory {docroot}/later>\nAllowOverride AuthConfig\n</Directory>\n");
    let a = Apache::start(
        Options {
            dir: "SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On".into(),
            server,
            modules: vec!["authz_host"],
            ..Default::default()
        },
        |d| {
            // Two pages share the marker: a dictionary learns what pages
            // share, never what one page alone holds.
            put_page(d, later, &site_page(secret, 77, 200));
            put_page(d, "/later/q.html", &site_page(secret, 78, 200));
            for (path, html) in &public {
                put_page(d, path, html);
            }
            make_cache_root(&d.join("../cache"));
        },
    );
    // The pages as the 16th and 17th served, so a trainer of the pages
    // served, newest first, learns them.
    let public_paths: Vec<(&str, &[&str])> =
        public.iter().map(|(p, _)| (p.as_str(), &[][..])).collect();
    let mut pages = public_paths[..15].to_vec();
    pages.push((later, &[][..]));
    pages.push(("/later/q.html", &[][..]));
    pages.extend_from_slice(&public_paths[15..]);
    crawl(&a, &pages);
    // Public then: learned (the control).
    let learned = trained(&a);
    assert!(
        contains(&learned, secret.as_bytes()),
        "the public page was not learned: nothing to test"
    );
    let url = site_dictionary_url(DICTIONARY, &learned);
    // Restricted by an .htaccess; the file is not touched. This client
    // may still read it; a client no rule names may not.
    fs::write(a.docroot.join("later/.htaccess"), "Require ip 127.0.0.1\n").unwrap();
    assert_eq!(a.get(later, Some("br")).status, 200);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        // Pages are asked for as browsing goes on.
        for (path, _) in public.iter().take(3) {
            let _ = a.get(path, Some("br"));
        }
        let bare = a.get(DICTIONARY, None);
        let named = a.get(&url, None);
        let linked = a
            .get(&public[0].0, Some("br"))
            .header("Link")
            .unwrap_or_default()
            .to_string();
        let gone = (bare.status == 404 || !contains(&bare.body, secret.as_bytes()))
            && named.status == 404
            && !linked.contains(&url);
        if gone {
            let cc = named.header("Cache-Control").unwrap_or_default();
            assert!(cc.contains("no-store"), "{url}: Cache-Control {cc:?}");
            assert!(named.header("Use-As-Dictionary").is_none(), "{url}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "a page restricted since is still in the site dictionary: bare path {}, {url} {}, Link {linked:?}",
            bare.status,
            named.status
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    a.assert_no_crash();
}

/// A site with the output filter on by type and no handler of the
/// module: the files core sends join the site dictionary as the
/// handler's pages do (a page behind a deny-list stays out), and a client
/// that holds the dictionary gets each page's delta from the cache,
/// made once, not coded per response.
#[test]
fn files_through_the_filter_join_the_site_dictionary_and_get_cached_deltas() {
    let (hidden, secret) = ("/notip/p.html", "HIDDEN-FILTERED-NOT-IP-77d1");
    let public = public_pages();
    let server = server_lines(
        "<Directory {docroot}/notip>\n<RequireAll>\nRequire all granted\nRequire not ip 10.9.8.7\n</RequireAll>\n</Directory>\n",
    );
    let a = Apache::start(
        Options {
            dir: "GzipDiskNgOnDemand On\nAddOutputFilterByType GZIP_DISK_NG text/html".into(),
            server,
            modules: vec!["filter", "authz_host"],
            ..Default::default()
        },
        |d| {
            put_page(d, hidden, &site_page(secret, 90, 200));
            for (path, html) in &public {
                put_page(d, path, html);
            }
            make_cache_root(&d.join("../cache"));
        },
    );
    let mut paths: Vec<&str> = public.iter().map(|(p, _)| p.as_str()).collect();
    paths.insert(13, hidden);
    let ae = "Accept-Encoding: zstd, br, gzip";
    for p in &paths {
        assert_eq!(a.request(p, &["-H", ae]).status, 200, "{p}");
    }
    // A copy from the cache has its length; a body coded as it passes
    // has none.
    for p in &paths {
        wait_for(&format!("the cached copy of {p}"), || {
            a.request(p, &["-H", ae]).header("Content-Length").is_some()
        });
    }
    let dictionary = trained(&a);
    assert!(
        !contains(&dictionary, secret.as_bytes()),
        "the site dictionary learned {hidden} through the filter, which a deny-list refuses to some clients"
    );
    let (path, html) = &public[3];
    let held = announce(&dictionary);
    let asked = ["-H", "Accept-Encoding: dcz, zstd, br, gzip", "-H"];
    let header = format!("Available-Dictionary: {held}");
    let mut last = None;
    wait_for(&format!("the cached delta of {path}"), || {
        let r = a.request(path, &[asked[0], asked[1], asked[2], &header]);
        assert_eq!((r.status, r.coding()), (200, Some("dcz")), "{path}");
        assert!(
            r.decoded_delta(&dictionary) == *html,
            "{path}: not the page"
        );
        let cached = a.last_access_ends_with("dcz cached");
        last = Some(r);
        cached
    });
    let r = last.expect("a response");
    assert_eq!(r.header("Content-Length"), Some(&*r.body.len().to_string()));
    let vary = r.tokens("Vary");
    assert!(
        vary.iter()
            .any(|v| v.eq_ignore_ascii_case("Available-Dictionary")),
        "Vary: {vary:?}"
    );
    assert!(
        r.body.len() * 2 < readable(&a.request(path, &["-H", "Accept-Encoding: br"])).len(),
        "the delta is no smaller than half the page"
    );
    a.assert_no_crash();
}

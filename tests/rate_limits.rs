//! A rate limiter in front of the module (mod_evasive) sees what a client
//! asked: one request per page. A sibling of an existing original is
//! served once verified to decode to the original's bytes, without a
//! request for its own name; only a sibling without an original, the
//! only file, is still asked of Apache under its own URI (its twin),
//! which such a limiter counts.

mod common;

use common::*;
use std::path::Path;

/// mod_evasive's module file stem under the modules directory.
const EVASIVE: &str = "evasive20";

/// Pages asked for, and the requests per site mod_evasive lets through
/// in its interval: twelve pages, each with three siblings, would be 48
/// requests if every sibling were asked under its own name.
const PAGES: usize = 12;
const SITE_COUNT: usize = 24;

/// A server whose configuration makes every sibling a twin where one is
/// asked (server-level rewrite rules), behind mod_evasive.
fn start(fill: impl FnOnce(&Path)) -> Option<Apache> {
    if !Path::new(&format!("{}/mod_{EVASIVE}.so", httpd_modules())).exists() {
        skip("mod_evasive not installed (apt-get install libapache2-mod-evasive)");
        return None;
    }
    let server = format!(
        "RewriteEngine On\n\
         <IfModule mod_evasive20.c>\n\
         DOSSiteCount {SITE_COUNT}\nDOSSiteInterval 30\n\
         DOSPageCount 1000\nDOSPageInterval 30\n\
         DOSBlockingPeriod 30\n\
         </IfModule>\n"
    );
    Some(Apache::start(
        Options {
            server,
            modules: vec!["rewrite", EVASIVE],
            ..one_child()
        },
        fill,
    ))
}

#[test]
fn verified_siblings_cost_a_limiter_one_request_per_page() {
    let data = page(20_000, 52);
    let Some(a) = start(|d| {
        for i in 0..PAGES {
            publish(
                d,
                &format!("p{i}.html"),
                &data,
                true,
                &[".gz", ".br", ".zst"],
            );
        }
    }) else {
        return;
    };
    for i in 0..PAGES {
        let r = a.get(&format!("/p{i}.html"), Some("gzip, br, zstd"));
        assert_eq!(r.status, 200, "page {i} refused: {:?}", a.module_log());
        assert!(r.coding().is_some(), "page {i}: no sibling sent");
        assert_eq!(r.decoded(), data, "page {i}");
    }
    assert!(
        !a.module_log()
            .iter()
            .any(|l| l.contains("refused by the access rules")),
        "{:?}",
        a.module_log()
    );
    a.assert_no_crash();
}

/// Where only the `.gz` is published, the sibling is the only file: its
/// own name's rules decide, asked of Apache, and the limiter counts that
/// request: two per page, so past half the site count it refuses.
#[test]
fn a_sibling_without_its_original_is_still_asked() {
    let data = page(20_000, 53);
    let Some(a) = start(|d| {
        for i in 0..PAGES + 1 {
            publish(d, &format!("g{i}.html"), &data, false, &[".gz"]);
        }
    }) else {
        return;
    };
    let statuses: Vec<u16> = (0..PAGES + 1)
        .map(|i| a.get(&format!("/g{i}.html"), Some("gzip")).status)
        .collect();
    // Refused, the twin leaves the page nothing to send (404); refused
    // in turn, the page's own request gets the limiter's 403.
    assert_eq!(statuses[0], 200, "{statuses:?}");
    assert!(
        statuses.iter().any(|&s| s != 200),
        "every twin passed the limiter: {statuses:?}"
    );
    a.assert_no_crash();
}

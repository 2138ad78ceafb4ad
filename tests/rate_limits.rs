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
    start_with("", fill)
}

/// As `start`, with `extra` lines at server level.
fn start_with(extra: &str, fill: impl FnOnce(&Path)) -> Option<Apache> {
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
         </IfModule>\n{extra}"
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

/// Publishes every page twice, as a site does between two visits, so
/// that each gets deltas against its first version in `store`.
fn publish_deltas(d: &Path, store: &Path, v1: &[u8], v2: &[u8]) {
    let run = || {
        let o = publish_tool([
            "compress".as_ref(),
            "--delta-versions".as_ref(),
            "1".as_ref(),
            "--store".as_ref(),
            store.as_os_str(),
            d.as_os_str(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    };
    for i in 0..PAGES {
        std::fs::write(d.join(format!("p{i}.html")), v1).unwrap();
    }
    run();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    for i in 0..PAGES {
        let p = d.join(format!("p{i}.html"));
        std::fs::write(&p, v2).unwrap();
        set_mtime(&p, later);
    }
    run();
}

/// Published deltas of pages whose originals exist: with the tree's
/// publish store named, each is verified against the earlier version the
/// store holds and sent with no request for its own name, so the limiter
/// sees one request per page; without it, each delta is asked under its
/// own name and the limiter refuses past half its count.
#[test]
fn deltas_verified_against_the_publish_store_cost_one_request_per_page() {
    let v1 = page(20_000, 54);
    let mut v2 = v1.clone();
    v2.splice(10_000..10_006, b"issue2".iter().copied());
    let statuses = |with_store: bool| {
        let holder = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let store = holder.path().join("store");
        std::fs::create_dir(&store).unwrap();
        open_store_to_server(holder.path());
        open_store_to_server(&store);
        let line = format!("GzipDiskNgDeltaStore {{docroot}} {}\n", store.display());
        let a = start_with(if with_store { &line } else { "" }, |d| {
            publish_deltas(d, &store, &v1, &v2)
        })?;
        let ae = "gzip, br, zstd, dcb, dcz";
        let dict = format!("Available-Dictionary: {}", announce(&v1));
        let got: Vec<(u16, Option<String>)> = (0..PAGES)
            .map(|i| {
                let args = [
                    "-H".to_string(),
                    format!("Accept-Encoding: {ae}"),
                    "-H".into(),
                    dict.clone(),
                ];
                let r = curl(&a.url(&format!("/p{i}.html")), &args);
                let c = r.header("Content-Encoding").map(str::to_owned);
                if r.status == 200 && matches!(c.as_deref(), Some("dcz" | "dcb")) {
                    let c = c.as_deref().unwrap_or_default();
                    assert_eq!(oracle_decoded_delta(c, &v1, &r.body), v2, "page {i}");
                }
                (r.status, c)
            })
            .collect();
        a.assert_no_crash();
        Some(got)
    };
    let Some(verified) = statuses(true) else {
        return;
    };
    assert!(
        verified
            .iter()
            .all(|(s, c)| *s == 200 && matches!(c.as_deref(), Some("dcz" | "dcb"))),
        "{verified:?}"
    );
    let Some(asked) = statuses(false) else {
        return;
    };
    assert!(asked.iter().any(|(s, _)| *s != 200), "{asked:?}");
}

/// A module that records every request it is given (mod_log_forensic,
/// whose "+" line is matched by a "-" line once the request is logged)
/// records the client's requests only: a sibling without its original is
/// still asked under its own name (its `<Files>` refusal decides), but
/// its twin is no request of the client's and leaves no line, so
/// `check_forensic` finds no request that did not finish.
#[test]
fn a_forensic_log_holds_only_the_clients_requests() {
    let data = page(20_000, 55);
    let base = one_child();
    let a = Apache::start(
        Options {
            server: format!(
                "{}\nRewriteEngine On\nForensicLog forensic.log\n",
                base.server
            ),
            dir: format!(
                "{}\n<Files \"hidden.html.gz\">\nRequire all denied\n</Files>",
                base.dir
            ),
            modules: vec!["rewrite", "log_forensic"],
            ..base
        },
        |d| {
            publish(d, "only.html", &data, false, &[".gz"]);
            publish(d, "hidden.html", &data, false, &[".gz"]);
            publish(d, "page.html", &data, true, &[".gz", ".br"]);
        },
    );
    let only = a.get("/only.html", Some("gzip"));
    assert_eq!(
        (only.status, only.coding()),
        (200, Some("gzip")),
        "{:?}",
        a.error_log()
    );
    assert_eq!(only.decoded(), data);
    // Refused under its own name: its twin was asked, and said no.
    assert_eq!(a.get("/hidden.html", Some("gzip")).status, 404);
    assert_eq!(a.get("/page.html", Some("br")).coding(), Some("br"));
    let log = std::fs::read_to_string(a.root.path().join("forensic.log")).unwrap();
    let asked: Vec<&str> = log.lines().filter(|l| l.starts_with('+')).collect();
    assert_eq!(asked.len(), 3, "{log}");
    assert!(!log.contains(".gz "), "a twin was recorded: {log}");
    let check = std::process::Command::new("check_forensic")
        .arg(a.root.path().join("forensic.log"))
        .output()
        .expect("check_forensic (apache2-utils)");
    assert!(check.status.success(), "{}", stderr(&check));
    assert_eq!(stdout(&check), "", "unfinished requests: {log}");
    a.assert_no_crash();
}

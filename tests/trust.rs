//! A sibling is served only where a GET for its own URI, from the same
//! client with the same headers, would be served as that file: for each
//! way a configuration can refuse a name (symlink options, rules applied
//! at fixup or translate time, environment-based denies, URI shapes), the
//! direct request's status and the module's answer agree, against a real
//! Apache, both where the module judges names by sections alone and where
//! it asks Apache (a subrequest per sibling).

mod common;

use common::*;
use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A text only the refused sibling holds.
const SECRET: &[u8] = b"SECRET SIBLING BYTES, never to be sent";

/// Lines that make the module ask Apache about every sibling (a module
/// outside its list with rules switched on).
const ASKING: &str = "RewriteEngine On\n";

/// How the configuration should make the module judge names.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Path_ {
    /// By sections alone (no subrequest).
    Short,
    /// By a subrequest per sibling.
    Asked,
}

struct Case<'a> {
    server: String,
    dir: &'a str,
    modules: Vec<&'static str>,
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The direct request for `sibling_uri` and the module's answers for
/// `uri` (gzip accepted, and identity) agree where the sibling is the
/// only file: a refused sibling's bytes never go out, raw or decoded; an
/// allowed one is served. Beside an original (`x.html`, whose identity
/// answer is `the original page`), the sibling holds other content: it
/// is never sent nor decoded, whatever its own name's rules, and the
/// original answers.
fn agree(a: &Apache, uri: &str, sibling_uri: &str, extra: &[&str]) {
    let with = |ae: &'static str| {
        let mut args = vec!["--path-as-is", "-H", ae];
        args.extend_from_slice(extra);
        args
    };
    let direct = a.request(sibling_uri, &with("Accept-Encoding: gzip"));
    let gz = a.request(uri, &with("Accept-Encoding: gzip"));
    let plain = a.request(uri, &with("Accept-Encoding: identity"));
    let served = gz.decoded();
    if plain.body == b"the original page\n" {
        assert_eq!((gz.status, gz.coding()), (200, None), "{uri}: the original");
        assert_eq!(gz.body, b"the original page\n", "{uri}");
    } else if direct.status == 200 {
        assert_eq!(gz.status, 200, "{uri}: the sibling is served directly");
        assert_eq!(gz.coding(), Some("gzip"), "{uri}");
        assert!(contains(&served, SECRET), "{uri}");
    } else {
        for (r, what) in [(&gz, "gzip"), (&plain, "identity")] {
            let body = if what == "gzip" { &served } else { &r.body };
            assert!(
                !contains(body, SECRET) && !contains(&r.body, &gzip(SECRET)),
                "{uri} ({what}) sent a sibling refused directly with {}: status {}",
                direct.status,
                r.status
            );
        }
        assert!(
            a.module_log()
                .iter()
                .any(|l| l.contains("refused") || l.contains("not allowed")),
            "{:?}",
            a.module_log()
        );
    }
    a.assert_no_crash();
}

/// A sibling beside its original, decoding to the original's bytes
/// (`same.html`), is that page: sent for `uri` whatever the rules for
/// its own name say (the direct GET of `sibling_uri` may be refused),
/// since the page's own request was allowed those bytes.
fn verified_served(a: &Apache, uri: &str, sibling_uri: &str) {
    let direct = a.request(sibling_uri, &["--path-as-is"]);
    let gz = a.get(uri, Some("gzip"));
    assert_eq!(
        (gz.status, gz.coding()),
        (200, Some("gzip")),
        "{uri} (its sibling's direct GET: {})",
        direct.status
    );
    assert_eq!(gz.decoded(), SECRET, "{uri}");
}

/// `x.html` in `dir` with a gzip sibling holding `SECRET`; `only.html`
/// with only such a sibling (served decoded to identity clients).
fn secret_pages(docroot: &Path, dir: &str) {
    let d = docroot.join(dir);
    fs::create_dir_all(&d).unwrap();
    put(&d, "x.html", b"the original page\n");
    put(&d, "x.html.gz", &gzip(SECRET));
    put(&d, "only.html.gz", &gzip(SECRET));
    // A sibling of its own original's content: `x.html.gz` holds other
    // content, so the module judges it broken and never sends it.
    put(&d, "same.html", SECRET);
    put(&d, "same.html.gz", &gzip(SECRET));
}

fn pages_agree(a: &Apache, dir: &str) {
    for page in ["x.html", "only.html"] {
        agree(
            a,
            &format!("/{dir}/{page}"),
            &format!("/{dir}/{page}.gz"),
            &[],
        );
    }
    if a.docroot.join(dir).join("same.html").exists() {
        let uri = format!("/{dir}/same.html");
        verified_served(a, &uri, &format!("{uri}.gz"));
    }
}

#[test]
fn symlink_options_come_from_the_directory_walk() {
    let outside = world_readable_tempdir();
    let secret = outside.path().join("secret.gz");
    fs::write(&secret, gzip(SECRET)).unwrap();
    let fill = |d: &Path| {
        for dir in ["files", "loc", "plain"] {
            fs::create_dir_all(d.join(dir)).unwrap();
            put(&d.join(dir), "x.html", b"the original page\n");
            symlink(&secret, d.join(dir).join("x.html.gz")).unwrap();
            symlink(&secret, d.join(dir).join("only.html.gz")).unwrap();
        }
    };
    // Options loosened outside <Directory>: Apache's walk ignores them.
    let loosened = Case {
        server: "<FilesMatch \".\">\nOptions FollowSymLinks\n</FilesMatch>\n\
                 <Location /loc>\nOptions FollowSymLinks\n</Location>\n"
            .into(),
        dir: "Options None",
        modules: vec![],
    };
    both_ways(loosened, true, fill, |a| {
        pages_agree(a, "files");
        pages_agree(a, "loc");
    });
    let plain = Case {
        server: String::new(),
        dir: "Options None",
        modules: vec![],
    };
    both_ways(plain, false, fill, |a| pages_agree(a, "plain"));
    // Where Apache follows links, so does the module.
    let follow = Case {
        server: String::new(),
        dir: "Options FollowSymLinks",
        modules: vec![],
    };
    both_ways(follow, false, fill, |a| pages_agree(a, "plain"));
}

#[test]
fn rules_applied_at_fixup_are_asked() {
    let fill = |d: &Path| {
        secret_pages(d, "redirect");
        secret_pages(d, "rewrite");
        secret_pages(d, "htaccess");
        fs::write(
            d.join("htaccess/.htaccess"),
            "RewriteEngine On\nRewriteRule \"\\.gz$\" - [F]\n",
        )
        .unwrap();
    };
    let case = Case {
        server: "<Directory {docroot}/redirect>\nRedirectMatch 403 \"\\.gz$\"\n</Directory>\n\
                 <Directory {docroot}/rewrite>\nRewriteEngine On\nRewriteRule \"\\.gz$\" - [F]\n</Directory>\n\
                 <Directory {docroot}/htaccess>\nAllowOverride FileInfo\n</Directory>\n"
            .into(),
        dir: "",
        modules: vec!["alias", "rewrite"],
    };
    both_ways(case, true, fill, |a| {
        for dir in ["redirect", "rewrite", "htaccess"] {
            pages_agree(a, dir);
        }
    });
}

#[test]
fn rules_applied_at_translate_time_are_asked() {
    let case = Case {
        server: "RewriteEngine On\nRewriteRule \"^/dir/.*\\.gz$\" - [F]\n".into(),
        dir: "",
        modules: vec!["rewrite"],
    };
    both_ways(
        case,
        true,
        |d| secret_pages(d, "dir"),
        |a| pages_agree(a, "dir"),
    );
}

#[test]
fn environment_set_from_the_uri_is_judged_for_the_siblings_uri() {
    let fill = |d: &Path| {
        for dir in ["server", "directory", "htaccess", "open"] {
            secret_pages(d, dir);
        }
        fs::write(
            d.join("htaccess/.htaccess"),
            "SetEnvIf Request_URI \"\\.gz$\" hide\nOrder allow,deny\nAllow from all\nDeny from env=hide\n",
        )
        .unwrap();
    };
    let case = Case {
        server: "SetEnvIf Request_URI \"^/server/.*\\.gz$\" hide_server\n\
                 <Directory {docroot}/server>\n<RequireAll>\nRequire all granted\nRequire not env hide_server\n</RequireAll>\n</Directory>\n\
                 <Directory {docroot}/directory>\nSetEnvIf Request_URI \"\\.gz$\" hide_dir\n\
                 <RequireAll>\nRequire all granted\nRequire not env hide_dir\n</RequireAll>\n</Directory>\n\
                 <Directory {docroot}/htaccess>\nAllowOverride FileInfo Limit\n</Directory>\n\
                 SetEnvIf Request_URI \"\\.html$\" page\n\
                 <Directory {docroot}/open>\nRequire env page\n</Directory>\n"
            .into(),
        dir: "",
        modules: vec!["setenvif", "access_compat"],
    };
    both_ways(case, true, fill, |a| {
        for dir in ["server", "directory", "htaccess", "open"] {
            pages_agree(a, dir);
        }
    });
}

#[test]
fn sibling_uris_are_built_as_apache_builds_them() {
    let fill = |d: &Path| {
        secret_pages(d, "dir");
        secret_pages(d, "info");
        let q = d.join("q");
        fs::create_dir_all(&q).unwrap();
        put(&q, "a?b.html", b"the original page\n");
        put(&q, "a?b.html.gz", &gzip(SECRET));
        put(&q, "a?c.html.gz", &gzip(SECRET));
    };
    // Path info and a `?` in a name: the sibling's URI is the file's
    // (asked only of a sibling without its original).
    let shapes = Case {
        server:
            "<LocationMatch \"^/info/(x|only)\\.html\\.gz$\">\nRequire all denied\n</LocationMatch>\n\
                 <LocationMatch \"^/q/a\\?[bc]\\.html\\.gz$\">\nRequire all denied\n</LocationMatch>\n"
                .into(),
        dir: "AcceptPathInfo On",
        modules: vec![],
    };
    both_ways(shapes, false, fill, |a| {
        agree(a, "/info/x.html/extra", "/info/x.html.gz", &[]);
        agree(a, "/info/only.html/extra", "/info/only.html.gz", &[]);
        agree(a, "/q/a%3Fb.html", "/q/a%3Fb.html.gz", &[]);
        agree(a, "/q/a%3Fc.html", "/q/a%3Fc.html.gz", &[]);
    });
    let slashes = Case {
        server: "MergeSlashes Off\n<LocationMatch \"^/dir//.*\\.gz$\">\nRequire all denied\n</LocationMatch>\n"
            .into(),
        dir: "",
        modules: vec![],
    };
    both_ways(slashes, true, fill, |a| {
        agree(a, "/dir//x.html", "/dir//x.html.gz", &[]);
        agree(a, "/dir//only.html", "/dir//only.html.gz", &[]);
    });
}

#[test]
fn debian_default_configuration_takes_the_short_answer() {
    // Debian's own lines: an access log, <FilesMatch "^\.ht">, Alias
    // /icons/, BrowserMatch, Options FollowSymLinks, AllowOverride None,
    // mime.conf's handlers, types and filters by extension, and
    // deflate.conf's AddOutputFilterByType (a compression filter in
    // every response's chain, which the module accounts for).
    let case = Case {
        server: "<FilesMatch \"^\\.ht\">\nRequire all denied\n</FilesMatch>\n\
                 Alias /icons/ \"/usr/share/apache2/icons/\"\n\
                 BrowserMatch \"Mozilla/2\" nokeepalive\n\
                 AddType application/x-compress .Z\nAddType application/x-gzip .gz .tgz\n\
                 AddHandler type-map var\nAddType text/html .shtml\n\
                 AddOutputFilter INCLUDES .shtml\n\
                 AddOutputFilterByType DEFLATE text/html text/plain text/xml\n\
                 <Directory />\nOptions FollowSymLinks\nAllowOverride None\nRequire all denied\n</Directory>\n"
            .into(),
        dir: "<IfModule mod_autoindex.c>\nOptions Indexes FollowSymLinks\n</IfModule>\n\
              AllowOverride None",
        modules: vec![
            "setenvif",
            "alias",
            "dir",
            "autoindex",
            "negotiation",
            "env",
            "filter",
            "deflate",
        ],
    };
    let (a, asked) = start(&case, Path_::Short, false, |d| {
        publish(d, "p.html", &page(3_000, 5), true, &[".gz"]);
    });
    let r = a.get("/p.html", Some("gzip"));
    assert_eq!(r.coding(), Some("gzip"));
    assert_eq!(r.decoded(), page(3_000, 5));
    assert!(
        a.last_access_ends_with("gzip precompressed"),
        "{}",
        a.access_log()
    );
    assert!(!asked, "{:?}", a.module_log());
}

#[test]
fn a_rule_in_one_virtual_host_makes_that_host_ask() {
    // The only rule off the list is inside a <VirtualHost>: requests to it
    // ask Apache, and the rewrite there refuses the sibling.
    let case = Case {
        server: "<VirtualHost *>\nDocumentRoot {docroot}\nRewriteEngine On\n\
                 RewriteRule \"^/dir/.*\\.gz$\" - [F]\n</VirtualHost>\n"
            .into(),
        dir: "",
        modules: vec!["rewrite"],
    };
    both_ways(
        case,
        true,
        |d| secret_pages(d, "dir"),
        |a| pages_agree(a, "dir"),
    );
}

#[test]
fn a_fifo_at_a_siblings_name_holds_no_worker() {
    // Where symlinks are followed the sibling is opened to be looked up:
    // a FIFO there (no writer) must give way at once, not block.
    let a = Apache::start(
        Options {
            dir: "SetHandler gzip-disk-ng\nOptions FollowSymLinks".into(),
            ..one_child()
        },
        |d| {
            put(d, "x.html", b"the original page\n");
            let fifo = d.join("x.html.gz");
            let made = std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap();
            assert!(made.success());
        },
    );
    // curl's -m 5 is only a hang guard: a request that waited on the FIFO
    // would end in curl's timeout, not in a 200 with the original.
    for _ in 0..20 {
        let r = a.request("/x.html", &["-m", "5", "-H", "Accept-Encoding: gzip"]);
        assert_eq!((r.status, r.coding()), (200, None));
        assert_eq!(r.body, b"the original page\n");
    }
    a.assert_no_crash();
}

// ---------------------------------------------------------------------
// Every representation, every route: a published sibling, a decoded
// sibling, an on-demand copy, the site dictionary. Each goes out only
// where a direct GET for the file's own URI, from this client with these
// headers, is answered by Apache's default handler with that very file.
// ---------------------------------------------------------------------

/// Starts Apache for `case`, with `ASKING` added when `path` is `Asked`
/// and the case does not already force it; with whether the module asks
/// Apache about siblings (its start-up line), which a test checks after
/// what was sent, so a leak is what it reports.
fn start(case: &Case<'_>, path: Path_, forced: bool, fill: impl FnOnce(&Path)) -> (Apache, bool) {
    let mut modules = case.modules.clone();
    let mut server = case.server.clone();
    if path == Path_::Asked && !forced {
        server = format!("{ASKING}{server}");
        if !modules.contains(&"rewrite") {
            modules.push("rewrite");
        }
    }
    let a = Apache::start(
        Options {
            dir: format!("SetHandler gzip-disk-ng\n{}", case.dir),
            server,
            modules,
            ..Default::default()
        },
        fill,
    );
    let asked = a.module_log().iter().any(|l| l.contains("asked of Apache"));
    (a, asked)
}

/// Runs `check` on Apache started for `case` both ways (or, where the
/// case itself makes the module ask, that way only), then checks the way
/// the module took.
fn both_ways(case: Case<'_>, forced: bool, fill: impl Fn(&Path), check: impl Fn(&Apache)) {
    let ways: &[Path_] = if forced {
        &[Path_::Asked]
    } else {
        &[Path_::Short, Path_::Asked]
    };
    for &way in ways {
        let (a, asked) = start(&case, way, forced, &fill);
        let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&a)));
        if let Err(e) = checked {
            let said = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{way:?} way (siblings asked of Apache: {asked}): {said}");
        }
        a.assert_no_crash();
        assert_eq!(asked, way == Path_::Asked, "{way:?}: {:?}", a.module_log());
    }
}

/// The body as a client reads it: decoded by its Content-Encoding, or as
/// sent where it does not decode.
fn readable(r: &Response) -> Vec<u8> {
    decode_body(r.coding(), &r.body).unwrap_or_else(|_| r.body.clone())
}

/// The first of `secrets` that `r` carries, raw or decoded.
fn leaked<'s>(r: &Response, secrets: &[&'s [u8]]) -> Option<&'s [u8]> {
    let body = readable(r);
    secrets
        .iter()
        .copied()
        .find(|s| contains(&r.body, s) || contains(&body, s))
}

fn curl_args<'a>(ae: &'a str, extra: &[&'a str]) -> Vec<String> {
    let mut args = vec![
        "--path-as-is".to_string(),
        "-H".into(),
        format!("Accept-Encoding: {ae}"),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// The direct GET of `page`'s sibling (`page` + `suffix`), accepting no
/// coding so that nothing but Apache answers for that name, is not the
/// file itself; then `page`, asked with `coding` accepted and with
/// identity, never carries the sibling's bytes nor `SECRET`, raw or
/// decoded.
fn never_sent(a: &Apache, page: &str, suffix: &str, coding: &str, extra: &[&str]) {
    let sibling = format!("{page}{suffix}");
    let bytes = fs::read(a.docroot.join(&sibling[1..])).expect("the sibling");
    let direct = curl(&a.url(&sibling), &curl_args("identity", extra));
    assert!(
        !(direct.status == 200 && direct.body == bytes),
        "{sibling}: a direct GET is answered with the file itself: this case proves nothing"
    );
    for ae in [coding, "identity"] {
        let r = curl(&a.url(page), &curl_args(ae, extra));
        assert!(
            leaked(&r, &[SECRET, &bytes]).is_none(),
            "{page} (Accept-Encoding: {ae}) sent {sibling}, which a direct GET answers with \
             status {} and not that file: status {}, Content-Encoding {:?}",
            direct.status,
            r.status,
            r.coding()
        );
    }
}

/// The direct GET of `page`'s sibling is the file itself, and `page` with
/// `coding` accepted is sent that sibling as it is: where Apache would
/// send it, so does the module.
fn sent_as_published(a: &Apache, page: &str, suffix: &str, coding: &str) {
    let sibling = format!("{page}{suffix}");
    let bytes = fs::read(a.docroot.join(&sibling[1..])).expect("the sibling");
    let direct = curl(&a.url(&sibling), &curl_args("identity", &[]));
    assert_eq!(direct.status, 200, "{sibling}");
    assert!(direct.body == bytes, "{sibling}: not the file");
    let r = curl(&a.url(page), &curl_args(coding, &[]));
    assert_eq!((r.status, r.coding()), (200, Some(coding)), "{page}");
    assert!(r.body == bytes, "{page}: not the published sibling");
}

/// `page` asked with identity is its original, `the original page`.
fn original_served(a: &Apache, page: &str, extra: &[&str]) {
    let r = curl(&a.url(page), &curl_args("identity", extra));
    assert_eq!(r.status, 200, "{page}");
    assert_eq!(r.body, b"the original page\n", "{page}");
}

/// `<DirectoryMatch>` and `<Directory ~>` match the sibling's own file
/// name: where they deny it, or take FollowSymLinks from a symlinked
/// sibling, neither the sibling nor its decoding is sent.
#[test]
fn regex_directory_sections_match_the_sibling_itself() {
    let fill = |d: &Path| {
        for dir in ["d", "t", "open"] {
            secret_pages(d, dir);
        }
    };
    // <DirectoryMatch> and <Directory ~> are matched against the whole
    // file name, so they can refuse x.html.gz and not x.html.
    let denied = Case {
        server:
            "<DirectoryMatch \"^{docroot}/d/.*\\.gz$\">\nRequire all denied\n</DirectoryMatch>\n\
                 <Directory ~ \"^{docroot}/t/.*\\.gz$\">\nRequire all denied\n</Directory>\n"
                .into(),
        dir: "",
        modules: vec![],
    };
    both_ways(denied, false, fill, |a| {
        for dir in ["d", "t"] {
            for page in ["x.html", "only.html"] {
                never_sent(a, &format!("/{dir}/{page}"), ".gz", "gzip", &[]);
            }
            original_served(a, &format!("/{dir}/x.html"), &[]);
        }
        sent_as_published(a, "/open/same.html", ".gz", "gzip");
    });
    // Symlinks: the directory follows them, a regex section on the
    // sibling's name does not.
    let outside = world_readable_tempdir();
    let secret = outside.path().join("secret.gz");
    fs::write(&secret, gzip(SECRET)).unwrap();
    let links = |d: &Path| {
        for dir in ["l", "l2"] {
            let dir = d.join(dir);
            fs::create_dir_all(&dir).unwrap();
            put(&dir, "x.html", b"the original page\n");
            symlink(&secret, dir.join("x.html.gz")).unwrap();
            symlink(&secret, dir.join("only.html.gz")).unwrap();
        }
    };
    let options = Case {
        server: "<Directory {docroot}/l>\nOptions FollowSymLinks\n</Directory>\n\
                 <DirectoryMatch \"^{docroot}/l/.*\\.gz$\">\nOptions None\n</DirectoryMatch>\n\
                 <Directory {docroot}/l2>\nOptions FollowSymLinks\n</Directory>\n\
                 <Directory ~ \"^{docroot}/l2/.*\\.gz$\">\nOptions None\n</Directory>\n"
            .into(),
        dir: "",
        modules: vec![],
    };
    both_ways(options, true, links, |a| {
        for dir in ["l", "l2"] {
            for page in ["x.html", "only.html"] {
                never_sent(a, &format!("/{dir}/{page}"), ".gz", "gzip", &[]);
            }
            original_served(a, &format!("/{dir}/x.html"), &[]);
        }
    });
}

/// What a direct GET for the sibling would run decides: `<If>` on its
/// request line, a handler its `<Files>`, `<FilesMatch>`, extension or
/// .htaccess gives it (server-status, cgi-script, type-map, a handler's
/// type forced): then its bytes are never sent for the page.
#[test]
fn the_siblings_own_request_line_and_handler_decide() {
    let fill = |d: &Path| {
        for dir in ["if", "cgi", "ht", "open"] {
            secret_pages(d, dir);
        }
        let st = d.join("st");
        fs::create_dir_all(&st).unwrap();
        put(&st, "x.html", b"the original page\n");
        put(&st, "x.html.zst", &zstd(SECRET));
        put(&st, "only.html.zst", &zstd(SECRET));
        let tm = d.join("tm");
        fs::create_dir_all(&tm).unwrap();
        put(&tm, "x.html", b"the original page\n");
        let mut map = b"URI: x.html\nContent-type: text/html\n\n".to_vec();
        map.extend_from_slice(SECRET);
        map.push(b'\n');
        put(&tm, "x.html.br", &map);
        fs::write(
            d.join("ht/.htaccess"),
            "<Files \"x.html.gz\">\nSetHandler server-status\n</Files>\n\
             <Files \"only.html.gz\">\nSetHandler None\nForceType application/x-type-map\n</Files>\n",
        )
        .unwrap();
    };
    // Judged by sections, these name no sibling's extension: <If> reads
    // the request line, <Files> and <FilesMatch> give the sibling a
    // handler of its own.
    let sections = Case {
        server: "<Directory {docroot}/if>\n<If \"%{THE_REQUEST} =~ m#\\.gz #\">\nRequire all denied\n</If>\n</Directory>\n\
                 <Directory {docroot}/st>\n<Files x.html.zst>\nSetHandler server-status\n</Files>\n\
                 <Files only.html.zst>\nSetHandler server-status\n</Files>\n</Directory>\n\
                 <Directory {docroot}/cgi>\n<FilesMatch \"\\.gz$\">\nSetHandler cgi-script\n</FilesMatch>\n</Directory>\n"
            .into(),
        dir: "",
        modules: vec!["status", "cgid"],
    };
    both_ways(sections, false, fill, |a| {
        for dir in ["if", "cgi"] {
            for page in ["x.html", "only.html"] {
                never_sent(a, &format!("/{dir}/{page}"), ".gz", "gzip", &[]);
            }
            original_served(a, &format!("/{dir}/x.html"), &[]);
        }
        for page in ["/st/x.html", "/st/only.html"] {
            never_sent(a, page, ".zst", "zstd", &[]);
        }
        original_served(a, "/st/x.html", &[]);
        sent_as_published(a, "/open/same.html", ".gz", "gzip");
    });
    // A handler chosen by the sibling's extension (the module handles the
    // pages; the map itself gets mod_mime's handler), or set by .htaccess.
    let handlers = Case {
        server: "<Directory {docroot}/tm>\nAddHandler type-map .br\n\
                 <FilesMatch \"\\.br$\">\nSetHandler None\n</FilesMatch>\n</Directory>\n\
                 <Directory {docroot}/ht>\nAllowOverride FileInfo\n</Directory>\n"
            .into(),
        dir: "",
        modules: vec!["negotiation", "status"],
    };
    both_ways(handlers, true, fill, |a| {
        never_sent(a, "/tm/x.html", ".br", "br", &[]);
        original_served(a, "/tm/x.html", &[]);
        for page in ["/ht/x.html", "/ht/only.html"] {
            never_sent(a, page, ".gz", "gzip", &[]);
        }
        original_served(a, "/ht/x.html", &[]);
        sent_as_published(a, "/open/same.html", ".gz", "gzip");
    });
}

/// Text a page shows everyone, around what a content filter takes out.
fn public_text(seed: u64) -> Vec<u8> {
    let mut v = b"<html><body>\n<p>PUBLIC PAGE TEXT</p>\n".to_vec();
    v.extend_from_slice(&page(6_000, seed));
    v
}

/// `mid` between two halves of public text.
fn around(mid: &[u8], seed: u64) -> Vec<u8> {
    let mut v = public_text(seed);
    v.extend_from_slice(mid);
    v.extend_from_slice(&page(6_000, seed + 1));
    v.extend_from_slice(b"\n</body></html>\n");
    v
}

const SSI_SECRET: &[u8] = b"SECRET-SSI";
const SUB_SECRET: &[u8] = b"SECRET-SUB";

/// A page Apache sends through a content filter (mod_include,
/// mod_substitute) is never sent as an on-demand copy or a published
/// sibling of the file as it is, in any coding: what the filter takes
/// out stays out.
#[test]
fn content_filters_keep_what_they_remove_out_of_every_copy() {
    let ssi = around(
        b"<!--#if expr=\"%{REMOTE_ADDR} == '10.9.9.9'\" -->SECRET-SSI<!--#endif-->",
        31,
    );
    let sub = around(b"<p>SECRET-SUB</p>", 33);
    let plain = around(b"<p>nothing to hide</p>", 35);
    let fill = |d: &Path| {
        for dir in ["inc", "sub", "named", "ext", "plain"] {
            fs::create_dir_all(d.join(dir)).unwrap();
        }
        // Compressed on demand only, and published with a sibling made
        // from the file as it is (before the filter).
        put(&d.join("inc"), "p.html", &ssi);
        publish(d, "inc/g.html", &ssi, true, &[".gz", ".br", ".zst"]);
        put(&d.join("sub"), "p.html", &sub);
        publish(d, "sub/g.html", &sub, true, &[".gz", ".br", ".zst"]);
        put(&d.join("named"), "p.html", &sub);
        publish(d, "named/g.html", &sub, true, &[".gz", ".br", ".zst"]);
        put(&d.join("ext"), "p.html", &sub);
        publish(d, "ext/g.html", &sub, true, &[".gz", ".br", ".zst"]);
        put(&d.join("plain"), "c.html", &plain);
        make_cache_root(&d.join("../cache"));
    };
    let case = Case {
        server: "GzipDiskNgCacheRoot {docroot}/../cache\n\
                 <Directory {docroot}/inc>\nOptions +Includes\nAddOutputFilter INCLUDES .html\n</Directory>\n\
                 <Directory {docroot}/sub>\nAddOutputFilterByType SUBSTITUTE text/html\n\
                 Substitute \"s/SECRET-SUB/gone/\"\n</Directory>\n\
                 <Directory {docroot}/named>\nFilterDeclare cache_save\n\
                 FilterProvider cache_save SUBSTITUTE \"%{CONTENT_TYPE} =~ m|^text/html|\"\n\
                 FilterChain cache_save\nSubstitute \"s/SECRET-SUB/gone/\"\n</Directory>\n\
                 ExtFilterDefine cache_out mode=output intype=text/html \
                 cmd=\"/bin/sed s/SECRET-SUB/gone/\"\n\
                 <Directory {docroot}/ext>\nSetOutputFilter cache_out\n</Directory>\n"
            .into(),
        dir: "GzipDiskNgOnDemand On",
        modules: vec!["include", "substitute", "filter", "ext_filter"],
    };
    // A filter is what it runs, not the name an admin declared it by:
    // the chain named as mod_cache's filter runs mod_substitute, and
    // mod_ext_filter's filter takes another of mod_cache's names.
    let pages = [
        "/inc/p.html",
        "/inc/g.html",
        "/sub/p.html",
        "/sub/g.html",
        "/named/p.html",
        "/named/g.html",
        "/ext/p.html",
        "/ext/g.html",
    ];
    let secrets: &[&[u8]] = &[SSI_SECRET, SUB_SECRET];
    both_ways(case, true, fill, |a| {
        // Apache's own answer: the page through its filter.
        let own: Vec<Vec<u8>> = pages
            .iter()
            .map(|p| {
                let r = a.get(p, Some("identity"));
                assert_eq!((r.status, r.coding()), (200, None), "{p}");
                assert!(leaked(&r, secrets).is_none(), "{p}: the filter did not run");
                assert!(contains(&r.body, b"PUBLIC PAGE TEXT"), "{p}");
                r.body
            })
            .collect();
        let every_route = |a: &Apache| {
            for (p, own) in pages.iter().zip(&own) {
                for ae in ["zstd, br, gzip", "gzip", "br", "zstd", "identity"] {
                    let r = a.get(p, Some(ae));
                    assert_eq!(r.status, 200, "{p} ({ae})");
                    if let Some(s) = leaked(&r, secrets) {
                        panic!(
                            "{p} (Accept-Encoding: {ae}) sent {} in {:?}, which Apache's own \
                             answer for it filters out",
                            String::from_utf8_lossy(s),
                            r.coding()
                        );
                    }
                    assert!(readable(&r) == *own, "{p} ({ae}): not Apache's answer");
                }
            }
        };
        every_route(a);
        // Until the unfiltered page, asked after them, is served from
        // the cache in every coding: copies of the filtered pages
        // would be made by then.
        for coding in ["zstd", "br", "gzip"] {
            wait_for(&format!("the {coding} copy of /plain/c.html"), || {
                every_route(a);
                let r = a.get("/plain/c.html", Some(coding));
                assert!(r.decoded() == plain, "/plain/c.html ({coding})");
                r.coding() == Some(coding)
            });
        }
        let until = Instant::now() + Duration::from_millis(1500);
        while Instant::now() < until {
            every_route(a);
            std::thread::sleep(Duration::from_millis(150));
        }
    });
}

fn basic_auth(users: &Path) -> String {
    format!(
        "AuthType Basic\nAuthName gdn\nAuthUserFile {}\nRequire valid-user",
        users.display()
    )
}

const AUTH_MODULES: [&str; 4] = ["auth_basic", "authn_core", "authn_file", "authz_user"];

/// Every file under `dir`, as paths relative to it.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = vec![];
    for e in walkdir::WalkDir::new(dir).into_iter().flatten() {
        if e.file_type().is_file() {
            let rel = e.path().strip_prefix(dir).unwrap();
            out.push(rel.to_string_lossy().into_owned());
        }
    }
    out.sort();
    out
}

/// A cache root an Alias, AliasMatch or RewriteRule maps URLs into: a copy
/// of a page behind Basic auth made for its user is never sent to an
/// anonymous client through the mapping (any file there is 403 or 404),
/// and `apache2 -t` names the cache root an alias reaches.
#[test]
fn the_cache_root_is_never_served_whatever_maps_a_url_there() {
    const PRIVATE: &[u8] = b"PRIVATE-AUTH-PAGE";
    let mut content = public_text(41);
    for _ in 0..40 {
        content.extend_from_slice(b"<p>PRIVATE-AUTH-PAGE for alice only</p>\n");
    }
    let (_users_dir, users) = users_file();
    // The cache root inside a directory URLs map to.
    let mapped = world_readable_tempdir();
    let pub_dir = mapped.path().display().to_string();
    let root = mapped.path().join("cache");
    make_cache_root(&root);
    let alias_module = format!("LoadModule alias_module {MODULES}/mod_alias.so");
    let rewrite_module = format!("LoadModule rewrite_module {MODULES}/mod_rewrite.so");
    let variants: [(&str, String, &str); 3] = [
        ("Alias", format!("Alias /c/ \"{pub_dir}/\""), "/c/"),
        (
            "AliasMatch",
            format!("AliasMatch \"^/m/(.*)$\" \"{pub_dir}/$1\""),
            "/m/",
        ),
        (
            "RewriteRule",
            format!("RewriteEngine On\nRewriteRule \"^/r/(.*)$\" \"{pub_dir}/$1\""),
            "/r/",
        ),
    ];
    for (name, lines, prefix) in &variants {
        let root_line = format!("GzipDiskNgCacheRoot {}", root.display());
        let (ok, said) = configtest(&format!(
            "{alias_module}\n{rewrite_module}\n{root_line}\n{lines}\n"
        ));
        if !ok {
            // Refused outright: nothing is served at all. (A RewriteRule
            // to a path cannot be judged when the configuration is read:
            // the guard at request time answers for it.)
            assert!(said.contains("GzipDiskNgCacheRoot"), "{name}: {said}");
            continue;
        }
        let a = Apache::start(
            Options {
                dir: "SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On".into(),
                server: format!(
                    "{root_line}\n{lines}\n<Directory {pub_dir}>\nRequire all granted\n</Directory>\n\
                     <Directory {{docroot}}/auth>\n{}\n</Directory>\n",
                    basic_auth(&users)
                ),
                modules: [&AUTH_MODULES[..], &["alias", "rewrite"]].concat(),
                ..Default::default()
            },
            |d| {
                fs::create_dir(d.join("auth")).unwrap();
                put(&d.join("auth"), "p.html", &content);
            },
        );
        let anonymous = a.get("/auth/p.html", Some("gzip"));
        assert_eq!(anonymous.status, 401, "{name}: the page is not private");
        let login = [
            "-u",
            "alice:secret",
            "-H",
            "Accept-Encoding: zstd, br, gzip",
        ];
        for coding in ["zstd", "br", "gzip"] {
            let ae = format!("Accept-Encoding: {coding}");
            wait_for(&format!("{name}: alice's {coding} copy"), || {
                a.request("/auth/p.html", &login);
                let r = a.request("/auth/p.html", &["-u", "alice:secret", "-H", &ae]);
                assert_eq!(r.status, 200, "{name}");
                assert!(r.decoded() == content, "{name}");
                r.coding() == Some(coding)
            });
        }
        let files = files_under(&root);
        assert!(
            files.iter().any(|f| f.ends_with(".gz")),
            "{name}: no copies in {files:?}"
        );
        for f in &files {
            let bytes = fs::read(root.join(f)).unwrap_or_default();
            let uri = format!("{prefix}cache/{f}");
            for ae in ["identity", "zstd, br, gzip"] {
                let r = a.get(&uri, Some(ae));
                let sent_copy = !bytes.is_empty() && contains(&r.body, &bytes);
                assert!(
                    !sent_copy && leaked(&r, &[PRIVATE]).is_none(),
                    "{name}: an anonymous GET {uri} was sent the cache's {f} (status {})",
                    r.status
                );
                assert!(
                    matches!(r.status, 403 | 404),
                    "{name}: an anonymous GET {uri}: status {}",
                    r.status
                );
            }
        }
        a.assert_no_crash();
        if *name != "RewriteRule" {
            // A root an Alias reaches fails apache2 -t or warns of it.
            assert!(said.contains("GzipDiskNgCacheRoot"), "{name}: {said}");
        }
    }
}

/// Swaps the names `a` and `b` in one step (renameat2 RENAME_EXCHANGE).
fn exchange(a: &CString, b: &CString) -> bool {
    // SAFETY: two NUL-terminated paths, resolved from the working
    // directory (they are absolute).
    unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        ) == 0
    }
}

fn c_path(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

/// The body of a response read off the socket, de-chunked as far as it
/// goes: a response cut short still shows what it carried.
fn body_sent(r: &RawResponse) -> Vec<u8> {
    if r.header("Transfer-Encoding") != Some("chunked") {
        return r.after_head.clone();
    }
    let (mut out, mut rest) = (vec![], &r.after_head[..]);
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&rest[..eol])
            .ok()
            .and_then(|l| usize::from_str_radix(l.split(';').next()?.trim(), 16).ok());
        let Some(size) = size.filter(|&n| n > 0) else {
            break;
        };
        rest = &rest[eol + 2..];
        out.extend_from_slice(&rest[..size.min(rest.len())]);
        rest = &rest[(size + 2).min(rest.len())..];
    }
    out
}

/// What of `secrets` the response to a GET of `path` (a connection of
/// its own) carried, raw or decoded; `None` when nothing.
fn raw_leak(a: &Apache, path: &str, ae: &str, secrets: &[&[u8]]) -> Option<String> {
    let r = raw_request(a, "GET", path, &[("Accept-Encoding", ae.as_bytes())]);
    let decoded = decode_body(r.header("Content-Encoding"), &body_sent(&r)).unwrap_or_default();
    secrets
        .iter()
        .find(|s| contains(&r.after_head, s) || contains(&decoded, s))
        .map(|s| {
            format!(
                "status {} carried {:?}",
                r.status,
                String::from_utf8_lossy(s)
            )
        })
}

/// Under `Options None`, siblings exchanged with symlinks to a secret
/// outside the docroot (renameat2 RENAME_EXCHANGE, as fast as it goes)
/// while clients ask for them: the secret never goes out, sent as it is
/// or decoded.
#[test]
fn a_sibling_exchanged_for_a_symlink_is_never_followed() {
    let public = page(4_000, 51);
    let outside = world_readable_tempdir();
    let secret = outside.path().join("secret.gz");
    fs::write(&secret, gzip(SECRET)).unwrap();
    let fill = |d: &Path| {
        put(d, "x.html", &public);
        put(d, "x.html.gz", &gzip(&public));
        put(d, "only.html.gz", &gzip(&public));
        symlink(&secret, d.join(".x-link")).unwrap();
        symlink(&secret, d.join(".only-link")).unwrap();
    };
    let case = Case {
        server: String::new(),
        dir: "Options None",
        modules: vec![],
    };
    let secret_gz = gzip(SECRET);
    both_ways(case, false, fill, |a| {
        let d = a.docroot.clone();
        let pairs = [
            (c_path(&d.join("x.html.gz")), c_path(&d.join(".x-link"))),
            (
                c_path(&d.join("only.html.gz")),
                c_path(&d.join(".only-link")),
            ),
        ];
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for (x, l) in &pairs {
                        assert!(
                            exchange(x, l),
                            "renameat2: {}",
                            std::io::Error::last_os_error()
                        );
                    }
                    n += 1;
                }
                n
            })
        };
        // 500 a client (four clients), however long they take.
        let secrets: &[&[u8]] = &[SECRET, &secret_gz];
        let leaks = std::thread::scope(|s| {
            let clients: Vec<_> = [("/only.html", "identity"), ("/x.html", "gzip")]
                .iter()
                .flat_map(|&req| [req, req])
                .map(|(path, ae)| {
                    s.spawn(move || {
                        let (mut sent, mut leaks) = (0, vec![]);
                        while sent < 500 {
                            if let Some(l) = raw_leak(a, path, ae, secrets) {
                                leaks.push(format!("{path} ({ae}): {l}"));
                            }
                            sent += 1;
                        }
                        (sent, leaks)
                    })
                })
                .collect();
            clients.into_iter().map(|c| c.join().unwrap()).fold(
                (0, vec![]),
                |(n, mut all), (sent, leaks)| {
                    all.extend(leaks);
                    (n + sent, all)
                },
            )
        });
        stop.store(true, Ordering::Relaxed);
        let swaps = swapper.join().unwrap();
        let (sent, leaks) = leaks;
        assert!(
            leaks.is_empty(),
            "{} of {sent} responses carried the symlink's target ({swaps} swaps): {:?}",
            leaks.len(),
            &leaks[..leaks.len().min(4)]
        );
        assert!(swaps > 100, "{sent} requests, {swaps} swaps");
        // Left as published: both served again.
        if fs::symlink_metadata(d.join("x.html.gz"))
            .unwrap()
            .file_type()
            .is_symlink()
        {
            let [(x, l), (o, ol)] = [
                (c_path(&d.join("x.html.gz")), c_path(&d.join(".x-link"))),
                (
                    c_path(&d.join("only.html.gz")),
                    c_path(&d.join(".only-link")),
                ),
            ];
            assert!(exchange(&x, &l) && exchange(&o, &ol));
        }
        for (path, ae) in [("/x.html", "gzip"), ("/only.html", "identity")] {
            let r = a.get(path, Some(ae));
            assert_eq!(r.status, 200, "{path}");
            assert!(r.decoded() == public, "{path}: not the published page");
        }
    });
}

/// Where the site dictionary is served in the dictionary test.
const SITE_DICTIONARY: &str = "/gdn-site.dict";

/// The template every page of a site shares: what a trained dictionary
/// holds.
fn site_template(site: &str) -> (String, String) {
    let mut head = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <title>{site} | Example Site</title>\n<style>\n"
    );
    for (i, rule) in ["header", "nav", "main", "footer", "article"]
        .iter()
        .enumerate()
    {
        head += &format!(
            "{rule} {{ margin: 0 auto; padding: {i}em; max-width: 60em; font-family: serif; }}\n"
        );
    }
    head += "</style></head>\n<body><header><a class=\"brand\" href=\"/\">Example Site</a></header>\n<nav><ul>\n";
    for n in 0..12 {
        head += &format!("<li><a href=\"/s{n}.html\">Chapter {n} of the {site} guide</a></li>\n");
    }
    head += "</ul></nav>\n<main>\n";
    let foot = "</main>\n<footer><p>Copyright Example Site. All rights reserved.</p></footer>\n</body></html>\n";
    (head, foot.to_string())
}

/// A page of `site`: the template around `body`, and `marker` (text only
/// this page holds) said over and over, so a trainer keeps it if it
/// sees the page.
fn site_page(site: &str, marker: &str, seed: u64, times: usize) -> Vec<u8> {
    let (head, foot) = site_template(site);
    let mut v = head.into_bytes();
    v.extend_from_slice(&page(2_000, seed));
    for i in 0..times {
        v.extend_from_slice(format!("<p>{marker} {marker} item {i}</p>\n").as_bytes());
    }
    v.extend_from_slice(foot.as_bytes());
    v
}

/// The site dictionary, which anyone may fetch, learns only pages an
/// anonymous client may fetch: not those behind `Require ip`, `Require
/// expr` on a header, `Require env` set from a header, or a login (a
/// DirectoryIndex page), though this client read them all; nor the pages
/// of another `<VirtualHost>` of the same name.
#[test]
fn the_site_dictionary_learns_only_what_anyone_may_fetch() {
    let (_users_dir, users) = users_file();
    let other = world_readable_tempdir();
    // Pages only this client sees: by its address, a header, the
    // environment a header sets, a login (a DirectoryIndex page whose
    // <Files> asks for it).
    let hidden: [(&str, &str, &[&str]); 4] = [
        ("/ip/p.html", "HIDDEN-SECRET-BY-ADDRESS-7f3a", &[]),
        (
            "/hdr/p.html",
            "HIDDEN-SECRET-BY-HEADER-2b9c",
            &["-H", "X-Secret: yes"],
        ),
        (
            "/env/p.html",
            "HIDDEN-SECRET-BY-ENV-5d1e",
            &["-H", "X-Token: ok"],
        ),
        (
            "/priv/",
            "HIDDEN-SECRET-BY-LOGIN-9c4f",
            &["-u", "alice:secret"],
        ),
    ];
    let public: Vec<(String, String)> = (0..20)
        .map(|n| (format!("/pub/s{n}.html"), format!("PUBLIC-MARK-{n:02}-a")))
        .collect();
    // The other host: the same name, another <VirtualHost>.
    let elsewhere: Vec<(String, String)> = (0..6)
        .map(|n| (format!("/o{n}.html"), format!("OTHER-HOST-ONLY-{n:02}")))
        .collect();
    for (path, marker) in &elsewhere {
        put(
            other.path(),
            &path[1..],
            &site_page("other", marker, 70, 40),
        );
    }
    let server = format!(
        "GzipDiskNgCacheRoot {{docroot}}/../cache\n\
         SetEnvIf X-Token \"^ok$\" t\n\
         <VirtualHost *>\nServerName shared.test\nServerAlias a.test\nDocumentRoot {{docroot}}\n\
         GzipDiskNgSiteDictionary {SITE_DICTIONARY}\n</VirtualHost>\n\
         <VirtualHost *>\nServerName shared.test\nServerAlias b.test\nDocumentRoot {other}\n\
         GzipDiskNgSiteDictionary {SITE_DICTIONARY}\n</VirtualHost>\n\
         <Directory {other}>\nRequire all granted\nSetHandler gzip-disk-ng\nGzipDiskNgOnDemand On\n</Directory>\n\
         <Directory {{docroot}}/ip>\nRequire ip 127.0.0.1\n</Directory>\n\
         <Directory {{docroot}}/hdr>\nRequire expr \"%{{HTTP:X-Secret}} == 'yes'\"\n</Directory>\n\
         <Directory {{docroot}}/env>\nRequire env t\n</Directory>\n\
         <Directory {{docroot}}/priv>\nDirectoryIndex index.html\nAuthType Basic\nAuthName gdn\n\
         AuthUserFile {users}\n<Files index.html>\nRequire valid-user\n</Files>\n</Directory>\n",
        other = other.path().display(),
        users = users.display(),
    );
    let mut modules = AUTH_MODULES.to_vec();
    modules.extend(["authz_host", "setenvif", "dir"]);
    let a = Apache::start(
        Options {
            dir: "SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On".into(),
            server,
            modules,
            ..Default::default()
        },
        |d| {
            for (i, (path, secret, _)) in hidden.iter().enumerate() {
                let file = format!(
                    "{path}{}",
                    if path.ends_with('/') {
                        "index.html"
                    } else {
                        ""
                    }
                );
                fs::create_dir_all(d.join(&path[1..path.rfind('/').unwrap()])).unwrap();
                put(
                    d,
                    &file[1..],
                    &site_page("main", secret, 60 + i as u64, 200),
                );
            }
            fs::create_dir(d.join("pub")).unwrap();
            for (n, (path, marker)) in public.iter().enumerate() {
                put(d, &path[1..], &site_page("main", marker, n as u64, 40));
            }
            make_cache_root(&d.join("../cache"));
        },
    );
    let all = "Accept-Encoding: zstd, br, gzip";
    let ask = |path: &str, extra: &[&str], ae: &str| {
        let mut args = vec!["-H", ae];
        args.extend_from_slice(extra);
        a.request(path, &args)
    };
    // Requests `pages` (with their extra arguments) until each is served
    // from the cache: the compressor has then listed it, if it lists it.
    let crawl = |pages: &[(&str, &[&str])]| {
        for (path, extra) in pages {
            assert_eq!(ask(path, extra, all).status, 200, "{path} {extra:?}");
        }
        for (path, extra) in pages {
            wait_for(&format!("the copy of {path} {extra:?}"), || {
                ask(path, extra, all).coding().is_some()
            });
        }
    };
    let on_b: &[&str] = &["-H", "Host: b.test"];
    let public_pages: Vec<(&str, &[&str])> =
        public.iter().map(|(p, _)| (p.as_str(), &[][..])).collect();
    // Half the public pages first; zstd's trainer tests on the pages
    // listed first and trains on the rest, so any learned later is
    // trained on.
    crawl(&public_pages[..10]);
    // This client may read the hidden pages; a client no rule knows
    // may not (the address cannot be tried from here).
    for (path, secret, extra) in &hidden {
        let r = ask(path, extra, all);
        assert_eq!(r.status, 200, "{path}");
        assert!(contains(&r.decoded(), secret.as_bytes()), "{path}");
        if !extra.is_empty() {
            assert_ne!(a.get(path, None).status, 200, "{path} is not hidden");
        }
    }
    // The other host's pages, until each is served from the cache (the
    // hidden ones, asked before, are listed by then if at all); then the
    // rest of the public ones.
    for (path, marker) in &elsewhere {
        let r = ask(path, on_b, all);
        assert!(
            contains(&r.decoded(), marker.as_bytes()),
            "{path} on b.test"
        );
    }
    let other_pages: Vec<(&str, &[&str])> =
        elsewhere.iter().map(|(p, _)| (p.as_str(), on_b)).collect();
    crawl(&other_pages);
    for (path, secret, extra) in &hidden {
        let r = ask(path, extra, all);
        assert!(contains(&r.decoded(), secret.as_bytes()), "{path}");
    }
    crawl(&public_pages[10..]);
    let mut dictionary = None;
    wait_for("the trained site dictionary", || {
        let r = a.get(SITE_DICTIONARY, None);
        dictionary = (r.status == 200).then_some(r.body);
        dictionary.is_some()
    });
    let dictionary = dictionary.unwrap();
    // The hidden pages' secrets and the text they share (no public page
    // holds it), and the other host's.
    let secrets: Vec<&[u8]> = hidden
        .iter()
        .map(|(_, s, _)| s.as_bytes())
        .chain([&b"HIDDEN-SECRET-"[..], b"OTHER-HOST-ONLY-"])
        .chain(elsewhere.iter().map(|(_, m)| m.as_bytes()))
        .collect();
    // Fetched as anyone fetches it, in every coding.
    for ae in [None, Some("br"), Some("zstd"), Some("gzip")] {
        let r = a.get(SITE_DICTIONARY, ae);
        assert_eq!(r.status, 200, "{ae:?}");
        if let Some(s) = leaked(&r, &secrets) {
            panic!(
                "the site dictionary ({ae:?}) holds {:?}, which no anonymous client of \
                 this host may fetch",
                String::from_utf8_lossy(s)
            );
        }
        assert!(readable(&r) == dictionary, "{ae:?}: another dictionary");
    }
    // It learned the public pages: their markers, or their template.
    let (head, _) = site_template("main");
    assert!(
        public
            .iter()
            .any(|(_, m)| contains(&dictionary, m.as_bytes()))
            || head
                .as_bytes()
                .windows(32)
                .any(|w| contains(&dictionary, w)),
        "the dictionary holds nothing of the public pages"
    );
    // The other host's dictionary, if it has one, holds nothing of this
    // one's.
    let r = ask(SITE_DICTIONARY, on_b, "Accept-Encoding: identity");
    if r.status == 200 {
        let mine: Vec<&[u8]> = hidden
            .iter()
            .map(|(_, s, _)| s.as_bytes())
            .chain(public.iter().map(|(_, m)| m.as_bytes()))
            .collect();
        if let Some(s) = leaked(&r, &mine) {
            panic!(
                "b.test's dictionary holds {:?} of the other host of its name",
                String::from_utf8_lossy(s)
            );
        }
    }
    a.assert_no_crash();
}

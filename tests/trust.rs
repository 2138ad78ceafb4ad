//! A sibling is served only where a GET for its own URI, from the same
//! client with the same headers, would be served as that file: for each
//! way a configuration can refuse a name (symlink options, rules applied
//! at fixup or translate time, environment-based denies, URI shapes), the
//! direct request's status and the module's answer agree, against a real
//! Apache, both where the module judges names by sections alone and where
//! it asks Apache (a subrequest per sibling).

mod common;

use common::*;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

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

/// Starts Apache for `case`, with `ASKING` added when `path` is `Asked`
/// and the case does not already force it, and checks which path the
/// module took from its start-up line.
fn start(case: &Case<'_>, path: Path_, forced: bool, fill: impl FnOnce(&Path)) -> Apache {
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
    assert_eq!(asked, path == Path_::Asked, "{:?}", a.module_log());
    a
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The direct request for `sibling_uri` and the module's answers for
/// `uri` (gzip accepted, and identity) agree: a refused sibling's bytes
/// never go out, raw or decoded; an allowed one is served.
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
    if direct.status == 200 {
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

/// Runs `check` on Apache started for `case` both ways (or, where the
/// case itself makes the module ask, that way only).
fn both_ways(case: Case<'_>, forced: bool, fill: impl Fn(&Path), check: impl Fn(&Apache)) {
    let ways: &[Path_] = if forced {
        &[Path_::Asked]
    } else {
        &[Path_::Short, Path_::Asked]
    };
    for &way in ways {
        let a = start(&case, way, forced, &fill);
        check(&a);
    }
}

/// `x.html` in `dir` with a gzip sibling holding `SECRET`; `only.html`
/// with only such a sibling (served decoded to identity clients).
fn secret_pages(docroot: &Path, dir: &str) {
    let d = docroot.join(dir);
    fs::create_dir_all(&d).unwrap();
    put(&d, "x.html", b"the original page\n");
    put(&d, "x.html.gz", &gzip(SECRET));
    put(&d, "only.html.gz", &gzip(SECRET));
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
    };
    // Path info and a `?` in a name: the sibling's URI is the file's.
    let shapes = Case {
        server:
            "<Location /info/x.html.gz>\nRequire all denied\n</Location>\n\
                 <LocationMatch \"^/q/a\\?b\\.html\\.gz$\">\nRequire all denied\n</LocationMatch>\n"
                .into(),
        dir: "AcceptPathInfo On",
        modules: vec![],
    };
    both_ways(shapes, false, fill, |a| {
        agree(a, "/info/x.html/extra", "/info/x.html.gz", &[]);
        agree(a, "/q/a%3Fb.html", "/q/a%3Fb.html.gz", &[]);
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
    // /icons/, BrowserMatch, Options FollowSymLinks, AllowOverride None.
    let case = Case {
        server: "<FilesMatch \"^\\.ht\">\nRequire all denied\n</FilesMatch>\n\
                 Alias /icons/ \"/usr/share/apache2/icons/\"\n\
                 BrowserMatch \"Mozilla/2\" nokeepalive\n\
                 <Directory />\nOptions FollowSymLinks\nAllowOverride None\nRequire all denied\n</Directory>\n"
            .into(),
        dir: "<IfModule mod_autoindex.c>\nOptions Indexes FollowSymLinks\n</IfModule>\n\
              AllowOverride None",
        modules: vec!["setenvif", "alias", "dir", "autoindex", "negotiation", "env"],
    };
    let a = start(&case, Path_::Short, false, |d| {
        publish(d, "p.html", &page(3_000, 5), true, &[".gz"]);
    });
    let r = a.get("/p.html", Some("gzip"));
    assert_eq!(r.coding(), Some("gzip"));
    assert_eq!(r.decoded(), page(3_000, 5));
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
    let started = std::time::Instant::now();
    for _ in 0..20 {
        let r = a.request("/x.html", &["-m", "5", "-H", "Accept-Encoding: gzip"]);
        assert_eq!((r.status, r.coding()), (200, None));
        assert_eq!(r.body, b"the original page\n");
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    a.assert_no_crash();
}

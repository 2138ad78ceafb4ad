//! PHP sites with a real PHP: Debian's mod_php (prefork) and PHP-FPM
//! through mod_proxy_fcgi. A `wp-config.php` never leaves as its source,
//! in any coding: the publish tool passes scripts, files of no type and
//! backups over (and `verify` flags, `clean` removes, an old tool's
//! siblings of them); the module's handler in `<Location />` or set for
//! every URL by `RewriteRule [H=]` refuses a script with a 500 and a log
//! line that names the fix, where it would otherwise send its bytes; in
//! `<Directory>`, beneath the script's own `<FilesMatch>`, PHP runs; and
//! no script is ever queued for an on-demand copy.

mod common;

use common::*;
use gdn_core::coding::Coding;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// What no response may hold: the script's source.
const SECRET: &str = "db-password-7f3a9c";

/// What the script prints when PHP runs it.
const RAN: &str = "config loaded";

/// `wp-config.php`: a secret in its source, `RAN` in its output; long
/// enough to be worth compressing.
fn wp_config() -> Vec<u8> {
    format!(
        "<?php\n/* {} */\n$db_password = \"{SECRET}\";\necho \"{RAN}\";\n",
        "WordPress configuration. ".repeat(40)
    )
    .into_bytes()
}

/// Every way a client asks for a coding.
const ASKS: [Option<&str>; 5] = [
    None,
    Some("gzip"),
    Some("br"),
    Some("zstd"),
    Some("zstd, br, gzip"),
];

/// A docroot as a PHP site has it: the config, an include, a backup of
/// the config, an editor's backup, and a page with its siblings.
fn php_site(d: &Path) {
    let old = SystemTime::now() - Duration::from_secs(100);
    for (name, bytes) in [
        ("wp-config.php", wp_config()),
        ("lib.inc", wp_config()),
        ("wp-config.php.bak", wp_config()),
        ("wp-config.php~", wp_config()),
        ("index.html", page(20_000, 1)),
        ("fresh.html", page(20_000, 2)),
    ] {
        fs::write(d.join(name), bytes).expect("write");
        set_mtime(&d.join(name), old);
    }
    let out = publish_tool([
        "compress",
        "--quiet",
        "--exclude",
        "fresh.html",
        d.to_str().expect("path"),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// The siblings a directory holds.
fn siblings(d: &Path) -> Vec<String> {
    let mut out: Vec<String> = fs::read_dir(d)
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| [".gz", ".br", ".zst"].iter().any(|s| n.ends_with(s)))
        .collect();
    out.sort();
    out
}

/// Plants the sibling an older publish tool wrote of `wp-config.php`.
fn plant_old_sibling(d: &Path) {
    let p = d.join("wp-config.php.gz");
    fs::write(&p, gzip(&wp_config())).expect("write");
    set_mtime(&p, SystemTime::now() - Duration::from_secs(50));
}

/// Panics where any response to `path`, in any coding, holds the source.
fn assert_no_source(a: &Apache, path: &str) -> Vec<u16> {
    ASKS.iter()
        .map(|ae| {
            let r = a.get(path, *ae);
            let body = decode_body(r.coding(), &r.body).unwrap_or_else(|_| r.body.clone());
            for b in [&r.body, &body] {
                let text = String::from_utf8_lossy(b);
                assert!(
                    !text.contains(SECRET) && !text.contains("<?php"),
                    "{path} ({ae:?}) sent the source: {} {:?}",
                    r.status,
                    r.headers
                );
            }
            r.status
        })
        .collect()
}

/// Once the compressor has made a page's copy (so it was at work), no
/// copy of the script's bytes is in the cache: copies are named by the
/// SHA-256 of their source.
fn assert_no_copy_of_scripts(a: &Apache) {
    wait_for("a page's copy served", || {
        a.get("/fresh.html", Some("gzip")).coding() == Some("gzip")
    });
    let script = gdn_core::dictionary::to_hex(&gdn_core::dictionary::hash(&wp_config()));
    let cached = copies(&a.root.path().join("cache"));
    assert!(
        cached.iter().all(|(n, _)| !n.starts_with(&script)),
        "{cached:?}"
    );
}

/// Debian's mod_php, or a skip.
fn mod_php() -> Option<PathBuf> {
    let found = fs::read_dir(MODULES).ok()?.flatten().find_map(|e| {
        let n = e.file_name().to_string_lossy().into_owned();
        (n.starts_with("libphp") && n.ends_with(".so")).then(|| e.path())
    });
    if found.is_none() {
        skip("mod_php (libapache2-mod-php) is not installed");
    }
    found
}

/// The lines that hand `.php` to `handler`, as Debian's php conf does.
fn php_files(handler: &str) -> String {
    format!("<FilesMatch \".+\\.php$\">\n    SetHandler \"{handler}\"\n</FilesMatch>")
}

/// mod_php under prefork, with `server` and `dir` lines.
fn with_mod_php(so: &Path, server: &str, dir: &str) -> Options {
    Options {
        mpm: Mpm::Prefork,
        server: format!("LoadModule php_module {}\n{server}", so.display()),
        dir: format!("{dir}\n{}", php_files("application/x-httpd-php")),
        ..Options::default()
    }
}

#[test]
fn the_publish_tool_passes_scripts_over_and_verify_and_clean_catch_old_ones() {
    let d = world_readable_tempdir();
    php_site(d.path());
    assert_eq!(
        siblings(d.path()),
        ["index.html.br", "index.html.gz", "index.html.zst"]
    );
    let again = publish_tool(["compress".into(), d.path().display().to_string()]);
    assert_prints(&again, "server-side script");
    assert_prints(&again, "no MIME type");
    plant_old_sibling(d.path());
    let verify = publish_tool(["verify".into(), d.path().display().to_string()]);
    assert_eq!(verify.status.code(), Some(1), "{}", stdout(&verify));
    assert!(stderr(&verify).contains("server-side script wp-config.php"));
    let clean = publish_tool(["clean".into(), d.path().display().to_string()]);
    assert!(clean.status.success(), "{}", stderr(&clean));
    assert!(!d.path().join("wp-config.php.gz").exists());
}

#[test]
fn mod_php_runs_beneath_the_handler_in_directory_and_nothing_is_copied() {
    let Some(so) = mod_php() else { return };
    let server = "GzipDiskNgCacheRoot {docroot}/../cache";
    let opts = with_mod_php(
        &so,
        server,
        "SetHandler gzip-disk-ng\nGzipDiskNgOnDemand On",
    );
    let a = Apache::start(opts, |d| {
        php_site(d);
        make_cache_root(&d.join("../cache"));
    });
    for ae in ASKS {
        let r = a.get("/wp-config.php", ae);
        assert_eq!((r.status, &r.body[..]), (200, RAN.as_bytes()), "{ae:?}");
    }
    for p in ["/lib.inc.gz", "/wp-config.php.gz", "/wp-config.php.bak.br"] {
        assert_eq!(a.get(p, Some("gzip")).status, 404, "{p}");
    }
    assert_eq!(a.get("/index.html", Some("br")).coding(), Some("br"));
    // Asked for again and again, a script is never queued for a copy.
    for _ in 0..4 {
        assert_no_source(&a, "/wp-config.php");
        // Sent as core sends it, never compressed.
        assert_eq!(a.get("/lib.inc", Some("gzip")).coding(), None);
    }
    assert_no_copy_of_scripts(&a);
    a.assert_no_crash();
}

/// A PHP site with the sibling an older tool wrote of its config.
fn old_site(d: &Path) {
    php_site(d);
    plant_old_sibling(d);
}

/// The script and its old sibling refused, in every coding, never sent.
fn assert_refused(a: &Apache) {
    let statuses = assert_no_source(a, "/wp-config.php");
    assert!(statuses.iter().all(|&s| s == 500), "{statuses:?}");
    assert_no_source(a, "/wp-config.php.gz");
}

#[test]
fn mod_php_handler_in_location_refuses_scripts_rather_than_send_source() {
    let Some(so) = mod_php() else { return };
    let server = "<Location />\n    SetHandler gzip-disk-ng\n</Location>";
    let a = Apache::start(with_mod_php(&so, server, ""), old_site);
    assert_refused(&a);
    let logged = a.module_log_about("server-side script");
    assert!(
        logged.iter().any(|l| l.contains("<Directory>")),
        "no line naming the fix: {logged:?}"
    );
    // The rest of the site is the module's as before.
    let r = a.get("/index.html", Some("zstd"));
    assert_eq!((r.status, r.coding()), (200, Some("zstd")));
    a.assert_no_crash();
}

#[test]
fn mod_php_handler_set_by_rewrite_for_every_url_refuses_scripts() {
    let Some(so) = mod_php() else { return };
    let server = "RewriteEngine On\nRewriteRule ^ - [H=gzip-disk-ng]";
    let mut opts = with_mod_php(&so, server, "");
    opts.modules.push("rewrite");
    let a = Apache::start(opts, old_site);
    assert_refused(&a);
    assert_eq!(a.get("/index.html", Some("gzip")).coding(), Some("gzip"));
    a.assert_no_crash();
}

/// Apache (event) handing `.php` to `fpm`, the module's handler in
/// `<Location />` (`location`) or in `<Directory>`, on-demand on.
fn with_fpm(fpm: &Fpm, location: bool) -> Options {
    let mut server = "GzipDiskNgCacheRoot {docroot}/../cache\n".to_string();
    let mut dir = "GzipDiskNgOnDemand On\n".to_string();
    if location {
        server += "<Location />\n    SetHandler gzip-disk-ng\n</Location>";
    } else {
        dir += "SetHandler gzip-disk-ng";
    }
    Options {
        mpm: Mpm::Event,
        server,
        dir: format!("{dir}\n{}", php_files(&fpm.handler())),
        modules: vec!["proxy", "proxy_fcgi"],
        ..Options::default()
    }
}

#[test]
fn php_fpm_through_proxy_fcgi_runs_or_is_refused_never_sent_as_source() {
    let run = world_readable_tempdir();
    let Some(fpm) = Fpm::start(run.path()) else {
        return;
    };
    let fill = |d: &Path| {
        php_site(d);
        make_cache_root(&d.join("../cache"));
    };
    let a = Apache::start(with_fpm(&fpm, false), fill);
    for ae in ASKS {
        let r = a.get("/wp-config.php", ae);
        assert_eq!((r.status, &r.body[..]), (200, RAN.as_bytes()), "{ae:?}");
    }
    assert_no_source(&a, "/wp-config.php");
    assert_eq!(a.get("/index.html", Some("br")).coding(), Some("br"));
    drop(a);
    let a = Apache::start(with_fpm(&fpm, true), |d| {
        fill(d);
        plant_old_sibling(d);
    });
    for _ in 0..3 {
        assert!(assert_no_source(&a, "/wp-config.php")
            .iter()
            .all(|&s| s == 500));
        assert_no_source(&a, "/wp-config.php.gz");
        assert_eq!(a.get("/lib.inc", Some("gzip")).coding(), None);
    }
    assert_no_copy_of_scripts(&a);
    a.assert_no_crash();
}

/// A program under Debian's `ScriptAlias /cgi-bin/` (no extension, so no
/// name tells it is one), the module's handler in `<Location />` above
/// it: the program runs, as without the module's `SetHandler`; its source
/// never leaves, in any coding.
#[test]
fn cgi_programs_under_script_alias_run_beneath_the_handler_in_location() {
    const PROGRAM: &str = "#!/bin/sh\n# cgi-secret-51e2\nprintf 'Content-Type: text/plain\\r\\n\\r\\nprogram ran\\n'\n";
    let server = "ScriptAlias /cgi-bin/ {docroot}/../cgi-bin/\n\
                  <Directory {docroot}/../cgi-bin>\nRequire all granted\n</Directory>\n\
                  <Location />\nSetHandler gzip-disk-ng\n</Location>";
    let opts = Options {
        server: server.into(),
        modules: vec!["alias", "cgid"],
        ..Options::default()
    };
    let a = Apache::start(opts, |d: &Path| {
        use std::os::unix::fs::PermissionsExt;
        let bin = d.parent().expect("root").join("cgi-bin");
        fs::create_dir_all(&bin).expect("mkdir");
        fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).expect("chmod");
        let p = bin.join("hello");
        fs::write(&p, PROGRAM).expect("program");
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).expect("chmod");
        fs::write(d.join("index.html"), "<p>home</p>\n".repeat(200)).expect("page");
    });
    for ae in [None, Some("gzip"), Some("br"), Some("zstd")] {
        let r = a.get("/cgi-bin/hello", ae);
        let body = String::from_utf8_lossy(&r.body).into_owned();
        assert!(!body.contains("cgi-secret"), "source sent ({ae:?}): {body}");
        assert_eq!((r.status, body.as_str()), (200, "program ran\n"), "{ae:?}");
    }
    let logged = a.module_log_about("steps aside for handler cgi-script");
    assert!(!logged.is_empty(), "no debug line on stepping aside");
    assert_eq!(a.get("/index.html", Some("gzip")).status, 200);
    a.assert_no_crash();
}

/// A sibling whose own name another handler has (`AddHandler cgi-script
/// .br`, which `SetHandler gzip-disk-ng` in `<Directory>` replaces): its
/// own request steps aside for that handler, so its bytes are not sent
/// for the page either, in its coding or decoded; a sibling core would
/// answer is.
#[test]
fn a_sibling_whose_own_name_has_another_handler_is_not_sent_for_its_page() {
    let opts = Options {
        dir: "SetHandler gzip-disk-ng\nAddHandler cgi-script .br".into(),
        modules: vec!["cgid"],
        log_level: "info gzip_disk_ng:debug",
        ..Options::default()
    };
    let a = Apache::start(opts, |d: &Path| {
        let text = "<p>only siblings</p>\n".repeat(100);
        fs::write(d.join("only.html.br"), encoded(Coding::Br, text.as_bytes())).expect("br");
        fs::write(
            d.join("only.html.gz"),
            encoded(Coding::Gzip, text.as_bytes()),
        )
        .expect("gz");
    });
    assert_ne!(a.get("/only.html.br", None).status, 200, "its own request");
    for ae in [Some("br"), None] {
        let r = a.get("/only.html", ae);
        assert_ne!(r.coding(), Some("br"), "{ae:?}");
    }
    let r = a.get("/only.html", Some("gzip, br"));
    assert_eq!((r.status, r.coding()), (200, Some("gzip")));
    a.assert_no_crash();
}

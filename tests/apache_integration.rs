//! Apache integration: directives in every scope and their merge, config
//! errors, DirectoryIndex, symlink policy, the log note, coexistence with
//! mod_deflate/mod_brotli, and the shipped a2enmod files.

mod common;

use common::*;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

const ALL: &[&str] = &[".gz", ".br", ".zst"];

fn site(d: &Path) {
    publish(d, "p.html", &page(20_000, 1), true, ALL);
    publish(d, "o.html", &page(20_000, 2), false, ALL);
    publish(d, "sub/p.html", &page(20_000, 3), true, ALL);
    publish(d, "sub/o.html", &page(20_000, 4), false, &[".br"]);
    publish(
        d,
        "sub/deeper/o.html",
        &page(20_000, 5),
        false,
        &[".br", ".gz"],
    );
}

#[test]
fn directives_in_scopes_merge_field_by_field() {
    let a = Apache::start(
        Options {
            server: "GzipDiskNgEncodings gzip\nGzipDiskNgStatusHeader X-Outer".into(),
            dir: "SetHandler gzip-disk-ng\nAllowOverride FileInfo".into(),
            ..Default::default()
        },
        |d| {
            site(d);
            fs::write(
                d.join("sub/.htaccess"),
                "GzipDiskNgEncodings br gzip\nGzipDiskNgDecompress Off\n",
            )
            .unwrap();
            fs::write(d.join("sub/deeper/.htaccess"), "GzipDiskNgDecompress On\n").unwrap();
        },
    );
    // Server scope: only gzip, custom header name.
    let r = a.get("/p.html", Some("zstd, br, gzip"));
    assert_eq!(r.coding(), Some("gzip"));
    assert_eq!(r.header("X-Outer"), Some(":-)"));
    assert_eq!(r.header("Mod-Gzip-Disk-Ng"), None);
    let r = a.get("/p.html", Some("br"));
    assert_eq!(r.coding(), None, "br not listed, never served");
    // .htaccess: br preferred, decompress off, header inherited.
    let r = a.get("/sub/p.html", Some("zstd, br, gzip"));
    assert_eq!(r.coding(), Some("br"));
    assert_eq!(r.header("X-Outer"), Some(":-)"));
    let r = a.get("/sub/o.html", None);
    assert_eq!(r.status, 406);
    assert!(
        String::from_utf8_lossy(&r.body).contains("br"),
        "406 body names codings"
    );
    assert!(r.tokens("Vary").contains(&"Accept-Encoding".to_string()));
    // Deeper .htaccess turns decompression back on, keeps br gzip.
    let r = a.get("/sub/deeper/o.html", None);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, page(20_000, 5));
    assert_eq!(r.header("X-Outer"), Some(":-("));
    let r = a.get("/sub/deeper/o.html", Some("gzip, br"));
    assert_eq!(r.coding(), Some("br"));
}

#[test]
fn location_scope_and_status_header_off() {
    let a = Apache::start(
        Options {
            dir: "SetHandler gzip-disk-ng".into(),
            server: "<Location /sub>\nGzipDiskNgStatusHeader Off\nGzipDiskNgEncodings gzip zstd\n</Location>".into(),
            ..Default::default()
        },
        site,
    );
    let r = a.get("/sub/p.html", Some("zstd, gzip"));
    assert_eq!(r.coding(), Some("gzip"), "server order from Location");
    assert_eq!(r.header("Mod-Gzip-Disk-Ng"), None);
    let r = a.get("/p.html", Some("zstd, gzip"));
    assert_eq!(r.coding(), Some("zstd"));
    assert_eq!(r.header("Mod-Gzip-Disk-Ng"), Some(":-)"));
}

#[test]
fn bad_directive_values_fail_configtest() {
    assert_configtests(
        &[],
        &[
            ("GzipDiskNgEncodings gzip deflate", "deflate"),
            ("GzipDiskNgEncodings", "GzipDiskNgEncodings"),
            ("GzipDiskNgDecompress Maybe", "GzipDiskNgDecompress"),
            (
                "GzipDiskNgStatusHeader \"bad name\"",
                "GzipDiskNgStatusHeader",
            ),
            ("GzipDiskNgJitter 0", "GzipDiskNgJitter"),
            ("GzipDiskNgJitter 32 abc", "GzipDiskNgJitter"),
            ("GzipDiskNgJitter 1 2 3 4", "GzipDiskNgJitter"),
            (
                "GzipDiskNgUseAsDictionary app.js",
                "GzipDiskNgUseAsDictionary",
            ),
            (
                "GzipDiskNgUseAsDictionary /a/(\\d+).js",
                "GzipDiskNgUseAsDictionary",
            ),
            ("GzipDiskNgUseAsDictionary", "GzipDiskNgUseAsDictionary"),
        ],
        &[
            "GzipDiskNgEncodings br gzip",
            "GzipDiskNgDecompress off",
            "GzipDiskNgStatusHeader X-Precompressed",
            "GzipDiskNgJitter 32",
            "GzipDiskNgJitter 32 -1 paranoid",
            "GzipDiskNgJitter Off",
            "GzipDiskNgUseAsDictionary /assets/app.*.js",
            "GzipDiskNgUseAsDictionary self v1",
            "GzipDiskNgUseAsDictionary Off",
        ],
    );
}

#[test]
fn directory_index_served_from_a_sibling() {
    let a = Apache::start(
        Options {
            modules: vec!["dir"],
            dir: "SetHandler gzip-disk-ng\nDirectoryIndex index.html".into(),
            ..Default::default()
        },
        |d| {
            publish(d, "index.html", &page(9_000, 6), false, &[".gz"]);
            publish(d, "b/index.html", &page(9_000, 7), false, &[".br", ".zst"]);
        },
    );
    let r = a.get("/", Some("gzip"));
    assert_eq!(r.status, 200);
    assert_eq!(r.coding(), Some("gzip"));
    assert_eq!(r.header("Content-Type"), Some("text/html"));
    assert_eq!(r.decoded(), page(9_000, 6));
    let r = a.get("/", None);
    assert_eq!(r.body, page(9_000, 6));
    let r = a.get("/b/", Some("br"));
    assert_eq!(r.coding(), Some("br"));
    let r = a.get("/b/", None);
    assert_eq!(r.body, page(9_000, 7));
    assert!(
        a.access_log().contains("zstd decompressed"),
        "{}",
        a.access_log()
    );
}

#[test]
fn symlinked_siblings_follow_options() {
    let root_user = is_root();
    let build = |d: &Path| {
        publish(d, "real/t.html", &page(9_000, 8), false, &[".gz", ".br"]);
        fs::create_dir_all(d.join("l")).unwrap();
        symlink(d.join("real/t.html.gz"), d.join("l/t.html.gz")).unwrap();
        fs::copy(d.join("real/t.html.br"), d.join("l/t.html.br")).unwrap();
        if root_user {
            // A link owned by root to a file owned by someone else.
            let _ = Command::new("chown")
                .arg("nobody")
                .arg(d.join("real/t.html.gz"))
                .status();
        }
    };
    for (opts, gzip_allowed) in [
        ("Options -FollowSymLinks", false),
        ("Options FollowSymLinks", true),
        ("Options SymLinksIfOwnerMatch", !root_user),
    ] {
        let a = Apache::start(
            Options {
                dir: format!("SetHandler gzip-disk-ng\n{opts}"),
                ..Default::default()
            },
            build,
        );
        let r = a.get("/l/t.html", Some("gzip"));
        if gzip_allowed {
            assert_eq!(r.coding(), Some("gzip"), "{opts}");
        } else {
            // The link is refused: the br copy is decoded instead.
            assert_eq!(r.coding(), None, "{opts}");
            assert_eq!(r.body, page(9_000, 8), "{opts}");
            let log = a.module_log().join("\n");
            assert!(log.contains("symlink refused by Options"), "{opts}: {log}");
        }
    }
}

#[test]
fn log_note_names_the_path_taken() {
    let opts = Options {
        server: "<Location /na>\nGzipDiskNgDecompress Off\n</Location>".into(),
        ..Default::default()
    };
    let a = Apache::start(opts, |d| {
        site(d);
        publish(d, "na/o.html", &page(1_000, 11), false, &[".gz"]);
        publish(d, "stale.html", &page(1_000, 9), true, &[".gz"]);
        fs::write(d.join("stale.html"), page(1_000, 10)).unwrap();
        fs::write(d.join("bad.html.gz"), b"nope").unwrap();
    });
    a.get("/p.html", Some("br"));
    a.get("/o.html", None);
    a.get("/p.html", None);
    a.get("/stale.html", Some("gzip"));
    a.get("/bad.html", None);
    a.get("/sub/deeper/o.html", None);
    a.get("/sub/o.html", None);
    a.get("/na/o.html", None);
    assert!(a.last_access_ends_with("GET /na/o.html HTTP/1.1 406 not-acceptable"));
    let log = a.access_log();
    for want in [
        "GET /p.html HTTP/1.1 200 br precompressed",
        "GET /o.html HTTP/1.1 200 zstd decompressed",
        "GET /p.html HTTP/1.1 200 original",
        "GET /stale.html HTTP/1.1 200 stale",
        "GET /bad.html HTTP/1.1 500 error",
        "GET /sub/deeper/o.html HTTP/1.1 200 gzip decompressed",
        "GET /sub/o.html HTTP/1.1 200 br decompressed",
    ] {
        assert!(log.contains(want), "missing '{want}' in:\n{log}");
    }
}

/// mod_brotli and mod_deflate compressing what they may of the module's
/// responses.
fn filtering() -> Options {
    Options {
        modules: vec!["filter", "deflate", "brotli"],
        dir: "SetHandler gzip-disk-ng\nSetOutputFilter BROTLI_COMPRESS;DEFLATE".into(),
        ..Default::default()
    }
}

#[test]
fn compressing_filters_never_recompress() {
    let a = Apache::start(filtering(), site);
    for ae in ["gzip", "br", "zstd"] {
        let r = a.get("/p.html", Some(ae));
        assert_eq!(r.header("Content-Encoding"), Some(ae), "single coding");
        let sib = fs::read(a.docroot.join(format!(
            "p.html.{}",
            if ae == "zstd" {
                "zst"
            } else {
                if ae == "br" {
                    "br"
                } else {
                    "gz"
                }
            }
        )))
        .unwrap();
        assert_eq!(r.body, sib, "{ae}: the sibling's bytes, untouched");
    }
}

/// Debian's compression (mod_filter's `AddOutputFilterByType` for
/// mod_deflate and mod_brotli) steps aside from a coded response: the
/// module takes those filters out before they run, and every coded
/// answer (whole, 304, range under If-Range) is what the same
/// server without them sends. Bodies the module sends uncoded are still
/// theirs to compress.
#[test]
fn compressors_by_type_are_skipped_on_coded_responses() {
    let by_type = Options {
        modules: vec!["filter", "deflate", "brotli"],
        server: "AddOutputFilterByType DEFLATE text/html text/plain\n\
                 AddOutputFilterByType BROTLI_COMPRESS text/html text/plain"
            .into(),
        log_level: "warn deflate:trace1 brotli:trace1 filter:trace2",
        ..Default::default()
    };
    let with = Apache::start(by_type, |d| {
        site(d);
        put(d, "plain.html", &page(20_000, 6));
    });
    let without = Apache::start(Options::default(), site);
    // Each server's own validators (the two docroots' times differ).
    let cases = |srv: &Apache| {
        let gz = srv.request("/p.html", &["-H", "Accept-Encoding: gzip"]);
        let tag = gz.header("ETag").expect("ETag").to_owned();
        let ae = |v: &str| vec!["-H".to_owned(), format!("Accept-Encoding: {v}")];
        let with = |mut v: Vec<String>, more: &[String]| {
            v.extend_from_slice(more);
            v
        };
        let h = |v: String| ["-H".to_owned(), v];
        vec![
            ae("gzip"),
            ae("br"),
            ae("gzip, deflate, br, zstd"),
            with(ae("gzip"), &h(format!("If-None-Match: {tag}"))),
            with(
                with(ae("gzip"), &h("Range: bytes=2-40".into())),
                &h(format!("If-Range: {tag}")),
            ),
        ]
    };
    for (x, y) in cases(&with).into_iter().zip(cases(&without)) {
        let x_args: Vec<&str> = x.iter().map(String::as_str).collect();
        let y_args: Vec<&str> = y.iter().map(String::as_str).collect();
        let (a, b) = (
            with.request("/p.html", &x_args),
            without.request("/p.html", &y_args),
        );
        assert_eq!((a.status, &a.body), (b.status, &b.body), "{x:?}");
        for h in [
            "Content-Encoding",
            "Content-Length",
            "Vary",
            "Content-Range",
        ] {
            assert_eq!(a.header(h), b.header(h), "{h} with {x:?}");
        }
        let suffix = |r: &Response| {
            r.header("ETag")
                .map(|t| t.split('-').next_back().map(str::to_owned))
        };
        assert_eq!(suffix(&a), suffix(&b), "ETag with {x:?}");
    }
    let log = with.error_log();
    assert!(
        !log.contains("Not compressing") && !log.contains("content-encoding already"),
        "a compression filter ran on a coded response:\n{log}"
    );
    // The harnesses are known by their providers only because the
    // start-up read-back found mod_filter's records as written.
    assert!(
        !log.contains("read back wrong"),
        "the read-back failed:\n{log}"
    );
    let plain = with.get("/plain.html", Some("br"));
    assert_eq!(
        plain.coding(),
        Some("br"),
        "an uncoded body is still compressed"
    );
}

/// A body mod_deflate or mod_brotli compressed on its way out is noted
/// as the counters count it: on the fly, in the filter's coding, whether
/// the module sent the original or decoded a sibling; what the module
/// sent in a coding keeps its own note.
#[test]
fn filtered_bodies_are_noted_on_the_fly() {
    let a = Apache::start(filtering(), |d| {
        site(d);
        put(d, "plain.html", &page(20_000, 6));
    });
    for (path, ae, note) in [
        ("/plain.html", Some("gzip"), "gzip on-the-fly"),
        ("/plain.html", Some("br"), "br on-the-fly"),
        ("/sub/o.html", Some("gzip"), "gzip on-the-fly"),
        ("/p.html", Some("gzip"), "gzip precompressed"),
        ("/plain.html", None, "original"),
    ] {
        let r = a.get(path, ae);
        assert_eq!(
            (r.status, r.header("Content-Encoding")),
            (200, ae),
            "{path}"
        );
        let line = format!("GET {path} HTTP/1.1 200 {note}");
        assert!(
            a.last_access_ends_with(&line),
            "{line}:\n{}",
            a.access_log()
        );
    }
}

#[test]
fn shipped_files_install_and_pass_configtest() {
    let stage = world_readable_tempdir();
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("bash")
        .arg(format!("{root}/scripts/install"))
        .arg("--no-build")
        .env("DESTDIR", stage.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let so = stage
        .path()
        .join("usr/lib/apache2/modules/mod_gzip_disk_ng.so");
    let load = stage
        .path()
        .join("etc/apache2/mods-available/gzip_disk_ng.load");
    let conf = stage
        .path()
        .join("etc/apache2/mods-available/gzip_disk_ng.conf");
    for f in [
        &so,
        &load,
        &conf,
        &stage.path().join("usr/local/bin/gzip-disk-ng"),
    ] {
        assert!(f.exists(), "{} not installed", f.display());
    }
    // The .load names the installed path; the .conf documents each directive.
    let load_text = fs::read_to_string(&load).unwrap();
    assert!(load_text
        .contains("LoadModule gzip_disk_ng_module /usr/lib/apache2/modules/mod_gzip_disk_ng.so"));
    let conf_text = fs::read_to_string(&conf).unwrap();
    for d in [
        "GzipDiskNgEncodings",
        "GzipDiskNgDecompress",
        "GzipDiskNgStatusHeader",
        "GzipDiskNgJitter",
        "GzipDiskNgJitterKey",
        "GzipDiskNgFilterLevels",
        "GzipDiskNgFilterMinSize",
        "GzipDiskNgFilterLoadLimit",
        "GZIP_DISK_NG",
    ] {
        assert!(conf_text.contains(d), "{d} undocumented");
    }
    // apache2 -t accepts the pair, as a2enmod would include them: the
    // .load (pointed at the staged copy) is what loads the module.
    let staged = stage.path().join("staged.load");
    fs::write(
        &staged,
        load_text.replace(
            "/usr/lib/apache2/modules/mod_gzip_disk_ng.so",
            &so.display().to_string(),
        ),
    )
    .unwrap();
    let includes = format!("Include {}\nInclude {}", staged.display(), conf.display());
    let (ok, msg) = configtest_with(&includes, "", &[]);
    assert!(ok, "{msg}");
    // The installed module serves a request.
    let a = Apache::start(
        Options {
            load: Some(includes.clone()),
            ..Default::default()
        },
        site,
    );
    let r = a.get("/p.html", Some("gzip"));
    assert_eq!(r.coding(), Some("gzip"));
    assert_eq!(r.header("Mod-Gzip-Disk-Ng"), Some(":-)"));
    let r = a.get("/o.html", None);
    assert_eq!((r.status, r.body.clone()), (200, page(20_000, 2)));
    drop(a);
    // Uncommented, every documented default is a valid directive.
    let active: String = conf_text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("#GzipDiskNg"))
        .map(|l| format!("GzipDiskNg{l}\n"))
        .collect();
    assert_eq!(active.lines().count(), 7, "{active}");
    let (ok, msg) = configtest(&active);
    assert!(ok, "{msg}");
    // The Debian package metadata installs the same files.
    let cargo = fs::read_to_string(format!("{root}/Cargo.toml")).unwrap();
    for dest in [
        "usr/lib/apache2/modules/mod_gzip_disk_ng.so",
        "etc/apache2/mods-available/gzip_disk_ng.load",
        "etc/apache2/mods-available/gzip_disk_ng.conf",
        "usr/bin/gzip-disk-ng",
    ] {
        assert!(cargo.contains(dest), "deb assets lack {dest}");
    }
}

#[test]
fn zstd_suffix_is_served_and_zst_comes_first() {
    let data = page(30_000, 12);
    let a = Apache::start(Options::default(), |d| {
        publish(d, "z.html", &data, false, &[".zstd"]);
        publish(d, "both.html", &data, false, &[".zst"]);
        // A different, valid zstd under the long name: never chosen.
        fs::write(d.join("both.html.zstd"), zstd(&page(30_000, 13))).unwrap();
    });
    let zstd_bytes = fs::read(a.docroot.join("z.html.zstd")).unwrap();
    let r = a.get("/z.html", Some("zstd"));
    assert_eq!((r.status, r.coding()), (200, Some("zstd")));
    assert_eq!(r.body, zstd_bytes);
    assert!(r.header("ETag").unwrap().ends_with("-zstd\""));
    let r = a.get("/z.html", None);
    assert_eq!((r.status, r.exit), (200, 0));
    assert_eq!(r.body, data);
    assert!(a.last_access_ends_with("GET /z.html HTTP/1.1 200 zstd decompressed"));
    let zst = fs::read(a.docroot.join("both.html.zst")).unwrap();
    assert_eq!(a.get("/both.html", Some("zstd")).body, zst);
    assert_eq!(a.get("/both.html", None).body, data);
}

#[test]
fn directives_in_virtual_hosts() {
    let (_keys, k) = key_files(&[
        b"first key, 32 bytes long, or so",
        b"second key, quite another secret",
    ]);
    let (k1, k2) = (&k[0], &k[1]);
    let vhost = |name: &str, body: &str| {
        format!("<VirtualHost *>\nServerName {name}\n{body}\n</VirtualHost>\n")
    };
    let server = [
        format!("GzipDiskNgJitterKey {}\n", k1.display()),
        vhost("localhost", ""),
        vhost(
            "gz.test",
            "GzipDiskNgEncodings gzip\nGzipDiskNgStatusHeader X-Vhost\nGzipDiskNgDecompress Off",
        ),
        vhost("j1.test", "GzipDiskNgJitter 32"),
        vhost(
            "j2.test",
            &format!("GzipDiskNgJitter 32\nGzipDiskNgJitterKey {}", k2.display()),
        ),
    ]
    .concat();
    let a = Apache::start(
        Options {
            server,
            ..Default::default()
        },
        |d| {
            site(d);
            jitter_pages(d);
        },
    );
    let get = |host: &str, path: &str, ae: Option<&str>| host_get(&a, host, path, ae);
    // The default host: every coding (the smallest first), decompression
    // on, no padding.
    let r = get("localhost", "/p.html", Some("zstd, br, gzip"));
    let (coding, bytes) = smallest_sibling(&a.docroot.join("p.html"));
    assert_eq!(r.coding(), Some(coding));
    assert_eq!(r.header("Mod-Gzip-Disk-Ng"), Some(":-)"));
    assert_eq!(r.body, bytes);
    assert_eq!(get("localhost", "/o.html", None).status, 200);
    // gz.test: its own encodings, header name and decompression setting.
    let r = get("gz.test", "/p.html", Some("zstd, br, gzip"));
    assert_eq!(r.coding(), Some("gzip"));
    assert_eq!(r.header("X-Vhost"), Some(":-)"));
    assert_eq!(r.header("Mod-Gzip-Disk-Ng"), None);
    let r = get("gz.test", "/o.html", None);
    assert_eq!(r.status, 406);
    assert!(a.last_access_ends_with("GET /o.html HTTP/1.1 406 not-acceptable"));
    // Jitter per host; j1.test pads with the main server's key, j2.test
    // with its own: the same files get other lengths.
    let pads = |host: &str| zstd_pads(&a, host);
    assert_eq!(
        pads("localhost"),
        vec![0; 8],
        "no jitter outside the vhosts"
    );
    let (p1, p2) = (pads("j1.test"), pads("j2.test"));
    assert!(p1.iter().chain(&p2).all(|&p| p > 8), "{p1:?} {p2:?}");
    assert_ne!(p1, p2, "each vhost's key");
    // The main server's key is the one j1.test uses.
    let b = Apache::start(
        Options {
            server: format!("GzipDiskNgJitterKey {}\nGzipDiskNgJitter 32", k1.display()),
            ..Default::default()
        },
        jitter_pages,
    );
    let main = zstd_pads(&b, "localhost");
    assert_eq!(p1, main);
}

/// Eight pages with a zstd sibling, for padding under `GzipDiskNgJitter`.
fn jitter_pages(d: &Path) {
    for i in 0..8 {
        publish(
            d,
            &format!("j/{i}.html"),
            &page(9_000, 20 + i),
            false,
            &[".zst"],
        );
    }
}

/// GET `path` with a Host header and an optional Accept-Encoding.
fn host_get(a: &Apache, host: &str, path: &str, ae: Option<&str>) -> Response {
    let mut args = vec!["-H".to_string(), format!("Host: {host}")];
    if let Some(ae) = ae {
        args.extend(["-H".to_string(), format!("Accept-Encoding: {ae}")]);
    }
    curl(&a.url(path), &args)
}

/// The bytes `host` adds to each of `jitter_pages`' zstd siblings.
fn zstd_pads(a: &Apache, host: &str) -> Vec<usize> {
    (0..8)
        .map(|i| {
            let p = format!("/j/{i}.html");
            let sib = fs::read(a.docroot.join(format!("j/{i}.html.zst"))).unwrap();
            let r = host_get(a, host, &p, Some("zstd"));
            assert_eq!(r.status, 200, "{host} {p}");
            r.body.len() - sib.len()
        })
        .collect()
}

//! Apache's own rules for a sibling's name, subrequests, FileETag, and the
//! HTTP details of issue-prone paths, against a real Apache: a sibling is
//! served only where a request for its own name would be.

mod common;

use common::*;
use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Lines of `<Directory docroot/sub>` with `body`.
fn subdir(sub: &str, body: &str) -> String {
    format!("<Directory {{docroot}}/{sub}>\n{body}\n</Directory>\n")
}

fn refusal_logged(a: &Apache, name: &str) -> bool {
    a.module_log()
        .iter()
        .any(|l| l.contains("refused by the access rules") && l.contains(name))
}

#[test]
fn denied_siblings_count_as_absent() {
    let data = page(20_000, 7);
    let server = [
        subdir(
            "files",
            "<FilesMatch \"\\.gz$\">\nRequire all denied\n</FilesMatch>",
        ),
        subdir(
            "named",
            "<Files \"secret.html.gz\">\nRequire all denied\n</Files>",
        ),
        subdir(
            "iff",
            "<If \"%{REQUEST_FILENAME} =~ /\\.gz$/\">\nRequire all denied\n</If>",
        ),
        subdir(
            "open",
            "<FilesMatch \"\\.png$\">\nRequire all denied\n</FilesMatch>\n\
                 <Files \"other.html.gz\">\nRequire all denied\n</Files>",
        ),
        "<LocationMatch \"^/loc/.*\\.gz$\">\nRequire all denied\n</LocationMatch>\n".into(),
        subdir(
            "idx",
            "<Files \"index.html.gz\">\nRequire all denied\n</Files>",
        ),
        subdir(
            "idx2",
            "<Files \"index.html.gz\">\nRequire all denied\n</Files>",
        ),
        "DirectoryIndex index.html\n".into(),
    ]
    .concat();
    let a = start_with(server, vec!["dir"], |d| {
        publish(d, "files/backup.tar", &data, false, &[".gz"]);
        publish(d, "files/page.html", &data, true, &[".gz"]);
        publish(d, "files/both.html", &data, false, &[".gz", ".br"]);
        publish(d, "named/secret.html", &data, false, &[".gz", ".br"]);
        publish(d, "named/only.html", &data, false, &[".gz"]);
        publish(d, "iff/x.html", &data, false, &[".gz"]);
        publish(d, "open/p.html", &data, false, &[".gz"]);
        publish(d, "loc/x.html", &data, false, &[".gz"]);
        publish(d, "idx/index.html", &data, false, &[".gz", ".br"]);
        publish(d, "idx2/index.html", &data, false, &[".gz"]);
    });
    // The sibling's own name is refused, so nothing is served: 404 as for
    // a missing file, raw or decompressed.
    for ae in [None, Some("gzip"), Some("gzip, br, zstd")] {
        let r = a.get("/files/backup.tar", ae);
        assert_eq!(r.status, 404, "backup.tar with {ae:?}");
        assert!(r.body.len() < 1000, "a body of {} bytes", r.body.len());
    }
    assert!(refusal_logged(&a, "backup.tar.gz"), "{:?}", a.module_log());
    // Original present: the sibling, verified to decode to it, is the
    // page, whatever its own name's rules; its own URI stays refused.
    let r = a.get("/files/page.html", Some("gzip"));
    assert_eq!((r.status, r.coding()), (200, Some("gzip")));
    assert_eq!(r.decoded(), data);
    assert_eq!(a.get("/files/page.html.gz", None).status, 403);
    // The next acceptable sibling is used; without one, decompression.
    let r = a.get("/files/both.html", Some("gzip, br"));
    assert_eq!((r.status, r.coding()), (200, Some("br")));
    let r = a.get("/named/secret.html", Some("gzip"));
    assert_eq!((r.status, r.coding()), (200, None));
    assert_eq!(r.body, data, "decoded from the permitted .br");
    let r = a.get("/named/secret.html", Some("gzip, br"));
    assert_eq!((r.status, r.coding()), (200, Some("br")));
    // <Files> for another name only: unaffected.
    let r = a.get("/named/only.html", Some("gzip"));
    assert_eq!((r.status, r.coding()), (200, Some("gzip")));
    // <If> and <LocationMatch> apply to the sibling's name too.
    assert_eq!(a.get("/iff/x.html", Some("gzip")).status, 404);
    assert_eq!(a.get("/iff/x.html", None).status, 404);
    assert_eq!(a.get("/loc/x.html", Some("gzip")).status, 404);
    // Sections that match neither name change nothing.
    let r = a.get("/open/p.html", Some("gzip"));
    assert_eq!((r.status, r.coding()), (200, Some("gzip")));
    // DirectoryIndex: the refused .gz does not make the index; the .br does.
    let r = a.get("/idx/", Some("gzip"));
    assert_eq!((r.status, r.coding()), (200, None));
    assert_eq!(r.body, data);
    let r = a.get("/idx/", Some("br"));
    assert_eq!((r.status, r.coding()), (200, Some("br")));
    let r = a.get("/idx2/", Some("gzip"));
    assert_eq!((r.status, r.exit), (404, 0), "refused index sibling served");
    assert!(r.body.len() < data.len() / 2);
    a.assert_no_crash();
}

/// Regex sections of the shape `^literal` (Debian's `<FilesMatch "^\.ht">`)
/// are compared without running the regex: they must answer as the regex
/// does, where only the sibling's longer name matches, and where httpd
/// compiled them caseless (`RegexDefaultOptions +ICASE`).
#[test]
fn literal_prefix_sections_answer_as_their_regex() {
    let data = page(20_000, 5);
    let fill = |d: &Path| {
        // Without the original, the sibling's own name's rules decide.
        for dir in ["files", "short", "other", "lm"] {
            publish(d, &format!("{dir}/page.html"), &data, false, &[".gz"]);
        }
    };
    let server = [
        subdir(
            "files",
            "<FilesMatch \"^page\\.html\\.gz\">\nRequire all denied\n</FilesMatch>",
        ),
        subdir(
            "short",
            "<FilesMatch \"^page\\.html\\.\">\nRequire all denied\n</FilesMatch>",
        ),
        subdir(
            "other",
            "<FilesMatch \"^page\\.html\\.br\">\nRequire all denied\n</FilesMatch>",
        ),
        "<LocationMatch \"^/lm/page\\.html\\.gz\">\nRequire all denied\n</LocationMatch>\n".into(),
    ]
    .concat();
    let a = start_with(server, vec![], fill);
    for dir in ["files", "short", "lm"] {
        let r = a.get(&format!("/{dir}/page.html"), Some("gzip"));
        assert_eq!(r.status, 404, "{dir}: refused sibling served");
    }
    let r = a.get("/other/page.html", Some("gzip"));
    assert_eq!((r.status, r.coding()), (200, Some("gzip")));
    // Learned again when a graceful restart reads the configuration: the
    // two directories' literals swapped.
    let conf = a.root.path().join("httpd.conf");
    let text = fs::read_to_string(&conf).unwrap();
    let swapped = text
        .replace("^page\\.html\\.gz\"", "^page\\.html\\.tmp\"")
        .replace("^page\\.html\\.br\"", "^page\\.html\\.gz\"")
        .replace("^page\\.html\\.tmp\"", "^page\\.html\\.br\"");
    assert_ne!(swapped, text);
    fs::write(&conf, swapped).unwrap();
    graceful(&a);
    let r = a.get("/files/page.html", Some("gzip"));
    assert_eq!(
        (r.status, r.coding()),
        (200, Some("gzip")),
        "after the restart"
    );
    let r = a.get("/other/page.html", Some("gzip"));
    assert_eq!(r.status, 404, "after the restart");
    a.assert_no_crash();
    drop(a);

    let server = [
        "RegexDefaultOptions +ICASE\n".to_string(),
        subdir(
            "files",
            "<FilesMatch \"^PAGE\\.HTML\\.GZ\">\nRequire all denied\n</FilesMatch>",
        ),
        subdir(
            "other",
            "<FilesMatch \"^PAGE\\.HTML\\.BR\">\nRequire all denied\n</FilesMatch>",
        ),
    ]
    .concat();
    let a = start_with(server, vec![], fill);
    let r = a.get("/files/page.html", Some("gzip"));
    assert_eq!(r.status, 404, "caseless section ignored");
    let r = a.get("/other/page.html", Some("gzip"));
    assert_eq!((r.status, r.coding()), (200, Some("gzip")));
    a.assert_no_crash();
}

/// Sections of the server's own lists are compared per request only
/// where a name does not outgrow what they read (a `<Files>` name, a
/// `<Location>` prefix, a `^literal` regex): those that only the
/// sibling's longer name matches, or that the page's name matches only
/// because it ends where they do, must still be answered as Apache
/// answers the sibling's own GET; those both names outgrow change
/// nothing.
#[test]
fn sections_the_names_do_not_outgrow_answer_as_apache() {
    let data = page(8_000, 17);
    let server = [
        // Only the sibling's name is as long as these.
        "<Files \"fx.html.gz\">\nRequire all denied\n</Files>\n",
        "<FilesMatch \"^fm\\.html\\.gz\">\nRequire all denied\n</FilesMatch>\n",
        "<Location \"/lx/page.html.gz\">\nRequire all denied\n</Location>\n",
        // The page's name ends where these end; the sibling's goes on
        // (a <Location> prefix stops at a segment's end, a <Files> name
        // is the whole name).
        "<Directory {docroot}/lend>\nRequire all denied\n</Directory>\n",
        "<Location \"/lend/page.html\">\nRequire all granted\n</Location>\n",
        "<Directory {docroot}/fend>\nRequire all denied\n</Directory>\n",
        "<Files \"fe.html\">\nRequire all granted\n</Files>\n",
        // Outgrown by both names: no twin needed, the sibling is served.
        "<Location \"/open\">\nRequire all granted\n</Location>\n",
        "<FilesMatch \"^op\">\nRequire all granted\n</FilesMatch>\n",
    ]
    .concat();
    let a = start_with(server, vec![], |d| {
        publish(d, "f/fx.html", &data, false, &[".gz"]);
        publish(d, "f/fm.html", &data, false, &[".gz"]);
        publish(d, "lx/page.html", &data, false, &[".gz"]);
        publish(d, "lend/page.html", &data, false, &[".gz"]);
        publish(d, "fend/fe.html", &data, false, &[".gz"]);
        publish(d, "open/op.html", &data, false, &[".gz"]);
    });
    for (uri, sibling) in [
        ("/f/fx.html", "fx.html.gz"),
        ("/f/fm.html", "fm.html.gz"),
        ("/lx/page.html", "lx/page.html.gz"),
        ("/lend/page.html", "lend/page.html.gz"),
        ("/fend/fe.html", "fe.html.gz"),
    ] {
        let direct = a.get(&format!("{uri}.gz"), None).status;
        assert_eq!(direct, 403, "{uri}: Apache refuses the sibling's own GET");
        let r = a.get(uri, Some("gzip"));
        assert_eq!(r.status, 404, "{uri}: sibling served");
        assert!(refusal_logged(&a, sibling), "{uri}: {:?}", a.module_log());
    }
    let r = a.get("/open/op.html", Some("gzip"));
    assert_eq!((r.status, r.coding()), (200, Some("gzip")));
    assert!(
        !a.module_log()
            .iter()
            .any(|l| l.contains("refused by the access rules") && l.contains("op.html.gz")),
        "{:?}",
        a.module_log()
    );
    a.assert_no_crash();
}

/// With the original, a sibling verified to decode to it is the page:
/// the sections that refuse its own name (above) change nothing for the
/// page, whose own request decides; its own URI stays refused, a page the
/// client may not GET stays refused, and a sibling of other content is
/// never sent.
#[test]
fn verified_siblings_answer_for_their_page() {
    let data = page(8_000, 17);
    let other = page(8_000, 18);
    let server = [
        "<Files \"fx.html.gz\">\nRequire all denied\n</Files>\n",
        "<FilesMatch \"^fm\\.html\\.gz\">\nRequire all denied\n</FilesMatch>\n",
        "<Location \"/lx/page.html.gz\">\nRequire all denied\n</Location>\n",
        "<Directory {docroot}/lend>\nRequire all denied\n</Directory>\n",
        "<Location \"/lend/page.html\">\nRequire all granted\n</Location>\n",
        "<FilesMatch \"\\.gz$\">\nRequire all denied\n</FilesMatch>\n",
        "<Files \"hidden.html\">\nRequire all denied\n</Files>\n",
    ]
    .concat();
    let a = start_with(server, vec![], |d| {
        publish(d, "f/fx.html", &data, true, &[".gz"]);
        publish(d, "f/fm.html", &data, true, &[".gz"]);
        publish(d, "lx/page.html", &data, true, &[".gz"]);
        publish(d, "lend/page.html", &data, true, &[".gz"]);
        publish(d, "f/hidden.html", &data, true, &[".gz"]);
        put(d, "f/other.html", &data);
        put(d, "f/other.html.gz", &gzip(&other));
    });
    for uri in [
        "/f/fx.html",
        "/f/fm.html",
        "/lx/page.html",
        "/lend/page.html",
    ] {
        let direct = a.get(&format!("{uri}.gz"), None).status;
        assert_eq!(direct, 403, "{uri}: Apache refuses the sibling's own GET");
        let r = a.get(uri, Some("gzip"));
        assert_eq!((r.status, r.coding()), (200, Some("gzip")), "{uri}");
        assert_eq!(r.decoded(), data, "{uri}");
    }
    assert!(
        !a.module_log()
            .iter()
            .any(|l| l.contains("refused by the access rules")),
        "a sibling of an existing original was asked: {:?}",
        a.module_log()
    );
    // The page's own rules still decide.
    let r = a.get("/f/hidden.html", Some("gzip"));
    assert_eq!((r.status, r.coding()), (403, None));
    // A sibling of other content than its original: never sent.
    let r = a.get("/f/other.html", Some("gzip"));
    assert_eq!((r.status, r.coding()), (200, None));
    assert_eq!(r.body, data);
    a.assert_no_crash();
}

/// Starts Apache with extra server-level lines and modules.
fn start_with(server: String, modules: Vec<&'static str>, fill: impl FnOnce(&Path)) -> Apache {
    Apache::start(
        Options {
            server,
            modules,
            ..Default::default()
        },
        fill,
    )
}

#[test]
fn require_looking_at_the_file_name_is_asked() {
    let data = page(5_000, 3);
    let a = start_with(
        subdir("expr", "Require expr \"%{REQUEST_FILENAME} !~ /\\.gz$/\""),
        vec![],
        |d| {
            publish(d, "expr/x.html", &data, false, &[".gz"]);
            publish(d, "expr/y.html", &data, false, &[".gz", ".zst"]);
            publish(d, "plain.html", &data, false, &[".gz"]);
        },
    );
    assert_eq!(a.get("/expr/x.html", Some("gzip")).status, 404);
    assert_eq!(a.get("/expr/x.html", None).status, 404);
    let r = a.get("/expr/y.html", Some("gzip"));
    assert_eq!((r.status, r.coding()), (200, None), "decoded from .zst");
    assert_eq!(r.body, data);
    let r = a.get("/plain.html", Some("gzip"));
    assert_eq!((r.status, r.coding()), (200, Some("gzip")));
    assert!(refusal_logged(&a, "x.html.gz"));
}

#[test]
fn subrequests_get_identity() {
    let nav = b"<nav>plain navigation text</nav>\n".repeat(40);
    let a = Apache::start(
        Options {
            dir: "SetHandler gzip-disk-ng\nOptions +Includes\nAddOutputFilter INCLUDES .shtml"
                .into(),
            modules: vec!["include", "dir"],
            server: "DirectoryIndex index.html\n".into(),
            ..Default::default()
        },
        |d| {
            publish(d, "nav.html", &nav, false, &[".gz", ".br"]);
            publish(d, "both.html", &nav, true, &[".gz"]);
            fs::write(
                d.join("page.shtml"),
                "<html><!--#include virtual=\"nav.html\" -->|<!--#include virtual=\"both.html\" --></html>",
            )
            .unwrap();
            publish(d, "sub/index.html", &nav, false, &[".gz"]);
        },
    );
    let want = [
        b"<html>".as_slice(),
        &nav,
        b"|".as_slice(),
        &nav,
        b"</html>".as_slice(),
    ]
    .concat();
    for ae in [Some("gzip, br, zstd"), Some("gzip"), None] {
        let r = a.get("/page.shtml", ae);
        assert_eq!(r.status, 200);
        assert_eq!(r.coding(), None);
        assert_eq!(
            String::from_utf8_lossy(&r.body),
            String::from_utf8_lossy(&want),
            "with {ae:?}"
        );
    }
    // mod_dir's index lookup is a subrequest too, fast-redirected: the
    // main request still negotiates.
    let r = a.get("/sub/", Some("gzip"));
    assert_eq!((r.status, r.coding()), (200, Some("gzip")));
    a.assert_no_crash();
}

#[test]
fn file_etag_is_honoured() {
    let data = page(8_000, 5);
    let a = start_with(
        [
            subdir("none", "FileETag None"),
            subdir("ms", "FileETag MTime Size"),
        ]
        .concat(),
        vec![],
        |d| {
            publish(d, "none/a.html", &data, true, &[".gz"]);
            publish(d, "none/b.html", &data, false, &[".zst"]);
            publish(d, "ms/a.html", &data, true, &[".gz"]);
        },
    );
    for (path, ae) in [
        ("/none/a.html", None),
        ("/none/a.html", Some("gzip")),
        ("/none/b.html", Some("zstd")),
        ("/none/b.html", None),
    ] {
        let r = a.get(path, ae);
        assert_eq!(r.status, 200, "{path} {ae:?}");
        assert!(r.header("ETag").is_none(), "{path} {ae:?}: {:?}", r.headers);
        let lm = r
            .header("Last-Modified")
            .expect("Last-Modified")
            .to_string();
        let mut args = vec!["-H".to_string(), format!("If-Modified-Since: {lm}")];
        if let Some(ae) = ae {
            args.extend(["-H".to_string(), format!("Accept-Encoding: {ae}")]);
        }
        let r = curl(&a.url(path), &args);
        assert_eq!(r.status, 304, "{path} {ae:?} revalidates by date");
    }
    let orig = a.get("/ms/a.html", None);
    let gz = a.get("/ms/a.html", Some("gzip"));
    let ot = orig.header("ETag").expect("etag").to_string();
    let gt = gz.header("ETag").expect("etag").to_string();
    // Core's MTime Size tag: "<size hex>-<mtime hex>".
    let size_hex = format!("{:x}", data.len());
    assert!(
        ot.starts_with(&format!("\"{size_hex}-")) && ot.ends_with('"'),
        "{ot}"
    );
    assert_eq!(ot.matches('-').count(), 1, "no inode part: {ot}");
    assert!(gt.starts_with('"') && gt.ends_with("-gzip\""), "{gt}");
    assert_eq!(gt.matches('-').count(), 2, "{gt}");
}

/// The validators made once per file version and configuration
/// (`memo::validators`) are core's on every request: one file reached
/// under two FileETag settings keeps each one's tag however often either
/// is asked, and a file changed within the second gets core's weak tag,
/// strong once it is a second old.
#[test]
fn validators_follow_file_etag_and_the_second() {
    let data = page(8_000, 5);
    let server = format!(
        "{}Alias /inode {{docroot}}/ms\n<Location /inode>\nFileETag INode MTime Size\n</Location>\n",
        subdir("ms", "FileETag MTime Size")
    );
    let a = start_with(server, vec!["alias"], |d| {
        publish(d, "ms/a.html", &data, true, &[".gz"]);
    });
    let tag = |path: &str, ae: Option<&str>| {
        let r = a.get(path, ae);
        assert_eq!(r.status, 200, "{path} {ae:?}");
        r.header("ETag").expect("etag").to_string()
    };
    for round in 0..3 {
        for ae in [None, Some("gzip")] {
            let (ms, inode) = (tag("/ms/a.html", ae), tag("/inode/a.html", ae));
            let dashes = usize::from(ae.is_some());
            assert_eq!(
                ms.matches('-').count(),
                1 + dashes,
                "round {round} {ae:?}: {ms}"
            );
            assert_eq!(
                inode.matches('-').count(),
                2 + dashes,
                "round {round} {ae:?}: {inode}"
            );
            assert!(
                inode.ends_with(&ms[ms.find('-').expect("dash")..]),
                "{inode} {ms}"
            );
        }
    }
    for name in ["ms/a.html", "ms/a.html.gz"] {
        set_mtime(&a.docroot.join(name), std::time::SystemTime::now());
    }
    let fresh = tag("/ms/a.html", Some("gzip"));
    assert!(
        fresh.starts_with("W/\"") && fresh.ends_with("-gzip\""),
        "{fresh}"
    );
    std::thread::sleep(Duration::from_millis(1_100));
    for _ in 0..2 {
        let settled = tag("/ms/a.html", Some("gzip"));
        assert!(
            settled.starts_with('"') && settled.ends_with("-gzip\""),
            "{settled}"
        );
        assert_eq!(
            settled,
            format!("{}", &fresh[2..]),
            "the same version, strong"
        );
    }
    a.assert_no_crash();
}

fn details_server() -> (Apache, Vec<u8>) {
    let data = page(30_000, 9);
    let a = Apache::start(one_child(), |d| {
        publish(d, "br.html", &data, false, &[".br"]);
        // Past what is decoded whole before the headers (1 MiB): length
        // unknown until decoded.
        publish(d, "bigbr.html", &page(1_200_000, 9), false, &[".br"]);
        publish(d, "p.html", &data, true, &[".gz", ".br"]);
        publish(d, "stale.html", &data, true, &[".gz"]);
        set_mtime(
            &d.join("stale.html.gz"),
            std::time::SystemTime::now() - Duration::from_secs(1000),
        );
    });
    (a, data)
}

#[test]
fn head_of_unknown_length_has_no_content_length() {
    let (a, _) = details_server();
    // A body ending within the first decoded chunk has a certain length.
    let small = a.request("/br.html", &["-I"]);
    assert_eq!(small.header("Content-Length"), Some("30000"));
    let head = raw(
        &a,
        "HEAD /bigbr.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    let text = String::from_utf8_lossy(&head).to_lowercase();
    assert!(text.starts_with("http/1.1 200"), "{text}");
    assert!(
        text.contains("mod-gzip-disk-ng: :-("),
        "decompressed: {text}"
    );
    assert!(!text.contains("content-length"), "{text}");
    assert!(text.ends_with("\r\n\r\n"), "HEAD sent a body: {text}");
    // HTTP/2 keeps a Content-Length of 0 that HTTP/1.1 drops: none is made.
    let r = a.request("/bigbr.html", &["--http2-prior-knowledge", "-I"]);
    assert_eq!((r.status, r.http_version.as_str()), (200, "HTTP/2"));
    assert_eq!(r.header("Content-Length"), None, "{:?}", r.headers);
}

#[test]
fn identity_preferred_by_q_gets_the_original() {
    let (a, data) = details_server();
    let r = a.get("/p.html", Some("gzip;q=0.1, identity"));
    assert_eq!((r.status, r.coding()), (200, None));
    assert_eq!(r.body, data);
    let r = a.get("/p.html", Some("gzip;q=0.5, br;q=0.9, identity;q=0.7"));
    assert_eq!(r.coding(), Some("br"));
    let r = a.get("/p.html", Some("gzip;q=0.5, identity;q=0.5"));
    assert_eq!(r.coding(), Some("gzip"), "equal q keeps the server's order");
}

#[test]
fn range_not_satisfiable_keeps_vary() {
    let (a, _) = details_server();
    for ae in ["gzip", "identity"] {
        let h = format!("Accept-Encoding: {ae}");
        // A coded representation's range counts under If-Range only.
        let tag = a
            .request("/p.html", &["-H", &h])
            .header("ETag")
            .unwrap()
            .to_owned();
        let if_range = format!("If-Range: {tag}");
        let r = a.request(
            "/p.html",
            &["-H", &h, "-H", "Range: bytes=99999999-", "-H", &if_range],
        );
        assert_eq!(r.status, 416);
        assert!(
            r.tokens("Vary")
                .iter()
                .any(|v| v.eq_ignore_ascii_case("accept-encoding")),
            "{ae}: {:?}",
            r.headers
        );
    }
}

#[test]
fn stale_warning_once_per_version() {
    let (a, _) = details_server();
    for _ in 0..20 {
        assert_eq!(a.get("/stale.html", Some("gzip")).status, 200);
    }
    let warns = a
        .error_log()
        .lines()
        .filter(|l| l.contains("[gzip_disk_ng:warn]") && l.contains("stale"))
        .count();
    assert_eq!(warns, 1, "{}", a.error_log());
}

/// GETs `path` on one keep-alive connection until `deadline`; returns the
/// bodies of 200 responses that are none of `want` (and the count sent).
fn hammer(
    port: u16,
    path: &str,
    ae: &str,
    want: &[Vec<u8>],
    deadline: Instant,
) -> (Vec<Vec<u8>>, usize) {
    let mut bad = vec![];
    let mut n = 0;
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nAccept-Encoding: {ae}\r\n\r\n");
    let mut buf = vec![];
    while Instant::now() < deadline {
        if s.write_all(req.as_bytes()).is_err() {
            s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            continue;
        }
        n += 1;
        match read_response(&mut s, &mut buf) {
            Some((200, body)) if !want.contains(&body) => bad.push(body),
            Some(_) => {}
            None => {
                s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            }
        }
    }
    (bad, n)
}

/// Reads one response with a Content-Length body (None when the
/// connection closes or the response has no length).
fn read_response(s: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(u16, Vec<u8>)> {
    let mut tmp = [0u8; 8192];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = s.read(&mut tmp).ok().filter(|&n| n > 0)?;
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
    let status: u16 = head.get(9..12)?.parse().ok()?;
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())?;
    while buf.len() < end + len {
        let n = s.read(&mut tmp).ok().filter(|&n| n > 0)?;
        buf.extend_from_slice(&tmp[..n]);
    }
    let body = buf[end..end + len].to_vec();
    buf.drain(..end + len);
    Some((status, body))
}

#[test]
fn symlink_swapped_in_after_the_check_is_not_served() {
    let data = page(4_000, 11);
    let secret = world_readable_tempdir();
    let secret_file = secret.path().join("secret.gz");
    fs::write(&secret_file, gzip(b"TOP SECRET CONTENT")).unwrap();
    let a = Apache::start(
        Options {
            dir: "SetHandler gzip-disk-ng\nOptions -FollowSymLinks".into(),
            ..Default::default()
        },
        |d| publish(d, "x.html", &data, false, &[".gz"]),
    );
    let docs = a.docroot.clone();
    let gz = gzip(&data);
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let docs = docs.clone();
        let gz = gz.clone();
        std::thread::spawn(move || {
            let target = docs.join("x.html.gz");
            let (tmp_l, tmp_f) = (docs.join(".l"), docs.join(".f"));
            while !stop.load(Ordering::Relaxed) {
                let _ = fs::remove_file(&tmp_l);
                symlink(&secret_file, &tmp_l).unwrap();
                fs::rename(&tmp_l, &target).unwrap();
                fs::write(&tmp_f, &gz).unwrap();
                fs::rename(&tmp_f, &target).unwrap();
            }
        })
    };
    let deadline = Instant::now() + Duration::from_secs(4);
    let port = a.port;
    let clients: Vec<_> = (0..2)
        .map(|_| {
            // The sibling as published, or (when it was refused at one
            // step and usable at the next) its decoded content.
            let want = vec![gz.clone(), data.clone()];
            std::thread::spawn(move || hammer(port, "/x.html", "gzip", &want, deadline))
        })
        .collect();
    let mut sent = 0;
    for c in clients {
        let (bad, n) = c.join().unwrap();
        sent += n;
        assert!(
            bad.is_empty(),
            "{} of {n} responses were not the published file (symlink target served?): {:?}",
            bad.len(),
            String::from_utf8_lossy(&bad[0][..bad[0].len().min(100)])
        );
    }
    let r = a.get("/x.html", None);
    assert!(!r.body.windows(6).any(|w| w == b"SECRET"));
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(sent > 100, "only {sent} requests");
    a.assert_no_crash();
}

#[test]
fn location_wildcards_htaccess_and_authentication_apply_to_siblings() {
    let data = page(6_000, 13);
    let root = world_readable_tempdir();
    let users = root.path().join("users");
    let out = std::process::Command::new("htpasswd")
        .args(["-nbB", "alice", "secret"])
        .output()
        .unwrap();
    assert!(out.status.success());
    fs::write(&users, &out.stdout).unwrap();
    let server = [
        "<Location \"/plain/x.html.gz\">\nRequire all denied\n</Location>\n".to_string(),
        subdir("wild", "<Files \"*.gz\">\nRequire all denied\n</Files>"),
        subdir("ht", "AllowOverride AuthConfig"),
        subdir(
            "auth",
            &format!(
                "AuthType Basic\nAuthName gz\nAuthUserFile {}\n\
                 <Files \"*.gz\">\nRequire valid-user\n</Files>",
                users.display()
            ),
        ),
    ]
    .concat();
    let a = start_with(
        server,
        vec!["auth_basic", "authn_core", "authn_file", "authz_user"],
        |d| {
            for dir in ["plain", "wild", "ht", "auth"] {
                publish(d, &format!("{dir}/x.html"), &data, false, &[".gz"]);
            }
            publish(d, "plain/y.html", &data, false, &[".gz"]);
            fs::write(
                d.join("ht/.htaccess"),
                "Require expr \"%{REQUEST_FILENAME} !~ /\\.gz$/\"\n",
            )
            .unwrap();
        },
    );
    // <Location> by prefix, <Files> by wildcard, .htaccess Require.
    for dir in ["plain", "wild", "ht"] {
        let r = a.get(&format!("/{dir}/x.html"), Some("gzip"));
        assert_eq!(r.status, 404, "{dir}: {:?}", r.headers);
    }
    let r = a.get("/plain/y.html", Some("gzip"));
    assert_eq!((r.status, r.coding()), (200, Some("gzip")));
    // A sibling that needs a login: absent without one, served with one.
    assert_eq!(a.get("/auth/x.html", Some("gzip")).status, 404);
    let r = a.request(
        "/auth/x.html",
        &["-u", "alice:secret", "-H", "Accept-Encoding: gzip"],
    );
    assert_eq!((r.status, r.coding()), (200, Some("gzip")));
    let r = a.request(
        "/auth/x.html",
        &["-u", "alice:wrong", "-H", "Accept-Encoding: gzip"],
    );
    assert_eq!(r.status, 404);
    a.assert_no_crash();
}

/// What httpd skips for a subrequest applies to a sibling's check, which
/// is its own request: mod_rewrite's `[R]` and `[NS]` rules, the client's
/// protocol (a subrequest's is `INCLUDED`), and an environment the page's
/// own rules set (here without mod_setenvif) does not reach the sibling.
#[test]
fn rules_subrequests_skip_apply_to_siblings() {
    let data = page(5_000, 11);
    let server = [
        subdir("redir", "RewriteEngine On\nRewriteRule \\.gz$ /x [R,L]"),
        subdir("ns", "RewriteEngine On\nRewriteRule \\.gz$ - [F,NS]"),
        subdir(
            "proto",
            "<Files \"*.gz\">\nRequire expr \"%{SERVER_PROTOCOL} != 'HTTP/1.0'\"\n</Files>",
        ),
        "RewriteEngine On\nRewriteRule \\.html$ - [E=ok:1]\n".into(),
        subdir("env", "<Files \"*.gz\">\nRequire env ok\n</Files>"),
    ]
    .concat();
    let a = start_with(server, vec!["rewrite", "authz_host"], |d| {
        for dir in ["redir", "ns", "proto", "env"] {
            publish(d, &format!("{dir}/p.html"), &data, false, &[".gz"]);
        }
    });
    for dir in ["redir", "ns", "env"] {
        let direct = a.get(&format!("/{dir}/p.html.gz"), None).status;
        assert_ne!(direct, 200, "{dir}: the direct GET is refused");
        let r = a.get(&format!("/{dir}/p.html"), Some("gzip"));
        assert_eq!(r.status, 404, "{dir}");
    }
    let r = a.request(
        "/proto/p.html",
        &["--http1.0", "-H", "Accept-Encoding: gzip"],
    );
    assert_eq!(r.status, 404, "HTTP/1.0 refused the .gz");
    let r = a.request("/proto/p.html", &["-H", "Accept-Encoding: gzip"]);
    assert_eq!(
        (r.status, r.coding()),
        (200, Some("gzip")),
        "HTTP/1.1 may get it"
    );
    a.assert_no_crash();
}

/// A section that configures mod_ssl on a page's path makes the answers
/// asked of Apache there the client's own (`Cache-Control: private`):
/// mod_ssl's `SSLRequire` and `SSLVerifyClient` judge the certificate
/// on the very connection a twin runs on, and the module reads no
/// record of mod_ssl's. `SSLOptions` stands in for them here, as
/// Debian's default-ssl.conf writes it for scripts: any of mod_ssl's
/// directives gives the path a record of mod_ssl's own. The same asked
/// sibling elsewhere stays shared.
#[test]
fn mod_ssl_configured_on_a_path_makes_its_asked_answers_private() {
    let data = page(5_000, 4);
    let asked = "<Files \"x.html.gz\">\nRequire all granted\n</Files>";
    let server = [
        subdir("tls", &format!("SSLOptions +StdEnvVars\n{asked}")),
        subdir("plain", asked),
    ]
    .concat();
    let a = start_with(server, vec!["ssl"], |d| {
        publish(d, "tls/x.html", &data, false, &[".gz"]);
        publish(d, "plain/x.html", &data, false, &[".gz"]);
    });
    let private = |r: &Response| r.tokens("Cache-Control").contains(&"private".into());
    let r = a.get("/tls/x.html", Some("gzip"));
    assert_eq!((r.status, r.coding()), (200, Some("gzip")));
    assert!(private(&r), "{:?}: {:?}", r.headers, a.module_log());
    let r = a.get("/plain/x.html", Some("gzip"));
    assert_eq!((r.status, r.coding()), (200, Some("gzip")));
    assert!(!private(&r), "{:?}", r.headers);
}

/// A self-signed client certificate for `cn` in `dir`: its and its key's
/// paths.
fn client_cert(dir: &Path, cn: &str) -> (String, String) {
    let (cert, key) = (dir.join(format!("{cn}.pem")), dir.join(format!("{cn}.key")));
    let st = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args(["-subj", &format!("/CN={cn}"), "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl");
    assert!(st.status.success(), "{st:?}");
    for f in [&cert, &key] {
        fs::set_permissions(f, std::os::unix::fs::PermissionsExt::from_mode(0o644)).expect("chmod");
    }
    (cert.display().to_string(), key.display().to_string())
}

/// One TLS 1.2 request over HTTP/1.1 with gzip accepted, with a client
/// certificate or none: curl's exit status and the HTTP status.
fn tls12_get(port: u16, path: &str, cert: Option<&(String, String)>) -> (i32, String) {
    let mut c = std::process::Command::new("curl");
    c.args([
        "-sS",
        "-k",
        "--max-time",
        "20",
        "--http1.1",
        "--tls-max",
        "1.2",
    ])
    .args([
        "-H",
        "Accept-Encoding: gzip",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
    ]);
    if let Some((cert, key)) = cert {
        c.args(["--cert", cert, "--key", key]);
    }
    let out = c
        .arg(format!("https://127.0.0.1:{port}{path}"))
        .output()
        .expect("curl");
    let code = out.status.code().unwrap_or(-1);
    (code, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// mod_ssl's `SSLVerifyClient require` in a section asks the client for
/// a certificate again, from its access hook, on the request's own
/// connection (a TLS 1.2 renegotiation; TLS 1.3 post-handshake
/// authentication). A sibling whose own request would do that is not
/// asked of Apache: the client that asked for its page is not asked for
/// a certificate, and is answered as Apache alone answers (here a 404:
/// only the `.gz` is published). The sibling's own GET does renegotiate
/// and is answered by what the client then sends, so the mechanism is
/// real.
#[test]
fn a_sibling_whose_own_request_would_renegotiate_is_not_asked() {
    let certs = world_readable_tempdir();
    let (cert, key) = make_cert(certs.path());
    let alice = client_cert(certs.path(), "alice");
    let a = start_with(
        format!(
            "SSLEngine on\nSSLCertificateFile {cert}\nSSLCertificateKeyFile {key}\n\
             SSLCACertificateFile {}\nSSLVerifyDepth 1\n\
             <Files \"*.gz\">\nSSLVerifyClient require\n</Files>\n",
            alice.0
        ),
        vec!["ssl"],
        |d| publish(d, "x.html", &page(6_000, 3), false, &[".gz"]),
    );
    let renegotiations = || {
        a.error_log()
            .lines()
            .filter(|l| l.contains("AH02221"))
            .count()
    };
    for cert in [None, Some(&alice)] {
        let before = renegotiations();
        assert_eq!(
            tls12_get(a.port, "/x.html", cert),
            (0, "404".into()),
            "{cert:?}"
        );
        assert_eq!(renegotiations(), before, "the page's request renegotiated");
    }
    assert!(refusal_logged(&a, "x.html.gz"), "{:?}", a.module_log());
    // Stopped before its access hooks: mod_ssl's never ran for it.
    assert!(
        !a.module_log_about("mod_ssl configured otherwise")
            .is_empty(),
        "{:?}",
        a.module_log()
    );
    assert_eq!(
        tls12_get(a.port, "/x.html.gz", Some(&alice)),
        (0, "200".into())
    );
    assert!(renegotiations() > 0, "the sibling's own GET renegotiates");
    assert_ne!(tls12_get(a.port, "/x.html.gz", None).1, "200");
    let r = tls12_get(a.port, "/x.html", None);
    assert_eq!(r, (0, "404".into()), "the next request works");
    a.assert_no_crash();
}

/// mod_remoteip takes the client's address from a trusted proxy's
/// `X-Forwarded-For` and removes the header as it does, before every
/// other hook: a sibling's own request, asked of Apache, is the
/// forwarded client's, and a rule on that address refuses it there as
/// on a direct GET.
#[test]
fn a_forwarded_clients_sibling_is_judged_by_its_forwarded_address() {
    let data = page(6_000, 5);
    let a = start_with(
        "RemoteIPHeader X-Forwarded-For\nRemoteIPInternalProxy 127.0.0.1\n\
         <Files \"*.gz\">\n<RequireAll>\nRequire all granted\nRequire not ip 10.9.8.7\n\
         </RequireAll>\n</Files>\n"
            .into(),
        vec!["remoteip", "authz_host"],
        |d| publish(d, "x.html", &data, false, &[".gz"]),
    );
    let get = |path: &str, from: &str| {
        let xff = format!("X-Forwarded-For: {from}");
        a.request(path, &["-H", "Accept-Encoding: gzip", "-H", &xff])
    };
    let direct = get("/x.html.gz", "10.9.8.7");
    assert_eq!(direct.status, 403, "Apache refuses the forwarded client");
    let r = get("/x.html", "10.9.8.7");
    assert_ne!(
        (r.status, r.coding()),
        (200, Some("gzip")),
        "{:?}",
        a.module_log()
    );
    assert_eq!(get("/x.html.gz", "10.1.1.1").status, 200);
    let r = get("/x.html", "10.1.1.1");
    assert_eq!(
        (r.status, r.coding()),
        (200, Some("gzip")),
        "another client gets it"
    );
    a.assert_no_crash();
}

/// A Lua access hook that reads the request's form body (whatever the
/// method: `ap_parse_form_data`) and refuses one whose `x` is "attack".
const BODY_CHECK: &str = "require 'apache2'\n\
    function check(r)\n\
    local form = r:parsebody()\n\
    if form and form['x'] == 'attack' then return 403 end\n\
    return apache2.DECLINED\n\
    end\n";

/// A request's body is read once, by the request's own input filters. A
/// sibling's twin, run on the client's connection, reads its own (none)
/// through HTTP_IN, and is not asked for a request that has one: a
/// module's access hook that reads the body (mod_lua's here) would read
/// the connection's bytes, the next request's or a wait for bytes that
/// never come. The sibling, the only file, is then not sent; the next
/// request on the connection is answered as its own.
#[test]
fn a_sibling_is_not_asked_for_a_request_with_a_body() {
    let data = page(6_000, 7);
    let a = start_with(
        "LuaHookAccessChecker {docroot}/check.lua check\n".into(),
        vec!["lua"],
        |d| {
            publish(d, "x.html", &data, false, &[".gz"]);
            put(d, "check.lua", BODY_CHECK.as_bytes());
        },
    );
    let with_body = |path: &str, text: &str| {
        let args = ["-H", "Accept-Encoding: gzip", "-X", "GET", "--data", text];
        a.request(path, &[&args[..], &["--max-time", "10"]].concat())
    };
    // Apache's own answers for the sibling's URI: the hook reads bodies.
    assert_eq!(with_body("/x.html.gz", "x=attack").status, 403);
    assert_eq!(with_body("/x.html.gz", "x=hello").status, 200);
    assert_eq!(with_body("/x.html", "x=attack").status, 403);
    let started = Instant::now();
    let r = with_body("/x.html", "x=hello");
    assert_eq!(r.status, 404, "{:?}", a.module_log());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "answered at once"
    );
    assert_eq!(
        a.module_log_about("has a body").len(),
        1,
        "{:?}",
        a.module_log()
    );
    // Two requests on one connection: the second is answered as its own.
    let mut s = TcpStream::connect(("127.0.0.1", a.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(8))).unwrap();
    let two = "GET /x.html HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\
               Content-Type: application/x-www-form-urlencoded\r\n\
               Content-Length: 7\r\n\r\nx=helloGET /x.html.gz HTTP/1.1\r\nHost: x\r\n\r\n";
    s.write_all(two.as_bytes()).unwrap();
    let mut buf = vec![];
    let first = read_response(&mut s, &mut buf).map(|r| r.0);
    let second = read_response(&mut s, &mut buf).map(|(st, b)| (st, b.len()));
    assert_eq!(first, Some(404));
    assert_eq!(second, Some((200, fs_len(&a, "x.html.gz"))));
    // Without a body the sibling is asked, and the hook's read of the
    // twin's body (a discard: no form) ends at once.
    let started = Instant::now();
    let r = a.get("/x.html", Some("gzip"));
    assert_eq!(
        (r.status, r.coding()),
        (200, Some("gzip")),
        "without a body"
    );
    assert!(started.elapsed() < Duration::from_secs(5), "at once");
    a.assert_no_crash();
}

/// The size of a file of the document root.
fn fs_len(a: &Apache, name: &str) -> usize {
    fs::metadata(a.docroot.join(name)).map_or(0, |m| m.len() as usize)
}

/// A sibling that mod_mime gives a script's type on its own name (an
/// `AddType application/x-httpd-php .html` in a `<Files "*.br">`) is
/// refused by the module's handler on its own request, as a script it
/// must not send as source: its page does not send it either.
#[test]
fn a_sibling_of_a_scripts_type_on_its_own_name_is_not_sent() {
    let data = page(6_000, 8);
    let a = start_with(
        "RewriteEngine On\n<Files \"*.br\">\nAddType application/x-httpd-php .html\n</Files>\n"
            .into(),
        vec!["rewrite"],
        |d| publish(d, "x.html", &data, false, &[".br", ".gz"]),
    );
    assert_eq!(
        a.get("/x.html.br", Some("br")).status,
        500,
        "its own request"
    );
    let r = a.get("/x.html", Some("br"));
    assert_ne!(r.coding(), Some("br"), "{:?}", a.module_log());
    let r = a.get("/x.html", Some("br, gzip"));
    assert_eq!(
        (r.status, r.coding()),
        (200, Some("gzip")),
        "the other sibling"
    );
    assert!(a
        .module_log_about("a script's type application/x-httpd-php")
        .iter()
        .any(|l| l.contains("x.html.br")));
    a.assert_no_crash();
}

/// HTTP Digest credentials sign the request's own URI (RFC 7616's
/// `uri=`, which mod_auth_digest compares with the request line), so no
/// twin can carry a sibling's: a sibling without its original is not
/// asked for such a request, and nothing is logged as a forged request
/// of the client's; the page gets Apache's own answer for its URI. A
/// sibling of an existing original, verified, is sent as ever.
#[test]
fn a_sibling_is_not_asked_with_digest_credentials() {
    let data = page(6_000, 8);
    let a = start_with(
        "<Location \"/\">\nAuthType Digest\nAuthName realm\n\
         AuthUserFile {docroot}/../digest\nRequire valid-user\n</Location>\n"
            .into(),
        vec!["auth_digest", "authn_core", "authn_file", "authz_user"],
        |d| {
            publish(d, "only.html", &data, false, &[".gz"]);
            publish(d, "page.html", &data, true, &[".gz"]);
            let md5 = std::process::Command::new("sh")
                .args(["-c", "printf %s alice:realm:apw | md5sum"])
                .output()
                .expect("md5sum");
            let hash = String::from_utf8_lossy(&md5.stdout);
            let line = format!("alice:realm:{}\n", hash.split(' ').next().unwrap_or(""));
            fs::write(d.parent().unwrap().join("digest"), line).unwrap();
        },
    );
    let get = |path: &str| {
        let args = ["--digest", "-u", "alice:apw", "-H", "Accept-Encoding: gzip"];
        a.request(path, &args)
    };
    assert_eq!(get("/only.html.gz").status, 200, "{}", a.error_log());
    assert_eq!(a.get("/only.html", Some("gzip")).status, 401);
    assert_eq!(get("/only.html").status, 404, "{:?}", a.module_log());
    assert_eq!(
        a.module_log_about("Digest credentials").len(),
        1,
        "{:?}",
        a.module_log()
    );
    assert!(!a.error_log().contains("AH01786"), "{}", a.error_log());
    let r = get("/page.html");
    assert_eq!((r.status, r.coding()), (200, Some("gzip")));
    assert_eq!(r.decoded(), data);
    a.assert_no_crash();
}

/// A twin is no request of the client's, so what its hooks log is not
/// written as the client's: a sibling refused under its own name leaves
/// no "client denied by server configuration" (which fail2ban's
/// apache-auth filter counts against the client), only the module's
/// debug line. The client's own GET of that name is logged as ever.
#[test]
fn a_twins_refusal_is_not_logged_as_the_clients() {
    let data = page(6_000, 9);
    let a = start_with(
        "RewriteEngine On\n<Files \"x.html.gz\">\nRequire all denied\n</Files>\n".into(),
        vec!["rewrite"],
        |d| {
            publish(d, "x.html", &data, false, &[".gz"]);
            publish(d, "y.html", &data, false, &[".gz"]);
        },
    );
    let denials = || a.error_log().matches("AH01630").count();
    assert_eq!(a.get("/x.html", Some("gzip")).status, 404);
    assert!(refusal_logged(&a, "x.html.gz"), "{:?}", a.module_log());
    assert_eq!(denials(), 0, "{}", a.error_log());
    assert_eq!(a.get("/y.html", Some("gzip")).coding(), Some("gzip"));
    assert_eq!(a.get("/x.html.gz", None).status, 403);
    wait_for("the client's own denial logged", || denials() == 1);
    a.assert_no_crash();
}

//! The `GZIP_DISK_NG` output filter on responses no file holds, against
//! real engines: PHP-FPM through mod_proxy_fcgi, a CGI, a mod_proxy_http
//! backend (one that codes some responses itself), and a server-sent
//! events stream. Every body is decoded by an independent decoder and
//! compared with what the handler made; what steps aside (a coded body,
//! `no-transform`, images, small bodies, `no-gzip`) goes out as it is.

mod common;

use common::*;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// What every page script prints: long enough to be worth coding, and
/// the same bytes whatever the request (the test compares them).
fn page_text() -> String {
    let mut s = String::from("<!DOCTYPE html><html><head><title>Dynamic</title></head><body>\n");
    for i in 0..400 {
        s += &format!(
            "<p class=\"row\">Row {i}: the Apache HTTP Server documentation, rendered.</p>\n"
        );
    }
    s + "</body></html>\n"
}

/// A PHP page printing `page_text()`, and the small and special ones.
fn php_pages(d: &Path) {
    let page = page_text().replace('\\', "\\\\").replace('\'', "\\'");
    fs::write(d.join("page.php"), format!("<?php echo '{page}';")).expect("page.php");
    fs::write(d.join("small.php"), "<?php echo 'short';").expect("small.php");
    fs::write(
        d.join("nt.php"),
        format!("<?php header('Cache-Control: no-transform'); echo '{page}';"),
    )
    .expect("nt.php");
    fs::write(
        d.join("png.php"),
        format!("<?php header('Content-Type: image/png'); echo '{page}';"),
    )
    .expect("png.php");
    fs::write(
        d.join("etag.php"),
        format!("<?php header('ETag: \"v1\"'); echo '{page}';"),
    )
    .expect("etag.php");
}

const ASKED: [(Option<&str>, Option<&str>); 7] = [
    (Some("gzip, deflate, br, zstd"), Some("zstd")),
    (Some("br"), Some("br")),
    (Some("gzip"), Some("gzip")),
    (Some("gzip;q=0.5, br;q=0.8"), Some("br")),
    (Some("identity"), None),
    (Some("gzip;q=0.5, identity"), None),
    (None, None),
];

/// Apache (event) running `.php` through `fpm`, the filter on by type.
fn fpm_site(fpm: &Fpm, extra: &str) -> Options {
    Options {
        dir: format!(
            "<FilesMatch \"\\.php$\">\n    SetHandler \"{}\"\n</FilesMatch>\n\
             AddOutputFilterByType GZIP_DISK_NG text/html image/png\n{extra}",
            fpm.handler()
        ),
        modules: vec!["proxy", "proxy_fcgi", "filter", "setenvif"],
        ..Options::default()
    }
}

/// Checks one coded (or not) response of `want` bytes.
fn assert_served(r: &Response, want: &[u8], coding: Option<&str>, what: &str) {
    assert_eq!(r.status, 200, "{what}");
    assert_eq!(r.coding(), coding, "{what}");
    assert_eq!(
        r.decoded(),
        want,
        "{what}: decodes to what the handler made"
    );
    if coding.is_some() {
        assert!(r.body.len() * 4 < want.len(), "{what}: coded smaller");
        if let Some(n) = r.header("Content-Length") {
            assert_eq!(n, r.body.len().to_string(), "{what}: the coded length");
        }
        assert_eq!(r.header("Mod-Gzip-Disk-Ng"), Some(":-)"), "{what}: marked");
    }
}

#[test]
fn php_fpm_pages_are_coded_as_the_client_asks() {
    let run = world_readable_tempdir();
    let Some(fpm) = Fpm::start(run.path()) else {
        panic!("php-fpm is installed by scripts/test");
    };
    let a = Apache::start(fpm_site(&fpm, ""), php_pages);
    let want = page_text().into_bytes();
    for (ae, coding) in ASKED {
        for h2 in [false, true] {
            let mut extra = vec![];
            if let Some(ae) = ae {
                extra.push(format!("Accept-Encoding: {ae}"));
            }
            let mut args: Vec<&str> = extra.iter().flat_map(|h| ["-H", h.as_str()]).collect();
            if h2 {
                args.push("--http2-prior-knowledge");
            }
            let r = a.request("/page.php", &args);
            let what = format!("{ae:?} h2={h2}");
            assert_served(&r, &want, coding, &what);
            assert!(
                r.tokens("Vary").iter().any(|v| v == "Accept-Encoding"),
                "{what}: varies"
            );
            assert_eq!(
                r.http_version.contains('2'),
                h2,
                "{what}: {}",
                r.http_version
            );
        }
    }
    assert!(
        a.access_log()
            .contains("/page.php HTTP/1.1 200 zstd dynamic"),
        "the log note"
    );
    a.assert_no_crash();
}

#[test]
fn what_steps_aside_goes_out_as_the_handler_made_it() {
    let run = world_readable_tempdir();
    let Some(fpm) = Fpm::start(run.path()) else {
        panic!("php-fpm is installed by scripts/test");
    };
    let a = Apache::start(
        fpm_site(&fpm, "SetEnvIf Request_URI nogz\\.php no-gzip\n"),
        |d| {
            php_pages(d);
            fs::copy(d.join("page.php"), d.join("nogz.php")).expect("copy");
        },
    );
    let want = page_text().into_bytes();
    let all = Some("zstd, br, gzip");
    for path in ["/nt.php", "/png.php", "/nogz.php"] {
        let r = a.get(path, all);
        assert_served(&r, &want, None, path);
    }
    let r = a.get("/small.php", all);
    assert_served(&r, b"short", None, "small");
    assert!(
        r.tokens("Vary").iter().any(|v| v == "Accept-Encoding"),
        "small: others may get it coded"
    );
    let r = a.get("/etag.php", Some("br"));
    assert_served(&r, &want, Some("br"), "etag");
    assert_eq!(
        r.header("ETag"),
        Some("W/\"v1-br\""),
        "the coding's own, weak ETag"
    );
    let r = a.request(
        "/page.php",
        &["-H", "Accept-Encoding: zstd", "-H", "Range: bytes=0-99"],
    );
    assert_served(
        &r,
        &want,
        Some("zstd"),
        "a range of a coded body: the whole body",
    );
    let head = a.request("/page.php", &["-I", "-H", "Accept-Encoding: zstd"]);
    assert_eq!(head.coding(), Some("zstd"), "HEAD has GET's headers");
    assert!(head.tokens("Vary").iter().any(|v| v == "Accept-Encoding"));
    assert_eq!(
        head.header("Content-Length"),
        None,
        "no length of another coding"
    );
    a.assert_no_crash();
}

/// A CGI (mod_cgid) printing `page_text()`.
fn cgi_site(d: &Path) {
    let script = d.join("page.cgi");
    let body = page_text();
    fs::write(
        &script,
        format!("#!/bin/sh\nprintf 'Content-Type: text/html\\n\\n'\ncat <<'EOF'\n{body}EOF\n"),
    )
    .expect("cgi");
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn a_cgi_is_coded_and_mod_deflate_beside_codes_nothing_twice() {
    let opts = Options {
        dir: "Options +ExecCGI\nAddHandler cgi-script .cgi\n\
              AddOutputFilterByType GZIP_DISK_NG text/html\n\
              AddOutputFilterByType DEFLATE text/html\n"
            .into(),
        modules: vec!["cgid", "deflate", "filter"],
        ..Options::default()
    };
    let a = Apache::start(opts, cgi_site);
    let want = page_text().into_bytes();
    for (ae, coding) in [
        ("zstd, br, gzip", None),
        ("br", Some("br")),
        ("gzip", Some("gzip")),
    ] {
        let r = a.get("/page.cgi", Some(ae));
        assert_eq!(r.status, 200, "{ae}");
        assert_eq!(
            r.tokens("Content-Encoding").len(),
            1,
            "{ae}: one coding, never two"
        );
        if let Some(c) = coding {
            assert_eq!(r.coding(), Some(c), "{ae}");
        }
        assert_eq!(r.decoded(), want, "{ae}");
    }
    a.assert_no_crash();
}

/// The filter keeps its coders per process and thread: each MPM's way of
/// running requests (threads of event and worker, prefork's processes)
/// codes a CGI's page in each coding, over HTTP/1.1 and h2.
#[test]
fn a_cgi_is_coded_under_every_mpm_on_http1_and_h2() {
    let want = page_text().into_bytes();
    for mpm in [Mpm::Event, Mpm::Worker, Mpm::Prefork] {
        let opts = Options {
            dir: "Options +ExecCGI\nAddHandler cgi-script .cgi\n\
                  AddOutputFilterByType GZIP_DISK_NG text/html\n"
                .into(),
            modules: vec!["cgid", "filter"],
            mpm,
            ..Options::default()
        };
        let a = Apache::start(opts, cgi_site);
        for coding in ["zstd", "br", "gzip"] {
            for h2 in [false, true] {
                let ae = format!("Accept-Encoding: {coding}");
                let mut args = vec!["-H", ae.as_str()];
                if h2 {
                    args.push("--http2-prior-knowledge");
                }
                let r = a.request("/page.cgi", &args);
                let what = format!("{mpm:?} {coding} h2={h2}");
                assert_served(&r, &want, Some(coding), &what);
                assert_eq!(r.http_version.contains('2'), h2, "{what}");
            }
        }
        a.assert_no_crash();
    }
}

/// mod_filter's harness runs the filter under the name the admin
/// declared, here the one of the module's own 304 companion: the filter
/// is known by the entry point called, so it still codes, in each coding.
#[test]
fn under_mod_filter_the_filter_is_known_by_what_it_is_not_by_its_name() {
    let opts = Options {
        dir: "Options +ExecCGI\nAddHandler cgi-script .cgi\n\
              FilterDeclare gzip_disk_ng_304\n\
              FilterProvider gzip_disk_ng_304 GZIP_DISK_NG \"%{CONTENT_TYPE} =~ m|^text/html|\"\n\
              FilterChain gzip_disk_ng_304\n"
            .into(),
        modules: vec!["cgid", "filter"],
        ..Options::default()
    };
    let a = Apache::start(opts, cgi_site);
    let want = page_text().into_bytes();
    for c in ["zstd", "br", "gzip"] {
        assert_served(&a.get("/page.cgi", Some(c)), &want, Some(c), c);
    }
    assert_served(&a.get("/page.cgi", None), &want, None, "identity");
    a.assert_no_crash();
}

/// mod_deflate configured first, as Debian's deflate.conf is read before
/// the module's conf: the module's filter (by type, or set for a
/// directory) still codes, in the client's best coding, gzip included,
/// and mod_deflate steps aside; one coding, never two.
#[test]
fn the_filter_codes_ahead_of_mod_deflate_configured_first() {
    let opts = Options {
        dir: "Options +ExecCGI\nAddHandler cgi-script .cgi\n".into(),
        server: "AddOutputFilterByType DEFLATE text/html\n\
                 <Directory \"{docroot}/bytype\">\n    AddOutputFilterByType GZIP_DISK_NG text/html\n</Directory>\n\
                 <Directory \"{docroot}/set\">\n    SetOutputFilter GZIP_DISK_NG\n</Directory>\n"
            .into(),
        modules: vec!["cgid", "deflate", "filter"],
        ..Options::default()
    };
    let a = Apache::start(opts, |d| {
        for sub in ["bytype", "set"] {
            fs::create_dir(d.join(sub)).expect("mkdir");
            cgi_site(&d.join(sub));
        }
        cgi_site(d);
    });
    let want = page_text().into_bytes();
    for sub in ["bytype", "set"] {
        for (ae, coding) in [
            ("gzip, deflate, br, zstd", "zstd"),
            ("gzip", "gzip"),
            ("br, gzip", "br"),
        ] {
            let r = a.get(&format!("/{sub}/page.cgi"), Some(ae));
            assert_eq!(
                r.tokens("Content-Encoding").len(),
                1,
                "{sub} {ae}: one coding"
            );
            assert_served(&r, &want, Some(coding), &format!("{sub} {ae}"));
        }
    }
    // Where the filter is not on, mod_deflate codes as before.
    let r = a.get("/page.cgi", Some("gzip, deflate, br, zstd"));
    assert_eq!(
        (r.coding(), r.header("Mod-Gzip-Disk-Ng")),
        (Some("gzip"), None)
    );
    assert_eq!(r.decoded(), want);
    a.assert_no_crash();
}

/// A CGI sending three server-sent events a second apart.
fn events_site(d: &Path) {
    let script = d.join("events.cgi");
    fs::write(
        &script,
        "#!/usr/bin/python3\nimport sys, time\n\
         sys.stdout.write('Content-Type: text/event-stream\\r\\nCache-Control: no-cache\\r\\n\\r\\n')\n\
         sys.stdout.flush()\n\
         for i in range(3):\n    \
             sys.stdout.write('data: event %d %s\\n\\n' % (i, 'x' * 300))\n    \
             sys.stdout.flush()\n    \
             time.sleep(1)\n",
    )
    .expect("cgi");
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A client reading `path` in `coding` as it arrives, decoding with
/// Python's own decoders: each event's arrival in seconds, and the whole
/// text.
const STREAM_CLIENT: &str = r#"
import http.client, sys, time, zlib, brotli, zstandard
port, path, coding = int(sys.argv[1]), sys.argv[2], sys.argv[3]
c = http.client.HTTPConnection('127.0.0.1', port)
c.request('GET', path, headers={'Accept-Encoding': coding})
r = c.getresponse()
assert r.getheader('Content-Encoding') == coding, r.getheader('Content-Encoding')
d = {'gzip': lambda: zlib.decompressobj(31).decompress,
     'br': lambda: brotli.Decompressor().process,
     'zstd': lambda: zstandard.ZstdDecompressor().decompressobj().decompress}[coding]()
t0, text, seen = time.time(), b'', 0
while True:
    chunk = r.read1(65536)
    if not chunk:
        break
    text += d(chunk)
    while text.count(b'\n\n') > seen:
        seen += 1
        print('event %.2f' % (time.time() - t0))
print('text', len(text), text.count(b'data: event'))
"#;

#[test]
fn server_sent_events_arrive_one_by_one_in_every_coding() {
    let opts = Options {
        dir: "Options +ExecCGI\nAddHandler cgi-script .cgi\n\
              AddOutputFilterByType GZIP_DISK_NG text/event-stream\n"
            .into(),
        modules: vec!["cgid", "filter"],
        ..Options::default()
    };
    let a = Apache::start(opts, events_site);
    for coding in ["zstd", "br", "gzip"] {
        let out = std::process::Command::new("/usr/bin/python3")
            .args([
                "-c",
                STREAM_CLIENT,
                &a.port.to_string(),
                "/events.cgi",
                coding,
            ])
            .output()
            .expect("python3");
        let text = stdout(&out);
        assert!(out.status.success(), "{coding}: {text}{}", stderr(&out));
        let times: Vec<f64> = text
            .lines()
            .filter_map(|l| l.strip_prefix("event ")?.parse().ok())
            .collect();
        assert_eq!(times.len(), 3, "{coding}: three events decoded: {text}");
        assert!(
            times[0] < 0.8,
            "{coding}: the first event at once: {times:?}"
        );
        assert!(
            times[1] - times[0] > 0.5 && times[2] - times[1] > 0.5,
            "{coding}: one by one: {times:?}"
        );
        let whole: usize = (0..3)
            .map(|i| format!("data: event {i} {}\n\n", "x".repeat(300)).len())
            .sum();
        assert!(
            text.contains(&format!("text {whole} 3")),
            "{coding}: the whole stream: {text}"
        );
    }
    a.assert_no_crash();
}

#[test]
fn a_proxied_backend_is_coded_unless_it_coded_itself_and_counted_as_dynamic() {
    let backend = Apache::start(
        Options {
            dir: String::new(),
            server: "<Location /coded/>\nSetOutputFilter DEFLATE\n</Location>".into(),
            modules: vec!["deflate"],
            ..Options::default()
        },
        |d| {
            fs::write(d.join("page.html"), page_text()).expect("page");
            fs::create_dir(d.join("coded")).expect("dir");
            fs::write(d.join("coded/page.html"), page_text()).expect("page");
        },
    );
    let front = Apache::start(
        Options {
            dir: String::new(),
            server: format!(
                "ProxyPass /back/ http://127.0.0.1:{}/\n\
                 AddOutputFilterByType GZIP_DISK_NG text/html\n\
                 <Location /metrics>\nSetHandler gzip-disk-ng-metrics\n</Location>",
                backend.port
            ),
            modules: vec!["proxy", "proxy_http", "filter"],
            ..Options::default()
        },
        |_| {},
    );
    let want = page_text().into_bytes();
    let r = front.get("/back/page.html", Some("gzip, zstd"));
    assert_served(&r, &want, Some("zstd"), "a plain backend response");
    let r = front.get("/back/coded/page.html", Some("gzip, zstd"));
    assert_eq!(
        (r.status, r.coding()),
        (200, Some("gzip")),
        "the backend's own gzip passes"
    );
    assert_eq!(r.decoded(), want);
    assert_eq!(r.header("Mod-Gzip-Disk-Ng"), None, "not the module's");
    let sent = r#"gzip_disk_ng_responses_total{outcome="dynamic",coding="zstd"}"#;
    assert_eq!(metric(&front, sent), 1, "counted as its own outcome");
    front.assert_no_crash();
    backend.assert_no_crash();
}

#[test]
fn jitter_pads_dynamic_bodies_keyed_by_the_body() {
    let run = world_readable_tempdir();
    let Some(fpm) = Fpm::start(run.path()) else {
        panic!("php-fpm is installed by scripts/test");
    };
    let extra = "<Files jit.php>\nGzipDiskNgJitter 64\n</Files>\n";
    let a = Apache::start(fpm_site(&fpm, extra), |d| {
        php_pages(d);
        fs::copy(d.join("page.php"), d.join("jit.php")).expect("copy");
    });
    let want = page_text().into_bytes();
    for coding in ["zstd", "br", "gzip"] {
        let plain = a.get("/page.php", Some(coding));
        let padded = a.get("/jit.php", Some(coding));
        assert_served(&padded, &want, Some(coding), coding);
        let (p, j) = (plain.body.len(), padded.body.len());
        assert!(j > p && j <= p + 64 + 32, "{coding}: padded {j}, plain {p}");
        let again = a.get("/jit.php", Some(coding));
        assert_eq!(again.body.len(), j, "{coding}: one body, one length");
    }
    a.assert_no_crash();
}

#[test]
fn mod_includes_output_is_coded_after_it() {
    let opts = Options {
        dir: "Options +Includes\nAddType text/html .shtml\nAddOutputFilter INCLUDES .shtml\n\
              AddOutputFilterByType GZIP_DISK_NG text/html\n"
            .into(),
        modules: vec!["include", "filter"],
        ..Options::default()
    };
    let a = Apache::start(opts, |d| {
        fs::write(d.join("part.html"), page_text()).expect("part");
        fs::write(
            d.join("page.shtml"),
            "<!--#include virtual=\"/part.html\" -->tail\n",
        )
        .expect("shtml");
    });
    let want = format!("{}tail\n", page_text()).into_bytes();
    for coding in ["zstd", "br", "gzip"] {
        let r = a.get("/page.shtml", Some(coding));
        assert_served(&r, &want, Some(coding), coding);
    }
    a.assert_no_crash();
}

/// The one-minute load average, as the module reads it.
fn load_average() -> f64 {
    let text = fs::read_to_string("/proc/loadavg").expect("/proc/loadavg");
    text.split_whitespace()
        .next()
        .and_then(|l| l.parse().ok())
        .expect("a load")
}

#[test]
fn a_busy_server_codes_at_cheaper_levels_rather_than_not_at_all() {
    let run = world_readable_tempdir();
    let Some(fpm) = Fpm::start(run.path()) else {
        panic!("php-fpm is installed by scripts/test");
    };
    let extra = "<Files busy.php>\nGzipDiskNgFilterLoadLimit 0.01\n</Files>\n\
                 <Files idle.php>\nGzipDiskNgFilterLoadLimit 900\n</Files>\n";
    let a = Apache::start(fpm_site(&fpm, extra), |d| {
        php_pages(d);
        fs::copy(d.join("page.php"), d.join("busy.php")).expect("copy");
        fs::copy(d.join("page.php"), d.join("idle.php")).expect("copy");
    });
    let want = page_text().into_bytes();
    for coding in ["zstd", "gzip"] {
        let normal = a.get("/page.php", Some(coding));
        let idle = a.get("/idle.php", Some(coding));
        assert_served(&idle, &want, Some(coding), coding);
        assert_eq!(
            idle.body.len(),
            normal.body.len(),
            "{coding}: a limit not reached changes nothing"
        );
        let busy = a.get("/busy.php", Some(coding));
        assert_served(&busy, &want, Some(coding), coding);
        // The module reads the load once a second: one well above the
        // limit then is above it now.
        if load_average() >= 0.05 {
            assert_ne!(
                busy.body.len(),
                normal.body.len(),
                "{coding}: cheaper levels at load {}",
                load_average()
            );
        }
    }
    a.assert_no_crash();
}

/// No idle worker (every one of prefork's two children answering):
/// dynamic bodies are coded at cheaper levels, still coded; with one
/// idle again, at the configured levels.
#[test]
fn with_no_idle_worker_bodies_are_coded_at_cheaper_levels() {
    let opts = Options {
        mpm: Mpm::Prefork,
        dir: "Options +ExecCGI\nAddHandler cgi-script .cgi\n\
              AddOutputFilterByType GZIP_DISK_NG text/html\n\
              GzipDiskNgFilterLevels zstd=19\n"
            .into(),
        server: "StartServers 2\nMinSpareServers 1\nMaxSpareServers 2\n\
                 ServerLimit 2\nMaxRequestWorkers 2\n"
            .into(),
        modules: vec!["cgid", "filter"],
        ..Options::default()
    };
    let a = Apache::start(opts, |d| {
        cgi_site(d);
        let slow = d.join("slow.cgi");
        fs::write(
            &slow,
            "#!/bin/sh\nsleep 4\nprintf 'Content-Type: text/plain\\n\\nslow\\n'\n",
        )
        .expect("cgi");
        fs::set_permissions(&slow, fs::Permissions::from_mode(0o755)).expect("chmod");
    });
    let want = page_text().into_bytes();
    // Into the next second: each child reads the scoreboard once a second.
    let next_second = || {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("time");
        std::thread::sleep(std::time::Duration::from_nanos(
            1_200_000_000 - u64::from(now.subsec_nanos()),
        ));
    };
    // The level a body was coded at, told by its length: zstd 19 (the
    // configured level) makes it about 6 % smaller than 1 (the cheaper
    // one), where the pieces the CGI's output reaches the filter in (a
    // pause between them flushes the coder: 3 bytes) vary it by a few.
    let normal = a.get("/page.cgi", Some("zstd"));
    assert_served(&normal, &want, Some("zstd"), "idle");
    let normal = normal.body.len();
    let cheaper = |len: usize| len > normal + normal / 32;
    std::thread::scope(|s| {
        let slow = s.spawn(|| a.get("/slow.cgi", None));
        next_second();
        let busy = a.get("/page.cgi", Some("zstd"));
        assert_served(&busy, &want, Some("zstd"), "busy");
        assert!(
            cheaper(busy.body.len()),
            "no idle worker: cheaper levels ({} bytes, {normal} idle)",
            busy.body.len()
        );
        assert_eq!(slow.join().expect("slow").status, 200);
    });
    assert_eq!(a.module_log_about("busy (no idle worker)").len(), 1);
    // Idle again (once the slow request's child has closed its
    // connection): the configured levels.
    wait_for("the configured levels again", || {
        next_second();
        let again = a.get("/page.cgi", Some("zstd"));
        assert_served(&again, &want, Some("zstd"), "idle again");
        !cheaper(again.body.len())
    });
    a.assert_no_crash();
}

/// A PHP page that validates as applications do: its own strong tag
/// (`"v1"`, or `?v=`'s), compared whole with `If-None-Match`, a 304
/// where it matches.
const CONDITIONAL_PHP: &str = "<?php $tag = '\"' . ($_GET['v'] ?? 'v1') . '\"';\n\
     header('ETag: ' . $tag);\n\
     if (($_SERVER['HTTP_IF_NONE_MATCH'] ?? '') === $tag) { http_response_code(304); exit; }\n";

/// A request for `path` in `coding` with `If-None-Match: tag`.
fn revalidate(a: &Apache, path: &str, coding: &str, tag: &str) -> Response {
    a.request(
        path,
        &[
            "-H",
            &format!("Accept-Encoding: {coding}"),
            "-H",
            &format!("If-None-Match: {tag}"),
        ],
    )
}

/// A 304 that refreshes what the client stored: the tag it sent, `Vary`,
/// no body.
fn assert_not_modified(r: &Response, tag: &str, what: &str) {
    assert_eq!(r.status, 304, "{what}");
    assert_eq!(
        r.header("ETag"),
        Some(tag),
        "{what}: the tag the client holds"
    );
    assert!(
        r.tokens("Vary").iter().any(|v| v == "Accept-Encoding"),
        "{what}: varies"
    );
    assert!(r.body.is_empty(), "{what}: no body");
}

#[test]
fn a_coded_pages_own_tag_revalidates_to_a_304() {
    let run = world_readable_tempdir();
    let Some(fpm) = Fpm::start(run.path()) else {
        panic!("php-fpm is installed by scripts/test");
    };
    let a = Apache::start(fpm_site(&fpm, ""), |d| {
        let page = page_text().replace('\\', "\\\\").replace('\'', "\\'");
        fs::write(
            d.join("cond.php"),
            format!("{CONDITIONAL_PHP}echo '{page}';"),
        )
        .expect("cond.php");
    });
    let want = page_text().into_bytes();
    for coding in ["br", "zstd", "gzip"] {
        let first = a.get("/cond.php", Some(coding));
        assert_served(&first, &want, Some(coding), coding);
        let tag = format!("W/\"v1-{coding}\"");
        assert_eq!(first.header("ETag"), Some(tag.as_str()), "{coding}");
        let again = revalidate(&a, "/cond.php", coding, &tag);
        assert_not_modified(&again, &tag, coding);
    }
    let other = revalidate(&a, "/cond.php", "br", "W/\"v1-gzip\"");
    assert_served(&other, &want, Some("br"), "another coding's tag");
    assert_eq!(
        other.header("ETag"),
        Some("W/\"v1-br\""),
        "another coding's tag"
    );
    let changed = revalidate(&a, "/cond.php?v=v2", "br", "W/\"v1-br\"");
    assert_served(&changed, &want, Some("br"), "a changed page");
    assert_eq!(
        changed.header("ETag"),
        Some("W/\"v2-br\""),
        "a changed page"
    );
    a.assert_no_crash();
}

/// A file core's handler sends, through the filter: by `SetOutputFilter`
/// on a directory core serves, and by type where `SetHandler
/// gzip-disk-ng` gives way to core for the filter (and the filter stands
/// twice in the chain: the tag is suffixed once).
#[test]
fn a_file_core_serves_through_the_filter_revalidates_to_a_304() {
    let opts = Options {
        dir: "AddOutputFilterByType GZIP_DISK_NG text/html
"
        .into(),
        server:
            "<Directory \"{docroot}/static\">\n    SetOutputFilter GZIP_DISK_NG\n</Directory>\n\
                 <Directory \"{docroot}/handler\">\n    SetHandler gzip-disk-ng\n</Directory>\n"
                .into(),
        modules: vec!["filter"],
        ..Options::default()
    };
    let a = Apache::start(opts, |d| {
        for sub in ["static", "handler"] {
            fs::create_dir(d.join(sub)).expect("mkdir");
            fs::write(d.join(sub).join("page.html"), page_text()).expect("page");
        }
    });
    let want = page_text().into_bytes();
    for (path, coding) in [("/static/page.html", "zstd"), ("/handler/page.html", "br")] {
        let first = a.get(path, Some(coding));
        assert_served(&first, &want, Some(coding), path);
        let tag = first
            .header("ETag")
            .expect("core's tag, suffixed")
            .to_owned();
        let once = format!("-{coding}\"");
        let twice = format!("-{coding}-{coding}\"");
        assert!(
            tag.starts_with("W/\"") && tag.ends_with(&once),
            "{path}: {tag}"
        );
        assert!(!tag.ends_with(&twice), "{path}: {tag}");
        assert_not_modified(&revalidate(&a, path, coding, &tag), &tag, path);
        let other = revalidate(&a, path, "gzip", &tag);
        assert_served(&other, &want, Some("gzip"), path);
    }
    a.assert_no_crash();
}

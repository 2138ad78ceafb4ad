//! Fault matrix: each bad input as users meet it gets a clean status and at
//! most one module log line; no child dies; the next request works.

mod common;

use common::*;
use std::fs;
use std::io::Read;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::Command;

const FIVE_GIB: u64 = 5 << 30;

fn build(d: &Path) {
    let data = page(200_000, 1);
    publish(d, "good.html", &data, false, &[".gz", ".zst", ".br"]);
    fs::write(d.join("trunc.html.gz"), &gzip(&data)[..5_000]).unwrap();
    fs::write(
        d.join("corrupt.html.zst"),
        b"\x28\xb5\x2f\xfd\x00\x58\xff\xff\xff\xff\xff",
    )
    .unwrap();
    fs::write(d.join("empty.html.br"), b"").unwrap();
    publish(d, "unreadable.html", &data, false, &[".gz"]);
    fs::set_permissions(
        d.join("unreadable.html.gz"),
        fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    fs::create_dir(d.join("dir.html.gz")).unwrap();
    let fifo = d.join("fifo.html.gz");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    symlink("/etc/passwd", d.join("outside.html.gz")).unwrap();
    // 5 GiB, sparse, behind a gzip header: its cheap checks pass, and it
    // is too large for a full one, so it is sent as it is; a decode of the
    // same bytes fails.
    for name in ["huge.bin.gz", "hugedec.bin.gz"] {
        let sparse = fs::File::create(d.join(name)).unwrap();
        std::io::Write::write_all(&mut &sparse, &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]).unwrap();
        sparse.set_len(FIVE_GIB).unwrap();
    }
    for name in ["a b.html", "100%.html", "ünïcødé.html"] {
        publish(d, name, &page(3_000, 2), false, &[".gz"]);
    }
}

/// Module log lines added since `before`.
fn new_lines(a: &Apache, before: usize) -> Vec<String> {
    a.module_log().into_iter().skip(before).collect()
}

/// (path, Accept-Encoding, status, level of its one line, debug lines)
type Fault = (
    &'static str,
    Option<&'static str>,
    u16,
    Option<&'static str>,
    usize,
);

/// One fault per case: its exact status, and exactly one module line at
/// the level it belongs to (`warn` for a broken sibling, naming it and the
/// fix,
/// `info` for the 404 of a file that is not there to serve), none for the
/// healthy odd names. With `gzip_disk_ng:debug` the same line, plus at most
/// one debug line per failing sibling, naming it: a sibling tried as a
/// candidate to send and then to decode is not reported twice.
fn fault_matrix_at(log_level: &'static str, debug: bool) {
    let a = Apache::start(
        Options {
            dir: "SetHandler gzip-disk-ng\nOptions -FollowSymLinks".into(),
            log_level,
            ..Default::default()
        },
        build,
    );
    let cases: &[Fault] = &[
        ("/trunc.html", None, 500, Some("warn"), 0),
        // Once found broken, neither sent nor decoded again, nor told.
        ("/trunc.html", Some("gzip"), 500, None, 0),
        ("/trunc.html", None, 500, None, 0),
        ("/corrupt.html", None, 500, Some("warn"), 0),
        ("/empty.html", None, 500, Some("warn"), 0),
        ("/empty.html", Some("br"), 500, None, 0),
        ("/unreadable.html", None, 404, Some("info"), 1),
        ("/unreadable.html", Some("gzip"), 404, Some("info"), 1),
        ("/dir.html", Some("gzip"), 404, Some("info"), 1),
        ("/fifo.html", Some("gzip"), 404, Some("info"), 1),
        ("/fifo.html", None, 404, Some("info"), 1),
        ("/outside.html", Some("gzip"), 404, Some("info"), 1),
        ("/hugedec.bin", None, 500, Some("warn"), 0),
        ("/a%20b.html", None, 200, None, 0),
        ("/100%25.html", Some("gzip"), 200, None, 0),
        ("/%C3%BCn%C3%AFc%C3%B8d%C3%A9.html", None, 200, None, 0),
    ];
    for &(path, ae, status, level, debug_lines) in cases {
        let before = a.module_log().len();
        let r = a.get(path, ae);
        assert_eq!(r.status, status, "{path} {ae:?}");
        assert_eq!(r.exit, 0, "{path} {ae:?}: transfer failed");
        let lines = new_lines(&a, before);
        let (dbg, main): (Vec<&String>, Vec<&String>) = lines
            .iter()
            .partition(|l| l.contains("[gzip_disk_ng:debug]"));
        match level {
            Some(level) => {
                assert_eq!(main.len(), 1, "{path} {ae:?}: {lines:#?}");
                assert!(
                    main[0].contains(&format!("[gzip_disk_ng:{level}]")),
                    "{path} {ae:?}: not at {level}: {lines:#?}"
                );
            }
            None => assert!(main.is_empty(), "{path} {ae:?}: {lines:#?}"),
        }
        let want_dbg = if debug { debug_lines } else { 0 };
        assert_eq!(dbg.len(), want_dbg, "{path} {ae:?}: {lines:#?}");
        let stem = path.trim_start_matches('/');
        for l in &dbg {
            assert!(l.contains(stem), "{path}: {l}");
        }
        // The next request works.
        let g = a.get("/good.html", Some("gzip"));
        assert_eq!(g.status, 200, "after {path}");
    }
    // Precompressed 5 GiB sparse sibling: 64-bit length, ranges at the end.
    let h = a.request("/huge.bin", &["-I", "-H", "Accept-Encoding: gzip"]);
    assert_eq!(
        h.header("Content-Length"),
        Some(FIVE_GIB.to_string().as_str())
    );
    // Under If-Range naming it: its ETag is strong once the file is a
    // second old.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let ir = a.if_range("/huge.bin", &["-I", "-H", "Accept-Encoding: gzip"]);
    let r = a.request(
        "/huge.bin",
        &[
            "-H",
            "Accept-Encoding: gzip",
            "-H",
            &ir,
            "-r",
            &format!("{}-", FIVE_GIB - 100),
        ],
    );
    assert_eq!(r.status, 206, "{ir}");
    assert_eq!(r.body, vec![0u8; 100]);
    a.assert_no_crash();
}

#[test]
fn fault_matrix() {
    fault_matrix_at("info", false);
}

#[test]
fn fault_matrix_with_module_debug() {
    fault_matrix_at("info gzip_disk_ng:debug", true);
}

/// Accept-Encoding bytes Apache's parser lets through (obs-text, tabs, a
/// field line just under LimitRequestFieldSize, the field sent twice,
/// repeated and odd q parameters) reach the module, which answers each
/// with the exact coding negotiation promises, a complete body, and no
/// log line: a strange header is not a fault.
#[test]
fn hostile_headers_on_the_wire() {
    let a = Apache::start(
        Options {
            log_level: "info",
            ..Default::default()
        },
        build,
    );
    let data = page(200_000, 1);
    let near_limit = "x,".repeat(4040) + "br";
    let cases: Vec<(Vec<&[u8]>, Option<&str>)> = vec![
        (vec![b"\xff\xfe\xfd, br"], Some("br")),
        (vec![b"\xe9gzip, zstd;q=0.5"], Some("zstd")),
        (vec![b"gzip;q=0.5;q=1;q=0, zstd;q=0.1"], Some("zstd")),
        (vec![b"\tzstd\t;\tq=0.5\t,\tgzip;q=0.4"], Some("zstd")),
        (vec![b"x-gzip;q=1, GZIP;q=0"], Some("gzip")),
        (vec![b"gzip;q=0.1", b"br;q=0.2"], Some("br")),
        (vec![near_limit.as_bytes()], Some("br")),
        (vec![b"gzip;q=-1, br;q=1e3, zstd;q=0.5.5"], None),
    ];
    for (values, want) in &cases {
        assert!(values.iter().all(|v| v.len() + 17 < 8190));
        let before = a.module_log().len();
        let headers: Vec<(&str, &[u8])> = values.iter().map(|v| ("Accept-Encoding", *v)).collect();
        let r = raw_request(&a, "GET", "/good.html", &headers);
        let shown = String::from_utf8_lossy(&values[0][..values[0].len().min(60)]).to_string();
        assert_eq!(
            (r.status, r.header("Content-Encoding")),
            (200, *want),
            "{shown:?}"
        );
        let body = r.body();
        if want.is_none() {
            assert_eq!(r.header("Mod-Gzip-Disk-Ng"), Some(":-("), "{shown:?}");
        }
        let decoded = oracle_decode(*want, &body).expect("decodes");
        assert!(decoded == data, "{shown:?}: body is not the page");
        assert_eq!(new_lines(&a, before), Vec::<String>::new(), "{shown:?}");
    }
    a.assert_no_crash();
}

#[test]
fn sibling_truncated_while_streaming() {
    let data = page(16 << 20, 3);
    let a = Apache::start(Options::default(), |d| {
        publish(d, "stream.html", &data, false, &[".gz"]);
        publish(d, "ok.html", &data[..100_000], false, &[".gz"]);
        // Larger than loopback socket buffers, so the server is still
        // sending when the file shrinks. Precompressed bytes go out as is.
        // A valid stream (its checks pass), incompressible.
        let stream = zstd::encode_all(&noise(48 << 20, 7)[..], 1).unwrap();
        fs::write(d.join("sendfile.html.zst"), stream).unwrap();
    });
    for (path, args) in [
        ("/stream.html", vec![]),
        ("/sendfile.html", vec!["-H", "Accept-Encoding: zstd"]),
    ] {
        let sib = a.docroot.join(if path == "/stream.html" {
            "stream.html.gz"
        } else {
            "sendfile.html.zst"
        });
        let url = a.url(path);
        let mut cmd = Command::new("curl");
        cmd.args(["-s", "--limit-rate", "4M", "--max-time", "30"])
            .args(&args)
            .arg(&url);
        let mut child = cmd.stdout(std::process::Stdio::piped()).spawn().unwrap();
        // The body has started: the module has the file open.
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 4096];
        let got = stdout.read(&mut first).unwrap();
        assert!(got > 0, "{path}: no body bytes before the truncation");
        // Truncate in place (a rename would leave the open file intact).
        fs::OpenOptions::new()
            .write(true)
            .open(&sib)
            .unwrap()
            .set_len(1000)
            .unwrap();
        let mut rest = Vec::new();
        stdout.read_to_end(&mut rest).unwrap();
        let out = child.wait_with_output().unwrap();
        let code = out.status.code().unwrap_or(-1);
        assert_ne!(
            code,
            0,
            "{path}: a truncated transfer must fail ({} bytes received)",
            got + rest.len() + out.stdout.len()
        );
        a.assert_no_crash();
        assert_eq!(
            a.get("/ok.html", None).status,
            200,
            "server healthy after {path}"
        );
        // The sibling cut short is never sent as it is.
        let r = a.get("/stream.html", Some("gzip"));
        assert!(r.status != 200 || r.coding().is_none(), "{path}");
    }
}

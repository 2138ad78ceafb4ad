//! Fault matrix: each bad input as users meet it gets a clean status and at
//! most one module log line; no child dies; the next request works.

mod common;

use common::*;
use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

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
    let sparse = fs::File::create(d.join("huge.bin.gz")).unwrap();
    sparse.set_len(FIVE_GIB).unwrap();
    for name in ["a b.html", "100%.html", "ünïcødé.html"] {
        publish(d, name, &page(3_000, 2), false, &[".gz"]);
    }
}

/// Module log lines added since `before`.
fn new_lines(a: &Apache, before: usize) -> Vec<String> {
    a.module_log().into_iter().skip(before).collect()
}

#[test]
fn fault_matrix() {
    let a = Apache::start(
        Options {
            dir: "SetHandler gzip-disk-ng\nOptions -FollowSymLinks".into(),
            log_level: "info",
            ..Default::default()
        },
        build,
    );
    // (path, Accept-Encoding, acceptable statuses)
    let cases: &[(&str, Option<&str>, &[u16])] = &[
        ("/trunc.html", None, &[200, 500]),
        ("/corrupt.html", None, &[500]),
        ("/empty.html", None, &[500]),
        ("/unreadable.html", None, &[404]),
        ("/unreadable.html", Some("gzip"), &[404]),
        ("/dir.html", Some("gzip"), &[404]),
        ("/fifo.html", Some("gzip"), &[404]),
        ("/fifo.html", None, &[404]),
        ("/outside.html", Some("gzip"), &[404]),
        ("/huge.bin", None, &[500]),
        ("/a%20b.html", None, &[200]),
        ("/100%25.html", Some("gzip"), &[200]),
        ("/%C3%BCn%C3%AFc%C3%B8d%C3%A9.html", None, &[200]),
    ];
    for (path, ae, ok) in cases {
        let before = a.module_log().len();
        let r = a.get(path, *ae);
        assert!(ok.contains(&r.status), "{path} {ae:?}: status {}", r.status);
        if r.status == 200 && path.contains(".html") && !path.starts_with("/trunc") {
            assert_eq!(r.exit, 0, "{path}");
        }
        if path.starts_with("/trunc") && r.status == 200 {
            assert_ne!(r.exit, 0, "truncated body must not look complete");
        }
        let lines = new_lines(&a, before);
        assert!(lines.len() <= 1, "{path}: {lines:#?}");
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
    let r = a.request(
        "/huge.bin",
        &[
            "-H",
            "Accept-Encoding: gzip",
            "-r",
            &format!("{}-", FIVE_GIB - 100),
        ],
    );
    assert_eq!(r.status, 206);
    assert_eq!(r.body, vec![0u8; 100]);
    a.assert_no_crash();
}

#[test]
fn hostile_headers_on_the_wire() {
    let a = Apache::start(
        Options {
            log_level: "info",
            ..Default::default()
        },
        build,
    );
    let long = format!("gzip;q=0.{}", "1".repeat(10_000));
    let many: String = (0..3000).map(|i| format!("c{i},")).collect::<String>() + "gzip";
    let values: Vec<Vec<u8>> = vec![
        long.into_bytes(),
        many.into_bytes(),
        b"gz\0ip, br".to_vec(),
        b"gzip;q=-1, br;q=1e3, zstd;q=0.5.5".to_vec(),
        b"\xff\xfe\xfd".to_vec(),
        b"gzip;q=0.5;q=1;q=0".to_vec(),
    ];
    for v in &values {
        let mut s = TcpStream::connect(("127.0.0.1", a.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut req =
            b"GET /good.html HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAccept-Encoding: "
                .to_vec();
        req.extend_from_slice(v);
        req.extend_from_slice(b"\r\n\r\n");
        s.write_all(&req).unwrap();
        let mut resp = Vec::new();
        let _ = s.read_to_end(&mut resp);
        let head = String::from_utf8_lossy(&resp[..resp.len().min(200)]).to_string();
        let status: u16 = head
            .split_whitespace()
            .nth(1)
            .and_then(|x| x.parse().ok())
            .unwrap_or(0);
        assert!([200, 400, 431].contains(&status), "{head}");
        assert_eq!(a.get("/good.html", Some("gzip")).status, 200);
    }
    a.assert_no_crash();
}

#[test]
fn sibling_truncated_while_streaming() {
    let data = page(16 << 20, 3);
    let a = Apache::start(Options::default(), |d| {
        publish(d, "stream.html", &data, false, &[".gz"]);
        // Larger than loopback socket buffers, so the server is still
        // sending when the file shrinks. Precompressed bytes go out as is.
        let mut x: u64 = 7;
        let noise: Vec<u8> = (0..48 << 20)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        fs::write(d.join("sendfile.html.zst"), noise).unwrap();
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
            a.get("/stream.html", Some("gzip")).status,
            200,
            "server healthy after {path}"
        );
    }
}

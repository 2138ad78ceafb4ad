//! Ranges of coded representations: a client resuming a download it kept
//! decoded asks for coded bytes at the decoded length. A range of a coded
//! representation is honoured only where `If-Range` names that
//! representation's entity tag; otherwise the whole representation goes
//! out (200), so real resuming clients (curl, wget2) assemble the right
//! file or fail loudly, never silently truncate. A 416 says the length.

mod common;

use common::*;
use std::fs;
use std::path::Path;
use std::process::Command;

const PAGE: &str = "/p.html";

fn site(d: &Path) {
    publish(
        d,
        "p.html",
        &page(120_000, 7),
        true,
        &[".br", ".gz", ".zst"],
    );
}

fn start() -> Apache {
    Apache::start(
        Options {
            dir: "SetHandler gzip-disk-ng".into(),
            ..Default::default()
        },
        site,
    )
}

/// The partial download a client kept: the first `n` decoded bytes.
fn partial(dir: &Path, n: usize) -> std::path::PathBuf {
    let f = dir.join("p.html");
    fs::write(&f, &page(120_000, 7)[..n]).unwrap();
    f
}

/// A resumed download either ends with the whole page or fails: the
/// client's exit status says which.
fn whole_or_loud(tool: &str, exit: Option<i32>, file: &Path) {
    let got = fs::read(file).unwrap_or_default();
    let whole = got == page(120_000, 7);
    assert!(
        whole || exit != Some(0),
        "{tool} exited 0 with {} bytes that are not the page ({} bytes)",
        got.len(),
        page(120_000, 7).len()
    );
}

/// Runs `tool` with `args`, then the output file and the URL, into
/// `file`; its exit status.
fn download(tool: &str, args: &[&str], out_flag: &str, file: &Path, url: &str) -> Option<i32> {
    let out = Command::new(tool)
        .args(args)
        .arg(out_flag)
        .arg(file)
        .arg(url)
        .output()
        .unwrap();
    out.status.code()
}

/// `tool` with `args` downloads the whole page afresh (so the resuming
/// case below can fail for no other reason), then resumes partial
/// downloads of it: the whole page, or a loud failure.
fn resumes(a: &Apache, tool: &str, args: &[&str], out_flag: &str) {
    let d = tempfile::tempdir().unwrap();
    let fresh = d.path().join("fresh.html");
    let exit = download(tool, args, out_flag, &fresh, &a.url(PAGE));
    assert_eq!(exit, Some(0), "{tool} {args:?}");
    assert_eq!(
        fs::read(&fresh).unwrap(),
        page(120_000, 7),
        "{tool} {args:?}"
    );
    for kept in [40_000, 119_000] {
        let f = partial(d.path(), kept);
        let exit = download(tool, args, out_flag, &f, &a.url(PAGE));
        whole_or_loud(&format!("{tool} {args:?} ({kept})"), exit, &f);
    }
}

#[test]
fn curl_resuming_a_compressed_download_never_truncates_silently() {
    let a = start();
    for ae in ["br", "gzip", "zstd"] {
        let header = format!("Accept-Encoding: {ae}");
        let args = [
            "-s",
            "--max-time",
            "30",
            "-C",
            "-",
            "--compressed",
            "-H",
            &header,
        ];
        resumes(&a, "curl", &args, "-o");
    }
    a.assert_no_crash();
}

#[test]
fn wget2_resuming_a_compressed_download_never_truncates_silently() {
    if Command::new("wget2").arg("--version").output().is_err() {
        skip("wget2 is not installed");
        return;
    }
    let a = start();
    // Debian's wget2 decodes br and gzip (no zstd).
    for codings in ["br", "gzip"] {
        let compression = format!("--compression={codings}");
        let args = ["-q", "-c", "--no-robots", "--tries=1", &compression];
        resumes(&a, "wget2", &args, "-O");
    }
    a.assert_no_crash();
}

#[test]
fn a_range_is_honoured_only_under_if_range_naming_the_representation() {
    let a = start();
    let br = fs::read(a.docroot.join("p.html.br")).unwrap();
    let full = a.get(PAGE, Some("br"));
    assert_eq!((full.status, full.coding()), (200, Some("br")));
    let etag = full.header("ETag").unwrap().to_string();
    let ranged = |range: &str, if_range: Option<&str>| {
        let mut args = vec![
            "-H".to_string(),
            "Accept-Encoding: br".to_string(),
            "-H".to_string(),
            format!("Range: {range}"),
        ];
        if let Some(v) = if_range {
            args.push("-H".into());
            args.push(format!("If-Range: {v}"));
        }
        curl(&a.url(PAGE), &args)
    };
    // No If-Range, or one naming another representation or a date: the
    // whole representation.
    let lm = full.header("Last-Modified").unwrap().to_string();
    let other = a
        .get(PAGE, Some("gzip"))
        .header("ETag")
        .unwrap()
        .to_string();
    for if_range in [None, Some(other.as_str()), Some(lm.as_str())] {
        let r = ranged("bytes=100-", if_range);
        assert_eq!((r.status, r.coding()), (200, Some("br")), "{if_range:?}");
        assert_eq!(r.body, br, "{if_range:?}");
        let r = ranged(&format!("bytes={}-", br.len() + 10), if_range);
        assert_eq!((r.status, r.body.len()), (200, br.len()), "{if_range:?}");
    }
    // If-Range naming this representation: the range, of its bytes.
    let r = ranged("bytes=100-199", Some(&etag));
    assert_eq!(r.status, 206);
    assert_eq!(r.body, br[100..200]);
    assert_eq!(
        r.header("Content-Range"),
        Some(format!("bytes 100-199/{}", br.len()).as_str())
    );
    // Past its end: 416, saying its length.
    let r = ranged(&format!("bytes={}-", br.len()), Some(&etag));
    assert_eq!(r.status, 416, "{:?}", r.headers);
    assert_eq!(
        r.header("Content-Range"),
        Some(format!("bytes */{}", br.len()).as_str()),
        "{:?} {}",
        r.headers,
        a.error_log()
    );
    // The original's ranges are core's, If-Range or not.
    let r = ranged("bytes=0-9", None);
    assert_eq!(r.status, 200, "a coded representation without If-Range");
    let r = a.request(PAGE, &["-H", "Range: bytes=0-9"]);
    assert_eq!((r.status, r.body.len()), (206, 10));
    a.assert_no_crash();
}

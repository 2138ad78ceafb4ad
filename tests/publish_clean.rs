//! `gzip-disk-ng clean`, run as the real binary on a tree that mixes what
//! `compress` wrote with files it did not write: exactly its own output
//! goes, and `--dry-run` removes nothing.

mod common;

use common::*;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

/// Root reads every file, so the tree is cleaned as nobody, to whom it
/// then belongs; anyone else cleans as themselves.
fn is_root() -> bool {
    fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Runs the tool with `args` as the tree's owner (see `is_root`).
fn run(args: &[&OsStr]) -> Output {
    let mut c = if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(PUBLISH_TOOL);
        c
    } else {
        Command::new(PUBLISH_TOOL)
    };
    c.args(args).output().expect("run gzip-disk-ng")
}

/// Every file and symlink under `root`, relative, with its bytes (a
/// symlink's target), sorted.
fn listing(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<_> = walkdir::WalkDir::new(root)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| !e.file_type().is_dir())
        .map(|e| {
            let bytes = if e.file_type().is_symlink() {
                fs::read_link(e.path())
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else {
                fs::read(e.path()).unwrap_or_else(|_| b"(unreadable)".to_vec())
            };
            (e.path().strip_prefix(root).unwrap().to_path_buf(), bytes)
        })
        .collect();
    out.sort();
    out
}

fn names(l: &[(PathBuf, Vec<u8>)]) -> Vec<String> {
    l.iter().map(|(p, _)| p.display().to_string()).collect()
}

/// Gives `root` and all under it to nobody (when root: see `is_root`).
fn give_away(root: &Path) {
    if !is_root() {
        return;
    }
    for e in walkdir::WalkDir::new(root) {
        let p = e.unwrap().into_path();
        std::os::unix::fs::lchown(&p, Some(65534), Some(65534)).unwrap();
    }
}

fn os<S: AsRef<OsStr> + ?Sized>(s: &S) -> &OsStr {
    s.as_ref()
}

#[test]
fn clean_removes_exactly_what_compress_wrote() {
    let top = tempfile::tempdir().unwrap();
    let (site, store) = (top.path().join("site"), top.path().join("store"));
    fs::create_dir_all(site.join("style")).unwrap();
    fs::create_dir_all(site.join("js")).unwrap();
    let s = |n: &str| site.join(n);
    fs::write(s("index.html"), page(40_000, 1)).unwrap();
    fs::write(s("js/app.js"), page(30_000, 2)).unwrap();
    fs::write(s("secret.html"), page(5_000, 3)).unwrap();
    fs::write(s("tiny.css"), b"p{}").unwrap();
    let compress = |extra: &[&str]| {
        let mut a: Vec<&OsStr> = vec![os("compress"), os("-q"), os("--store"), store.as_os_str()];
        a.extend(extra.iter().map(os));
        a.push(site.as_os_str());
        let o = publish_tool(&a);
        assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    };
    compress(&[]);
    // A new version of app.js, compressed with deltas against the old one,
    // which the store keeps; its .gz is not redone, so it still holds the
    // old version (the store names it).
    fs::write(s("js/app.js"), page(31_000, 2)).unwrap();
    set_mtime(&s("js/app.js"), SystemTime::now() + Duration::from_secs(5));
    compress(&["--delta-versions", "1", "--brotli", "--zstd"]);
    let deltas = fs::read_dir(site.join("js"))
        .unwrap()
        .filter(|e| {
            let n = e.as_ref().unwrap().file_name();
            let n = n.to_string_lossy();
            n.ends_with(".dcz") || n.ends_with(".dcb")
        })
        .count();
    assert_eq!(deltas, 2, "{:?}", names(&listing(&site)));
    assert!(store.join("versions/js/app.js").is_dir());

    // Files the tool did not write.
    fs::write(s("style/common.dtd.gz"), gzip_of(b"<!ENTITY x 'y'>")).unwrap();
    fs::write(s("notes.txt"), page(3_000, 4)).unwrap();
    fs::write(s("notes.txt.gz"), gzip_of(&page(3_000, 5))).unwrap();
    fs::write(s("index.html.zstd"), fs::read(s("index.html.zst")).unwrap()).unwrap();
    std::os::unix::fs::symlink("index.html", s("alias.html")).unwrap();
    std::os::unix::fs::symlink("index.html.gz", s("alias.html.gz")).unwrap();
    fs::write(s("broken.html"), page(2_000, 6)).unwrap();
    fs::write(s("broken.html.br"), b"not brotli at all").unwrap();
    // One of the tool's own, but unreadable: it stays, told.
    fs::set_permissions(s("secret.html.gz"), fs::Permissions::from_mode(0o000)).unwrap();
    give_away(top.path());

    let before = listing(&site);
    let mine: Vec<&str> = vec![
        "index.html.br",
        "index.html.gz",
        "index.html.zst",
        "js/app.js.br",
        "js/app.js.gz",
        "js/app.js.zst",
        "secret.html.br",
        "secret.html.zst",
    ];
    let goes = |p: &Path| {
        let n = p.to_string_lossy();
        mine.contains(&n.as_ref()) || n.ends_with(".dcz") || n.ends_with(".dcb")
    };

    let dry = run(&[
        os("clean"),
        os("--dry-run"),
        os("--store"),
        store.as_os_str(),
        site.as_os_str(),
    ]);
    assert_eq!(
        dry.status.code(),
        Some(1),
        "{}{}",
        stdout(&dry),
        stderr(&dry)
    );
    assert_eq!(listing(&site), before, "--dry-run removed something");
    assert!(store.is_dir());
    let out = stdout(&dry);
    let listed: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_suffix(": would be removed"))
        .collect();
    let mut expected: Vec<String> = before
        .iter()
        .filter(|(p, _)| goes(p))
        .map(|(p, _)| site.join(p).display().to_string())
        .collect();
    expected.push(store.display().to_string());
    let mut got: Vec<String> = listed.iter().map(|s| s.to_string()).collect();
    got.sort();
    expected.sort();
    assert_eq!(got, expected, "{out}");
    assert!(out.contains("siblings to remove: 8 ("), "{out}");
    assert!(out.contains("deltas to remove: 2 ("), "{out}");

    let o = run(&[
        os("clean"),
        os("--store"),
        store.as_os_str(),
        site.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("secret.html.gz") && err.contains("ermission denied"),
        "{err}"
    );
    let after = listing(&site);
    let kept: Vec<_> = before.iter().filter(|(p, _)| !goes(p)).cloned().collect();
    assert_eq!(names(&after), names(&kept));
    assert_eq!(after, kept, "a file that stays was changed");
    assert!(!store.exists(), "the store stays");
    let out = stdout(&o);
    assert!(out.contains("siblings removed: 8 ("), "{out}");
    assert!(out.contains("kept, no original: 1"), "{out}");
    // notes.txt.gz, index.html.zstd, broken.html.br; the symlink's walk
    // skips it, and secret.html.gz is an error.
    assert!(
        out.contains("kept, not made by gzip-disk-ng from its original: 3"),
        "{out}"
    );
    assert!(out.contains("errors: 1"), "{out}");

    // Nothing of the tool's is left: a second run removes nothing.
    fs::set_permissions(s("secret.html.gz"), fs::Permissions::from_mode(0o644)).unwrap();
    let o = run(&[
        os("clean"),
        os("-q"),
        os("--store"),
        store.as_os_str(),
        site.as_os_str(),
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert_prints(&o, "siblings removed: 1 (");
    assert_prints(&o, "deltas removed: 0 (0 bytes)");
}

/// `data` gzipped by the system's gzip: a file no run of the tool wrote.
fn gzip_of(data: &[u8]) -> Vec<u8> {
    tool_on_file("gzip", &["-c", "-n"], data)
}

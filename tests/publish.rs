//! End-to-end tests of the `gzip-disk-ng` binary on generated trees.

mod common;

use common::*;
use gdn_core::coding::Coding;
use gdn_core::jitter;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

const SUFFIX: [(Coding, &str); 3] = [
    (Coding::Zstd, ".zst"),
    (Coding::Br, ".br"),
    (Coding::Gzip, ".gz"),
];

/// `gzip-disk-ng compress -q PATH`, which must succeed.
fn compress_quietly(path: &OsStr) -> Output {
    let o = publish_tool([OsStr::new("compress"), OsStr::new("-q"), path]);
    assert!(o.status.success(), "{}", stderr(&o));
    o
}

fn tree() -> (tempfile::TempDir, Vec<PathBuf>) {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    fs::create_dir_all(r.join("a/b")).unwrap();
    let files = vec![
        (r.join("index.html"), page(50_000, 1)),
        (r.join("a/style.css"), page(3000, 2)),
        (r.join("a/b/app.js"), page(300_000, 3)),
        (r.join("a/b/data.json"), page(1000, 4)),
    ];
    for (p, c) in &files {
        fs::write(p, c).unwrap();
    }
    (d, files.into_iter().map(|(p, _)| p).collect())
}

#[test]
fn round_trip_each_coding() {
    let (d, files) = tree();
    let o = compress_quietly(d.path().as_os_str());
    assert_prints(&o, "compressed: 4");
    for f in &files {
        let orig = fs::read(f).unwrap();
        for (c, s) in SUFFIX {
            let data = fs::read(sibling(f, s)).unwrap();
            assert_eq!(oracle_decoded(Some(c.token()), &data), orig, "{f:?}{s}");
            if c == Coding::Br {
                // An empty last meta-block (at any bit), which the module
                // pads before once it has proved the stream.
                let proof = jitter::prove_brotli(
                    |o| &data[o as usize..],
                    data.len() as u64,
                    jitter::BROTLI_PROOF_MAX,
                );
                assert_eq!(proof, Ok(()), "{f:?}");
            }
        }
    }
    for (tool, s) in [("gzip", ".gz"), ("zstd", ".zst"), ("brotli", ".br")] {
        if !have(tool) {
            skip(&format!("{tool} not on PATH: its decoding check"));
            continue;
        }
        for f in &files {
            let st = Command::new(tool)
                .arg("-t")
                .arg(sibling(f, s))
                .status()
                .unwrap();
            assert!(st.success(), "{tool} -t {f:?}{s}");
        }
    }
    let o = publish_tool([OsStr::new("verify"), OsStr::new("-q"), d.path().as_os_str()]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert_prints(&o, "ok: 12");

    let o = publish_tool([
        OsStr::new("compress"),
        OsStr::new("-q"),
        OsStr::new("--force"),
        OsStr::new("--brotli"),
        OsStr::new("--no-jitter-trailer"),
        files[0].as_os_str(),
    ]);
    // The old option is a no-op now, kept so scripts keep working.
    assert!(o.status.success());
    assert!(stderr(&o).contains("deprecated"), "{}", stderr(&o));
    let plain = fs::read(sibling(&files[0], ".br")).unwrap();
    let proof = jitter::prove_brotli(|o| &plain[o as usize..], plain.len() as u64, 1 << 26);
    assert_eq!(proof, Ok(()));
    assert_eq!(
        oracle_decoded(Some("br"), &plain),
        fs::read(&files[0]).unwrap()
    );
}

#[test]
fn incremental_rerun_does_no_work_and_force_redoes() {
    let (d, files) = tree();
    let root = d.path().as_os_str();
    compress_quietly(root);
    let inode = |p: &Path| fs::metadata(p).unwrap().ino();
    let before: Vec<u64> = files.iter().map(|f| inode(&sibling(f, ".br"))).collect();
    let o = publish_tool([OsStr::new("compress"), root]);
    assert!(o.status.success());
    // Its own siblings are not counted as files, nor skipped.
    assert_prints(
        &o,
        "files seen: 4, compressed: 0, up to date: 4, skipped: 0,",
    );
    let after: Vec<u64> = files.iter().map(|f| inode(&sibling(f, ".br"))).collect();
    assert_eq!(before, after, "siblings were rewritten");

    // A changed original is redone, alone.
    fs::write(&files[1], page(4000, 9)).unwrap();
    set_mtime(&files[1], SystemTime::now() + Duration::from_secs(5));
    let o = publish_tool([OsStr::new("compress"), OsStr::new("-q"), root]);
    assert_prints(&o, "compressed: 1, up to date: 3");
    assert_eq!(
        oracle_decoded(Some("gzip"), &fs::read(sibling(&files[1], ".gz")).unwrap()),
        fs::read(&files[1]).unwrap()
    );

    let o = publish_tool([
        OsStr::new("compress"),
        OsStr::new("-q"),
        OsStr::new("--force"),
        root,
    ]);
    assert_prints(&o, "compressed: 4");
}

#[test]
fn siblings_get_original_mtime_and_permissions() {
    let (d, files) = tree();
    let t = SystemTime::UNIX_EPOCH + Duration::new(1_600_000_000, 987_654_321);
    fs::set_permissions(&files[0], fs::Permissions::from_mode(0o640)).unwrap();
    set_mtime(&files[0], t);
    fs::set_permissions(&files[2], fs::Permissions::from_mode(0o604)).unwrap();
    compress_quietly(d.path().as_os_str());
    for (_, s) in SUFFIX {
        let m = fs::metadata(sibling(&files[0], s)).unwrap();
        assert_eq!(m.modified().unwrap(), t, "{s}");
        assert_eq!(m.mode() & 0o777, 0o640, "{s}");
        let m = fs::metadata(sibling(&files[2], s)).unwrap();
        assert_eq!(m.modified().unwrap(), mtime(&files[2]));
        assert_eq!(m.mode() & 0o777, 0o604);
    }
}

#[test]
fn skip_rules_globs_and_symlinks() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    fs::create_dir_all(r.join("drafts")).unwrap();
    fs::write(r.join("photo.png"), page(5000, 1)).unwrap();
    fs::write(r.join("font.woff2"), page(5000, 1)).unwrap();
    fs::write(r.join("tiny.html"), page(200, 1)).unwrap();
    fs::write(r.join("random.txt"), noise(20_000, 0x9e37_79b9_7f4a_7c15)).unwrap();
    fs::write(r.join("page.html"), page(5000, 2)).unwrap();
    fs::write(r.join("notes.md"), page(5000, 3)).unwrap();
    fs::write(r.join("drafts/wip.html"), page(5000, 4)).unwrap();
    std::os::unix::fs::symlink(r.join("page.html"), r.join("alias.html")).unwrap();
    // An old sibling of a file that no longer pays is removed.
    fs::write(r.join("random.txt.gz"), b"stale").unwrap();
    set_mtime(&r.join("random.txt.gz"), SystemTime::UNIX_EPOCH);

    let o = publish_tool([
        OsStr::new("compress"),
        OsStr::new("--exclude"),
        OsStr::new("drafts"),
        OsStr::new("--exclude"),
        OsStr::new("*.md"),
        r.as_os_str(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    // png and woff2; random.txt.gz, beside its original, is no file of its own.
    assert!(out.contains("already compressed type: 2"), "{out}");
    assert!(out.contains("files seen: 7,"), "{out}");
    assert!(out.contains("below minimum size: 1"), "{out}");
    assert!(out.contains("symlink not followed: 1"), "{out}");
    assert!(out.contains("excluded by glob: 1"), "{out}");
    for (_, s) in SUFFIX {
        assert!(sibling(&r.join("page.html"), s).exists());
        for n in [
            "photo.png",
            "font.woff2",
            "tiny.html",
            "random.txt",
            "notes.md",
            "alias.html",
        ] {
            assert!(!sibling(&r.join(n), s).exists(), "{n}{s}");
        }
        assert!(!sibling(&r.join("drafts/wip.html"), s).exists());
    }

    let o = publish_tool([
        OsStr::new("compress"),
        OsStr::new("-q"),
        OsStr::new("--gzip"),
        OsStr::new("--include"),
        OsStr::new("*.md"),
        OsStr::new("--min-size"),
        OsStr::new("10"),
        OsStr::new("--follow-symlinks"),
        r.as_os_str(),
    ]);
    assert!(o.status.success());
    assert!(r.join("notes.md.gz").exists());
    assert!(!r.join("notes.md.br").exists());
    assert!(!r.join("tiny.html.gz").exists());

    let o = publish_tool([
        OsStr::new("compress"),
        OsStr::new("-q"),
        OsStr::new("--follow-symlinks"),
        r.join("alias.html").as_os_str(),
    ]);
    assert!(o.status.success());
    assert!(r.join("alias.html.br").exists());
}

#[test]
fn dry_run_writes_nothing() {
    let (d, _) = tree();
    let count = || walk_count(d.path());
    let n = count();
    let o = publish_tool([
        OsStr::new("compress"),
        OsStr::new("-n"),
        d.path().as_os_str(),
    ]);
    assert!(o.status.success());
    assert_prints(&o, "to compress: 4");
    assert_eq!(count(), n);
}

fn walk_count(p: &Path) -> usize {
    let mut n = 0;
    for e in fs::read_dir(p).unwrap() {
        let e = e.unwrap();
        n += if e.file_type().unwrap().is_dir() {
            walk_count(&e.path())
        } else {
            1
        };
    }
    n
}

#[test]
fn remove_originals_only_when_every_sibling_decodes_back() {
    let (d, files) = tree();
    let root = d.path().as_os_str();
    compress_quietly(root);
    corrupt(&sibling(&files[2], ".br"));
    let o = publish_tool([
        OsStr::new("compress"),
        OsStr::new("-q"),
        OsStr::new("--remove-originals"),
        root,
    ]);
    assert!(!o.status.success(), "must fail when a sibling is bad");
    let err = stderr(&o);
    assert!(
        err.contains("app.js") && err.contains("original kept"),
        "{err}"
    );
    assert!(
        files[2].exists(),
        "original with a corrupt sibling was removed"
    );
    for f in [&files[0], &files[1], &files[3]] {
        assert!(!f.exists(), "{f:?} should be removed");
        for (_, s) in SUFFIX {
            assert!(sibling(f, s).exists());
        }
    }
    assert_prints(&o, "originals removed: 3");
}

#[test]
fn verify_catches_corrupt_truncated_and_stale_siblings() {
    let (d, files) = tree();
    let root = d.path().as_os_str();
    compress_quietly(root);
    assert!(publish_tool([OsStr::new("verify"), OsStr::new("-q"), root])
        .status
        .success());

    corrupt(&sibling(&files[2], ".zst"));
    let o = publish_tool([OsStr::new("verify"), OsStr::new("-q"), root]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("app.js.zst"), "{}", stderr(&o));
    assert_prints(&o, "bad: 1");

    let gz = sibling(&files[0], ".gz");
    let data = fs::read(&gz).unwrap();
    fs::write(&gz, &data[..data.len() - 10]).unwrap();
    set_mtime(&gz, mtime(&files[0]));
    let o = publish_tool([OsStr::new("verify"), OsStr::new("-q"), root]);
    assert_prints(&o, "bad: 2");

    set_mtime(&files[1], SystemTime::now() + Duration::from_secs(60));
    let o = publish_tool([OsStr::new("verify"), OsStr::new("-q"), root]);
    assert!(!o.status.success());
    assert_prints(&o, "stale: 3");
    assert!(stderr(&o).contains("style.css.br: stale"), "{}", stderr(&o));

    // A sibling whose content differs from the original.
    let other = page(3000, 77);
    let js = sibling(&files[3], ".gz");
    fs::write(&js, gzip(&other)).unwrap();
    set_mtime(&js, mtime(&files[3]));
    let o = publish_tool([OsStr::new("verify"), js.as_os_str()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("different content"), "{}", stderr(&o));
}

#[test]
fn zstd_frames_declare_small_window_and_content_size() {
    let d = tempfile::tempdir().unwrap();
    let small = d.path().join("small.html");
    let big = d.path().join("big.txt");
    fs::write(&small, page(4000, 5)).unwrap();
    fs::write(&big, page(20 << 20, 6)).unwrap();
    let o = publish_tool([
        OsStr::new("compress"),
        OsStr::new("-q"),
        OsStr::new("--zstd"),
        OsStr::new("--zstd-level"),
        OsStr::new("3"),
        d.path().as_os_str(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = publish_tool([
        OsStr::new("compress"),
        OsStr::new("-q"),
        OsStr::new("--zstd"),
        small.as_os_str(),
    ]);
    assert!(o.status.success());
    for p in [&small, &big] {
        let z = fs::read(sibling(p, ".zst")).unwrap();
        let (window, fcs) = zstd_header(&z);
        assert_ne!(z[4] & 0x04, 0, "checksum flag missing");
        assert!(window <= 8 << 20, "{p:?}: window {window}");
        assert_eq!(fcs, Some(fs::metadata(p).unwrap().len()), "{p:?}");
    }
}

#[test]
fn killed_run_leaves_no_partial_sibling() {
    let d = tempfile::tempdir().unwrap();
    let big = d.path().join("big.txt");
    // Over the in-memory gzip limit, so every coding streams.
    fs::write(&big, page(40 << 20, 8)).unwrap();
    let mut child = Command::new(PUBLISH_TOOL)
        .env(gdn_publish::state::STATE_ENV, test_state_dir())
        .args(["compress", "-q", "--brotli", "--zstd"])
        .arg(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let has_tmp = || {
        fs::read_dir(d.path()).unwrap().any(|e| {
            let n = e.unwrap().file_name();
            n.to_string_lossy().starts_with(".big.txt.")
        })
    };
    while !has_tmp() && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(has_tmp(), "no temporary seen");
    for (c, s) in SUFFIX {
        let p = sibling(&big, s);
        if let Ok(data) = fs::read(&p) {
            // Only a complete sibling may carry the final name.
            assert_eq!(
                oracle_decoded(Some(c.token()), &data).len(),
                40 << 20,
                "{s}"
            );
        }
    }
    // Leftovers are never compressed themselves.
    let o = publish_tool([
        OsStr::new("compress"),
        OsStr::new("-n"),
        d.path().as_os_str(),
    ]);
    assert_prints(&o, "temporary file of an interrupted run");
}

#[test]
fn unreadable_and_non_utf8_files_are_reported_and_the_rest_done() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    fs::write(r.join("good.html"), page(5000, 1)).unwrap();
    let bad_name = r.join(<OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(
        b"bad\xff.html",
    ));
    fs::write(&bad_name, page(5000, 2)).unwrap();
    let secret = r.join("secret.html");
    fs::write(&secret, page(5000, 3)).unwrap();
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o000)).unwrap();
    let o = if fs::read(&secret).is_ok() {
        // Root reads every file: run the tool as nobody, to whom the tree
        // (but not the secret) belongs.
        for p in [r, &r.join("good.html"), &bad_name] {
            std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
        }
        Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                PUBLISH_TOOL,
            ])
            .args([OsStr::new("compress"), OsStr::new("-q"), r.as_os_str()])
            .output()
            .unwrap()
    } else {
        publish_tool([OsStr::new("compress"), OsStr::new("-q"), r.as_os_str()])
    };
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("not valid UTF-8"), "{err}");
    assert!(
        err.contains("secret.html") && err.contains("ermission denied"),
        "{err}"
    );
    assert!(!r.join("secret.html.gz").exists());
    assert!(r.join("good.html.br").exists());
    let leftovers = fs::read_dir(r)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with('.')
        })
        .count();
    assert_eq!(leftovers, 0);
}

/// Runs the tool with `args`, killed after 60 s.
fn run_bounded(args: &[&OsStr]) -> Output {
    let mut child = Command::new(PUBLISH_TOOL)
        .env(gdn_publish::state::STATE_ENV, test_state_dir())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("gzip-disk-ng {args:?} did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Every file under `root` by relative path, with its bytes and mtime.
fn snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>, SystemTime)> {
    let mut out: Vec<_> = walkdir::WalkDir::new(root)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            (
                e.path().strip_prefix(root).unwrap().to_path_buf(),
                fs::read(e.path()).unwrap(),
                mtime(e.path()),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn one_job_and_two_jobs_write_identical_siblings() {
    let (d1, files) = tree();
    let d2 = tempfile::tempdir().unwrap();
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_650_000_000);
    for (i, f) in files.iter().enumerate() {
        set_mtime(f, t);
        let rel = f.strip_prefix(d1.path()).unwrap();
        let g = d2.path().join(rel);
        fs::create_dir_all(g.parent().unwrap()).unwrap();
        fs::copy(f, &g).unwrap();
        set_mtime(&g, t);
        // More files than jobs, of different sizes.
        for k in 0..4 {
            let extra = page(2_000 + 7_000 * k, 100 + i as u64 * 4 + k as u64);
            for root in [d1.path(), d2.path()] {
                let p = root.join(format!("{}.{k}.txt", rel.display()));
                fs::write(&p, &extra).unwrap();
                set_mtime(&p, t);
            }
        }
    }
    for (dir, jobs) in [(d1.path(), "1"), (d2.path(), "2")] {
        let o = run_bounded(&[
            OsStr::new("compress"),
            OsStr::new("-q"),
            OsStr::new("-j"),
            OsStr::new(jobs),
            dir.as_os_str(),
        ]);
        assert!(o.status.success(), "-j {jobs}: {}", stderr(&o));
    }
    let (s1, s2) = (snapshot(d1.path()), snapshot(d2.path()));
    let sibs = s1
        .iter()
        .filter(|(p, _, _)| SUFFIX.iter().any(|(_, s)| p.to_string_lossy().ends_with(s)))
        .count();
    assert_eq!(sibs, 3 * 20, "every file in every coding");
    assert_eq!(s1.len(), s2.len());
    for (a, b) in s1.iter().zip(&s2) {
        assert_eq!(a.0, b.0);
        assert!(a.1 == b.1, "{}: -j 1 and -j 2 differ", a.0.display());
        assert_eq!(a.2, b.2, "{}", a.0.display());
    }
}

#[test]
fn siblings_get_the_original_owner() {
    let (d, files) = tree();
    let root = is_root();
    let (uid, gid) = if root {
        // nobody:nogroup, as Debian numbers them.
        for f in &files {
            std::os::unix::fs::chown(f, Some(65534), Some(65534)).unwrap();
        }
        (65534, 65534)
    } else {
        // Without root only the caller's own ids can be given.
        let m = fs::metadata(&files[0]).unwrap();
        (m.uid(), m.gid())
    };
    compress_quietly(d.path().as_os_str());
    for f in &files {
        for (_, s) in SUFFIX {
            let m = fs::metadata(sibling(f, s)).unwrap();
            assert_eq!((m.uid(), m.gid()), (uid, gid), "{}{s}", f.display());
        }
    }
}

//! End-to-end tests of the `gzip-disk-ng` binary on generated trees.

mod common;

use mod_gzip_disk_ng::coding::Coding;
use mod_gzip_disk_ng::decode::decode_all;
use mod_gzip_disk_ng::jitter;
use std::ffi::OsStr;
use std::fs::{self, File};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

const BIN: &str = env!("CARGO_BIN_EXE_gzip-disk-ng");
const SUFFIX: [(Coding, &str); 3] = [
    (Coding::Zstd, ".zst"),
    (Coding::Br, ".br"),
    (Coding::Gzip, ".gz"),
];

fn run<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(args: I) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn text(n: usize, seed: u32) -> Vec<u8> {
    let words = [
        "<p>",
        "Apache ",
        "module ",
        "</p>\n",
        "gzip ",
        "zstd ",
        "brotli ",
        "sibling ",
        "<a href=\"x.html\">",
        "</a> ",
        "the ",
        "server ",
    ];
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    let mut v = Vec::with_capacity(n + 16);
    while v.len() < n {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        v.extend_from_slice(words[(x >> 16) as usize % words.len()].as_bytes());
    }
    v.truncate(n);
    v
}

fn noise(n: usize) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn sib(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn set_mtime(p: &Path, t: SystemTime) {
    File::options()
        .write(true)
        .open(p)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

fn mtime(p: &Path) -> SystemTime {
    fs::metadata(p).unwrap().modified().unwrap()
}

/// Flips bytes in the middle of a file, keeping its mtime (bit rot).
fn corrupt(p: &Path) {
    let t = mtime(p);
    let mut d = fs::read(p).unwrap();
    let mid = d.len() / 2;
    let end = (mid + 32).min(d.len());
    for b in &mut d[mid..end] {
        *b ^= 0x55;
    }
    fs::write(p, d).unwrap();
    set_mtime(p, t);
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn tree() -> (tempfile::TempDir, Vec<PathBuf>) {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    fs::create_dir_all(r.join("a/b")).unwrap();
    let files = vec![
        (r.join("index.html"), text(50_000, 1)),
        (r.join("a/style.css"), text(3000, 2)),
        (r.join("a/b/app.js"), text(300_000, 3)),
        (r.join("a/b/data.json"), text(1000, 4)),
    ];
    for (p, c) in &files {
        fs::write(p, c).unwrap();
    }
    (d, files.into_iter().map(|(p, _)| p).collect())
}

fn cli_available(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn round_trip_each_coding() {
    let (d, files) = tree();
    let o = run([
        OsStr::new("compress"),
        OsStr::new("-q"),
        d.path().as_os_str(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("compressed: 4"), "{}", stdout(&o));
    for f in &files {
        let orig = fs::read(f).unwrap();
        for (c, s) in SUFFIX {
            let data = fs::read(sib(f, s)).unwrap();
            assert_eq!(decode_all(c, &data).unwrap(), orig, "{f:?}{s}");
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
        if !cli_available(tool) {
            common::skip(&format!("{tool} not on PATH: its decoding check"));
            continue;
        }
        for f in &files {
            let st = Command::new(tool)
                .arg("-t")
                .arg(sib(f, s))
                .status()
                .unwrap();
            assert!(st.success(), "{tool} -t {f:?}{s}");
        }
    }
    let o = run([OsStr::new("verify"), OsStr::new("-q"), d.path().as_os_str()]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("ok: 12"), "{}", stdout(&o));

    let o = run([
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
    let plain = fs::read(sib(&files[0], ".br")).unwrap();
    let proof = jitter::prove_brotli(|o| &plain[o as usize..], plain.len() as u64, 1 << 26);
    assert_eq!(proof, Ok(()));
    assert_eq!(
        decode_all(Coding::Br, &plain).unwrap(),
        fs::read(&files[0]).unwrap()
    );
}

#[test]
fn incremental_rerun_does_no_work_and_force_redoes() {
    let (d, files) = tree();
    let root = d.path().as_os_str();
    assert!(run([OsStr::new("compress"), OsStr::new("-q"), root])
        .status
        .success());
    let inode = |p: &Path| fs::metadata(p).unwrap().ino();
    let before: Vec<u64> = files.iter().map(|f| inode(&sib(f, ".br"))).collect();
    let t = Instant::now();
    let o = run([OsStr::new("compress"), root]);
    assert!(o.status.success());
    assert!(
        stdout(&o).contains("compressed: 0, up to date: 4"),
        "{}",
        stdout(&o)
    );
    assert!(t.elapsed() < Duration::from_secs(5));
    let after: Vec<u64> = files.iter().map(|f| inode(&sib(f, ".br"))).collect();
    assert_eq!(before, after, "siblings were rewritten");

    // A changed original is redone, alone.
    fs::write(&files[1], text(4000, 9)).unwrap();
    set_mtime(&files[1], SystemTime::now() + Duration::from_secs(5));
    let o = run([OsStr::new("compress"), OsStr::new("-q"), root]);
    assert!(
        stdout(&o).contains("compressed: 1, up to date: 3"),
        "{}",
        stdout(&o)
    );
    assert_eq!(
        decode_all(Coding::Gzip, &fs::read(sib(&files[1], ".gz")).unwrap()).unwrap(),
        fs::read(&files[1]).unwrap()
    );

    let o = run([
        OsStr::new("compress"),
        OsStr::new("-q"),
        OsStr::new("--force"),
        root,
    ]);
    assert!(stdout(&o).contains("compressed: 4"), "{}", stdout(&o));
}

#[test]
fn siblings_get_original_mtime_and_permissions() {
    let (d, files) = tree();
    let t = SystemTime::UNIX_EPOCH + Duration::new(1_600_000_000, 987_654_321);
    fs::set_permissions(&files[0], fs::Permissions::from_mode(0o640)).unwrap();
    set_mtime(&files[0], t);
    fs::set_permissions(&files[2], fs::Permissions::from_mode(0o604)).unwrap();
    assert!(run([
        OsStr::new("compress"),
        OsStr::new("-q"),
        d.path().as_os_str()
    ])
    .status
    .success());
    for (_, s) in SUFFIX {
        let m = fs::metadata(sib(&files[0], s)).unwrap();
        assert_eq!(m.modified().unwrap(), t, "{s}");
        assert_eq!(m.mode() & 0o777, 0o640, "{s}");
        let m = fs::metadata(sib(&files[2], s)).unwrap();
        assert_eq!(m.modified().unwrap(), mtime(&files[2]));
        assert_eq!(m.mode() & 0o777, 0o604);
    }
}

#[test]
fn skip_rules_globs_and_symlinks() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    fs::create_dir_all(r.join("drafts")).unwrap();
    fs::write(r.join("photo.png"), text(5000, 1)).unwrap();
    fs::write(r.join("font.woff2"), text(5000, 1)).unwrap();
    fs::write(r.join("tiny.html"), text(200, 1)).unwrap();
    fs::write(r.join("random.txt"), noise(20_000)).unwrap();
    fs::write(r.join("page.html"), text(5000, 2)).unwrap();
    fs::write(r.join("notes.md"), text(5000, 3)).unwrap();
    fs::write(r.join("drafts/wip.html"), text(5000, 4)).unwrap();
    std::os::unix::fs::symlink(r.join("page.html"), r.join("alias.html")).unwrap();
    // An old sibling of a file that no longer pays is removed.
    fs::write(r.join("random.txt.gz"), b"stale").unwrap();
    set_mtime(&r.join("random.txt.gz"), SystemTime::UNIX_EPOCH);

    let o = run([
        OsStr::new("compress"),
        OsStr::new("--exclude"),
        OsStr::new("drafts"),
        OsStr::new("--exclude"),
        OsStr::new("*.md"),
        r.as_os_str(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("already compressed type: 3"), "{out}"); // png, woff2, old .gz
    assert!(out.contains("below minimum size: 1"), "{out}");
    assert!(out.contains("symlink not followed: 1"), "{out}");
    assert!(out.contains("excluded by glob: 1"), "{out}");
    for (_, s) in SUFFIX {
        assert!(sib(&r.join("page.html"), s).exists());
        for n in [
            "photo.png",
            "font.woff2",
            "tiny.html",
            "random.txt",
            "notes.md",
            "alias.html",
        ] {
            assert!(!sib(&r.join(n), s).exists(), "{n}{s}");
        }
        assert!(!sib(&r.join("drafts/wip.html"), s).exists());
    }

    let o = run([
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

    let o = run([
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
    let o = run([
        OsStr::new("compress"),
        OsStr::new("-n"),
        d.path().as_os_str(),
    ]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("to compress: 4"), "{}", stdout(&o));
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
    assert!(run([OsStr::new("compress"), OsStr::new("-q"), root])
        .status
        .success());
    corrupt(&sib(&files[2], ".br"));
    let o = run([
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
            assert!(sib(f, s).exists());
        }
    }
    assert!(
        stdout(&o).contains("originals removed: 3"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn verify_catches_corrupt_truncated_and_stale_siblings() {
    let (d, files) = tree();
    let root = d.path().as_os_str();
    assert!(run([OsStr::new("compress"), OsStr::new("-q"), root])
        .status
        .success());
    assert!(run([OsStr::new("verify"), OsStr::new("-q"), root])
        .status
        .success());

    corrupt(&sib(&files[2], ".zst"));
    let o = run([OsStr::new("verify"), OsStr::new("-q"), root]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("app.js.zst"), "{}", stderr(&o));
    assert!(stdout(&o).contains("bad: 1"), "{}", stdout(&o));

    let gz = sib(&files[0], ".gz");
    let data = fs::read(&gz).unwrap();
    fs::write(&gz, &data[..data.len() - 10]).unwrap();
    set_mtime(&gz, mtime(&files[0]));
    let o = run([OsStr::new("verify"), OsStr::new("-q"), root]);
    assert!(stdout(&o).contains("bad: 2"), "{}", stdout(&o));

    set_mtime(&files[1], SystemTime::now() + Duration::from_secs(60));
    let o = run([OsStr::new("verify"), OsStr::new("-q"), root]);
    assert!(!o.status.success());
    assert!(stdout(&o).contains("stale: 3"), "{}", stdout(&o));
    assert!(stderr(&o).contains("style.css.br: stale"), "{}", stderr(&o));

    // A sibling whose content differs from the original.
    let other = text(3000, 77);
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut e, &other).unwrap();
    let js = sib(&files[3], ".gz");
    fs::write(&js, e.finish().unwrap()).unwrap();
    set_mtime(&js, mtime(&files[3]));
    let o = run([OsStr::new("verify"), js.as_os_str()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("different content"), "{}", stderr(&o));
}

/// Independent parse of a zstd frame header: (window size, content size).
fn zstd_header(b: &[u8]) -> (u64, Option<u64>) {
    assert_eq!(b[..4], [0x28, 0xb5, 0x2f, 0xfd]);
    let fhd = b[4];
    let fcs_flag = fhd >> 6;
    let single = fhd & 0x20 != 0;
    assert_ne!(fhd & 0x04, 0, "checksum flag missing");
    let did = [0, 1, 2, 4][(fhd & 3) as usize];
    let mut pos = 5;
    let mut window = None;
    if !single {
        let wd = b[5];
        let base = 1u64 << (10 + (wd >> 3));
        window = Some(base + base / 8 * u64::from(wd & 7));
        pos += 1;
    }
    pos += did;
    let fcs_len = match (fcs_flag, single) {
        (0, false) => 0,
        (0, true) => 1,
        (1, _) => 2,
        (2, _) => 4,
        _ => 8,
    };
    let mut fcs = None;
    if fcs_len > 0 {
        let mut v = 0u64;
        for (i, x) in b[pos..pos + fcs_len].iter().enumerate() {
            v |= u64::from(*x) << (8 * i);
        }
        if fcs_len == 2 {
            v += 256;
        }
        fcs = Some(v);
    }
    (window.or(fcs).unwrap(), fcs)
}

#[test]
fn zstd_frames_declare_small_window_and_content_size() {
    let d = tempfile::tempdir().unwrap();
    let small = d.path().join("small.html");
    let big = d.path().join("big.txt");
    fs::write(&small, text(4000, 5)).unwrap();
    fs::write(&big, text(20 << 20, 6)).unwrap();
    let o = run([
        OsStr::new("compress"),
        OsStr::new("-q"),
        OsStr::new("--zstd"),
        OsStr::new("--zstd-level"),
        OsStr::new("3"),
        d.path().as_os_str(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run([
        OsStr::new("compress"),
        OsStr::new("-q"),
        OsStr::new("--zstd"),
        small.as_os_str(),
    ]);
    assert!(o.status.success());
    for p in [&small, &big] {
        let z = fs::read(sib(p, ".zst")).unwrap();
        let (window, fcs) = zstd_header(&z);
        assert!(window <= 8 << 20, "{p:?}: window {window}");
        assert_eq!(fcs, Some(fs::metadata(p).unwrap().len()), "{p:?}");
    }
}

#[test]
fn killed_run_leaves_no_partial_sibling() {
    let d = tempfile::tempdir().unwrap();
    let big = d.path().join("big.txt");
    // Over the in-memory gzip limit, so every coding streams.
    fs::write(&big, text(40 << 20, 8)).unwrap();
    let mut child = Command::new(BIN)
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
        let p = sib(&big, s);
        if let Ok(data) = fs::read(&p) {
            // Only a complete sibling may carry the final name.
            assert_eq!(decode_all(c, &data).unwrap().len(), 40 << 20, "{s}");
        }
    }
    // Leftovers are never compressed themselves.
    let o = run([
        OsStr::new("compress"),
        OsStr::new("-n"),
        d.path().as_os_str(),
    ]);
    assert!(
        stdout(&o).contains("temporary file of an interrupted run"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn unreadable_and_non_utf8_files_are_reported_and_the_rest_done() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    fs::write(r.join("good.html"), text(5000, 1)).unwrap();
    let bad_name = r.join(<OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(
        b"bad\xff.html",
    ));
    fs::write(&bad_name, text(5000, 2)).unwrap();
    let secret = r.join("secret.html");
    fs::write(&secret, text(5000, 3)).unwrap();
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o000)).unwrap();
    let o = if fs::read(&secret).is_ok() {
        // Root reads every file: run the tool as nobody, to whom the tree
        // (but not the secret) belongs.
        for p in [r, &r.join("good.html"), &bad_name] {
            std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
        }
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
            .args([OsStr::new("compress"), OsStr::new("-q"), r.as_os_str()])
            .output()
            .unwrap()
    } else {
        run([OsStr::new("compress"), OsStr::new("-q"), r.as_os_str()])
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
    let mut child = Command::new(BIN)
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
            let extra = text(2_000 + 7_000 * k, 100 + i as u32 * 4 + k as u32);
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
    let root = common::is_root();
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
    let o = run([
        OsStr::new("compress"),
        OsStr::new("-q"),
        d.path().as_os_str(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    for f in &files {
        for (_, s) in SUFFIX {
            let m = fs::metadata(sib(f, s)).unwrap();
            assert_eq!((m.uid(), m.gid()), (uid, gid), "{}{s}", f.display());
        }
    }
}

//! `run` over real files in temporary directories, its jobs read from a
//! list of messages or a socket, its copies compared with what the publish
//! tool writes.

use super::state::{copy_path, State};
use super::{run, Level, Settings};
use crate::ondemand::job::{encode, CodingSet, Job, MAX_JOB};
use crate::ondemand::key::{Kind, Version};
use gdn_cli::publish;
use gdn_core::coding::{Coding, DeltaCoding};
use gdn_core::publish::delta_codec::decode;
use gdn_core::publish::options::{CompressOptions, Report};
use gdn_core::publish::sibling_path;
use gdn_core::test_util::{encoded_with, fast, noise, page, seqpacket_pair, Messages};
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

fn settings(root: &Path) -> Settings {
    Settings {
        root: root.to_path_buf(),
        max_size: 1 << 30,
        workers: 2,
        levels: fast(),
        min_saving: 5.0,
        delta_levels: gdn_core::publish::delta_codec::DeltaLevels {
            zstd: 3,
            brotli_quality: 5,
        },
    }
}

/// The log lines of one or more runs.
#[derive(Default)]
struct Lines(Mutex<Vec<(Level, String)>>);

impl Lines {
    fn log(&self) -> impl Fn(Level, &str) + Sync + '_ {
        |l, m: &str| self.0.lock().unwrap().push((l, m.to_owned()))
    }
    fn count(&self, level: Level, has: &str) -> usize {
        let lines = self.0.lock().unwrap();
        lines
            .iter()
            .filter(|(l, m)| *l == level && m.contains(has))
            .count()
    }
}

fn version(p: &Path) -> Version {
    let path = crate::ondemand::key::path_key(b"test", b"", p.as_os_str().as_bytes());
    Version::of(path, &fs::metadata(p).unwrap())
}

fn record(job: &Job<'_>) -> Vec<u8> {
    let mut buf = [0u8; MAX_JOB];
    encode(job, &mut buf).unwrap().to_vec()
}

fn all() -> CodingSet {
    Coding::ALL
        .into_iter()
        .fold(CodingSet::empty(), CodingSet::with)
}

fn compress_job(p: &Path, codings: CodingSet) -> Vec<u8> {
    record(&Job::Compress {
        path: p.as_os_str().as_bytes(),
        version: version(p),
        codings,
        deltas: None,
    })
}

fn run_over(s: &Settings, stream: Vec<Vec<u8>>, lines: &Lines) {
    run(s, Messages::new(stream), &lines.log(), &|_| {});
}

fn copy(s: &Settings, p: &Path, kind: Kind) -> PathBuf {
    copy_path(&s.root, &(version(p), kind))
}

/// A page of `n` bytes at `dir/name`.
fn page_file(dir: &Path, name: &str, n: usize, seed: u64) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, page(n, seed)).unwrap();
    p
}

/// A document tree and a cache root beside it.
fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let (docs, cache) = (d.path().join("docs"), d.path().join("cache"));
    fs::create_dir(&docs).unwrap();
    fs::create_dir(&cache).unwrap();
    (d, docs, cache)
}

#[test]
fn copies_are_what_compress_writes() {
    let (_d, docs, cache) = tree();
    let p = page_file(&docs, "a.html", 20_000, 3);
    let s = settings(&cache);
    let lines = Lines::default();
    // Over a socket, as Apache's children send it.
    let (mut tx, rx) = seqpacket_pair();
    let job = compress_job(&p, all());
    let writer = std::thread::spawn(move || tx.write_all(&job).unwrap());
    run(&s, rx, &lines.log(), &|_| {});
    writer.join().unwrap();
    let opts = CompressOptions {
        levels: fast(),
        report: Report::Quiet,
        ..CompressOptions::default()
    };
    publish::compress(std::slice::from_ref(&p), &opts).unwrap();
    let original = fs::metadata(&p).unwrap();
    for c in Coding::ALL {
        let made = copy(&s, &p, Kind::Coded(c));
        assert_eq!(
            fs::read(&made).unwrap(),
            fs::read(sibling_path(&p, c)).unwrap()
        );
        let m = fs::metadata(&made).unwrap();
        assert_eq!(m.modified().unwrap(), original.modified().unwrap());
    }
    assert_eq!(lines.count(Level::Warn, ""), 0);
}

#[test]
fn duplicate_jobs_compress_once() {
    let (_d, docs, cache) = tree();
    let p = page_file(&docs, "b.css", 8000, 4);
    let s = settings(&cache);
    let lines = Lines::default();
    let gzip = CodingSet::empty().with(Coding::Gzip);
    let mut stream = vec![compress_job(&p, all())];
    stream.push(compress_job(&p, all()));
    stream.push(compress_job(&p, gzip));
    run_over(&s, stream, &lines);
    assert_eq!(lines.count(Level::Debug, "copy of"), 3);
    let ino = fs::metadata(copy(&s, &p, Kind::Coded(Coding::Gzip)))
        .unwrap()
        .ino();
    // A later run knows the copies from the cache itself.
    run_over(&s, vec![compress_job(&p, all())], &lines);
    assert_eq!(lines.count(Level::Debug, "copy of"), 3);
    let again = fs::metadata(copy(&s, &p, Kind::Coded(Coding::Gzip))).unwrap();
    assert_eq!(again.ino(), ino);
    // Removed behind its back: made again.
    fs::remove_file(copy(&s, &p, Kind::Coded(Coding::Gzip))).unwrap();
    run_over(&s, vec![compress_job(&p, all())], &lines);
    assert_eq!(lines.count(Level::Debug, "copy of"), 4);
}

#[test]
fn another_version_is_refused() {
    let (_d, docs, cache) = tree();
    let p = page_file(&docs, "c.js", 8000, 5);
    let s = settings(&cache);
    let lines = Lines::default();
    let mut v = version(&p);
    v.size += 1;
    let job = Job::Compress {
        path: p.as_os_str().as_bytes(),
        version: v,
        codings: all(),
        deltas: None,
    };
    let mut stream = vec![record(&job)];
    let missing = docs.join("gone.html");
    let other = Version {
        path: v.path + 1,
        ..v
    };
    stream.push(record(&Job::Compress {
        path: missing.as_os_str().as_bytes(),
        version: other,
        codings: all(),
        deltas: None,
    }));
    run_over(&s, stream, &lines);
    assert_eq!(lines.count(Level::Debug, "not the version queued"), 1);
    assert_eq!(lines.count(Level::Debug, "gone.html"), 1);
    assert_eq!(lines.count(Level::Warn, ""), 0);
    for c in Coding::ALL {
        assert!(!copy_path(&s.root, &(v, Kind::Coded(c))).exists());
    }
}

#[test]
fn incompressible_data_leaves_markers() {
    let (_d, docs, cache) = tree();
    let p = docs.join("noise.txt");
    fs::write(&p, noise(20_000, 9)).unwrap();
    let tiny = docs.join("tiny.html");
    fs::write(&tiny, b"<p>small</p>").unwrap();
    let s = settings(&cache);
    let lines = Lines::default();
    let mut stream = vec![compress_job(&p, all())];
    stream.push(compress_job(&tiny, all()));
    run_over(&s, stream, &lines);
    for c in Coding::ALL {
        let m = fs::metadata(copy(&s, &p, Kind::Coded(c))).unwrap();
        assert_eq!(m.len(), 0, "{c:?}");
        assert!(!copy(&s, &tiny, Kind::Coded(c)).exists());
    }
}

#[test]
fn decoded_copies_equal_the_original() {
    let (_d, docs, cache) = tree();
    let content = page(30_000, 6);
    let s = settings(&cache);
    let lines = Lines::default();
    let mut stream = Vec::new();
    let mut siblings = Vec::new();
    for c in Coding::ALL {
        let sib = sibling_path(&docs.join(format!("{}.html", c.token())), c);
        fs::write(&sib, encoded_with(c, &fast(), &content)).unwrap();
        stream.push(record(&Job::Decode {
            path: sib.as_os_str().as_bytes(),
            coding: c,
            version: version(&sib),
        }));
        siblings.push(sib);
    }
    let corrupt = docs.join("bad.html.gz");
    fs::write(&corrupt, b"\x1f\x8b\x08 not really gzip at all").unwrap();
    stream.push(record(&Job::Decode {
        path: corrupt.as_os_str().as_bytes(),
        coding: Coding::Gzip,
        version: version(&corrupt),
    }));
    run_over(&s, stream, &lines);
    for sib in &siblings {
        let made = copy(&s, sib, Kind::Decoded);
        assert_eq!(fs::read(&made).unwrap(), content, "{}", sib.display());
        let (m, sm) = (fs::metadata(&made).unwrap(), fs::metadata(sib).unwrap());
        assert_eq!(m.modified().unwrap(), sm.modified().unwrap());
    }
    assert!(!copy(&s, &corrupt, Kind::Decoded).exists());
    assert_eq!(lines.count(Level::Warn, "cannot decode"), 1);
}

#[test]
fn eviction_keeps_the_limit_and_a_touched_copy() {
    let (_d, docs, cache) = tree();
    let gzip = CodingSet::empty().with(Coding::Gzip);
    let files: Vec<PathBuf> = (0..4)
        .map(|i| page_file(&docs, &format!("{i}.html"), 6000, 10 + i))
        .collect();
    let sizes: Vec<u64> = files
        .iter()
        .map(|p| encoded_with(Coding::Gzip, &fast(), &fs::read(p).unwrap()).len() as u64)
        .collect();
    let (min, max) = (*sizes.iter().min().unwrap(), *sizes.iter().max().unwrap());
    let mut s = settings(&cache);
    s.workers = 1;
    s.max_size = 3 * max + min / 2;
    let lines = Lines::default();
    let mut stream = vec![compress_job(&files[0], gzip)];
    stream.push(compress_job(&files[1], gzip));
    run_over(&s, stream, &lines);
    // The first copy is served, then two more are made.
    let mut stream = vec![record(&Job::Touch {
        version: version(&files[0]),
        kind: Kind::Coded(Coding::Gzip),
    })];
    stream.push(compress_job(&files[2], gzip));
    stream.push(compress_job(&files[3], gzip));
    run_over(&s, stream, &lines);
    let kept: Vec<bool> = files
        .iter()
        .map(|p| copy(&s, p, Kind::Coded(Coding::Gzip)).exists())
        .collect();
    assert_eq!(kept, [true, false, true, true]);
    let total: u64 = walkdir::WalkDir::new(&cache)
        .into_iter()
        .map(|e| e.unwrap().metadata().unwrap())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum();
    assert!(total <= s.max_size, "{total} > {}", s.max_size);
    // A restart with a smaller limit evicts at once, least recent first.
    s.max_size = max;
    run_over(&s, Vec::new(), &lines);
    assert!(copy(&s, &files[3], Kind::Coded(Coding::Gzip)).exists());
    assert!(!copy(&s, &files[0], Kind::Coded(Coding::Gzip)).exists());
}

/// Bytes of every file under `root` (copies, markers, the lock).
fn bytes_under(root: &Path) -> u64 {
    walkdir::WalkDir::new(root)
        .into_iter()
        .map(|e| e.unwrap().metadata().unwrap())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

#[test]
fn a_copy_larger_than_the_limit_is_not_kept_and_the_limit_holds_after_each_job() {
    let (_d, docs, cache) = tree();
    let gzip = CodingSet::empty().with(Coding::Gzip);
    let small = page_file(&docs, "small.html", 6000, 3);
    let large = page_file(&docs, "large.html", 200_000, 4);
    let size = |p: &Path| encoded_with(Coding::Gzip, &fast(), &fs::read(p).unwrap()).len() as u64;
    let mut s = settings(&cache);
    s.workers = 1;
    s.max_size = size(&small) * 3 / 2;
    assert!(
        size(&large) > s.max_size,
        "the large page's copy must exceed the limit"
    );
    let lines = Lines::default();
    run_over(&s, vec![compress_job(&small, gzip)], &lines);
    assert!(bytes_under(&cache) <= s.max_size);
    run_over(&s, vec![compress_job(&large, gzip)], &lines);
    assert!(
        bytes_under(&cache) <= s.max_size,
        "{} > {}",
        bytes_under(&cache),
        s.max_size
    );
    // A marker stands in for it, so it is not made again per request.
    let marker = copy(&s, &large, Kind::Coded(Coding::Gzip));
    assert_eq!(fs::metadata(&marker).unwrap().len(), 0);
    assert_eq!(lines.count(Level::Info, "not kept"), 1);
    assert!(copy(&s, &small, Kind::Coded(Coding::Gzip)).exists());
}

#[test]
fn leftovers_are_removed_at_start() {
    let (_d, docs, cache) = tree();
    let p = page_file(&docs, "d.html", 5000, 7);
    let s = settings(&cache);
    let lines = Lines::default();
    run_over(&s, vec![compress_job(&p, all())], &lines);
    let made = copy(&s, &p, Kind::Coded(Coding::Br));
    let name = made.file_name().unwrap().to_str().unwrap();
    let dir = made.parent().unwrap();
    let left = [
        dir.join(format!(".{name}.tmp1a2b3c")),
        cache.join(format!(".{name}.tmpff")),
        dir.join(".803-12345-1388-1-2.gz.tmp3c"),
    ];
    // A killed run's: no one holds them, whatever their age.
    for (i, l) in left.iter().enumerate() {
        fs::write(l, b"partial").unwrap();
        if i == 0 {
            let stale = SystemTime::now() - super::state::STALE_TEMP - Duration::from_secs(5);
            let f = fs::File::options().write(true).open(l).unwrap();
            f.set_modified(stale).unwrap();
        }
    }
    // Another compressor's, being written (it holds its lock): left alone.
    let fresh = dir.join(format!(".{name}.tmp77"));
    fs::write(&fresh, b"partial").unwrap();
    let writer = fs::File::options().write(true).open(&fresh).unwrap();
    writer.try_lock().unwrap();
    // Named the older way (device, inode, ctime): removed.
    let old = dir.join("803-12345-1388-1-2.br");
    fs::write(&old, b"old").unwrap();
    let foreign = dir.join("notes.txt");
    fs::write(&foreign, b"not ours").unwrap();
    run_over(&s, Vec::new(), &lines);
    assert!(left.iter().all(|l| !l.exists()));
    assert!(fresh.exists() && !old.exists());
    drop(writer);
    assert!(foreign.exists() && made.exists());
    assert_eq!(lines.count(Level::Info, "3 entries"), 1);
    assert_eq!(
        lines.count(Level::Info, "3 leftover temporaries removed"),
        1
    );
}

#[test]
fn site_records_of_the_older_rule_are_removed_at_start() {
    let (_d, _docs, cache) = tree();
    let s = settings(&cache);
    let old = cache
        .join(crate::ondemand::key::RETIRED_SITE_DIR)
        .join("ab12");
    fs::create_dir_all(&old).unwrap();
    fs::write(old.join("pages"), b"/srv/www/private.html\n").unwrap();
    fs::write(old.join("current.dat"), b"learned from a private page").unwrap();
    let lines = Lines::default();
    run_over(&s, Vec::new(), &lines);
    assert!(!cache.join(crate::ondemand::key::RETIRED_SITE_DIR).exists());
}

#[test]
fn an_unwritable_cache_warns_once() {
    let (d, docs, _) = tree();
    let file = d.path().join("a-file");
    fs::write(&file, b"").unwrap();
    let s = settings(&file.join("cache"));
    let lines = Lines::default();
    let mut stream = Vec::new();
    for i in 0..3 {
        let p = page_file(&docs, &format!("{i}.html"), 5000, i);
        stream.push(compress_job(&p, all()));
    }
    let sib = docs.join("s.html.gz");
    fs::write(&sib, encoded_with(Coding::Gzip, &fast(), &page(5000, 1))).unwrap();
    stream.push(record(&Job::Decode {
        path: sib.as_os_str().as_bytes(),
        coding: Coding::Gzip,
        version: version(&sib),
    }));
    run_over(&s, stream, &lines);
    assert_eq!(lines.count(Level::Warn, ""), 1);
    assert_eq!(lines.count(Level::Warn, "cannot write the cache"), 1);
}

#[test]
fn the_warning_comes_again_after_a_recovery() {
    let (_d, _docs, cache) = tree();
    let s = settings(&cache);
    let lines = Lines::default();
    let log = lines.log();
    let mut state = State::start(&s, &log);
    let e = std::io::Error::from(std::io::ErrorKind::StorageFull);
    state.cache_failed(&s, &e, &log);
    state.cache_failed(&s, &e, &log);
    assert_eq!(lines.count(Level::Warn, ""), 1);
    let v = Version {
        path: 2,
        size: 3,
        mtime_us: 4,
        ..Version::NONE
    };
    state.made(&s, (v, Kind::Decoded), 0, &log);
    assert_eq!(lines.count(Level::Notice, "written again"), 1);
    state.cache_failed(&s, &e, &log);
    assert_eq!(lines.count(Level::Warn, ""), 2);
}

/// Events of a run, to count what it dropped.
#[derive(Default)]
struct Events(Mutex<Vec<super::Event>>);

impl Events {
    fn tally(&self) -> impl Fn(super::Event) + Sync + '_ {
        |e| self.0.lock().unwrap().push(e)
    }
    fn dropped(&self) -> u64 {
        let events = self.0.lock().unwrap();
        events
            .iter()
            .map(|e| match e {
                super::Event::Copies(crate::metrics::tally::Job::Dropped, n) => *n,
                _ => 0,
            })
            .sum()
    }
}

/// Waits (up to 20 s) until `done` holds.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "timed out: {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A run on `s` in a thread, reading jobs from a socket until the
/// returned end is dropped; started once its start is logged.
fn running<'a>(
    scope: &'a std::thread::Scope<'a, '_>,
    s: &'a Settings,
    lines: &'a Lines,
    events: &'a Events,
) -> fs::File {
    let (tx, rx) = seqpacket_pair();
    let before = lines.count(Level::Info, "entries");
    scope.spawn(move || run(s, rx, &lines.log(), &events.tally()));
    wait_until("the run's start", || {
        lines.count(Level::Info, "entries") > before
    });
    tx
}

/// A leftover temporary in a fan-out directory of `cache`.
fn leftover(s: &Settings, p: &Path) -> PathBuf {
    let made = copy(s, p, Kind::Coded(Coding::Gzip));
    let dir = made.parent().unwrap();
    fs::create_dir_all(dir).unwrap();
    let name = made.file_name().unwrap().to_str().unwrap();
    let left = dir.join(format!(".{name}.tmp1f"));
    fs::write(&left, b"partial").unwrap();
    left
}

#[test]
fn two_runs_share_a_root_and_both_make_copies() {
    let (_d, docs, cache) = tree();
    let (p, q) = (
        page_file(&docs, "e.html", 9000, 8),
        page_file(&docs, "f.html", 9000, 9),
    );
    let s = settings(&cache);
    let (first, second) = (Lines::default(), Lines::default());
    let (first_events, second_events) = (Events::default(), Events::default());
    std::thread::scope(|scope| {
        let mut one = running(scope, &s, &first, &first_events);
        let mut two = running(scope, &s, &second, &second_events);
        let left = leftover(&s, &p);
        one.write_all(&compress_job(&p, all())).unwrap();
        two.write_all(&compress_job(&q, all())).unwrap();
        let all_made = |f: &Path| {
            Coding::ALL
                .iter()
                .all(|&c| copy(&s, f, Kind::Coded(c)).exists())
        };
        wait_until("both runs' copies", || all_made(&p) && all_made(&q));
        // The second asks for what the first made: taken as done.
        two.write_all(&compress_job(&p, all())).unwrap();
        drop((one, two));
        assert!(left.exists(), "another run's temporary is left alone");
    });
    assert_eq!(first.count(Level::Warn, ""), 0);
    assert_eq!(second.count(Level::Warn, ""), 0);
    assert_eq!(second_events.dropped(), 0);
}

/// A compress job asking for deltas in a scope (`group` empty: the
/// file's own path).
fn delta_job(p: &Path, group: &[u8]) -> Vec<u8> {
    record(&Job::Compress {
        path: p.as_os_str().as_bytes(),
        version: version(p),
        codings: all(),
        deltas: Some(crate::ondemand::job::Deltas {
            versions: 2,
            group,
            site: &[],
        }),
    })
}

/// `app.js` in `docs` served at a first version, then rewritten to the
/// second `edit` makes of it, a job each; the file and both versions.
fn served_then_edited(
    docs: &Path,
    s: &Settings,
    lines: &Lines,
    seed: u64,
    edit: impl FnOnce(&mut Vec<u8>),
) -> (PathBuf, Vec<u8>, Vec<u8>) {
    let p = docs.join("app.js");
    let v1 = page(60_000, seed);
    fs::write(&p, &v1).unwrap();
    run_over(s, vec![delta_job(&p, b"")], lines);
    let mut v2 = v1.clone();
    edit(&mut v2);
    fs::write(&p, &v2).unwrap();
    run_over(s, vec![delta_job(&p, b"")], lines);
    (p, v1, v2)
}

/// The delta of the file at `p` (its current version) against `dict`.
fn delta_of(s: &Settings, p: &Path, d: DeltaCoding, dict: &[u8]) -> Option<Vec<u8>> {
    let kind = Kind::Delta(d, gdn_core::dictionary::hash(dict));
    fs::read(copy(s, p, kind)).ok()
}

#[test]
fn a_file_rewritten_in_place_gets_deltas_against_its_earlier_versions() {
    let (_d, docs, cache) = tree();
    let s = settings(&cache);
    let lines = Lines::default();
    // A minor release: most of the file is the same.
    let (p, v1, v2) = served_then_edited(&docs, &s, &lines, 7, |v| {
        v[30_000..30_010].copy_from_slice(b"0123456789")
    });
    for d in DeltaCoding::ALL {
        let delta = delta_of(&s, &p, d, &v1).expect("a delta against v1");
        assert!(delta.len() < 2000, "{} bytes", delta.len());
        assert_eq!(decode(&v1, &delta).unwrap(), v2);
    }
    // v1 is kept, by its hash, from the copy it had.
    let kept = copy_path(
        &s.root,
        &(Version::NONE, Kind::Kept(gdn_core::dictionary::hash(&v1))),
    );
    assert!(kept.is_file());
    // A third version gets deltas against both; a fourth drops v1 (2 kept).
    let mut v3 = v2.clone();
    v3.extend_from_slice(b"\n// v3\n");
    fs::write(&p, &v3).unwrap();
    run_over(&s, vec![delta_job(&p, b"")], &lines);
    assert!(delta_of(&s, &p, DeltaCoding::Dcz, &v1).is_some());
    assert!(delta_of(&s, &p, DeltaCoding::Dcz, &v2).is_some());
    fs::write(&p, b"// v4\n".repeat(5000)).unwrap();
    run_over(&s, vec![delta_job(&p, b"")], &lines);
    assert!(delta_of(&s, &p, DeltaCoding::Dcz, &v1).is_none());
    assert_eq!(lines.count(Level::Warn, ""), 0);
}

#[test]
fn a_group_member_gets_deltas_against_earlier_members() {
    let (_d, docs, cache) = tree();
    let (a, b, c) = (
        docs.join("app.1.js"),
        docs.join("app.2.js"),
        docs.join("x.js"),
    );
    let v1 = page(40_000, 9);
    let mut v2 = v1.clone();
    v2.truncate(39_000);
    fs::write(&a, &v1).unwrap();
    fs::write(&b, &v2).unwrap();
    fs::write(&c, &v2).unwrap();
    let s = settings(&cache);
    let lines = Lines::default();
    let group = b"localhost:80 /app.*.js";
    run_over(&s, vec![delta_job(&a, group)], &lines);
    run_over(&s, vec![delta_job(&b, group)], &lines);
    let delta = delta_of(&s, &b, DeltaCoding::Dcz, &v1).expect("app.2 against app.1");
    assert_eq!(decode(&v1, &delta).unwrap(), v2);
    // Another scope (its own path) has no history with app.1.
    run_over(&s, vec![delta_job(&c, b"")], &lines);
    assert!(delta_of(&s, &c, DeltaCoding::Dcz, &v1).is_none());
}

#[test]
fn evicting_a_kept_version_takes_its_deltas_along() {
    let (_d, docs, cache) = tree();
    let mut s = settings(&cache);
    let lines = Lines::default();
    let (p, v1, _) = served_then_edited(&docs, &s, &lines, 11, |v| v.push(b'\n'));
    assert!(delta_of(&s, &p, DeltaCoding::Dcz, &v1).is_some());
    // A limit only the newest copies fit: the kept version goes first
    // (least recently used), and its deltas with it.
    s.max_size = 30_000;
    let other = page_file(&docs, "other.html", 50_000, 12);
    run_over(&s, vec![compress_job(&other, all())], &lines);
    let kept = copy_path(
        &s.root,
        &(Version::NONE, Kind::Kept(gdn_core::dictionary::hash(&v1))),
    );
    assert!(!kept.exists());
    for d in DeltaCoding::ALL {
        assert!(delta_of(&s, &p, d, &v1).is_none(), "{d:?}");
    }
}

/// A page of a site sharing a template with the others.
fn site_page_file(docs: &Path, i: usize) -> PathBuf {
    let p = docs.join(format!("p{i:02}.html"));
    let nav = "<nav><a href=/>Home</a> | <a href=/docs/>Docs</a> | <a href=/about/>About</a></nav>";
    let body = String::from_utf8_lossy(&page(6_000, 100 + i as u64)).into_owned();
    let html = format!(
        "<!doctype html><html><head><title>Page {i}</title></head><body>{nav}{}<main>{body}</main><footer>{}</footer></body></html>",
        "<header>The same header on every page of this site</header>".repeat(20),
        "Copyright, licence and the same footer on every page. ".repeat(30)
    );
    fs::write(&p, html).unwrap();
    p
}

/// A compress job for an HTML page of the host `localhost:80`.
fn site_job(p: &Path) -> Vec<u8> {
    record(&Job::Compress {
        path: p.as_os_str().as_bytes(),
        version: version(p),
        codings: CodingSet::empty().with(Coding::Gzip),
        deltas: Some(crate::ondemand::job::Deltas {
            versions: 0,
            group: &[],
            site: b"localhost:80",
        }),
    })
}

#[test]
fn a_site_dictionary_is_trained_from_the_pages_and_every_page_gets_deltas() {
    let (_d, docs, cache) = tree();
    let s = settings(&cache);
    let lines = Lines::default();
    let pages: Vec<PathBuf> = (0..20).map(|i| site_page_file(&docs, i)).collect();
    let current = cache.join(crate::ondemand::key::site_current_name(
        b"localhost:80",
        None,
    ));
    run_over(
        &s,
        pages[..15].iter().map(|p| site_job(p)).collect(),
        &lines,
    );
    assert!(!current.exists(), "not before 16 pages");
    run_over(
        &s,
        pages[15..].iter().map(|p| site_job(p)).collect(),
        &lines,
    );
    let dict = fs::read(&current).expect("trained at 16 pages");
    let h = gdn_core::dictionary::hash(&dict);
    assert!(copy_path(&s.root, &(Version::NONE, Kind::Kept(h))).is_file());
    for p in &pages {
        let delta = delta_of(&s, p, DeltaCoding::Dcz, &dict).expect("every page");
        assert_eq!(decode(&dict, &delta).unwrap(), fs::read(p).unwrap());
    }
    assert_eq!(lines.count(Level::Notice, "site dictionary"), 1);
    // Twice the pages: trained again; the first stays for its lifetime.
    let more: Vec<PathBuf> = (20..32).map(|i| site_page_file(&docs, i)).collect();
    run_over(&s, more.iter().map(|p| site_job(p)).collect(), &lines);
    assert_eq!(lines.count(Level::Notice, "site dictionary"), 2);
    let second = fs::read(&current).unwrap();
    assert_ne!(gdn_core::dictionary::hash(&second), h);
    assert!(delta_of(&s, &pages[0], DeltaCoding::Dcz, &dict).is_some());
    assert!(delta_of(&s, &more[0], DeltaCoding::Dcz, &second).is_some());
    // A day after it stopped being served, the first dictionary and the
    // deltas against it go.
    let record = current.with_file_name("dictionaries");
    let text = fs::read_to_string(&record).unwrap();
    let aged: String = text
        .lines()
        .map(|l| match l.rsplit_once(' ') {
            Some((head, retired)) if retired != "0" => format!("{head} 1\n"),
            _ => format!("{l}\n"),
        })
        .collect();
    fs::write(&record, aged).unwrap();
    run_over(&s, vec![site_job(&site_page_file(&docs, 40))], &lines);
    assert!(!copy_path(&s.root, &(Version::NONE, Kind::Kept(h))).exists());
    assert!(delta_of(&s, &pages[0], DeltaCoding::Dcz, &dict).is_none());
    assert!(delta_of(&s, &more[0], DeltaCoding::Dcz, &second).is_some());
}

#[test]
fn corrupt_kept_versions_and_histories_and_leftovers_of_deltas() {
    let (_d, docs, cache) = tree();
    let s = settings(&cache);
    let lines = Lines::default();
    let (p, v1, v2) =
        served_then_edited(&docs, &s, &lines, 21, |v| v.extend_from_slice(b"\n// v2\n"));
    let h1 = gdn_core::dictionary::hash(&v1);
    let kept = copy_path(&s.root, &(Version::NONE, Kind::Kept(h1)));
    let dcz = copy(&s, &p, Kind::Delta(DeltaCoding::Dcz, h1));
    // A kept version that no longer holds its content is recovered again
    // from v1's copy; one that cannot be is not used.
    fs::write(&kept, b"garbage").unwrap();
    fs::remove_file(&dcz).unwrap();
    // A killed run's temporaries of a delta and a kept version.
    let left = [
        dcz.with_file_name(format!(
            ".{}.tmp1f",
            dcz.file_name().unwrap().to_str().unwrap()
        )),
        kept.with_file_name(format!(
            ".{}.tmp2e",
            kept.file_name().unwrap().to_str().unwrap()
        )),
    ];
    let stale = SystemTime::now() - super::state::STALE_TEMP - Duration::from_secs(5);
    for l in &left {
        fs::write(l, b"partial").unwrap();
        let f = fs::File::options().write(true).open(l).unwrap();
        f.set_modified(stale).unwrap();
    }
    run_over(&s, vec![delta_job(&p, b"")], &lines);
    assert!(left.iter().all(|l| !l.exists()), "stale leftovers removed");
    let delta = fs::read(&dcz).expect("made again");
    assert_eq!(decode(&v1, &delta).unwrap(), v2);
    assert_eq!(gdn_core::publish::store::load_version(&kept).unwrap(), v1);
    // A history that is not one is read as empty: v3 then has nothing
    // earlier, and no delta is made against anything.
    for f in walkdir::WalkDir::new(cache.join("history")) {
        let f = f.unwrap();
        if f.file_type().is_file() {
            fs::write(f.path(), b"\xff\xfe not a history\n").unwrap();
        }
    }
    let mut v3 = v2.clone();
    v3.extend_from_slice(b"// v3\n");
    fs::write(&p, &v3).unwrap();
    run_over(&s, vec![delta_job(&p, b"")], &lines);
    assert!(delta_of(&s, &p, DeltaCoding::Dcz, &v2).is_none());
    assert_eq!(lines.count(Level::Warn, ""), 0);
    assert_eq!(lines.count(Level::Error, ""), 0);
}

#[test]
fn a_delta_served_keeps_its_kept_version_from_eviction() {
    let (_d, docs, cache) = tree();
    let mut s = settings(&cache);
    let lines = Lines::default();
    let (p, v1, _) =
        served_then_edited(&docs, &s, &lines, 31, |v| v.extend_from_slice(b"\n// v2\n"));
    let h1 = gdn_core::dictionary::hash(&v1);
    let kind = Kind::Delta(DeltaCoding::Dcz, h1);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let touch = record(&Job::Touch {
        version: version(&p),
        kind,
    });
    run_over(&s, vec![touch], &lines);
    let kept = copy_path(&s.root, &(Version::NONE, Kind::Kept(h1)));
    let dcz = copy(&s, &p, kind);
    let size = |f: &Path| fs::metadata(f).unwrap().len();
    // Room for those two only: the copies, made after the kept version
    // but used less lately, go at the next start.
    s.max_size = size(&kept) + size(&dcz);
    run_over(&s, Vec::new(), &lines);
    assert!(kept.exists() && dcz.exists());
    assert!(!copy(&s, &p, Kind::Coded(Coding::Br)).exists());
}

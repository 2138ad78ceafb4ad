//! `run` over real files in temporary directories, its jobs read from a
//! list of messages or a socket, its copies compared with what the publish
//! tool writes.

use super::state::{copy_path, kept_key, State};
use crate::job::{encode, CodingSet, Job, MAX_JOB};
use crate::key::{Kind, Version};
use crate::run;
use crate::settings::{CompressorSettings, Event, Severity, Stop};
use gdn_cli::publish;
use gdn_core::coding::{Coding, DeltaCoding};
use gdn_core::delta_codec::decode;
use gdn_core::test_util::{encoded_with, fast, noise, page, seqpacket_pair, Messages};
use gdn_publish::options::{CompressOptions, Report};
use gdn_publish::sibling_path;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

fn settings(root: &Path) -> CompressorSettings {
    CompressorSettings {
        root: root.to_path_buf(),
        max_size: 1 << 30,
        workers: 2,
        worker_nice: 0,
        levels: fast(),
        fast_levels: None,
        min_saving: 5.0,
        delta_levels: gdn_core::delta_codec::DeltaLevels {
            zstd: 3,
            brotli_quality: 5,
        },
        host: crate::host::Host::this(),
    }
}

/// The log lines of one or more runs.
#[derive(Default)]
struct Lines(Mutex<Vec<(Severity, String)>>);

impl Lines {
    fn log(&self) -> impl Fn(Severity, &str) + Sync + '_ {
        |l, m: &str| self.0.lock().unwrap().push((l, m.to_owned()))
    }
    fn count(&self, level: Severity, has: &str) -> usize {
        let lines = self.0.lock().unwrap();
        lines
            .iter()
            .filter(|(l, m)| *l == level && m.contains(has))
            .count()
    }
}

fn version(p: &Path) -> Version {
    Version::of(&fs::metadata(p).unwrap())
}

/// The digest of the bytes at `p`: what names the copies made of them.
fn source(p: &Path) -> gdn_core::dictionary::Hash {
    gdn_core::dictionary::hash(&fs::read(p).unwrap())
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

fn run_over(s: &CompressorSettings, stream: Vec<Vec<u8>>, lines: &Lines) {
    run(
        s,
        Messages::new(stream),
        &lines.log(),
        &|_| {},
        &Stop::new(),
    );
}

fn copy(s: &CompressorSettings, p: &Path, kind: Kind) -> PathBuf {
    copy_path(&s.root, &(source(p), kind))
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
    run(&s, rx, &lines.log(), &|_| {}, &Stop::new());
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
    assert_eq!(lines.count(Severity::Warn, ""), 0);
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
    assert_eq!(lines.count(Severity::Debug, "copy of"), 3);
    let ino = fs::metadata(copy(&s, &p, Kind::Coded(Coding::Gzip)))
        .unwrap()
        .ino();
    // A later run knows the copies from the cache itself.
    run_over(&s, vec![compress_job(&p, all())], &lines);
    assert_eq!(lines.count(Severity::Debug, "copy of"), 3);
    let again = fs::metadata(copy(&s, &p, Kind::Coded(Coding::Gzip))).unwrap();
    assert_eq!(again.ino(), ino);
    // Removed behind its back: made again.
    fs::remove_file(copy(&s, &p, Kind::Coded(Coding::Gzip))).unwrap();
    run_over(&s, vec![compress_job(&p, all())], &lines);
    assert_eq!(lines.count(Severity::Debug, "copy of"), 4);
    // One others could write, or another user's, is no copy: made anew.
    let gz = copy(&s, &p, Kind::Coded(Coding::Gzip));
    fs::set_permissions(&gz, fs::Permissions::from_mode(0o666)).unwrap();
    fs::write(&gz, b"rewritten").unwrap();
    run_over(&s, vec![compress_job(&p, all())], &lines);
    assert_eq!(lines.count(Severity::Debug, "copy of"), 5);
    let made = fs::metadata(&gz).unwrap();
    assert_eq!(made.permissions().mode() & 0o7777, 0o600);
    assert_ne!(fs::read(&gz).unwrap(), b"rewritten");
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
        mtime_us: v.mtime_us + 1,
        ..v
    };
    stream.push(record(&Job::Compress {
        path: missing.as_os_str().as_bytes(),
        version: other,
        codings: all(),
        deltas: None,
    }));
    run_over(&s, stream, &lines);
    assert_eq!(lines.count(Severity::Debug, "not the version queued"), 1);
    assert_eq!(lines.count(Severity::Debug, "gone.html"), 1);
    assert_eq!(lines.count(Severity::Warn, ""), 0);
    for c in Coding::ALL {
        assert!(!copy(&s, &p, Kind::Coded(c)).exists());
    }
}

#[test]
fn incompressible_data_leaves_stand_ins() {
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
    for (sib, c) in siblings.iter().zip(Coding::ALL) {
        let made = copy(&s, sib, Kind::Decoded(c));
        assert_eq!(fs::read(&made).unwrap(), content, "{}", sib.display());
        let (m, sm) = (fs::metadata(&made).unwrap(), fs::metadata(sib).unwrap());
        assert_eq!(m.modified().unwrap(), sm.modified().unwrap());
    }
    assert!(!copy(&s, &corrupt, Kind::Decoded(Coding::Gzip)).exists());
    assert_eq!(lines.count(Severity::Warn, "cannot decode"), 1);
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
        .map(|p| blocks(encoded_with(Coding::Gzip, &fast(), &fs::read(p).unwrap()).len()))
        .collect();
    let (min, max) = (*sizes.iter().min().unwrap(), *sizes.iter().max().unwrap());
    let mut s = settings(&cache);
    s.workers = 1;
    // Three copies and the digest table's one block.
    s.max_size = 3 * max + min / 2 + TABLE_BLOCK;
    let lines = Lines::default();
    let mut stream = vec![compress_job(&files[0], gzip)];
    stream.push(compress_job(&files[1], gzip));
    run_over(&s, stream, &lines);
    // The first copy is served, then two more are made.
    let mut stream = vec![record(&Job::Touch {
        source: source(&files[0]),
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
    s.max_size = max + TABLE_BLOCK;
    run_over(&s, Vec::new(), &lines);
    assert!(copy(&s, &files[3], Kind::Coded(Coding::Gzip)).exists());
    assert!(!copy(&s, &files[0], Kind::Coded(Coding::Gzip)).exists());
}

/// Bytes of every file under `root` (copies, stand-ins, the lock), as
/// the limit counts them: allocated blocks, this host's digest records
/// (`hosts/`) included.
fn bytes_under(root: &Path) -> u64 {
    walkdir::WalkDir::new(root)
        .into_iter()
        .map(|e| e.unwrap().metadata().unwrap())
        .filter(|m| m.is_file())
        .map(|m| m.blocks() * 512)
        .sum()
}

/// What the digest table of a small limit takes (32 slots, 2,560 bytes).
const TABLE_BLOCK: u64 = 4096;

/// What a file of `len` bytes takes on the test's filesystem (4 KiB
/// blocks).
fn blocks(len: usize) -> u64 {
    (len as u64).div_ceil(4096) * 4096
}

#[test]
fn a_copy_larger_than_the_limit_is_not_kept_and_the_limit_holds_after_each_job() {
    let (_d, docs, cache) = tree();
    let gzip = CodingSet::empty().with(Coding::Gzip);
    let small = page_file(&docs, "small.html", 6000, 3);
    let large = page_file(&docs, "large.html", 200_000, 4);
    let size = |p: &Path| blocks(encoded_with(Coding::Gzip, &fast(), &fs::read(p).unwrap()).len());
    let mut s = settings(&cache);
    s.workers = 1;
    s.max_size = size(&small) * 3 / 2 + TABLE_BLOCK;
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
    // A stand-in takes its place, so it is not made again per request.
    let stand_in = copy(&s, &large, Kind::Coded(Coding::Gzip));
    assert_eq!(fs::metadata(&stand_in).unwrap().len(), 0);
    assert_eq!(lines.count(Severity::Info, "not kept"), 1);
    assert!(copy(&s, &small, Kind::Coded(Coding::Gzip)).exists());
}

/// The record of `p`'s version, as this host keeps it (as a child reads
/// it: its window of the table).
fn record_of(s: &CompressorSettings, p: &Path) -> Option<gdn_core::dictionary::Hash> {
    use crate::digests;
    let table = fs::read(super::records::table_path(s)).ok()?;
    let v = version(p);
    let at = digests::window_of(&v, table.len() as u64)? as usize;
    digests::find(&table[at..at + digests::WINDOW_BYTES], &v)
}

#[test]
fn each_version_read_is_recorded_with_its_digest_for_this_host() {
    let (_d, docs, cache) = tree();
    let p = page_file(&docs, "r.html", 9000, 3);
    let s = settings(&cache);
    let lines = Lines::default();
    assert_eq!(record_of(&s, &p), None);
    run_over(&s, vec![compress_job(&p, all())], &lines);
    assert_eq!(record_of(&s, &p), Some(source(&p)));
    // Rewritten in place, keeping inode, size and mtime: another version,
    // not known until read, then with the new bytes' digest and copies.
    let before = fs::metadata(&p).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let mut new = fs::read(&p).unwrap();
    new[0] ^= 1;
    fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .write_all(&new)
        .unwrap();
    fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(before.modified().unwrap())
        .unwrap();
    let after = fs::metadata(&p).unwrap();
    assert_eq!((before.ino(), before.len()), (after.ino(), after.len()));
    assert_eq!(record_of(&s, &p), None);
    run_over(&s, vec![compress_job(&p, all())], &lines);
    assert_eq!(record_of(&s, &p), Some(source(&p)));
    assert!(copy(&s, &p, Kind::Coded(Coding::Gzip)).exists());
    // An earlier boot's records are removed at start; this boot's stay.
    let earlier = s.root.join(s.host.machine_dir()).join("0123");
    fs::create_dir_all(earlier.join("ab")).unwrap();
    // This boot's records kept a file each, as they were once: removed.
    let one_each = s.root.join(s.host.records_dir()).join("ab");
    fs::create_dir_all(&one_each).unwrap();
    run_over(&s, Vec::new(), &lines);
    assert!(!earlier.exists());
    assert!(!one_each.exists());
    assert_eq!(record_of(&s, &p), Some(source(&p)));
    // The records take one table, of a block while they are few.
    let table = fs::metadata(super::records::table_path(&s)).unwrap();
    assert_eq!(table.len(), crate::digests::table_len(0));
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
    // Named the older ways (device, inode, ctime; place, size, mtime):
    // removed.
    let old = dir.join("803-12345-1388-1-2.br");
    fs::write(&old, b"old").unwrap();
    let by_place = dir.join("80300012345-1388-5f.gz");
    fs::write(&by_place, b"old").unwrap();
    let old_history = cache.join("history/ab/abcd");
    fs::create_dir_all(old_history.parent().unwrap()).unwrap();
    fs::write(&old_history, b"old").unwrap();
    let foreign = dir.join("notes.txt");
    fs::write(&foreign, b"not ours").unwrap();
    run_over(&s, Vec::new(), &lines);
    assert!(left.iter().all(|l| !l.exists()));
    assert!(fresh.exists() && !old.exists() && !by_place.exists());
    assert!(!old_history.exists());
    drop(writer);
    assert!(foreign.exists() && made.exists());
    assert_eq!(lines.count(Severity::Info, "3 entries"), 1);
    assert_eq!(
        lines.count(Severity::Info, "3 leftover temporaries removed"),
        1
    );
}

#[test]
fn site_records_of_the_older_rule_are_removed_at_start() {
    let (_d, _docs, cache) = tree();
    let s = settings(&cache);
    let old = cache.join(crate::key::RETIRED_SITE_DIR).join("ab12");
    fs::create_dir_all(&old).unwrap();
    fs::write(old.join("pages"), b"/srv/www/private.html\n").unwrap();
    fs::write(old.join("current.dat"), b"learned from a private page").unwrap();
    let lines = Lines::default();
    run_over(&s, Vec::new(), &lines);
    assert!(!cache.join(crate::key::RETIRED_SITE_DIR).exists());
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
    assert_eq!(lines.count(Severity::Warn, ""), 1);
    assert_eq!(lines.count(Severity::Warn, "cannot write the cache"), 1);
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
    assert_eq!(lines.count(Severity::Warn, ""), 1);
    state.made(&s, ([2; 32], Kind::Decoded(Coding::Br)), 0, &log);
    assert_eq!(lines.count(Severity::Notice, "written again"), 1);
    state.cache_failed(&s, &e, &log);
    assert_eq!(lines.count(Severity::Warn, ""), 2);
}

/// Events of a run, to count what it dropped.
#[derive(Default)]
struct Events(Mutex<Vec<Event>>);

impl Events {
    fn tally(&self) -> impl Fn(Event) + Sync + '_ {
        |e| self.0.lock().unwrap().push(e)
    }
    fn dropped(&self) -> u64 {
        let events = self.0.lock().unwrap();
        events
            .iter()
            .map(|e| match e {
                Event::Copies(crate::tally::CopyFate::Dropped, n) => *n,
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
    s: &'a CompressorSettings,
    lines: &'a Lines,
    events: &'a Events,
) -> fs::File {
    let (tx, rx) = seqpacket_pair();
    let before = lines.count(Severity::Info, "entries");
    scope.spawn(move || run(s, rx, &lines.log(), &events.tally(), &Stop::new()));
    wait_until("the run's start", || {
        lines.count(Severity::Info, "entries") > before
    });
    tx
}

/// A leftover temporary in a fan-out directory of `cache`.
fn leftover(s: &CompressorSettings, p: &Path) -> PathBuf {
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
    assert_eq!(first.count(Severity::Warn, ""), 0);
    assert_eq!(second.count(Severity::Warn, ""), 0);
    assert_eq!(second_events.dropped(), 0);
}

/// A compress job asking for deltas in a scope (`group` empty: the
/// file's own path).
fn delta_job(p: &Path, group: &[u8]) -> Vec<u8> {
    record(&Job::Compress {
        path: p.as_os_str().as_bytes(),
        version: version(p),
        codings: all(),
        deltas: Some(crate::job::JobDeltas {
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
    s: &CompressorSettings,
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
fn delta_of(s: &CompressorSettings, p: &Path, d: DeltaCoding, dict: &[u8]) -> Option<Vec<u8>> {
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
    let kept = copy_path(&s.root, &kept_key(gdn_core::dictionary::hash(&v1)));
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
    assert_eq!(lines.count(Severity::Warn, ""), 0);
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
    // Of other content than app.2: deltas are named by content, and the
    // same bytes elsewhere share them.
    fs::write(&c, [&v2[..], b"\n// x\n"].concat()).unwrap();
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
    let kept = copy_path(&s.root, &kept_key(gdn_core::dictionary::hash(&v1)));
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

/// The host of the site dictionary tests, as `Request::host_key` makes it.
const SITE: &[u8] = b"test:80@main";

/// When the test's verdicts were judged: each later than the one before.
static JUDGED: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(1);

/// The verdicts of a child that judged the pages under `docs`: public
/// all but `private`.
fn train_job(docs: &Path, private: &[usize]) -> Vec<u8> {
    train_job_at(
        docs,
        private,
        JUDGED.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
    )
}

/// `train_job`, judged at `at`.
fn train_job_at(docs: &Path, private: &[usize], at: i64) -> Vec<u8> {
    let list = crate::pages::candidates(docs);
    let mut bits = Vec::new();
    for i in (0..list.len()).filter(|i| !private.contains(i)) {
        crate::pages::set_bit(&mut bits, i);
    }
    record(&Job::Train {
        root: docs.as_os_str().as_bytes(),
        site: SITE,
        digest: &crate::pages::digest(&list),
        bits: &bits,
        at,
    })
}

/// The delta of the page `p` against `dict`, named as every copy is by
/// the page's content.
fn site_delta(s: &CompressorSettings, p: &Path, dict: &[u8]) -> Option<Vec<u8>> {
    delta_of(s, p, DeltaCoding::Dcz, dict)
}

/// Copies `files` into `dir` with their mtimes, as `cp -a` would.
fn copy_with_mtimes(files: &[PathBuf], dir: &Path) {
    for p in files {
        let to = dir.join(p.file_name().unwrap());
        fs::copy(p, &to).unwrap();
        let m = fs::metadata(p).unwrap();
        let t = SystemTime::UNIX_EPOCH
            + Duration::from_nanos(m.mtime() as u64 * 1_000_000_000 + m.mtime_nsec() as u64);
        fs::File::options()
            .write(true)
            .open(&to)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }
}

#[test]
fn a_site_dictionary_is_trained_from_the_public_pages_and_withdrawn_when_one_is_not() {
    let (_d, docs, cache) = tree();
    let s = settings(&cache);
    let lines = Lines::default();
    let pages: Vec<PathBuf> = (0..20).map(|i| site_page_file(&docs, i)).collect();
    let current = cache.join(crate::key::site_current_name(SITE, None));
    run_over(&s, vec![train_job(&docs, &[0, 1, 2, 3, 4])], &lines);
    assert!(!current.exists(), "not from 15 public pages");
    run_over(&s, vec![train_job(&docs, &[])], &lines);
    let dict = fs::read(&current).expect("trained from 20 pages");
    let h = gdn_core::dictionary::hash(&dict);
    let named = cache.join(crate::key::site_named_name(
        SITE,
        &gdn_core::dictionary::to_hex(&h)[..16],
        None,
    ));
    assert_eq!(fs::read(&named).unwrap(), dict, "served under its name");
    assert!(copy_path(&s.root, &kept_key(h)).is_file());
    for p in &pages {
        let delta = site_delta(&s, p, &dict).expect("every page");
        assert_eq!(decode(&dict, &delta).unwrap(), fs::read(p).unwrap());
    }
    // The same verdicts again: nothing to do.
    run_over(
        &s,
        vec![train_job(&docs, &[]), train_job(&docs, &[])],
        &lines,
    );
    assert_eq!(lines.count(Severity::Notice, "trained"), 1);
    // The same files elsewhere train the same bytes.
    let (_e, docs2, cache2) = tree();
    copy_with_mtimes(&pages, &docs2);
    run_over(&settings(&cache2), vec![train_job(&docs2, &[])], &lines);
    let current2 = cache2.join(crate::key::site_current_name(SITE, None));
    assert_eq!(fs::read(&current2).unwrap(), dict, "a copy of the tree");
    // A page changed: trained again; the first stays under its name.
    site_page_file(&docs, 40);
    run_over(&s, vec![train_job(&docs, &[])], &lines);
    let second = fs::read(&current).unwrap();
    assert_ne!(gdn_core::dictionary::hash(&second), h);
    assert_eq!(fs::read(&named).unwrap(), dict, "the one before");
    // A page judged not public now: every dictionary that learned it is
    // withdrawn at once, and one without it trained.
    run_over(&s, vec![train_job(&docs, &[3])], &lines);
    assert!(!named.exists(), "withdrawn");
    let third = fs::read(&current).expect("trained without it");
    assert_ne!(third, second);
    assert_eq!(lines.count(Severity::Notice, "withdrawn"), 2);
    // Another child's verdicts, judged before the page was restricted,
    // come late: not acted on.
    run_over(&s, vec![train_job_at(&docs, &[], 0)], &lines);
    assert_eq!(fs::read(&current).unwrap(), third, "older verdicts");
    // Verdicts on another list (the tree changed since): ignored.
    let stale = train_job(&docs, &[]);
    site_page_file(&docs, 41);
    run_over(&s, vec![stale], &lines);
    assert_eq!(fs::read(&current).unwrap(), third);
}

#[test]
fn corrupt_kept_versions_and_histories_and_leftovers_of_deltas() {
    let (_d, docs, cache) = tree();
    let s = settings(&cache);
    let lines = Lines::default();
    let (p, v1, v2) =
        served_then_edited(&docs, &s, &lines, 21, |v| v.extend_from_slice(b"\n// v2\n"));
    let h1 = gdn_core::dictionary::hash(&v1);
    let kept = copy_path(&s.root, &kept_key(h1));
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
    assert_eq!(gdn_publish::store::load_version(&kept).unwrap(), v1);
    // A history that is not one is read as empty: v3 then has nothing
    // earlier, and no delta is made against anything.
    for f in walkdir::WalkDir::new(cache.join("histories")) {
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
    assert_eq!(lines.count(Severity::Warn, ""), 0);
    assert_eq!(lines.count(Severity::Error, ""), 0);
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
        source: source(&p),
        kind,
    });
    run_over(&s, vec![touch], &lines);
    let kept = copy_path(&s.root, &kept_key(h1));
    let dcz = copy(&s, &p, kind);
    let size = |f: &Path| fs::metadata(f).unwrap().blocks() * 512;
    // Room for those two and the digest table only: the copies, made
    // after the kept version but used less lately, go at the next start.
    s.max_size = size(&kept) + size(&dcz) + size(&super::records::table_path(&s));
    run_over(&s, Vec::new(), &lines);
    assert!(kept.exists() && dcz.exists());
    assert!(!copy(&s, &p, Kind::Coded(Coding::Br)).exists());
}

#[test]
fn a_fast_copy_served_is_made_again_at_the_best_level() {
    let (_d, docs, cache) = tree();
    let p = page_file(&docs, "r.html", 20_000, 61);
    let br = CodingSet::empty().with(Coding::Br);
    // What the best level makes, in a cache of its own.
    let (_e, _, best_cache) = tree();
    let mut best = settings(&best_cache);
    best.levels.brotli_quality = 9;
    run_over(&best, vec![compress_job(&p, br)], &Lines::default());
    let best_bytes = fs::read(copy(&best, &p, Kind::Coded(Coding::Br))).unwrap();
    let mut s = settings(&cache);
    s.levels.brotli_quality = 9;
    s.fast_levels = Some(gdn_core::encode::Levels {
        brotli_quality: 1,
        ..fast()
    });
    let lines = Lines::default();
    run_over(&s, vec![compress_job(&p, br)], &lines);
    let made = copy(&s, &p, Kind::Coded(Coding::Br));
    let first = fs::read(&made).unwrap();
    assert!(first != best_bytes, "made fast first");
    let touch = record(&Job::Touch {
        source: source(&p),
        kind: Kind::Coded(Coding::Br),
    });
    // Not served in that run: its fast copies were written down at its
    // end, and a compressor gone (another pid) leaves them to the next
    // one, which makes the copy again once served.
    let own = super::backlog::own(&s.root, super::backlog::FAST);
    let name = own.file_name().unwrap().to_str().unwrap();
    let gone = name.replacen(&std::process::id().to_string(), &u32::MAX.to_string(), 1);
    fs::rename(&own, s.root.join(gone)).unwrap();
    run_over(&s, vec![touch.clone()], &lines);
    assert!(
        fs::read(&made).unwrap() == best_bytes,
        "made again at the best level after a restart"
    );
    assert_eq!(lines.count(Severity::Info, "taken over"), 1);
    // Made and served in one run: made again at the best level, a new file.
    fs::remove_file(&made).unwrap();
    let events = Events::default();
    let fast = std::thread::scope(|scope| {
        let mut tx = running(scope, &s, &lines, &events);
        let before = lines.count(Severity::Debug, "br copy of");
        tx.write_all(&compress_job(&p, br)).unwrap();
        wait_until("the fast copy", || {
            lines.count(Severity::Debug, "br copy of") > before
        });
        // Not the first copy's inode: that one was freed, and may be reused.
        let fast = fs::metadata(&made).unwrap().ino();
        tx.write_all(&touch).unwrap();
        fast
    });
    assert!(
        fs::read(&made).unwrap() == best_bytes,
        "made again at the best level"
    );
    assert_ne!(fs::metadata(&made).unwrap().ino(), fast);
    assert_eq!(lines.count(Severity::Warn, ""), 0);
}

/// The children send without waiting, and a job the channel has no room
/// for is dropped: the channel is drained while the wanted set's lock is
/// held (by a worker, lowered to nice 10 and preempted on a busy
/// machine). Blocking sends of more jobs than the channel holds all go
/// through while the lock is held; a reader that took the lock itself
/// would stop at the first, and the sender at a full channel.
#[test]
fn the_channel_is_drained_while_the_wanted_set_is_locked() {
    use crate::backlog::Backlog;
    use crate::make::Ctx;
    use std::sync::mpsc;
    use std::time::Duration;
    const N: u64 = 5000;
    let (_d, docs, cache) = tree();
    let s = settings(&cache);
    let lines = Lines::default();
    let log = lines.log();
    let state = Mutex::new(State::empty(&s));
    let ctx = Ctx {
        settings: &s,
        state: &state,
        log: &log,
        tally: &|_| {},
    };
    let (backlog, ended) = (Backlog::new(), Mutex::new(false));
    let (mut tx, rx) = seqpacket_pair();
    let path = docs.join("a.html");
    let jobs: Vec<Vec<u8>> = (0..N)
        .map(|n| {
            record(&Job::Compress {
                path: path.as_os_str().as_bytes(),
                version: Version {
                    size: 1000 + n,
                    ..version(&docs)
                },
                codings: CodingSet::empty().with(Coding::Br),
                deltas: None,
            })
        })
        .collect();
    let (sent_tx, sent) = mpsc::channel();
    std::thread::scope(|scope| {
        let held = backlog.hold();
        crate::start_reader(scope, &ctx, rx, &backlog, &ended);
        std::thread::spawn(move || {
            for j in &jobs {
                tx.write_all(j).unwrap();
            }
            sent_tx.send(()).unwrap();
        });
        let through = sent.recv_timeout(Duration::from_secs(60));
        drop(held);
        assert!(through.is_ok(), "the sender waited on a full channel");
    });
    assert!(*ended.lock().unwrap(), "the stream's end was seen");
    assert_eq!(backlog.status().0, N as usize, "every job wanted");
}

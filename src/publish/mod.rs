//! The publish tool behind `gzip-disk-ng`: makes `.zst`, `.br` and `.gz`
//! siblings next to originals (`compress`) and checks them (`verify`).
//!
//! Files are processed in parallel (rayon) and every coding of a file is a
//! task of its own, so one big file does not hold a core per coding back.
//! Each sibling is written atomically with its original's mtime, which is
//! also how a rerun knows a sibling was made from the current original.

pub mod atomic;
pub mod check;
pub mod encode;
pub mod walk;

use crate::coding::Coding;
use atomic::TempFile;
use encode::Levels;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};
use walk::{Filter, Found, SkipReason};

/// How much to tell while working.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    /// A progress bar on a terminal, one line per file otherwise.
    Auto,
    /// One line per file, even on a terminal.
    Plain,
    /// Only errors and the summary.
    Quiet,
}

/// Options of `compress`.
#[derive(Clone, Debug)]
pub struct CompressOptions {
    /// Codings to produce.
    pub codings: Vec<Coding>,
    /// Encoder settings.
    pub levels: Levels,
    /// Files smaller than this are left alone.
    pub min_size: u64,
    /// A variant must save at least this percentage to be kept.
    pub min_saving: f64,
    /// Only files matching one of these globs (all when empty).
    pub include: Vec<String>,
    /// Files and directories matching these globs are left alone.
    pub exclude: Vec<String>,
    /// Follow symlinks below the given paths.
    pub follow_symlinks: bool,
    /// Redo siblings that are up to date.
    pub force: bool,
    /// Only say what would be done.
    pub dry_run: bool,
    /// Delete each original once all its siblings decode back to it.
    pub remove_originals: bool,
    /// Progress reporting.
    pub report: Report,
}

impl Default for CompressOptions {
    fn default() -> Self {
        CompressOptions {
            codings: Coding::ALL.to_vec(),
            levels: Levels::default(),
            min_size: 256,
            min_saving: 5.0,
            include: Vec::new(),
            exclude: Vec::new(),
            follow_symlinks: false,
            force: false,
            dry_run: false,
            remove_originals: false,
            report: Report::Auto,
        }
    }
}

/// What happened to one coding of one file.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The sibling was already made from this original.
    UpToDate,
    /// Dry run: the sibling would be (re)made.
    WouldWrite,
    /// The sibling was written.
    Written { before: u64, after: u64 },
    /// The variant saved too little; an existing sibling was `removed`.
    NotWorth {
        before: u64,
        after: u64,
        removed: bool,
    },
    /// Something failed; nothing was left half-written.
    Failed(String),
}

/// Totals for one coding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodingTotals {
    pub written: u64,
    pub up_to_date: u64,
    pub not_worth: u64,
    pub removed: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

/// The end-of-run summary of `compress`.
#[derive(Clone, Debug, Default)]
pub struct CompressSummary {
    /// Every file the walk met.
    pub files_seen: u64,
    /// Files with at least one sibling written (or to write, in a dry run).
    pub compressed: u64,
    /// Files whose siblings were all up to date.
    pub up_to_date: u64,
    /// Files left alone, by reason.
    pub skipped: BTreeMap<SkipReason, u64>,
    /// Per coding, indexed by `Coding::index`.
    pub per_coding: [CodingTotals; 3],
    /// Originals deleted by `--remove-originals`.
    pub originals_removed: u64,
    /// Temporaries of interrupted runs deleted.
    pub temporaries_removed: u64,
    /// Problems reported (path and reason each).
    pub errors: u64,
    pub dry_run: bool,
    pub elapsed: Duration,
}

impl fmt::Display for CompressSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let skipped: u64 = self.skipped.values().sum();
        writeln!(
            f,
            "files seen: {}, {}: {}, up to date: {}, skipped: {}, errors: {}",
            self.files_seen,
            if self.dry_run {
                "to compress"
            } else {
                "compressed"
            },
            self.compressed,
            self.up_to_date,
            skipped,
            self.errors
        )?;
        for (why, n) in &self.skipped {
            writeln!(f, "  skipped, {why}: {n}")?;
        }
        for c in Coding::ALL {
            let t = &self.per_coding[c.index()];
            if *t == CodingTotals::default() {
                continue;
            }
            let pct = if t.bytes_before > 0 {
                100.0 * t.bytes_after as f64 / t.bytes_before as f64
            } else {
                0.0
            };
            writeln!(
                f,
                "{:>5}: {} written, {} -> {} bytes ({pct:.1}%), {} up to date, {} not worth it, {} stale removed",
                c.token(),
                t.written,
                t.bytes_before,
                t.bytes_after,
                t.up_to_date,
                t.not_worth,
                t.removed
            )?;
        }
        if self.originals_removed > 0 {
            writeln!(f, "originals removed: {}", self.originals_removed)?;
        }
        if self.temporaries_removed > 0 {
            writeln!(
                f,
                "leftover temporaries removed: {}",
                self.temporaries_removed
            )?;
        }
        write!(f, "time: {:.3} s", self.elapsed.as_secs_f64())
    }
}

/// Where progress and problems go.
struct Out {
    bar: Option<ProgressBar>,
    plain: bool,
}

impl Out {
    fn new(report: Report, total: u64) -> Out {
        let tty = std::io::stderr().is_terminal();
        match report {
            Report::Auto if tty => {
                let bar = ProgressBar::new(total);
                if let Ok(style) = ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:40}] {pos}/{len} files {wide_msg}",
                ) {
                    bar.set_style(style.progress_chars("=> "));
                }
                Out {
                    bar: Some(bar),
                    plain: false,
                }
            }
            Report::Quiet => Out {
                bar: None,
                plain: false,
            },
            _ => Out {
                bar: None,
                plain: true,
            },
        }
    }

    fn line(&self, s: &str) {
        if self.plain {
            println!("{s}");
        }
    }

    fn error(&self, path: &Path, why: &str) {
        let msg = format!("gzip-disk-ng: {}: {why}", path.display());
        match &self.bar {
            Some(b) => b.suspend(|| eprintln!("{msg}")),
            None => eprintln!("{msg}"),
        }
    }

    fn tick(&self, path: &Path) {
        if let Some(b) = &self.bar {
            b.set_message(path.display().to_string());
            b.inc(1);
        }
    }

    fn done(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// The sibling path for `coding` (its first suffix).
pub fn sibling_path(original: &Path, coding: Coding) -> PathBuf {
    let mut p = original.as_os_str().to_owned();
    p.push(coding.suffixes()[0]);
    PathBuf::from(p)
}

fn modified(m: &fs::Metadata) -> Option<SystemTime> {
    m.modified().ok()
}

/// True when the file's size or mtime moved since `before`.
fn changed(path: &Path, before: &fs::Metadata) -> Result<bool, String> {
    let now = fs::metadata(path).map_err(|e| format!("cannot stat again: {e}"))?;
    Ok(now.len() != before.len() || modified(&now) != modified(before))
}

/// True when `sib` was made from the original described by `meta`: the
/// tool gives siblings their original's mtime, and where the format states
/// the decoded size (zstd, gzip) it must be the original's size too, which
/// catches an original rewritten with its old mtime kept (`rsync -t`).
fn made_from(coding: Coding, sib: &Path, sib_meta: &fs::Metadata, meta: &fs::Metadata) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    if !sib_meta.is_file() || modified(sib_meta).is_none() || modified(sib_meta) != modified(meta) {
        return false;
    }
    let probe = (|| -> std::io::Result<Option<u64>> {
        let mut f = File::open(sib)?;
        let mut head = [0u8; crate::decode::PROBE_HEAD];
        let n = f.read(&mut head)?;
        let mut tail = None;
        if coding == Coding::Gzip && sib_meta.len() >= 4 {
            let mut t = [0u8; 4];
            f.seek(SeekFrom::End(-4))?;
            f.read_exact(&mut t)?;
            tail = Some(t);
        }
        Ok(
            crate::decode::probe(coding, &head[..n], sib_meta.len(), tail)
                .ok()
                .and_then(|p| p.declared_len),
        )
    })();
    match probe {
        Ok(Some(declared)) => declared == meta.len(),
        Ok(None) => true,
        Err(_) => false,
    }
}

/// A temporary untouched this long belongs to a run that was killed: a live
/// run writes its temporaries continuously.
pub const ABANDONED_AFTER: Duration = Duration::from_secs(15 * 60);

fn abandoned(tmp: &Path) -> bool {
    fs::symlink_metadata(tmp)
        .ok()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age > ABANDONED_AFTER)
}

const CHANGED: &str = "file changed while being compressed; left as it was";

/// Makes (or keeps, or drops) one sibling of one file.
fn one_variant(path: &Path, meta: &fs::Metadata, coding: Coding, o: &CompressOptions) -> Outcome {
    let sib = sibling_path(path, coding);
    let existing = fs::symlink_metadata(&sib).ok();
    if !o.force {
        if let Some(m) = &existing {
            if made_from(coding, &sib, m, meta) {
                return Outcome::UpToDate;
            }
        }
    }
    if o.dry_run {
        return Outcome::WouldWrite;
    }
    let len = meta.len();
    let encoded = (|| -> std::io::Result<(u64, TempFile)> {
        let src = File::open(path)?;
        let tmp = TempFile::new(&sib)?;
        encode::encode(coding, &o.levels, len, src, tmp)
    })();
    // A change explains any encoder error (zstd refuses a length other than
    // the pledged one), so it is checked first.
    match changed(path, meta) {
        Ok(true) => return Outcome::Failed(CHANGED.into()),
        Ok(false) => {}
        Err(e) => return Outcome::Failed(e),
    }
    let (after, tmp) = match encoded {
        Ok(x) => x,
        Err(e) => return Outcome::Failed(format!("cannot write {}: {e}", sib.display())),
    };
    let saved = len.saturating_sub(after) as f64;
    if len == 0 || saved * 100.0 < o.min_saving * len as f64 {
        drop(tmp);
        let mut removed = false;
        if existing.as_ref().is_some_and(|m| m.is_file()) {
            if let Err(e) = fs::remove_file(&sib) {
                return Outcome::Failed(format!(
                    "cannot remove {} that no longer pays: {e}",
                    sib.display()
                ));
            }
            removed = true;
        }
        return Outcome::NotWorth {
            before: len,
            after,
            removed,
        };
    }
    match tmp.commit(&sib, meta) {
        Ok(()) => Outcome::Written { before: len, after },
        Err(e) => Outcome::Failed(format!("cannot write {}: {e}", sib.display())),
    }
}

/// Deletes `path` after every sibling it has decoded back to it.
fn remove_original(path: &Path, meta: &fs::Metadata) -> Result<bool, String> {
    let sibs: Vec<_> = check::sibling_paths(path)
        .into_iter()
        .filter(|(_, p)| fs::symlink_metadata(p).is_ok_and(|m| m.is_file()))
        .collect();
    if sibs.is_empty() {
        // Nothing could serve it: keeping it is the only safe choice.
        return Ok(false);
    }
    for (c, sib) in &sibs {
        check::matches(*c, sib, path).map_err(|e| {
            format!(
                "original kept: sibling {} {e}",
                sib.file_name().unwrap_or_default().to_string_lossy()
            )
        })?;
    }
    if changed(path, meta)? {
        return Err(format!("original kept: {CHANGED}"));
    }
    fs::remove_file(path).map_err(|e| format!("cannot remove original: {e}"))?;
    Ok(true)
}

/// Everything that happened to one file.
struct FileResult {
    outcomes: Vec<(Coding, Outcome)>,
    original_removed: bool,
    errors: u64,
}

fn one_file(path: &Path, o: &CompressOptions, out: &Out) -> FileResult {
    let mut r = FileResult {
        outcomes: Vec::new(),
        original_removed: false,
        errors: 0,
    };
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            out.error(path, &format!("cannot stat: {e}"));
            r.errors += 1;
            return r;
        }
    };
    // Opening up front reports an unreadable file once, not per coding.
    if let Err(e) = File::open(path) {
        out.error(path, &format!("cannot read: {e}"));
        r.errors += 1;
        return r;
    }
    r.outcomes = o
        .codings
        .par_iter()
        .map(|&c| (c, one_variant(path, &meta, c, o)))
        .collect();
    let mut parts = Vec::new();
    for (c, oc) in &r.outcomes {
        match oc {
            Outcome::Written { before, after } => {
                parts.push(format!("{} {before} -> {after}", c.token()))
            }
            Outcome::WouldWrite => parts.push(format!("{} would be written", c.token())),
            Outcome::NotWorth { removed, .. } => parts.push(format!(
                "{} not worth it{}",
                c.token(),
                if *removed {
                    ", old sibling removed"
                } else {
                    ""
                }
            )),
            Outcome::Failed(e) => {
                out.error(path, &format!("{}: {e}", c.token()));
                r.errors += 1;
            }
            Outcome::UpToDate => {}
        }
    }
    if o.remove_originals && r.errors == 0 {
        if o.dry_run {
            parts.push("original would be removed if its siblings check out".into());
        } else {
            match remove_original(path, &meta) {
                Ok(true) => {
                    r.original_removed = true;
                    parts.push("original removed".into());
                }
                Ok(false) => parts.push("original kept: no sibling".into()),
                Err(e) => {
                    out.error(path, &e);
                    r.errors += 1;
                }
            }
        }
    }
    if !parts.is_empty() {
        out.line(&format!("{}: {}", path.display(), parts.join(", ")));
    }
    out.tick(path);
    r
}

/// Runs `compress` over `paths`.
pub fn compress(paths: &[PathBuf], o: &CompressOptions) -> Result<CompressSummary, String> {
    let start = Instant::now();
    let mut filter = Filter::new(&o.include, &o.exclude)?;
    filter.follow_symlinks = o.follow_symlinks;
    filter.min_size = o.min_size;
    filter.compress_rules = true;
    let found = filter.walk(paths);
    let mut s = CompressSummary {
        files_seen: found.len() as u64,
        dry_run: o.dry_run,
        ..Default::default()
    };
    let mut files = Vec::new();
    let quiet_out = Out::new(Report::Quiet, 0);
    for f in found {
        match f {
            Found::File(p, len) => files.push((p, len)),
            Found::Skipped(p, SkipReason::Temporary) if !o.dry_run && abandoned(&p) => {
                match fs::remove_file(&p) {
                    Ok(()) => s.temporaries_removed += 1,
                    Err(e) => {
                        quiet_out.error(&p, &format!("cannot remove leftover temporary: {e}"));
                        s.errors += 1;
                    }
                }
            }
            Found::Skipped(_, why) => *s.skipped.entry(why).or_default() += 1,
            Found::Error(p, e) => {
                quiet_out.error(&p, &e);
                s.errors += 1;
            }
        }
    }
    // Largest first, so the long brotli jobs start early and the cores stay
    // busy to the end.
    files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let out = Out::new(o.report, files.len() as u64);
    let results: Vec<FileResult> = files
        .par_iter()
        .map(|(p, _)| one_file(p, o, &out))
        .collect();
    out.done();
    for r in results {
        s.errors += r.errors;
        s.originals_removed += u64::from(r.original_removed);
        let mut wrote = false;
        let mut all_up = !r.outcomes.is_empty();
        for (c, oc) in r.outcomes {
            let t = &mut s.per_coding[c.index()];
            if oc != Outcome::UpToDate {
                all_up = false;
            }
            match oc {
                Outcome::UpToDate => t.up_to_date += 1,
                Outcome::WouldWrite => wrote = true,
                Outcome::Written { before, after } => {
                    wrote = true;
                    t.written += 1;
                    t.bytes_before += before;
                    t.bytes_after += after;
                }
                Outcome::NotWorth { removed, .. } => {
                    t.not_worth += 1;
                    t.removed += u64::from(removed);
                }
                Outcome::Failed(_) => {}
            }
        }
        s.compressed += u64::from(wrote);
        s.up_to_date += u64::from(all_up);
    }
    s.elapsed = start.elapsed();
    Ok(s)
}

/// The end-of-run summary of `verify`.
#[derive(Clone, Debug, Default)]
pub struct VerifySummary {
    /// Siblings examined.
    pub checked: u64,
    /// Siblings that decode and match their original (or have none).
    pub ok: u64,
    /// Siblings older than their original.
    pub stale: u64,
    /// Siblings that do not decode, or decode to something else.
    pub bad: u64,
    /// Files or directories that could not be examined.
    pub errors: u64,
    pub elapsed: Duration,
}

impl VerifySummary {
    /// True when nothing is wrong.
    pub fn clean(&self) -> bool {
        self.stale == 0 && self.bad == 0 && self.errors == 0
    }
}

impl fmt::Display for VerifySummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "siblings checked: {}, ok: {}, stale: {}, bad: {}, errors: {}\ntime: {:.3} s",
            self.checked,
            self.ok,
            self.stale,
            self.bad,
            self.errors,
            self.elapsed.as_secs_f64()
        )
    }
}

enum Verdict {
    Ok,
    Stale,
    Bad(String),
}

fn verify_one(coding: Coding, sib: &Path, orig: &Path) -> Verdict {
    let sm = match fs::metadata(sib) {
        Ok(m) => m,
        Err(e) => return Verdict::Bad(format!("cannot stat: {e}")),
    };
    if let Err(why) = check::browsers_accept(coding, sib) {
        return Verdict::Bad(why);
    }
    match fs::metadata(orig) {
        Ok(om) if om.is_file() => {
            if modified(&sm) < modified(&om) {
                // Decoding still has to succeed; comparing is pointless.
                return match check::decodes(coding, sib) {
                    Ok(_) => Verdict::Stale,
                    Err(e) => Verdict::Bad(format!("stale, and {e}")),
                };
            }
            match check::matches(coding, sib, orig) {
                Ok(()) => Verdict::Ok,
                Err(e) => Verdict::Bad(e),
            }
        }
        _ => match check::decodes(coding, sib) {
            Ok(_) => Verdict::Ok,
            Err(e) => Verdict::Bad(e),
        },
    }
}

/// Runs `verify` over `paths`: every sibling must decode completely and
/// match its original when that exists, must not be older than it, and
/// must be decodable by browsers (zstd window, no large-window brotli).
pub fn verify(paths: &[PathBuf], follow_symlinks: bool, report: Report) -> VerifySummary {
    let start = Instant::now();
    let mut filter = Filter::default();
    filter.follow_symlinks = follow_symlinks;
    let mut s = VerifySummary::default();
    let mut sibs = Vec::new();
    let quiet_out = Out::new(Report::Quiet, 0);
    for f in filter.walk(paths) {
        match f {
            Found::File(p, _) => {
                if let Some((c, orig)) = check::sibling_of(&p) {
                    sibs.push((p, c, orig));
                }
            }
            Found::Skipped(..) => {}
            Found::Error(p, e) => {
                quiet_out.error(&p, &e);
                s.errors += 1;
            }
        }
    }
    let out = Out::new(report, sibs.len() as u64);
    let verdicts: Vec<Verdict> = sibs
        .par_iter()
        .map(|(p, c, orig)| {
            let v = verify_one(*c, p, orig);
            match &v {
                Verdict::Ok => out.line(&format!("{}: ok", p.display())),
                Verdict::Stale => out.error(p, "stale: older than its original"),
                Verdict::Bad(e) => out.error(p, e),
            }
            out.tick(p);
            v
        })
        .collect();
    out.done();
    s.checked = verdicts.len() as u64;
    for v in verdicts {
        match v {
            Verdict::Ok => s.ok += 1,
            Verdict::Stale => s.stale += 1,
            Verdict::Bad(_) => s.bad += 1,
        }
    }
    s.elapsed = start.elapsed();
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{noise, page};

    fn opts() -> CompressOptions {
        CompressOptions {
            report: Report::Quiet,
            ..Default::default()
        }
    }

    #[test]
    fn compress_then_rerun_is_up_to_date() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.html");
        fs::write(&p, page(5000, 1)).unwrap();
        let s = compress(&[d.path().to_path_buf()], &opts()).unwrap();
        assert_eq!((s.compressed, s.errors), (1, 0));
        for c in Coding::ALL {
            let m = fs::metadata(sibling_path(&p, c)).unwrap();
            assert_eq!(
                m.modified().unwrap(),
                fs::metadata(&p).unwrap().modified().unwrap()
            );
        }
        let s = compress(&[d.path().to_path_buf()], &opts()).unwrap();
        assert_eq!((s.compressed, s.up_to_date), (0, 1));
        assert!(verify(&[d.path().to_path_buf()], false, Report::Quiet).clean());
    }

    #[test]
    fn rewrite_keeping_mtime_is_noticed_by_declared_size() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.html");
        fs::write(&p, page(5000, 1)).unwrap();
        compress(&[d.path().to_path_buf()], &opts()).unwrap();
        let t = fs::metadata(&p).unwrap().modified().unwrap();
        fs::write(&p, page(6000, 1)).unwrap();
        File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(t)
            .unwrap();
        let s = compress(&[d.path().to_path_buf()], &opts()).unwrap();
        // zstd and gzip state the size; brotli cannot tell.
        assert_eq!(s.per_coding[Coding::Zstd.index()].written, 1, "{s}");
        assert_eq!(s.per_coding[Coding::Gzip.index()].written, 1, "{s}");
        assert_eq!(s.per_coding[Coding::Br.index()].up_to_date, 1, "{s}");
    }

    #[test]
    fn incompressible_variant_is_dropped_and_old_sibling_removed() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("noise.txt");
        fs::write(&p, noise(20_000, 7)).unwrap();
        let old = sibling_path(&p, Coding::Gzip);
        fs::write(&old, b"old").unwrap();
        File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1000))
            .unwrap();
        let s = compress(std::slice::from_ref(&p), &opts()).unwrap();
        assert_eq!(s.compressed, 0, "{s}");
        assert_eq!(s.per_coding[Coding::Gzip.index()].removed, 1, "{s}");
        for c in Coding::ALL {
            assert!(!sibling_path(&p, c).exists());
        }
        let names: Vec<_> = fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "temporaries left: {names:?}");
    }

    #[test]
    fn file_changed_while_compressing_is_reported_and_nothing_written() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("growing.log");
        // Varied text, so level 19 takes far longer than the writer's delay.
        let mut x = 1u32;
        let text: Vec<u8> = (0..2 << 20)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                b"abcdefghij klmnop\n"[(x >> 16) as usize % 18]
            })
            .collect();
        fs::write(&p, text).unwrap();
        let o = CompressOptions {
            codings: vec![Coding::Zstd],
            ..opts()
        };
        // Keeps appending until the run is over, so whenever the run took
        // its snapshot, the file changes while it is being encoded.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let (p, stop) = (p.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20));
                    let mut f = File::options().append(true).open(&p).unwrap();
                    std::io::Write::write_all(&mut f, b"one more line\n").unwrap();
                }
            })
        };
        let s = compress(std::slice::from_ref(&p), &o).unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        writer.join().unwrap();
        assert_eq!((s.errors, s.compressed), (1, 0), "{s}");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn old_leftover_temporaries_are_removed_fresh_ones_kept() {
        let d = tempfile::tempdir().unwrap();
        let old = d.path().join(".a.html.br.tmp1a2b3c");
        let fresh = d.path().join(".b.html.gz.tmp4d5e6f");
        fs::write(&old, b"partial").unwrap();
        fs::write(&fresh, b"partial").unwrap();
        File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(SystemTime::now() - ABANDONED_AFTER * 2)
            .unwrap();
        let s = compress(&[d.path().to_path_buf()], &opts()).unwrap();
        assert_eq!(s.temporaries_removed, 1, "{s}");
        assert_eq!(s.skipped.get(&SkipReason::Temporary), Some(&1));
        assert!(!old.exists());
        assert!(fresh.exists());
    }

    #[test]
    fn dry_run_writes_nothing() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.css");
        fs::write(&p, page(5000, 1)).unwrap();
        let o = CompressOptions {
            dry_run: true,
            remove_originals: true,
            ..opts()
        };
        let s = compress(&[d.path().to_path_buf()], &o).unwrap();
        assert_eq!(s.compressed, 1);
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }
}

//! `clean`: removes what `compress` wrote under the given trees, and
//! nothing else, so a site can go back to its originals.
//!
//! A file goes when `compress` could have written it: it bears a name
//! `compress` writes (`page.html.gz`, `.br`, `.zst`, a delta's
//! `page.html.<hash>.dcz`/`.dcb`), its original exists, and it decodes to
//! that original byte for byte, through the decoders `verify` uses; or,
//! for one made from an earlier version, the tree's store names that
//! version (or a delta's dictionary). Leftover temporaries of killed runs
//! go too, and then each tree's store of earlier versions. A `.gz` with
//! no original (Debian ships such files: apache2-doc's
//! `style/common.dtd.gz`), one that decodes to something else, a symlink,
//! stays. A site dictionary written by `train` stays: the admin named it,
//! and the server's configuration may announce it.

use super::progress::Progress;
use super::summary::{CleanSummary, Kept};
use super::verify::{self, Dictionaries, MadeFile, MadeKind};
use gdn_core::coding::Coding;
use gdn_core::dictionary::{self, DeltaCoding, Hash};
use gdn_publish::check;
use gdn_publish::freshness::is_abandoned;
use gdn_publish::options::Report;
use gdn_publish::sibling_path;
use gdn_publish::state;
use gdn_publish::store;
use rayon::prelude::*;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What `clean` is asked to do.
#[derive(Clone, Debug)]
pub struct CleanOptions {
    /// Follow symlinks below the given paths (a symlink itself never goes).
    pub follow_symlinks: bool,
    /// Only list what would go.
    pub dry_run: bool,
    /// Progress reporting; a dry run lists every file that would go.
    pub report: Report,
    /// Dictionaries outside the trees that deltas may have been made
    /// against (`compress --dictionary`).
    pub dictionaries: Vec<PathBuf>,
    /// The store of the one tree given (`--store`), else each tree's in
    /// the state directory.
    pub store: Option<PathBuf>,
}

/// What becomes of one sibling or delta.
enum Fate {
    /// `compress` wrote it: it goes (it went, unless a dry run); its size.
    Goes(u64),
    /// It stays, and why.
    Stays(Kept),
    /// It could not be examined (or removed): it stays, told as a problem.
    Problem(String),
}

/// Runs `clean` over `paths`.
pub fn clean(paths: &[PathBuf], opts: &CleanOptions) -> Result<CleanSummary, String> {
    let start = Instant::now();
    let stores = state::stores_in_place(paths, opts.store.as_deref())?;
    let places: Vec<PathBuf> = stores.iter().flat_map(|(_, p)| p.clone()).collect();
    let trees = stores.into_iter().map(|(s, _)| s).collect();
    let dicts = Dictionaries::with_stores(trees, &opts.dictionaries)?;
    let made = verify::made_under(paths, opts.follow_symlinks);
    let report = match opts.report {
        Report::Auto if opts.dry_run => Report::Plain,
        r => r,
    };
    let mut summary = CleanSummary {
        dry_run: opts.dry_run,
        ..Default::default()
    };
    let progress = Progress::new(report, made.files.len() as u64);
    for (path, why) in &made.errors {
        progress.problem(path, why);
        summary.errors += 1;
    }
    let verdicts: Vec<Fate> = made
        .files
        .par_iter()
        .map(|s| {
            progress.file_started(&s.path);
            let v = settle(s, &dicts, opts.dry_run);
            progress.file_done();
            v
        })
        .collect();
    progress.finish();
    // Told in the walk's order, whatever order the work was done in.
    for (s, v) in made.files.iter().zip(verdicts) {
        tell(&progress, &s.path, &v, opts.dry_run);
        let delta = matches!(s.kind, MadeKind::Delta(..));
        match v {
            Fate::Goes(bytes) => summary.count_gone(delta, bytes),
            Fate::Stays(why) => *summary.kept.entry(why).or_default() += 1,
            Fate::Problem(_) => summary.errors += 1,
        }
    }
    let leftovers = made.temporaries.iter().filter(|t| is_abandoned(t));
    let removals: Vec<&PathBuf> = leftovers.chain(&places).collect();
    remove_leftovers(&removals, &places, opts.dry_run, &progress, &mut summary);
    summary.elapsed = start.elapsed();
    Ok(summary)
}

/// Removes the leftover temporaries of killed runs and the tree's stores
/// (`places`), counting each in `summary`.
fn remove_leftovers(
    paths: &[&PathBuf],
    places: &[PathBuf],
    dry_run: bool,
    progress: &Progress,
    summary: &mut CleanSummary,
) {
    let what = if dry_run {
        "would be removed"
    } else {
        "removed"
    };
    for &path in paths {
        match remove(path, dry_run) {
            Ok(()) if places.contains(path) => summary.stores.push(path.clone()),
            Ok(()) => summary.temporaries += 1,
            Err(e) => {
                progress.problem(path, &format!("cannot remove: {e}"));
                summary.errors += 1;
            }
        }
        progress.file_line(&format!("{}: {what}", path.display()));
    }
}

/// Decides on one sibling or delta, and removes it when it goes (unless
/// `dry_run`).
fn settle(s: &MadeFile, dicts: &Dictionaries, dry_run: bool) -> Fate {
    let v = judge(s, dicts);
    if let (Fate::Goes(_), false) = (&v, dry_run) {
        if let Err(e) = fs::remove_file(&s.path) {
            return Fate::Problem(format!("cannot remove: {e}"));
        }
    }
    v
}

/// Whether `compress` wrote the sibling or delta `s`.
fn judge(s: &MadeFile, dicts: &Dictionaries) -> Fate {
    let meta = match fs::symlink_metadata(&s.path) {
        Ok(m) => m,
        Err(e) => return Fate::Problem(format!("cannot stat: {e}")),
    };
    let own_name = match s.kind {
        MadeKind::Sibling(c) => sibling_path(&s.original, c) == s.path,
        MadeKind::Delta(..) => true,
    };
    if !meta.is_file() || !own_name {
        return Fate::Stays(Kept::NotMade);
    }
    match fs::metadata(&s.original) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Fate::Stays(Kept::NoOriginal),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Fate::Stays(Kept::NoOriginal),
        Err(e) => return Fate::Problem(format!("cannot stat its original: {e}")),
    }
    // Unreadable files are problems; what does not decode is not ours.
    if let Err(e) = File::open(&s.path) {
        return Fate::Problem(format!("cannot open: {e}"));
    }
    if let Err(e) = File::open(&s.original) {
        return Fate::Problem(format!("cannot open its original: {e}"));
    }
    let made = match s.kind {
        MadeKind::Sibling(c) => sibling_made(c, s, dicts),
        MadeKind::Delta(c, h) => delta_made(c, &h, s, dicts),
    };
    match made {
        Ok(true) => Fate::Goes(meta.len()),
        Ok(false) => Fate::Stays(Kept::NotMade),
        Err(why) => Fate::Problem(why),
    }
}

/// A sibling is `compress`'s when it decodes to its original, or to an
/// earlier version of it the store keeps.
fn sibling_made(c: Coding, s: &MadeFile, dicts: &Dictionaries) -> Result<bool, String> {
    if check::matches(c, &s.path, &s.original).is_ok() {
        return Ok(true);
    }
    Ok(check::decoded_hash(c, &s.path).is_ok_and(|h| dicts.recorded(&s.original, &h)))
}

/// A delta is `compress`'s when it decodes to its original against its
/// dictionary, or its header names a dictionary the store records for it.
fn delta_made(
    c: DeltaCoding,
    h: &Hash,
    s: &MadeFile,
    dicts: &Dictionaries,
) -> Result<bool, String> {
    if let Ok(decoded) = verify::decode_delta(c, h, &s.path, &s.original, dicts) {
        let original = store::read_limited(&s.original)
            .map_err(|e| format!("cannot read its original: {e}"))?;
        if original == decoded {
            return Ok(true);
        }
    }
    let mut head = vec![0; c.header_len()];
    let named = File::open(&s.path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| dictionary::header_names(c, h, &head));
    Ok(named && dicts.recorded(&s.original, h))
}

/// Tells what became of one file: a problem always, the rest on its line.
fn tell(progress: &Progress, path: &Path, v: &Fate, dry_run: bool) {
    match v {
        Fate::Goes(_) if dry_run => {
            progress.file_line(&format!("{}: would be removed", path.display()))
        }
        Fate::Goes(_) => progress.file_line(&format!("{}: removed", path.display())),
        Fate::Stays(why) => progress.file_line(&format!("{}: kept, {why}", path.display())),
        Fate::Problem(why) => progress.problem(path, &format!("{why}; kept")),
    }
}

/// Removes a file or a whole directory (a store), unless `dry_run`.
fn remove(path: &Path, dry_run: bool) -> io::Result<()> {
    if dry_run {
        return Ok(());
    }
    if fs::symlink_metadata(path)?.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    }
}

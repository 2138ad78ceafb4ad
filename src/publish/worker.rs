//! The work on one file: each coding's sibling made, kept or dropped (one
//! task per coding), then, if asked, the original removed once every
//! sibling decodes back to it.

use super::atomic::TempFile;
use super::delta::{self, DeltaOutcome, DeltaResult, Plan};
use super::encode::{self, Levels};
use super::freshness::{changed_since, made_from};
use super::options::CompressOptions;
use super::progress::Progress;
use super::{check, sibling_path};
use crate::coding::Coding;
use crate::dictionary::to_hex;
use rayon::prelude::*;
use std::fs::{self, File};
use std::path::Path;

const CHANGED_WHILE_COMPRESSING: &str = "file changed while being compressed; left as it was";

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

/// Everything that happened to one file.
#[derive(Default)]
pub(super) struct FileResult {
    pub(super) outcomes: Vec<(Coding, Outcome)>,
    pub(super) original_removed: bool,
    pub(super) errors: u64,
    pub(super) deltas: Vec<DeltaResult>,
    /// An earlier version was recovered from a stale sibling.
    pub(super) recovered: bool,
}

/// Makes every sibling `opts` asks for of the file at `path`, and its
/// deltas when `plan` has any, removes the original if asked, and tells
/// `progress` what happened.
pub(super) fn compress_file(
    path: &Path,
    opts: &CompressOptions,
    plan: Option<&Plan>,
    progress: &Progress,
) -> FileResult {
    let mut result = FileResult::default();
    let meta = match readable_original(path) {
        Ok(m) => m,
        Err(why) => {
            progress.problem(path, &why);
            result.errors += 1;
            return result;
        }
    };
    // Before the siblings are rewritten: a stale one holds the version
    // the store needs.
    let prepared = plan.and_then(|p| match delta::prepare(path, &meta, p, opts) {
        Ok(x) => x,
        Err(why) => {
            progress.problem(path, &why);
            result.errors += 1;
            None
        }
    });
    let mut told = make_siblings(path, &meta, opts, progress, &mut result);
    if let (Some(plan), Some(prep)) = (plan, &prepared) {
        result.recovered = prep.recovered;
        result.deltas = delta::make_deltas(path, &meta, prep, plan, opts);
        told.extend(tell_deltas(path, prep.recovered, &result.deltas, progress));
        result.errors += result
            .deltas
            .iter()
            .filter(|d| matches!(d.outcome, DeltaOutcome::Failed(_)))
            .count() as u64;
    }
    if opts.remove_originals && result.errors == 0 {
        match remove_original_if_safe(path, &meta, opts.dry_run) {
            Ok((removed, said)) => {
                result.original_removed = removed;
                told.push(said.to_owned());
            }
            Err(why) => {
                progress.problem(path, &why);
                result.errors += 1;
            }
        }
    }
    if !told.is_empty() {
        progress.file_line(&format!("{}: {}", path.display(), told.join(", ")));
    }
    progress.file_done(path);
    result
}

/// Makes every sibling, one task per coding; returns the per-file line's
/// words and reports problems.
fn make_siblings(
    path: &Path,
    meta: &fs::Metadata,
    opts: &CompressOptions,
    progress: &Progress,
    result: &mut FileResult,
) -> Vec<String> {
    result.outcomes = opts
        .codings
        .par_iter()
        .map(|&c| (c, make_sibling(path, meta, c, opts)))
        .collect();
    let mut told = Vec::new();
    for (c, outcome) in &result.outcomes {
        if let Outcome::Failed(why) = outcome {
            progress.problem(path, &format!("{}: {why}", c.token()));
            result.errors += 1;
        }
        told.extend(describe(*c, outcome));
    }
    told
}

/// The per-file line's words about deltas; problems are told on their own.
fn tell_deltas(
    path: &Path,
    recovered: bool,
    deltas: &[DeltaResult],
    progress: &Progress,
) -> Vec<String> {
    let mut told = Vec::new();
    if recovered {
        told.push("previous version kept as a dictionary".to_owned());
    }
    for d in deltas {
        let name = format!("{} vs {}", d.coding.token(), &to_hex(&d.dictionary)[..12]);
        told.push(match &d.outcome {
            DeltaOutcome::UpToDate => continue,
            DeltaOutcome::Written { after, br } => format!("{name} {after} (br {br})"),
            DeltaOutcome::WouldWrite { after, br } => {
                format!("{name} would be {after} (br {br})")
            }
            DeltaOutcome::NotSmaller { after, br, .. } => {
                format!("{name} {after} not smaller than br {br}")
            }
            DeltaOutcome::Stale => format!("{name} stale, removed"),
            DeltaOutcome::TooLarge { .. } => {
                format!("{name} not made: over 16 MiB with its dictionary")
            }
            DeltaOutcome::Failed(why) => {
                progress.problem(path, &format!("{name}: {why}"));
                continue;
            }
        });
    }
    told
}

/// The original's metadata, once it is known to open: an unreadable file
/// is reported once, not once per coding.
fn readable_original(path: &Path) -> Result<fs::Metadata, String> {
    let meta = fs::metadata(path).map_err(|e| format!("cannot stat: {e}"))?;
    File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    Ok(meta)
}

/// The per-file line's words about one coding; none when there is no news
/// (up to date) or it is a problem, told on its own.
fn describe(c: Coding, outcome: &Outcome) -> Option<String> {
    match outcome {
        Outcome::Written { before, after } => Some(format!("{} {before} -> {after}", c.token())),
        Outcome::WouldWrite => Some(format!("{} would be written", c.token())),
        Outcome::NotWorth { removed, .. } => Some(format!(
            "{} not worth it{}",
            c.token(),
            if *removed {
                ", old sibling removed"
            } else {
                ""
            }
        )),
        Outcome::UpToDate | Outcome::Failed(_) => None,
    }
}

/// Makes (or keeps, or drops) the `coding` sibling of the file at `path`.
fn make_sibling(
    path: &Path,
    meta: &fs::Metadata,
    coding: Coding,
    opts: &CompressOptions,
) -> Outcome {
    let sib = sibling_path(path, coding);
    let existing = fs::symlink_metadata(&sib).ok();
    if !opts.force
        && existing
            .as_ref()
            .is_some_and(|m| made_from(coding, &sib, m, meta))
    {
        return Outcome::UpToDate;
    }
    if opts.dry_run {
        return Outcome::WouldWrite;
    }
    let before = meta.len();
    let (after, tmp) = match encode_to_temporary(path, meta, &sib, coding, &opts.levels) {
        Ok(x) => x,
        Err(why) => return Outcome::Failed(why),
    };
    if saves_too_little(before, after, opts.min_saving) {
        drop(tmp);
        return not_worth(&sib, existing.as_ref(), before, after);
    }
    match tmp.commit(&sib, meta) {
        Ok(()) => Outcome::Written { before, after },
        Err(e) => Outcome::Failed(format!("cannot write {}: {e}", sib.display())),
    }
}

/// Encodes the original into a temporary next to `sib`; returns the
/// encoded length and the temporary. Fails, leaving nothing, when the
/// original changed meanwhile.
fn encode_to_temporary(
    path: &Path,
    meta: &fs::Metadata,
    sib: &Path,
    coding: Coding,
    levels: &Levels,
) -> Result<(u64, TempFile), String> {
    let encoded = (|| -> std::io::Result<(u64, TempFile)> {
        let src = File::open(path)?;
        let tmp = TempFile::new(sib)?;
        encode::encode(coding, levels, meta.len(), src, tmp)
    })();
    // A change explains any encoder error (zstd refuses a length other than
    // the pledged one), so it is checked first.
    if changed_since(path, meta)? {
        return Err(CHANGED_WHILE_COMPRESSING.into());
    }
    encoded.map_err(|e| format!("cannot write {}: {e}", sib.display()))
}

/// True when encoding `before` bytes into `after` saved less than
/// `min_saving` percent (always for an empty original).
fn saves_too_little(before: u64, after: u64, min_saving: f64) -> bool {
    let saved = before.saturating_sub(after) as f64;
    before == 0 || saved * 100.0 < min_saving * before as f64
}

/// A variant that does not pay: no sibling, and an `existing` one goes.
fn not_worth(sib: &Path, existing: Option<&fs::Metadata>, before: u64, after: u64) -> Outcome {
    let mut removed = false;
    if existing.is_some_and(|m| m.is_file()) {
        if let Err(e) = fs::remove_file(sib) {
            return Outcome::Failed(format!(
                "cannot remove {} that no longer pays: {e}",
                sib.display()
            ));
        }
        removed = true;
    }
    Outcome::NotWorth {
        before,
        after,
        removed,
    }
}

/// `--remove-originals` for one file whose siblings all succeeded: whether
/// the original went, and what to say about it.
fn remove_original_if_safe(
    path: &Path,
    meta: &fs::Metadata,
    dry_run: bool,
) -> Result<(bool, &'static str), String> {
    if dry_run {
        return Ok((false, "original would be removed if its siblings check out"));
    }
    Ok(match remove_original(path, meta)? {
        true => (true, "original removed"),
        false => (false, "original kept: no sibling"),
    })
}

/// Deletes the original at `path` once every sibling it has decodes back
/// to it; keeps it (`Ok(false)`) when it has none.
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
    if changed_since(path, meta)? {
        return Err(format!("original kept: {CHANGED_WHILE_COMPRESSING}"));
    }
    fs::remove_file(path).map_err(|e| format!("cannot remove original: {e}"))?;
    Ok(true)
}

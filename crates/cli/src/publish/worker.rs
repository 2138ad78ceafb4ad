//! The work on one file: each coding's sibling made, kept or dropped (one
//! task per coding), its deltas, then, if asked, the original removed once
//! every sibling decodes back to it.

use super::delta::{self, DeltaPlan, DeltaResult, Prepared};
use super::progress::Progress;
use gdn_core::coding::Coding;
use gdn_core::dictionary::to_hex;
use gdn_publish::check;
use gdn_publish::error::PublishError;
use gdn_publish::freshness::changed_since;
use gdn_publish::lifecycle::{self, LifecycleOutcome};
use gdn_publish::options::CompressOptions;
use gdn_publish::original::Original;
use gdn_publish::sibling::SiblingJob;
use rayon::prelude::*;
use std::fmt::Display;
use std::fs;
use std::path::Path;

/// Everything that happened to one file.
#[derive(Default)]
pub(super) struct FileResult {
    pub(super) outcomes: Vec<(Coding, LifecycleOutcome)>,
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
    plan: Option<&DeltaPlan>,
    progress: &Progress,
) -> FileResult {
    progress.file_started(path);
    let mut work = Work {
        path,
        opts,
        progress,
        result: FileResult::default(),
        told: Vec::new(),
    };
    match Original::open(path) {
        Ok(mut original) => work.original(&mut original, plan),
        Err(why) => work.problem(why),
    }
    if !work.told.is_empty() {
        progress.file_line(&format!("{}: {}", path.display(), work.told.join(", ")));
    }
    progress.file_done();
    work.result
}

/// One file's work: where its problems are told, what happened to it, and
/// the words of its per-file line.
struct Work<'a> {
    path: &'a Path,
    opts: &'a CompressOptions,
    progress: &'a Progress,
    result: FileResult,
    told: Vec<String>,
}

impl Work<'_> {
    /// Tells a problem with the file and counts it.
    fn problem(&mut self, why: impl Display) {
        self.progress.problem(self.path, &why.to_string());
        self.result.errors += 1;
    }

    /// Everything done to an original that opens.
    fn original(&mut self, original: &mut Original<'_>, plan: Option<&DeltaPlan>) {
        // Before the siblings are rewritten: a stale one holds the version
        // the store needs.
        let prepared = plan.and_then(|p| match delta::prepare(original, p, self.opts) {
            Ok(x) => x,
            Err(why) => {
                self.problem(why);
                None
            }
        });
        self.siblings(original);
        if let (Some(plan), Some(prep)) = (plan, &prepared) {
            self.deltas(original, prep, plan);
        }
        if self.opts.remove_originals && self.result.errors == 0 {
            match remove_original_if_safe(original, self.opts.dry_run) {
                Ok((removed, said)) => {
                    self.result.original_removed = removed;
                    self.told.push(said.to_owned());
                }
                Err(why) => self.problem(why),
            }
        }
    }

    /// Makes every sibling through the lifecycle, one task per coding, and
    /// takes in what each did.
    fn siblings(&mut self, original: &mut Original<'_>) {
        let opts = self.opts;
        let found: &Original<'_> = original;
        let outcomes: Vec<(Coding, LifecycleOutcome)> = opts
            .codings
            .par_iter()
            .map(|&c| {
                let job = SiblingJob::new(found, c, &opts.levels, opts.min_saving);
                (c, lifecycle::run(&job, found, opts))
            })
            .collect();
        for (c, outcome) in &outcomes {
            match outcome {
                LifecycleOutcome::Written(sizes) => original.record(*c, Some(sizes.size)),
                LifecycleOutcome::NotWorth { removed: true, .. } => original.record(*c, None),
                _ => {}
            }
            if let LifecycleOutcome::Failed(why) = outcome {
                self.problem(format_args!("{}: {why}", c.token()));
            }
            self.told.extend(describe(*c, outcome));
        }
        self.result.outcomes = outcomes;
    }

    /// Makes every delta, after the siblings, and prunes the stored
    /// versions.
    fn deltas(&mut self, original: &Original<'_>, prepared: &Prepared, plan: &DeltaPlan) {
        let deltas = delta::make_deltas(original, prepared, plan, self.opts);
        self.result.recovered = prepared.recovered;
        if prepared.recovered {
            self.told
                .push("previous version kept as a dictionary".to_owned());
        }
        for d in &deltas {
            let name = format!("{} vs {}", d.coding.token(), &to_hex(&d.dictionary)[..12]);
            match &d.outcome {
                LifecycleOutcome::Failed(why) => self.problem(format_args!("{name}: {why}")),
                outcome => self.told.extend(describe_delta(&name, outcome)),
            }
        }
        if let Err(why) = delta::prune(original, plan, self.opts) {
            self.problem(why);
        }
        self.result.deltas = deltas;
    }
}

/// The per-file line's words about one coding; none when there is no news
/// (up to date) or it is a problem, told on its own.
fn describe(c: Coding, outcome: &LifecycleOutcome) -> Option<String> {
    match outcome {
        LifecycleOutcome::Written(s) => Some(format!("{} {} -> {}", c.token(), s.against, s.size)),
        LifecycleOutcome::WouldWrite(_) => Some(format!("{} would be written", c.token())),
        LifecycleOutcome::NotWorth { removed, .. } => Some(format!(
            "{} not worth it{}",
            c.token(),
            if *removed {
                ", old sibling removed"
            } else {
                ""
            }
        )),
        _ => None,
    }
}

/// The per-file line's words about the delta `name`; none when it is up
/// to date or a problem, told on its own.
fn describe_delta(name: &str, outcome: &LifecycleOutcome) -> Option<String> {
    Some(match outcome {
        LifecycleOutcome::Written(s) => format!("{name} {} (br {})", s.size, s.against),
        LifecycleOutcome::WouldWrite(Some(s)) => {
            format!("{name} would be {} (br {})", s.size, s.against)
        }
        LifecycleOutcome::NotWorth { sizes: s, .. } => {
            format!("{name} {} not smaller than br {}", s.size, s.against)
        }
        LifecycleOutcome::Stale => format!("{name} stale, removed"),
        LifecycleOutcome::TooLarge { .. } => {
            format!("{name} not made: over 16 MiB with its dictionary")
        }
        LifecycleOutcome::UpToDate
        | LifecycleOutcome::WouldWrite(None)
        | LifecycleOutcome::Failed(_) => return None,
    })
}

/// `--remove-originals` for one file whose siblings all succeeded: whether
/// the original went, and what to say about it.
fn remove_original_if_safe(
    original: &Original<'_>,
    dry_run: bool,
) -> Result<(bool, &'static str), PublishError> {
    if dry_run {
        return Ok((false, "original would be removed if its siblings check out"));
    }
    Ok(match remove_original(original)? {
        true => (true, "original removed"),
        false => (false, "original kept: no sibling"),
    })
}

/// Deletes the original once every sibling it has decodes back to it;
/// keeps it (`Ok(false)`) when it has none.
fn remove_original(original: &Original<'_>) -> Result<bool, PublishError> {
    let path = original.path;
    let mut any = false;
    for (c, sib) in original.sibling_files() {
        any = true;
        check::matches(c, sib, path).map_err(|why| {
            let name = sib.file_name().unwrap_or_default().to_string_lossy();
            PublishError::SiblingDiffers(name.into_owned(), why)
        })?;
    }
    if !any {
        // Nothing could serve it: keeping it is the only safe choice.
        return Ok(false);
    }
    // The one look again: the original must not have changed since it
    // was read, whatever its siblings say.
    if changed_since(path, &original.meta)? {
        return Err(PublishError::ChangedBeforeRemoval);
    }
    fs::remove_file(path).map_err(PublishError::RemoveOriginal)?;
    Ok(true)
}

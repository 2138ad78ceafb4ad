//! The end-of-run summaries of `compress`, `verify` and `clean`, and how
//! they print.

use super::walk::SkipReason;
use super::worker::FileResult;
use gdn_core::coding::Coding;
use gdn_publish::lifecycle::LifecycleOutcome;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

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

impl CodingTotals {
    /// Counts one sibling's outcome; true when it was (or would be)
    /// written.
    fn count(&mut self, outcome: &LifecycleOutcome) -> bool {
        match *outcome {
            LifecycleOutcome::UpToDate => self.up_to_date += 1,
            LifecycleOutcome::WouldWrite(_) => return true,
            LifecycleOutcome::Written(s) => {
                self.written += 1;
                self.bytes_before += s.against;
                self.bytes_after += s.size;
                return true;
            }
            LifecycleOutcome::NotWorth { removed, .. } => {
                self.not_worth += 1;
                self.removed += u64::from(removed);
            }
            LifecycleOutcome::Stale
            | LifecycleOutcome::TooLarge { .. }
            | LifecycleOutcome::Failed(_) => {}
        }
        false
    }

    /// The summary line of `coding`.
    fn write_line(&self, f: &mut fmt::Formatter<'_>, coding: Coding) -> fmt::Result {
        let pct = percent(self.bytes_after, self.bytes_before);
        writeln!(
            f,
            "{:>5}: {} written, {} -> {} bytes ({pct:.1}%), {} up to date, {} not worth it, {} stale removed",
            coding.token(),
            self.written,
            self.bytes_before,
            self.bytes_after,
            self.up_to_date,
            self.not_worth,
            self.removed
        )
    }
}

/// Totals of the deltas (RFC 9842) of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeltaTotals {
    /// Deltas written (or to write, in a dry run).
    pub written: u64,
    pub up_to_date: u64,
    /// Not smaller than the br sibling: not kept.
    pub not_smaller: u64,
    /// Removed: their dictionary is no longer the file's.
    pub stale: u64,
    /// dcb not made: dictionary and file exceed the 16 MiB window.
    pub too_large: u64,
    /// Bytes of the deltas written.
    pub bytes: u64,
    /// Bytes of the br siblings of the same files, once per delta.
    pub br_bytes: u64,
    /// Earlier versions recovered from stale siblings into the store.
    pub recovered: u64,
}

impl DeltaTotals {
    /// Counts one delta's outcome.
    fn count(&mut self, outcome: &LifecycleOutcome) {
        match *outcome {
            LifecycleOutcome::UpToDate => self.up_to_date += 1,
            LifecycleOutcome::Written(s) | LifecycleOutcome::WouldWrite(Some(s)) => {
                self.written += 1;
                self.bytes += s.size;
                self.br_bytes += s.against;
            }
            LifecycleOutcome::NotWorth { .. } => self.not_smaller += 1,
            LifecycleOutcome::Stale => self.stale += 1,
            LifecycleOutcome::TooLarge { .. } => self.too_large += 1,
            LifecycleOutcome::WouldWrite(None) | LifecycleOutcome::Failed(_) => {}
        }
    }
}

impl DeltaTotals {
    /// The summary line of deltas; a dry run says what it would write.
    fn write_line(&self, f: &mut fmt::Formatter<'_>, dry_run: bool) -> fmt::Result {
        let pct = percent(self.bytes, self.br_bytes);
        write!(
            f,
            "deltas: {} {}, {} bytes against {} bytes br ({pct:.1}%), {} up to date, {} not smaller than br, {} stale removed, {} earlier versions kept",
            self.written,
            if dry_run { "to write" } else { "written" },
            self.bytes,
            self.br_bytes,
            self.up_to_date,
            self.not_smaller,
            self.stale,
            self.recovered
        )?;
        if self.too_large > 0 {
            write!(
                f,
                ", {} dcb over the 16 MiB window not made",
                self.too_large
            )?;
        }
        writeln!(f)
    }
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
    /// Deltas, when any were asked for.
    pub deltas: DeltaTotals,
    pub dry_run: bool,
    pub elapsed: Duration,
}

impl CompressSummary {
    /// Counts everything that happened to one file.
    pub(super) fn count_file(&mut self, file: FileResult) {
        self.errors += file.errors;
        self.originals_removed += u64::from(file.original_removed);
        self.deltas.recovered += u64::from(file.recovered);
        for d in &file.deltas {
            self.deltas.count(&d.outcome);
        }
        let mut wrote = false;
        let mut all_up_to_date = !file.outcomes.is_empty();
        for (c, outcome) in file.outcomes {
            all_up_to_date &= matches!(outcome, LifecycleOutcome::UpToDate);
            wrote |= self.per_coding[c.index()].count(&outcome);
        }
        self.compressed += u64::from(wrote);
        self.up_to_date += u64::from(all_up_to_date);
    }
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
            let totals = &self.per_coding[c.index()];
            if *totals != CodingTotals::default() {
                totals.write_line(f, c)?;
            }
        }
        if self.deltas != DeltaTotals::default() {
            self.deltas.write_line(f, self.dry_run)?;
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

/// Why `clean` left a file named like a sibling or a delta.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kept {
    /// Its original does not exist: it may be the only copy.
    NoOriginal,
    /// Not what `compress` makes of its original: another name, content
    /// or kind of file.
    NotMade,
}

impl fmt::Display for Kept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kept::NoOriginal => "no original",
            Kept::NotMade => "not made by gzip-disk-ng from its original",
        })
    }
}

/// The end-of-run summary of `clean`.
#[derive(Clone, Debug, Default)]
pub struct CleanSummary {
    /// Siblings removed (or to remove, in a dry run), and their bytes.
    pub siblings: u64,
    pub sibling_bytes: u64,
    /// Deltas removed (or to remove), and their bytes.
    pub deltas: u64,
    pub delta_bytes: u64,
    /// Files named like siblings or deltas that stay, by reason.
    pub kept: BTreeMap<Kept, u64>,
    /// Temporaries of interrupted runs removed.
    pub temporaries: u64,
    /// Dictionary stores removed.
    pub stores: Vec<std::path::PathBuf>,
    /// Problems reported (path and reason each); what they concern stays.
    pub errors: u64,
    pub dry_run: bool,
    pub elapsed: Duration,
}

impl CleanSummary {
    /// Counts one sibling (or delta) of `bytes` that went.
    pub(super) fn count_gone(&mut self, delta: bool, bytes: u64) {
        if delta {
            self.deltas += 1;
            self.delta_bytes += bytes;
        } else {
            self.siblings += 1;
            self.sibling_bytes += bytes;
        }
    }
}

impl fmt::Display for CleanSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let gone = if self.dry_run { "to remove" } else { "removed" };
        let kept: u64 = self.kept.values().sum();
        writeln!(
            f,
            "siblings {gone}: {} ({} bytes), deltas {gone}: {} ({} bytes), kept: {kept}, errors: {}",
            self.siblings, self.sibling_bytes, self.deltas, self.delta_bytes, self.errors
        )?;
        for (why, n) in &self.kept {
            writeln!(f, "  kept, {why}: {n}")?;
        }
        if self.temporaries > 0 {
            writeln!(f, "leftover temporaries {gone}: {}", self.temporaries)?;
        }
        for s in &self.stores {
            writeln!(f, "dictionary store {gone}: {}", s.display())?;
        }
        write!(f, "time: {:.3} s", self.elapsed.as_secs_f64())
    }
}

/// `part` as a percentage of `whole` (0 when there is no whole).
fn percent(part: u64, whole: u64) -> f64 {
    if whole > 0 {
        100.0 * part as f64 / whole as f64
    } else {
        0.0
    }
}

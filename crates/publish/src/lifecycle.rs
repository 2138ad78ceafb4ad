//! The one lifecycle of everything `compress` makes from an original, a
//! sibling or a delta: kept while up to date, encoded, dropped (an old one
//! removed) when it does not pay, told but not written in a dry run, else
//! committed atomically with the original's mtime.
//!
//! A `LifecycleJob` says what differs between a sibling and a delta; `run`
//! is the order of the steps, the same for both.

use crate::atomic::TempFile;
use crate::error::{PublishError, Removal};
use crate::freshness::changed_since;
use crate::options::CompressOptions;
use crate::original::Original;
use std::fs;
use std::io::Write;
use std::path::Path;

/// A sibling's or delta's size and the size it had to beat: the original
/// for a sibling; for a delta the br sibling, else the smallest other
/// representation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeAgainst {
    pub size: u64,
    pub against: u64,
}

/// What happened to one sibling or delta of one file.
#[derive(Debug)]
pub enum LifecycleOutcome {
    /// Already made from this original (and, for a delta, dictionary).
    UpToDate,
    /// Dry run: would be written; its sizes when the dry run encodes
    /// (deltas), `None` when it does not (siblings).
    WouldWrite(Option<SizeAgainst>),
    /// Written.
    Written(SizeAgainst),
    /// Did not pay: not kept, and an old one was `removed`.
    NotWorth { sizes: SizeAgainst, removed: bool },
    /// A delta whose dictionary is no longer one of the file's: removed
    /// (or, in a dry run, would be).
    Stale,
    /// A dcb whose dictionary and file exceed brotli's 16 MiB window
    /// together: not made (an old one `removed`).
    TooLarge { removed: bool },
    /// Something failed; nothing was left half-written.
    Failed(PublishError),
}

/// An encoding waiting to be committed.
pub enum Encoded {
    /// Streamed into a temporary beside the target and already checked
    /// against the original (siblings: a change explains encoder errors).
    Checked(TempFile),
    /// Held in memory (deltas): written and checked when committed.
    Bytes(Vec<u8>),
}

/// What encoding gave.
pub enum Made {
    Encoded(Encoded, SizeAgainst),
    /// Cannot be made for this original: an old one goes.
    TooLarge,
}

/// One sibling or delta of one original: what differs between the two.
pub trait LifecycleJob {
    /// Where it goes.
    fn target(&self) -> &Path;
    /// The target as found before any work on the file began.
    fn existing(&self) -> Option<&fs::Metadata>;
    /// Whether `existing` was made from the current original.
    fn up_to_date(&self, existing: &fs::Metadata) -> bool;
    /// Whether a dry run encodes, to tell sizes: deltas do, siblings (most
    /// of a run's time) do not.
    fn dry_run_encodes(&self) -> bool;
    fn encode(&self) -> Result<Made, PublishError>;
    /// Whether an encoding of these sizes is worth keeping.
    fn pays(&self, sizes: SizeAgainst) -> bool;
    /// What an old one that is no longer made is removed as.
    fn removal(&self) -> Removal;
}

/// Makes (or keeps, or drops) `job` for `original`.
pub fn run(
    job: &impl LifecycleJob,
    original: &Original<'_>,
    opts: &CompressOptions,
) -> LifecycleOutcome {
    steps(job, original, opts).unwrap_or_else(LifecycleOutcome::Failed)
}

fn steps(
    job: &impl LifecycleJob,
    original: &Original<'_>,
    opts: &CompressOptions,
) -> Result<LifecycleOutcome, PublishError> {
    if !opts.force && job.existing().is_some_and(|m| job.up_to_date(m)) {
        return Ok(LifecycleOutcome::UpToDate);
    }
    if opts.dry_run && !job.dry_run_encodes() {
        return Ok(LifecycleOutcome::WouldWrite(None));
    }
    let (encoded, sizes) = match job.encode()? {
        Made::Encoded(encoded, sizes) => (encoded, sizes),
        Made::TooLarge => {
            let removed = drop_existing(job, opts.dry_run)?;
            return Ok(LifecycleOutcome::TooLarge { removed });
        }
    };
    if !job.pays(sizes) {
        drop(encoded);
        let removed = drop_existing(job, opts.dry_run)?;
        return Ok(LifecycleOutcome::NotWorth { sizes, removed });
    }
    if opts.dry_run {
        return Ok(LifecycleOutcome::WouldWrite(Some(sizes)));
    }
    commit(encoded, job.target(), original)?;
    Ok(LifecycleOutcome::Written(sizes))
}

/// Removes the old one that is no longer made; whether there was one (a
/// dry run removes nothing).
fn drop_existing(job: &impl LifecycleJob, dry_run: bool) -> Result<bool, PublishError> {
    if dry_run || !job.existing().is_some_and(|m| m.is_file()) {
        return Ok(false);
    }
    let target = job.target();
    fs::remove_file(target)
        .map_err(|e| PublishError::Remove(job.removal(), target.to_path_buf(), e))?;
    Ok(true)
}

/// Puts `encoded` at `target` atomically with the original's mtime, unless
/// the original changed since it was read.
fn commit(encoded: Encoded, target: &Path, original: &Original<'_>) -> Result<(), PublishError> {
    let failed = |e| PublishError::Write(target.to_path_buf(), e);
    let tmp = match encoded {
        Encoded::Checked(tmp) => tmp,
        Encoded::Bytes(bytes) => {
            let mut tmp = TempFile::new(target).map_err(failed)?;
            tmp.write_all(&bytes).map_err(failed)?;
            if changed_since(original.path, &original.meta)? {
                return Err(PublishError::Changed);
            }
            tmp
        }
    };
    tmp.commit(target, &original.meta).map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A job that "encodes" to fixed bytes and pays below a size.
    struct FakeJob<'a> {
        target: std::path::PathBuf,
        existing: Option<fs::Metadata>,
        bytes: &'a [u8],
        limit: u64,
        encodes_in_dry_run: bool,
        encoded: Cell<u32>,
    }

    impl LifecycleJob for FakeJob<'_> {
        fn target(&self) -> &Path {
            &self.target
        }
        fn existing(&self) -> Option<&fs::Metadata> {
            self.existing.as_ref()
        }
        fn up_to_date(&self, existing: &fs::Metadata) -> bool {
            existing.len() == self.bytes.len() as u64
        }
        fn dry_run_encodes(&self) -> bool {
            self.encodes_in_dry_run
        }
        fn encode(&self) -> Result<Made, PublishError> {
            self.encoded.set(self.encoded.get() + 1);
            let size = self.bytes.len() as u64;
            let sizes = SizeAgainst {
                size,
                against: self.limit,
            };
            Ok(Made::Encoded(Encoded::Bytes(self.bytes.to_vec()), sizes))
        }
        fn pays(&self, sizes: SizeAgainst) -> bool {
            sizes.size < sizes.against
        }
        fn removal(&self) -> Removal {
            Removal::NotMade
        }
    }

    #[test]
    fn steps_run_in_order_for_any_job() {
        let d = tempfile::tempdir().unwrap();
        let orig = d.path().join("a.txt");
        fs::write(&orig, b"original").unwrap();
        let original = Original::open(&orig).unwrap();
        let target = d.path().join("a.txt.x");
        fs::write(&target, b"old").unwrap();
        let job = |bytes, limit, encodes_in_dry_run| FakeJob {
            target: target.clone(),
            existing: fs::symlink_metadata(&target).ok(),
            bytes,
            limit,
            encodes_in_dry_run,
            encoded: Cell::new(0),
        };
        let (mut opts, plain) = (CompressOptions::default(), CompressOptions::default());
        opts.dry_run = true;
        let dry = job(b"new!", 100, false);
        assert!(matches!(
            run(&dry, &original, &opts),
            LifecycleOutcome::WouldWrite(None)
        ));
        assert_eq!(dry.encoded.get(), 0);
        let dry = job(b"new!", 2, true);
        let o = run(&dry, &original, &opts);
        assert!(
            matches!(o, LifecycleOutcome::NotWorth { removed: false, .. }),
            "{o:?}"
        );
        assert!(target.exists());
        let o = run(&job(b"new!", 2, true), &original, &plain);
        assert!(
            matches!(o, LifecycleOutcome::NotWorth { removed: true, .. }),
            "{o:?}"
        );
        assert!(!target.exists());
        let o = run(&job(b"new!", 100, true), &original, &plain);
        assert!(
            matches!(o, LifecycleOutcome::Written(SizeAgainst { size: 4, .. })),
            "{o:?}"
        );
        let m = fs::metadata(&target).unwrap();
        assert_eq!(m.modified().unwrap(), original.meta.modified().unwrap());
        let o = run(&job(b"new!", 100, true), &original, &plain);
        assert!(matches!(o, LifecycleOutcome::UpToDate), "{o:?}");
    }
}

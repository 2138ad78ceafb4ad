//! The publish engine, shared by the `gzip-disk-ng` tool and the
//! module's on-demand compressor: what a sibling is and when it is up to
//! date (`original`, `freshness`), one lifecycle for every file it writes
//! (`lifecycle`, `sibling`), atomic writes, the checks, and where a
//! tree's dictionary store lies (`state`, `store`). The encoders it
//! writes with and the rules of what is worth compressing are gdn-core's
//! (`encode`, `delta_codec`, `rules`), which reads and writes no file;
//! the tool's walks, workers and reports are in the cli crate.
#![deny(unsafe_code, unsafe_op_in_unsafe_fn)]

pub mod at;
pub mod atomic;
pub mod check;
pub mod error;
pub mod freshness;
pub mod lifecycle;
pub mod options;
pub mod original;
pub mod sibling;
pub mod state;
pub mod store;

pub use error::{PublishError, Removal};
pub use lifecycle::{LifecycleOutcome, SizeAgainst};
pub use options::{CompressOptions, DeltaOptions, Report, DEFAULT_MIN_SIZE};

use gdn_core::coding::Coding;
use gdn_core::encode::{self, Levels};
use original::Original;
use sibling::SiblingJob;
use std::fs;
use std::path::{Path, PathBuf};

/// The sibling path for `coding` (its first suffix).
pub fn sibling_path(original: &Path, coding: Coding) -> PathBuf {
    let mut p = original.as_os_str().to_owned();
    p.push(coding.suffixes()[0]);
    PathBuf::from(p)
}

/// Makes the `coding` sibling of the original at `path`, whose metadata
/// was `meta`, at `target` instead of beside it: the module's on-demand
/// cache gets exactly what `compress` would write (the same lifecycle,
/// encoders, levels and min-saving rule, the original's mtime), nothing
/// already at `target` counts as up to date, and nothing is removed.
pub fn make_copy(
    path: &Path,
    meta: &fs::Metadata,
    coding: Coding,
    levels: &Levels,
    min_saving: f64,
    target: &Path,
) -> LifecycleOutcome {
    let original = Original::known(path, meta.clone());
    let job = SiblingJob::at(&original, coding, target.to_path_buf(), levels, min_saving);
    let opts = CompressOptions {
        levels: *levels,
        min_saving,
        report: Report::Quiet,
        ..CompressOptions::default()
    };
    lifecycle::run(&job, &original, &opts)
}

/// Makes the `coding` copy of `content`, an original's bytes read while
/// it had `meta`, at `target`: what `make_copy` writes (the same encoder,
/// levels and min-saving rule, the original's mtime), from the bytes in
/// hand, so the copy holds exactly the bytes its name was worked out from
/// (the module names copies by their source's SHA-256); mode 0600, the
/// writer's own, whatever the original's mode.
pub fn make_copy_of(
    content: &[u8],
    meta: &fs::Metadata,
    coding: Coding,
    levels: &Levels,
    min_saving: f64,
    target: &Path,
) -> LifecycleOutcome {
    let failed = |e| LifecycleOutcome::Failed(PublishError::Write(target.to_path_buf(), e));
    let mut tmp = match atomic::TempFile::new(target) {
        Ok(t) => t,
        Err(e) => return failed(e),
    };
    let len = content.len() as u64;
    let size = match encode::encode(coding, levels, len, content, &mut tmp) {
        Ok((size, _)) => size,
        Err(e) => return failed(e),
    };
    let sizes = SizeAgainst { size, against: len };
    if sibling::saves_too_little(len, size, min_saving) {
        return LifecycleOutcome::NotWorth {
            sizes,
            removed: false,
        };
    }
    match tmp.commit_private(target, meta) {
        Ok(()) => LifecycleOutcome::Written(sizes),
        Err(e) => failed(e),
    }
}

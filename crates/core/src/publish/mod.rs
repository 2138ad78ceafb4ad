//! The publish engine's rules, shared by the `gzip-disk-ng` tool and the
//! module's on-demand compressor: what a sibling is and when it is up to
//! date (`original`, `freshness`), one lifecycle for every file it writes
//! (`lifecycle`, `sibling`), the encoders (`encode`, `delta_codec`),
//! atomic writes, the checks, where a tree's dictionary store lies
//! (`state`, `store`) and which files are worth compressing (`rules`).
//! The tool's walks, workers and reports are in the cli crate.

pub mod atomic;
pub mod brotli_ending;
pub mod check;
pub mod delta_codec;
pub mod encode;
pub mod error;
pub mod freshness;
pub mod lifecycle;
pub mod options;
pub mod original;
pub mod rules;
pub mod sibling;
pub mod state;
pub mod store;

pub use error::{PublishError, Removal};
pub use lifecycle::{Outcome, Sizes};
pub use options::{CompressOptions, DeltaOptions, Report, DEFAULT_MIN_SIZE};

use crate::coding::Coding;
use encode::Levels;
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
) -> Outcome {
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

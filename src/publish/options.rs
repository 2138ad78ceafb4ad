//! What `compress` is asked to do: codings, encoder levels, which files,
//! and how it treats what is already there.

use super::encode::Levels;
use super::progress::Report;
use crate::coding::Coding;

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

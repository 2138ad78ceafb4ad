//! What `compress` is asked to do: codings, encoder levels, which files,
//! and how it treats what is already there.

use gdn_core::coding::Coding;
use gdn_core::delta_codec::DeltaLevels;
use gdn_core::dictionary::DeltaCoding;
use gdn_core::encode::Levels;
use std::path::PathBuf;

/// `--min-size`'s default: below this, a sibling's saving is a few dozen
/// bytes at most, less than the headers it costs to negotiate one.
pub const DEFAULT_MIN_SIZE: u64 = 256;

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
    /// MIME types compressed besides those that compress by nature
    /// (`types::is_compressible_type`).
    pub types: Vec<String>,
    /// The MIME map that gives a file its type (`mime.types`); `None` for
    /// the system's, or the common web types where it has none.
    pub mime_types: Option<PathBuf>,
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
    /// Deltas (RFC 9842) to make.
    pub deltas: DeltaOptions,
    /// The dictionary store (`--store`); by default one per tree in the
    /// state directory (`publish::state`).
    pub store: Option<PathBuf>,
}

impl Default for CompressOptions {
    fn default() -> Self {
        CompressOptions {
            codings: Coding::ALL.to_vec(),
            levels: Levels::default(),
            min_size: DEFAULT_MIN_SIZE,
            min_saving: 5.0,
            include: Vec::new(),
            exclude: Vec::new(),
            types: Vec::new(),
            mime_types: None,
            follow_symlinks: false,
            force: false,
            dry_run: false,
            remove_originals: false,
            report: Report::Auto,
            deltas: DeltaOptions::default(),
            store: None,
        }
    }
}

/// Which deltas `compress` makes (see the tool's `publish::delta`).
#[derive(Clone, Debug)]
pub struct DeltaOptions {
    /// Earlier versions of each path kept as dictionaries (0: none).
    pub versions: usize,
    /// Globs of versioned names (`assets/app.*.js`), one per group.
    pub groups: Vec<String>,
    /// Older members of its group a new member gets deltas against.
    pub group_depth: usize,
    /// A site dictionary every file gets a delta against.
    pub dictionary: Option<PathBuf>,
    /// Delta codings to make.
    pub codings: Vec<DeltaCoding>,
    /// Encoder settings.
    pub levels: DeltaLevels,
}

impl Default for DeltaOptions {
    fn default() -> Self {
        DeltaOptions {
            versions: 0,
            groups: Vec::new(),
            group_depth: 3,
            dictionary: None,
            codings: DeltaCoding::ALL.to_vec(),
            levels: DeltaLevels::default(),
        }
    }
}

impl DeltaOptions {
    /// True when any delta is asked for.
    pub fn active(&self) -> bool {
        !self.codings.is_empty()
            && (self.versions > 0 || !self.groups.is_empty() || self.dictionary.is_some())
    }
}

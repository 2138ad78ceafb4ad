//! The `LifecycleJob` that makes one sibling: streamed through its
//! coding's encoder into a temporary, kept when it saves `--min-saving`.

use crate::atomic::TempFile;
use crate::error::{PublishError, Removal};
use crate::freshness::{changed_since, made_from};
use crate::lifecycle::{Encoded, LifecycleJob, Made, SizeAgainst};
use crate::original::Original;
use crate::sibling_path;
use gdn_core::coding::Coding;
use gdn_core::encode::{self, Levels};
use std::fs::{self, File};
use std::path::{Path, PathBuf};

/// The `coding` sibling of one original.
pub struct SiblingJob<'a> {
    original: &'a Original<'a>,
    coding: Coding,
    target: PathBuf,
    levels: &'a Levels,
    min_saving: f64,
}

impl<'a> SiblingJob<'a> {
    pub fn new(
        original: &'a Original<'a>,
        coding: Coding,
        levels: &'a Levels,
        min_saving: f64,
    ) -> SiblingJob<'a> {
        let target = sibling_path(original.path, coding);
        SiblingJob::at(original, coding, target, levels, min_saving)
    }

    /// The same sibling written at `target` instead of beside the original
    /// (the module's on-demand cache).
    pub fn at(
        original: &'a Original<'a>,
        coding: Coding,
        target: PathBuf,
        levels: &'a Levels,
        min_saving: f64,
    ) -> SiblingJob<'a> {
        SiblingJob {
            original,
            coding,
            target,
            levels,
            min_saving,
        }
    }

    /// Encodes the original into a temporary next to the sibling; returns
    /// the encoded length and the temporary. Fails, leaving nothing, when
    /// the original changed meanwhile.
    fn encode_to_temporary(&self) -> Result<(u64, TempFile), PublishError> {
        let (path, meta) = (self.original.path, &self.original.meta);
        // Opened apart, so an unreadable original is not told as a target
        // that cannot be written.
        let src = File::open(path).map_err(PublishError::Read)?;
        let encoded = (|| -> std::io::Result<(u64, TempFile)> {
            let tmp = TempFile::new(&self.target)?;
            encode::encode(self.coding, self.levels, meta.len(), src, tmp)
        })();
        // A change explains any encoder error (zstd refuses a length other
        // than the pledged one), so it is checked first.
        if changed_since(path, meta)? {
            return Err(PublishError::Changed);
        }
        encoded.map_err(|e| PublishError::Write(self.target.clone(), e))
    }
}

impl LifecycleJob for SiblingJob<'_> {
    fn target(&self) -> &Path {
        &self.target
    }
    fn existing(&self) -> Option<&fs::Metadata> {
        self.original.found(self.coding)
    }
    fn up_to_date(&self, existing: &fs::Metadata) -> bool {
        made_from(self.coding, &self.target, existing, &self.original.meta)
    }
    fn dry_run_encodes(&self) -> bool {
        false
    }
    fn encode(&self) -> Result<Made, PublishError> {
        let (size, tmp) = self.encode_to_temporary()?;
        let against = self.original.meta.len();
        Ok(Made::Encoded(
            Encoded::Checked(tmp),
            SizeAgainst { size, against },
        ))
    }
    fn pays(&self, sizes: SizeAgainst) -> bool {
        !saves_too_little(sizes.against, sizes.size, self.min_saving)
    }
    fn removal(&self) -> Removal {
        Removal::NoLongerPays
    }
}

/// True when encoding `before` bytes into `after` saved less than
/// `min_saving` percent (always for an empty original).
pub(crate) fn saves_too_little(before: u64, after: u64, min_saving: f64) -> bool {
    let saved = before.saturating_sub(after) as f64;
    before == 0 || saved * 100.0 < min_saving * before as f64
}

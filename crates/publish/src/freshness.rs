//! Whether things are still what they were: a sibling made from the current
//! original, an original changed while it was read, a temporary left by a
//! killed run.

use crate::at::FileAt;
use crate::error::PublishError;
use gdn_core::coding::Coding;
use gdn_core::decode::{self, DecodeError};
use std::fs::{self, File};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// A temporary untouched this long belongs to a run that was killed: a live
/// run writes its temporaries continuously.
pub const ABANDONED_AFTER: Duration = Duration::from_secs(15 * 60);

pub fn mtime(m: &fs::Metadata) -> Option<SystemTime> {
    m.modified().ok()
}

/// True when the file's size or mtime moved since `before`.
pub fn changed_since(path: &Path, before: &fs::Metadata) -> Result<bool, PublishError> {
    let now = fs::metadata(path).map_err(PublishError::StatAgain)?;
    Ok(now.len() != before.len() || mtime(&now) != mtime(before))
}

/// True when `sib` was made from the original described by `meta`: the
/// tool gives siblings their original's mtime, and where the format states
/// the decoded size (zstd, gzip) it must be the original's size too, which
/// catches an original rewritten with its old mtime kept (`rsync -t`).
pub fn made_from(coding: Coding, sib: &Path, sib_meta: &fs::Metadata, meta: &fs::Metadata) -> bool {
    if !sib_meta.is_file() || mtime(sib_meta).is_none() || mtime(sib_meta) != mtime(meta) {
        return false;
    }
    let inspected = File::open(sib)
        .map_err(DecodeError::Io)
        .and_then(|f| decode::inspect(coding, &FileAt(&f), sib_meta.len()));
    match inspected {
        Ok(f) => f
            .declared_len
            .or(f.gzip_isize)
            .is_none_or(|declared| declared == meta.len()),
        // Unreadable now: made again, which reports the problem if it stays.
        Err(DecodeError::Io(_)) => false,
        // A header that states nothing leaves the mtime to decide; `verify`
        // is what finds broken siblings.
        Err(_) => true,
    }
}

/// True for a temporary of a run that was killed (see `ABANDONED_AFTER`).
pub fn is_abandoned(tmp: &Path) -> bool {
    fs::symlink_metadata(tmp)
        .ok()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age > ABANDONED_AFTER)
}

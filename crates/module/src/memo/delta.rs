//! Whether a delta file's header names the dictionary its name does
//! (RFC 9842), checked once per version of the delta file.

use crate::memo::version::VersionMemo;
use gdn_core::dictionary::{DeltaCoding, Hash};
use gdn_httpd::FileVersion;

/// Verdicts kept.
const MAX_ENTRIES: usize = 16_384;

/// A delta file's version, its coding and the dictionary it is named for.
pub type DeltaVersion = (FileVersion, DeltaCoding, Hash);

static VERDICTS: VersionMemo<DeltaVersion, bool> = VersionMemo::new(MAX_ENTRIES);

/// The remembered verdict: whether the header names the dictionary.
#[inline]
pub fn get(key: &DeltaVersion) -> Option<bool> {
    VERDICTS.get(key)
}

/// Remembers a verdict.
#[inline]
pub fn put(key: DeltaVersion, names: bool) {
    VERDICTS.put(key, names);
}

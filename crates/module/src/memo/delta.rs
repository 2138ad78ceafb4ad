//! Whether a delta file's header names the dictionary its name does
//! (RFC 9842), checked once per version of the delta file; and whether a
//! published delta decodes to its page (`verified_delta`), per version of
//! both files; and when its dictionary was last looked for in vain.

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

/// What a published delta was found to be against its page's version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Represents {
    /// Decodes against its dictionary to the page's very bytes.
    Page,
    /// Does not: never sent in this version.
    Not,
}

static REPRESENTS: VersionMemo<(DeltaVersion, FileVersion), Represents> =
    VersionMemo::new(MAX_ENTRIES);

/// What was found of the delta `key` against the page's version `page`.
#[inline]
pub fn represents(key: &DeltaVersion, page: FileVersion) -> Option<Represents> {
    REPRESENTS.get(&(*key, page))
}

/// Remembers what was found of the delta `key` against `page`.
pub fn put_represents(key: DeltaVersion, page: FileVersion, r: Represents) {
    REPRESENTS.put((key, page), r);
}

static UNFOUND: VersionMemo<(DeltaVersion, FileVersion), i64> = VersionMemo::new(MAX_ENTRIES);

/// When (µs since the epoch) no source was found to hold the dictionary
/// of the delta `key` against the page's version `page`.
#[inline]
pub fn unfound_at(key: &DeltaVersion, page: FileVersion) -> Option<i64> {
    UNFOUND.get(&(*key, page))
}

/// Remembers that the dictionary of `key` against `page` was looked for
/// in vain at `at`.
pub fn put_unfound(key: DeltaVersion, page: FileVersion, at: i64) {
    UNFOUND.put((key, page), at);
}

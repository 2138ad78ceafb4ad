//! The SHA-256 of the site dictionary's file (the dictionary, or it in a
//! coding), read once per version of the file.

use crate::memo::version::VersionMemo;
use gdn_core::dictionary::Hash;
use gdn_httpd::FileVersion;

static HASHES: VersionMemo<FileVersion, Hash> = VersionMemo::new(64);

/// The hash remembered for version `v`.
#[inline]
pub fn get(v: &FileVersion) -> Option<Hash> {
    HASHES.get(v)
}

/// Remembers the hash of version `v`.
#[inline]
pub fn put(v: FileVersion, h: Hash) {
    HASHES.put(v, h);
}

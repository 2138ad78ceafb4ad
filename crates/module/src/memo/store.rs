//! Whether a file or directory version lies in a store, by where its
//! path resolves: a fact of the version (a directory has one parent, the
//! tool never hard-links a stored file, and a move changes the ctime), so
//! it is resolved once per process, not checked with an `lstat` on every
//! request.

use crate::memo::version::VersionMemo;
use gdn_httpd::FileVersion;

static IN_STORE: VersionMemo<FileVersion, bool> = VersionMemo::new(16_384);

/// Whether version `v` was found in a store, where known.
#[inline]
pub fn get(v: &FileVersion) -> Option<bool> {
    IN_STORE.get(v)
}

/// Remembers whether version `v` lies in a store.
#[inline]
pub fn put(v: FileVersion, in_store: bool) {
    IN_STORE.put(v, in_store);
}

//! The sibling versions already reported stale by this process, so the
//! warning about a published file is written once per version, not per
//! request (which would let any client flood the log).

use crate::memo::version::VersionMemo;
use gdn_httpd::FileVersion;

static SEEN: VersionMemo<FileVersion, ()> = VersionMemo::new(4096);

/// Whether this is the first report of stale sibling version `v`.
#[inline]
pub fn first_report(v: FileVersion) -> bool {
    SEEN.put(v, ())
}

//! Whether a delta file's header names the dictionary the client holds,
//! checked once per file version and remembered beside the other
//! per-version facts.

use crate::dictionary::{self, DeltaCoding, Hash};
use crate::httpd::{File, FileVersion, Level, PoolBytes, Request};
use crate::memo::version::VersionMemo;
use std::ffi::CStr;

/// Verdicts kept.
const MAX_ENTRIES: usize = 16_384;

/// A delta file's version, its coding and the dictionary it is named for.
type Key = (FileVersion, DeltaCoding, Hash);

static VERDICTS: VersionMemo<Key, bool> = VersionMemo::new(MAX_ENTRIES);

/// Whether the delta at `path` starts with the `d` header naming `h`; a
/// mismatch is logged once per file version (and process) and the delta
/// is not sent. A read error is not remembered.
pub(super) fn names(
    req: &Request<'_>,
    d: DeltaCoding,
    h: &Hash,
    file: &File<'_>,
    path: &CStr,
) -> bool {
    let key = (file.info().version(), d, *h);
    if let Some(ok) = VERDICTS.get(&key) {
        return ok;
    }
    let Ok(head) = file.read_pool(req, 0, d.header_len()) else {
        return false;
    };
    let ok = dictionary::header_names(d, h, PoolBytes::bytes(head));
    if !ok {
        req.log(
            Level::Warn,
            0,
            &format!(
                "{}: its header does not name the dictionary {} its name does; not sent",
                path.to_string_lossy(),
                dictionary::to_hex(h)
            ),
        );
    }
    VERDICTS.put(key, ok);
    ok
}

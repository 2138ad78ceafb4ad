//! The `Last-Modified` and ETag core made for a file version, remembered
//! by everything they were made of (`gdn_httpd::ValidatorInputs`: the
//! file's stat, the request's r->mtime, FileETag, a forced weak tag), so
//! a representation's validators are made once per version and
//! configuration rather than formatted on every response.

use crate::memo::version::VersionMemo;
use gdn_httpd::{File, Finfo, Request, ValidatorInputs, Validators};
use std::ffi::CStr;

/// Entries kept.
const MAX_ENTRIES: usize = 16_384;

static MEMO: VersionMemo<ValidatorInputs, Validators> = VersionMemo::new(MAX_ENTRIES);

/// Sets `Last-Modified` and the ETag of the file `f` (`file`, where
/// opened) with `-suffix`, as core's handler would: remembered where
/// their inputs are all known, else made by Apache each time.
pub fn set(
    req: &Request<'_>,
    f: &Finfo,
    file: Option<&File<'_>>,
    path: &CStr,
    suffix: &str,
    weak: bool,
) {
    req.update_mtime(f);
    let Some(key) = req.validator_inputs(f, weak) else {
        req.set_validators(f, file, path, suffix, weak);
        return;
    };
    match MEMO.get(&key) {
        Some(v) => req.set_validators_made(&v, suffix),
        None => {
            if let Some(v) = req.set_validators(f, file, path, suffix, weak) {
                MEMO.put(key, v);
            }
        }
    }
}

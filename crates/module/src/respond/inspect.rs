//! What a sibling's headers say (its window, the length it declares,
//! whether browsers can decode it), read once per file version
//! (`memo::header`), and the positional reads the core's decoders take.

use crate::memo;
use gdn_core::coding::Coding;
use gdn_core::decode::{self, DecodeError, HeaderFacts};
use gdn_httpd::{File, Level, Request};
use std::ffi::CStr;

/// What a sibling's headers say, from the per-version cache or read once.
/// A sibling browsers cannot decode is logged when first found, so once
/// per file version (and process).
pub(super) fn sibling_header(
    req: &Request<'_>,
    c: Coding,
    file: &File<'_>,
    path: &CStr,
) -> Result<(HeaderFacts, memo::SiblingVersion), DecodeError> {
    let key = (file.info().version(), c);
    if let Some(Some(f)) = memo::header::get(&key) {
        return Ok((f, key));
    }
    let f = decode::inspect(c, &Readable(*file), file.info().size()).inspect_err(|_| {
        memo::header::put(key, None);
    })?;
    if let Some(why) = f.browser_refusal(c) {
        req.log(
            Level::Info,
            0,
            &format!(
                "{}: {why}; not sent as {}, another representation is",
                path.to_string_lossy(),
                c.token()
            ),
        );
    }
    memo::header::put(key, Some(f));
    Ok((f, key))
}

/// Says once per file version why browsers cannot decode a sibling
/// judged so (`judge`), which is then decoded for clients, never sent.
pub(super) fn refused_by_browsers(req: &Request<'_>, c: Coding, file: &File<'_>, path: &CStr) {
    let _ = sibling_header(req, c, file, path);
}

/// An open sibling as the core's decoders read it: positional reads.
pub(super) struct Readable<'r>(pub(super) File<'r>);

impl decode::ReadAt for Readable<'_> {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read_at(offset, buf)
    }
}

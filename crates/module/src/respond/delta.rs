//! A delta (RFC 9842) against the dictionary the client announced, a
//! published one or one the on-demand cache made, is sent only when its
//! header names that dictionary: checked once per file version and
//! remembered beside the other per-version facts.

use super::body::{send_file, Outgoing};
use super::responder::Responder;
use crate::answer::{Answer, Skip};
use crate::lookup::Sibling;
use crate::memo;
use gdn_core::dictionary::{self, DeltaCoding, Hash};
use gdn_core::representation::Representation;
use gdn_httpd::{File, FileKind, Level, PoolBytes, Request};
use std::ffi::CStr;

/// Whether the delta at `path` starts with the `d` header naming `h`; a
/// mismatch is logged once per file version (and process) and the delta
/// is not sent. A read error is not remembered.
pub(crate) fn names(
    req: &Request<'_>,
    d: DeltaCoding,
    h: &Hash,
    file: &File<'_>,
    path: &CStr,
) -> bool {
    let key = (file.info().version(), d, *h);
    if let Some(ok) = memo::delta::get(&key) {
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
    memo::delta::put(key, ok);
    ok
}

/// Sends the delta in `file` (published, or an on-demand `copy`)
/// zero-copy like any sibling, with `Content-Encoding: dcz` or `dcb`,
/// once its header names the announced dictionary.
pub(super) fn send_checked<'r>(
    a: &Responder<'_, 'r>,
    d: DeltaCoding,
    file: &File<'r>,
    path: &CStr,
    what: impl Fn(DeltaCoding) -> Representation,
) -> Result<Answer, Skip<'r>> {
    match &a.dictionary {
        Some(h) if names(a.req, d, h, file, path) => {}
        _ => return Err(Skip::Refused),
    }
    Ok(send_file(a, Outgoing::of(file, path, what(d).into())))
}

/// Sends a published delta against the dictionary the client announced
/// (RFC 9842).
pub(super) fn send_delta<'r>(
    a: &Responder<'_, 'r>,
    d: DeltaCoding,
    s: &Sibling<'r>,
) -> Result<Answer, Skip<'r>> {
    let file = a.open(None, s)?;
    if file.info().kind() != FileKind::Regular {
        return Err(Skip::Refused);
    }
    send_checked(a, d, &file, s.path, Representation::Delta)
}

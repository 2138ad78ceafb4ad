//! The headers of a body the filter codes, whether coded as it passes
//! or sent from the on-demand cache in place of a file (`files`).

use crate::config::DirConfig;
use gdn_core::dynamic;
use gdn_httpd::Request;
use std::ffi::CStr;

/// What a body coded on the fly goes out with: its coding; no length,
/// `Content-MD5` or ranges (its bytes are known only as they are made,
/// and differ with the level: a range of one response is no range of
/// another, so the request's `Range` is dropped and the whole body sent);
/// the handler's ETag made weak and suffixed with the coding.
pub(super) fn coded(req: &Request<'_>, c: &'static CStr, dir: &DirConfig) {
    req.set_content_encoding(c);
    req.unset_header_out(c"Content-Length");
    req.unset_header_out(c"Content-MD5");
    req.unset_header_out(c"Accept-Ranges");
    req.unset_header_in(c"Range");
    if let Some(inner) = req.header_out_any(c"ETag").and_then(dynamic::etag_inner) {
        req.unset_header_out(c"ETag");
        req.set_header_parts(c"ETag", &[b"W/\"", inner, b"-", c.to_bytes(), b"\""]);
    }
    crate::respond::mark(req, dir, c":-)");
}

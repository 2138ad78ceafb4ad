//! The error responses' `Vary`: an error made after the handler chose a
//! representation keeps only `err_headers_out`.

use super::name::HANDLER;
use gdn_httpd::Request;

/// An error response made after the handler chose a representation (a
/// 416 from the byterange filter, a filter's 500) keeps only
/// err_headers_out: carry the handler's Vary over, so caches still key
/// the error on Accept-Encoding. Costs nothing on successful responses.
pub fn insert_error_filter(req: &Request<'_>) {
    if !req.handler_is(HANDLER) {
        return;
    }
    for name in [c"Accept-Encoding", c"Available-Dictionary"] {
        let listed = req.header_out(c"Vary").is_some_and(|v| {
            v.split(|&b| b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(name.to_bytes()))
        });
        if listed {
            req.vary_on_error(name);
        }
    }
}

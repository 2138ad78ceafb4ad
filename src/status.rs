//! What an admin sees of the counters: the module's section in
//! mod_status's `server-status` (HTML, or `Key: value` lines for
//! `?auto`), and the `gzip-disk-ng-metrics` handler, which answers them in
//! Prometheus's text format.

use crate::cache;
use crate::counters;
use crate::httpd::{self, Level, Request, Status};
use crate::tally;
use std::ffi::CStr;

/// The handler name of the metrics, for `SetHandler`.
pub const METRICS_HANDLER: &CStr = c"gzip-disk-ng-metrics";

/// The module's part of `server-status`.
pub fn section(req: &Request<'_>, short: bool) {
    let Some(s) = counters::snapshot(cache::active().is_some()) else {
        return;
    };
    let text = if short {
        tally::auto(&s)
    } else {
        let now = req.request_time_secs().max(0) as u64;
        tally::html(&s, now)
    };
    req.write(text.as_bytes());
}

/// Answers `SetHandler gzip-disk-ng-metrics`: the counters in the
/// Prometheus text exposition format, never cached.
pub fn metrics(req: &Request<'_>) -> Status {
    req.allow_get_options();
    match req.method_number() {
        httpd::M_GET => {}
        httpd::M_OPTIONS => return req.send_options(),
        _ => return Status::METHOD_NOT_ALLOWED,
    }
    let st = req.discard_body();
    if st != Status::OK {
        return st;
    }
    let Some(s) = counters::snapshot(cache::active().is_some()) else {
        req.log(
            Level::Err,
            0,
            "no counters: their shared memory could not be made",
        );
        return Status::SERVICE_UNAVAILABLE;
    };
    let text = tally::prometheus(&s);
    req.set_content_type(c"text/plain; version=0.0.4; charset=utf-8");
    req.set_header_static(c"Cache-Control", c"no-store");
    req.set_content_length(text.len() as u64);
    if !req.header_only() {
        req.write(text.as_bytes());
    }
    Status::OK
}

//! What an admin sees of the counters: the module's section in
//! mod_status's `server-status` (HTML, or `Key: value` lines for
//! `?auto`), the module's own page (`gzip-disk-ng-status`: the same
//! figures first, and a chart), and the `gzip-disk-ng-metrics` handler,
//! which answers them in Prometheus's text format.

use crate::metrics::counters;
use crate::metrics::tally::{self, Snapshot};
use crate::ondemand::cache;
use gdn_httpd::{Level, Request, Status};
use std::ffi::CStr;

/// The handler name of the metrics, for `SetHandler`.
pub const METRICS_HANDLER: &CStr = c"gzip-disk-ng-metrics";

/// The handler name of the module's status page, for `SetHandler`.
pub const PAGE_HANDLER: &CStr = c"gzip-disk-ng-status";

/// The metrics route: answers a request whose handler is
/// `gzip-disk-ng-metrics` or `gzip-disk-ng-status`; `None` for others.
pub fn route(req: &Request<'_>) -> Option<Status> {
    if req.handler_is(METRICS_HANDLER) {
        Some(metrics(req))
    } else if req.handler_is(PAGE_HANDLER) {
        Some(page(req))
    } else {
        None
    }
}

/// The module's part of `server-status`.
pub fn section(req: &Request<'_>, short: bool) {
    let Some(s) = counters::snapshot(cache::active().is_some()) else {
        return;
    };
    let text = if short {
        tally::auto(&s)
    } else {
        tally::html(&s, now(req))
    };
    req.write(text.as_bytes());
}

fn now(req: &Request<'_>) -> u64 {
    req.request_time_secs().max(0) as u64
}

/// Answers `SetHandler gzip-disk-ng-metrics`: the counters in the
/// Prometheus text exposition format, never cached.
pub fn metrics(req: &Request<'_>) -> Status {
    answer(req, |s| {
        (
            c"text/plain; version=0.0.4; charset=utf-8",
            tally::prometheus(s),
        )
    })
}

/// Answers `SetHandler gzip-disk-ng-status`: the module's page, or with
/// `?auto` the `Key: value` lines of `server-status?auto`.
pub fn page(req: &Request<'_>) -> Status {
    let auto = req.query() == Some(b"auto");
    answer(req, |s| {
        if auto {
            (c"text/plain; charset=utf-8", tally::auto(s))
        } else {
            (c"text/html; charset=utf-8", tally::page(s, now(req)))
        }
    })
}

/// GET and HEAD of a text made from the counters (OPTIONS answered, 405
/// otherwise), never cached; 503 without counters.
fn answer(req: &Request<'_>, text: impl FnOnce(&Snapshot) -> (&'static CStr, String)) -> Status {
    if let Some(st) = req.only_get() {
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
    let (content_type, text) = text(&s);
    req.set_content_type(content_type);
    req.set_header_static(c"Cache-Control", c"no-store");
    req.set_content_length(text.len() as u64);
    if !req.header_only() {
        req.write(text.as_bytes());
    }
    Status::OK
}

//! Conditional requests for what the filter codes. The filter gives a
//! coded response its own ETag (`W/"v1-br"`), so a client revalidates
//! with that tag, which the handler (a PHP application, a CGI, a proxied
//! server, core's handler and its `ap_meets_conditions`) never made and
//! never matches. Before the handler runs, a tag the filter would make
//! for this client is given back as the handler's own; a 304 passing the
//! filter then carries the tag the client stored, and `Vary`, as the
//! coded 200 would.

use super::choice::{aside, negotiate, response_facts, suffix};
use super::delta;
use crate::config::Settings;
use gdn_core::dynamic::{self, Precondition};
use gdn_httpd::{apr_status_t, Filter, Input, Level, Request};
use std::ffi::CStr;

/// The filter that refreshes a 304 the filter itself may never see:
/// added where the request named a tag the filter made, since mod_filter
/// dispatches by type and a 304 often has none.
pub const NOT_MODIFIED: &std::ffi::CStr = c"GZIP_DISK_NG_304";

/// Set where the request's tags named the coding the client gets now, so
/// the 304 knows the client holds a body the filter coded.
const NAMED: &CStr = c"gzip-disk-ng-etag";

/// Set once a 304's validators are the coded response's: the filter may
/// stand twice in a chain (`SetOutputFilter` and by type), and a tag is
/// suffixed once.
const REFRESHED: &CStr = c"gzip-disk-ng-304";

/// The headers that carry entity tags to the handler.
const HEADERS: [(&CStr, Precondition); 2] = [
    (c"If-None-Match", Precondition::IfNoneMatch),
    (c"If-Match", Precondition::IfMatch),
];

/// The filter's init, before the handler: the request's tags of the
/// client's coding given back as the handler's. Only for a request the
/// filter may code: never a subrequest, the module's own handler (whose
/// precompressed siblings have suffixed tags of their own, which it
/// compares itself), or `no-gzip`.
pub fn prepare(req: &Request<'_>, settings: &Settings<'_>) {
    if req.is_subrequest()
        || handler_answers(req)
        || req.env_is_set(c"no-gzip")
        || HEADERS.iter().all(|(h, _)| req.header_in(h).is_none())
    {
        return;
    }
    let Some((coding, delta)) = negotiate(req, settings) else {
        return;
    };
    let token = suffix(coding, delta.as_ref()).to_string_lossy();
    for (header, which) in HEADERS {
        let Some(own) = req
            .header_in(header)
            .and_then(|list| dynamic::handler_tags(list, &token, which))
        else {
            continue;
        };
        req.log_with(Level::Debug, 0, || {
            format!(
                "{}: the filter's {token} tags given back as the handler's",
                header.to_string_lossy()
            )
        });
        req.set_header_in(header, own);
        if req.notes_get(NAMED).is_none() {
            req.add_note(NAMED, c"1");
            req.add_output_filter(NOT_MODIFIED);
        }
    }
}

/// Whether the module's handler answers the request itself, comparing
/// its own tags: it gives way to core's handler where a filter that may
/// change the bytes (this one among them) is in the chain.
fn handler_answers(req: &Request<'_>) -> bool {
    req.handler_is(crate::handler::name::HANDLER) && req.content_filter().is_none()
}

/// The companion filter's one look at a response: a 304 refreshed, then
/// out of the chain.
pub fn refresh(f: &mut Filter<'_>, input: &mut Input, settings: &Settings<'_>) -> apr_status_t {
    let req = f.request();
    if req.status().code() == 304 {
        not_modified(req, settings, &response_facts(req));
    }
    f.remove();
    f.pass_input(input)
}

/// A 304 passing the filter: the handler's ETag suffixed with the coding
/// the client gets now, and `Vary`, where its 200 would have been coded.
pub fn not_modified(req: &Request<'_>, settings: &Settings<'_>, facts: &dynamic::Response<'_>) {
    if handler_answers(req) || req.notes_get(REFRESHED).is_some() {
        return;
    }
    let named = req.notes_get(NAMED).is_some();
    if let Err(why) = dynamic::refreshes(facts, named) {
        aside(req, why);
        return;
    }
    let dictionary = delta::offered(settings.site_dictionary);
    if !req.env_is_set(c"dont-vary") {
        req.vary(c"Accept-Encoding");
        if dictionary {
            req.vary(c"Available-Dictionary");
        }
    }
    let Some((coding, delta)) = negotiate(req, settings) else {
        return;
    };
    let token = suffix(coding, delta.as_ref()).to_string_lossy();
    if let Some(tag) = req
        .header_out_any(c"ETag")
        .and_then(|t| dynamic::coded_etag(t, &token))
    {
        req.unset_header_out(c"ETag");
        req.set_header_value(c"ETag", tag);
    }
    req.add_note(REFRESHED, c"1");
}

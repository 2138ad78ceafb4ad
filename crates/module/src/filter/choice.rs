//! What the filter reads of a request and its response to decide, shared
//! by the coding of a body and the refreshing of a 304: the response's
//! facts, the client's coding, the suffix naming it, a step aside.

use super::delta;
use crate::config::Settings;
use gdn_core::coding::Coding;
use gdn_core::dynamic::{self, Aside};
use gdn_core::negotiate::Accepted;
use gdn_httpd::{Level, Request};
use std::ffi::CStr;

/// The response as the filter first sees it: what the handler and the
/// filters before set, and the environment that turns coding off.
pub fn response_facts<'r>(req: &Request<'r>) -> dynamic::Response<'r> {
    dynamic::Response {
        status: u16::try_from(req.status().code()).unwrap_or(0),
        content_encoding: req
            .content_encoding()
            .or_else(|| req.header_out_any(c"Content-Encoding")),
        cache_control: req.header_out_any(c"Cache-Control"),
        request_cache_control: req.header_in(c"Cache-Control"),
        content_type: req.content_type(),
        content_length: req
            .header_out(c"Content-Length")
            .and_then(|v| std::str::from_utf8(v).ok()?.trim().parse().ok()),
        no_gzip: req.env_is_set(c"no-gzip"),
        only_html: req.env_is_set(c"gzip-only-text/html"),
    }
}

/// Says why a response was not coded, and varies where it could be.
pub fn aside(req: &Request<'_>, why: Aside) {
    if why.varies() && !req.env_is_set(c"dont-vary") {
        req.vary(c"Accept-Encoding");
    }
    req.log_with(Level::Debug, 0, || {
        format!("output filter steps aside: {}", why.word())
    });
}

/// The client's coding among the configured ones, each removable by its
/// environment variable (`no-gzip`'s family); `dcz` or `dcb` against
/// the host's site dictionary where the client holds it and zstd or br is
/// configured.
pub fn negotiate(
    req: &Request<'_>,
    settings: &Settings<'_>,
) -> Option<(Coding, Option<delta::Dictionary>)> {
    let dir = settings.dir;
    let mut acc = Accepted::parse_bytes(req.header_in(c"Accept-Encoding"));
    for c in Coding::ALL {
        if req.env_is_set(c.no_env()) {
            acc.forbid(c);
        }
    }
    let usable = |c: Coding| dir.encodings().contains(&c) && !req.env_is_set(c.no_env());
    if let Some(d) = delta::for_client(req, &acc, settings.site_dictionary, usable) {
        return Some((d.coding.base(), Some(d)));
    }
    Some((dynamic::choose(&acc, dir.encodings())?, None))
}

/// The coding a body goes out in, as its `Content-Encoding` and its ETag
/// suffix name it: the delta coding against a dictionary, else the
/// coding's own.
pub fn suffix(coding: Coding, delta: Option<&delta::Dictionary>) -> &'static CStr {
    match delta {
        Some(d) => d.coding.c_token(),
        None => coding.c_token(),
    }
}

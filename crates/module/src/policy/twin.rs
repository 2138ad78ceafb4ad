//! What Apache's own request for a sibling (its twin) may come to for the
//! module to send that file: core's default handler (or the module's)
//! sending it through no content filter.

use super::scan::magic_type;
use crate::names::HANDLER;
use gdn_core::types::is_handler_type;
use gdn_httpd::Twin;
use std::ffi::CStr;

/// mod_ssl, by its source name.
pub const MOD_SSL: &CStr = c"mod_ssl.c";

/// Why a twin must stop before its access hooks, on the client's
/// connection, or `None`. mod_ssl's access hook asks the client for a
/// certificate again (a TLS 1.2 renegotiation, TLS 1.3 post-handshake
/// authentication) where its per-directory record asks for more than the
/// connection has; the asking request's own hooks brought the connection
/// in line with its record. So a twin with the asking request's record
/// of mod_ssl can ask for nothing more and runs on; one with another (a
/// section of the sibling's name configures mod_ssl), on TLS, is
/// stopped and refused, the client not asked. `records_differ` says
/// whether a module's record for the twin is another than the asker's.
pub fn stop_before_access(
    on_tls: bool,
    records_differ: impl Fn(&CStr) -> bool,
) -> Option<&'static CStr> {
    (on_tls && records_differ(MOD_SSL)).then_some(
        c"mod_ssl configured otherwise for its name: its own request may ask the client for a certificate",
    )
}

/// Why no twin can stand for the direct request for a sibling's URI made
/// from this request, or `None`. A body: the twin cannot be given it,
/// and a hook of its own that read one would read the connection's
/// bytes (the next request's, or a wait for bytes that never come).
/// HTTP Digest credentials (RFC 7616): they sign the request's own URI
/// (`uri=`), which mod_auth_digest compares with the request line, so the
/// sibling's own request would carry others, and the twin would be
/// refused (400) with an error logged as for a forged request.
pub fn unaskable(has_body: bool, authorization: Option<&[u8]>) -> Option<&'static str> {
    if has_body {
        return Some(
            "the request has a body, which the sibling's own request could read \
             and its check cannot give it",
        );
    }
    let scheme = authorization?
        .trim_ascii_start()
        .split(|b| b.is_ascii_whitespace())
        .next()?;
    scheme.eq_ignore_ascii_case(b"Digest").then_some(
        "the request's Digest credentials sign its own URI, and the sibling's \
         own request would sign the sibling's",
    )
}

/// The handler the module's own steps aside for: the one a request had
/// before `SetHandler` replaced it (`before`), where that is another than
/// core's or the module's. The handler's step and a sibling's twin judged
/// by one rule.
pub fn stepped_aside_for(before: Option<&CStr>) -> Option<&CStr> {
    before.filter(|b| {
        let b = b.to_bytes();
        !b.eq_ignore_ascii_case(b"default-handler") && !b.eq_ignore_ascii_case(HANDLER.to_bytes())
    })
}

/// Why a twin that reached its file would not get it as it is; `None`
/// when it would. `unknown_handler` is the configuration's module with a
/// content handler that may claim any file whose handler is unset.
pub fn refusal(t: &Twin<'_>, unknown_handler: Option<&str>) -> Option<String> {
    let text = |c: &CStr| c.to_string_lossy().into_owned();
    match t.handler {
        Some(h) => {
            let h = text(h);
            let file = h.eq_ignore_ascii_case("default-handler")
                || h.as_bytes().eq_ignore_ascii_case(HANDLER.to_bytes());
            if !file {
                return Some(format!("handler {h}"));
            }
            // The module's handler steps aside, on the sibling's own
            // request, for the one SetHandler replaced.
            let ours = h.as_bytes().eq_ignore_ascii_case(HANDLER.to_bytes());
            if let Some(b) = stepped_aside_for(t.handler_before_override).filter(|_| ours) {
                return Some(format!("handler {}, which SetHandler replaced", text(b)));
            }
            // The module's handler refuses, on the sibling's own
            // request, a file of a script's type (handler::script).
            let script = t.content_type.filter(|ct| is_handler_type(ct.to_bytes()));
            if let Some(ct) = script.filter(|_| ours) {
                return Some(format!("a script's type {}", text(ct)));
            }
        }
        None => {
            if let Some(ct) = t.content_type.map(text).filter(|ct| magic_type(ct)) {
                return Some(format!("a handler for type {ct}"));
            }
            if let Some(u) = unknown_handler {
                return Some(u.to_owned());
            }
        }
    }
    t.filter.map(|f| format!("output filter {}", text(f)))
}

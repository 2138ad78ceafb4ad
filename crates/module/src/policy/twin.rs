//! What Apache's own request for a sibling (its twin) may come to for the
//! module to send that file: core's default handler (or the module's)
//! sending it through no content filter.

use super::scan::magic_type;
use crate::names::HANDLER;
use gdn_httpd::Twin;

/// Why a twin that reached its file would not get it as it is; `None`
/// when it would. `unknown_handler` is the configuration's module with a
/// content handler that may claim any file whose handler is unset.
pub fn refusal(t: &Twin<'_>, unknown_handler: Option<&str>) -> Option<String> {
    let text = |c: &std::ffi::CStr| c.to_string_lossy().into_owned();
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
            if let Some(b) = t.handler_before_override.map(text).filter(|b| {
                h.as_bytes().eq_ignore_ascii_case(HANDLER.to_bytes())
                    && !b.eq_ignore_ascii_case("default-handler")
                    && !b.as_bytes().eq_ignore_ascii_case(HANDLER.to_bytes())
            }) {
                return Some(format!("handler {b}, which SetHandler replaced"));
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

//! A script is never sent as bytes: where this handler is set for a
//! server-side script (`SetHandler gzip-disk-ng` in `<Location />`, or
//! `RewriteRule ^ - [H=gzip-disk-ng]` for every URL, above the
//! `<FilesMatch "\.php$">` that hands `.php` to PHP), the file's bytes
//! are its source: the handler answers 500 with one log line that names
//! the fix, sends no sibling of it and queues no copy. A script is a name
//! with an extension a server-side handler runs (`gdn_core::types`), or
//! one mod_mime gave a handler's type (`AddType application/x-httpd-php`).
//!
//! Where another handler had the request before `SetHandler gzip-disk-ng`
//! replaced it (a `ScriptAlias`'s `cgi-script`, an `AddHandler`'s, a proxy
//! mapping's), the handler steps aside: that handler runs, as without
//! this module's `SetHandler`.

use gdn_core::coding::Coding;
use gdn_core::types;
use gdn_httpd::{FileKind, Level, Request, Status};
use std::ffi::{CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// The answer of the handler the request had before `SetHandler`
/// replaced it with this one, where that was another handler than core's.
pub(super) fn step_aside(req: &Request<'_>) -> Option<Status> {
    let before = crate::policy::stepped_aside_for(req.handler_before_override())?;
    req.log_with(Level::Debug, 0, || {
        format!(
            "steps aside for handler {}, which had the request before SetHandler set this one",
            before.to_string_lossy()
        )
    });
    Some(req.run_handler_as(before))
}

/// 500 when `filename` is a server-side script that is there (`kind`),
/// or has a sibling there; `None` otherwise (a missing one is Apache's
/// 404 as before).
pub(super) fn refuse(req: &Request<'_>, filename: &CStr, kind: FileKind) -> Option<Status> {
    let by_name = types::is_script_name(filename.to_bytes());
    let by_type = || req.content_type().is_some_and(types::is_handler_type);
    if !by_name && !by_type() {
        return None;
    }
    if kind != FileKind::Regular && !has_sibling(filename) {
        return None;
    }
    req.log_with(Level::Err, 0, || {
        format!(
            "{} is a server-side script, and the gzip-disk-ng handler is set for it \
             (SetHandler in <Location> or RewriteRule [H=gzip-disk-ng] overrides the \
             script's own handler): refused rather than sent as source. Set \
             \"SetHandler gzip-disk-ng\" in <Directory>, where the script's \
             <FilesMatch> wins, or only for static types (<FilesMatch \"\\.(html|css|js)$\">)",
            filename.to_string_lossy()
        )
    });
    Some(Status::INTERNAL_SERVER_ERROR)
}

/// Whether a sibling of a missing script is there, in any coding.
fn has_sibling(filename: &CStr) -> bool {
    let suffixes = Coding::ALL.iter().flat_map(|c| c.suffixes());
    suffixes.into_iter().any(|s| {
        let mut name = filename.to_bytes().to_vec();
        name.extend_from_slice(s.as_bytes());
        PathBuf::from(OsStr::from_bytes(&name))
            .symlink_metadata()
            .is_ok()
    })
}

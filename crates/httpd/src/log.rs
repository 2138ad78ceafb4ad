//! Logging through `ap_log_rerror`, with this module's index.

use super::{apr_status_t, ffi, index, Request};
use std::ffi::c_int;

/// Log levels, as `LogLevel` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Crit = ffi::APLOG_CRIT as isize,
    Err = ffi::APLOG_ERR as isize,
    Warn = ffi::APLOG_WARNING as isize,
    Notice = ffi::APLOG_NOTICE as isize,
    Info = ffi::APLOG_INFO as isize,
    Debug = ffi::APLOG_DEBUG as isize,
    /// What each check did, for `LogLevel gzip_disk_ng:trace1`: a line
    /// per request that went well, which debug leaves out.
    Trace1 = ffi::APLOG_TRACE1 as isize,
}

impl Request<'_> {
    /// Whether a message at `level` would be logged.
    pub(crate) fn log_enabled(&self, level: Level) -> bool {
        // SAFETY: live request.
        unsafe { ffi::gdn_log_enabled(self.r, index::get(), level as c_int) != 0 }
    }

    /// Logs one line through `ap_log_rerror` with this module's index.
    pub fn log(&self, level: Level, status: apr_status_t, msg: &str) {
        if !self.log_enabled(level) {
            return;
        }
        let c = self.pool_str(&msg.replace('\0', "\\0"));
        // SAFETY: pool string, "%s" format in the shim.
        unsafe { ffi::gdn_log_r(self.r, index::get(), level as c_int, status, c) }
    }

    /// Logs lazily: the message is built only when the level is on.
    pub fn log_with(&self, level: Level, status: apr_status_t, f: impl FnOnce() -> String) {
        if self.log_enabled(level) {
            self.log(level, status, &f());
        }
    }
}

/// Log lines of the server, for a helper process (no request to log on).
#[derive(Clone, Copy)]
pub struct ServerLog(*mut ffi::server_rec);

// SAFETY: the server record is configuration, read-only once the helper
// runs; ap_log_error is thread-safe.
unsafe impl Send for ServerLog {}
// SAFETY: as above.
unsafe impl Sync for ServerLog {}

impl ServerLog {
    pub(super) fn new(s: *mut ffi::server_rec) -> ServerLog {
        ServerLog(s)
    }

    /// Logs `msg` at `level` for this module.
    pub fn log(&self, level: Level, msg: &str) {
        let c = std::ffi::CString::new(msg.replace('\0', " ")).unwrap_or_default();
        // SAFETY: a live server record and a NUL-terminated message.
        unsafe { ffi::gdn_log_s(self.0, index::get(), level as c_int, 0, c.as_ptr()) }
    }
}

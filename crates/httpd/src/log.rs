//! Logging through `ap_log_rerror`, with this module's index.

use super::{apr_status_t, ffi, module, Request};
use std::ffi::c_int;

/// Log levels, as `LogLevel` names them.
#[derive(Clone, Copy, Debug)]
pub enum Level {
    Err = ffi::APLOG_ERR as isize,
    Warn = ffi::APLOG_WARNING as isize,
    Notice = ffi::APLOG_NOTICE as isize,
    Info = ffi::APLOG_INFO as isize,
    Debug = ffi::APLOG_DEBUG as isize,
}

impl Request<'_> {
    /// Whether a message at `level` would be logged.
    pub(crate) fn log_enabled(&self, level: Level) -> bool {
        // SAFETY: live request.
        unsafe { ffi::gdn_log_enabled(self.r, module::index(), level as c_int) != 0 }
    }

    /// Logs one line through `ap_log_rerror` with this module's index.
    pub fn log(&self, level: Level, status: apr_status_t, msg: &str) {
        if !self.log_enabled(level) {
            return;
        }
        let c = self.pool_str(&msg.replace('\0', "\\0"));
        // SAFETY: pool string, "%s" format in the shim.
        unsafe { ffi::gdn_log_r(self.r, module::index(), level as c_int, status, c) }
    }

    /// Logs lazily: the message is built only when the level is on.
    pub fn log_with(&self, level: Level, status: apr_status_t, f: impl FnOnce() -> String) {
        if self.log_enabled(level) {
            self.log(level, status, &f());
        }
    }
}

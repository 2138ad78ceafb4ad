//! The only place with `unsafe`: httpd/APR bindings and safe wrappers for
//! request, pool, table, brigade, file and log, plus the building blocks of
//! a module (`module`). Names no application type.
//!
//! Everything handed out borrows the request and lives no longer than its
//! pool; strings handed to `apr_table_setn` are `'static` or pool copies.
#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

mod brigade;
pub mod conftree;
pub mod ffi;
mod file;
pub mod filter;
pub mod helper;
mod host;
mod index;
mod log;
pub mod module;
mod pool;
mod request;
pub mod sections;
pub mod shm;
mod validators;

use std::ffi::{c_int, CStr};

pub use brigade::Brigade;
pub use ffi::{apr_status_t, M_GET, M_INVALID, M_OPTIONS};
pub use file::{File, FileKind, FileReader, FileVersion, Finfo, PoolBytes, SymlinkPolicy};
pub use filter::{Filter, Input, Piece};
pub use log::{Level, ServerLog};
pub use module::{
    Args, Command, Config, Context, Directive, FilterKind, HarnessRule, Hook, Module, Order, Parms,
    PlainFilter, PostConfig, Set, SiblingRules, Takes,
};
pub use request::{Asked, AuthzNode, ClientRules, Request, Twin, TwinGate};
pub use validators::{ValidatorInputs, Validators};

/// What a hook returns, or an HTTP status: httpd mixes both in one `int`,
/// this type names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct Status(c_int);

impl Status {
    /// Handled (or, for a fixup, nothing to object to).
    pub const OK: Status = Status(ffi::OK as c_int);
    /// Not this module's business.
    pub const DECLINED: Status = Status(ffi::DECLINED);
    /// The response is complete; nothing more may be sent.
    pub const DONE: Status = Status(ffi::DONE);
    /// A filter already answered; the handler has nothing more to say.
    pub const FILTER_ERROR: Status = Status(ffi::AP_FILTER_ERROR);
    pub const HTTP_OK: Status = Status(ffi::HTTP_OK as c_int);
    pub const FORBIDDEN: Status = Status(ffi::HTTP_FORBIDDEN as c_int);
    pub const NOT_FOUND: Status = Status(ffi::HTTP_NOT_FOUND as c_int);
    pub const METHOD_NOT_ALLOWED: Status = Status(ffi::HTTP_METHOD_NOT_ALLOWED as c_int);
    pub const RANGE_NOT_SATISFIABLE: Status = Status(ffi::HTTP_RANGE_NOT_SATISFIABLE as c_int);
    pub const NOT_ACCEPTABLE: Status = Status(ffi::HTTP_NOT_ACCEPTABLE as c_int);
    pub const INTERNAL_SERVER_ERROR: Status = Status(ffi::HTTP_INTERNAL_SERVER_ERROR as c_int);
    pub const NOT_IMPLEMENTED: Status = Status(ffi::HTTP_NOT_IMPLEMENTED as c_int);
    pub const BAD_GATEWAY: Status = Status(ffi::HTTP_BAD_GATEWAY as c_int);
    pub const SERVICE_UNAVAILABLE: Status = Status(ffi::HTTP_SERVICE_UNAVAILABLE as c_int);

    /// The value httpd sees.
    pub const fn code(self) -> c_int {
        self.0
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The uid Apache's children (and helpers) run as: `User` when started
/// as root, else the user that started it.
pub fn server_uid() -> u32 {
    // SAFETY: plain libc call.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return euid;
    }
    // SAFETY: set by mod_unixd while the configuration is read, only read
    // after.
    unsafe { ffi::ap_unixd_config.user_id }
}

/// How an admin names `server_uid()`: `User` as configured when started
/// as root (e.g. `www-data`), else the uid as a number.
pub fn server_user_name() -> String {
    // SAFETY: plain libc call.
    if unsafe { libc::geteuid() } != 0 {
        return server_uid().to_string();
    }
    // SAFETY: set by mod_unixd while the configuration is read (a static
    // default or a pconf string), only read after.
    let name = unsafe { ffi::ap_unixd_config.user_name };
    if name.is_null() {
        return server_uid().to_string();
    }
    // SAFETY: as above; NUL-terminated.
    unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned()
}

/// Fills `buf` from APR's random source (urandom); false if it failed.
pub fn random_bytes(buf: &mut [u8]) -> bool {
    // SAFETY: writes exactly buf.len() bytes into buf.
    unsafe { ffi::apr_generate_random_bytes(buf.as_mut_ptr(), buf.len()) == 0 }
}

/// Four bytes from APR's random source (urandom); `None` if it failed.
pub fn random_u32() -> Option<u32> {
    let mut b = [0u8; 4];
    random_bytes(&mut b).then(|| u32::from_le_bytes(b))
}

/// Workers waiting for a request across the children that take new ones,
/// as mod_status counts them from the scoreboard (every worker slot is
/// read: call it at most once a second or so); `None` without one.
pub fn idle_workers() -> Option<u32> {
    // SAFETY: reads the scoreboard, which lives as long as the server.
    let n = unsafe { ffi::gdn_idle_workers() };
    u32::try_from(n).ok()
}

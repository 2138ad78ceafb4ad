//! This module's index in httpd's list of modules, which its log lines,
//! per-request state and shared memory are keyed by: written once when
//! httpd registers the hooks (`module`), read by everything that logs.

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering};

/// -1 (no module) until httpd registers the hooks.
static INDEX: AtomicI32 = AtomicI32::new(-1);

pub(super) fn get() -> c_int {
    INDEX.load(Ordering::Relaxed)
}

pub(super) fn set(index: c_int) {
    INDEX.store(index, Ordering::Relaxed);
}

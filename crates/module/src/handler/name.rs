//! The content handler's name, which the handler, the index fixup and
//! the error responses' `Vary` each check.

use std::ffi::CStr;

/// The handler name, as `SetHandler` and `[H=…]` give it.
pub const HANDLER: &CStr = c"gzip-disk-ng";

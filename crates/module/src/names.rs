//! The names the module is known by in a configuration: its content
//! handler's and its directives' prefix, which the handler, the filter and
//! the reading of a configuration (`policy`) each check.

use std::ffi::CStr;

/// The handler name, as `SetHandler` and `[H=…]` give it.
pub const HANDLER: &CStr = c"gzip-disk-ng";

/// What every directive of the module's name starts with.
pub const DIRECTIVE_PREFIX: &str = "GzipDiskNg";

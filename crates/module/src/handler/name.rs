//! The content handler's name, which the handler, the index fixup and
//! the error responses' `Vary` each check.

pub use crate::names::HANDLER;

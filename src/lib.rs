//! mod_gzip_disk_ng: an Apache httpd 2.4 module that serves precompressed
//! siblings (`page.html.zst`, `.br`, `.gz`) and decompresses on the fly for
//! clients that accept none of them.
//!
//! The pure decision code (`negotiate`, `variant`, `decode`, `config`) knows
//! nothing of Apache and is unit-tested alone; `httpd` holds every FFI call,
//! and `handler` turns decisions into responses through its safe wrappers.

pub mod coding;
pub mod config;
pub mod decode;
pub mod facts_cache;
#[doc(hidden)]
pub mod handler;
pub mod httpd;
pub mod jitter;
pub mod negotiate;
pub mod publish;
#[cfg(test)]
mod test_util;
pub mod variant;

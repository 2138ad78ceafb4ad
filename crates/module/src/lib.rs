//! mod_gzip_disk_ng: an Apache httpd 2.4 module that serves precompressed
//! siblings (`page.html.zst`, `.br`, `.gz`) and decompresses on the fly for
//! clients that accept none of them.
//!
//! The pure decision code (`negotiate`, `variant`, `decode`, `config`,
//! `jitter`) knows nothing of Apache and is unit-tested alone. `httpd`
//! holds every FFI call and names no application type; `module` declares
//! the module on it, `handler` gathers a request's facts, `variant`
//! decides and `respond` answers.
#![deny(unsafe_code)]

mod cache;
pub mod coding;
pub mod config;
mod counters;
pub mod decode;
pub mod dictionary;
pub mod directives;
pub mod facts_cache;
#[doc(hidden)]
pub mod handler;
pub mod httpd;
pub mod jitter;
mod lookup;
pub mod module;
pub mod negotiate;
pub mod ondemand;
pub mod publish;
mod respond;
mod size_memo;
mod status;
mod store_guard;
pub mod tally;
#[cfg(test)]
mod test_util;
pub mod variant;
pub mod version_cache;

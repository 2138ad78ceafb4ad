//! mod_gzip_disk_ng: an Apache httpd 2.4 module that serves precompressed
//! siblings (`page.html.zst`, `.br`, `.gz`) and decompresses on the fly for
//! clients that accept none of them.
//!
//! The pure decision code is gdn-core, the FFI layer gdn-httpd; this crate
//! is the module on them: `module` declares it (directives and hooks,
//! `config` their values), `handler` gathers a request's facts, `variant`
//! decides and `respond` answers; `cache` and `ondemand` make and find
//! on-demand copies, `memo` holds what is remembered per file version,
//! `metrics` counts. The core's modules are re-exported under their old
//! paths.
#![deny(unsafe_code, unsafe_op_in_unsafe_fn)]

pub use gdn_core::{coding, decode, dictionary, jitter, negotiate, publish, variant};
use gdn_httpd as httpd;

mod cache;
pub mod config;
pub mod directives;
mod handler;
mod lookup;
mod memo;
mod metrics;
mod module;
pub mod ondemand;
mod respond;
mod site;
mod store_guard;
#[cfg(test)]
use gdn_core::test_util;

//! mod_gzip_disk_ng: an Apache httpd 2.4 module that serves precompressed
//! siblings (`page.html.zst`, `.br`, `.gz`) and decompresses on the fly for
//! clients that accept none of them.
//!
//! The pure decision code is gdn-core, the FFI layer gdn-httpd; this crate
//! is the module on them: `module` declares it (directives and hooks,
//! `config` their values), `handler` gathers a request's facts, `variant`
//! decides and `respond` answers; `ondemand` makes and finds on-demand
//! copies, `memo` holds what is remembered per file version,
//! `metrics` counts and `status` shows the counts. Code of gdn-core and gdn-httpd is named by its own
//! crate (`gdn_core::variant`, `gdn_httpd::Request`).
#![deny(unsafe_code, unsafe_op_in_unsafe_fn)]

mod answer;
pub mod config;
mod delta_dictionary;
pub mod directives;
mod facts;
mod filter;
mod handler;
mod lookup;
mod memo;
mod metrics;
mod module;
mod names;
pub mod ondemand;
mod outcome;
mod policy;
mod respond;
mod site;
mod status;
mod store_guard;
mod verified_delta;
mod walk;

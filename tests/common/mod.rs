//! The integration tests' toolkit: `harness` runs a real Apache and
//! requests against it, `browser` headless Chromium against it, `data`
//! makes test content, `codec` encodes and decodes it, `files` lays it
//! out as a publisher would, `oracle` decodes what is served with
//! decoders that are not the product's. The crate's unit tests compile `data` and
//! `codec` too (src/test_util.rs).
#![allow(dead_code, unused_imports)]

mod browser;
mod codec;
mod data;
mod files;
mod fpm;
mod harness;
mod oracle;

/// gdn-core, by the name `codec` knows it (which gdn-core's own unit
/// tests give it too).
use gdn_core as gdn;

pub use browser::*;
pub use codec::*;
pub use data::*;
pub use files::*;
pub use fpm::*;
pub use harness::*;
pub use oracle::*;

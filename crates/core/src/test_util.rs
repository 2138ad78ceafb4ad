//! Helpers for the unit tests: the integration tests' toolkit for test
//! content and encoded streams (tests/common/data.rs and codec.rs),
//! compiled in here too so both kinds of test share one copy.
// Test helpers may unwrap: a failed unwrap is a failed test.
#![allow(dead_code, unused_imports, clippy::unwrap_used, clippy::expect_used)]

/// The crate, by the name the toolkit knows it.
use crate as gdn;

#[path = "../../../tests/common/codec.rs"]
mod codec;
#[path = "../../../tests/common/data.rs"]
mod data;

pub use codec::*;
pub use data::*;

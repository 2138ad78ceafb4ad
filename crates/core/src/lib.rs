//! The pure core of mod_gzip_disk_ng, without Apache: codings
//! (`coding`), `Accept-Encoding` (`negotiate`), the decision (`variant`),
//! streaming decoders (`decode`), BREACH padding (`jitter`), RFC 9842
//! dictionaries (`dictionary`), RFC 9530 digests (`digest`), the ranges
//! a coded representation honours (`range`), and the publish engine's
//! rules and encoders (`publish`) with the types worth compressing
//! (`types`), which the tool and the module's
//! on-demand compressor share; and the output filter's decision
//! (`dynamic`) and coder (`stream`) for responses no file holds. Unit-tested alone.
#![deny(unsafe_code, unsafe_op_in_unsafe_fn)]

pub mod coding;
pub mod decode;
pub mod dictionary;
pub mod digest;
pub mod dynamic;
pub mod jitter;
pub mod negotiate;
pub mod publish;
pub mod range;
pub mod stream;
#[cfg(any(test, feature = "test-util"))]
#[doc(hidden)]
pub mod test_util;
pub mod types;
pub mod variant;

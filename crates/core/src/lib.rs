//! The pure core of mod_gzip_disk_ng, without Apache: codings
//! (`coding`), `Accept-Encoding` (`negotiate`), the decision (`variant`)
//! over representations (`representation`),
//! streaming decoders (`decode`), BREACH padding (`jitter`), RFC 9842
//! dictionaries (`dictionary`), RFC 9530 digests (`digest`), the ranges
//! a coded representation honours (`range`); the encoders (`encode`,
//! `delta_codec`, `brotli_ending`) and the rules of what is worth
//! compressing (`rules`, over the MIME map in `types`), which the
//! publish engine (gdn-publish) and the module's on-demand compressor
//! share; and the output filter's decision (`dynamic`) and coder
//! (`stream`) for responses no file holds. It opens no file: what it
//! works on is handed in (`tests/layout.rs` checks). Its mutable statics
//! are pools that keep warm state for the next body: the decoders'
//! buffers (`decode/body.rs`) and the stream coders (`stream.rs`,
//! `stream/gzip.rs`).
//! Unit-tested alone.
#![deny(unsafe_code, unsafe_op_in_unsafe_fn)]

pub mod brotli_ending;
pub mod coding;
pub mod decode;
pub mod delta_codec;
pub mod dictionary;
pub mod digest;
pub mod dynamic;
pub mod encode;
pub mod jitter;
pub mod negotiate;
pub mod range;
pub mod representation;
pub mod rules;
pub mod stream;
#[cfg(any(test, feature = "test-util"))]
#[doc(hidden)]
pub mod test_util;
pub mod train;
pub mod types;
pub mod variant;

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

/// A source whose every read returns one whole message, as the
/// compressor's `SOCK_SEQPACKET` socket does (cut to the reader's buffer,
/// as the socket cuts it), then the end.
pub struct Messages(pub std::collections::VecDeque<Vec<u8>>);

impl Messages {
    pub fn new(messages: impl IntoIterator<Item = Vec<u8>>) -> Messages {
        Messages(messages.into_iter().collect())
    }
}

impl std::io::Read for Messages {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let Some(m) = self.0.pop_front() else {
            return Ok(0);
        };
        let n = m.len().min(out.len());
        out[..n].copy_from_slice(&m[..n]);
        Ok(n)
    }
}

/// A connected pair of `SOCK_SEQPACKET` sockets, like the compressor's
/// channel: each write sends one message, a read returns one, and the
/// end once the other side is closed.
pub fn seqpacket_pair() -> (std::fs::File, std::fs::File) {
    use rustix::net::{socketpair, AddressFamily, SocketFlags, SocketType};
    let (a, b) = socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )
    .unwrap();
    (a.into(), b.into())
}

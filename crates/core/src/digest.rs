//! RFC 9530 integrity fields: the digest of a representation's bytes
//! (`Repr-Digest`), and of a response's content where that is the whole
//! representation (`Content-Digest`), with the algorithm a client's
//! `Want-Repr-Digest` / `Want-Content-Digest` prefers.
//!
//! A field value is kept in a fixed array, so a per-version memory holds
//! it without the heap and a response copies it into the request pool.

use base64::Engine;
use sha2::{Digest, Sha256, Sha512};
use std::io::{self, Read};

/// The algorithms served: the two RFC 9530 registers as active.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    Sha256,
    Sha512,
}

impl Algorithm {
    /// Its key in the fields.
    pub fn key(self) -> &'static str {
        match self {
            Algorithm::Sha256 => "sha-256",
            Algorithm::Sha512 => "sha-512",
        }
    }
}

/// Longest value: `sha-512=:` + 88 base64 characters + `:`.
const CAPACITY: usize = 100;

/// One field value, `sha-256=:<base64>:`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct FieldValue {
    bytes: [u8; CAPACITY],
    len: u8,
}

impl std::fmt::Debug for FieldValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FieldValue {
    fn of(a: Algorithm, digest: &[u8]) -> FieldValue {
        let mut bytes = [0u8; CAPACITY];
        let key = a.key().as_bytes();
        bytes[..key.len()].copy_from_slice(key);
        bytes[key.len()..key.len() + 2].copy_from_slice(b"=:");
        let at = key.len() + 2;
        // Cannot fail: 64 bytes encode to 88 characters, which fit.
        let n = base64::engine::general_purpose::STANDARD
            .encode_slice(digest, &mut bytes[at..CAPACITY - 1])
            .unwrap_or(0);
        bytes[at + n] = b':';
        FieldValue {
            bytes,
            len: (at + n + 1) as u8,
        }
    }

    /// The value's bytes, as a header is written from them (no UTF-8
    /// check on the request path).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    pub fn as_str(&self) -> &str {
        // ASCII by construction: a key, `=:`, base64, `:`.
        std::str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or("")
    }
}

/// The field value of everything `content` reads, with `a`.
pub fn field_value(a: Algorithm, mut content: impl Read) -> io::Result<FieldValue> {
    let mut buf = [0u8; 16 * 1024];
    let mut h = Hasher::new(a);
    loop {
        let n = content.read(&mut buf)?;
        if n == 0 {
            return Ok(h.finish());
        }
        h.update(&buf[..n]);
    }
}

/// A digest worked out as the bytes go by: for content made while it is
/// sent (a sibling decoded on the fly), whose field value is known only
/// at its end.
pub enum Hasher {
    Sha256(Sha256),
    Sha512(Sha512),
}

impl Hasher {
    pub fn new(a: Algorithm) -> Hasher {
        match a {
            Algorithm::Sha256 => Hasher::Sha256(Sha256::new()),
            Algorithm::Sha512 => Hasher::Sha512(Sha512::new()),
        }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::Sha256(h) => h.update(bytes),
            Hasher::Sha512(h) => h.update(bytes),
        }
    }

    /// The field value of every byte given.
    pub fn finish(self) -> FieldValue {
        match self {
            Hasher::Sha256(h) => FieldValue::of(Algorithm::Sha256, &h.finalize()),
            Hasher::Sha512(h) => FieldValue::of(Algorithm::Sha512, &h.finalize()),
        }
    }
}

/// The algorithm a `Want-*-Digest` field prefers (a dictionary of
/// integer weights 0 to 10, RFC 9530 section 4): the supported one of
/// highest non-zero weight, SHA-256 on a tie. `None` where the field
/// weighs every supported algorithm 0, or names none of them.
pub fn preferred(want: &[u8]) -> Option<Algorithm> {
    let mut best: Option<(u8, Algorithm)> = None;
    for member in want.split(|&b| b == b',') {
        let member = member.trim_ascii();
        let (key, weight) = match member.iter().position(|&b| b == b'=') {
            Some(i) => (&member[..i], &member[i + 1..]),
            None => (member, &b"?1"[..]),
        };
        let a = match key.trim_ascii() {
            b"sha-256" => Algorithm::Sha256,
            b"sha-512" => Algorithm::Sha512,
            _ => continue,
        };
        // A bare key is the boolean true: the top weight.
        let w = match weight.trim_ascii() {
            b"?1" => 10,
            w => match std::str::from_utf8(w)
                .ok()
                .and_then(|w| w.parse::<u8>().ok())
            {
                Some(w) if w <= 10 => w,
                _ => continue,
            },
        };
        if w > 0
            && best.is_none_or(|(bw, ba)| w > bw || (w == bw && a == Algorithm::Sha256 && ba != a))
        {
            best = Some((w, a));
        }
    }
    best.map(|(_, a)| a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_the_base64_of_the_digest() {
        let v = field_value(Algorithm::Sha256, &b"hello"[..]).unwrap();
        // sha256("hello"), base64.
        assert_eq!(
            v.as_str(),
            "sha-256=:LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=:"
        );
        let v = field_value(Algorithm::Sha512, &b""[..]).unwrap();
        assert!(v.as_str().starts_with("sha-512=:z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==:"));
        let big = vec![7u8; 100_000];
        let one = field_value(Algorithm::Sha512, &big[..]).unwrap();
        let want = base64::engine::general_purpose::STANDARD.encode(Sha512::digest(&big));
        assert_eq!(one.as_str(), format!("sha-512=:{want}:"));
    }

    #[test]
    fn the_preferred_algorithm_is_the_heaviest_supported() {
        assert_eq!(preferred(b"sha-512=3, sha-256=10"), Some(Algorithm::Sha256));
        assert_eq!(preferred(b"sha-512=10, sha-256=3"), Some(Algorithm::Sha512));
        assert_eq!(preferred(b"sha-512=5, sha-256=5"), Some(Algorithm::Sha256));
        assert_eq!(preferred(b"sha-256=5, sha-512=5"), Some(Algorithm::Sha256));
        assert_eq!(preferred(b"md5=10, sha-512=1"), Some(Algorithm::Sha512));
        assert_eq!(preferred(b"sha-512"), Some(Algorithm::Sha512));
        assert_eq!(preferred(b"sha-256=0, sha-512=0"), None);
        assert_eq!(preferred(b"md5=9, unixsum=2"), None);
        assert_eq!(preferred(b"sha-256=11, sha-512=x"), None);
        assert_eq!(preferred(b""), None);
    }
}

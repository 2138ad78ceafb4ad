//! Whether a sibling is broken: the one judgement the module (before it
//! sends a sibling as it is, or decodes it) and the publish tool's
//! `verify` share.
//!
//! `cheap` costs a few header reads and runs before a sibling version is
//! first sent: not empty, its header decodes (every zstd frame and block
//! header, a gzip member's magic, a brotli window), and the decoded size
//! its format states (gzip's ISIZE, the zstd frames' content sizes) is the
//! original's where both are known. `full` decodes it to its end and
//! compares what it decodes to with the original's length and SHA-256:
//! a sibling fresh by its mtime but stale by its content is broken too.

use super::{inspect, DecodeError, Decoder, HeaderFacts, ReadAt};
use crate::coding::Coding;
use sha2::{Digest, Sha256};
use std::fmt;
use std::io::Read;

/// Why a sibling is broken.
#[derive(Debug)]
pub enum Broken {
    /// 0 bytes: never a valid stream in any of the three codings.
    Empty,
    /// Its header does not decode.
    Header(DecodeError),
    /// Its format states a decoded size other than the original's.
    Size { stated: u64, original: u64 },
    /// It does not decode to its end.
    Undecodable(DecodeError),
    /// It decodes to other content than the original's.
    Differs { decoded: u64, original: u64 },
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Broken::Empty => write!(f, "empty"),
            Broken::Header(e) => write!(f, "its header does not decode: {e}"),
            Broken::Size { stated, original } => write!(
                f,
                "decodes to different content than the original (it states {stated} bytes, \
                 the original has {original})"
            ),
            Broken::Undecodable(e) => write!(f, "does not decode: {e}"),
            Broken::Differs { decoded, original } if decoded != original => write!(
                f,
                "decodes to different content than the original ({decoded} bytes, the original {original})"
            ),
            Broken::Differs { .. } => {
                write!(f, "decodes to different content than the original")
            }
        }
    }
}

impl std::error::Error for Broken {}

/// The checks that cost nothing: `src` holds `len` bytes of `coding`;
/// `original` is the original's size, where it exists. The sibling's
/// facts, for the decoders.
pub fn cheap<S: ReadAt + ?Sized>(
    coding: Coding,
    src: &S,
    len: u64,
    original: Option<u64>,
) -> Result<HeaderFacts, Broken> {
    if len == 0 {
        return Err(Broken::Empty);
    }
    let facts = inspect(coding, src, len).map_err(|e| match e {
        DecodeError::Io(e) => Broken::Undecodable(DecodeError::Io(e)),
        e => Broken::Header(e),
    })?;
    let stated = match coding {
        Coding::Gzip => facts.gzip_isize,
        Coding::Zstd => facts.declared_len,
        Coding::Br => None,
    };
    match (stated, original) {
        (Some(stated), Some(original)) if stated != original => {
            Err(Broken::Size { stated, original })
        }
        _ => Ok(facts),
    }
}

/// The original a sibling must decode to: its length and SHA-256.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OriginalDigest {
    pub len: u64,
    pub sha256: [u8; 32],
}

impl OriginalDigest {
    /// The length and SHA-256 of what `r` reads.
    pub fn of(mut r: impl Read) -> std::io::Result<OriginalDigest> {
        let mut h = Sha256::new();
        let len = std::io::copy(&mut r, &mut h)?;
        Ok(OriginalDigest {
            len,
            sha256: h.finalize().into(),
        })
    }
}

/// Whether `r` reads exactly `original`'s bytes, reading at most its
/// length and a byte.
pub fn same_bytes(r: impl Read, original: &OriginalDigest) -> std::io::Result<bool> {
    let mut h = Sha256::new();
    let len = std::io::copy(&mut r.take(original.len.saturating_add(1)), &mut h)?;
    Ok(len == original.len && <[u8; 32]>::from(h.finalize()) == original.sha256)
}

/// The full check: decodes `src` (a `coding` stream whose `cheap` facts
/// are `facts`) to its end, and compares what it decodes to with the
/// original where there is one. The decoded length.
pub fn full(
    coding: Coding,
    src: impl Read,
    facts: Option<&HeaderFacts>,
    original: Option<&OriginalDigest>,
) -> Result<u64, Broken> {
    full_within(coding, src, facts, original, u64::MAX)
}

/// `full`, decoding at most `limit` bytes where there is no original (with
/// one, at most its length and a byte): a stream that decodes to more is
/// not judged (`DecodeError::TooLarge`), so a bomb costs a bounded decode.
pub fn full_within(
    coding: Coding,
    src: impl Read,
    facts: Option<&HeaderFacts>,
    original: Option<&OriginalDigest>,
    limit: u64,
) -> Result<u64, Broken> {
    let mut dec = Decoder::with_facts(coding, src, facts).map_err(Broken::Undecodable)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = dec.read(&mut buf).map_err(Broken::Undecodable)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if original.is_none() && total > limit {
            return Err(Broken::Undecodable(crate::decode::DecodeError::TooLarge(
                limit,
            )));
        }
        if let Some(o) = original {
            if total > o.len {
                return Err(Broken::Differs {
                    decoded: total,
                    original: o.len,
                });
            }
            h.update(&buf[..n]);
        }
    }
    match original {
        Some(o) if total != o.len || <[u8; 32]>::from(h.finalize()) != o.sha256 => {
            Err(Broken::Differs {
                decoded: total,
                original: o.len,
            })
        }
        _ => Ok(total),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::encoded as encode;

    fn judge(c: Coding, bytes: &[u8], original: &[u8]) -> Result<u64, Broken> {
        let o = OriginalDigest::of(original).unwrap();
        let facts = cheap(c, bytes, bytes.len() as u64, Some(o.len))?;
        full(c, bytes, Some(&facts), Some(&o))
    }

    #[test]
    fn each_kind_of_broken_sibling_is_found() {
        let data: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let other: Vec<u8> = data.iter().map(|b| b ^ 1).collect();
        for c in Coding::ALL {
            let good = encode(c, &data);
            assert_eq!(judge(c, &good, &data).unwrap(), data.len() as u64, "{c:?}");
            assert!(matches!(judge(c, &[], &data), Err(Broken::Empty)), "{c:?}");
            let half = &good[..good.len() / 2];
            assert!(judge(c, half, &data).is_err(), "{c:?} truncated");
            let mut flipped = good.clone();
            let mid = flipped.len() / 2;
            flipped[mid] ^= 0x10;
            assert!(judge(c, &flipped, &data).is_err(), "{c:?} flipped");
            let stale = encode(c, &other);
            assert!(
                matches!(judge(c, &stale, &data), Err(Broken::Differs { .. })),
                "{c:?} other content"
            );
            // Without the original, what decodes is not broken.
            let facts = cheap(c, &stale[..], stale.len() as u64, None).unwrap();
            assert!(full(c, &stale[..], Some(&facts), None).is_ok());
            let within = full_within(c, &stale[..], Some(&facts), None, 10);
            assert!(
                matches!(
                    within,
                    Err(Broken::Undecodable(crate::decode::DecodeError::TooLarge(
                        10
                    )))
                ),
                "{c:?}"
            );
        }
        let garbage: Vec<u8> = (0..5000u32).map(|i| (i * 7919 % 256) as u8).collect();
        for c in Coding::ALL {
            assert!(judge(c, &garbage, &data).is_err(), "{c:?} garbage");
        }
        // A size the format states, other than the original's: found by
        // the cheap checks alone.
        let short = encode(Coding::Gzip, &data[..1000]);
        assert!(matches!(
            cheap(
                Coding::Gzip,
                &short[..],
                short.len() as u64,
                Some(data.len() as u64)
            ),
            Err(Broken::Size { .. })
        ));
    }
}

//! BREACH jitter for one response: whether a precompressed sibling gets
//! padding, its length (random, or keyed per file version and remembered
//! in a memo), and what of the file the splice needs read. The framing
//! and splice arithmetic are the core's `jitter`.

use crate::config::{Jitter, JitterLength};
use crate::memo;
use gdn_core::coding::Coding;
use gdn_core::jitter::{self, Secret};
use gdn_httpd::{self, File, Level, PoolBytes, Request};
use std::ffi::CStr;

/// A planned padded representation.
pub(crate) struct Padded {
    pub splice: jitter::Splice,
    pub pad: u32,
    pub random: bool,
}

/// Bytes read from a gzip sibling to find the end of its header.
const GZIP_HEADER_READ: usize = 4096;

/// Decides the padding for a sibling; `None` serves it unpadded (with a
/// debug line saying why).
pub(crate) fn plan_jitter(
    req: &Request<'_>,
    secret: Option<&Secret>,
    c: Coding,
    file: &File<'_>,
    path: &CStr,
    size: u64,
    j: Jitter,
) -> Option<Padded> {
    let random = j.length == JitterLength::Random;
    let planned = jitter_len(req, secret, file, size, j).and_then(|pad| {
        let read = |at: u64, n: usize| {
            file.read_pool(req, at, n)
                .map(PoolBytes::bytes)
                .map_err(|_| jitter::NoJitter::Io)
        };
        let (head, tail) = match c {
            Coding::Gzip => (read(0, GZIP_HEADER_READ.min(size as usize))?, &[][..]),
            Coding::Br => {
                let n = jitter::brotli_tail_len().min(size as usize);
                let tail = read(size - n as u64, n)?;
                if tail.len() != n {
                    return Err(jitter::NoJitter::Io); // shrunk since the stat
                }
                // The cheap look at the ending first, then the remembered proof.
                jitter::splice(c, &[], tail, size, 1)?;
                brotli_proven(file, size)?;
                (&[][..], tail)
            }
            Coding::Zstd => (&[][..], &[][..]),
        };
        jitter::splice(c, head, tail, size, pad as usize).map(|s| (s, pad))
    });
    match planned {
        Ok((splice, pad)) => Some(Padded {
            splice,
            pad,
            random,
        }),
        Err(why) => {
            req.log_with(Level::Debug, 0, || {
                format!("serving {} without jitter: {why:?}", path.to_string_lossy())
            });
            None
        }
    }
}

/// The padding length: random per response, or the keyed hash of the
/// file (`jitter::keyed_len`), computed once per file version and key.
fn jitter_len(
    req: &Request<'_>,
    secret: Option<&Secret>,
    file: &File<'_>,
    size: u64,
    j: Jitter,
) -> Result<u32, jitter::NoJitter> {
    let hashed = match j.length {
        JitterLength::Random => return random_len(req, secret, j.max),
        JitterLength::Keyed { hashed } => hashed,
    };
    let secret = secret.ok_or(jitter::NoJitter::NoKey)?;
    let key: memo::padding::PadInputs = (file.info().version(), j.max, hashed, secret.id());
    if let Some(p) = memo::padding::len(&key) {
        return Ok(p);
    }
    let n = hashed.min(size);
    let head = file
        .read_pool(req, 0, n as usize)
        .map(PoolBytes::bytes)
        .map_err(|_| jitter::NoJitter::Io)?;
    let t = jitter::KEYED_TAIL.min(size - n);
    let tail = file
        .read_pool(req, size - t, t as usize)
        .map(PoolBytes::bytes)
        .map_err(|_| jitter::NoJitter::Io)?;
    let p = jitter::keyed_len(j.max, secret, size, head, tail);
    memo::padding::put_len(key, p);
    Ok(p)
}

/// A padding length drawn per response from APR's random source or,
/// should it fail, from the key (`jitter::drawn_len`, with an error line
/// once per process): never a fixed length.
pub(crate) fn random_len(
    req: &Request<'_>,
    secret: Option<&Secret>,
    max: u32,
) -> Result<u32, jitter::NoJitter> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static DRAWN: AtomicU64 = AtomicU64::new(0);
    if let Some(r) = gdn_httpd::random_u32() {
        return Ok(jitter::random_len(max, r));
    }
    let secret = secret.ok_or(jitter::NoJitter::NoKey)?;
    let n = DRAWN.fetch_add(1, Ordering::Relaxed);
    if n == 0 {
        req.log(
            Level::Err,
            0,
            "the random source failed: padding lengths are drawn from the jitter key",
        );
    }
    let nonce = [
        u64::from(std::process::id()),
        n,
        req.request_time_us() as u64,
    ];
    Ok(jitter::drawn_len(max, secret, nonce))
}

/// Whether padding may go before this brotli file's final empty last
/// meta-block, proved by decoding once per file version (an I/O error is
/// not remembered).
fn brotli_proven(file: &File<'_>, size: u64) -> Result<(), jitter::NoJitter> {
    let v = file.info().version();
    if let Some(r) = memo::padding::brotli_proof(&v) {
        return r;
    }
    let r = jitter::prove_brotli(|at| file.reader(at), size, jitter::BROTLI_PROOF_MAX);
    if r != Err(jitter::NoJitter::Io) {
        memo::padding::put_brotli_proof(v, r);
    }
    r
}

//! The gzip coder of a stream: raw deflate (flate2's `Compress`) in a
//! gzip frame (RFC 1952) written here, so that the deflate state goes back
//! to a pool when its response ends and is reset, not made again, for the
//! next one (a response then calls the heap for none of it).

use super::room;
use flate2::{Compress, Compression, Crc, FlushCompress, Status};
use std::io;
use std::sync::{Mutex, PoisonError};

/// Idle deflate states kept per process, by level.
const POOL: usize = 8;

static IDLE: Mutex<Vec<(u32, Compress)>> = Mutex::new(Vec::new());

/// One gzip member being written.
pub(super) struct Gzip {
    z: Compress,
    level: u32,
    crc: Crc,
    started: bool,
}

impl Gzip {
    /// A coder at `level` (1 to 9), with an idle state of that level
    /// where the pool has one.
    pub(super) fn new(level: u32) -> Gzip {
        let kept = {
            let mut pool = IDLE.lock().unwrap_or_else(PoisonError::into_inner);
            let i = pool.iter().rposition(|(l, _)| *l == level);
            i.map(|i| pool.remove(i).1)
        };
        Gzip {
            z: kept.unwrap_or_else(|| Compress::new(Compression::new(level), false)),
            level,
            crc: Crc::new(),
            started: false,
        }
    }

    /// The member's header, before its first bytes: no name, no time,
    /// the level's hint (2: best, 4: fastest), an unknown system.
    fn start(&mut self, out: &mut Vec<u8>) {
        if !self.started {
            let xfl = match self.level {
                9 => 2,
                1 => 4,
                _ => 0,
            };
            out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, xfl, 255]);
            self.started = true;
        }
    }

    pub(super) fn write(&mut self, input: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        self.start(out);
        self.crc.update(input);
        self.run(input, out, FlushCompress::None)
    }

    /// A sync flush: everything so far decodable, byte-aligned.
    pub(super) fn flush(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        self.start(out);
        self.run(&[], out, FlushCompress::Sync)
    }

    /// The last block and the trailer (CRC-32, length); the state goes
    /// back to the pool.
    pub(super) fn finish(mut self, out: &mut Vec<u8>) -> io::Result<()> {
        self.start(out);
        loop {
            room(out);
            let st = self.z.compress_vec(&[], out, FlushCompress::Finish);
            if st.map_err(io::Error::other)? == Status::StreamEnd {
                break;
            }
        }
        out.extend_from_slice(&self.crc.sum().to_le_bytes());
        out.extend_from_slice(&self.crc.amount().to_le_bytes());
        self.z.reset();
        let mut pool = IDLE.lock().unwrap_or_else(PoisonError::into_inner);
        if pool.len() >= POOL {
            pool.remove(0);
        }
        pool.push((self.level, self.z));
        Ok(())
    }

    /// Codes `input` with `flush` until it is taken and the coder has
    /// put out all it would (it stopped with room to spare).
    fn run(&mut self, mut input: &[u8], out: &mut Vec<u8>, flush: FlushCompress) -> io::Result<()> {
        loop {
            room(out);
            let before = self.z.total_in();
            self.z
                .compress_vec(input, out, flush)
                .map_err(io::Error::other)?;
            let taken = usize::try_from(self.z.total_in() - before).unwrap_or(input.len());
            input = &input[taken.min(input.len())..];
            if input.is_empty() && out.len() < out.capacity() {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn text(n: usize, seed: u64) -> Vec<u8> {
        let words = [
            "<p>", "the ", "manual ", "of ", "Apache ", "</p>\n", "httpd ",
        ];
        let mut x = seed;
        let mut v = Vec::with_capacity(n + 8);
        while v.len() < n {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            v.extend_from_slice(words[(x >> 59) as usize % words.len()].as_bytes());
        }
        v.truncate(n);
        v
    }

    #[test]
    fn members_decode_with_a_kept_state_flushes_and_large_writes() {
        for (level, seed) in [(6, 1), (6, 2), (1, 3), (9, 4), (6, 5)] {
            let body = text(300_000, seed);
            let mut out = Vec::new();
            let mut g = Gzip::new(level);
            g.write(&body[..10], &mut out).unwrap();
            g.flush(&mut out).unwrap();
            let at = out.len();
            g.write(&body[10..], &mut out).unwrap();
            g.finish(&mut out).unwrap();
            let mut first = Vec::new();
            let _ = flate2::read::MultiGzDecoder::new(&out[..at]).read_to_end(&mut first);
            assert_eq!(first, body[..10], "flushed bytes decode before the rest");
            let mut all = Vec::new();
            flate2::read::GzDecoder::new(&out[..])
                .read_to_end(&mut all)
                .unwrap();
            assert_eq!(all, body, "level {level}");
            assert!(out.len() < body.len() * 3 / 4, "coded smaller");
        }
    }
}

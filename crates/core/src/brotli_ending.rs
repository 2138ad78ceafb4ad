//! The ending the publish tool gives brotli streams: flushed before it is
//! finished, a stream ends on a meta-block boundary the module can insert
//! jitter at, but the flush's 6-bit alignment block and the byte-aligned
//! `0x03` after it cost a byte or two; they are rewritten here into an
//! empty last meta-block right after the data, which the module finds at
//! any bit (`jitter::prove_brotli`).

use crate::jitter::BROTLI_LAST;

/// Bytes of a flushed-then-finished stream's end that
/// `brotli_unaligned_ending` rewrites: the 6-bit alignment block spans at
/// most two bytes, then comes `0x03`.
pub const BROTLI_FLUSHED_TAIL: usize = 3;

/// The 6-bit empty metadata block a flush writes to byte-align the stream,
/// as a value read LSB first: ISLAST=0, MNIBBLES code 3, reserved 0,
/// MSKIPBYTES=0.
const ALIGNMENT_BLOCK: u32 = 0b00_0110;

/// Rewrites the end of a flushed-then-finished brotli stream (`tail`, its
/// last `BROTLI_FLUSHED_TAIL` bytes, or all of a shorter stream) without
/// the alignment block and the byte-aligned `0x03`: the data is followed
/// directly by ISLAST=1, ISLASTEMPTY=1 and zero fill, which saves a byte
/// or two. The result replaces all of `tail`. `None` if the stream does
/// not end in exactly [alignment block][zero fill][`0x03`]. The pattern
/// can occur by chance in data bits, so the caller must check by decoding.
pub fn brotli_unaligned_ending(tail: &[u8]) -> Option<Vec<u8>> {
    let t = &tail[tail.len().saturating_sub(BROTLI_FLUSHED_TAIL)..];
    let (&last, s) = t.split_last()?;
    if last != BROTLI_LAST {
        return None;
    }
    let word = s.iter().rev().fold(0u32, |w, &b| w << 8 | u32::from(b));
    let bits = 8 * s.len() as u32;
    // The highest set bit is MNIBBLES' second bit: the block starts 2 below.
    let start = word.checked_ilog2()?.checked_sub(2)?;
    let ends_in_last_byte = start + 6 <= bits && start + 6 > bits.saturating_sub(8);
    if (word >> start) & 0x3f != ALIGNMENT_BLOCK || !ends_in_last_byte {
        return None;
    }
    let data = word & ((1u32 << start) - 1);
    let out = data | 0b11 << start; // ISLAST, ISLASTEMPTY
    let len = (start as usize + 2).div_ceil(8);
    Some(out.to_le_bytes()[..len].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::xorshift;

    #[test]
    fn unaligned_ending_rewrites_exactly_the_alignment_block() {
        let mut next = xorshift(3);
        for p in 0..=10u32 {
            for _ in 0..50 {
                let data = (next() as u32) & ((1 << p) - 1);
                let n = (p as usize + 6).div_ceil(8);
                let mut flushed = vec![next() as u8; 2 - n]; // earlier stream bytes
                let word = data | ALIGNMENT_BLOCK << p;
                flushed.extend_from_slice(&word.to_le_bytes()[..n]);
                flushed.push(BROTLI_LAST);
                let mut want = flushed[..2 - n].to_vec();
                let end = data | 0b11 << p;
                want.extend_from_slice(&end.to_le_bytes()[..(p as usize + 2).div_ceil(8)]);
                assert_eq!(brotli_unaligned_ending(&flushed), Some(want), "p {p}");
            }
        }
        for t in [
            &[][..],
            &[BROTLI_LAST],
            &[0x00, BROTLI_LAST],
            &[0x06, 0x00, BROTLI_LAST], // zero fill a byte too long
            &[0x07, BROTLI_LAST],       // ISLAST set
            &[0x16, BROTLI_LAST],       // MSKIPBYTES 1
            &[0x0e, BROTLI_LAST],       // reserved bit set
            &[0x06, 0x04],              // no final 0x03
        ] {
            assert_eq!(brotli_unaligned_ending(t), None, "{t:x?}");
        }
    }
}

//! Deterministic test content: HTML-like text that compresses like a web
//! page, and noise that does not compress at all.
//!
//! Also compiled into the crate's unit tests (src/test_util.rs), so it
//! uses nothing but std.

/// Deterministic HTML-like text of `n` bytes.
pub fn page(n: usize, seed: u64) -> Vec<u8> {
    let words = [
        "<p>",
        "</p>",
        "Apache",
        "module",
        "request",
        "response",
        "header",
        "compressed",
        "sibling",
        "<a href=\"/x\">",
        "</a>",
        "\n",
        "the",
        "of",
        "and",
    ];
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = Vec::with_capacity(n + 32);
    while out.len() < n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.extend_from_slice(words[(x >> 33) as usize % words.len()].as_bytes());
        out.push(b' ');
        if (x >> 20).is_multiple_of(7) {
            out.extend_from_slice(format!("{}", x % 100_000).as_bytes());
        }
    }
    out.truncate(n);
    out
}

/// Marsaglia's xorshift64 from `seed` (0 counts as 1: zero is its one
/// fixed point): cheap, reproducible pseudo-random words.
pub fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed.max(1);
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// `n` incompressible bytes: every coding's output is as large as they are.
pub fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut next = xorshift(seed);
    (0..n).map(|_| next() as u8).collect()
}

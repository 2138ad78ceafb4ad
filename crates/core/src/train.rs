//! The site dictionary's trainer: a raw dictionary (RFC 9842) made of the
//! stretches of a site's pages that other pages repeat.
//!
//! zstd's own trainer (fastCover) picks segments by how often their
//! substrings occur in all the samples, which over a site counts one long
//! page's repeats as much as what every page shares. A site dictionary's
//! worth is the bytes it saves on each page, so here a 12-byte substring
//! is worth the pages that hold it, a small page counting more (its
//! ratio counts as much as a large one's): the square root of the sum,
//! over the pages holding it, of the mean page's length over that page's.
//! Stretches of pages rich in such substrings are taken greedily by worth
//! per byte, what is taken no longer counting, and laid out most valuable
//! last (nearest the data, where a match costs least). docs/performance.md
//! measures both trainers over Debian's Apache manual
//! (`bench/ondemand_delta.sh`).
//!
//! The same pages give the same bytes on every platform: the hash is
//! integer arithmetic, and the floating-point steps (divisions, square
//! roots, sums in a fixed order) are exact IEEE operations.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

/// Length of the substrings whose pages are counted.
const D: usize = 12;

/// Shortest stretch worth a place: a zstd match costs 3 to 4 bytes.
const MIN_LEN: usize = 24;

/// A stretch ends after this many positions in a row with nothing to
/// offer.
const GAP: usize = 48;

/// Bytes of pages learned at most (those after are left out): the
/// trainer keeps about 20 bytes per byte learned.
pub const MAX_INPUT: usize = 8 << 20;

/// Bytes the substrings at positions `s..e` cover.
fn span(s: usize, e: usize) -> usize {
    e - s + D - 1
}

/// The rolling hash's multiplier.
const B: u64 = 0x9E37_79B9_7F4A_7C15;

/// A hasher for keys that are rolling hashes already: a mix of their
/// bits is all a table needs.
#[derive(Default)]
struct Mix(u64);

impl Hasher for Mix {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0 ^ u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        let x = (x ^ (x >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        self.0 = x ^ (x >> 29);
    }
}

/// Every page's substrings, numbered in order of first appearance, and
/// what each is worth.
struct Grams {
    /// Per page, the number of the substring at each position.
    at: Vec<Vec<u32>>,
    /// Per substring, whether it is worth anything (found in two pages
    /// at least) and its worth.
    value: Vec<f64>,
}

impl Grams {
    fn count(pages: &[&[u8]]) -> Grams {
        let top = (1..D).fold(1u64, |t, _| t.wrapping_mul(B));
        let mean = pages.iter().map(|p| p.len()).sum::<usize>() as f64 / pages.len() as f64;
        let mut ids: HashMap<u64, u32, BuildHasherDefault<Mix>> = HashMap::default();
        // Per substring: the last page counted, the pages, their weight.
        let mut last: Vec<u32> = Vec::new();
        let mut df: Vec<u32> = Vec::new();
        let mut weight: Vec<f64> = Vec::new();
        let mut at = Vec::with_capacity(pages.len());
        for (pi, p) in pages.iter().enumerate() {
            let pi = pi as u32;
            let w = mean / p.len().max(1) as f64;
            let mut v = Vec::with_capacity(p.len().saturating_sub(D - 1));
            let mut h = 0u64;
            for (i, &b) in p.iter().enumerate() {
                if i >= D {
                    h = h.wrapping_sub((u64::from(p[i - D]) + 1).wrapping_mul(top));
                }
                h = h.wrapping_mul(B).wrapping_add(u64::from(b) + 1);
                if i + 1 < D {
                    continue;
                }
                let next = df.len() as u32;
                let id = *ids.entry(h).or_insert(next);
                if id == next {
                    last.push(u32::MAX);
                    df.push(0);
                    weight.push(0.0);
                }
                let k = id as usize;
                if last[k] != pi {
                    last[k] = pi;
                    df[k] += 1;
                    weight[k] += w;
                }
                v.push(id);
            }
            at.push(v);
        }
        let value = df
            .iter()
            .zip(weight)
            .map(|(&n, w)| if n >= 2 { w.sqrt() } else { 0.0 })
            .collect();
        Grams { at, value }
    }
}

/// A stretch of a page: its worth per byte (in millionths), then the
/// earlier page and start first; over substring positions `start..end`.
type Stretch = (u64, Reverse<u32>, Reverse<u32>, u32);

/// The greedy choice of stretches.
struct Picker<'a> {
    g: &'a Grams,
    taken: Vec<bool>,
    heap: BinaryHeap<Stretch>,
}

impl Picker<'_> {
    /// What the substring at position `i` of page `pi` still offers.
    fn offer(&self, pi: usize, i: usize) -> f64 {
        let id = self.g.at[pi][i] as usize;
        if self.taken[id] {
            0.0
        } else {
            self.g.value[id]
        }
    }

    /// Worth per byte of the positions `s..e` of page `pi`, in millionths.
    fn key(&self, pi: usize, s: usize, e: usize) -> u64 {
        let v: f64 = (s..e).map(|i| self.offer(pi, i)).sum();
        (v / span(s, e) as f64 * 1e6) as u64
    }

    /// Pushes the stretches of positions `s..e` of page `pi`: runs of
    /// positions that offer something, a run ending at `GAP` positions in
    /// a row that offer nothing.
    fn push(&mut self, pi: usize, s: usize, e: usize) {
        let mut i = s;
        while i < e {
            while i < e && self.offer(pi, i) == 0.0 {
                i += 1;
            }
            if i == e {
                break;
            }
            let (start, mut end) = (i, i);
            while i < e {
                if self.offer(pi, i) > 0.0 {
                    i += 1;
                    end = i;
                    continue;
                }
                let gap = (i..e.min(i + GAP)).take_while(|&j| self.offer(pi, j) == 0.0);
                let j = i + gap.count();
                if j - i >= GAP || j == e {
                    i = j;
                    break;
                }
                i = j;
            }
            if span(start, end) >= MIN_LEN {
                let key = self.key(pi, start, end);
                self.heap
                    .push((key, Reverse(pi as u32), Reverse(start as u32), end as u32));
            }
        }
    }

    /// Takes stretches, best first, until `size` bytes; each as (page,
    /// first byte, end byte), in the order taken.
    fn pick(&mut self, size: usize) -> Vec<(usize, usize, usize)> {
        let mut picked = Vec::new();
        let mut total = 0;
        while let Some((key, Reverse(pi), Reverse(s), e)) = self.heap.pop() {
            if size - total < MIN_LEN {
                break;
            }
            let (pi, s, e) = (pi as usize, s as usize, e as usize);
            // Worth less now than when pushed: split anew and try again.
            if self.key(pi, s, e) < key {
                self.push(pi, s, e);
                continue;
            }
            let len = span(s, e).min(size - total);
            for i in s..(s + len + 1 - D).min(e) {
                let id = self.g.at[pi][i] as usize;
                self.taken[id] = true;
            }
            picked.push((pi, s, s + len));
            total += len;
        }
        picked
    }
}

/// The pages learned: in order, within `MAX_INPUT` bytes.
fn within_input<S: AsRef<[u8]>>(samples: &[S]) -> Vec<&[u8]> {
    let mut left = MAX_INPUT;
    let mut pages = Vec::new();
    for s in samples {
        let p = s.as_ref();
        let p = &p[..p.len().min(left)];
        left -= p.len();
        if p.len() >= D {
            pages.push(p);
        }
    }
    pages
}

/// A raw dictionary of at most `size` bytes learned from `samples` (empty
/// when they share nothing).
pub fn train<S: AsRef<[u8]>>(samples: &[S], size: usize) -> Vec<u8> {
    let pages = within_input(samples);
    if pages.is_empty() || size < MIN_LEN {
        return Vec::new();
    }
    let g = Grams::count(&pages);
    let mut p = Picker {
        taken: vec![false; g.value.len()],
        g: &g,
        heap: BinaryHeap::new(),
    };
    for pi in 0..pages.len() {
        p.push(pi, 0, g.at[pi].len());
    }
    let picked = p.pick(size);
    let mut out = Vec::with_capacity(size);
    for &(pi, a, b) in picked.iter().rev() {
        out.extend_from_slice(&pages[pi][a..b]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pages of one template around text of their own.
    fn site(n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                let own: String = (0..200).map(|j| format!("w{}x{} ", i * 7919 + j, j)).collect();
                format!(
                    "<!DOCTYPE html><html><head><title>Page {i}</title>\
                     <link rel=\"stylesheet\" href=\"/style/manual.css\"></head>\
                     <body><div id=\"page-header\"><p class=\"menu\">Modules | Directives | FAQ | Glossary | Sitemap</p></div>\
                     <div id=\"preamble\">{own}</div>\
                     <div id=\"footer\"><p class=\"apache\">Copyright 2026 The Apache Software Foundation.</p></div></body></html>"
                )
                .into_bytes()
            })
            .collect()
    }

    #[test]
    fn learns_what_pages_share_and_nothing_of_their_own() {
        let pages = site(20);
        let dict = train(&pages, 4096);
        let text = String::from_utf8_lossy(&dict);
        assert!(text.contains("Modules | Directives | FAQ"), "{text}");
        assert!(text.contains("Copyright 2026 The Apache"), "{text}");
        // Text of one page alone is worth nothing.
        assert!(!text.contains("w7919x1 "), "{text}");
        assert!(dict.len() <= 4096);
    }

    #[test]
    fn the_same_pages_give_the_same_bytes_within_the_size() {
        let pages = site(30);
        for size in [24, 100, 1000, 1 << 20] {
            let a = train(&pages, size);
            assert_eq!(a, train(&pages, size));
            assert!(a.len() <= size);
        }
    }

    #[test]
    fn nothing_to_learn_gives_nothing() {
        assert!(train::<Vec<u8>>(&[], 4096).is_empty());
        assert!(train(&[b"short".to_vec(), b"tiny".to_vec()], 4096).is_empty());
        assert!(train(&site(5), 10).is_empty());
        // Pages that share nothing.
        let own: Vec<Vec<u8>> = (1u64..5)
            .map(|seed| {
                let mut x = seed.wrapping_mul(B);
                (0..4000)
                    .map(|_| {
                        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                        (x >> 56) as u8
                    })
                    .collect()
            })
            .collect();
        assert!(train(&own, 4096).is_empty());
    }

    #[test]
    fn input_past_the_bound_is_left_out() {
        let big = vec![b'a'; MAX_INPUT];
        let pages = [big.clone(), big];
        let kept = within_input(&pages);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].len(), MAX_INPUT);
    }
}

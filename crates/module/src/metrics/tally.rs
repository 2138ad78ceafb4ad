//! What the module counts, and where each count lives among the shared
//! counters: responses by outcome and coding with the bytes they carried
//! and would have carried uncompressed, siblings passed over and why, the
//! CPU decoding took, and the on-demand compressor's work. Pure: the
//! counters are read into a [`Snapshot`], which `html` shows as
//! mod_status's section, `page` as the module's own status page, and
//! `render` as `?auto` lines and Prometheus metrics.

mod html;
mod page;
mod render;

pub use html::section as html;
pub use page::page;
pub use render::{auto, prometheus};

use crate::outcome::Outcome;
use gdn_compressor::tally::CopyFate;
use gdn_core::coding::Coding;
use gdn_core::representation::Representation;

/// A response of the handler as the counters take it, once its filters
/// ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counted {
    pub outcome: Outcome,
    pub sent: u64,
    /// The body's size uncompressed; `None` where it is not known (a
    /// sibling without its original).
    pub uncompressed: Option<u64>,
}

/// What the handler's response counts as. `o` is what the handler sent,
/// `passed` the whole body's length it passed (`u64::MAX` unknown),
/// `encoding` the `Content-Encoding` the response went out with (a
/// filter such as mod_deflate may have added one), `sent` the body bytes
/// the filters sent, `whole` whether that is a whole 200 body (not a
/// range, HEAD, 304 or error), `original` the original file's size.
#[inline]
pub fn counted(
    o: Outcome,
    passed: u64,
    encoding: Option<&[u8]>,
    sent: u64,
    whole: bool,
    original: Option<u64>,
) -> Counted {
    // Only an identity body can have been coded on its way out.
    let identity = matches!(
        o,
        Outcome::ORIGINAL
            | Outcome::Sent(Representation::Decoded(_))
            | Outcome::Sent(Representation::DecodedCopy(_))
    );
    let filtered = encoding
        .filter(|_| identity)
        .and_then(|e| e.rsplit(|&b| b == b',').next())
        .and_then(|t| std::str::from_utf8(t).ok())
        .and_then(|t| Coding::from_token(t.trim()));
    let outcome = filtered.map_or(o, Outcome::OnTheFly);
    let known = passed != u64::MAX;
    let uncompressed = match outcome {
        _ if sent == 0 => Some(0),
        Outcome::OnTheFly(_) => (whole && known).then_some(passed),
        x if x.is_coded() && whole && sent == passed => original,
        _ => Some(sent),
    };
    Counted {
        outcome,
        sent,
        uncompressed,
    }
}

/// Why a sibling was passed over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Older than its original.
    Stale,
    /// The admin's access rules refuse its name.
    Refused,
    /// Its window exceeds the decoding limit.
    Window,
    /// It could not be decoded.
    Undecodable,
    /// Found broken (empty, undecodable, or other content than its
    /// original): counted once per version and process, when found.
    Broken,
}

impl Reason {
    pub const ALL: [Reason; 5] = [
        Reason::Stale,
        Reason::Refused,
        Reason::Window,
        Reason::Undecodable,
        Reason::Broken,
    ];

    fn index(self) -> usize {
        match self {
            Reason::Stale => 0,
            Reason::Refused => 1,
            Reason::Window => 2,
            Reason::Undecodable => 3,
            Reason::Broken => 4,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Reason::Stale => "stale",
            Reason::Refused => "refused",
            Reason::Window => "window",
            Reason::Undecodable => "undecodable",
            Reason::Broken => "broken",
        }
    }
}

/// Where each count lives: one `u64` slot each.
pub mod slot {
    use super::{Outcome, Reason};
    use crate::outcome::OUTCOMES;
    use gdn_compressor::tally::CopyFate;
    use gdn_core::coding::Coding;

    pub fn responses(o: Outcome) -> usize {
        o.index()
    }
    pub fn sent_bytes(o: Outcome) -> usize {
        OUTCOMES + o.index()
    }
    /// Uncompressed bytes, of the responses whose size is known.
    pub fn original_bytes(o: Outcome) -> usize {
        2 * OUTCOMES + o.index()
    }
    /// Sent bytes of the responses whose uncompressed size is not known.
    pub fn unknown_size_bytes(o: Outcome) -> usize {
        3 * OUTCOMES + o.index()
    }
    /// Microseconds of CPU spent decoding siblings of this coding.
    pub fn decode_cpu_us(c: Coding) -> usize {
        4 * OUTCOMES + c.index()
    }
    pub fn passed_over(r: Reason, c: Coding) -> usize {
        match r {
            Reason::Broken => BASE + 14 + c.index(),
            _ => 4 * OUTCOMES + 3 + r.index() * 3 + c.index(),
        }
    }
    pub fn job(j: CopyFate) -> usize {
        4 * OUTCOMES + 15 + j.index()
    }
    const BASE: usize = 4 * OUTCOMES + 21;
    /// Microseconds of CPU the compressor processes used.
    pub const COMPRESSOR_CPU_US: usize = BASE;
    pub const COMPRESSOR_STARTS: usize = BASE + 1;
    /// Starts after the last compressor of the same generation died.
    pub const COMPRESSOR_RESTARTS: usize = BASE + 2;
    pub const COMPRESSOR_PID: usize = BASE + 3;
    /// Configuration generation (post_config runs), for telling a
    /// restart after a death from a start after a server restart.
    pub const GENERATION: usize = BASE + 4;
    /// The generation of the last compressor started.
    pub const COMPRESSOR_GENERATION: usize = BASE + 5;
    pub const CACHE_ENTRIES: usize = BASE + 6;
    pub const CACHE_BYTES: usize = BASE + 7;
    pub const CACHE_EVICTIONS: usize = BASE + 8;
    /// When the counters started at zero, seconds since the epoch.
    pub const SINCE: usize = BASE + 9;
    /// Bytes a delta of this coding saved against the br representation
    /// of the same version (sibling or copy), where its size was known.
    pub fn delta_saved_vs_br(d: gdn_core::coding::DeltaCoding) -> usize {
        BASE + 10 + d.index()
    }
    /// Entries the compressor's wanted set holds: copies asked for, not
    /// made yet.
    pub const WANTED: usize = BASE + 12;
    /// When the oldest of them was first asked for, seconds since the
    /// epoch; 0 when none is.
    pub const WANTED_OLDEST: usize = BASE + 13;
    /// Every slot.
    pub const COUNT: usize = BASE + 17;
}

/// The counters, read at one moment.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub values: [u64; slot::COUNT],
    /// Whether on-demand compression is configured.
    pub on_demand: bool,
}

impl Snapshot {
    pub fn get(&self, i: usize) -> u64 {
        self.values.get(i).copied().unwrap_or(0)
    }

    pub fn responses(&self, o: Outcome) -> u64 {
        self.get(slot::responses(o))
    }

    pub fn sent(&self, o: Outcome) -> u64 {
        self.get(slot::sent_bytes(o))
    }

    pub fn original(&self, o: Outcome) -> u64 {
        self.get(slot::original_bytes(o))
    }

    pub fn unknown(&self, o: Outcome) -> u64 {
        self.get(slot::unknown_size_bytes(o))
    }

    /// Totals over `outcomes`.
    pub fn sum(&self, outcomes: &[Outcome]) -> Totals {
        outcomes.iter().fold(Totals::default(), |t, &x| Totals {
            responses: t.responses + self.responses(x),
            sent: t.sent + self.sent(x),
            original: t.original + self.original(x),
            unknown: t.unknown + self.unknown(x),
        })
    }

    /// Totals over every outcome.
    pub fn totals(&self) -> Totals {
        self.sum(&Outcome::ALL)
    }
}

/// Responses and their bytes, summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub responses: u64,
    pub sent: u64,
    /// Uncompressed, of the bodies whose size is known.
    pub original: u64,
    /// Sent, of the bodies whose uncompressed size is not known.
    pub unknown: u64,
}

impl Totals {
    /// Sent, of the bodies whose uncompressed size is known.
    pub fn known_sent(&self) -> u64 {
        self.sent.saturating_sub(self.unknown)
    }

    /// What compression saved, over the bodies of known size.
    pub fn saved(&self) -> u64 {
        self.original.saturating_sub(self.known_sent())
    }

    /// Whether any body of these has a known size (else, there being
    /// bodies, the uncompressed size shows as unknown).
    pub fn any_known(&self) -> bool {
        self.unknown == 0 || self.known_sent() > 0
    }
}

/// A layout word for the shared segment: changes when the slots do, so an
/// upgraded module does not read an older one's counters.
pub fn layout() -> u64 {
    // The SHA-256 of the slot count and every label (each ended by a
    // NUL), cut to 64 bits: worked out once per start.
    let mut all = slot::COUNT.to_le_bytes().to_vec();
    let mut eat = |b: &[u8]| {
        all.extend_from_slice(b);
        all.push(0);
    };
    for o in Outcome::ALL {
        eat(o.name().as_bytes());
        eat(o.coding().unwrap_or("").as_bytes());
    }
    Reason::ALL.iter().for_each(|r| eat(r.name().as_bytes()));
    CopyFate::ALL.iter().for_each(|j| eat(j.name().as_bytes()));
    let h = gdn_core::dictionary::hash(&all);
    let mut first = [0u8; 8];
    first.copy_from_slice(&h[..8]);
    u64::from_le_bytes(first)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use gdn_core::coding::DeltaCoding;
    use std::collections::HashSet;

    /// Counters of a few responses, for the renderers' tests.
    pub(crate) fn sample() -> Snapshot {
        let mut values = [0u64; slot::COUNT];
        let o = Outcome::Sent(Representation::Sibling(Coding::Br));
        values[slot::responses(o)] = 3;
        values[slot::sent_bytes(o)] = 300;
        values[slot::original_bytes(o)] = 1000;
        values[slot::decode_cpu_us(Coding::Gzip)] = 1_500_000;
        values[slot::passed_over(Reason::Stale, Coding::Zstd)] = 2;
        values[slot::COMPRESSOR_STARTS] = 1;
        values[slot::CACHE_ENTRIES] = 1;
        values[slot::job(CopyFate::Done)] = 1;
        Snapshot {
            values,
            on_demand: true,
        }
    }

    #[test]
    fn every_slot_is_distinct_and_in_range() {
        let mut seen = HashSet::new();
        let mut all = Vec::new();
        for o in Outcome::ALL {
            all.extend([
                slot::responses(o),
                slot::sent_bytes(o),
                slot::original_bytes(o),
                slot::unknown_size_bytes(o),
            ]);
        }
        for c in Coding::ALL {
            all.push(slot::decode_cpu_us(c));
            for r in Reason::ALL {
                all.push(slot::passed_over(r, c));
            }
        }
        all.extend(CopyFate::ALL.map(slot::job));
        all.extend([
            slot::COMPRESSOR_CPU_US,
            slot::COMPRESSOR_STARTS,
            slot::COMPRESSOR_RESTARTS,
            slot::COMPRESSOR_PID,
            slot::GENERATION,
            slot::COMPRESSOR_GENERATION,
            slot::CACHE_ENTRIES,
            slot::CACHE_BYTES,
            slot::CACHE_EVICTIONS,
            slot::SINCE,
            slot::WANTED,
            slot::WANTED_OLDEST,
        ]);
        all.extend(DeltaCoding::ALL.map(slot::delta_saved_vs_br));
        for i in &all {
            assert!(*i < slot::COUNT, "slot {i} out of range");
            assert!(seen.insert(*i), "slot {i} used twice");
        }
        assert_eq!(all.len(), slot::COUNT, "every slot is used");
    }

    #[test]
    fn a_filter_coding_makes_it_on_the_fly_with_the_size_passed() {
        let gz = Some(&b"gzip"[..]);
        let c = counted(Outcome::ORIGINAL, 1000, gz, 300, true, Some(1000));
        assert_eq!(c.outcome, Outcome::OnTheFly(Coding::Gzip));
        assert_eq!(c.uncompressed, Some(1000));
        let d = counted(
            Outcome::Sent(Representation::Decoded(Coding::Br)),
            800,
            Some(b"br"),
            200,
            true,
            None,
        );
        assert_eq!(
            (d.outcome, d.uncompressed),
            (Outcome::OnTheFly(Coding::Br), Some(800))
        );
        let unknown = counted(
            Outcome::Sent(Representation::Decoded(Coding::Br)),
            u64::MAX,
            gz,
            200,
            true,
            None,
        );
        assert_eq!(unknown.uncompressed, None);
        let own = counted(
            Outcome::Sent(Representation::Sibling(Coding::Br)),
            300,
            Some(b"br"),
            300,
            true,
            None,
        );
        assert_eq!(
            own.outcome,
            Outcome::Sent(Representation::Sibling(Coding::Br))
        );
        assert_eq!(own.uncompressed, None, "a sibling without its original");
        let range = counted(
            Outcome::Sent(Representation::Sibling(Coding::Gzip)),
            300,
            gz,
            100,
            false,
            Some(1000),
        );
        assert_eq!(range.uncompressed, Some(100));
        let head = counted(Outcome::ORIGINAL, 1000, gz, 0, false, Some(1000));
        assert_eq!(head.uncompressed, Some(0));
        let plain = counted(Outcome::ORIGINAL, 1000, None, 1000, true, Some(1000));
        assert_eq!(
            (plain.outcome, plain.uncompressed),
            (Outcome::ORIGINAL, Some(1000))
        );
    }

    #[test]
    fn outcome_indexes_follow_all() {
        for (i, o) in Outcome::ALL.iter().enumerate() {
            assert_eq!(o.index(), i, "{o:?}");
        }
    }
}

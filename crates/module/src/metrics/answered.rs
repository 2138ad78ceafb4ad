//! The counters' part of what follows an answer: the response counted as
//! it went out, the siblings passed over and why, and the request notes
//! the access log shows (`%{gzip-disk-ng}n`, as mod_deflate notes what it
//! compressed).

use crate::answer::{self, Answer};
use crate::metrics::counters;
use crate::metrics::tally::{self, Reason};
use crate::outcome::Outcome;
use gdn_core::coding::Coding;
use gdn_core::representation::Representation;
use gdn_httpd::{Request, Status};
use std::ffi::CStr;

/// Request note for `LogFormat "%{gzip-disk-ng}n"`.
pub const NOTE: &CStr = c"gzip-disk-ng";
/// Request note: the body's size uncompressed (as mod_deflate's `Input`).
pub const NOTE_ORIGINAL: &CStr = c"gzip-disk-ng-original";
/// Request note: the body sent as a percentage of that (as mod_deflate's
/// `Ratio`).
pub const NOTE_RATIO: &CStr = c"gzip-disk-ng-ratio";

/// Why siblings were passed over, by coding: found stale, failed to
/// decode, over the decoding window.
#[derive(Clone, Copy, Default)]
pub struct PassedOver {
    pub stale: [bool; 3],
    pub undecodable: [bool; 3],
    pub window: [bool; 3],
}

/// Counts the siblings passed over, once each.
pub fn passed_over(p: &PassedOver) {
    for c in Coding::ALL {
        let i = c.index();
        for (passed, reason) in [
            (p.stale[i], Reason::Stale),
            (p.undecodable[i], Reason::Undecodable),
            (p.window[i], Reason::Window),
        ] {
            if passed {
                counters::passed_over(reason, c);
            }
        }
    }
}

/// What the counters need of the resource beside the answer.
pub struct Resource<F: FnOnce() -> Option<u64>> {
    /// The original's size, where it exists.
    pub original: Option<u64>,
    /// The br representation's size, where known: what a delta saved.
    pub br: F,
    /// Whether a stale sibling made the original the answer.
    pub stale: bool,
}

/// Counts an answer and writes its log note; `queued` where the
/// compressor was asked for copies.
pub fn record<F: FnOnce() -> Option<u64>>(
    req: &Request<'_>,
    a: Answer,
    r: Resource<F>,
    queued: bool,
) {
    if let Some((c, micros)) = a.decode_cpu {
        counters::decode_cpu(c, micros);
    }
    let sent = count(req, a, r.original, r.br);
    let stale = sent == Outcome::ORIGINAL && r.stale;
    match (answer::note(sent, stale), queued) {
        (Some(n), false) => req.add_note(NOTE, n),
        (n, true) => {
            let n = n.map_or(&b""[..], CStr::to_bytes);
            req.add_note_copy(NOTE, &[n, b" queued"]);
        }
        (None, false) => {}
    }
}

/// Counts the response once the handler passed it, as it went out:
/// in the coding of its final `Content-Encoding` (mod_deflate or
/// mod_brotli may have compressed the original), with the body bytes
/// the filters sent and, for a whole body in a content coding, its
/// size uncompressed where known. Such a body also gets them as
/// request notes for the access log, as mod_deflate notes what it
/// compressed. An error the handler returns has its body made later,
/// by Apache: counted without bytes. Returns what went out.
fn count(
    req: &Request<'_>,
    a: Answer,
    original: Option<u64>,
    br: impl FnOnce() -> Option<u64>,
) -> Outcome {
    let passed = a.status == Status::OK || a.status == Status::DONE;
    let sent = if !passed || req.header_only() {
        0
    } else {
        req.bytes_sent()
    };
    let whole = passed && req.status() == Status::HTTP_OK;
    let c = tally::counted(
        a.outcome,
        a.len,
        req.content_encoding(),
        sent,
        whole,
        original,
    );
    if !counters::counting() {
        return c.outcome;
    }
    counters::response(c);
    if let (
        Outcome::Sent(Representation::Delta(d)) | Outcome::Sent(Representation::CachedDelta(d)),
        true,
    ) = (c.outcome, whole)
    {
        if let Some(br) = br() {
            counters::delta_saved_vs_br(d, br.saturating_sub(sent));
        }
    }
    match c.uncompressed {
        Some(original) if sent > 0 && c.outcome.is_coded() => req.add_note_numbers([
            (NOTE_ORIGINAL, original),
            (NOTE_RATIO, sent * 100 / original.max(1)),
        ]),
        _ => {}
    }
    c.outcome
}

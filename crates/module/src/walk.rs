//! The walk over `variant`'s candidates. Each candidate is resolved
//! against the facts (`crate::facts`: a sibling fresh, stale or missing; a copy held,
//! missing or not worth making; a delta found) into one representation,
//! which the caller's responder sends (`Answer`) or gives way on (`Skip`);
//! then the next is tried. The facts and the sending are the caller's, so
//! the order of fallbacks is tested here without Apache.

use crate::answer::{Answer, Skip};
use crate::facts::{Facts, Held, Seen};
use gdn_core::coding::{Coding, DeltaCoding};
use gdn_core::variant::{Candidate, Window};
use std::ffi::CStr;

/// One representation, resolved, for a responder to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolved<'r, S, C> {
    Delta(DeltaCoding, S),
    CachedDelta(DeltaCoding, C),
    Sibling(Coding, S),
    Cached(Coding, C),
    /// The original; `vary` where the resource has siblings or copies.
    Original {
        vary: bool,
    },
    Decode(Coding, S, Window),
    /// A sibling's decoded copy, and the sibling it carries the
    /// validators of.
    DecodedCopy(Coding, C, S),
    /// 406, naming the codings that have a fresh sibling.
    NotAcceptable([bool; 3]),
    /// 500: siblings exist and none could be decoded; the first passed
    /// over for its window, unless an error line already says why.
    NoneDecodable {
        too_large: Option<(&'r CStr, u64)>,
        logged: bool,
    },
    /// 503 with `Retry-After`: the decodes that could answer are too
    /// many in this process now.
    Busy,
    NotFound,
    PathInfo,
    Options,
    NotImplemented,
    MethodNotAllowed,
}

/// What the walk learned from the candidates that gave way: so each
/// sibling is opened and decoded at most once, the final answer knows why
/// nothing could be decoded, and the counters why siblings were passed
/// over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tried<'r> {
    /// Siblings that could not be opened, by coding.
    pub gone: [bool; 3],
    /// Siblings a decode was attempted from, by coding.
    pub decoded: [bool; 3],
    /// Siblings that could not be decoded, by coding.
    pub undecodable: [bool; 3],
    /// Siblings passed over for a window over the decoding limit.
    pub window: [bool; 3],
    /// An error line already says why a sibling could not be decoded.
    pub logged: bool,
    /// The first sibling passed over for its window, and that window.
    pub too_large: Option<(&'r CStr, u64)>,
    /// A decode gave way: too many stream in this process now.
    pub busy: bool,
}

impl<'r> Tried<'r> {
    /// Takes note of why a candidate gave way.
    fn learn(&mut self, skip: Skip<'r>) {
        match skip {
            Skip::Unopenable(Some(c)) => self.gone[c.index()] = true,
            Skip::Undecodable(c) => {
                self.decoded[c.index()] = true;
                self.undecodable[c.index()] = true;
                self.logged = true;
            }
            // Neither sent nor decoded again; a warning said why.
            Skip::Broken(c) => {
                self.gone[c.index()] = true;
                self.decoded[c.index()] = true;
                self.undecodable[c.index()] = true;
                self.logged = true;
            }
            Skip::Busy => self.busy = true,
            Skip::TooLarge {
                coding,
                path,
                window,
            } => {
                self.decoded[coding.index()] = true;
                self.window[coding.index()] = true;
                self.too_large.get_or_insert((path, window));
            }
            _ => {}
        }
    }

    /// Whether a sibling exists that could not be decoded.
    fn any_undecodable(&self) -> bool {
        self.undecodable.contains(&true) || self.window.contains(&true)
    }
}

/// Resolves the candidates in order and hands each to `send` until one
/// answers: the answer (none when every candidate gave way) and what the
/// walk learned.
pub fn walk<'r, F: Facts>(
    facts: &F,
    candidates: &[Candidate],
    mut send: impl FnMut(Resolved<'r, F::Found, F::Copy>) -> Result<Answer, Skip<'r>>,
) -> (Option<Answer>, Tried<'r>) {
    let mut tried = Tried::default();
    for &c in candidates {
        match resolve(facts, c, &tried).and_then(&mut send) {
            Ok(a) => return (Some(a), tried),
            Err(skip) => tried.learn(skip),
        }
    }
    (None, tried)
}

type Resolution<'r, F> = Result<Resolved<'r, <F as Facts>::Found, <F as Facts>::Copy>, Skip<'r>>;

/// The representation a candidate stands for, as the facts have it.
fn resolve<'r, F: Facts>(f: &F, c: Candidate, tried: &Tried<'r>) -> Resolution<'r, F> {
    Ok(match c {
        Candidate::Delta(d) => match f.delta(d) {
            Some(s) => Resolved::Delta(d, s),
            None => Resolved::CachedDelta(d, held(f.cached_delta(d))?),
        },
        Candidate::Send(c) => Resolved::Sibling(c, openable(f, c, tried)?),
        Candidate::Cached(c) => Resolved::Cached(c, held(f.copy(c))?),
        Candidate::Original => Resolved::Original {
            vary: f.cache_on()
                || Coding::ALL
                    .iter()
                    .any(|&c| !matches!(f.sibling(c), Seen::Missing)),
        },
        Candidate::Decode(c, _) if tried.decoded[c.index()] => return Err(Skip::Tried),
        Candidate::Decode(c, w) => {
            let s = fresh(f, c)?;
            match f.decoded_copy(c, &s) {
                Held::Ready(copy) => Resolved::DecodedCopy(c, copy, s),
                _ => Resolved::Decode(c, openable(f, c, tried)?, w),
            }
        }
        Candidate::NotAcceptable => {
            let avail = Coding::ALL.map(|c| matches!(f.sibling(c), Seen::Fresh(_)));
            if !avail.contains(&true) {
                return Err(Skip::Missing);
            }
            Resolved::NotAcceptable(avail)
        }
        Candidate::NotFound if tried.busy => Resolved::Busy,
        Candidate::NotFound if tried.any_undecodable() => Resolved::NoneDecodable {
            too_large: tried.too_large,
            logged: tried.logged,
        },
        Candidate::NotFound => Resolved::NotFound,
        Candidate::PathInfo => Resolved::PathInfo,
        Candidate::Options => Resolved::Options,
        Candidate::NotImplemented => Resolved::NotImplemented,
        Candidate::MethodNotAllowed => Resolved::MethodNotAllowed,
    })
}

/// Coding `c`'s fresh sibling, or why there is none to send.
fn fresh<'r, F: Facts>(f: &F, c: Coding) -> Result<F::Found, Skip<'r>> {
    match f.sibling(c) {
        Seen::Fresh(s) => Ok(s),
        Seen::Stale => Err(Skip::Stale),
        Seen::Missing => Err(Skip::Missing),
    }
}

/// Coding `c`'s fresh sibling, unless an earlier candidate failed to
/// open it.
fn openable<'r, F: Facts>(f: &F, c: Coding, tried: &Tried<'r>) -> Result<F::Found, Skip<'r>> {
    let s = fresh(f, c)?;
    match tried.gone[c.index()] {
        true => Err(Skip::Unopenable(Some(c))),
        false => Ok(s),
    }
}

/// A held copy, or why there is none to send.
fn held<'r, C>(h: Held<C>) -> Result<C, Skip<'r>> {
    match h {
        Held::Ready(c) => Ok(c),
        Held::Missing => Err(Skip::WantsCopy),
        Held::NotWorth => Err(Skip::Missing),
    }
}

#[cfg(test)]
mod tests;

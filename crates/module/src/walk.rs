//! The walk over `variant`'s candidates. Each candidate is resolved
//! against the facts (`crate::facts`: a sibling fresh, stale or missing; a copy held,
//! missing or not worth making; a delta found) into one representation,
//! which the caller's responder sends (`Answer`) or gives way on (`Skip`);
//! then the next is tried. The facts and the sending are the caller's, so
//! the order of fallbacks is tested here without Apache.

use crate::answer::{Answer, Skip};
use crate::facts::{Facts, Held, Learned, Noted, Seen};
use gdn_core::coding::{Coding, DeltaCoding};
use gdn_core::representation::Representation;
use gdn_core::variant::{Candidate, Window};
use std::ffi::CStr;

/// A candidate resolved with the files it needs: a representation
/// (`representation` names it) with the sibling (`S`) or the cache's copy
/// (`C`) that holds it, or an answer that is none, for a responder to
/// send.
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

/// What the walk learned: the answer (none when every candidate gave
/// way), why candidates gave way, what the facts answered (`Learned`:
/// the copies found missing, the siblings found stale), and the cached
/// copy the answer sent. The steps after the answer read only this.
pub struct Walked<'r, S, C> {
    pub answer: Option<Answer>,
    pub tried: Tried<'r>,
    pub learned: Learned<S>,
    /// The on-demand copy the answer sent, if it sent one.
    pub sent_copy: Option<C>,
}

/// Resolves the candidates in order and hands each to `send` until one
/// answers; returns what the walk learned, the facts' answers before it
/// (the sizes the decision asked) included.
#[inline]
pub fn walk<'r, F: Facts>(
    facts: Noted<F>,
    candidates: &[Candidate],
    mut send: impl FnMut(Resolved<'r, F::Found, F::OpenCopy>) -> Result<Answer, Skip<'r>>,
) -> Walked<'r, F::Found, F::OpenCopy> {
    let mut tried = Tried::default();
    let mut answer = None;
    let mut sent_copy = None;
    for &c in candidates {
        let resolved = resolve(&facts, c, &tried);
        let copy = resolved.as_ref().ok().and_then(Resolved::copy);
        match resolved.and_then(&mut send) {
            Ok(a) => {
                (answer, sent_copy) = (Some(a), copy);
                break;
            }
            Err(skip) => tried.learn(skip),
        }
    }
    Walked {
        answer,
        tried,
        learned: facts.learned(),
        sent_copy,
    }
}

impl<S, C> Resolved<'_, S, C> {
    /// The representation it sends; none for an answer that is no
    /// representation (404, 406, 500, 503, OPTIONS, refused methods).
    pub fn representation(&self) -> Option<Representation> {
        use Representation as R;
        Some(match *self {
            Resolved::Delta(d, _) => R::Delta(d),
            Resolved::CachedDelta(d, _) => R::CachedDelta(d),
            Resolved::Sibling(c, _) => R::Sibling(c),
            Resolved::Cached(c, _) => R::Cached(c),
            Resolved::Original { .. } => R::Original,
            Resolved::Decode(c, ..) => R::Decoded(c),
            Resolved::DecodedCopy(c, ..) => R::DecodedCopy(c),
            Resolved::NotAcceptable(_)
            | Resolved::NoneDecodable { .. }
            | Resolved::Busy
            | Resolved::NotFound
            | Resolved::PathInfo
            | Resolved::Options
            | Resolved::NotImplemented
            | Resolved::MethodNotAllowed => return None,
        })
    }
}

impl<S, C: Copy> Resolved<'_, S, C> {
    /// The on-demand copy this representation sends, if it is one.
    fn copy(&self) -> Option<C> {
        match self {
            Resolved::CachedDelta(_, c)
            | Resolved::Cached(_, c)
            | Resolved::DecodedCopy(_, c, _) => Some(*c),
            _ => None,
        }
    }
}

type Resolution<'r, F> =
    Result<Resolved<'r, <F as Facts>::Found, <F as Facts>::OpenCopy>, Skip<'r>>;

/// The representation a candidate stands for, as the facts have it.
fn resolve<'r, F: Facts>(f: &F, c: Candidate, tried: &Tried<'r>) -> Resolution<'r, F> {
    Ok(match c {
        Candidate::Delta(d) => match f.delta(d) {
            Some(s) => Resolved::Delta(d, s),
            None => Resolved::CachedDelta(d, held(f.cached_delta(d))?),
        },
        Candidate::Sibling(c) => Resolved::Sibling(c, openable(f, c, tried)?),
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

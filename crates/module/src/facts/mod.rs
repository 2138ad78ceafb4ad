//! The facts of one request's resource: what the decision and the walk
//! ask of the disk (the `Facts` trait, in its words `Seen` and `Held`),
//! and `disk`, which answers it over the request. `Noted` keeps, by
//! value, what the answers taught that the steps after the answer need
//! (`Learned`), so those steps read that, never the lookups' state;
//! `sizes` is what the decision asks before the walk. Both are
//! unit-tested over a fake (`tests.rs`).

pub mod disk;

use gdn_core::coding::{Coding, DeltaCoding};
use gdn_core::negotiate::Ranked;
use gdn_core::variant::{self, Size, Sizes};
use std::cell::RefCell;

/// What a lookup found of one coding's sibling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen<S> {
    Fresh(S),
    /// Older than the original beside it: never served.
    Stale,
    Missing,
}

impl<S> Seen<S> {
    /// The sibling borrowed.
    pub fn as_ref(&self) -> Seen<&S> {
        match self {
            Seen::Fresh(s) => Seen::Fresh(s),
            Seen::Stale => Seen::Stale,
            Seen::Missing => Seen::Missing,
        }
    }
}

/// What the on-demand cache holds of one representation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held<C> {
    /// The copy, opened.
    Ready(C),
    /// Nothing to send or ask for (no cache, not worth it, planted).
    NotWorth,
    /// Missing or being made: asked for once the request is answered.
    Missing,
}

/// What the walk asks of the disk. Each answer is looked up the first
/// time it is asked and kept for the request (`Disk` over Apache).
pub trait Facts {
    /// A sibling or a published delta, found.
    type Found: Copy;
    /// A copy in the on-demand cache, opened.
    type OpenCopy: Copy;
    fn sibling(&self, c: Coding) -> Seen<Self::Found>;
    /// The fresh published delta against the announced dictionary.
    fn delta(&self, d: DeltaCoding) -> Option<Self::Found>;
    fn cached_delta(&self, d: DeltaCoding) -> Held<Self::OpenCopy>;
    /// The cached copy of the original in coding `c`.
    fn copy(&self, c: Coding) -> Held<Self::OpenCopy>;
    /// The decoded copy of coding `c`'s sibling `s`.
    fn decoded_copy(&self, c: Coding, s: &Self::Found) -> Held<Self::OpenCopy>;
    /// Whether the request's scope has the on-demand cache.
    fn cache_on(&self) -> bool;
    /// A sibling's or delta's size in bytes.
    fn found_size(s: &Self::Found) -> u64;
    /// A copy's size in bytes.
    fn copy_size(c: &Self::OpenCopy) -> u64;
    /// The codings' sizes remembered for the original's version
    /// (`memo::size`), where learned lately.
    fn remembered_sizes(&self) -> Option<Sizes>;
    /// Takes `sizes` as the remembered ones for this request, storing
    /// them for the next where `learned` added to them.
    fn remember_sizes(&self, sizes: Sizes, learned: bool);
}

/// The sizes of the representations the client accepts at equal q, for
/// the default order (smallest first): remembered per version of the
/// original, else learned by looking each up (as the walk would, so none
/// is looked up twice) and remembered. Deltas are looked up: the walk
/// would start with them anyway.
pub fn sizes<F: Facts>(f: &F, ranked: &Ranked, deltas: &[Option<(DeltaCoding, u16)>; 2]) -> Sizes {
    let mut sizes = Sizes::default();
    for &(d, _) in deltas.iter().flatten() {
        sizes.deltas[d.index()] = match f.delta(d) {
            Some(s) => Size::Bytes(F::found_size(&s)),
            None => match f.cached_delta(d) {
                Held::Ready(c) => Size::Bytes(F::copy_size(&c)),
                Held::Missing | Held::NotWorth => Size::Absent,
            },
        };
    }
    let wanted = variant::sizes_wanted(ranked, deltas.iter().any(Option::is_some));
    if !wanted.contains(&true) {
        return sizes;
    }
    let mut memo = f.remembered_sizes().unwrap_or_default();
    let mut learned = false;
    for c in Coding::ALL {
        let known = &mut memo.codings[c.index()];
        if !wanted[c.index()] || *known != Size::Unknown {
            continue;
        }
        let size = size_of(f, c);
        // A copy still being made is looked for again next time.
        if size != Size::Unknown {
            *known = size;
            learned = true;
        }
    }
    f.remember_sizes(memo, learned);
    sizes.codings = memo.codings;
    sizes
}

/// The size of coding `c`'s representation: its fresh sibling's, else
/// its cached copy's (`Unknown` while the copy is being made).
fn size_of<F: Facts>(f: &F, c: Coding) -> Size {
    if let Seen::Fresh(s) = f.sibling(c) {
        return Size::Bytes(F::found_size(&s));
    }
    match f.copy(c) {
        Held::Ready(copy) => Size::Bytes(F::copy_size(&copy)),
        Held::NotWorth => Size::Absent,
        Held::Missing => Size::Unknown,
    }
}

/// What the answers of the facts taught, kept as they were given: what
/// the steps after the answer need (the counters, the copies asked for).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Learned<S> {
    /// Siblings found stale, by coding.
    pub stale: [bool; 3],
    /// Copies of the original found missing, by coding.
    pub copies: [bool; 3],
    /// Fresh siblings whose decoded copy was found missing, by coding.
    pub decoded: [Option<S>; 3],
    /// A delta on demand found missing (its dictionary kept).
    pub delta: bool,
    /// The fresh br sibling's size, where one was found.
    pub br_sibling: Option<u64>,
    /// The br copy's size, where one was found.
    pub br_copy: Option<u64>,
}

impl<S> Default for Learned<S> {
    fn default() -> Self {
        Learned {
            stale: [false; 3],
            copies: [false; 3],
            decoded: [None, None, None],
            delta: false,
            br_sibling: None,
            br_copy: None,
        }
    }
}

impl<S: Copy> Learned<S> {
    /// What to ask the compressor for once the request is answered: the
    /// copy of the original in `sent` (the coding the client gets once
    /// every copy exists), where it was found missing, a delta against a
    /// dictionary the cache keeps, and the decoded copies of the
    /// siblings. The other codings' missing copies are not asked for: a
    /// client that would get them asks for them, so one pass of browsers
    /// costs one copy per page.
    pub fn wanted(&self, sent: Option<Coding>) -> Wanted<S> {
        Wanted {
            copy: sent.filter(|c| self.copies[c.index()]),
            delta: self.delta,
            decoded: self.decoded,
        }
    }

    /// The br representation's size, where a lookup made found it: what
    /// a delta is measured against.
    pub fn br_size(&self) -> Option<u64> {
        self.br_sibling.or(self.br_copy)
    }
}

/// The copies a request asks the compressor for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wanted<S> {
    /// The copy of the original in this coding.
    pub copy: Option<Coding>,
    /// A delta on demand.
    pub delta: bool,
    /// The decoded copies of these siblings, by coding.
    pub decoded: [Option<S>; 3],
}

/// Facts that keep what they answered (`Learned`).
pub struct Noted<F: Facts> {
    facts: F,
    learned: RefCell<Learned<F::Found>>,
}

impl<F: Facts> Noted<F> {
    pub fn new(facts: F) -> Self {
        Noted {
            facts,
            learned: RefCell::new(Learned::default()),
        }
    }

    /// What the answers taught.
    pub fn learned(self) -> Learned<F::Found> {
        self.learned.into_inner()
    }

    fn note(&self, f: impl FnOnce(&mut Learned<F::Found>)) {
        f(&mut self.learned.borrow_mut());
    }
}

impl<F: Facts> Facts for Noted<F> {
    type Found = F::Found;
    type OpenCopy = F::OpenCopy;

    fn sibling(&self, c: Coding) -> Seen<F::Found> {
        let seen = self.facts.sibling(c);
        match seen {
            Seen::Stale => self.note(|l| l.stale[c.index()] = true),
            Seen::Fresh(s) if c == Coding::Br => {
                self.note(|l| l.br_sibling = Some(F::found_size(&s)))
            }
            _ => {}
        }
        seen
    }

    fn delta(&self, d: DeltaCoding) -> Option<F::Found> {
        self.facts.delta(d)
    }

    fn cached_delta(&self, d: DeltaCoding) -> Held<F::OpenCopy> {
        let held = self.facts.cached_delta(d);
        if matches!(held, Held::Missing) {
            self.note(|l| l.delta = true);
        }
        held
    }

    fn copy(&self, c: Coding) -> Held<F::OpenCopy> {
        let held = self.facts.copy(c);
        match held {
            Held::Missing => self.note(|l| l.copies[c.index()] = true),
            Held::Ready(copy) if c == Coding::Br => {
                self.note(|l| l.br_copy = Some(F::copy_size(&copy)))
            }
            _ => {}
        }
        held
    }

    fn decoded_copy(&self, c: Coding, s: &F::Found) -> Held<F::OpenCopy> {
        let held = self.facts.decoded_copy(c, s);
        if matches!(held, Held::Missing) {
            self.note(|l| l.decoded[c.index()] = Some(*s));
        }
        held
    }

    fn cache_on(&self) -> bool {
        self.facts.cache_on()
    }

    fn found_size(s: &F::Found) -> u64 {
        F::found_size(s)
    }

    fn copy_size(c: &F::OpenCopy) -> u64 {
        F::copy_size(c)
    }

    fn remembered_sizes(&self) -> Option<Sizes> {
        self.facts.remembered_sizes()
    }

    fn remember_sizes(&self, sizes: Sizes, learned: bool) {
        self.facts.remember_sizes(sizes, learned)
    }
}

#[cfg(test)]
pub(crate) mod fake;
#[cfg(test)]
mod tests;

//! The facts of one request's resource: what the walk asks of the disk
//! (the `Facts` trait, in its words `Seen` and `Held`), and `disk`, which
//! answers it over the request.

pub mod disk;

use gdn_core::coding::{Coding, DeltaCoding};

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
    type Copy: Copy;
    fn sibling(&self, c: Coding) -> Seen<Self::Found>;
    /// The fresh published delta against the announced dictionary.
    fn delta(&self, d: DeltaCoding) -> Option<Self::Found>;
    fn cached_delta(&self, d: DeltaCoding) -> Held<Self::Copy>;
    /// The cached copy of the original in coding `c`.
    fn copy(&self, c: Coding) -> Held<Self::Copy>;
    /// The decoded copy of coding `c`'s sibling `s`.
    fn decoded_copy(&self, c: Coding, s: &Self::Found) -> Held<Self::Copy>;
    /// Whether the request's scope has the on-demand cache.
    fn cache_on(&self) -> bool;
}

//! A disk for unit tests: each representation's name where it exists
//! (its length its size), the sizes remembered, and what was asked of
//! it, in order. The walk's tests and the facts' own use it.

use super::{Facts, Held, Seen};
use gdn_core::coding::{Coding, DeltaCoding};
use gdn_core::variant::Sizes;
use std::cell::{Cell, RefCell};

pub struct Fake {
    pub siblings: [Seen<&'static str>; 3],
    pub deltas: [Option<&'static str>; 2],
    pub cached_deltas: [Held<&'static str>; 2],
    pub copies: [Held<&'static str>; 3],
    pub decoded: [Held<&'static str>; 3],
    pub cache: bool,
    /// The sizes remembered for the original's version.
    pub remembered: Option<Sizes>,
    /// The sizes last given to remember, and whether any was learned.
    pub stored: Cell<Option<(Sizes, bool)>>,
    /// What was asked, in order.
    pub asked: RefCell<Vec<String>>,
}

impl Default for Fake {
    fn default() -> Self {
        Fake {
            siblings: [Seen::Missing; 3],
            deltas: [None; 2],
            cached_deltas: [Held::NotWorth; 2],
            copies: [Held::NotWorth; 3],
            decoded: [Held::NotWorth; 3],
            cache: false,
            remembered: None,
            stored: Cell::new(None),
            asked: RefCell::default(),
        }
    }
}

impl Fake {
    fn note(&self, what: String) {
        self.asked.borrow_mut().push(what);
    }
}

impl Facts for &Fake {
    type Found = &'static str;
    type OpenCopy = &'static str;

    fn sibling(&self, c: Coding) -> Seen<&'static str> {
        self.note(format!("sibling {}", c.token()));
        self.siblings[c.index()]
    }
    fn delta(&self, d: DeltaCoding) -> Option<&'static str> {
        self.note(format!("delta {}", d.token()));
        self.deltas[d.index()]
    }
    fn cached_delta(&self, d: DeltaCoding) -> Held<&'static str> {
        self.note(format!("cached delta {}", d.token()));
        self.cached_deltas[d.index()]
    }
    fn copy(&self, c: Coding) -> Held<&'static str> {
        self.note(format!("copy {}", c.token()));
        self.copies[c.index()]
    }
    fn decoded_copy(&self, c: Coding, _: &&'static str) -> Held<&'static str> {
        self.note(format!("decoded copy {}", c.token()));
        self.decoded[c.index()]
    }
    fn cache_on(&self) -> bool {
        self.cache
    }
    fn found_size(s: &&'static str) -> u64 {
        s.len() as u64
    }
    fn copy_size(c: &&'static str) -> u64 {
        c.len() as u64
    }
    fn remembered_sizes(&self) -> Option<Sizes> {
        self.remembered
    }
    fn remember_sizes(&self, sizes: Sizes, learned: bool) {
        self.stored.set(Some((sizes, learned)));
    }
}

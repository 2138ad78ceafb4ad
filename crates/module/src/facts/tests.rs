//! The facts over a fake disk: what the decision's sizes look up and
//! remember, and what is kept for the steps after the answer (the copies
//! asked for, the siblings found stale, the br size a delta is measured
//! against).

use super::fake::Fake;
use super::*;
use gdn_core::coding::Coding::{Br, Gzip, Zstd};
use gdn_core::coding::DeltaCoding::Dcz;
use gdn_core::negotiate::Accepted;

fn ranked(accept: &str) -> Ranked {
    Accepted::parse_bytes(Some(accept.as_bytes())).ranked(&Coding::ALL)
}

fn asked(f: &Fake) -> Vec<String> {
    f.asked.borrow().clone()
}

#[test]
fn sizes_are_learned_from_siblings_then_copies_and_remembered() {
    let f = Fake {
        siblings: [Seen::Fresh("p.zst.."), Seen::Stale, Seen::Missing],
        copies: [Held::NotWorth, Held::Ready("br"), Held::Missing],
        ..Fake::default()
    };
    let s = sizes(&&f, &ranked("gzip, br, zstd"), &[None; 2]);
    assert_eq!(s.codings, [Size::Bytes(7), Size::Bytes(2), Size::Unknown]);
    // A copy being made stays unknown; what was learned is stored.
    assert_eq!(f.stored.get(), Some((s, true)));
    assert_eq!(
        asked(&f),
        [
            "sibling zstd",
            "sibling br",
            "copy br",
            "sibling gzip",
            "copy gzip"
        ]
    );
}

#[test]
fn remembered_sizes_cost_no_lookup() {
    let known = Sizes {
        codings: [Size::Bytes(5), Size::Absent, Size::Bytes(9)],
        deltas: [Size::Unknown; 2],
    };
    let f = Fake {
        remembered: Some(known),
        ..Fake::default()
    };
    let s = sizes(&&f, &ranked("gzip, br, zstd"), &[None; 2]);
    assert_eq!(s.codings, known.codings);
    assert!(asked(&f).is_empty(), "{:?}", asked(&f));
    assert_eq!(
        f.stored.get(),
        Some((known, false)),
        "kept, not stored again"
    );
}

#[test]
fn a_client_naming_one_coding_needs_no_size() {
    let f = Fake::default();
    let s = sizes(&&f, &ranked("gzip"), &[None; 2]);
    assert_eq!(s, Sizes::default());
    assert!(asked(&f).is_empty() && f.stored.get().is_none());
}

#[test]
fn deltas_are_sized_published_first_then_cached() {
    let f = Fake {
        cached_deltas: [Held::Ready("cached dcz"), Held::NotWorth],
        ..Fake::default()
    };
    let s = sizes(&&f, &ranked("dcz"), &[Some((Dcz, 1000)), None]);
    assert_eq!(s.deltas[Dcz.index()], Size::Bytes(10));
    assert_eq!(asked(&f), ["delta dcz", "cached delta dcz"]);
}

#[test]
fn what_the_answers_taught_is_kept() {
    let f = Fake {
        siblings: [Seen::Stale, Seen::Fresh("p.br"), Seen::Fresh("p.gz")],
        copies: [Held::Missing, Held::Ready("br copy"), Held::Missing],
        decoded: [Held::NotWorth, Held::Missing, Held::Ready("p.gz decoded")],
        cached_deltas: [Held::Missing, Held::NotWorth],
        ..Fake::default()
    };
    let noted = Noted::new(&f);
    for c in Coding::ALL {
        if let Seen::Fresh(s) = noted.sibling(c) {
            noted.decoded_copy(c, &s);
        }
        noted.copy(c);
    }
    noted.cached_delta(Dcz);
    let l = noted.learned();
    assert_eq!(l.stale, [true, false, false]);
    assert_eq!(l.copies, [true, false, true]);
    assert_eq!(l.decoded, [None, Some("p.br"), None]);
    assert!(l.delta);
    assert_eq!((l.br_sibling, l.br_copy), (Some(4), Some(7)));
    // The sibling's size is what a delta is measured against.
    assert_eq!(l.br_size(), Some(4));
}

#[test]
fn nothing_is_learned_of_what_was_not_asked() {
    let f = Fake {
        siblings: [Seen::Stale; 3],
        copies: [Held::Missing; 3],
        ..Fake::default()
    };
    let noted = Noted::new(&f);
    noted.sibling(Gzip);
    let l = noted.learned();
    assert_eq!(l.stale, [false, false, true]);
    assert_eq!(l.copies, [false; 3]);
    assert_eq!(l.br_size(), None);
}

#[test]
fn only_the_copy_the_client_gets_once_made_is_asked_for() {
    let learned = Learned {
        copies: [true, true, false],
        decoded: [Some("p.zst"), None, None],
        delta: true,
        ..Learned::default()
    };
    let w = learned.wanted(Some(Br));
    assert_eq!(w.copy, Some(Br));
    assert!(w.delta);
    assert_eq!(w.decoded, [Some("p.zst"), None, None]);
    // Found missing for another coding only: not asked for.
    assert_eq!(learned.wanted(Some(Gzip)).copy, None);
    assert_eq!(learned.wanted(None).copy, None);
    assert_eq!(
        Learned::<&str>::default().wanted(Some(Zstd)),
        Wanted {
            copy: None,
            delta: false,
            decoded: [None; 3],
        }
    );
}

#[test]
fn the_br_copy_counts_where_no_br_sibling_was_found() {
    let f = Fake {
        copies: [Held::NotWorth, Held::Ready("br copy"), Held::NotWorth],
        ..Fake::default()
    };
    let noted = Noted::new(&f);
    noted.sibling(Br);
    noted.copy(Br);
    assert_eq!(noted.learned().br_size(), Some(7));
}

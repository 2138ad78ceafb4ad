//! The walk with a fake of the facts: `variant` decides from a request's
//! headers, the fake says what the disk holds, and a fake responder
//! answers or gives way as a real one would, so each fallback is checked
//! without Apache.

use super::*;
use crate::facts::fake::Fake;
use gdn_core::coding::Coding::{Br, Gzip, Zstd};
use gdn_core::negotiate::Accepted;
use gdn_core::variant::{self, FileMeta, Inputs};
use gdn_httpd::Status;
use std::cell::RefCell;

const ALL: [Coding; 3] = Coding::ALL;

type FakeResolved = Resolved<'static, &'static str, &'static str>;

/// The candidates `variant` gives for an existing original (or none) and
/// a request's `Accept-Encoding`, in the server's fixed order.
fn candidates(original: bool, accept: &str, cache: bool, decompress: bool) -> Vec<Candidate> {
    let accepted = Accepted::parse_bytes(Some(accept.as_bytes()));
    let c = variant::candidates(&Inputs {
        original: original.then_some(FileMeta {
            mtime: 1,
            size: 100,
        }),
        ranked: accepted.ranked(&ALL),
        allowed: &ALL,
        identity_preference: accepted.identity_preference(),
        decompress,
        deltas: [None; 2],
        cache,
        sizes: None,
    });
    c.as_slice().to_vec()
}

/// Walks with a responder that gives way with `skip` for each
/// representation it names and answers the first other one: the answer
/// sent, what the walk tried, and everything handed to the responder.
fn run(
    f: &Fake,
    cands: &[Candidate],
    skip: &[(FakeResolved, Skip<'static>)],
) -> (Option<FakeResolved>, Tried<'static>, Vec<FakeResolved>) {
    let handed = RefCell::new(Vec::new());
    let answered = RefCell::new(None);
    let walked = walk(Noted::new(f), cands, |r| {
        handed.borrow_mut().push(r);
        if let Some(&(_, s)) = skip.iter().find(|(x, _)| *x == r) {
            return Err(s);
        }
        *answered.borrow_mut() = Some(r);
        Ok(Answer::other(Status::OK))
    });
    assert_eq!(walked.answer.is_some(), answered.borrow().is_some());
    (answered.into_inner(), walked.tried, handed.into_inner())
}

/// The preferred coding's fresh sibling answers with one lookup.
#[test]
fn the_preferred_fresh_sibling_answers_with_one_lookup() {
    let f = Fake {
        siblings: [
            Seen::Fresh("p.zst"),
            Seen::Fresh("p.br"),
            Seen::Fresh("p.gz"),
        ],
        ..Fake::default()
    };
    let (sent, _, handed) = run(&f, &candidates(true, "br, gzip", false, true), &[]);
    assert_eq!(sent, Some(Resolved::Sibling(Br, "p.br")));
    assert_eq!(handed.len(), 1);
    assert_eq!(*f.asked.borrow(), ["sibling br"]);
}

/// A stale sibling gives way to the next coding; a sibling that cannot
/// be opened is not tried again by a later decode.
#[test]
fn stale_and_unopenable_siblings_give_way() {
    let f = Fake {
        siblings: [Seen::Missing, Seen::Stale, Seen::Fresh("p.gz")],
        ..Fake::default()
    };
    let (sent, _, _) = run(&f, &candidates(true, "br, gzip", false, true), &[]);
    assert_eq!(sent, Some(Resolved::Sibling(Gzip, "p.gz")));

    // No original, gzip unopenable: its decode is not handed over again.
    let f = Fake {
        siblings: [Seen::Missing, Seen::Missing, Seen::Fresh("p.gz")],
        ..Fake::default()
    };
    let gone = (
        Resolved::Sibling(Gzip, "p.gz"),
        Skip::Unopenable(Some(Gzip)),
    );
    let (sent, tried, handed) = run(
        &f,
        &candidates(false, "gzip;q=0.5, br", false, true),
        &[gone],
    );
    assert!(tried.gone[Gzip.index()]);
    assert!(!handed.iter().any(|r| matches!(r, Resolved::Decode(..))));
    assert_eq!(sent, Some(Resolved::NotFound));
}

/// On demand: a copy not made yet gives way to the original (and is
/// what the compressor is asked for); a made one is sent.
#[test]
fn a_missing_copy_gives_way_to_the_original() {
    let mut f = Fake {
        copies: [Held::Missing; 3],
        cache: true,
        ..Fake::default()
    };
    let cands = candidates(true, "zstd, br, gzip", true, true);
    let (sent, _, handed) = run(&f, &cands, &[]);
    assert_eq!(sent, Some(Resolved::Original { vary: true }));
    assert_eq!(handed.len(), 1);
    assert!(f.asked.borrow().contains(&"copy zstd".to_owned()));

    f.copies[Br.index()] = Held::Ready("cache/br");
    f.copies[Zstd.index()] = Held::NotWorth;
    let (sent, _, _) = run(&f, &cands, &[]);
    assert_eq!(sent, Some(Resolved::Cached(Br, "cache/br")));
}

/// The original varies only where the resource has a sibling (stale
/// ones too) or the cache.
#[test]
fn the_original_varies_only_with_siblings_or_the_cache() {
    let cands = candidates(true, "br", false, true);
    let (sent, _, _) = run(&Fake::default(), &cands, &[]);
    assert_eq!(sent, Some(Resolved::Original { vary: false }));
    let f = Fake {
        siblings: [Seen::Stale, Seen::Missing, Seen::Missing],
        ..Fake::default()
    };
    let (sent, _, _) = run(&f, &cands, &[]);
    assert_eq!(sent, Some(Resolved::Original { vary: true }));
}

/// Identity with no original: a decoded copy is sent without decoding;
/// else each sibling is decoded at most once, and when none can be the
/// answer says why.
#[test]
fn decoding_falls_back_and_says_why_none_could() {
    let mut f = Fake {
        siblings: [Seen::Fresh("p.zst"), Seen::Missing, Seen::Fresh("p.gz")],
        ..Fake::default()
    };
    let cands = candidates(false, "identity", false, true);
    let (sent, _, _) = run(&f, &cands, &[]);
    assert!(matches!(sent, Some(Resolved::Decode(_, _, _))), "{sent:?}");

    f.decoded[Zstd.index()] = Held::Ready("cache/zst.decoded");
    f.decoded[Gzip.index()] = Held::Ready("cache/gz.decoded");
    let (sent, _, _) = run(&f, &cands, &[]);
    assert!(matches!(sent, Some(Resolved::DecodedCopy(_, c, _)) if c.starts_with("cache/")));

    f.decoded = [Held::NotWorth; 3];
    let skips: Vec<_> = cands
        .iter()
        .filter_map(|&c| match c {
            Candidate::Decode(Zstd, w) => Some((
                Resolved::Decode(Zstd, "p.zst", w),
                Skip::TooLarge {
                    coding: Zstd,
                    path: c"p.zst",
                    window: 1 << 30,
                },
            )),
            Candidate::Decode(Gzip, w) => {
                Some((Resolved::Decode(Gzip, "p.gz", w), Skip::Undecodable(Gzip)))
            }
            _ => None,
        })
        .collect();
    let (sent, tried, handed) = run(&f, &cands, &skips);
    let decodes = handed
        .iter()
        .filter(|r| matches!(r, Resolved::Decode(..)))
        .count();
    assert_eq!(decodes, 2, "each sibling decoded once: {handed:?}");
    assert_eq!(tried.window, [true, false, false]);
    assert_eq!(tried.undecodable, [false, false, true]);
    assert_eq!(
        sent,
        Some(Resolved::NoneDecodable {
            too_large: Some((c"p.zst", 1 << 30)),
            logged: true
        })
    );
}

/// A zstd sibling whose window waits for its later turn is decoded
/// then, after gzip's.
#[test]
fn a_large_zstd_window_waits_for_its_turn() {
    let f = Fake {
        siblings: [Seen::Fresh("p.zst"), Seen::Missing, Seen::Fresh("p.gz")],
        ..Fake::default()
    };
    let cands = candidates(false, "identity", false, true);
    let later = |r: &Resolved<'_, _, _>| matches!(r, Resolved::Decode(Zstd, _, Window::Small));
    let small = cands
        .iter()
        .find_map(|&c| match c {
            Candidate::Decode(Zstd, w @ Window::Small) => Some(Resolved::Decode(Zstd, "p.zst", w)),
            _ => None,
        })
        .expect("variant tries zstd with a small window first");
    let gz_fails = cands.iter().find_map(|&c| match c {
        Candidate::Decode(Gzip, w) => Some(Resolved::Decode(Gzip, "p.gz", w)),
        _ => None,
    });
    let mut skips = vec![(small, Skip::Later)];
    skips.extend(gz_fails.map(|g| (g, Skip::Undecodable(Gzip))));
    let (sent, _, handed) = run(&f, &cands, &skips);
    assert!(later(&handed[0]));
    assert!(
        matches!(sent, Some(Resolved::Decode(Zstd, _, Window::Any))),
        "{sent:?}"
    );
}

/// A published delta answers first; without one, the cache's; one
/// being made gives way to the codings.
#[test]
fn deltas_published_then_cached_then_codings() {
    let mut f = Fake {
        siblings: [Seen::Missing, Seen::Fresh("p.br"), Seen::Missing],
        deltas: [Some("p.dcz"), None],
        cached_deltas: [Held::Ready("cache/dcz"), Held::Missing],
        ..Fake::default()
    };
    let cands = [
        Candidate::Delta(DeltaCoding::Dcz),
        Candidate::Sibling(Br),
        Candidate::Original,
    ];
    let (sent, _, _) = run(&f, &cands, &[]);
    assert_eq!(sent, Some(Resolved::Delta(DeltaCoding::Dcz, "p.dcz")));
    f.deltas = [None; 2];
    let (sent, _, _) = run(&f, &cands, &[]);
    assert_eq!(
        sent,
        Some(Resolved::CachedDelta(DeltaCoding::Dcz, "cache/dcz"))
    );
    f.cached_deltas = [Held::Missing; 2];
    let (sent, _, _) = run(&f, &cands, &[]);
    assert_eq!(sent, Some(Resolved::Sibling(Br, "p.br")));
    // A delta whose header names another dictionary is refused.
    let refused = (
        Resolved::CachedDelta(DeltaCoding::Dcz, "cache/dcz"),
        Skip::Refused,
    );
    f.cached_deltas = [Held::Ready("cache/dcz"), Held::NotWorth];
    let (sent, _, _) = run(&f, &cands, &[refused]);
    assert_eq!(sent, Some(Resolved::Sibling(Br, "p.br")));
}

/// Decompression off: 406 names the codings that have a fresh sibling;
/// with none, 404.
#[test]
fn not_acceptable_names_the_fresh_codings() {
    let f = Fake {
        siblings: [Seen::Stale, Seen::Fresh("p.br"), Seen::Missing],
        ..Fake::default()
    };
    let cands = candidates(false, "identity", false, false);
    let (sent, _, _) = run(&f, &cands, &[]);
    assert_eq!(sent, Some(Resolved::NotAcceptable([false, true, false])));
    let f = Fake {
        siblings: [Seen::Stale, Seen::Missing, Seen::Missing],
        ..Fake::default()
    };
    let (sent, _, _) = run(&f, &cands, &[]);
    assert_eq!(sent, Some(Resolved::NotFound));
}

/// When every candidate gives way there is no answer.
#[test]
fn no_answer_when_all_give_way() {
    let f = Fake {
        siblings: [Seen::Missing, Seen::Fresh("p.br"), Seen::Missing],
        ..Fake::default()
    };
    let gone = (Resolved::Sibling(Br, "p.br"), Skip::Refused);
    let (sent, _, handed) = run(&f, &[Candidate::Sibling(Br)], &[gone]);
    assert_eq!(sent, None);
    assert_eq!(handed.len(), 1);
}

/// Each candidate resolves into a representation it offers (or into an
/// answer that is none): the decision's word and the walk's agree,
/// whatever the disk and the cache hold.
#[test]
fn candidates_resolve_into_what_they_offer() {
    let held = |h: u8| match h {
        0 => Held::Ready("copy"),
        1 => Held::NotWorth,
        _ => Held::Missing,
    };
    for state in 0u8..27 {
        let seen = match state % 3 {
            0 => Seen::Fresh("sibling"),
            1 => Seen::Stale,
            _ => Seen::Missing,
        };
        let f = Fake {
            siblings: [seen; 3],
            deltas: [(state % 2 == 0).then_some("delta"); 2],
            cached_deltas: [held(state / 3 % 3); 2],
            copies: [held(state / 9); 3],
            decoded: [held(state / 3 % 3); 3],
            cache: true,
            ..Fake::default()
        };
        let mut cands = candidates(true, "zstd, br, gzip, identity;q=0", true, true);
        cands.extend(candidates(false, "identity", true, true));
        cands.extend(DeltaCoding::ALL.map(Candidate::Delta));
        for c in cands {
            let Ok(r) = resolve(&Noted::new(&f), c, &Tried::default()) else {
                continue;
            };
            match r.representation() {
                Some(rep) => assert!(c.offers(rep), "{c:?} resolved into {rep:?}"),
                None => assert!(
                    !Representation::ALL.iter().any(|&x| c.offers(x)),
                    "{c:?} offers a representation, resolved into {r:?}"
                ),
            }
        }
    }
}

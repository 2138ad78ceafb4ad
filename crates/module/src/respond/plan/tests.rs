//! Each rule of the header plan, one test each, without Apache.

use super::*;
use gdn_core::coding::Coding::{Br, Gzip, Zstd};
use gdn_core::coding::DeltaCoding::{Dcb, Dcz};
use gdn_core::coding::{Coding, DeltaCoding};
use Representation as R;

fn coded(coding: Coding, copy: bool, pad: Option<Pad>) -> Sent {
    let what = match copy {
        true => R::Cached(coding),
        false => R::Sibling(coding),
    };
    Sent { what, pad }
}

fn delta(coding: DeltaCoding, copy: bool) -> Sent {
    match copy {
        true => R::CachedDelta(coding).into(),
        false => R::Delta(coding).into(),
    }
}

/// Every kind of representation, padded or not.
fn every_sent() -> Vec<Sent> {
    let mut all = vec![R::Original.into()];
    for c in Coding::ALL {
        for copy in [false, true] {
            for pad in [None, Some(Pad::Random), Some(Pad::Keyed(17))] {
                all.push(coded(c, copy, pad));
            }
        }
        all.push(R::Decoded(c).into());
        all.push(R::DecodedCopy(c).into());
    }
    for d in DeltaCoding::ALL {
        for copy in [false, true] {
            all.push(delta(d, copy));
        }
    }
    all
}

#[test]
fn the_etag_suffix_names_what_was_sent() {
    let suffix = |s| plan(s).tag.suffix().into_owned();
    assert_eq!(suffix(Sent::from(R::Original)), "");
    assert_eq!(suffix(coded(Gzip, false, None)), "gzip");
    assert_eq!(suffix(coded(Br, true, None)), "br");
    assert_eq!(suffix(coded(Zstd, false, None)), "zstd");
    assert_eq!(suffix(delta(Dcz, false)), "dcz");
    assert_eq!(suffix(delta(Dcb, true)), "dcb");
    assert_eq!(suffix(Sent::from(R::Decoded(Br))), "identity");
    assert_eq!(suffix(Sent::from(R::DecodedCopy(Gzip))), "identity");
}

#[test]
fn padding_is_named_after_the_coding() {
    let suffix = |s| plan(s).tag.suffix().into_owned();
    assert_eq!(suffix(coded(Gzip, false, Some(Pad::Keyed(17)))), "gzip-j17");
    assert_eq!(suffix(coded(Br, false, Some(Pad::Random))), "br-jr");
    // Keyed padding is the same bytes each time: a strong tag.
    assert!(!plan(coded(Gzip, false, Some(Pad::Keyed(17)))).tag.weak());
    assert!(plan(coded(Zstd, true, Some(Pad::Random))).tag.weak());
}

#[test]
fn weak_tags_refuse_ranges() {
    for s in every_sent() {
        let p = plan(s);
        if p.tag.weak() {
            assert_eq!(p.ranges, Ranges::Refused, "{s:?}");
        }
    }
    let strong = plan(coded(Br, false, Some(Pad::Keyed(3))));
    assert_eq!(strong.ranges, Ranges::Offered { coded: true });
}

#[test]
fn a_body_decoded_on_the_fly_refuses_ranges_and_a_decoded_copy_offers_them() {
    for c in Coding::ALL {
        assert_eq!(plan(Sent::from(R::Decoded(c))).ranges, Ranges::Refused);
        assert_eq!(
            plan(Sent::from(R::DecodedCopy(c))).ranges,
            Ranges::Offered { coded: true }
        );
    }
}

#[test]
fn only_a_coded_tag_has_its_ranges_checked_as_coded() {
    assert_eq!(
        plan(Sent::from(R::Original)).ranges,
        Ranges::Offered { coded: false }
    );
    assert_eq!(
        plan(coded(Gzip, true, None)).ranges,
        Ranges::Offered { coded: true }
    );
}

#[test]
fn repr_digest_of_a_cache_file_is_of_the_whole_written_file() {
    let whole = Digest::File(Written::Whole);
    let in_place = Digest::File(Written::InPlace);
    assert_eq!(plan(coded(Gzip, true, None)).digest, whole);
    assert_eq!(plan(delta(Dcz, true)).digest, whole);
    assert_eq!(plan(Sent::from(R::DecodedCopy(Br))).digest, whole);
    assert_eq!(plan(coded(Gzip, false, None)).digest, in_place);
    assert_eq!(plan(delta(Dcb, false)).digest, in_place);
    assert_eq!(plan(Sent::from(R::Original)).digest, in_place);
    assert_eq!(plan(Sent::from(R::Decoded(Zstd))).digest, Digest::Decoded);
}

#[test]
fn a_padded_body_has_no_repr_digest() {
    for s in every_sent() {
        let padded = s.pad.is_some();
        assert_eq!(plan(s).digest == Digest::Omitted, padded, "{s:?}");
    }
}

#[test]
fn content_digest_only_with_the_whole_representation() {
    assert!(content_digest(false, false, true));
    assert!(!content_digest(true, false, true), "a range");
    assert!(!content_digest(false, true, true), "HEAD");
    assert!(!content_digest(false, false, false), "304 or 412");
}

#[test]
fn the_marker_says_sent_as_is_or_decoded() {
    for s in every_sent() {
        let want = match s.what {
            R::Original => None,
            R::Sibling(_) | R::Cached(_) | R::Delta(_) | R::CachedDelta(_) => Some(c":-)"),
            R::Decoded(_) | R::DecodedCopy(_) => Some(c":-("),
        };
        assert_eq!(plan(s).marker.map(Marker::value), want, "{s:?}");
    }
}

#[test]
fn content_encoding_is_the_coding_sent() {
    for s in every_sent() {
        let want = match s.what {
            R::Sibling(coding) | R::Cached(coding) => Some(coding.c_token()),
            R::Delta(coding) | R::CachedDelta(coding) => Some(coding.c_token()),
            R::Original | R::Decoded(_) | R::DecodedCopy(_) => None,
        };
        assert_eq!(plan(s).encoding, want, "{s:?}");
    }
}

#[test]
fn the_outcome_counts_what_was_sent() {
    assert_eq!(
        coded(Br, false, None).outcome(),
        Outcome::Sent(Representation::Sibling(Br))
    );
    assert_eq!(
        coded(Br, true, None).outcome(),
        Outcome::Sent(Representation::Cached(Br))
    );
    let d = |copy| delta(Dcz, copy).outcome();
    assert_eq!(
        (d(false), d(true)),
        (
            Outcome::Sent(Representation::Delta(Dcz)),
            Outcome::Sent(Representation::CachedDelta(Dcz))
        )
    );
    assert_eq!(
        Sent::from(R::Decoded(Gzip)).outcome(),
        Outcome::Sent(Representation::Decoded(Gzip))
    );
    assert_eq!(
        Sent::from(R::DecodedCopy(Gzip)).outcome(),
        Outcome::Sent(Representation::DecodedCopy(Gzip))
    );
    assert_eq!(Sent::from(R::Original).outcome(), Outcome::ORIGINAL);
}

#[test]
fn vary_per_kind_of_answer() {
    type R = Resolved<'static, (), ()>;
    let varies: [R; 9] = [
        Resolved::Delta(Dcz, ()),
        Resolved::CachedDelta(Dcb, ()),
        Resolved::Sibling(Gzip, ()),
        Resolved::Cached(Br, ()),
        Resolved::Decode(Zstd, (), gdn_core::variant::Window::Small),
        Resolved::DecodedCopy(Gzip, (), ()),
        Resolved::NotAcceptable([true, false, false]),
        Resolved::Busy,
        Resolved::Original { vary: true },
    ];
    for r in varies {
        assert!(vary(&r), "{r:?}");
    }
    let plain: [R; 7] = [
        Resolved::Original { vary: false },
        Resolved::NoneDecodable {
            too_large: None,
            logged: false,
        },
        Resolved::NotFound,
        Resolved::PathInfo,
        Resolved::Options,
        Resolved::NotImplemented,
        Resolved::MethodNotAllowed,
    ];
    for r in plain {
        assert!(!vary(&r), "{r:?}");
    }
}

//! The one word for a representation, from the decision to the count:
//! what a response of a file's resource carries. The decision offers
//! candidates for them (`variant::Candidate::offers`), the module's walk
//! resolves a candidate into one with the file that holds it, the
//! header plan and the sending are built from it, and the counters count
//! it. Answers that are no representation (404, 406, OPTIONS, a
//! refused method) are the decision's and the counters' own words.

use crate::coding::{Coding, DeltaCoding};

/// A representation of a file's resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Representation {
    /// The original file, as core would send it.
    Original,
    /// A published sibling, sent as it is.
    Sibling(Coding),
    /// A published delta against the client's dictionary (RFC 9842).
    Delta(DeltaCoding),
    /// The on-demand copy of the original in a coding.
    Cached(Coding),
    /// A delta made on demand, against a version the cache kept or the
    /// site dictionary.
    CachedDelta(DeltaCoding),
    /// A sibling decoded as it is sent, for a client that accepts none
    /// of the codings there are.
    Decoded(Coding),
    /// A sibling's decoded copy, from the on-demand cache.
    DecodedCopy(Coding),
}

impl Representation {
    /// Every representation.
    pub const ALL: [Representation; 17] = {
        use Coding::{Br, Gzip, Zstd};
        use DeltaCoding::{Dcb, Dcz};
        use Representation as R;
        [
            R::Original,
            R::Sibling(Zstd),
            R::Sibling(Br),
            R::Sibling(Gzip),
            R::Delta(Dcz),
            R::Delta(Dcb),
            R::Cached(Zstd),
            R::Cached(Br),
            R::Cached(Gzip),
            R::CachedDelta(Dcz),
            R::CachedDelta(Dcb),
            R::Decoded(Zstd),
            R::Decoded(Br),
            R::Decoded(Gzip),
            R::DecodedCopy(Zstd),
            R::DecodedCopy(Br),
            R::DecodedCopy(Gzip),
        ]
    };

    /// Whether the body is the original in a content coding (a sibling,
    /// a copy or a delta), so that what it saved is the original's size
    /// less what was sent.
    #[inline]
    pub fn is_coded(self) -> bool {
        !matches!(
            self,
            Representation::Original | Representation::Decoded(_) | Representation::DecodedCopy(_)
        )
    }

    /// Whether the body is an on-demand copy, one the cache keeps.
    #[inline]
    pub fn is_copy(self) -> bool {
        matches!(
            self,
            Representation::Cached(_)
                | Representation::CachedDelta(_)
                | Representation::DecodedCopy(_)
        )
    }

    /// The coding it is, or was decoded from; `identity` for the
    /// original.
    #[inline]
    pub fn coding(self) -> &'static str {
        match self {
            Representation::Original => "identity",
            Representation::Sibling(c)
            | Representation::Cached(c)
            | Representation::Decoded(c)
            | Representation::DecodedCopy(c) => c.token(),
            Representation::Delta(d) | Representation::CachedDelta(d) => d.token(),
        }
    }

    /// What its `Content-Encoding` names: `identity` for a body sent
    /// as the original's bytes.
    #[inline]
    pub fn coding_sent(self) -> &'static str {
        match self {
            Representation::Decoded(_) | Representation::DecodedCopy(_) => "identity",
            r => r.coding(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoded_bodies_are_sent_as_identity_and_saved_nothing() {
        for c in Coding::ALL {
            for r in [Representation::Decoded(c), Representation::DecodedCopy(c)] {
                assert_eq!(r.coding(), c.token());
                assert_eq!(r.coding_sent(), "identity");
                assert!(!r.is_coded());
            }
            for r in [Representation::Sibling(c), Representation::Cached(c)] {
                assert_eq!(r.coding_sent(), c.token());
                assert!(r.is_coded());
            }
        }
        assert_eq!(Representation::Original.coding_sent(), "identity");
        assert!(!Representation::Original.is_coded() && !Representation::Original.is_copy());
    }

    #[test]
    fn every_representation_once() {
        let mut seen = std::collections::HashSet::new();
        assert!(Representation::ALL.iter().all(|r| seen.insert(*r)));
        let codings = Coding::ALL.len();
        assert_eq!(seen.len(), 1 + 4 * codings + 2 * DeltaCoding::ALL.len());
    }

    #[test]
    fn copies_are_what_the_cache_holds() {
        assert!(Representation::Cached(Coding::Br).is_copy());
        assert!(Representation::CachedDelta(DeltaCoding::Dcz).is_copy());
        assert!(Representation::DecodedCopy(Coding::Gzip).is_copy());
        assert!(!Representation::Sibling(Coding::Br).is_copy());
        assert!(!Representation::Delta(DeltaCoding::Dcb).is_copy());
        assert!(!Representation::Decoded(Coding::Zstd).is_copy());
    }
}

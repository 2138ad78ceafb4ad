//! What one response of the module was, as the log note names it and the
//! counters count it (`metrics::tally` indexes them in `ALL`'s order): a
//! representation of a file's resource the handler sent
//! (`gdn_core::representation`, the one word from the decision on), a
//! body an output filter coded, or an answer that is no representation.

use gdn_core::coding::{Coding, DeltaCoding};
use gdn_core::representation::Representation;

/// What one response of the module was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A representation the handler sent.
    Sent(Representation),
    /// The original, or a sibling decoded, that an output filter
    /// (mod_deflate, mod_brotli) compressed on its way out.
    OnTheFly(Coding),
    /// A response no file holds (PHP, CGI, a proxy's), coded by the
    /// `GZIP_DISK_NG` output filter.
    Dynamic(Coding),
    /// A dynamic response coded against the client's site dictionary.
    DynamicDelta(DeltaCoding),
    /// 406: no acceptable coding, decompression off.
    NotAcceptable,
    NotFound,
    /// A 500, or a body cut short by a decoding error.
    Error,
    /// OPTIONS, refused methods, path info.
    Other,
}

/// The response outcomes, as the counters index them.
pub const OUTCOMES: usize = 29;

use Representation as R;

impl Outcome {
    /// The original file, sent as it is.
    pub const ORIGINAL: Outcome = Outcome::Sent(R::Original);

    /// Every outcome, in counter order.
    pub const ALL: [Outcome; OUTCOMES] = [
        Outcome::Sent(R::Sibling(Coding::Zstd)),
        Outcome::Sent(R::Sibling(Coding::Br)),
        Outcome::Sent(R::Sibling(Coding::Gzip)),
        Outcome::Sent(R::Delta(DeltaCoding::Dcz)),
        Outcome::Sent(R::Delta(DeltaCoding::Dcb)),
        Outcome::Sent(R::Cached(Coding::Zstd)),
        Outcome::Sent(R::Cached(Coding::Br)),
        Outcome::Sent(R::Cached(Coding::Gzip)),
        Outcome::Sent(R::Decoded(Coding::Zstd)),
        Outcome::Sent(R::Decoded(Coding::Br)),
        Outcome::Sent(R::Decoded(Coding::Gzip)),
        Outcome::Sent(R::DecodedCopy(Coding::Zstd)),
        Outcome::Sent(R::DecodedCopy(Coding::Br)),
        Outcome::Sent(R::DecodedCopy(Coding::Gzip)),
        Outcome::OnTheFly(Coding::Zstd),
        Outcome::OnTheFly(Coding::Br),
        Outcome::OnTheFly(Coding::Gzip),
        Outcome::ORIGINAL,
        Outcome::NotAcceptable,
        Outcome::NotFound,
        Outcome::Error,
        Outcome::Other,
        Outcome::Sent(R::CachedDelta(DeltaCoding::Dcz)),
        Outcome::Sent(R::CachedDelta(DeltaCoding::Dcb)),
        Outcome::Dynamic(Coding::Zstd),
        Outcome::Dynamic(Coding::Br),
        Outcome::Dynamic(Coding::Gzip),
        Outcome::DynamicDelta(DeltaCoding::Dcz),
        Outcome::DynamicDelta(DeltaCoding::Dcb),
    ];

    /// Position in `ALL`.
    #[inline]
    pub fn index(self) -> usize {
        match self {
            Outcome::Sent(r) => match r {
                R::Sibling(c) => c.index(),
                R::Delta(d) => 3 + d.index(),
                R::Cached(c) => 5 + c.index(),
                R::Decoded(c) => 8 + c.index(),
                R::DecodedCopy(c) => 11 + c.index(),
                R::Original => 17,
                R::CachedDelta(d) => 22 + d.index(),
            },
            Outcome::OnTheFly(c) => 14 + c.index(),
            Outcome::NotAcceptable => 18,
            Outcome::NotFound => 19,
            Outcome::Error => 20,
            Outcome::Other => 21,
            Outcome::Dynamic(c) => 24 + c.index(),
            Outcome::DynamicDelta(d) => 27 + d.index(),
        }
    }

    /// The `outcome` label.
    #[inline]
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Sent(r) => match r {
                R::Sibling(_) => "precompressed",
                R::Delta(_) => "delta",
                R::Cached(_) => "cached",
                R::CachedDelta(_) => "cached_delta",
                R::Decoded(_) => "decoded",
                R::DecodedCopy(_) => "decoded_copy",
                R::Original => "original",
            },
            Outcome::OnTheFly(_) => "on_the_fly",
            Outcome::Dynamic(_) => "dynamic",
            Outcome::DynamicDelta(_) => "dynamic_delta",
            Outcome::NotAcceptable => "not_acceptable",
            Outcome::NotFound => "not_found",
            Outcome::Error => "error",
            Outcome::Other => "other",
        }
    }

    /// The `coding` label: the coding sent, or decoded from; `identity`
    /// for the original; none for answers without a representation.
    #[inline]
    pub fn coding(self) -> Option<&'static str> {
        match self {
            Outcome::Sent(r) => Some(r.coding()),
            Outcome::OnTheFly(c) | Outcome::Dynamic(c) => Some(c.token()),
            Outcome::DynamicDelta(d) => Some(d.token()),
            Outcome::NotAcceptable | Outcome::NotFound | Outcome::Error | Outcome::Other => None,
        }
    }

    /// Whether the body is the original in a content coding, so that
    /// what it saved is the original's size less what was sent.
    #[inline]
    pub fn is_coded(self) -> bool {
        match self {
            Outcome::Sent(r) => r.is_coded(),
            Outcome::OnTheFly(_) | Outcome::Dynamic(_) | Outcome::DynamicDelta(_) => true,
            Outcome::NotAcceptable | Outcome::NotFound | Outcome::Error | Outcome::Other => false,
        }
    }

    /// Whether the body is an on-demand copy, one the cache keeps in its
    /// least-recently-used order.
    #[inline]
    pub fn is_copy(self) -> bool {
        matches!(self, Outcome::Sent(r) if r.is_copy())
    }

    /// The coding the body went out in, as `Content-Encoding` names it.
    #[inline]
    pub fn coding_sent(self) -> Option<&'static str> {
        match self {
            Outcome::Sent(r) => Some(r.coding_sent()),
            o => o.coding(),
        }
    }
}

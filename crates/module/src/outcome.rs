//! What one response of the handler was: the responders' word for what
//! they sent, which the walk hands on, the log note names and the
//! counters count (`metrics::tally` indexes them in `ALL`'s order).

use gdn_core::coding::{Coding, DeltaCoding};

/// What one response of the handler was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A sibling sent as it is.
    Precompressed(Coding),
    /// A delta against the client's dictionary.
    Delta(DeltaCoding),
    /// An on-demand copy.
    Cached(Coding),
    /// A delta on demand, against a version the cache kept.
    CachedDelta(DeltaCoding),
    /// A sibling decoded on the fly.
    Decoded(Coding),
    /// A sibling's decoded copy from the on-demand cache.
    DecodedCopy(Coding),
    /// The original, or a sibling decoded, that an output filter
    /// (mod_deflate, mod_brotli) compressed on its way out.
    OnTheFly(Coding),
    /// A response no file holds (PHP, CGI, a proxy's), coded by the
    /// `GZIP_DISK_NG` output filter.
    Dynamic(Coding),
    /// A dynamic response coded against the client's site dictionary.
    DynamicDelta(DeltaCoding),
    /// The original file.
    Original,
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

impl Outcome {
    /// Every outcome, in counter order.
    pub const ALL: [Outcome; OUTCOMES] = [
        Outcome::Precompressed(Coding::Zstd),
        Outcome::Precompressed(Coding::Br),
        Outcome::Precompressed(Coding::Gzip),
        Outcome::Delta(DeltaCoding::Dcz),
        Outcome::Delta(DeltaCoding::Dcb),
        Outcome::Cached(Coding::Zstd),
        Outcome::Cached(Coding::Br),
        Outcome::Cached(Coding::Gzip),
        Outcome::Decoded(Coding::Zstd),
        Outcome::Decoded(Coding::Br),
        Outcome::Decoded(Coding::Gzip),
        Outcome::DecodedCopy(Coding::Zstd),
        Outcome::DecodedCopy(Coding::Br),
        Outcome::DecodedCopy(Coding::Gzip),
        Outcome::OnTheFly(Coding::Zstd),
        Outcome::OnTheFly(Coding::Br),
        Outcome::OnTheFly(Coding::Gzip),
        Outcome::Original,
        Outcome::NotAcceptable,
        Outcome::NotFound,
        Outcome::Error,
        Outcome::Other,
        Outcome::CachedDelta(DeltaCoding::Dcz),
        Outcome::CachedDelta(DeltaCoding::Dcb),
        Outcome::Dynamic(Coding::Zstd),
        Outcome::Dynamic(Coding::Br),
        Outcome::Dynamic(Coding::Gzip),
        Outcome::DynamicDelta(DeltaCoding::Dcz),
        Outcome::DynamicDelta(DeltaCoding::Dcb),
    ];

    /// Position in `ALL`.
    pub fn index(self) -> usize {
        match self {
            Outcome::Precompressed(c) => c.index(),
            Outcome::Delta(d) => 3 + d.index(),
            Outcome::Cached(c) => 5 + c.index(),
            Outcome::Decoded(c) => 8 + c.index(),
            Outcome::DecodedCopy(c) => 11 + c.index(),
            Outcome::OnTheFly(c) => 14 + c.index(),
            Outcome::Original => 17,
            Outcome::NotAcceptable => 18,
            Outcome::NotFound => 19,
            Outcome::Error => 20,
            Outcome::Other => 21,
            Outcome::CachedDelta(d) => 22 + d.index(),
            Outcome::Dynamic(c) => 24 + c.index(),
            Outcome::DynamicDelta(d) => 27 + d.index(),
        }
    }

    /// The `outcome` label.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Precompressed(_) => "precompressed",
            Outcome::Delta(_) => "delta",
            Outcome::Cached(_) => "cached",
            Outcome::CachedDelta(_) => "cached_delta",
            Outcome::Decoded(_) => "decoded",
            Outcome::DecodedCopy(_) => "decoded_copy",
            Outcome::OnTheFly(_) => "on_the_fly",
            Outcome::Dynamic(_) => "dynamic",
            Outcome::DynamicDelta(_) => "dynamic_delta",
            Outcome::Original => "original",
            Outcome::NotAcceptable => "not_acceptable",
            Outcome::NotFound => "not_found",
            Outcome::Error => "error",
            Outcome::Other => "other",
        }
    }

    /// The `coding` label: the coding sent, or decoded from; `identity`
    /// for the original; none for answers without a representation.
    pub fn coding(self) -> Option<&'static str> {
        match self {
            Outcome::Precompressed(c)
            | Outcome::Cached(c)
            | Outcome::OnTheFly(c)
            | Outcome::Dynamic(c)
            | Outcome::Decoded(c)
            | Outcome::DecodedCopy(c) => Some(c.token()),
            Outcome::Delta(d) | Outcome::CachedDelta(d) | Outcome::DynamicDelta(d) => {
                Some(d.token())
            }
            Outcome::Original => Some("identity"),
            _ => None,
        }
    }

    /// Whether the body is the original in a content coding, so that
    /// what it saved is the original's size less what was sent.
    pub fn is_coded(self) -> bool {
        matches!(
            self,
            Outcome::Precompressed(_)
                | Outcome::Delta(_)
                | Outcome::CachedDelta(_)
                | Outcome::Cached(_)
                | Outcome::OnTheFly(_)
                | Outcome::Dynamic(_)
                | Outcome::DynamicDelta(_)
        )
    }

    /// Whether the body is an on-demand copy, one the cache keeps in its
    /// least-recently-used order.
    pub fn is_copy(self) -> bool {
        matches!(
            self,
            Outcome::Cached(_) | Outcome::CachedDelta(_) | Outcome::DecodedCopy(_)
        )
    }

    /// The coding the body went out in, as `Content-Encoding` names it.
    pub fn coding_sent(self) -> Option<&'static str> {
        match self {
            Outcome::Decoded(_) | Outcome::DecodedCopy(_) => Some("identity"),
            o => o.coding(),
        }
    }
}

//! The header plan: which headers a representation goes out with, worked
//! out from what it is alone, without Apache, so each rule is unit-tested
//! here. The senders (`body`, `decompress`) apply it.
//!
//! - The ETag is core's for the file, with a suffix naming what was sent
//!   (`"…-gzip"`, as mod_deflate does): the coding, `identity` for a
//!   decoded body, `-j<n>`/`-jr` after it for padding.
//! - A weak tag refuses ranges, as does a body decoded on the fly (its
//!   bytes are not on disk to cut); a strong coded tag gets `gdn_core`'s
//!   rules for a coded range.
//! - `Repr-Digest` is worked out from the file as it is, per version:
//!   a cache's file, written whole and renamed into place, keys its digest
//!   without the change time; a padded body has none (its bytes differ
//!   per padding); a decoded body has its decoded content's.
//!   `Content-Digest` only where the content is the whole representation.
//! - `Vary: Accept-Encoding` on every answer of a resource with siblings.
//! - The marker header: `:-)` for a coding sent as it is, `:-(` for a body
//!   the module decoded, none for the original.

use crate::memo::digest::Written;
use crate::outcome::Outcome;
use crate::walk::Resolved;
use gdn_core::representation::Representation;
use std::borrow::Cow;
use std::ffi::CStr;

/// Padding spliced around a coded body (BREACH jitter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pad {
    /// A length drawn per response: the bytes differ each time.
    Random,
    /// The keyed length of this file version: the same bytes each time.
    Keyed(u32),
}

/// What a response sends, as its headers depend on it: a
/// representation, and the padding spliced around a coded one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sent {
    pub what: Representation,
    /// BREACH padding, only ever around a sibling or a copy.
    pub pad: Option<Pad>,
}

impl From<Representation> for Sent {
    fn from(what: Representation) -> Sent {
        Sent { what, pad: None }
    }
}

/// The ETag's suffix, after core's tag for the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tag {
    /// What was sent: a coding's token, `identity`, or empty.
    pub token: &'static str,
    pub pad: Option<Pad>,
}

impl Tag {
    /// The suffix as it goes inside the quotes: `gzip`, `gzip-j17`,
    /// `gzip-jr`; allocated only when padded.
    pub fn suffix(self) -> Cow<'static, str> {
        match self.pad {
            None => Cow::Borrowed(self.token),
            Some(Pad::Random) => Cow::Owned(format!("{}-jr", self.token)),
            Some(Pad::Keyed(n)) => Cow::Owned(format!("{}-j{n}", self.token)),
        }
    }

    /// Weak where the bytes differ per response.
    pub fn weak(self) -> bool {
        self.pad == Some(Pad::Random)
    }
}

/// Whether a `Range` is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ranges {
    /// `Accept-Ranges: bytes`; `coded`: a coded representation's ranges,
    /// checked by `gdn_core::range` first.
    Offered { coded: bool },
    /// `Accept-Ranges: none`, and the request's `Range` dropped.
    Refused,
}

/// Where `Repr-Digest` comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Digest {
    /// The file sent, as written.
    File(Written),
    /// The decoded content, learned by a decode to its end.
    Decoded,
    /// None: the bytes differ per padding.
    Omitted,
}

/// The marker header's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// A coding sent as it is: `:-)`.
    AsIs,
    /// A body the module decoded: `:-(`.
    Decoded,
}

impl Marker {
    pub fn value(self) -> &'static CStr {
        match self {
            Marker::AsIs => c":-)",
            Marker::Decoded => c":-(",
        }
    }
}

/// The headers a representation goes out with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// `Content-Encoding`.
    pub encoding: Option<&'static CStr>,
    pub tag: Tag,
    pub ranges: Ranges,
    pub digest: Digest,
    pub marker: Option<Marker>,
}

/// The plan for what `s` sends.
#[inline]
pub fn plan(s: impl Into<Sent>) -> Plan {
    let s: Sent = s.into();
    let written = |copy| match copy {
        true => Written::Whole,
        false => Written::InPlace,
    };
    use Representation as R;
    let (encoding, tag, digest, marker) = match s.what {
        R::Original => (None, tag("", None), Digest::File(Written::InPlace), None),
        R::Sibling(coding) | R::Cached(coding) => (
            Some(coding.c_token()),
            tag(coding.token(), s.pad),
            match s.pad {
                Some(_) => Digest::Omitted,
                None => Digest::File(written(s.what.is_copy())),
            },
            Some(Marker::AsIs),
        ),
        R::Delta(coding) | R::CachedDelta(coding) => (
            Some(coding.c_token()),
            tag(coding.token(), None),
            Digest::File(written(s.what.is_copy())),
            Some(Marker::AsIs),
        ),
        R::Decoded(_) => (
            None,
            tag("identity", None),
            Digest::Decoded,
            Some(Marker::Decoded),
        ),
        R::DecodedCopy(_) => (
            None,
            tag("identity", None),
            Digest::File(Written::Whole),
            Some(Marker::Decoded),
        ),
    };
    let ranges = match s.what {
        _ if tag.weak() => Ranges::Refused,
        R::Decoded(_) => Ranges::Refused,
        _ => Ranges::Offered {
            coded: !tag.token.is_empty(),
        },
    };
    Plan {
        encoding,
        tag,
        ranges,
        digest,
        marker,
    }
}

fn tag(token: &'static str, pad: Option<Pad>) -> Tag {
    Tag { token, pad }
}

impl Sent {
    /// What the counters and the log note call it.
    pub fn outcome(self) -> Outcome {
        Outcome::Sent(self.what)
    }
}

/// `Content-Digest` goes only with the whole representation: a 200 with
/// a body, no range asked, not HEAD, no 304/412.
pub fn content_digest(range: bool, head: bool, conditions_met: bool) -> bool {
    !range && !head && conditions_met
}

/// Whether an answer carries `Vary: Accept-Encoding`: every answer that
/// depends on the codings the client accepts (a coding, a delta, a decode,
/// 406, 503 for decodes), and the original where the resource has
/// siblings or copies; not a 404, a 500 the error filter marks, OPTIONS
/// or a refused method.
pub fn vary<S, C>(r: &Resolved<'_, S, C>) -> bool {
    match r {
        Resolved::Original { vary } => *vary,
        Resolved::NotAcceptable(_) | Resolved::Busy => true,
        // A coding, a delta or a decode: each is chosen by the codings.
        r => r.representation().is_some(),
    }
}

#[cfg(test)]
mod tests;

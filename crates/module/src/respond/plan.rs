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
use gdn_core::coding::{Coding, DeltaCoding};
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

/// What a response sends, as its headers depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// The original file.
    Original,
    /// The original in coding `coding`: a sibling, or an on-demand copy
    /// (`copy`), padded or not.
    Coded {
        coding: Coding,
        copy: bool,
        pad: Option<Pad>,
    },
    /// A delta against the client's dictionary, published or a copy.
    Delta { coding: DeltaCoding, copy: bool },
    /// A sibling in `Coding` decoded on the fly.
    Decoded(Coding),
    /// A sibling in `Coding` decoded, from the on-demand cache.
    DecodedCopy(Coding),
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
pub fn plan(s: Sent) -> Plan {
    let written = |copy| match copy {
        true => Written::Whole,
        false => Written::InPlace,
    };
    let (encoding, tag, digest, marker) = match s {
        Sent::Original => (None, tag("", None), Digest::File(Written::InPlace), None),
        Sent::Coded { coding, copy, pad } => (
            Some(coding.c_token()),
            tag(coding.token(), pad),
            match pad {
                Some(_) => Digest::Omitted,
                None => Digest::File(written(copy)),
            },
            Some(Marker::AsIs),
        ),
        Sent::Delta { coding, copy } => (
            Some(coding.c_token()),
            tag(coding.token(), None),
            Digest::File(written(copy)),
            Some(Marker::AsIs),
        ),
        Sent::Decoded(_) => (
            None,
            tag("identity", None),
            Digest::Decoded,
            Some(Marker::Decoded),
        ),
        Sent::DecodedCopy(_) => (
            None,
            tag("identity", None),
            Digest::File(Written::Whole),
            Some(Marker::Decoded),
        ),
    };
    let ranges = match s {
        _ if tag.weak() => Ranges::Refused,
        Sent::Decoded(_) => Ranges::Refused,
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
        match self {
            Sent::Original => Outcome::Original,
            Sent::Coded { coding, copy, .. } => match copy {
                true => Outcome::Cached(coding),
                false => Outcome::Precompressed(coding),
            },
            Sent::Delta { coding, copy } => match copy {
                true => Outcome::CachedDelta(coding),
                false => Outcome::Delta(coding),
            },
            Sent::Decoded(c) => Outcome::Decoded(c),
            Sent::DecodedCopy(c) => Outcome::DecodedCopy(c),
        }
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
        Resolved::Delta(..)
        | Resolved::CachedDelta(..)
        | Resolved::Sibling(..)
        | Resolved::Cached(..)
        | Resolved::Decode(..)
        | Resolved::DecodedCopy(..)
        | Resolved::NotAcceptable(_)
        | Resolved::Busy => true,
        Resolved::NoneDecodable { .. }
        | Resolved::NotFound
        | Resolved::PathInfo
        | Resolved::Options
        | Resolved::NotImplemented
        | Resolved::MethodNotAllowed => false,
    }
}

#[cfg(test)]
mod tests;

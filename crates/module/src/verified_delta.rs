//! Whether a published delta is its page's representation. A delta
//! (RFC 9842) beside an existing original, against a dictionary the
//! on-demand cache keeps (a version this server served) or the publish
//! tool's store of the tree holds (`delta_dictionary`; either checked
//! against its SHA-256 when read), is decoded against that
//! dictionary and compared with the original's current bytes, once per
//! version of the delta and of the original for the whole server
//! (`memo::verified`, and each process's `memo::delta`). One that decodes
//! to them carries exactly what the page's own request was allowed, so
//! its own name's rules are not asked (`lookup::Route::Verified`: no twin
//! request, which a rate limiter would count as the client's). One that
//! does not is never sent in that version. Where no source holds the
//! dictionary, or the files are larger than a request checks, the delta is
//! judged under its own name, as a sibling without an original is.

use crate::delta_dictionary::{self, Sources};
use crate::lookup::{self, Sibling};
use crate::memo::delta::{self as memo, DeltaVersion, Represents};
use crate::memo::verdict::Why;
use crate::memo::verified::{self, Found};
use gdn_core::coding::DeltaCoding;
use gdn_core::decode::verdict::OriginalDigest;
use gdn_core::delta_codec;
use gdn_core::dictionary::Hash;
use gdn_httpd::{FileVersion, Level, Request};
use std::ffi::CStr;

/// Largest delta decoded in the request that first meets it.
const DELTA_MAX: u64 = 512 << 10;

/// Largest original (and dictionary) such a check reads.
const ORIGINAL_MAX: u64 = 16 << 20;

/// How long a dictionary no source held (or a check that could not read
/// a file) is taken as still missing: its delta is asked under its own
/// name meanwhile, rather than every request reading the store again (a
/// catalogued file rewritten in place would otherwise be read and hashed
/// whole by each).
const LOOK_AGAIN_US: i64 = 10_000_000;

/// What is known of a published delta against its page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It decodes to the page: sent without asking its own name.
    Page,
    /// It does not: not sent.
    Not,
    /// Not checked (no dictionary found, too large, a read that failed):
    /// its own name's rules decide.
    Unchecked,
}

/// What the published delta `s` (coding `d`, named for dictionary `h`)
/// is against the request's file at `original`: from the memos, or
/// checked now.
pub fn judge(
    req: &Request<'_>,
    sources: Sources<'_>,
    d: DeltaCoding,
    h: &Hash,
    s: &Sibling<'_>,
    original: &CStr,
) -> Verdict {
    let page = req.finfo();
    if s.info.size() > DELTA_MAX || page.size() > ORIGINAL_MAX {
        return Verdict::Unchecked;
    }
    let key: DeltaVersion = (s.info.version(), d, *h);
    let page = page.version();
    if let Some(r) = memo::represents(&key, page) {
        return verdict(r);
    }
    let r = match verified::found(&key, Some(page)) {
        Some(Found::Whole) => Represents::Page,
        Some(Found::Broken(_)) => Represents::Not,
        Some(Found::PastBound) | None => {
            let now = req.request_time_us();
            let lately = memo::unfound_at(&key, page).is_some_and(|t| now - t < LOOK_AGAIN_US);
            if lately {
                return Verdict::Unchecked;
            }
            match check(&Published { d, h, s }, req, sources, original) {
                Some(r) => {
                    shared(&key, page, r);
                    tell(req, s.path, r);
                    r
                }
                None => {
                    memo::put_unfound(key, page, now);
                    return Verdict::Unchecked;
                }
            }
        }
    };
    memo::put_represents(key, page, r);
    verdict(r)
}

fn verdict(r: Represents) -> Verdict {
    match r {
        Represents::Page => Verdict::Page,
        Represents::Not => Verdict::Not,
    }
}

fn shared(key: &DeltaVersion, page: FileVersion, r: Represents) {
    let f = match r {
        Represents::Page => Found::Whole,
        Represents::Not => Found::Broken(Why::Differs),
    };
    verified::put(key, Some(page), f);
}

/// A published delta met: its coding, the dictionary it is named for,
/// and its file.
struct Published<'a, 'r> {
    d: DeltaCoding,
    h: &'a Hash,
    s: &'a Sibling<'r>,
}

/// Decodes the delta against its dictionary and compares it with
/// the original; `None` where either cannot be read as it must be.
fn check(
    p: &Published<'_, '_>,
    req: &Request<'_>,
    sources: Sources<'_>,
    original: &CStr,
) -> Option<Represents> {
    let (d, h, s) = (p.d, p.h, p.s);
    let dict = delta_dictionary::find(req, sources, h, original, ORIGINAL_MAX)?;
    let o = lookup::open_as_allowed(req, original).ok()?;
    if o.info().version() != req.finfo().version() {
        return None;
    }
    let digest = OriginalDigest::of(o.reader(0)).ok()?;
    let delta = lookup::open_as_allowed(req, s.path).ok()?;
    if delta.info().version() != s.info.version() {
        return None;
    }
    Some(
        match delta_codec::decodes_to(d, &dict, delta.reader(0), &digest) {
            Ok(true) => Represents::Page,
            Ok(false) | Err(_) => Represents::Not,
        },
    )
}

/// Says what this process found: once per delta version, as it found it.
fn tell(req: &Request<'_>, path: &CStr, r: Represents) {
    match r {
        Represents::Page => req.log_with(Level::Trace1, 0, || {
            format!(
                "published delta decodes to its page against its dictionary: {}",
                path.to_string_lossy()
            )
        }),
        Represents::Not => req.log(
            Level::Warn,
            0,
            &format!(
                "published delta {} does not decode to its page against the dictionary it \
                 names; not sent in this version (`gzip-disk-ng compress` with \
                 `--delta-versions` makes it again)",
                path.to_string_lossy()
            ),
        ),
    }
}

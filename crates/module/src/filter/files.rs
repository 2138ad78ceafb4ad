//! A static file's response that reaches the filter (the filter on by
//! type for a whole site, core's handler sending the file): where
//! on-demand compression is on, coded once by the compressor and sent
//! from its cache from then on, at what a cached copy costs, instead of
//! coded again on every request.
//!
//! The copy stands in for the file's bytes only when the brigade provably
//! holds them: one file bucket, the request's own file from its first
//! byte to its end, then the end of the response. Whatever changed the
//! bytes on the way (mod_include, mod_substitute) leaves other buckets,
//! and the body is coded as it passes. The copy is bound to the SHA-256
//! of the version the bucket's descriptor is (`Active::source`). Under
//! `GzipDiskNgJitter` the copy is padded as the handler pads a sibling
//! (its padding planned by `respond::plan_jitter`). A client that holds
//! the site dictionary gets the cache's delta of the file against it,
//! made where the page may join that dictionary (an HTML page anyone may
//! GET), as the handler's on-demand deltas are.

use super::delta::Dictionary;
use super::{choice, headers};
use crate::config::Settings;
use crate::metrics::answered;
use crate::metrics::counters;
use crate::metrics::tally::Counted;
use crate::ondemand::ask::{self, OnDemandDeltas, ToAsk};
use crate::ondemand::cache::{self, Active, CachedCopy};
use crate::outcome::Outcome;
use crate::respond;
use gdn_compressor::job::CodingSet;
use gdn_compressor::key::Kind;
use gdn_core::coding::Coding;
use gdn_core::jitter;
use gdn_core::representation::Representation;
use gdn_httpd::{apr_status_t, File, Filter, Input, Level, Request};
use std::ffi::CStr;

/// Sends the cache's copy of the file the response holds, in the
/// stream's coding or as its delta against the site dictionary the
/// client holds; `None` leaves the body to be coded as it passes (and
/// asks the compressor for the copy where it is missing). Under
/// `GzipDiskNgJitter` steps aside for a delta, and for a copy that cannot
/// be padded: the body is then padded as it passes.
pub(super) fn take_over(
    f: &mut Filter<'_>,
    input: &mut Input,
    coding: Coding,
    delta: Option<&Dictionary>,
    settings: &Settings<'_>,
) -> Option<apr_status_t> {
    let dir = settings.dir;
    if !dir.on_demand() || (delta.is_some() && dir.jitter().is_some()) {
        return None;
    }
    let req = f.request();
    let cache = cache::active()?;
    let file = input.whole_file(req)?;
    let filename = req.filename()?;
    let size = file.info().size();
    if !req.finfo().same_file(file.info()) || !cache::compressible(filename, size) {
        return None;
    }
    let kind = match delta {
        Some(d) => Kind::Delta(d.coding, d.hash),
        None => Kind::Coded(coding),
    };
    let Some(source) = cache.source(req, file.info()) else {
        ask_for(req, cache, settings, (filename, &file), kind);
        return None;
    };
    match cache.find(req, &source, kind) {
        CachedCopy::Ready(path, copy) => {
            let st = send_copy(f, input, (coding, delta), settings, (path, &copy), size)?;
            let req = f.request();
            ask::sent(req, cache, Some((*source.source(), kind)));
            if site_scope(req, settings).is_some() {
                crate::site::judge(req, cache, settings.site_period);
            }
            Some(st)
        }
        CachedCopy::NotWorth => None,
        CachedCopy::Missing => {
            ask_for(req, cache, settings, (filename, &file), kind);
            None
        }
    }
}

/// Sends the cache's `copy`: padded under `GzipDiskNgJitter`; a delta
/// once its header names the client's dictionary. `None`: not sent.
fn send_copy<'r>(
    f: &mut Filter<'r>,
    input: &mut Input,
    (coding, delta): (Coding, Option<&Dictionary>),
    settings: &Settings<'_>,
    (path, copy): (&CStr, &File<'r>),
    original: u64,
) -> Option<apr_status_t> {
    let req = f.request();
    let splice = match (settings.dir.jitter(), delta) {
        (Some(j), None) => {
            let n = copy.info().size();
            let p = respond::plan_jitter(req, settings.secret, coding, copy, path, n, j)?;
            Some(p.splice)
        }
        (_, Some(d)) if !respond::delta::names(req, d.coding, &d.hash, copy, path) => return None,
        _ => None,
    };
    let out = CopyToSend {
        copy,
        splice: splice.as_ref(),
        what: match delta {
            Some(d) => Representation::CachedDelta(d.coding),
            None => Representation::Cached(coding),
        },
    };
    let token = choice::suffix(coding, delta);
    Some(send(f, input, token, settings, out, original))
}

/// Asks the compressor for the file's copy of `kind`, and, as the
/// handler's on-demand copies do, its delta against the site dictionary:
/// the page joins that dictionary where it may (an HTML page anyone may
/// GET: `ask::copies`), and a client that holds it gets the delta.
fn ask_for(
    req: &Request<'_>,
    cache: &Active,
    settings: &Settings<'_>,
    (filename, file): (&CStr, &File<'_>),
    kind: Kind,
) {
    let v = cache::version_of(file.info());
    let asked = match kind {
        Kind::Coded(c) => ToAsk {
            codings: CodingSet::empty().with(c),
            ..ToAsk::default()
        },
        _ => ToAsk {
            delta: true,
            ..ToAsk::default()
        },
    };
    if ask::copies(req, cache, filename, v, &asked, site_scope(req, settings)) {
        req.log_with(Level::Debug, 0, || {
            format!("{}: copies asked for", filename.to_string_lossy())
        });
    }
}

/// The site dictionary's part of the handler's deltas on demand, where
/// the page may join it (the filter makes no deltas against a file's own
/// or its group's versions).
fn site_scope<'r>(req: &Request<'r>, settings: &Settings<'r>) -> Option<OnDemandDeltas<'r>> {
    OnDemandDeltas::of(req, settings)
        .filter(|d| d.site)
        .map(|d| OnDemandDeltas {
            versions: 0,
            group: None,
            ..d
        })
}

/// The copy to send, and the padding spliced into it.
struct CopyToSend<'a, 'r> {
    copy: &'a File<'r>,
    splice: Option<&'a jitter::Splice>,
    what: Representation,
}

/// The copy in place of the file: the coded response's headers with the
/// copy's length, its file bucket (the padding around it), then the end.
fn send<'r>(
    f: &mut Filter<'r>,
    input: &mut Input,
    token: &'static CStr,
    settings: &Settings<'_>,
    out: CopyToSend<'_, 'r>,
    original: u64,
) -> apr_status_t {
    let req = f.request();
    let size = out.copy.info().size();
    let sent = out.splice.map_or(size, jitter::Splice::len);
    headers::coded(req, token, settings.dir);
    req.set_content_length(sent);
    record(req, out.what, sent, original);
    input.drop_first();
    match out.splice {
        Some(sp) => {
            if !sp.head.is_empty() {
                f.send(&sp.head);
            }
            f.send_file(out.copy, sp.start, sp.end - sp.start);
            if !sp.tail.is_empty() {
                f.send(&sp.tail);
            }
        }
        None => f.send_file(out.copy, 0, size),
    }
    f.send_first_of(input);
    f.remove();
    f.pass()
}

/// Counts the response as a cached copy sent, and notes it for the log,
/// unless the module's handler sent the file (it counts what it sent).
fn record(req: &Request<'_>, what: Representation, sent: u64, original: u64) {
    if req.handler_is(crate::handler::name::HANDLER) {
        return;
    }
    let outcome = Outcome::Sent(what);
    if let Some(n) = crate::answer::note(outcome, false) {
        req.add_note(answered::NOTE, n);
    }
    req.add_note_numbers([
        (answered::NOTE_ORIGINAL, original),
        (answered::NOTE_RATIO, sent * 100 / original.max(1)),
    ]);
    if counters::counting() {
        counters::response(Counted {
            outcome,
            sent,
            uncompressed: Some(original),
        });
    }
}

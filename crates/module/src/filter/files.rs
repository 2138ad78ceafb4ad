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
//! (its padding planned by `respond::plan_jitter`).

use super::headers;
use crate::config::Settings;
use crate::metrics::answered;
use crate::metrics::counters;
use crate::metrics::tally::Counted;
use crate::ondemand::ask;
use crate::ondemand::cache::{self, Active, CachedCopy};
use crate::outcome::Outcome;
use crate::respond;
use gdn_compressor::job::CodingSet;
use gdn_compressor::key::Kind;
use gdn_core::coding::Coding;
use gdn_core::jitter;
use gdn_core::representation::Representation;
use gdn_httpd::{apr_status_t, File, Filter, Input, Level, Request};

/// Sends the cache's copy of the file the response holds, in the
/// stream's coding; `None` leaves the body to be coded as it passes
/// (and asks the compressor for the copy where it is missing). Steps
/// aside for a delta (made per client), and under `GzipDiskNgJitter` for
/// a copy that cannot be padded (the body is then padded as it passes).
pub(super) fn take_over(
    f: &mut Filter<'_>,
    input: &mut Input,
    coding: Coding,
    delta: bool,
    settings: &Settings<'_>,
) -> Option<apr_status_t> {
    let dir = settings.dir;
    if delta || !dir.on_demand() {
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
    let kind = Kind::Coded(coding);
    let copy = cache.source(req, file.info()).map(|source| {
        let found = cache.find(req, &source, kind);
        (source, found)
    });
    match copy {
        Some((source, CachedCopy::Ready(path, copy))) => {
            let splice = match dir.jitter() {
                Some(j) => {
                    let n = copy.info().size();
                    let p = respond::plan_jitter(req, settings.secret, coding, &copy, path, n, j)?;
                    Some(p.splice)
                }
                None => None,
            };
            ask::sent(req, cache, Some((*source.source(), kind)));
            let out = Outgoing {
                copy: &copy,
                splice: splice.as_ref(),
            };
            Some(send(f, input, coding, settings, out, size))
        }
        Some((_, CachedCopy::NotWorth)) => None,
        Some((_, CachedCopy::Missing)) | None => {
            ask_for(req, cache, filename, &file, coding);
            None
        }
    }
}

/// Asks the compressor for the `coding` copy of the file.
fn ask_for(
    req: &Request<'_>,
    cache: &Active,
    filename: &std::ffi::CStr,
    file: &File<'_>,
    coding: Coding,
) {
    let v = cache::version_of(file.info());
    let codings = CodingSet::empty().with(coding);
    if cache.queue_compress(filename, v, codings, None, req.request_time_us()) {
        req.log_with(Level::Debug, 0, || {
            format!(
                "{}: {} copy asked for",
                filename.to_string_lossy(),
                coding.token()
            )
        });
    }
}

/// The copy to send, and the padding spliced into it.
struct Outgoing<'a, 'r> {
    copy: &'a File<'r>,
    splice: Option<&'a jitter::Splice>,
}

/// The copy in place of the file: the coded response's headers with the
/// copy's length, its file bucket (the padding around it), then the end.
fn send<'r>(
    f: &mut Filter<'r>,
    input: &mut Input,
    coding: Coding,
    settings: &Settings<'_>,
    out: Outgoing<'_, 'r>,
    original: u64,
) -> apr_status_t {
    let req = f.request();
    let size = out.copy.info().size();
    let sent = out.splice.map_or(size, jitter::Splice::len);
    headers::coded(req, coding.c_token(), settings.dir);
    req.set_content_length(sent);
    record(req, coding, sent, original);
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
fn record(req: &Request<'_>, coding: Coding, sent: u64, original: u64) {
    if req.handler_is(crate::handler::name::HANDLER) {
        return;
    }
    let outcome = Outcome::Sent(Representation::Cached(coding));
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

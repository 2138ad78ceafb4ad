//! The body senders: a file goes out as core's handler sends a static
//! file (validators, conditionals, ranges through the byterange filter,
//! a file bucket), with the headers its plan (`plan`) says; the original,
//! a sibling, a delta and an on-demand copy each go out this way.

use super::inspect;
use super::judge;
use super::knobs;
use super::padding::plan_jitter;
use super::plan::{self, Digest, Marker, Pad, Plan, Ranges, Sent};
use super::responder::Responder;
use crate::answer::{Answer, Skip};
use crate::config::{self, UseAsDictionary};
use crate::lookup::{self, NotOpened, Sibling};
use crate::memo;
use crate::memo::digest::Written;
use gdn_core::coding::Coding;
use gdn_core::digest::{self, Algorithm, FieldValue};
use gdn_core::jitter;
use gdn_core::range::CodedRange;
use gdn_core::representation::Representation;
use gdn_httpd::{self, File, FileKind, Finfo, Level, Request, Status};
use std::borrow::Cow;
use std::ffi::CStr;

/// The marker header, where configured (`plan::Marker`).
pub(super) fn set_marker(a: &Responder<'_, '_>, m: Marker) {
    if !knobs::marker() {
        return;
    }
    mark(a.req, a.settings.dir, m.value());
}

/// Writes the marker header `dir` configures, if any, with `value`.
pub(crate) fn mark(req: &Request<'_>, dir: &crate::config::DirConfig, value: &'static CStr) {
    match dir.status_header() {
        Some(crate::config::DEFAULT_STATUS_HEADER) => {
            req.set_header_static(c"Mod-Gzip-Disk-Ng", value)
        }
        Some(name) => req.set_header(name, value),
        None => {}
    }
}

/// Sends a sibling as core sends a static file: a file bucket (sendfile or
/// mmap), validators, conditionals, and ranges through the byterange filter.
/// With jitter on, the padding is spliced in around the file bucket. A
/// sibling version judged broken, one browsers cannot decode, and one of
/// an existing original not yet decoded to its bytes give way (`judge`:
/// one memo lookup once judged).
pub(super) fn send_sibling<'r>(
    a: &Responder<'_, 'r>,
    c: Coding,
    s: &Sibling<'r>,
) -> Result<Answer, Skip<'r>> {
    let file = a.open(Some(c), s)?;
    if file.info().kind() != FileKind::Regular {
        return Err(Skip::Refused);
    }
    match judge::judged(a, c, &file, s.path) {
        memo::verdict::Judged::Whole => {}
        // A sibling of an existing original is that page only once it is
        // known to decode to the original's current bytes: until its
        // check ends, the next representation answers.
        memo::verdict::Judged::Cheap if a.original().is_some() => return Err(Skip::Refused),
        memo::verdict::Judged::Cheap => {}
        memo::verdict::Judged::Refused => {
            inspect::refused_by_browsers(a.req, c, &file, s.path);
            return Err(Skip::Refused);
        }
        memo::verdict::Judged::Broken { .. } => return Err(Skip::Broken(c)),
    }
    Ok(send_coded(a, c, &file, s.path, Representation::Sibling))
}

/// Sends `file`, holding the original in coding `c` (`what`: a sibling,
/// or an on-demand copy), as core sends a static file, with any jitter
/// spliced in.
pub(super) fn send_coded(
    a: &Responder<'_, '_>,
    c: Coding,
    file: &File<'_>,
    path: &CStr,
    what: impl Fn(Coding) -> Representation,
) -> Answer {
    let size = file.info().size();
    let padded = a
        .settings
        .dir
        .jitter()
        .and_then(|j| plan_jitter(a.req, a.settings.secret, c, file, path, size, j));
    let pad = padded.as_ref().map(|p| match p.random {
        true => Pad::Random,
        false => Pad::Keyed(p.pad),
    });
    let sent = Sent { what: what(c), pad };
    let splice = padded.as_ref().map(|p| &p.splice);
    send_file(a, Outgoing::of(file, path, sent).spliced(splice))
}

/// A file to send as one representation of the resource.
pub(super) struct Outgoing<'a, 'r> {
    file: &'a File<'r>,
    /// The path its ETag is made from.
    path: &'a CStr,
    /// The file whose validators it carries, where not its own: a
    /// decoded copy has its sibling's.
    validators_of: Option<&'a Finfo>,
    sent: Sent,
    /// The padding spliced in around the file, with jitter on.
    splice: Option<&'a jitter::Splice>,
}

impl<'a, 'r> Outgoing<'a, 'r> {
    /// `file`, at `path`, sending `sent`.
    pub(super) fn of(file: &'a File<'r>, path: &'a CStr, sent: Sent) -> Self {
        Outgoing {
            file,
            path,
            validators_of: None,
            sent,
            splice: None,
        }
    }

    /// The representation carrying the validators of `info`.
    pub(super) fn validators_of(self, info: &'a Finfo) -> Self {
        Outgoing {
            validators_of: Some(info),
            ..self
        }
    }

    fn spliced(self, splice: Option<&'a jitter::Splice>) -> Self {
        Outgoing { splice, ..self }
    }
}

/// Sends a file as core sends a static file: the headers its plan says,
/// the dictionary offer, then the body (or 304/412) and EOS.
pub(super) fn send_file(a: &Responder<'_, '_>, r: Outgoing<'_, '_>) -> Answer {
    let req = a.req;
    let plan = plan::plan(r.sent);
    let size = r.file.info().size();
    let len = r.splice.map_or(size, jitter::Splice::len);
    if let Some(token) = plan.encoding {
        req.set_content_encoding(token);
        // Their stepping aside cost 7 % of a request (bench/steps.sh).
        req.skip_compressors();
    }
    if static_headers(req, &r, &plan, len) && req.meets_conditions() == Status::OK {
        return Answer::other(Status::RANGE_NOT_SATISFIABLE);
    }
    if let Digest::File(written) = plan.digest {
        integrity_fields(req, r.file, written);
    }
    if let Some(m) = plan.marker {
        set_marker(a, m);
    }
    offer_as_dictionary(a);
    if let Some(link) = a.link {
        req.add_header_kept(c"Link", link);
    }
    let status = finish_file(req, r.file, size, r.splice);
    Answer::new(status, r.sent.outcome(), len)
}

/// `Use-As-Dictionary` where `GzipDiskNgUseAsDictionary` is on, so a
/// browser keeps this response to decode later versions against. httpd
/// drops the header from 304s itself.
pub(super) fn offer_as_dictionary(a: &Responder<'_, '_>) {
    let req = a.req;
    let value = match a.settings.dir.use_as_dictionary() {
        Some(UseAsDictionary::Header { value, .. }) => Cow::Borrowed(value.as_str()),
        Some(UseAsDictionary::OwnPath { id }) => {
            let pattern = req
                .raw_path()
                .and_then(|p| std::str::from_utf8(p).ok())
                .map(config::literal_url_pattern);
            match pattern.and_then(|p| config::use_as_dictionary_header(&p, id.as_deref())) {
                Some(v) => Cow::Owned(v),
                None => return,
            }
        }
        _ => return,
    };
    req.set_header_value(c"Use-As-Dictionary", value.as_bytes());
}

/// Sends the module's own file `file` (a site dictionary) with the strong
/// `etag` as core sends a static file: validators, 304/412, ranges, HEAD.
pub fn send_static(req: &Request<'_>, file: &File<'_>, etag: &str) -> Status {
    let size = file.info().size();
    req.set_last_modified(file.info());
    req.set_header_value(c"ETag", etag);
    req.set_accept_ranges();
    req.set_content_length(size);
    integrity_fields(req, file, Written::Whole);
    finish_file(req, file, size, None)
}

/// RFC 9530: `Repr-Digest`, the digest of the representation (`file`,
/// sent as it is), with the algorithm the client's `Want-Repr-Digest`
/// prefers (SHA-256 without one), on 200, 206, 304 and HEAD alike; and
/// `Content-Digest`, where the client's `Want-Content-Digest` asks for
/// it and the content is the whole representation (a 200 with a body).
/// Worked out once per file version (`memo::digest`).
fn integrity_fields(req: &Request<'_>, file: &File<'_>, written: Written) {
    integrity_fields_of(req, |a| memo::digest::of_file(file, a, written));
}

/// The integrity fields with the digests `value` knows; the algorithm
/// `Repr-Digest` wants where `value` does not know it yet.
pub(super) fn integrity_fields_of(
    req: &Request<'_>,
    value: impl Fn(Algorithm) -> Option<FieldValue>,
) -> Option<Algorithm> {
    if !knobs::digests() {
        return None;
    }
    let wanted = |field: &CStr| req.header_in(field).map(digest::preferred);
    let repr = wanted(c"Want-Repr-Digest").unwrap_or(Some(Algorithm::Sha256))?;
    let unknown = match value(repr) {
        Some(v) => {
            req.set_header_value(c"Repr-Digest", v.as_bytes());
            None
        }
        None => Some(repr),
    };
    let Some(Some(a)) = wanted(c"Want-Content-Digest") else {
        return unknown;
    };
    let whole = plan::content_digest(
        req.header_in(c"Range").is_some(),
        req.header_only(),
        req.meets_conditions() == Status::OK,
    );
    if let Some(v) = value(a).filter(|_| whole) {
        req.set_header_value(c"Content-Digest", v.as_bytes());
    }
    unknown
}

/// The headers core's handler sets for a static file, for `r` sent as
/// `len` bytes: Last-Modified, ETag, Accept-Ranges, Content-Length, as
/// `plan` has them. True where a coded representation's range cannot be
/// satisfied.
fn static_headers(req: &Request<'_>, r: &Outgoing<'_, '_>, plan: &Plan, len: u64) -> bool {
    let (suffix, weak) = (plan.tag.suffix(), plan.tag.weak());
    match r.validators_of {
        None => memo::validators::set(req, r.file.info(), Some(r.file), r.path, &suffix, weak),
        Some(info) => memo::validators::set(req, info, None, r.path, &suffix, weak),
    }
    let unsatisfiable = match plan.ranges {
        Ranges::Refused => {
            refuse_ranges(req);
            false
        }
        Ranges::Offered { coded } => {
            req.set_accept_ranges();
            coded && coded_range(req, len)
        }
    };
    req.set_content_length(len);
    unsatisfiable
}

/// `Accept-Ranges: none`, and the request's `Range` dropped, so the
/// byterange filter sends the whole body.
pub(super) fn refuse_ranges(req: &Request<'_>) {
    req.set_header("Accept-Ranges", c"none");
    req.unset_header_in(c"Range");
}

/// A `Range` of a coded representation, as `gdn_core::range` decides:
/// left to Apache's byterange filter, dropped (the whole representation,
/// 200), or unsatisfiable (true): a 416 that says the length, as RFC 9110
/// asks, which the responder answers itself (the byterange filter's own
/// 416 has no `Content-Range`).
fn coded_range(req: &Request<'_>, len: u64) -> bool {
    let range = req.header_in(c"Range");
    if range.is_none() {
        return false;
    }
    let etag = req.header_out(c"ETag").unwrap_or_default();
    match gdn_core::range::coded_range(range, req.header_in(c"If-Range"), etag, len) {
        CodedRange::Honour => false,
        CodedRange::Whole => {
            req.unset_header_in(c"Range");
            false
        }
        CodedRange::Unsatisfiable => {
            req.set_error_header_value(c"Content-Range", &format!("bytes */{len}"));
            true
        }
    }
}

/// Ends a file response as core does: 304/412 from the validators already
/// set, else the file (with any jitter framing around it), then EOS.
fn finish_file(
    req: &Request<'_>,
    file: &File<'_>,
    size: u64,
    splice: Option<&jitter::Splice>,
) -> Status {
    let bb = req.brigade();
    let cond = req.meets_conditions();
    if cond != Status::OK {
        req.set_status(cond);
    } else if let Some(sp) = splice {
        if !sp.head.is_empty() {
            bb.heap(&sp.head);
        }
        file_body(req, &bb, file, sp.start, sp.end - sp.start);
        if !sp.tail.is_empty() {
            bb.heap(&sp.tail);
        }
    } else {
        file_body(req, &bb, file, 0, size);
    }
    bb.eos();
    let st = bb.pass();
    bb.cleanup();
    pass_status(req, st)
}

/// Part of a file as the body: a file bucket (sendfile, or mmap as core
/// would use it), or, where sendfile is off and the part small, one read
/// into the request pool. Not over HTTP/2, whose streams hand file buckets
/// to the connection as they are but must copy memory ones
/// (`bench/run.sh` measured the read at half core's rate over h2c).
fn file_body(
    req: &Request<'_>,
    bb: &gdn_httpd::Brigade<'_, '_>,
    file: &File<'_>,
    start: u64,
    len: u64,
) {
    if len <= knobs::pool_read_max()
        && !req.header_only()
        && !req.sendfile_enabled()
        && !req.is_http2_stream()
    {
        if let Ok(bytes) = file.read_pool(req, start, len as usize) {
            if bytes.len() as u64 == len {
                bb.pool(bytes);
                return;
            }
        }
    }
    bb.file(file, start, len);
}

/// What a handler returns after passing its last brigade, as core's
/// default handler decides: a failure the filters did not already turn
/// into a response, on a live connection, is a filter error.
pub(super) fn pass_status(req: &Request<'_>, st: gdn_httpd::apr_status_t) -> Status {
    if st == 0 || req.status() != Status::HTTP_OK || req.aborted() {
        return Status::OK;
    }
    req.log(
        Level::Debug,
        st,
        "passing the response down the filters failed",
    );
    Status::FILTER_ERROR
}

/// Sends the original as core's handler would, but sized from the opened
/// file (fstat), so a file replaced since the directory walk is still sent
/// whole and consistent with its headers.
pub(super) fn send_original<'r>(a: &Responder<'_, 'r>) -> Result<Answer, Skip<'r>> {
    let (req, path) = (a.req, a.filename);
    let file = match lookup::open_as_allowed(req, path) {
        Ok(f) => f,
        Err(NotOpened::Unreadable(st)) => {
            req.log(
                Level::Err,
                st,
                &format!(
                    "file permissions deny server access: {}",
                    path.to_string_lossy()
                ),
            );
            return Ok(Answer::other(Status::FORBIDDEN));
        }
        Err(NotOpened::Swapped) => return Ok(Answer::other(Status::FORBIDDEN)),
    };
    if file.info().kind() != FileKind::Regular {
        return Err(Skip::Refused);
    }
    Ok(send_file(
        a,
        Outgoing::of(&file, path, Representation::Original.into()),
    ))
}

//! The responders: each sends one representation the walk resolved
//! (`Answer`), or gives way when its file turns out unopenable or
//! unusable (`Skip`, saying why), so the next candidate is tried. They
//! only send; what follows an answer (counting, the log note, copies
//! asked for) is `metrics::answered` and `ondemand::ask`. `Vary` is set
//! here, in one place, and `send_file` is the one way a file goes out.

mod decompress;
mod delta;
mod judge;
mod padding;

use crate::answer::{Answer, Skip};
use crate::config::{self, Settings, UseAsDictionary};
use crate::facts::disk::Copy;
use crate::lookup::{self, Refused, Sibling};
use crate::memo;
use crate::memo::digest::Written;
use crate::outcome::Outcome;
use crate::walk::Resolved;
use decompress::{decompress, none_decodable, send_decoded_copy};
use delta::send_checked;
use gdn_core::coding::{Coding, DeltaCoding};
use gdn_core::digest::{self, Algorithm, FieldValue};
use gdn_core::jitter;
use gdn_core::range::CodedRange;
use gdn_httpd::{self, File, FileKind, FileVersion, Finfo, Level, Request, Status};
use padding::plan_jitter;
use std::borrow::Cow;
use std::ffi::CStr;

/// What every responder needs of the request.
pub struct Responder<'a, 'r> {
    req: &'a Request<'r>,
    filename: &'r CStr,
    settings: Settings<'r>,
    /// The dictionary the client announced (SHA-256), which a delta's
    /// header must name.
    dictionary: Option<[u8; 32]>,
    /// The `Link` to the host's site dictionary, on a page that joins it
    /// once it is trained.
    link: Option<&'r CStr>,
    /// Whether the original exists: siblings are judged against its
    /// version (`judge`), read only where one is.
    has_original: bool,
}

/// A representation the walk resolved, as the request's facts found it.
pub type Sendable<'d, 'r> = Resolved<'r, &'d Sibling<'r>, Copy<'r>>;

impl<'a, 'r> Responder<'a, 'r> {
    /// The responder for a request's representations.
    pub fn new(req: &'a Request<'r>, filename: &'r CStr, settings: Settings<'r>) -> Self {
        Responder {
            req,
            filename,
            settings,
            dictionary: None,
            link: None,
            has_original: false,
        }
    }

    /// The responder for a resource whose original exists, or not.
    pub fn with_original(self, has_original: bool) -> Self {
        Responder {
            has_original,
            ..self
        }
    }

    /// The original's version, where it exists.
    fn original(&self) -> Option<FileVersion> {
        self.has_original.then(|| self.req.finfo().version())
    }

    /// The responder with the dictionary the client announced and the
    /// site dictionary's `Link`, where the page has one.
    pub fn with(self, dictionary: Option<[u8; 32]>, link: Option<&'r CStr>) -> Self {
        Responder {
            dictionary,
            link,
            ..self
        }
    }

    /// Sends one resolved representation.
    pub fn send(&self, r: Sendable<'_, 'r>) -> Result<Answer, Skip<'r>> {
        let req = self.req;
        match r {
            Resolved::Delta(d, s) => {
                self.vary(true);
                send_delta(self, d, s)
            }
            Resolved::CachedDelta(d, (path, file)) => {
                self.vary(true);
                send_checked(self, d, &file, path, Outcome::CachedDelta(d))
            }
            Resolved::Sibling(c, s) => {
                self.vary(true);
                send_sibling(self, c, s)
            }
            Resolved::Cached(c, (path, file)) => {
                self.vary(true);
                Ok(send_coded(self, c, &file, path, Outcome::Cached(c)))
            }
            Resolved::Original { vary } => {
                self.vary(vary);
                send_original(self)
            }
            Resolved::Decode(c, s, w) => {
                self.vary(true);
                decompress(self, c, s, w)
            }
            Resolved::DecodedCopy(c, (_, file), s) => {
                self.vary(true);
                Ok(send_decoded_copy(self, c, &file, s))
            }
            Resolved::NotAcceptable(avail) => {
                self.vary(true);
                Ok(not_acceptable(self, avail))
            }
            Resolved::NoneDecodable { too_large, logged } => {
                Ok(none_decodable(self, too_large, logged))
            }
            Resolved::Busy => {
                self.vary(true);
                Ok(busy(self))
            }
            Resolved::NotFound => Ok(not_found(self, false)),
            Resolved::PathInfo => Ok(not_found(self, true)),
            Resolved::Options => Ok(Answer::other(req.send_options())),
            Resolved::NotImplemented => Ok(Answer::other(Status::NOT_IMPLEMENTED)),
            Resolved::MethodNotAllowed => {
                req.log_with(Level::Info, 0, || {
                    format!("method not allowed for {}", self.filename.to_string_lossy())
                });
                Ok(Answer::other(Status::METHOD_NOT_ALLOWED))
            }
        }
    }

    /// The one place `Vary: Accept-Encoding` is set: on every response of
    /// a resource that has siblings. Error responses, which keep only
    /// err_headers_out, get it from the `insert_error_filter` hook.
    fn vary(&self, has_siblings: bool) {
        if has_siblings {
            self.req.vary(c"Accept-Encoding");
        }
    }

    /// Opens a sibling of coding `of` (`None`: a delta): one that cannot
    /// be opened (or is opened as something the symlink policy refuses)
    /// gives way, with a debug line, and the walk does not try it again.
    fn open(&self, of: Option<Coding>, s: &Sibling<'r>) -> Result<File<'r>, Skip<'r>> {
        lookup::open_sibling(self.req, s).map_err(|why| {
            if let Refused::Unreadable(st) = why {
                let what = match of {
                    Some(_) => "cannot open sibling, trying next",
                    None => "cannot open delta",
                };
                let path = s.path.to_string_lossy();
                self.req.log(Level::Debug, st, &format!("{what}: {path}"));
            }
            Skip::Unopenable(of)
        })
    }
}

/// Sends a published delta against the dictionary the client announced
/// (RFC 9842).
fn send_delta<'r>(
    a: &Responder<'_, 'r>,
    d: DeltaCoding,
    s: &Sibling<'r>,
) -> Result<Answer, Skip<'r>> {
    let file = a.open(None, s)?;
    if file.info().kind() != FileKind::Regular {
        return Err(Skip::Refused);
    }
    send_checked(a, d, &file, s.path, Outcome::Delta(d))
}

/// 503 with `Retry-After` when every decode that could answer gave way
/// to the bound on streamed decodes (`decompress::STREAMS_MAX`).
fn busy(a: &Responder<'_, '_>) -> Answer {
    a.req.set_error_header_value(c"Retry-After", "1");
    a.req.log_with(Level::Info, 0, || {
        format!(
            "too many decodes streaming in this process: 503 for {}",
            a.filename.to_string_lossy()
        )
    });
    Answer::new(Status::SERVICE_UNAVAILABLE, Outcome::Error, 0)
}

/// 404 for a file that does not exist (or path info after one).
fn not_found(a: &Responder<'_, '_>, with_path_info: bool) -> Answer {
    a.req.log_with(Level::Info, 0, || {
        format!(
            "file does not exist: {}{}",
            a.filename.to_string_lossy(),
            if with_path_info {
                " (with path info)"
            } else {
                ""
            }
        )
    });
    match with_path_info {
        true => Answer::other(Status::NOT_FOUND),
        false => Answer::new(Status::NOT_FOUND, Outcome::NotFound, 0),
    }
}

/// The marker header: `:-)` when a sibling is sent as it is, `:-(` when
/// the module had to decode one.
fn set_marker(a: &Responder<'_, '_>, sent_as_is: bool) {
    let (req, value) = (a.req, if sent_as_is { c":-)" } else { c":-(" });
    match a.settings.dir.status_header() {
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
/// sibling version judged broken, or one browsers cannot decode, gives way
/// (`judge`: one memo lookup once judged).
fn send_sibling<'r>(a: &Responder<'_, 'r>, c: Coding, s: &Sibling<'r>) -> Result<Answer, Skip<'r>> {
    let file = a.open(Some(c), s)?;
    if file.info().kind() != FileKind::Regular {
        return Err(Skip::Refused);
    }
    match judge::judged(a, c, &file, s.path) {
        memo::verdict::Judged::Cheap | memo::verdict::Judged::Whole => {}
        memo::verdict::Judged::Refused => {
            decompress::refused_by_browsers(a.req, c, &file, s.path);
            return Err(Skip::Refused);
        }
        memo::verdict::Judged::Broken { .. } => return Err(Skip::Broken(c)),
    }
    Ok(send_coded(a, c, &file, s.path, Outcome::Precompressed(c)))
}

/// Sends `file`, holding the original in coding `c`, as core sends a
/// static file, with any jitter spliced in.
fn send_coded(
    a: &Responder<'_, '_>,
    c: Coding,
    file: &File<'_>,
    path: &CStr,
    o: Outcome,
) -> Answer {
    let size = file.info().size();
    let pad = a
        .settings
        .dir
        .jitter()
        .and_then(|j| plan_jitter(a.req, a.settings.secret, c, file, path, size, j));
    let padded_tag;
    let tag = match &pad {
        None => Tag::Plain(c.token()),
        Some(p) if p.random => {
            padded_tag = format!("{}-jr", c.token());
            Tag::Weak(&padded_tag)
        }
        Some(p) => {
            padded_tag = format!("{}-j{}", c.token(), p.pad);
            Tag::Plain(&padded_tag)
        }
    };
    send_file(
        a,
        Representation {
            file,
            path,
            validators_of: None,
            coding: Some(c.c_token()),
            tag,
            as_is: Some(true),
            outcome: o,
            splice: pad.as_ref().map(|p| &p.splice),
        },
    )
}

/// A file to send as one representation of the resource.
struct Representation<'a, 'r> {
    file: &'a File<'r>,
    /// The path its ETag is made from.
    path: &'a CStr,
    /// The file whose validators it carries, where not its own: a
    /// decoded copy has its sibling's.
    validators_of: Option<&'a Finfo>,
    /// Its `Content-Encoding`, if any.
    coding: Option<&'static CStr>,
    tag: Tag<'a>,
    /// The marker header: a sibling sent as it is (`true`) or decoded;
    /// none for the original.
    as_is: Option<bool>,
    outcome: Outcome,
    /// The padding spliced in around the file, with jitter on.
    splice: Option<&'a jitter::Splice>,
}

/// Sends a file as core sends a static file: its headers, the marker,
/// the dictionary offer, then the body (or 304/412) and EOS.
fn send_file(a: &Responder<'_, '_>, r: Representation<'_, '_>) -> Answer {
    let req = a.req;
    let size = r.file.info().size();
    let len = r.splice.map_or(size, jitter::Splice::len);
    if let Some(token) = r.coding {
        req.set_content_encoding(token);
        // Their stepping aside cost 7 % of a request (bench/steps.sh).
        req.skip_compressors();
    }
    if static_headers(req, &r, len) && req.meets_conditions() == Status::OK {
        return Answer::other(Status::RANGE_NOT_SATISFIABLE);
    }
    if r.splice.is_none() {
        let written = match r.outcome {
            Outcome::Cached(_) | Outcome::CachedDelta(_) | Outcome::DecodedCopy(_) => {
                Written::Whole
            }
            _ => Written::InPlace,
        };
        integrity_fields(req, r.file, written);
    }
    if let Some(as_is) = r.as_is {
        set_marker(a, as_is);
    }
    offer_as_dictionary(a);
    if let Some(link) = a.link {
        req.add_header_kept(c"Link", link);
    }
    let status = finish_file(req, r.file, size, r.splice);
    Answer::new(status, r.outcome, len)
}

/// `Use-As-Dictionary` where `GzipDiskNgUseAsDictionary` is on, so a
/// browser keeps this response to decode later versions against. httpd
/// drops the header from 304s itself.
fn offer_as_dictionary(a: &Responder<'_, '_>) {
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
    req.set_header_value(c"Use-As-Dictionary", &value);
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
fn integrity_fields_of(
    req: &Request<'_>,
    value: impl Fn(Algorithm) -> Option<FieldValue>,
) -> Option<Algorithm> {
    let wanted = |field: &CStr| req.header_in(field).map(digest::preferred);
    let repr = wanted(c"Want-Repr-Digest").unwrap_or(Some(Algorithm::Sha256))?;
    let unknown = match value(repr) {
        Some(v) => {
            req.set_header_value(c"Repr-Digest", v.as_str());
            None
        }
        None => Some(repr),
    };
    let Some(Some(a)) = wanted(c"Want-Content-Digest") else {
        return unknown;
    };
    let whole = req.header_in(c"Range").is_none()
        && !req.header_only()
        && req.meets_conditions() == Status::OK;
    if let Some(v) = value(a).filter(|_| whole) {
        req.set_header_value(c"Content-Digest", v.as_str());
    }
    unknown
}

/// 406 with the codings the resource has, when decompression is off.
fn not_acceptable(a: &Responder<'_, '_>, fresh: [bool; 3]) -> Answer {
    let (req, filename) = (a.req, a.filename);
    let avail: Vec<&str> = Coding::ALL
        .iter()
        .filter(|c| fresh[c.index()])
        .map(|c| c.token())
        .collect();
    req.custom_response(
        Status::NOT_ACCEPTABLE,
        &format!(
            "Not Acceptable: this resource is available only with Content-Encoding: {}\n",
            avail.join(", ")
        ),
    );
    req.log(
        Level::Info,
        0,
        &format!(
            "no acceptable coding and GzipDiskNgDecompress Off: {}",
            filename.to_string_lossy()
        ),
    );
    Answer::new(Status::NOT_ACCEPTABLE, Outcome::NotAcceptable, 0)
}

/// What ends a representation's ETag, after core's tag for its file.
enum Tag<'t> {
    /// A strong tag with this suffix (a coding; empty for the original);
    /// ranges are offered.
    Plain(&'t str),
    /// A weak tag with this suffix: the bytes differ per response, so no
    /// ranges.
    Weak(&'t str),
}

/// The headers core's handler sets for a static file, for `r` sent as
/// `len` bytes: Last-Modified, ETag, Accept-Ranges, Content-Length.
/// True where a coded representation's range cannot be satisfied.
fn static_headers(req: &Request<'_>, r: &Representation<'_, '_>, len: u64) -> bool {
    req.set_last_modified(r.validators_of.unwrap_or(r.file.info()));
    let (suffix, weak) = match r.tag {
        Tag::Plain(suffix) => (suffix, false),
        Tag::Weak(suffix) => (suffix, true),
    };
    match r.validators_of {
        None => req.set_etag(r.file, r.path, suffix, weak),
        Some(info) => req.set_etag_of(info, r.path, suffix, weak),
    }
    let unsatisfiable = if weak {
        req.set_header("Accept-Ranges", c"none");
        req.unset_header_in(c"Range");
        false
    } else {
        req.set_accept_ranges();
        !suffix.is_empty() && coded_range(req, len)
    };
    req.set_content_length(len);
    unsatisfiable
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

/// Largest body read into the request pool when sendfile is off: below
/// it one read costs less than mapping the file (mmap, page faults,
/// munmap), as `bench/small_files.sh` measures.
const POOL_READ_MAX: u64 = 64 * 1024;

/// `POOL_READ_MAX`.
#[cfg(not(feature = "bench-knobs"))]
#[inline]
fn pool_read_max() -> u64 {
    POOL_READ_MAX
}

/// `GZIP_DISK_NG_POOL_READ_MAX` from the environment, else
/// `POOL_READ_MAX`: `bench/small_files.sh` builds with the `bench-knobs`
/// feature to measure where reading stops paying.
#[cfg(feature = "bench-knobs")]
fn pool_read_max() -> u64 {
    static MAX: std::sync::LazyLock<u64> = std::sync::LazyLock::new(|| {
        std::env::var("GZIP_DISK_NG_POOL_READ_MAX")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(POOL_READ_MAX)
    });
    *MAX
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
    if len <= pool_read_max()
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
fn pass_status(req: &Request<'_>, st: gdn_httpd::apr_status_t) -> Status {
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
fn send_original<'r>(a: &Responder<'_, 'r>) -> Result<Answer, Skip<'r>> {
    let (req, path) = (a.req, a.filename);
    let file = match lookup::open_as_allowed(req, path) {
        Ok(f) => f,
        Err(Refused::Unreadable(st)) => {
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
        Err(Refused::Swapped) => return Ok(Answer::other(Status::FORBIDDEN)),
    };
    if file.info().kind() != FileKind::Regular {
        return Err(Skip::Refused);
    }
    Ok(send_file(
        a,
        Representation {
            file: &file,
            path,
            validators_of: None,
            coding: None,
            tag: Tag::Plain(""),
            as_is: None,
            outcome: Outcome::Original,
            splice: None,
        },
    ))
}

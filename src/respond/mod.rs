//! One responder per outcome: each turns a `variant::Outcome` into an
//! Apache response, or gives way (`Skip`) when its file turns out
//! unusable, so the next planned outcome is tried.

mod decompress;
mod padding;

use crate::coding::{Coding, DeltaCoding};
use crate::config::{self, UseAsDictionary};
use crate::httpd::{self, File, FileKind, Level, Request, Status};
use crate::jitter;
use crate::lookup::{Sibling, Skip, Unopenable};
use crate::module::dir_config;
use crate::variant::{Outcome, Plan};
use decompress::{browsers_decode, decompress, none_decodable, Undecodable};
use padding::plan_jitter;
use std::borrow::Cow;
use std::cell::Cell;
use std::ffi::CStr;

/// Request note for `LogFormat "%{gzip-disk-ng}n"`.
const NOTE: &CStr = c"gzip-disk-ng";

/// One request's answer in the making: what every responder needs.
pub struct Attempt<'a, 'r> {
    pub req: &'a Request<'r>,
    pub filename: &'r CStr,
    siblings: [Option<Sibling<'r>>; 3],
    /// Siblings older than the original, by coding (never served).
    stale: [bool; 3],
    /// Siblings this request could not open, so each is tried once.
    gone: Unopenable,
    /// Whether the response varies on `Available-Dictionary`.
    dictionary_varies: Cell<bool>,
}

impl<'a, 'r> Attempt<'a, 'r> {
    pub fn new(req: &'a Request<'r>, filename: &'r CStr) -> Self {
        Attempt {
            req,
            filename,
            siblings: [None; 3],
            stale: [false; 3],
            gone: Unopenable::default(),
            dictionary_varies: Cell::new(false),
        }
    }

    /// The response depends on `Available-Dictionary`: say so in `Vary`,
    /// on success and on error responses alike.
    pub fn vary_on_dictionary(&self) {
        self.req.vary(c"Available-Dictionary");
        self.dictionary_varies.set(true);
    }

    /// Answers with one outcome that needs no files (a refused method,
    /// path info).
    pub fn answer(&self, o: Outcome) -> Status {
        self.respond(o, &mut Undecodable::default(), false)
            .unwrap_or(Status::NOT_FOUND)
    }

    /// Tries the plan's outcomes in order until one answers, given the
    /// siblings found, by coding.
    pub fn follow(mut self, plan: &Plan, siblings: [Option<Sibling<'r>>; 3]) -> Status {
        self.siblings = siblings;
        self.stale = plan.stale;
        let outcomes = plan.outcomes();
        let mut failed = Undecodable::default();
        for (i, &o) in outcomes.iter().enumerate() {
            let gzip_remains = outcomes[i + 1..].contains(&Outcome::Decompress(Coding::Gzip));
            if let Ok(st) = self.respond(o, &mut failed, gzip_remains) {
                if st.is_http_error() {
                    // Error responses keep only err_headers_out.
                    if plan.varies {
                        self.req.vary_on_error(c"Accept-Encoding");
                    }
                    if self.dictionary_varies.get() {
                        self.req.vary_on_error(c"Available-Dictionary");
                    }
                }
                return st;
            }
        }
        Status::NOT_FOUND
    }

    /// The responder for each outcome; `gzip_remains` says whether a gzip
    /// sibling remains to decode if this one fails.
    fn respond(
        &self,
        o: Outcome,
        failed: &mut Undecodable,
        gzip_remains: bool,
    ) -> Result<Status, Skip> {
        let req = self.req;
        match o {
            Outcome::Send(c) => send_sibling(self, c, self.sibling(c)?),
            Outcome::Decompress(c) => decompress(self, c, self.sibling(c)?, gzip_remains, failed),
            Outcome::Original => send_original(self),
            Outcome::NotAcceptable => Ok(not_acceptable(self)),
            Outcome::NotFound if failed.any => Ok(none_decodable(self, failed)),
            Outcome::NotFound => Ok(not_found(self, false)),
            Outcome::PathInfo => Ok(not_found(self, true)),
            Outcome::Options => Ok(req.send_options()),
            Outcome::NotImplemented => Ok(Status::NOT_IMPLEMENTED),
            Outcome::MethodNotAllowed => {
                req.log_with(Level::Info, 0, || {
                    format!("method not allowed for {}", self.filename.to_string_lossy())
                });
                Ok(Status::METHOD_NOT_ALLOWED)
            }
        }
    }

    fn sibling(&self, c: Coding) -> Result<Sibling<'r>, Skip> {
        self.siblings[c.index()].ok_or(Skip)
    }

    /// Opens a sibling once per request; one that cannot be opened (or is
    /// opened as something the symlink policy refuses) gives way.
    fn open(&self, c: Coding, s: Sibling<'r>) -> Result<File<'r>, Skip> {
        crate::lookup::open_or_skip(self.req, c, s, &self.gone)
    }
}

/// 404 for a file that does not exist (or path info after one).
fn not_found(a: &Attempt<'_, '_>, with_path_info: bool) -> Status {
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
    Status::NOT_FOUND
}

/// The log note for a coding served precompressed or decompressed.
fn note(c: Coding, precompressed: bool) -> &'static CStr {
    match (c, precompressed) {
        (Coding::Zstd, true) => c"zstd precompressed",
        (Coding::Br, true) => c"br precompressed",
        (Coding::Gzip, true) => c"gzip precompressed",
        (Coding::Zstd, false) => c"zstd decompressed",
        (Coding::Br, false) => c"br decompressed",
        (Coding::Gzip, false) => c"gzip decompressed",
    }
}

/// The marker header: `:-)` when a sibling is sent as it is, `:-(` when
/// the module had to decode one.
fn set_marker(req: &Request<'_>, sent_as_is: bool) {
    let value = if sent_as_is { c":-)" } else { c":-(" };
    match dir_config(req).status_header() {
        Some(crate::config::DEFAULT_STATUS_HEADER) => {
            req.set_header_static(c"Mod-Gzip-Disk-Ng", value)
        }
        Some(name) => req.set_header(name, value),
        None => {}
    }
}

/// Sends a sibling as core sends a static file: a file bucket (sendfile or
/// mmap), validators, conditionals, and ranges through the byterange filter.
/// With jitter on, the padding is spliced in around the file bucket.
pub fn send_sibling(a: &Attempt<'_, '_>, c: Coding, s: Sibling<'_>) -> Result<Status, Skip> {
    let req = a.req;
    let file = a.open(c, s)?;
    let info = *file.info();
    if info.kind() != FileKind::Regular {
        return Err(Skip);
    }
    if c != Coding::Gzip && !browsers_decode(req, c, &file, s.path) {
        return Err(Skip);
    }
    let size = info.size();
    let pad = dir_config(req)
        .jitter()
        .and_then(|j| plan_jitter(req, c, &file, s.path, size, j));
    req.set_content_encoding(c.c_token());
    req.set_last_modified(&info);
    match &pad {
        None => {
            req.set_etag(&file, s.path, c.token(), false);
            req.set_accept_ranges();
            req.set_content_length(size);
        }
        Some(p) => {
            if p.random {
                req.set_etag(&file, s.path, &format!("{}-jr", c.token()), true);
                req.set_header("Accept-Ranges", c"none");
                req.unset_header_in(c"Range");
            } else {
                req.set_etag(&file, s.path, &format!("{}-j{}", c.token(), p.pad), false);
                req.set_accept_ranges();
            }
            req.set_content_length(p.splice.len());
        }
    }
    set_marker(req, true);
    offer_as_dictionary(req);
    req.set_note(NOTE, note(c, true));
    Ok(finish_file(
        req,
        &file,
        size,
        pad.as_ref().map(|p| &p.splice),
    ))
}

/// Sends a delta against the dictionary the client announced (RFC 9842),
/// zero-copy like any sibling; `Content-Encoding: dcz` or `dcb`.
pub fn send_delta(a: &Attempt<'_, '_>, d: DeltaCoding, s: Sibling<'_>) -> Result<Status, Skip> {
    let req = a.req;
    let file = match req.open(s.path) {
        Ok(f) if crate::lookup::opened_as_allowed(req, s.path, f.info()) => f,
        Ok(_) => return Err(Skip),
        Err(st) => {
            req.log(
                Level::Debug,
                st,
                &format!("cannot open delta: {}", s.path.to_string_lossy()),
            );
            return Err(Skip);
        }
    };
    let info = *file.info();
    if info.kind() != FileKind::Regular {
        return Err(Skip);
    }
    let size = info.size();
    req.set_content_encoding(d.c_token());
    req.set_last_modified(&info);
    req.set_etag(&file, s.path, d.token(), false);
    req.set_accept_ranges();
    req.set_content_length(size);
    set_marker(req, true);
    offer_as_dictionary(req);
    req.set_note(
        NOTE,
        match d {
            DeltaCoding::Dcz => c"dcz precompressed",
            DeltaCoding::Dcb => c"dcb precompressed",
        },
    );
    Ok(finish_file(req, &file, size, None))
}

/// `Use-As-Dictionary` where `GzipDiskNgUseAsDictionary` is on, so a
/// browser keeps this response to decode later versions against. httpd
/// drops the header from 304s itself.
fn offer_as_dictionary(req: &Request<'_>) {
    let value = match dir_config(req).use_as_dictionary() {
        Some(UseAsDictionary::Header(v)) => Cow::Borrowed(v.as_str()),
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

/// 406 with the codings the resource has, when decompression is off.
fn not_acceptable(a: &Attempt<'_, '_>) -> Status {
    let (req, filename) = (a.req, a.filename);
    req.set_note(NOTE, c"not-acceptable");
    req.vary_on_error(c"Accept-Encoding");
    let avail: Vec<&str> = Coding::ALL
        .iter()
        .filter(|c| a.siblings[c.index()].is_some() && !a.stale[c.index()])
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
    Status::NOT_ACCEPTABLE
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
/// munmap), as `bench/small_files.sh` measures (a build with
/// `GZIP_DISK_NG_POOL_READ_MAX` set in the environment uses that instead,
/// for the measurement).
const POOL_READ_MAX: u64 = match option_env!("GZIP_DISK_NG_POOL_READ_MAX") {
    Some(v) => match u64::from_str_radix(v, 10) {
        Ok(n) => n,
        Err(_) => panic!("GZIP_DISK_NG_POOL_READ_MAX is not a number of bytes"),
    },
    None => 64 * 1024,
};

/// Part of a file as the body: a file bucket (sendfile, or mmap as core
/// would use it), or, where sendfile is off and the part small, one read
/// into the request pool. Not over HTTP/2, whose streams hand file buckets
/// to the connection as they are but must copy memory ones
/// (`bench/run.sh` measured the read at half core's rate over h2c).
fn file_body(
    req: &Request<'_>,
    bb: &httpd::Brigade<'_, '_>,
    file: &File<'_>,
    start: u64,
    len: u64,
) {
    if len <= POOL_READ_MAX
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
fn pass_status(req: &Request<'_>, st: httpd::apr_status_t) -> Status {
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
fn send_original(a: &Attempt<'_, '_>) -> Result<Status, Skip> {
    let (req, path, stale) = (a.req, a.filename, a.stale.contains(&true));
    let file = match req.open(path) {
        Ok(f) => f,
        Err(st) => {
            req.log(
                Level::Err,
                st,
                &format!(
                    "file permissions deny server access: {}",
                    path.to_string_lossy()
                ),
            );
            return Ok(Status::FORBIDDEN);
        }
    };
    let info = *file.info();
    if info.kind() != FileKind::Regular {
        return Err(Skip);
    }
    if !crate::lookup::opened_as_allowed(req, path, &info) {
        return Ok(Status::FORBIDDEN);
    }
    let size = info.size();
    req.set_last_modified(&info);
    req.set_etag(&file, path, "", false);
    req.set_accept_ranges();
    req.set_content_length(size);
    offer_as_dictionary(req);
    req.set_note(NOTE, if stale { c"stale" } else { c"original" });
    Ok(finish_file(req, &file, size, None))
}

//! The walk over `variant`'s candidates: each file looked up when its
//! candidate is reached, one responder per candidate that answers or gives
//! way (`Skip`) when its file turns out missing, stale or unusable, so the
//! next is tried. `Vary` is set here, in one place.

mod decompress;
mod delta;
mod padding;

use crate::cache::{self, CachedCopy};
use crate::coding::{Coding, DeltaCoding};
use crate::config::{self, Settings, UseAsDictionary};
use crate::httpd::{self, File, FileKind, Level, Request, Status};
use crate::jitter;
use crate::lookup::{self, Found, Refused, Sibling, Siblings, Skip, Unopenable};
use crate::metrics::counters;
use crate::metrics::tally::{self, Outcome};
use crate::negotiate::Ranked;
use crate::ondemand::job::CodingSet;
use crate::ondemand::key::Kind;
use crate::variant::{self, Candidate, Candidates, FileMeta, Size, Sizes};
use decompress::{browsers_decode, decompress, none_decodable, Undecodable};
use padding::plan_jitter;
use std::borrow::Cow;
use std::cell::{Cell, OnceCell};
use std::ffi::CStr;

/// Request note for `LogFormat "%{gzip-disk-ng}n"`.
const NOTE: &CStr = c"gzip-disk-ng";
/// Request note: the body's size uncompressed (as mod_deflate's `Input`).
const NOTE_ORIGINAL: &CStr = c"gzip-disk-ng-original";
/// Request note: the body sent as a percentage of that (as mod_deflate's
/// `Ratio`).
const NOTE_RATIO: &CStr = c"gzip-disk-ng-ratio";

/// One request's answer in the making: what every responder needs.
pub struct Attempt<'a, 'r> {
    pub req: &'a Request<'r>,
    pub filename: &'r CStr,
    pub settings: Settings<'r>,
    original: Option<FileMeta>,
    /// The siblings of the allowed codings, looked up as candidates reach
    /// them.
    siblings: Siblings<Sibling<'r>>,
    /// The dictionary the client announced (SHA-256), for deltas.
    dictionary: Option<[u8; 32]>,
    /// The deltas against it, looked up once.
    deltas: [OnceCell<Option<Sibling<'r>>>; 2],
    /// What the on-demand cache holds per coding, looked up once.
    copies: [OnceCell<Held<'r>>; 3],
    /// The sizes remembered for the original's version, checked against
    /// each representation looked up.
    memo: Cell<Option<Sizes>>,
    /// Siblings this request could not open, so each is tried once.
    gone: Unopenable,
    /// Siblings a decode was attempted from, so each is tried once.
    decoded: Cell<[bool; 3]>,
    /// The on-demand cache, where this request's scope has it on.
    cache: Option<&'static cache::Active>,
    /// Codings whose cached copy was missing: asked for once answered.
    wanted: Cell<CodingSet>,
    /// What the response is and its full body length, for the counters.
    served: Cell<(Outcome, u64)>,
}

impl<'a, 'r> Attempt<'a, 'r> {
    pub fn new(
        req: &'a Request<'r>,
        filename: &'r CStr,
        settings: Settings<'r>,
        original: Option<FileMeta>,
        dictionary: Option<[u8; 32]>,
        cache: Option<&'static cache::Active>,
    ) -> Self {
        Attempt {
            req,
            filename,
            settings,
            original,
            siblings: Siblings::default(),
            dictionary,
            deltas: Default::default(),
            copies: Default::default(),
            memo: Cell::new(None),
            gone: Unopenable::default(),
            decoded: Cell::new([false; 3]),
            cache,
            wanted: Cell::new(CodingSet::empty()),
            served: Cell::new((Outcome::Other, 0)),
        }
    }

    /// Answers with one candidate that needs no files (a refused method,
    /// path info).
    pub fn answer(&self, c: Candidate) -> Status {
        let st = self
            .respond(c, &mut Undecodable::default())
            .unwrap_or(Status::NOT_FOUND);
        self.count(st);
        st
    }

    /// Tries the candidates in order until one answers.
    pub fn walk(&self, candidates: &Candidates) -> Status {
        let mut failed = Undecodable::default();
        for &c in candidates.as_slice() {
            if let Ok(st) = self.respond(c, &mut failed) {
                self.ask_for_copies();
                self.count(st);
                return st;
            }
        }
        Status::NOT_FOUND
    }

    /// Says what the response is (`o`, with a body of `len` bytes when
    /// whole), in the log note and for the counters.
    fn served(&self, o: Outcome, len: u64) {
        self.served.set((o, len));
        if let Some(n) = note(o) {
            self.req.set_note(NOTE, n);
        }
    }

    /// Counts the response once the handler passed it, as it went out:
    /// in the coding of its final `Content-Encoding` (mod_deflate or
    /// mod_brotli may have compressed the original), with the body bytes
    /// the filters sent and, for a whole body in a content coding, its
    /// size uncompressed where known. Such a body also gets them as
    /// request notes for the access log, as mod_deflate notes what it
    /// compressed. An error the handler returns has its body made later,
    /// by Apache: counted without bytes.
    fn count(&self, st: Status) {
        if !counters::COUNTING {
            return;
        }
        let (o, len) = self.served.get();
        let req = self.req;
        let passed = st == Status::OK || st == Status::DONE;
        let sent = if !passed || req.header_only() {
            0
        } else {
            req.bytes_sent()
        };
        let whole = passed && req.status() == Status::HTTP_OK;
        let size = self.original.map(|f| f.size);
        let c = tally::settle(o, len, req.content_encoding(), sent, whole, size);
        counters::response(c);
        match c.uncompressed {
            Some(original) if sent > 0 && c.outcome.is_coded() => req.add_note_numbers([
                (NOTE_ORIGINAL, original),
                (NOTE_RATIO, sent * 100 / original.max(1)),
            ]),
            _ => {}
        }
    }

    /// Asks the compressor for the copies this request found missing, and
    /// says so in the log note. The request never waits for them.
    fn ask_for_copies(&self) {
        let (Some(cache), wanted) = (self.cache, self.wanted.get()) else {
            return;
        };
        if wanted == CodingSet::empty() {
            return;
        }
        let v = cache::version(&self.req.finfo());
        if cache.queue_compress(self.filename, v, wanted, self.req.request_time_us()) {
            let before = self.req.notes_get(NOTE).unwrap_or_default();
            self.req.set_note_copy(NOTE, &[before, b" queued"]);
        }
    }

    /// The cached copy of the original in coding `c`, looked up once per
    /// request; a missing one is asked for once the request is answered.
    fn copy(&self, c: Coding) -> Held<'r> {
        *self.copies[c.index()].get_or_init(|| {
            let held = self.find_copy(c);
            if let Held::Ready(_, f) = held {
                self.check_memo(c, Size::Bytes(f.info().size()));
            }
            held
        })
    }

    fn find_copy(&self, c: Coding) -> Held<'r> {
        let Some(cache) = self.cache else {
            return Held::NotWorth;
        };
        let v = cache::version(&self.req.finfo());
        if cache.asked_lately(&v, c, self.req.request_time_us()) {
            self.wanted.set(self.wanted.get().with(c));
            return Held::Missing;
        }
        match cache.find(self.req, &v, Kind::Coded(c)) {
            CachedCopy::Ready(path, file) => Held::Ready(path, file),
            CachedCopy::NotWorth => Held::NotWorth,
            CachedCopy::Missing => {
                self.wanted.set(self.wanted.get().with(c));
                Held::Missing
            }
        }
    }

    /// The cached copy in coding `c`, to send: its use is told to the
    /// compressor.
    fn cached(&self, c: Coding) -> Result<(&'r CStr, File<'r>), Skip> {
        let (Held::Ready(path, file), Some(cache)) = (self.copy(c), self.cache) else {
            return Err(Skip);
        };
        let v = cache::version(&self.req.finfo());
        cache.touch(v, Kind::Coded(c), self.req.request_time_secs());
        Ok((path, file))
    }

    /// The sizes of the representations the client accepts at equal q,
    /// for the default order (smallest first): remembered per version of
    /// the original, else learned by looking each up (as the walk would,
    /// so none is looked up twice) and remembered. Deltas are looked up:
    /// the walk would start with them anyway.
    pub fn sizes(&self, ranked: &Ranked, deltas: &[Option<(DeltaCoding, u16)>; 2]) -> Sizes {
        let mut sizes = Sizes::default();
        for &(d, _) in deltas.iter().flatten() {
            sizes.deltas[d.index()] = self
                .delta(d)
                .map_or(Size::Absent, |s| Size::Bytes(s.info.size()));
        }
        let wanted = variant::sizes_wanted(ranked, deltas.iter().any(Option::is_some));
        if !wanted.contains(&true) {
            return sizes;
        }
        let (v, now) = (self.req.finfo().version(), self.req.request_time_secs());
        let mut memo = crate::memo::size::get(&v, now).unwrap_or_default();
        let mut learned = false;
        for c in Coding::ALL {
            let known = &mut memo.codings[c.index()];
            if !wanted[c.index()] || *known != Size::Unknown {
                continue;
            }
            let size = self.learn(c);
            // A copy still being made is looked for again next time.
            if size != Size::Unknown {
                *known = size;
                learned = true;
            }
        }
        if learned {
            crate::memo::size::put(v, memo, now);
        }
        self.memo.set(Some(memo));
        sizes.codings = memo.codings;
        sizes
    }

    /// The size of coding `c`'s representation: its fresh sibling's, else
    /// its cached copy's (`Unknown` while the copy is being made).
    fn learn(&self, c: Coding) -> Size {
        if let Found::Fresh(s) = self.found(c) {
            return Size::Bytes(s.info.size());
        }
        match self.copy(c) {
            Held::Ready(_, f) => Size::Bytes(f.info().size()),
            Held::NotWorth => Size::Absent,
            Held::Missing => Size::Unknown,
        }
    }

    /// Forgets the remembered sizes when a representation looked up is not
    /// as they say, so the next request learns them again.
    fn check_memo(&self, c: Coding, actual: Size) {
        let Some(memo) = self.memo.get() else { return };
        let known = memo.codings[c.index()];
        if known != Size::Unknown && known != actual {
            crate::memo::size::forget(&self.req.finfo().version());
            self.memo.set(None);
        }
    }

    /// The responder for each candidate.
    fn respond(&self, c: Candidate, failed: &mut Undecodable) -> Result<Status, Skip> {
        let req = self.req;
        match c {
            Candidate::Delta(d) => {
                let s = self.delta(d)?;
                self.vary(true);
                send_delta(self, d, &s)
            }
            Candidate::Send(c) => {
                let s = self.fresh(c)?;
                self.vary(true);
                send_sibling(self, c, s)
            }
            Candidate::Cached(c) => {
                let (path, file) = self.cached(c)?;
                self.vary(true);
                Ok(send_coded(self, c, &file, path, Outcome::Cached(c)))
            }
            Candidate::Original => {
                self.vary(self.cache.is_some() || self.any_sibling());
                send_original(self)
            }
            Candidate::Decode(c, _) if self.decoded.get()[c.index()] => Err(Skip),
            Candidate::Decode(c, w) => {
                let s = self.fresh(c)?;
                self.vary(true);
                decompress(self, c, s, w, failed)
            }
            Candidate::NotAcceptable if self.any_fresh() => {
                self.vary(true);
                Ok(not_acceptable(self))
            }
            Candidate::NotAcceptable => Err(Skip),
            Candidate::NotFound if failed.any => Ok(none_decodable(self, failed)),
            Candidate::NotFound => Ok(not_found(self, false)),
            Candidate::PathInfo => Ok(not_found(self, true)),
            Candidate::Options => Ok(req.send_options()),
            Candidate::NotImplemented => Ok(Status::NOT_IMPLEMENTED),
            Candidate::MethodNotAllowed => {
                req.log_with(Level::Info, 0, || {
                    format!("method not allowed for {}", self.filename.to_string_lossy())
                });
                Ok(Status::METHOD_NOT_ALLOWED)
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

    /// This coding's sibling, looked up now if no candidate did yet;
    /// `Skip` if it is missing or stale (a stale one is logged when
    /// found).
    fn fresh(&self, c: Coding) -> Result<&Sibling<'r>, Skip> {
        match self.found(c) {
            Found::Fresh(s) => Ok(s),
            _ => Err(Skip),
        }
    }

    fn found(&self, c: Coding) -> &Found<Sibling<'r>> {
        self.siblings.get(c, || {
            if !self.settings.dir.encodings().contains(&c) {
                return None;
            }
            let found = lookup::find_sibling(self.req, self.filename, c);
            let fresh = found
                .as_ref()
                .filter(|s| variant::usable(lookup::meta(&s.info), self.original));
            match fresh {
                Some(s) => self.check_memo(c, Size::Bytes(s.info.size())),
                None if self.cache.is_none() => self.check_memo(c, Size::Absent),
                None => {}
            }
            let s = found?;
            let fresh = fresh.is_some();
            if !fresh {
                lookup::warn_stale(self.req, self.filename, &s);
                counters::passed_over(crate::metrics::tally::Reason::Stale, c);
            }
            Some((s, fresh))
        })
    }

    /// Whether any allowed coding has a sibling, stale or not (looking up
    /// those no candidate reached).
    fn any_sibling(&self) -> bool {
        Coding::ALL
            .iter()
            .any(|&c| !matches!(self.found(c), Found::Missing))
    }

    /// Whether any allowed coding has a fresh sibling.
    fn any_fresh(&self) -> bool {
        Coding::ALL
            .iter()
            .any(|&c| matches!(self.found(c), Found::Fresh(_)))
    }

    /// Whether this sibling is stale (`found` already looked it up).
    fn stale(&self, c: Coding) -> bool {
        matches!(self.siblings.known(c), Found::Stale)
    }

    /// The delta against the announced dictionary, if it exists and is
    /// fresh.
    fn delta(&self, d: DeltaCoding) -> Result<Sibling<'r>, Skip> {
        let found = self.deltas[d.index()].get_or_init(|| {
            let hash = self.dictionary.as_ref()?;
            let s = lookup::find_delta(self.req, self.filename, d, hash)?;
            variant::usable(lookup::meta(&s.info), self.original).then_some(s)
        });
        (*found).ok_or(Skip)
    }

    /// Opens a sibling once per request; one that cannot be opened (or is
    /// opened as something the symlink policy refuses) gives way.
    fn open(&self, c: Coding, s: &Sibling<'r>) -> Result<File<'r>, Skip> {
        lookup::open_or_skip(self.req, c, s, &self.gone)
    }

    /// Records that a decode of this coding's sibling was attempted.
    fn decoding(&self, c: Coding) {
        let mut d = self.decoded.get();
        d[c.index()] = true;
        self.decoded.set(d);
    }
}

/// What the on-demand cache holds of one coding.
#[derive(Clone, Copy)]
enum Held<'r> {
    /// The copy, where it is, opened.
    Ready(&'r CStr, File<'r>),
    /// Nothing to send or ask for (no cache, not worth it, planted).
    NotWorth,
    /// Missing or being made: asked for.
    Missing,
}

/// 404 for a file that does not exist (or path info after one).
fn not_found(a: &Attempt<'_, '_>, with_path_info: bool) -> Status {
    if !with_path_info {
        a.served(Outcome::NotFound, 0);
    }
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

/// The log note (`%{gzip-disk-ng}n`) of each outcome that has one.
fn note(o: Outcome) -> Option<&'static CStr> {
    use {Coding::*, DeltaCoding::*, Outcome::*};
    Some(match o {
        Precompressed(Zstd) => c"zstd precompressed",
        Precompressed(Br) => c"br precompressed",
        Precompressed(Gzip) => c"gzip precompressed",
        Delta(Dcz) => c"dcz precompressed",
        Delta(Dcb) => c"dcb precompressed",
        Cached(Zstd) => c"zstd cached",
        Cached(Br) => c"br cached",
        Cached(Gzip) => c"gzip cached",
        Decoded(Zstd) => c"zstd decompressed",
        Decoded(Br) => c"br decompressed",
        Decoded(Gzip) => c"gzip decompressed",
        DecodedCopy(Zstd) => c"zstd decompressed cached",
        DecodedCopy(Br) => c"br decompressed cached",
        DecodedCopy(Gzip) => c"gzip decompressed cached",
        Original => c"original",
        // Counted so only once the filters ran, never served as such.
        OnTheFly(_) => return None,
        NotAcceptable => c"not-acceptable",
        Error => c"error",
        NotFound | Other => return None,
    })
}

/// The marker header: `:-)` when a sibling is sent as it is, `:-(` when
/// the module had to decode one.
fn set_marker(a: &Attempt<'_, '_>, sent_as_is: bool) {
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
/// With jitter on, the padding is spliced in around the file bucket.
fn send_sibling<'r>(a: &Attempt<'_, 'r>, c: Coding, s: &Sibling<'r>) -> Result<Status, Skip> {
    let file = a.open(c, s)?;
    if file.info().kind() != FileKind::Regular {
        return Err(Skip);
    }
    if c != Coding::Gzip && !browsers_decode(a.req, c, &file, s.path) {
        return Err(Skip);
    }
    Ok(send_coded(a, c, &file, s.path, Outcome::Precompressed(c)))
}

/// Sends `file`, holding the original in coding `c`, as core sends a
/// static file, with any jitter spliced in.
fn send_coded(a: &Attempt<'_, '_>, c: Coding, file: &File<'_>, path: &CStr, o: Outcome) -> Status {
    let req = a.req;
    let size = file.info().size();
    let pad = a
        .settings
        .dir
        .jitter()
        .and_then(|j| plan_jitter(req, a.settings.secret, c, file, path, size, j));
    req.set_content_encoding(c.c_token());
    match &pad {
        None => static_headers(req, file, path, Tag::Plain(c.token()), size),
        Some(p) if p.random => {
            let tag = format!("{}-jr", c.token());
            static_headers(req, file, path, Tag::Weak(&tag), p.splice.len());
        }
        Some(p) => {
            let tag = format!("{}-j{}", c.token(), p.pad);
            static_headers(req, file, path, Tag::Plain(&tag), p.splice.len());
        }
    }
    set_marker(a, true);
    offer_as_dictionary(a);
    a.served(o, pad.as_ref().map_or(size, |p| p.splice.len()));
    finish_file(req, file, size, pad.as_ref().map(|p| &p.splice))
}

/// Sends a delta against the dictionary the client announced (RFC 9842),
/// zero-copy like any sibling; `Content-Encoding: dcz` or `dcb`.
fn send_delta<'r>(a: &Attempt<'_, 'r>, d: DeltaCoding, s: &Sibling<'r>) -> Result<Status, Skip> {
    let req = a.req;
    let file = lookup::open_sibling(req, s).map_err(|why| {
        if let Refused::Unreadable(st) = why {
            req.log(
                Level::Debug,
                st,
                &format!("cannot open delta: {}", s.path.to_string_lossy()),
            );
        }
        Skip
    })?;
    let info = *file.info();
    if info.kind() != FileKind::Regular {
        return Err(Skip);
    }
    match &a.dictionary {
        Some(h) if delta::names(req, d, h, &file, s.path) => {}
        _ => return Err(Skip),
    }
    let size = info.size();
    req.set_content_encoding(d.c_token());
    static_headers(req, &file, s.path, Tag::Plain(d.token()), size);
    set_marker(a, true);
    offer_as_dictionary(a);
    a.served(Outcome::Delta(d), size);
    Ok(finish_file(req, &file, size, None))
}

/// `Use-As-Dictionary` where `GzipDiskNgUseAsDictionary` is on, so a
/// browser keeps this response to decode later versions against. httpd
/// drops the header from 304s itself.
fn offer_as_dictionary(a: &Attempt<'_, '_>) {
    let req = a.req;
    let value = match a.settings.dir.use_as_dictionary() {
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
    a.served(Outcome::NotAcceptable, 0);
    let avail: Vec<&str> = Coding::ALL
        .iter()
        .filter(|&&c| matches!(a.siblings.known(c), Found::Fresh(_)))
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

/// What ends a representation's ETag, after core's tag for its file.
enum Tag<'t> {
    /// A strong tag with this suffix (a coding; empty for the original);
    /// ranges are offered.
    Plain(&'t str),
    /// A weak tag with this suffix: the bytes differ per response, so no
    /// ranges.
    Weak(&'t str),
}

/// The headers core's handler sets for a static file, for `file` sent as
/// `len` bytes: Last-Modified, ETag, Accept-Ranges, Content-Length.
fn static_headers(req: &Request<'_>, file: &File<'_>, path: &CStr, tag: Tag<'_>, len: u64) {
    req.set_last_modified(file.info());
    match tag {
        Tag::Plain(suffix) => {
            req.set_etag(file, path, suffix, false);
            req.set_accept_ranges();
        }
        Tag::Weak(suffix) => {
            req.set_etag(file, path, suffix, true);
            req.set_header("Accept-Ranges", c"none");
            req.unset_header_in(c"Range");
        }
    }
    req.set_content_length(len);
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
    let (req, path) = (a.req, a.filename);
    let stale = Coding::ALL.iter().any(|&c| a.stale(c));
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
            return Ok(Status::FORBIDDEN);
        }
        Err(Refused::Swapped) => return Ok(Status::FORBIDDEN),
    };
    let info = *file.info();
    if info.kind() != FileKind::Regular {
        return Err(Skip);
    }
    let size = info.size();
    static_headers(req, &file, path, Tag::Plain(""), size);
    offer_as_dictionary(a);
    a.served(Outcome::Original, size);
    if stale {
        req.set_note(NOTE, c"stale");
    }
    Ok(finish_file(req, &file, size, None))
}

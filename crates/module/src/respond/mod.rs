//! The walk over `variant`'s candidates: each file looked up when its
//! candidate is reached, one responder per candidate that answers
//! (`Answer`) or gives way (`Skip`, saying why) when its file turns out
//! missing, stale or unusable, so the next is tried. The responders only
//! send; the walk owns what follows from their answers: the counters,
//! the log note, and asking the compressor for copies. `Vary` is set
//! here, in one place, and `send_file` is the one way a file goes out.

mod answer;
mod decompress;
mod delta;
mod padding;

use crate::config::{self, Settings, UseAsDictionary};
use crate::lookup::{self, Found, Refused, Sibling, Siblings};
use crate::memo;
use crate::memo::digest::Written;
use crate::metrics::counters;
use crate::metrics::tally::{self, Outcome, Reason};
use crate::ondemand::cache::{self, CachedCopy};
use crate::ondemand::job::{CodingSet, Deltas};
use crate::ondemand::key::Kind;
use answer::{Answer, Skip};
use decompress::{browsers_decode, decompress, none_decodable};
use delta::send_delta;
use gdn_core::coding::{Coding, DeltaCoding};
use gdn_core::digest::{self, Algorithm};
use gdn_core::jitter;
use gdn_core::negotiate::Ranked;
use gdn_core::range::CodedRange;
use gdn_core::variant::{self, Candidate, Candidates, FileMeta, Size, Sizes};
use gdn_httpd::{self, File, FileKind, Finfo, Level, Request, Status};
use padding::plan_jitter;
use std::borrow::Cow;
use std::cell::OnceCell;
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
    /// The decoded copy of each coding's sibling, looked up once.
    decoded_copies: [OnceCell<Held<'r>>; 3],
    /// The sizes remembered for the original's version, checked against
    /// each representation looked up.
    memo: OnceCell<Sizes>,
    /// The on-demand cache, where this request's scope has it on.
    cache: Option<&'static cache::Active>,
    /// Deltas on demand, where this request's scope makes them.
    deltas_on_demand: Option<OnDemandDeltas<'r>>,
    /// The cached deltas against the announced dictionary, looked up once.
    cached_deltas: [OnceCell<Held<'r>>; 2],
}

/// Deltas on demand in a request's scope: what its compress job asks.
/// The host's and the group's names are made only for a job (or the
/// site's `Link`), not for every request.
#[derive(Clone, Copy)]
pub struct OnDemandDeltas<'r> {
    /// Earlier versions kept (`GzipDiskNgDeltaVersions`); 0: none of the
    /// file's own or its group's.
    pub versions: u8,
    /// The versioned group's pattern; `None`: the file's own path.
    pub group: Option<&'r str>,
    /// Whether the page joins its host's site dictionary.
    pub site: bool,
}
impl OnDemandDeltas<'_> {
    /// What of this scope may feed a dictionary others fetch or decode
    /// with: a site dictionary (anyone may fetch it) and a group's kept
    /// versions (another file's deltas) learn a page only when Apache
    /// would send it, as it is, to a client no rule knows. Asked once
    /// per job, not per request; the file's own versions stay.
    fn public_only(self, req: &Request<'_>) -> Self {
        if !self.site && self.group.is_none() {
            return self;
        }
        match req.ask_public() {
            Ok(()) => self,
            Err(refusal) => {
                req.log_with(Level::Debug, 0, || {
                    format!(
                        "not learned by a shared dictionary: an anonymous GET would not get it ({refusal})"
                    )
                });
                OnDemandDeltas {
                    group: None,
                    site: false,
                    ..self
                }
            }
        }
    }
}

/// What the walk learned from the candidates that gave way: so each
/// sibling is opened and decoded at most once, and the final answer
/// knows why nothing could be decoded.
#[derive(Default)]
struct Tried<'r> {
    /// Siblings that could not be opened, by coding.
    gone: [bool; 3],
    /// Siblings a decode was attempted from, by coding.
    decoded: [bool; 3],
    /// A sibling exists but cannot be decoded: answer 500, not 404.
    undecodable: bool,
    /// An error line already says why.
    logged: bool,
    /// The first sibling passed over for needing a window over the
    /// decoding limit, and that window.
    too_large: Option<(&'r CStr, u64)>,
}

impl<'r> Tried<'r> {
    /// Takes note of why a candidate gave way, counting a sibling that
    /// could not be decoded.
    fn learn(&mut self, skip: Skip<'r>) {
        match skip {
            Skip::Unopenable(Some(c)) => self.gone[c.index()] = true,
            Skip::Undecodable(c) => {
                counters::passed_over(Reason::Undecodable, c);
                self.decoded[c.index()] = true;
                self.undecodable = true;
                self.logged = true;
            }
            Skip::TooLarge {
                coding,
                path,
                window,
            } => {
                counters::passed_over(Reason::Window, coding);
                self.decoded[coding.index()] = true;
                self.undecodable = true;
                self.too_large.get_or_insert((path, window));
            }
            _ => {}
        }
    }
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
            decoded_copies: Default::default(),
            memo: OnceCell::new(),
            cache,
            deltas_on_demand: None,
            cached_deltas: Default::default(),
        }
    }

    /// The attempt with deltas on demand, where the request's scope makes
    /// them.
    pub fn with_deltas_on_demand(mut self, d: Option<OnDemandDeltas<'r>>) -> Self {
        self.deltas_on_demand = d;
        self
    }

    /// Answers with one candidate that needs no files (a refused method,
    /// path info).
    pub fn answer(&self, c: Candidate) -> Status {
        let a = self
            .respond(c, &Tried::default())
            .unwrap_or(Answer::other(Status::NOT_FOUND));
        self.settle(a, false);
        a.status
    }

    /// Tries the candidates in order until one answers, then settles what
    /// follows from the answer and from the siblings looked up.
    pub fn walk(&self, candidates: &Candidates) -> Status {
        let mut tried = Tried::default();
        let mut answered = None;
        for &c in candidates.as_slice() {
            match self.respond(c, &tried) {
                Ok(a) => {
                    answered = Some(a);
                    break;
                }
                Err(skip) => tried.learn(skip),
            }
        }
        self.count_stale();
        self.ask_for_decoded_copies();
        let Some(a) = answered else {
            return Status::NOT_FOUND;
        };
        self.settle(a, true);
        a.status
    }

    /// What follows from an answer: the cache told of the copy it used
    /// and asked for those missing (`copies`), the response counted as
    /// it went out, and its log note.
    fn settle(&self, a: Answer, copies: bool) {
        let queued = copies && {
            self.touch(a.outcome);
            self.ask_for_copies()
        };
        let sent = self.count(a);
        let stale = sent == Outcome::Original && Coding::ALL.iter().any(|&c| self.stale(c));
        match (answer::note(sent, stale), queued) {
            (Some(n), false) => self.req.set_note(NOTE, n),
            (n, true) => {
                let n = n.map_or(&b""[..], CStr::to_bytes);
                self.req.set_note_copy(NOTE, &[n, b" queued"]);
            }
            (None, false) => {}
        }
        if let Some((c, micros)) = a.decode_cpu {
            counters::decode_cpu(c, micros);
        }
    }

    /// Counts the response once the handler passed it, as it went out:
    /// in the coding of its final `Content-Encoding` (mod_deflate or
    /// mod_brotli may have compressed the original), with the body bytes
    /// the filters sent and, for a whole body in a content coding, its
    /// size uncompressed where known. Such a body also gets them as
    /// request notes for the access log, as mod_deflate notes what it
    /// compressed. An error the handler returns has its body made later,
    /// by Apache: counted without bytes. Returns what went out.
    fn count(&self, a: Answer) -> Outcome {
        let req = self.req;
        let passed = a.status == Status::OK || a.status == Status::DONE;
        let sent = if !passed || req.header_only() {
            0
        } else {
            req.bytes_sent()
        };
        let whole = passed && req.status() == Status::HTTP_OK;
        let size = self.original.map(|f| f.size);
        let c = tally::settle(a.outcome, a.len, req.content_encoding(), sent, whole, size);
        if !counters::counting() {
            return c.outcome;
        }
        counters::response(c);
        if let (Outcome::Delta(d) | Outcome::CachedDelta(d), true) = (c.outcome, whole) {
            if let Some(br) = self.br_size() {
                counters::delta_saved_vs_br(d, br.saturating_sub(sent));
            }
        }
        match c.uncompressed {
            Some(original) if sent > 0 && c.outcome.is_coded() => req.add_note_numbers([
                (NOTE_ORIGINAL, original),
                (NOTE_RATIO, sent * 100 / original.max(1)),
            ]),
            _ => {}
        }
        c.outcome
    }

    /// Counts the stale siblings the lookups found, once each.
    fn count_stale(&self) {
        for c in Coding::ALL {
            if self.stale(c) {
                counters::passed_over(Reason::Stale, c);
            }
        }
    }

    /// Tells the compressor the copy an answer sent was used, for its
    /// least-recently-used eviction.
    fn touch(&self, o: Outcome) {
        let Some(cache) = self.cache else { return };
        let (v, kind) = match o {
            Outcome::Cached(c) => (cache::version(self.req, &self.req.finfo()), Kind::Coded(c)),
            Outcome::CachedDelta(d) => match &self.dictionary {
                Some(h) => (
                    cache::version(self.req, &self.req.finfo()),
                    Kind::Delta(d, *h),
                ),
                None => return,
            },
            Outcome::DecodedCopy(c) => match self.siblings.known(c) {
                Found::Fresh(s) => (cache::version(self.req, &s.info), Kind::Decoded),
                _ => return,
            },
            _ => return,
        };
        cache.touch(v, kind, self.req.request_time_secs());
    }

    /// Asks the compressor for the copies of the original this request
    /// found missing; whether a job was sent. The request never waits
    /// for them.
    fn ask_for_copies(&self) -> bool {
        let Some(cache) = self.cache else {
            return false;
        };
        let wanted = Coding::ALL
            .into_iter()
            .filter(|c| matches!(self.copies[c.index()].get(), Some(Held::Missing)))
            .fold(CodingSet::empty(), CodingSet::with);
        let delta_missing = self
            .cached_deltas
            .iter()
            .any(|d| matches!(d.get(), Some(Held::Missing)));
        // A new version (its copies missing) joins its histories; a delta
        // missing against a version the cache keeps is made again.
        let deltas = self
            .deltas_on_demand
            .filter(|_| !wanted.is_empty() || delta_missing)
            .map(|d| d.public_only(self.req));
        if wanted.is_empty() && deltas.is_none() {
            return false;
        }
        let host = deltas.map(|_| self.req.host_key()).unwrap_or_default();
        let group = deltas
            .and_then(|d| d.group)
            .map(|p| [&host[..], b" ", p.as_bytes()].concat())
            .unwrap_or_default();
        let deltas = deltas.map(|d| Deltas {
            versions: d.versions,
            group: &group,
            site: if d.site { &host } else { &[] },
        });
        let v = cache::version(self.req, &self.req.finfo());
        cache.queue_compress(self.filename, v, wanted, deltas, self.req.request_time_us())
    }

    /// Asks for the decoded copies this request found missing, whether
    /// or not it answered (the siblings were decoded meanwhile).
    fn ask_for_decoded_copies(&self) {
        let Some(cache) = self.cache else { return };
        for c in Coding::ALL {
            let missing = matches!(self.decoded_copies[c.index()].get(), Some(Held::Missing));
            if let (true, Found::Fresh(s)) = (missing, self.siblings.known(c)) {
                let v = cache::version(self.req, &s.info);
                cache.queue_decode(s.path, c, v, self.req.request_time_secs());
            }
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
        let v = cache::version(self.req, &self.req.finfo());
        if cache.asked_lately(&v, c, self.req.request_time_us()) {
            return Held::Missing;
        }
        Held::from(cache.find(self.req, &v, Kind::Coded(c)))
    }

    /// The cached copy in coding `c`, to send.
    fn cached(&self, c: Coding) -> Result<(&'r CStr, File<'r>), Skip<'r>> {
        match self.copy(c) {
            Held::Ready(path, file) => Ok((path, file)),
            Held::Missing => Err(Skip::WantsCopy),
            Held::NotWorth => Err(Skip::Missing),
        }
    }

    /// The decoded copy of coding `c`'s sibling `s`, looked up once per
    /// request; a missing one is asked for once the walk is over.
    fn decoded_copy(&self, c: Coding, s: &Sibling<'r>) -> Held<'r> {
        *self.decoded_copies[c.index()].get_or_init(|| match self.cache {
            Some(cache) => {
                Held::from(cache.find(self.req, &cache::version(self.req, &s.info), Kind::Decoded))
            }
            None => Held::NotWorth,
        })
    }

    /// The sizes of the representations the client accepts at equal q,
    /// for the default order (smallest first): remembered per version of
    /// the original, else learned by looking each up (as the walk would,
    /// so none is looked up twice) and remembered. Deltas are looked up:
    /// the walk would start with them anyway.
    pub fn sizes(&self, ranked: &Ranked, deltas: &[Option<(DeltaCoding, u16)>; 2]) -> Sizes {
        let mut sizes = Sizes::default();
        for &(d, _) in deltas.iter().flatten() {
            sizes.deltas[d.index()] = match self.delta(d) {
                Ok(s) => Size::Bytes(s.info.size()),
                Err(_) => match self.cached_delta(d) {
                    Held::Ready(_, f) => Size::Bytes(f.info().size()),
                    Held::Missing | Held::NotWorth => Size::Absent,
                },
            };
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
        let _ = self.memo.set(memo);
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
            memo::size::forget(&self.req.finfo().version());
        }
    }

    /// The responder for each candidate.
    fn respond(&self, c: Candidate, tried: &Tried<'r>) -> Result<Answer, Skip<'r>> {
        let req = self.req;
        match c {
            Candidate::Delta(d) => match self.delta(d) {
                Ok(s) => {
                    self.vary(true);
                    send_delta(self, d, &s)
                }
                Err(_) => self.send_cached_delta(d),
            },
            Candidate::Send(c) => {
                let s = self.fresh(c)?;
                self.vary(true);
                send_sibling(self, c, s, tried)
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
            Candidate::Decode(c, _) if tried.decoded[c.index()] => Err(Skip::Tried),
            Candidate::Decode(c, w) => {
                let s = self.fresh(c)?;
                self.vary(true);
                decompress(self, c, s, w, tried)
            }
            Candidate::NotAcceptable if self.any_fresh() => {
                self.vary(true);
                Ok(not_acceptable(self))
            }
            Candidate::NotAcceptable => Err(Skip::Missing),
            Candidate::NotFound if tried.undecodable => Ok(none_decodable(self, tried)),
            Candidate::NotFound => Ok(not_found(self, false)),
            Candidate::PathInfo => Ok(not_found(self, true)),
            Candidate::Options => Ok(Answer::other(req.send_options())),
            Candidate::NotImplemented => Ok(Answer::other(Status::NOT_IMPLEMENTED)),
            Candidate::MethodNotAllowed => {
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

    /// This coding's sibling, looked up now if no candidate did yet;
    /// `Skip` if it is missing or stale (a stale one is logged when
    /// found).
    fn fresh(&self, c: Coding) -> Result<&Sibling<'r>, Skip<'r>> {
        match self.found(c) {
            Found::Fresh(s) => Ok(s),
            Found::Stale => Err(Skip::Stale),
            Found::Missing | Found::Unknown => Err(Skip::Missing),
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

    /// Opens a sibling of coding `of` (`None`: a delta) once per request:
    /// one that cannot be opened (or is opened as something the symlink
    /// policy refuses) gives way, with a debug line, and is not tried
    /// again.
    fn open(
        &self,
        of: Option<Coding>,
        s: &Sibling<'r>,
        tried: &Tried<'r>,
    ) -> Result<File<'r>, Skip<'r>> {
        if of.is_some_and(|c| tried.gone[c.index()]) {
            return Err(Skip::Unopenable(of));
        }
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

impl<'r> From<CachedCopy<'r>> for Held<'r> {
    fn from(c: CachedCopy<'r>) -> Self {
        match c {
            CachedCopy::Ready(path, file) => Held::Ready(path, file),
            CachedCopy::NotWorth => Held::NotWorth,
            CachedCopy::Missing => Held::Missing,
        }
    }
}

/// 404 for a file that does not exist (or path info after one).
fn not_found(a: &Attempt<'_, '_>, with_path_info: bool) -> Answer {
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
fn send_sibling<'r>(
    a: &Attempt<'_, 'r>,
    c: Coding,
    s: &Sibling<'r>,
    tried: &Tried<'r>,
) -> Result<Answer, Skip<'r>> {
    let file = a.open(Some(c), s, tried)?;
    if file.info().kind() != FileKind::Regular {
        return Err(Skip::Refused);
    }
    if c != Coding::Gzip && !browsers_decode(a.req, c, &file, s.path) {
        return Err(Skip::Refused);
    }
    Ok(send_coded(a, c, &file, s.path, Outcome::Precompressed(c)))
}

/// Sends `file`, holding the original in coding `c`, as core sends a
/// static file, with any jitter spliced in.
fn send_coded(a: &Attempt<'_, '_>, c: Coding, file: &File<'_>, path: &CStr, o: Outcome) -> Answer {
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
fn send_file(a: &Attempt<'_, '_>, r: Representation<'_, '_>) -> Answer {
    let req = a.req;
    let size = r.file.info().size();
    let len = r.splice.map_or(size, jitter::Splice::len);
    if let Some(token) = r.coding {
        req.set_content_encoding(token);
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
    link_site_dictionary(a);
    let status = finish_file(req, r.file, size, r.splice);
    Answer::new(status, r.outcome, len)
}

/// `Use-As-Dictionary` where `GzipDiskNgUseAsDictionary` is on, so a
/// browser keeps this response to decode later versions against. httpd
/// drops the header from 304s itself.
fn offer_as_dictionary(a: &Attempt<'_, '_>) {
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

/// `Link: <…>; rel="compression-dictionary"` on a host's HTML pages once
/// its site dictionary is trained, so a browser fetches it and sends its
/// hash with later navigations.
fn link_site_dictionary(a: &Attempt<'_, '_>) {
    let (Some(path), Some(cache), Some(d)) =
        (a.settings.site_dictionary, a.cache, a.deltas_on_demand)
    else {
        return;
    };
    let now = a.req.request_time_secs();
    if !d.site || !cache.has_site_dictionary(a.req, &a.req.host_key(), now) {
        return;
    }
    if let Some(value) = crate::site::link(a.req, cache, path) {
        a.req.add_header_value(c"Link", &value);
    }
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
    let wanted = |field: &CStr| req.header_in(field).map(digest::preferred);
    let repr = wanted(c"Want-Repr-Digest").unwrap_or(Some(Algorithm::Sha256));
    if let Some(v) = repr.and_then(|a| memo::digest::of_file(file, a, written)) {
        req.set_header_value(c"Repr-Digest", v.as_str());
    }
    let Some(Some(a)) = wanted(c"Want-Content-Digest") else {
        return;
    };
    let whole = req.header_in(c"Range").is_none()
        && !req.header_only()
        && req.meets_conditions() == Status::OK;
    if let Some(v) = memo::digest::of_file(file, a, written).filter(|_| whole) {
        req.set_header_value(c"Content-Digest", v.as_str());
    }
}

/// 406 with the codings the resource has, when decompression is off.
fn not_acceptable(a: &Attempt<'_, '_>) -> Answer {
    let (req, filename) = (a.req, a.filename);
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
fn send_original<'r>(a: &Attempt<'_, 'r>) -> Result<Answer, Skip<'r>> {
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

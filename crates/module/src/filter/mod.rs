//! The `GZIP_DISK_NG` output filter: responses no file holds (PHP, CGI,
//! a proxy's) coded in zstd, br or gzip as they pass, negotiated as the
//! handler negotiates. The first call decides (`gdn_core::dynamic`) and
//! sets the headers; later calls code bucket by bucket, a FLUSH flushing
//! the coder, so a stream's events reach the client one by one.

use crate::config::{DirConfig, Jitter, JitterLength, Settings};
use crate::metrics::answered;
use crate::metrics::counters;
use crate::metrics::tally::Counted;
use crate::outcome::Outcome;
use gdn_core::coding::{Coding, DeltaCoding};
use gdn_core::dynamic::{self, Aside};
use gdn_core::jitter::Secret;
use gdn_core::jitter::{self, KEYED_TAIL};
use gdn_core::stream::{Encoder, StreamLevels};
use gdn_httpd::filter::is_eagain;
use gdn_httpd::{apr_status_t, Filter, Input, Level, Piece, Request};
use std::ffi::CStr;

mod choice;
mod conditional;
mod delta;
mod files;
mod headers;
mod load;
mod spare;

use choice::{aside, negotiate, response_facts, suffix};
pub use conditional::{prepare as prepare_conditional, NOT_MODIFIED};

/// The filter's name, as `AddOutputFilterByType` and `SetOutputFilter`
/// give it.
pub const NAME: &std::ffi::CStr = c"GZIP_DISK_NG";

/// Coded bytes held before they are passed on: the core output filter's
/// own threshold for writing, so a pass is a write.
const OUT_CHUNK: usize = 64 * 1024;

/// Where a response's body stands.
enum Mode {
    /// The first bytes, held until the body reaches the minimum size.
    Holding,
    /// Coded: the headers say so.
    Coding(Encoder),
    /// Passed on as it is (short, or no coder could be had).
    Plain,
    /// The end passed.
    Ended,
}

/// One response being coded.
struct Stream {
    coding: Coding,
    /// The client's site dictionary, for a `dcz` or `dcb` body (then
    /// `coding` is its base coding, zstd or br).
    delta: Option<delta::Dictionary>,
    levels: StreamLevels,
    /// Bytes held back until the body is known to reach the minimum.
    held: Vec<u8>,
    min_size: u64,
    mode: Mode,
    out: Vec<u8>,
    bytes_in: u64,
    bytes_out: u64,
    pad: Option<DynamicPad>,
}

/// Ended streams, kept for the next response of this process.
static SPARE: spare::Pool<Stream> = spare::Pool::new();

impl spare::Reuse for Stream {
    fn take_room(&mut self, old: &mut Self) {
        self.held = std::mem::take(&mut old.held);
        self.out = std::mem::take(&mut old.out);
    }

    fn clear(&mut self) {
        spare::clear_buffer(&mut self.held);
        spare::clear_buffer(&mut self.out);
        self.delta = None;
        self.pad = None;
        self.mode = Mode::Ended;
    }
}

/// `GzipDiskNgJitter` on a dynamic body: its length drawn per response,
/// or keyed by the body as a file's is (its length, first bytes and last
/// bytes), so one body always gets one length.
struct DynamicPad {
    max: u32,
    /// For a keyed length: how many of the first bytes count.
    keyed: Option<usize>,
    head: Vec<u8>,
    tail: Vec<u8>,
}

/// Most first bytes of a dynamic body a keyed padding length reads.
const PAD_HEAD_MAX: usize = 64 * 1024;

impl DynamicPad {
    fn new(j: Jitter) -> DynamicPad {
        let keyed = match j.length {
            JitterLength::Random => None,
            JitterLength::Keyed { hashed } => Some((hashed as usize).min(PAD_HEAD_MAX)),
        };
        DynamicPad {
            max: j.max,
            keyed,
            head: Vec::new(),
            tail: Vec::new(),
        }
    }

    /// Keeps what a keyed length reads of `d`.
    fn see(&mut self, d: &[u8]) {
        let Some(hashed) = self.keyed else { return };
        let room = hashed.saturating_sub(self.head.len());
        self.head.extend_from_slice(&d[..room.min(d.len())]);
        let keep = KEYED_TAIL as usize;
        if d.len() >= keep {
            self.tail.clear();
            self.tail.extend_from_slice(&d[d.len() - keep..]);
        } else {
            self.tail.extend_from_slice(d);
            let over = self.tail.len().saturating_sub(keep);
            self.tail.drain(..over);
        }
    }

    /// The padding length of a body of `len` bytes.
    fn len(&self, req: &Request<'_>, secret: Option<&Secret>, len: u64) -> usize {
        let n = match (self.keyed, secret) {
            (Some(_), Some(s)) => Ok(jitter::keyed_len(self.max, s, len, &self.head, &self.tail)),
            _ => crate::respond::random_len(req, secret, self.max),
        };
        n.unwrap_or(self.max) as usize
    }
}

/// Before the handler runs, for each place the filter holds in the
/// chain: ahead of mod_deflate and mod_brotli where they stand right
/// before it (so the admin who enabled it gets its codings, not gzip
/// from whichever was configured first), and the client's conditions on
/// a coded tag given back as the handler's (`conditional`). The 304
/// companion moves too: it and the compressors leave a 304's bytes alone,
/// so their order changes nothing there, and no name, which an admin's
/// `FilterDeclare` could take, tells the places apart.
pub fn init(req: &Request<'_>, place: &gdn_httpd::module::FilterPlace, settings: &Settings<'_>) {
    place.go_before_compressors();
    prepare_conditional(req, settings);
}

/// The number the coder (`GZIP_DISK_NG`) is registered under.
pub const CODER: u8 = 0;

/// The number of its 304 companion (`GZIP_DISK_NG_304`).
pub const REFRESHER: u8 = 1;

/// httpd's call of filter `which`, brigade by brigade: known by the
/// entry point httpd called, not by the name it runs under (mod_filter's
/// harness carries the name an admin declared).
pub fn filter(
    which: u8,
    f: &mut Filter<'_>,
    input: &mut Input,
    settings: &Settings<'_>,
) -> apr_status_t {
    if which == REFRESHER {
        return conditional::refresh(f, input, settings);
    }
    let mut s = match f.take_state::<Stream>() {
        Some(s) => s,
        None => match begin(f.request(), settings) {
            Some(s) => {
                if let Some(st) = files::take_over(f, input, s.coding, s.delta.as_ref(), settings) {
                    return st;
                }
                SPARE.boxed(s)
            }
            None => {
                f.remove();
                return f.pass_input(input);
            }
        },
    };
    let st = run(f, input, &mut s, settings);
    match s.mode {
        Mode::Ended => SPARE.keep(s),
        _ => f.put_state(s),
    }
    st
}
/// The first look at a response: its coding, or `None` (with `Vary`
/// where others could get it coded) when it goes out as it is.
fn begin(req: &Request<'_>, settings: &Settings<'_>) -> Option<Stream> {
    if req.is_subrequest() {
        return None;
    }
    let dir = settings.dir;
    let facts = response_facts(req);
    if facts.status == 304 {
        conditional::not_modified(req, settings, &facts);
        return None;
    }
    if let Err(why) = dynamic::eligible(&facts, dir.filter_min_size()) {
        aside(req, why);
        return None;
    }
    let dictionary = delta::offered(settings.site_dictionary);
    if !req.env_is_set(c"dont-vary") {
        req.vary(c"Accept-Encoding");
        if dictionary {
            req.vary(c"Available-Dictionary");
        }
    }
    let (coding, delta) = negotiate(req, settings)?;
    if dictionary {
        link_dictionary(req, &facts, delta.as_ref(), settings.site_dictionary);
    }
    Some(Stream {
        coding,
        delta,
        levels: levels(req, dir),
        held: Vec::new(),
        min_size: dir.filter_min_size(),
        mode: Mode::Holding,
        out: Vec::new(),
        bytes_in: 0,
        bytes_out: 0,
        pad: dir.jitter().map(DynamicPad::new),
    })
}

/// The configured levels, or cheaper ones while no worker is idle or the
/// load average is at `GzipDiskNgFilterLoadLimit`: coding still, at a
/// fraction of the CPU.
fn levels(req: &Request<'_>, dir: &DirConfig) -> StreamLevels {
    let levels = dir.filter_levels();
    let now = req.request_time_secs();
    let why = if load::no_idle_worker(now) {
        "no idle worker"
    } else if dir.filter_load_limit().is_some_and(|l| load::busy(l, now)) {
        "the load average at GzipDiskNgFilterLoadLimit"
    } else {
        return levels;
    };
    req.log_with(Level::Debug, 0, || {
        format!("busy ({why}): coding at cheaper levels")
    });
    levels.cheaper()
}

/// A page's `Link` to the host's site dictionary, so a browser fetches it
/// and announces it on its next navigations (HTML only).
fn link_dictionary(
    req: &Request<'_>,
    facts: &dynamic::Response<'_>,
    held: Option<&delta::Dictionary>,
    site: Option<&str>,
) {
    let html = facts
        .content_type
        .map(gdn_core::types::essence)
        .is_some_and(|t| t.eq_ignore_ascii_case(b"text/html"));
    let (Some(path), Some(cache)) = (site, crate::ondemand::cache::active()) else {
        return;
    };
    if html {
        if let Some(link) = crate::site::page_link(req, cache, path, held.map(|d| &d.hash)) {
            req.add_header_kept(c"Link", link);
        }
    }
}

/// Codes the brigade handed in.
fn run(
    f: &mut Filter<'_>,
    input: &mut Input,
    s: &mut Stream,
    settings: &Settings<'_>,
) -> apr_status_t {
    loop {
        let piece = match input.first(false) {
            None => return f.pass(),
            Some(Err(st)) if is_eagain(st) => {
                // The handler has nothing more for now (a CGI, a proxy
                // between events): what is coded goes out first.
                let st = flush(f, s, settings);
                if st != 0 {
                    return st;
                }
                match input.first(true) {
                    Some(Err(st)) => return st,
                    _ => continue,
                }
            }
            Some(Err(st)) => return st,
            Some(Ok(p)) => p,
        };
        let st = match piece {
            Piece::Data(d) => {
                let st = take(f, s, d, settings);
                input.drop_first();
                st
            }
            Piece::Flush => {
                input.drop_first();
                flush(f, s, settings)
            }
            Piece::Eos => return end(f, input, s, settings),
            Piece::Meta => {
                f.send_first_of(input);
                0
            }
        };
        if st != 0 {
            return st;
        }
    }
}

/// Codes one bucket's bytes, passing them on when enough are made.
fn take(f: &mut Filter<'_>, s: &mut Stream, d: &[u8], settings: &Settings<'_>) -> apr_status_t {
    s.bytes_in += d.len() as u64;
    if let Some(p) = &mut s.pad {
        p.see(d);
    }
    if let Mode::Holding = s.mode {
        if ((s.held.len() + d.len()) as u64) < s.min_size {
            s.held.extend_from_slice(d);
            return 0;
        }
        start(f, s, settings);
    }
    match &mut s.mode {
        Mode::Coding(e) => {
            if let Err(err) = e.write(d, &mut s.out) {
                return failed(f, &err);
            }
        }
        _ => {
            f.send(d);
            return 0;
        }
    }
    if s.out.len() >= OUT_CHUNK {
        return emit(f, s);
    }
    0
}

/// Everything so far to the client: the coder flushed, then a FLUSH.
/// Held bytes start the coding: a body that flushes is a stream.
fn flush(f: &mut Filter<'_>, s: &mut Stream, settings: &Settings<'_>) -> apr_status_t {
    if let Mode::Holding = s.mode {
        start(f, s, settings);
    }
    if let Mode::Coding(e) = &mut s.mode {
        if let Err(err) = e.flush(&mut s.out) {
            return failed(f, &err);
        }
    }
    s.bytes_out += s.out.len() as u64;
    f.send(&s.out);
    s.out.clear();
    f.send_flush();
    f.pass()
}

/// The end: the coder finished, the response counted, EOS passed on.
fn end(
    f: &mut Filter<'_>,
    input: &mut Input,
    s: &mut Stream,
    settings: &Settings<'_>,
) -> apr_status_t {
    if let Mode::Holding = s.mode {
        if s.held.is_empty() && f.request().header_only() {
            // HEAD, whose handler made no body: GET's headers, as
            // mod_deflate gives them.
            headers::coded(f.request(), token(s), settings.dir);
        } else if (s.held.len() as u64) < s.min_size {
            aside(f.request(), Aside::Small);
            s.mode = Mode::Plain;
            f.send(&s.held);
        } else {
            start(f, s, settings);
        }
    }
    if let Mode::Coding(e) = &mut s.mode {
        let pad = s
            .pad
            .as_ref()
            .map_or(0, |p| p.len(f.request(), settings.secret, s.bytes_in));
        if let Err(err) = e.finish_padded(pad, &mut s.out) {
            return failed(f, &err);
        }
        s.bytes_out += s.out.len() as u64;
        f.send(&s.out);
        s.out.clear();
        record(f.request(), s);
    }
    s.mode = Mode::Ended;
    f.send_first_of(input);
    f.pass()
}

/// Passes on the coded bytes made so far.
fn emit(f: &mut Filter<'_>, s: &mut Stream) -> apr_status_t {
    s.bytes_out += s.out.len() as u64;
    f.send(&s.out);
    s.out.clear();
    f.pass()
}

/// Commits to coding: the headers of a coded body, the held bytes coded.
/// Without a coder the body goes out as it is.
fn start(f: &mut Filter<'_>, s: &mut Stream, settings: &Settings<'_>) {
    let req = f.request();
    let made = match &s.delta {
        Some(d) => match d.coding {
            DeltaCoding::Dcz => Encoder::dcz(s.levels.dcz, &d.bytes, &d.hash),
            DeltaCoding::Dcb => Ok(Encoder::dcb(s.levels.dcb, &d.bytes, &d.hash)),
        },
        None => Encoder::new(s.coding, &s.levels),
    };
    let mut e = match made {
        Ok(e) => e,
        Err(err) => {
            req.log(
                Level::Warn,
                0,
                &format!("no {} coder: {err}; sent as it is", s.coding.token()),
            );
            s.mode = Mode::Plain;
            f.send(&s.held);
            s.held.clear();
            return;
        }
    };
    headers::coded(req, token(s), settings.dir);
    if let Err(err) = e.write(&s.held, &mut s.out) {
        req.log(Level::Warn, 0, &format!("coding failed: {err}"));
    }
    s.held.clear();
    s.mode = Mode::Coding(e);
}

/// The `Content-Encoding` a stream's body goes out in.
fn token(s: &Stream) -> &'static CStr {
    suffix(s.coding, s.delta.as_ref())
}

/// A coder's error mid-body: the response cannot be finished as a valid
/// coded body, so the connection is ended without a clean end.
fn failed(f: &mut Filter<'_>, err: &std::io::Error) -> apr_status_t {
    f.request()
        .log(Level::Err, 0, &format!("coding the response failed: {err}"));
    f.remove();
    gdn_httpd::ffi::APR_EGENERAL as apr_status_t
}

/// Counts a coded response as its own outcome, and notes it for the log,
/// unless the module's handler sent it (it counts what it sent, coded by
/// a filter or not).
fn record(req: &Request<'_>, s: &Stream) {
    if req.handler_is(crate::handler::name::HANDLER) {
        return;
    }
    let outcome = match s.delta {
        Some(ref d) => Outcome::DynamicDelta(d.coding),
        None => Outcome::Dynamic(s.coding),
    };
    if let Some(n) = crate::answer::note(outcome, false) {
        req.add_note(answered::NOTE, n);
    }
    req.add_note_numbers([
        (answered::NOTE_ORIGINAL, s.bytes_in),
        (answered::NOTE_RATIO, s.bytes_out * 100 / s.bytes_in.max(1)),
    ]);
    if counters::counting() {
        counters::response(Counted {
            outcome,
            sent: s.bytes_out,
            uncompressed: Some(s.bytes_in),
        });
    }
}

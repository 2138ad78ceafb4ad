//! The decompress responders: a sibling decoded on the fly for a client
//! that accepts none, streamed through a fixed buffer, or its decoded
//! copy from the on-demand cache; and the 500 when none can be decoded.

use super::body::{self, integrity_fields_of, offer_as_dictionary, pass_status, send_file};
use super::body::{set_marker, Outgoing};
use super::inspect::{sibling_header, Readable};
use super::judge;
use super::plan::{self, Ranges};
use super::responder::Responder;
use super::streams;
use crate::answer::{Answer, Skip};
use crate::lookup::Sibling;
use crate::memo;
use crate::memo::verdict::Judged;
use crate::metrics::counters;
use crate::outcome::Outcome;
use gdn_core::coding::Coding;
use gdn_core::decode::{self, Body, DecodeError, HeaderFacts};
use gdn_core::digest::{Algorithm, Hasher};
use gdn_core::representation::Representation;
use gdn_core::variant::Window;
use gdn_httpd::{Brigade, File, FileVersion, Level, Request, Status};
use std::ffi::CStr;

/// Decoded bytes per pass down the filter chain.
const OUT_CHUNK: usize = 64 * 1024;

/// A zstd window above this prefers a gzip sibling, keeping the decompress
/// path's memory bounded (gzip needs 32 KiB).
const ZSTD_PREFERRED_WINDOW: u64 = 128 * 1024;

/// A sibling that failed to decode before anything was sent: judged
/// broken in its version (never sent nor decoded again, one warning);
/// one that needs more memory than the cap is remembered as such.
fn undecodable<'r>(
    a: &Responder<'_, '_>,
    c: Coding,
    file: &File<'_>,
    path: &'r CStr,
    e: &DecodeError,
    key: Option<&memo::SiblingVersion>,
) -> Skip<'r> {
    if let (DecodeError::TooLarge(w), Some(key)) = (e, key) {
        memo::header::learn_needed(key, *w);
        return too_large(a.req, c, path, *w);
    }
    match e {
        DecodeError::Io(_) => a.req.log(
            Level::Err,
            0,
            &format!("cannot decode {}: {e}", path.to_string_lossy()),
        ),
        _ => judge::found_broken(a, c, path, file.info().version(), e),
    }
    Skip::Undecodable(c)
}

/// Passes over a sibling whose window exceeds the decoding limit.
fn too_large<'r>(req: &Request<'_>, coding: Coding, path: &'r CStr, window: u64) -> Skip<'r> {
    req.log_with(Level::Debug, 0, || {
        format!(
            "{} window of {} exceeds the {} decompression limit; trying the next sibling",
            path.to_string_lossy(),
            decode::show_size(window),
            decode::show_size(decode::MAX_WINDOW)
        )
    });
    Skip::TooLarge {
        coding,
        path,
        window,
    }
}

/// The answer when siblings exist but none could be decoded: 500, with an
/// error line unless one already says why.
pub(super) fn none_decodable(
    a: &Responder<'_, '_>,
    too_large: Option<(&CStr, u64)>,
    logged: bool,
) -> Answer {
    let (req, filename) = (a.req, a.filename);
    if let Some((path, window)) = too_large.filter(|_| !logged) {
        req.log(
            Level::Err,
            0,
            &format!(
                "{} needs a window of {}, over the {} decoding limit, and no other \
                 sibling of {} can be decoded; `gzip-disk-ng compress` rewrites it within \
                 the limit (`gzip-disk-ng verify` lists such siblings)",
                path.to_string_lossy(),
                decode::show_size(window),
                decode::show_size(decode::MAX_WINDOW),
                filename.to_string_lossy()
            ),
        );
    } else if !logged {
        req.log(
            Level::Err,
            0,
            &format!(
                "no sibling of {} can be decoded within the 8 MiB window limit",
                filename.to_string_lossy()
            ),
        );
    }
    Answer::new(Status::INTERNAL_SERVER_ERROR, Outcome::Error, 0)
}

/// The facts of a sibling the decompress path will decode: its window must
/// fit the memory cap. One whose large window waits for its later turn gives way before it is
/// judged: a request judges a sibling once, in the turn that decodes it,
/// so a check it queued cannot overtake it between two turns.
fn decodable_facts<'r>(
    a: &Responder<'_, '_>,
    c: Coding,
    file: &File<'_>,
    path: &'r CStr,
    w: Window,
) -> Result<(HeaderFacts, memo::SiblingVersion), Skip<'r>> {
    let req = a.req;
    let header = sibling_header(req, c, file, path);
    if let Ok((facts, _)) = &header {
        if waits(req, c, w, facts, path) {
            return Err(Skip::Later);
        }
    }
    if let Judged::Broken { .. } = judge::judged(a, c, file, path) {
        return Err(Skip::Broken(c));
    }
    let (facts, key) = header.map_err(|e| undecodable(a, c, file, path, &e, None))?;
    if facts.needed > decode::MAX_WINDOW {
        return Err(too_large(req, c, path, facts.window));
    }
    Ok((facts, key))
}

/// Whether a sibling needs more history than a `Window::Small` candidate
/// allows: a large zstd window then waits for its `Window::Any` turn,
/// after gzip.
fn waits(req: &Request<'_>, c: Coding, w: Window, facts: &HeaderFacts, path: &CStr) -> bool {
    let wait = w == Window::Small && c == Coding::Zstd && facts.needed > ZSTD_PREFERRED_WINDOW;
    if wait {
        req.log_with(Level::Debug, 0, || {
            format!(
                "zstd window {} of {} is large; a gzip sibling is decoded first if there is one",
                facts.needed,
                path.to_string_lossy()
            )
        });
    }
    wait
}

/// Decoded bytes in the output buffer, and whether the stream ended.
#[derive(Clone, Copy)]
struct Chunk {
    filled: usize,
    eof: bool,
}

/// Decodes the next chunk, or up to the end of the stream.
fn fill(dec: &mut Body<'_, Readable<'_>>) -> Result<Chunk, DecodeError> {
    let (filled, eof) = dec.fill()?;
    Ok(Chunk { filled, eof })
}

/// A decoded total that contradicts the declared length.
fn mismatch(total: u64, eof: bool, declared: Option<u64>) -> Option<DecodeError> {
    let d = declared?;
    (total > d || (eof && total != d)).then(|| {
        DecodeError::Corrupt(format!(
            "decoded length {total}{} does not match the declared {d}",
            if eof { "" } else { "+" }
        ))
    })
}

/// A decoder for `file` with its first chunk decoded and checked against
/// the declared length.
fn start<'s, 'r>(
    c: Coding,
    file: &'s Readable<'r>,
    facts: &HeaderFacts,
) -> Result<(Body<'s, Readable<'r>>, Chunk), DecodeError> {
    let mut dec = Body::new(c, file, file.0.info().size(), Some(facts), OUT_CHUNK)?;
    let first = fill(&mut dec)?;
    match mismatch(first.filled as u64, first.eof, facts.declared_len) {
        Some(e) => Err(e),
        None => Ok((dec, first)),
    }
}

/// Largest decoded body held whole in memory and handed to the filters
/// with EOS, as core hands over a file: the event MPM then finishes
/// writing it to a slow client without a worker. 1 MiB per request at
/// most, for as long as the write takes.
const WHOLE_MAX: usize = 1 << 20;

/// What was decoded before the headers: the first chunk, where the body
/// ended within it (still in the decoder's buffer: sent without a copy);
/// else up to `WHOLE_MAX` bytes, and whether the body ended there.
enum Gathered {
    First(usize),
    More(Vec<u8>, bool),
}

impl Gathered {
    /// The decoded length, where the body ended.
    fn whole(&self) -> Option<u64> {
        match self {
            Gathered::First(n) => Some(*n as u64),
            Gathered::More(body, true) => Some(body.len() as u64),
            Gathered::More(_, false) => None,
        }
    }
}

/// Decodes up to `WHOLE_MAX` bytes after the first chunk.
fn gather(
    dec: &mut Body<'_, Readable<'_>>,
    first: Chunk,
    declared: Option<u64>,
) -> Result<Gathered, DecodeError> {
    if first.eof {
        return Ok(Gathered::First(first.filled));
    }
    let mut body = dec.chunk().to_vec();
    let mut eof = false;
    while !eof && body.len() < WHOLE_MAX {
        let c = fill(dec)?;
        body.extend_from_slice(dec.chunk());
        if let Some(e) = mismatch(body.len() as u64, c.eof, declared) {
            return Err(e);
        }
        eof = c.eof;
    }
    Ok(Gathered::More(body, eof))
}

/// Decodes a sibling on the fly for a client that accepts none. Up to
/// `WHOLE_MAX` bytes are decoded before any header is set, so a sibling
/// that fails early gives way to the next candidate, and a body that ends
/// within them goes out whole with its exact Content-Length (and leaves
/// the handler as a file does); a longer one streams, within `streams`'
/// bound, with the length its headers make certain or an earlier complete
/// decode established, else none.
pub(super) fn decompress<'r>(
    a: &Responder<'_, 'r>,
    c: Coding,
    s: &Sibling<'r>,
    w: Window,
) -> Result<Answer, Skip<'r>> {
    let req = a.req;
    let (file, checked) = opened(a, c, s, w)?;
    let cpu = counters::cpu_now();
    let (facts, key) = checked?;
    let src = Readable(file);
    let fail = |e: DecodeError| undecodable(a, c, &file, s.path, &e, Some(&key));
    let (mut dec, first) = start(c, &src, &facts).map_err(fail)?;
    let gathered = gather(&mut dec, first, facts.declared_len).map_err(fail)?;
    let whole = gathered.whole();
    let stream = match whole {
        Some(_) => None,
        None => Some(streams::DecodePlace::take().ok_or(Skip::Busy)?),
    };
    let declared = whole.or(facts.declared_len);
    set_decoded_headers(a, c, &file, s.path, declared);
    let version = file.info().version();
    let learn = integrity_fields_of(req, |al| memo::digest::of_decoded(version, al));
    let unknown = Answer::new(
        Status::OK,
        Outcome::Sent(Representation::Decoded(c)),
        declared.unwrap_or(u64::MAX),
    );
    let bb = req.brigade();
    let cond = req.meets_conditions();
    if cond != Status::OK || req.header_only() {
        let status = finish_without_body(req, &bb, cond, declared);
        return Ok(Answer { status, ..unknown });
    }
    let broken = |e: &DecodeError| failed(a, c, s.path, version, e);
    let decoding = Decoding {
        declared,
        key: &key,
        version,
        broken: &broken,
    };
    let (status, complete) = match &gathered {
        Gathered::First(_) => send_whole(req, &bb, dec.chunk(), &decoding, learn, false),
        Gathered::More(body, true) => send_whole(req, &bb, body, &decoding, learn, true),
        Gathered::More(body, false) => stream_and_learn(req, &bb, &mut dec, body, &decoding, learn),
    };
    drop(stream);
    let answer = match complete {
        _ if status == Status::DONE => Answer::new(status, Outcome::Error, 0),
        Some(len) => Answer::new(status, Outcome::Sent(Representation::Decoded(c)), len),
        None => Answer { status, ..unknown },
    };
    let micros = counters::cpu_now().saturating_sub(cpu);
    Ok(Answer {
        decode_cpu: Some((c, micros)),
        ..answer
    })
}

/// A sibling's header and its memo key, or why it is not decoded.
type Checked<'r> = Result<(HeaderFacts, memo::SiblingVersion), Skip<'r>>;

/// Coding `c`'s sibling `s`, opened, and its facts, checked before the
/// decode: one whose large window waits for its later turn gives way.
fn opened<'r>(
    a: &Responder<'_, 'r>,
    c: Coding,
    s: &Sibling<'r>,
    w: Window,
) -> Result<(File<'r>, Checked<'r>), Skip<'r>> {
    let file = a.open(Some(c), s)?;
    match decodable_facts(a, c, &file, s.path, w) {
        Err(Skip::Later) => Err(Skip::Later),
        checked => Ok((file, checked)),
    }
}

/// Says a decode failed mid-stream: an error line where the file could
/// not be read or outgrew the cap, else the sibling judged broken.
fn failed(a: &Responder<'_, '_>, c: Coding, path: &CStr, v: FileVersion, e: &DecodeError) {
    match e {
        DecodeError::Io(_) | DecodeError::TooLarge(_) => a.req.log(
            Level::Err,
            0,
            &format!("decoding {} failed: {e}", path.to_string_lossy()),
        ),
        _ => judge::found_broken(a, c, path, v, e),
    }
}

/// Hands a body decoded whole to the filters with EOS, as core hands over
/// a file, and remembers its digest: one chunk without a copy (a filter
/// that keeps it copies it), or a longer body in a bucket of its own.
fn send_whole(
    req: &Request<'_>,
    bb: &Brigade<'_, '_>,
    body: &[u8],
    d: &Decoding<'_>,
    learn: Option<Algorithm>,
    copy: bool,
) -> (Status, Option<u64>) {
    if let Some(al) = learn {
        let mut h = Hasher::new(al);
        h.update(body);
        memo::digest::learn_decoded(d.version, h.finish(), al);
    }
    let st = match copy {
        false => bb.pass_borrowed(body, true),
        true => {
            bb.heap(body);
            bb.eos();
            let st = bb.pass();
            bb.cleanup();
            st
        }
    };
    (pass_status(req, st), Some(body.len() as u64))
}

/// On demand, a decoded copy of the sibling `s` answers as the decoding
/// would, from a file.
pub(super) fn send_decoded_copy(
    a: &Responder<'_, '_>,
    c: Coding,
    file: &File<'_>,
    s: &Sibling<'_>,
) -> Answer {
    let sent = Representation::DecodedCopy(c).into();
    send_file(a, Outgoing::of(file, s.path, sent).validators_of(&s.info))
}

/// The headers of a decoded response, as its plan has them: validators
/// of the sibling's file with an `identity` ETag, no ranges, the length
/// where it is known.
fn set_decoded_headers(
    a: &Responder<'_, '_>,
    c: Coding,
    file: &File<'_>,
    path: &CStr,
    declared: Option<u64>,
) {
    let req = a.req;
    let plan = plan::plan(Representation::Decoded(c));
    let (suffix, weak) = (plan.tag.suffix(), plan.tag.weak());
    memo::validators::set(req, file.info(), Some(file), path, &suffix, weak);
    match plan.ranges {
        Ranges::Refused => body::refuse_ranges(req),
        Ranges::Offered { .. } => req.set_accept_ranges(),
    }
    if let Some(len) = declared {
        req.set_content_length(len);
    }
    if let Some(m) = plan.marker {
        set_marker(a, m);
    }
    offer_as_dictionary(a);
}

/// Ends a 304/412 or a HEAD response.
fn finish_without_body(
    req: &Request<'_>,
    bb: &Brigade<'_, '_>,
    cond: Status,
    declared: Option<u64>,
) -> Status {
    if cond != Status::OK {
        req.set_status(cond);
    } else if declared.is_none() {
        // HEAD of a body of unknown length: headers go out before EOS,
        // so no Content-Length (rather than a false 0) is computed.
        bb.flush();
        bb.pass();
        bb.cleanup();
    }
    bb.eos();
    let st = bb.pass();
    bb.cleanup();
    pass_status(req, st)
}

/// Ends a response whose body failed mid-stream: the error bucket makes
/// Apache cut the connection (or reset the stream), so the client sees a
/// failed transfer rather than a short body; the sibling is judged broken.
fn abort(bb: &Brigade<'_, '_>, d: &Decoding<'_>, what: &DecodeError) -> Status {
    (d.broken)(what);
    bb.cleanup();
    bb.error(Status::BAD_GATEWAY);
    bb.eos();
    bb.pass();
    bb.cleanup();
    Status::DONE
}

/// What a decode streams: the length its headers declare, its facts'
/// key and its version, and what tells a failed decode.
struct Decoding<'a> {
    declared: Option<u64>,
    key: &'a memo::SiblingVersion,
    version: FileVersion,
    /// Says a decode failed, judging the sibling broken where it is.
    broken: &'a dyn Fn(&DecodeError),
}

/// Streams the body and remembers what a decode to its end taught: its
/// length, where the headers did not declare it, and its content's
/// digest, where `learn` names an algorithm not yet known.
fn stream_and_learn(
    req: &Request<'_>,
    bb: &Brigade<'_, '_>,
    dec: &mut Body<'_, Readable<'_>>,
    head: &[u8],
    d: &Decoding<'_>,
    learn: Option<Algorithm>,
) -> (Status, Option<u64>) {
    let mut digest = learn.map(|al| (al, Hasher::new(al)));
    let (status, complete) = stream(req, bb, dec, head, d, &mut digest);
    if let (Some(len), None) = (complete, d.declared) {
        memo::header::learn_len(d.key, len);
    }
    if let (Some(_), Some((al, h))) = (complete, digest) {
        memo::digest::learn_decoded(d.version, h.finish(), al);
    }
    (status, complete)
}

/// Streams the decoded body in fixed chunks, after `head`, the part
/// already decoded; memory stays bounded by the decoder's window plus one
/// chunk and `head`. Each chunk goes through `digest`, where the
/// content's digest is still to be learned. Returns the status and, when
/// the stream was decoded to its end, its length.
fn stream(
    req: &Request<'_>,
    bb: &Brigade<'_, '_>,
    dec: &mut Body<'_, Readable<'_>>,
    head: &[u8],
    d: &Decoding<'_>,
    digest: &mut Option<(Algorithm, Hasher)>,
) -> (Status, Option<u64>) {
    let (declared, key) = (d.declared, d.key);
    if let Some((_, h)) = digest {
        h.update(head);
    }
    let mut total = head.len() as u64;
    let st = bb.pass_borrowed(head, false);
    if st != 0 || req.aborted() {
        return (pass_status(req, st), None);
    }
    loop {
        let chunk = match fill(dec) {
            Ok(c) => c,
            Err(e) => {
                if let DecodeError::TooLarge(w) = e {
                    memo::header::learn_needed(key, w);
                }
                return (abort(bb, d, &e), None);
            }
        };
        if let Some(e) = mismatch(total + chunk.filled as u64, chunk.eof, declared) {
            return (abort(bb, d, &e), None);
        }
        total += chunk.filled as u64;
        if let Some((_, h)) = digest {
            h.update(dec.chunk());
        }
        let st = bb.pass_borrowed(dec.chunk(), chunk.eof);
        if chunk.eof {
            return (pass_status(req, st), Some(total));
        }
        if st != 0 || req.aborted() {
            return (pass_status(req, st), None);
        }
    }
}

//! The one layer that turns a `variant::Plan` into an Apache response:
//! precompressed siblings go out as file buckets exactly as core sends a
//! static file; decompression streams through a fixed buffer.

use crate::coding::Coding;
use crate::decode::{self, DecodeError, Decoder, Facts};
use crate::facts_cache;
use crate::httpd::{
    self, Brigade, File, FileKind, Finfo, Level, Method, Request, SymlinkPolicy, DECLINED, DONE,
    HTTP_BAD_GATEWAY, HTTP_FORBIDDEN, HTTP_INTERNAL_SERVER_ERROR, HTTP_METHOD_NOT_ALLOWED,
    HTTP_NOT_ACCEPTABLE, HTTP_NOT_FOUND, HTTP_NOT_IMPLEMENTED, OK,
};
use crate::jitter;
use crate::negotiate::Accepted;
use crate::variant::{self, Inputs, Step};
use std::collections::HashMap;
use std::ffi::{c_int, CStr};
use std::sync::Mutex;

/// The handler name, as `SetHandler` and `[H=…]` give it.
pub const HANDLER: &str = "gzip-disk-ng";

/// Request note for `LogFormat "%{gzip-disk-ng}n"`.
const NOTE: &CStr = c"gzip-disk-ng";

/// Set by the fixup when `r->finfo` describes a sibling, not the original.
const NOTE_FAKED: &CStr = c"gzip-disk-ng-sibling-finfo";

/// Decoded bytes per pass down the filter chain.
const OUT_CHUNK: usize = 64 * 1024;

/// A zstd window above this prefers a gzip sibling, keeping the decompress
/// path's memory bounded (gzip needs 32 KiB).
const ZSTD_PREFERRED_WINDOW: u64 = 128 * 1024;

/// Decoding order: fastest first (zstd 2.8 GB/s, gzip 1.35, brotli 1.28
/// with costly set-up).
const DECODE_ORDER: [Coding; 3] = [Coding::Zstd, Coding::Gzip, Coding::Br];

/// What a sibling lookup found.
#[derive(Clone, Copy)]
struct Sibling<'r> {
    path: &'r CStr,
    info: Finfo,
}

/// Stats one candidate path; a symlink is followed only where `Options`
/// would let Apache serve it under that name.
fn stat_sibling<'r>(req: &Request<'r>, path: &'r CStr) -> Option<Sibling<'r>> {
    let link = req.stat(path, true).ok()?;
    let info = if link.kind() == FileKind::Symlink {
        let policy = req.symlink_policy();
        let target = req.stat(path, false).ok()?;
        let allowed = match policy {
            SymlinkPolicy::Always => true,
            SymlinkPolicy::IfOwnerMatch => target.user() == link.user(),
            SymlinkPolicy::Never => false,
        };
        if !allowed {
            req.log_with(Level::Debug, 0, || {
                format!(
                    "symlinked sibling refused by Options ({policy:?}): {}",
                    path.to_string_lossy()
                )
            });
            return None;
        }
        target
    } else {
        link
    };
    if info.kind() != FileKind::Regular {
        req.log_with(Level::Debug, 0, || {
            format!("ignoring {}: not a regular file", path.to_string_lossy())
        });
        return None;
    }
    Some(Sibling { path, info })
}

/// Stats the siblings of `base` for the allowed codings.
fn find_siblings<'r>(
    req: &Request<'r>,
    base: &CStr,
    allowed: &[Coding],
) -> [Option<Sibling<'r>>; 3] {
    let mut out = [None; 3];
    for &c in allowed {
        out[c.index()] = find_sibling(req, base, c);
    }
    out
}

/// The first existing sibling of `base` for one coding (`.zst`, then `.zstd`).
fn find_sibling<'r>(req: &Request<'r>, base: &CStr, c: Coding) -> Option<Sibling<'r>> {
    c.suffixes()
        .iter()
        .find_map(|suffix| stat_sibling(req, req.path_with_suffix(base, suffix)))
}

/// The content handler.
pub fn handle(req: &Request<'_>) -> c_int {
    if req.handler() != Some(HANDLER) {
        return DECLINED;
    }
    let Some(filename) = req.filename() else {
        return DECLINED;
    };
    let faked = req.notes_get(NOTE_FAKED).is_some();
    let finfo = req.finfo();
    let original_kind = if faked {
        FileKind::Missing
    } else {
        finfo.kind()
    };
    if original_kind == FileKind::Directory {
        return DECLINED;
    }
    let cfg = req.dir_config();
    req.allow_get_options();
    let rc = req.discard_body();
    if rc != OK {
        return rc;
    }
    match req.method() {
        Method::Get => {}
        Method::Options => return req.send_options(),
        Method::Invalid => return HTTP_NOT_IMPLEMENTED,
        Method::Other => {
            req.log_with(Level::Info, 0, || {
                format!("method not allowed for {}", filename.to_string_lossy())
            });
            return HTTP_METHOD_NOT_ALLOWED;
        }
    }
    if req.rejects_path_info() {
        req.log_with(Level::Info, 0, || {
            format!(
                "file does not exist: {} (with path info)",
                filename.to_string_lossy()
            )
        });
        return HTTP_NOT_FOUND;
    }

    let mut accepted = Accepted::parse(
        req.header_in(c"Accept-Encoding")
            .map(|b| String::from_utf8_lossy(b))
            .as_deref(),
    );
    for c in Coding::ALL {
        if req.env_is_set(c.no_env()) {
            accepted.forbid(c);
        }
    }
    let ranked = accepted.ranked(cfg.encodings());
    let original = (original_kind == FileKind::Regular).then(|| finfo.meta());

    // Fast path, the common case: the client's favourite coding has a
    // fresh sibling, so one lstat decides (the plan below would pick it
    // first too).
    if let Some(best) = ranked.iter().next() {
        if let Some(s) = find_sibling(req, filename, best) {
            if original.is_none_or(|o| !variant::is_stale(s.info.meta(), o)) {
                req.vary_accept_encoding();
                if let Ok(rc) = send_sibling(req, best, s) {
                    return rc;
                }
            }
        }
    }

    let siblings = find_siblings(req, filename, cfg.encodings());
    let plan = variant::plan(&Inputs {
        original,
        siblings: siblings.map(|s| s.map(|s| s.info.meta())),
        ranked,
        decompress: cfg.decompress(),
        decode_order: DECODE_ORDER,
    });
    if plan.varies {
        req.vary_accept_encoding();
    }
    for c in Coding::ALL {
        if plan.stale[c.index()] {
            if let Some(s) = siblings[c.index()] {
                req.log(
                    Level::Warn,
                    0,
                    &format!(
                        "stale sibling not served (older than {}): {}",
                        filename.to_string_lossy(),
                        s.path.to_string_lossy()
                    ),
                );
            }
        }
    }

    let steps = plan.steps();
    let mut failed = Undecodable::default();
    for (i, step) in steps.iter().enumerate() {
        let later_gzip = steps[i + 1..].contains(&Step::Decompress(Coding::Gzip));
        let outcome = match *step {
            Step::Send(c) => match siblings[c.index()] {
                Some(s) => send_sibling(req, c, s),
                None => Err(Skip),
            },
            Step::Decompress(c) => match siblings[c.index()] {
                Some(s) => decompress(req, c, s, later_gzip, &mut failed),
                None => Err(Skip),
            },
            Step::Original => {
                let stale = plan.stale.iter().any(|&s| s);
                send_original(req, filename, stale)
            }
            Step::NotAcceptable => {
                req.set_note(NOTE, c"not-acceptable");
                req.vary_accept_encoding_err();
                let avail: Vec<&str> = Coding::ALL
                    .iter()
                    .filter(|c| siblings[c.index()].is_some() && !plan.stale[c.index()])
                    .map(|c| c.token())
                    .collect();
                req.custom_response(
                    HTTP_NOT_ACCEPTABLE,
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
                return HTTP_NOT_ACCEPTABLE;
            }
            Step::NotFound if failed.any => Ok(none_decodable(req, filename, &failed)),
            Step::NotFound => {
                req.log_with(Level::Info, 0, || {
                    format!("file does not exist: {}", filename.to_string_lossy())
                });
                return HTTP_NOT_FOUND;
            }
        };
        match outcome {
            Ok(rc) => {
                if plan.varies && rc >= 400 {
                    // Error responses keep only err_headers_out.
                    req.vary_accept_encoding_err();
                }
                return rc;
            }
            Err(Skip) => continue,
        }
    }
    HTTP_NOT_FOUND
}

/// This candidate could not be used (vanished, unreadable); try the next.
struct Skip;

fn open_or_skip<'r>(req: &Request<'r>, s: Sibling<'r>) -> Result<File<'r>, Skip> {
    match req.open(s.path) {
        Ok(f) => Ok(f),
        Err(st) => {
            req.log(
                Level::Debug,
                st,
                &format!(
                    "cannot open sibling, trying next: {}",
                    s.path.to_string_lossy()
                ),
            );
            Err(Skip)
        }
    }
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

fn set_status_header(req: &Request<'_>, happy: bool) {
    let value = if happy { c":-)" } else { c":-(" };
    match req.dir_config().status_header() {
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
fn send_sibling(req: &Request<'_>, c: Coding, s: Sibling<'_>) -> Result<c_int, Skip> {
    let file = open_or_skip(req, s)?;
    let info = *file.info();
    if info.kind() != FileKind::Regular {
        return Err(Skip);
    }
    if c != Coding::Gzip && !browsers_decode(req, c, &file, s.path) {
        return Err(Skip);
    }
    let size = info.meta().size;
    let pad = req
        .dir_config()
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
    set_status_header(req, true);
    req.set_note(NOTE, note(c, true));
    Ok(finish_file(
        req,
        &file,
        size,
        pad.as_ref().map(|p| &p.splice),
    ))
}

/// Ends a file response as core does: 304/412 from the validators already
/// set, else the file as a bucket (with any jitter framing around it), then
/// EOS.
fn finish_file(
    req: &Request<'_>,
    file: &File<'_>,
    size: u64,
    splice: Option<&jitter::Splice>,
) -> c_int {
    let bb = req.brigade();
    let cond = req.meets_conditions();
    if cond != OK {
        req.set_status(cond);
    } else if let Some(sp) = splice {
        if !sp.head.is_empty() {
            bb.heap(&sp.head);
        }
        bb.file(file, sp.start, sp.end - sp.start);
        if !sp.tail.is_empty() {
            bb.heap(&sp.tail);
        }
    } else {
        bb.file(file, 0, size);
    }
    bb.eos();
    bb.pass();
    bb.cleanup();
    OK
}

/// Sends the original as core's handler would, but sized from the opened
/// file (fstat), so a file replaced since the directory walk is still sent
/// whole and consistent with its headers.
fn send_original(req: &Request<'_>, path: &CStr, stale: bool) -> Result<c_int, Skip> {
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
            return Ok(HTTP_FORBIDDEN);
        }
    };
    let info = *file.info();
    if info.kind() != FileKind::Regular {
        return Err(Skip);
    }
    let size = info.meta().size;
    req.set_last_modified(&info);
    req.set_etag(&file, path, "", false);
    req.set_accept_ranges();
    req.set_content_length(size);
    req.set_note(NOTE, if stale { c"stale" } else { c"original" });
    Ok(finish_file(req, &file, size, None))
}

/// A planned padded representation.
struct Padded {
    splice: jitter::Splice,
    pad: u32,
    random: bool,
}

/// Bytes read from a gzip sibling to find the end of its header.
const GZIP_HEADER_READ: usize = 4096;

/// Content-based padding lengths per file version, so the hash is computed
/// once per published file rather than per request.
type JitterKey = ((u64, u64, i64, u64), u32, i64, bool);
static JITTER_CACHE: Mutex<Option<HashMap<JitterKey, u32>>> = Mutex::new(None);
const JITTER_CACHE_MAX: usize = 16_384;

fn cached_len(key: &JitterKey) -> Option<u32> {
    JITTER_CACHE.lock().ok()?.as_ref()?.get(key).copied()
}

fn remember_len(key: JitterKey, len: u32) {
    if let Ok(mut g) = JITTER_CACHE.lock() {
        let map = g.get_or_insert_with(HashMap::new);
        if map.len() >= JITTER_CACHE_MAX {
            map.clear();
        }
        map.insert(key, len);
    }
}

/// Decides the padding for a sibling; `None` serves it unpadded (with a
/// debug line saying why).
fn plan_jitter(
    req: &Request<'_>,
    c: Coding,
    file: &File<'_>,
    path: &CStr,
    size: u64,
    j: crate::config::Jitter,
) -> Option<Padded> {
    let random = j.buffer < 0;
    let key: JitterKey = (file.info().version(), j.max, j.buffer, j.paranoid);
    let cached = if random { None } else { cached_len(&key) };
    let hash_len = if random || cached.is_some() {
        0
    } else {
        j.buffer.unsigned_abs().min(size) as usize
    };
    let head_len = if c == Coding::Gzip {
        hash_len.max(GZIP_HEADER_READ.min(size as usize))
    } else {
        hash_len
    };
    let head = if head_len > 0 {
        file.read_pool(req, 0, head_len).ok()?
    } else {
        &[][..]
    };
    let pad = match cached {
        Some(p) => p,
        None if random => jitter::random_len(j.max, httpd::random_u32()),
        None => {
            let p = jitter::content_len(j.max, &head[..head.len().min(hash_len)], j.paranoid);
            remember_len(key, p);
            p
        }
    };
    let tail = if c == Coding::Br {
        let n = jitter::brotli_tail_len().min(size as usize);
        file.read_pool(req, size - n as u64, n).ok()?
    } else {
        &[][..]
    };
    match jitter::splice(c, head, tail, size, pad as usize) {
        Ok(splice) => Some(Padded {
            splice,
            pad,
            random,
        }),
        Err(why) => {
            req.log_with(Level::Debug, 0, || {
                format!("serving {} without jitter: {why:?}", path.to_string_lossy())
            });
            None
        }
    }
}

impl decode::ReadAt for File<'_> {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        File::read_at(self, offset, buf)
    }
}

/// What a sibling's headers say, from the per-version cache or read once.
/// A sibling browsers cannot decode is logged when first found, so once
/// per file version (and process).
fn sibling_facts(
    req: &Request<'_>,
    c: Coding,
    file: &File<'_>,
    path: &CStr,
) -> Result<(Facts, facts_cache::Key), DecodeError> {
    let key = (file.info().version(), c);
    if let Some(Some(f)) = facts_cache::get(&key) {
        return Ok((f, key));
    }
    let f = decode::inspect(c, file, file.info().meta().size).inspect_err(|_| {
        facts_cache::put(key, None);
    })?;
    if let Some(why) = f.browser_refusal(c) {
        req.log(
            Level::Info,
            0,
            &format!(
                "{}: {why}; not sent as {}, another representation is",
                path.to_string_lossy(),
                c.token()
            ),
        );
    }
    facts_cache::put(key, Some(f));
    Ok((f, key))
}

/// Whether browsers can decode a zstd or brotli sibling (RFC 9659 window,
/// no large-window brotli). One that cannot be inspected is sent as it is,
/// as core would send it, and is not inspected again.
fn browsers_decode(req: &Request<'_>, c: Coding, file: &File<'_>, path: &CStr) -> bool {
    match facts_cache::get(&(file.info().version(), c)) {
        Some(Some(f)) => f.browser_refusal(c).is_none(),
        Some(None) => true,
        None => {
            sibling_facts(req, c, file, path).map_or(true, |(f, _)| f.browser_refusal(c).is_none())
        }
    }
}

/// Why decompression candidates were passed over, for the final answer.
#[derive(Default)]
struct Undecodable {
    /// A sibling exists but cannot be decoded: answer 500, not 404.
    any: bool,
    /// An error line already says why.
    logged: bool,
}

/// Notes and logs a sibling that failed to decode before anything was sent.
fn undecodable(req: &Request<'_>, path: &CStr, e: &DecodeError, failed: &mut Undecodable) -> Skip {
    failed.any = true;
    failed.logged = true;
    req.log(
        Level::Err,
        0,
        &format!("cannot decode {}: {e}", path.to_string_lossy()),
    );
    Skip
}

/// The answer when siblings exist but none could be decoded: 500, with an
/// error line unless one already says why.
fn none_decodable(req: &Request<'_>, filename: &CStr, failed: &Undecodable) -> c_int {
    if !failed.logged {
        req.log(
            Level::Err,
            0,
            &format!(
                "no sibling of {} can be decoded within the 8 MiB window limit",
                filename.to_string_lossy()
            ),
        );
    }
    req.set_note(NOTE, c"error");
    HTTP_INTERNAL_SERVER_ERROR
}

/// The facts of a sibling the decompress path will decode: its window must
/// fit the memory cap, and a large zstd window gives way to gzip.
fn decodable_facts(
    req: &Request<'_>,
    c: Coding,
    file: &File<'_>,
    path: &CStr,
    later_gzip: bool,
    failed: &mut Undecodable,
) -> Result<(Facts, facts_cache::Key), Skip> {
    let (facts, key) =
        sibling_facts(req, c, file, path).map_err(|e| undecodable(req, path, &e, failed))?;
    if facts.window > decode::MAX_WINDOW {
        failed.any = true;
        req.log_with(Level::Debug, 0, || {
            format!(
                "{} window of {} exceeds the 8 MiB decompression limit; trying the next sibling",
                path.to_string_lossy(),
                decode::show_size(facts.window)
            )
        });
        return Err(Skip);
    }
    if c == Coding::Zstd && facts.window > ZSTD_PREFERRED_WINDOW && later_gzip {
        req.log_with(Level::Debug, 0, || {
            format!(
                "zstd window {} of {} is large; decoding the gzip sibling instead",
                facts.window,
                path.to_string_lossy()
            )
        });
        return Err(Skip);
    }
    Ok((facts, key))
}

/// Decoded bytes in the output buffer, and whether the stream ended.
#[derive(Clone, Copy)]
struct Chunk {
    filled: usize,
    eof: bool,
}

/// Fills `buf` with decoded bytes, or up to the end of the stream.
fn fill<R: std::io::Read>(dec: &mut Decoder<R>, buf: &mut [u8]) -> Result<Chunk, DecodeError> {
    let mut filled = 0;
    while filled < buf.len() {
        match dec.read(&mut buf[filled..])? {
            0 => return Ok(Chunk { filled, eof: true }),
            n => filled += n,
        }
    }
    Ok(Chunk { filled, eof: false })
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

/// Decodes a sibling on the fly for a client that accepts none. The first
/// chunk is decoded before any header is set, so a sibling that fails
/// early gives way to the next candidate, and a body that ends within it
/// gets its exact Content-Length; a longer one gets the length its headers
/// make certain or an earlier complete decode established, else none.
fn decompress(
    req: &Request<'_>,
    c: Coding,
    s: Sibling<'_>,
    later_gzip: bool,
    failed: &mut Undecodable,
) -> Result<c_int, Skip> {
    let file = open_or_skip(req, s)?;
    let info = *file.info();
    let (facts, key) = decodable_facts(req, c, &file, s.path, later_gzip, failed)?;
    let mut buf = vec![0u8; OUT_CHUNK];
    let started = Decoder::new(c, file.reader(0)).and_then(|mut dec| {
        let first = fill(&mut dec, &mut buf)?;
        match mismatch(first.filled as u64, first.eof, facts.declared_len) {
            Some(e) => Err(e),
            None => Ok((dec, first)),
        }
    });
    let (mut dec, first) = started.map_err(|e| undecodable(req, s.path, &e, failed))?;
    let declared = if first.eof {
        Some(first.filled as u64)
    } else {
        facts.declared_len
    };
    req.set_last_modified(&info);
    req.set_etag(&file, s.path, "identity", false);
    req.set_header("Accept-Ranges", c"none");
    req.unset_header_in(c"Range");
    if let Some(len) = declared {
        req.set_content_length(len);
    }
    set_status_header(req, false);
    req.set_note(NOTE, note(c, false));
    let bb = req.brigade();
    let cond = req.meets_conditions();
    if cond != OK || req.header_only() {
        if cond != OK {
            req.set_status(cond);
        }
        bb.eos();
        bb.pass();
        bb.cleanup();
        return Ok(OK);
    }
    let (rc, complete) = stream(req, &bb, &mut dec, &mut buf, first, s.path, declared);
    if let (Some(len), None) = (complete, declared) {
        facts_cache::learn_len(&key, len);
    }
    Ok(rc)
}

/// Ends a response whose body failed mid-stream: the error bucket makes
/// Apache cut the connection (or reset the stream), so the client sees a
/// failed transfer rather than a short body.
fn abort(req: &Request<'_>, bb: &Brigade<'_, '_>, path: &CStr, what: &DecodeError) -> c_int {
    req.set_note(NOTE, c"error");
    req.log(
        Level::Err,
        0,
        &format!("decoding {} failed: {what}", path.to_string_lossy()),
    );
    bb.cleanup();
    bb.error(HTTP_BAD_GATEWAY);
    bb.eos();
    bb.pass();
    bb.cleanup();
    DONE
}

/// Streams the decoded body in fixed chunks, starting with the one already
/// decoded; memory stays bounded by the decoder's window plus one chunk.
/// Returns the status and, when the stream was decoded to its end, its
/// length.
fn stream<R: std::io::Read>(
    req: &Request<'_>,
    bb: &Brigade<'_, '_>,
    dec: &mut Decoder<R>,
    buf: &mut [u8],
    first: Chunk,
    path: &CStr,
    declared: Option<u64>,
) -> (c_int, Option<u64>) {
    let mut chunk = first;
    let mut total: u64 = 0;
    loop {
        total += chunk.filled as u64;
        bb.transient(&buf[..chunk.filled]);
        if chunk.eof {
            bb.eos();
        }
        let st = bb.pass();
        bb.cleanup();
        if chunk.eof {
            return (OK, Some(total));
        }
        if req.aborted() {
            return (OK, None);
        }
        if st != 0 {
            req.log(Level::Debug, st, "client connection failed while streaming");
            return (OK, None);
        }
        chunk = match fill(dec, buf) {
            Ok(c) => c,
            Err(e) => return (abort(req, bb, path, &e), None),
        };
        if let Some(e) = mismatch(total + chunk.filled as u64, chunk.eof, declared) {
            return (abort(req, bb, path, &e), None);
        }
    }
}

/// Late fixup: when this module will handle an index subrequest whose file
/// is missing but a sibling exists, make the sibling's stat visible so
/// mod_dir accepts it as a DirectoryIndex candidate. Main requests need no
/// help (the handler copes with a missing file), so they pay nothing here.
pub fn fixup(req: &Request<'_>) -> c_int {
    if !req.is_subrequest()
        || req.handler() != Some(HANDLER)
        || req.finfo().kind() != FileKind::Missing
        || req.rejects_path_info()
    {
        return DECLINED;
    }
    let Some(filename) = req.filename() else {
        return DECLINED;
    };
    let first = req
        .dir_config()
        .encodings()
        .iter()
        .find_map(|&c| find_sibling(req, filename, c));
    if let Some(s) = first {
        req.set_finfo(&s.info);
        req.set_note(NOTE_FAKED, c"1");
    }
    DECLINED
}

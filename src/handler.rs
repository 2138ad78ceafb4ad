//! The one layer that turns a `variant::Plan` into an Apache response:
//! precompressed siblings go out as file buckets exactly as core sends a
//! static file; decompression streams through a fixed buffer.

use crate::coding::Coding;
use crate::decode::{self, Body, DecodeError, Facts};
use crate::facts_cache;
use crate::httpd::{
    self, Brigade, File, FileKind, Finfo, Level, Method, Request, SymlinkPolicy, AP_FILTER_ERROR,
    DECLINED, DONE, HTTP_BAD_GATEWAY, HTTP_FORBIDDEN, HTTP_INTERNAL_SERVER_ERROR,
    HTTP_METHOD_NOT_ALLOWED, HTTP_NOT_ACCEPTABLE, HTTP_NOT_FOUND, HTTP_NOT_IMPLEMENTED, HTTP_OK,
    OK,
};
use crate::jitter;
use crate::negotiate::{Accepted, Ranked};
use crate::variant::{self, FileMeta, Inputs, Step};
use std::collections::{HashMap, HashSet};
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

/// What is at `path` as Apache would serve it under that name: the file
/// itself, or a symlink's target where `Options` allow following it.
fn resolve(req: &Request<'_>, path: &CStr) -> Option<Finfo> {
    let link = req.stat(path, true).ok()?;
    if link.kind() != FileKind::Symlink {
        return Some(link);
    }
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
                "symlink refused by Options ({policy:?}): {}",
                path.to_string_lossy()
            )
        });
        return None;
    }
    Some(target)
}

/// Whether an opened file is the one `Options` allow under `path`. Where
/// symlinks are restricted the path is checked again after the open, so a
/// file swapped for a symlink between the check and the open is refused.
fn opened_as_allowed(req: &Request<'_>, path: &CStr, opened: &Finfo) -> bool {
    if req.symlink_policy() == SymlinkPolicy::Always {
        return true;
    }
    let ok = resolve(req, path).is_some_and(|now| now.same_file(opened));
    if !ok {
        req.log_with(Level::Info, 0, || {
            format!(
                "{} changed into a symlink while being opened; refused",
                path.to_string_lossy()
            )
        });
    }
    ok
}

/// Stats one candidate path; only regular files (or symlinks to them
/// that `Options` allow) count.
fn stat_sibling<'r>(req: &Request<'r>, path: &'r CStr) -> Option<Sibling<'r>> {
    let info = resolve(req, path)?;
    if info.kind() != FileKind::Regular {
        req.log_with(Level::Debug, 0, || {
            format!("ignoring {}: not a regular file", path.to_string_lossy())
        });
        return None;
    }
    Some(Sibling { path, info })
}

/// Whether Apache would serve a request for the sibling's own name in
/// this context. Asked of httpd (a file subrequest) only when its
/// sections or authorization could answer differently than they did for
/// the request's own file.
fn permitted(req: &Request<'_>, s: &Sibling<'_>, suffix: &CStr) -> bool {
    if !req.sibling_rules_may_differ(suffix) {
        return true;
    }
    let status = req.sibling_status(suffix);
    if status == HTTP_OK {
        return true;
    }
    req.log_with(Level::Debug, 0, || {
        format!(
            "sibling refused by the access rules for its own name (status {status}): {}",
            s.path.to_string_lossy()
        )
    });
    false
}

/// Stats the siblings of `base` for the allowed codings; `known` is a
/// lookup already made for one coding.
fn find_siblings<'r>(
    req: &Request<'r>,
    base: &CStr,
    allowed: &[Coding],
    known: Lookup<'r>,
) -> [Option<Sibling<'r>>; 3] {
    let mut out = [None; 3];
    for &c in allowed {
        out[c.index()] = match known {
            Some((k, s)) if k == c => s,
            _ => find_sibling(req, base, c),
        };
    }
    out
}

/// The first sibling of `base` for one coding (`.zst`, then `.zstd`) that
/// exists and that Apache would serve under its own name.
fn find_sibling<'r>(req: &Request<'r>, base: &CStr, c: Coding) -> Option<Sibling<'r>> {
    c.suffixes()
        .iter()
        .zip(c.c_suffixes())
        .find_map(|(suffix, c_suffix)| {
            let s = stat_sibling(req, req.path_with_suffix(base, suffix))?;
            permitted(req, &s, c_suffix).then_some(s)
        })
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
    if let Some(rc) = refuse_request(req, filename) {
        return rc;
    }
    let cfg = req.dir_config();
    let accepted = accepted(req);
    let ranked = accepted.ranked(cfg.encodings());
    let original = (original_kind == FileKind::Regular).then(|| finfo.meta());

    let gone = Unopenable::default();
    let known = match favourite(req, filename, &accepted, &ranked, original, &gone) {
        Favourite::Sent(rc) => return rc,
        Favourite::Passed(known) => known,
    };
    let siblings = find_siblings(req, filename, cfg.encodings(), known);
    let plan = variant::plan(&Inputs {
        original,
        siblings: siblings.map(|s| s.map(|s| s.info.meta())),
        ranked,
        identity_preference: accepted.identity_preference(),
        decompress: cfg.decompress(),
        decode_order: DECODE_ORDER,
    });
    if plan.varies {
        req.vary_accept_encoding();
    }
    for c in Coding::ALL {
        if let (true, Some(s)) = (plan.stale[c.index()], siblings[c.index()]) {
            warn_stale(req, filename, &s);
        }
    }
    follow_plan(req, filename, &plan, &siblings, &gone)
}

/// A sibling lookup already made: the coding and what was found.
type Lookup<'r> = Option<(Coding, Option<Sibling<'r>>)>;

/// What the fast path did.
enum Favourite<'r> {
    /// The answer went out.
    Sent(c_int),
    /// Not taken; the lookup it made, for the plan.
    Passed(Lookup<'r>),
}

/// Fast path, the common case: the client's favourite coding has a fresh
/// sibling and is preferred to identity, so one lstat decides (the plan
/// would pick it first too).
fn favourite<'r>(
    req: &Request<'r>,
    filename: &CStr,
    accepted: &Accepted,
    ranked: &Ranked,
    original: Option<FileMeta>,
    gone: &Unopenable,
) -> Favourite<'r> {
    let Some((best, q)) = ranked.iter_q().next() else {
        return Favourite::Passed(None);
    };
    let s = find_sibling(req, filename, best);
    if let Some(s) = s {
        let fresh = original.is_none_or(|o| !variant::is_stale(s.info.meta(), o));
        if fresh && (original.is_none() || q >= accepted.identity_preference()) {
            req.vary_accept_encoding();
            if let Ok(rc) = send_sibling(req, best, s, gone) {
                return Favourite::Sent(rc);
            }
        }
    }
    Favourite::Passed(Some((best, s)))
}

/// The answer before any file is looked at: the request body is
/// discarded, OPTIONS answered, methods other than GET/HEAD refused, and
/// path info after a file is a 404, as core's handler does.
fn refuse_request(req: &Request<'_>, filename: &CStr) -> Option<c_int> {
    req.allow_get_options();
    let rc = req.discard_body();
    if rc != OK {
        return Some(rc);
    }
    match req.method() {
        Method::Get => {}
        Method::Options => return Some(req.send_options()),
        Method::Invalid => return Some(HTTP_NOT_IMPLEMENTED),
        Method::Other => {
            req.log_with(Level::Info, 0, || {
                format!("method not allowed for {}", filename.to_string_lossy())
            });
            return Some(HTTP_METHOD_NOT_ALLOWED);
        }
    }
    if req.rejects_path_info() {
        req.log_with(Level::Info, 0, || {
            format!(
                "file does not exist: {} (with path info)",
                filename.to_string_lossy()
            )
        });
        return Some(HTTP_NOT_FOUND);
    }
    None
}

/// Walks the plan's steps until one answers; a step whose file turns out
/// unusable (vanished, unreadable, undecodable) gives way to the next.
fn follow_plan(
    req: &Request<'_>,
    filename: &CStr,
    plan: &variant::Plan,
    siblings: &[Option<Sibling<'_>>; 3],
    gone: &Unopenable,
) -> c_int {
    let steps = plan.steps();
    let mut failed = Undecodable::default();
    for (i, step) in steps.iter().enumerate() {
        let later_gzip = steps[i + 1..].contains(&Step::Decompress(Coding::Gzip));
        let outcome = match *step {
            Step::Send(c) => {
                siblings[c.index()].map_or(Err(Skip), |s| send_sibling(req, c, s, gone))
            }
            Step::Decompress(c) => siblings[c.index()].map_or(Err(Skip), |s| {
                decompress(req, c, s, later_gzip, &mut failed, gone)
            }),
            Step::Original => send_original(req, filename, plan.stale.iter().any(|&s| s)),
            Step::NotAcceptable => return not_acceptable(req, filename, plan, siblings),
            Step::NotFound if failed.any => Ok(none_decodable(req, filename, &failed)),
            Step::NotFound => {
                req.log_with(Level::Info, 0, || {
                    format!("file does not exist: {}", filename.to_string_lossy())
                });
                return HTTP_NOT_FOUND;
            }
        };
        if let Ok(rc) = outcome {
            if plan.varies && rc >= 400 {
                // Error responses keep only err_headers_out.
                req.vary_accept_encoding_err();
            }
            return rc;
        }
    }
    HTTP_NOT_FOUND
}

/// 406 with the codings the resource has, when decompression is off.
fn not_acceptable(
    req: &Request<'_>,
    filename: &CStr,
    plan: &variant::Plan,
    siblings: &[Option<Sibling<'_>>; 3],
) -> c_int {
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
    HTTP_NOT_ACCEPTABLE
}

/// What the client accepts. Subrequests (mod_include, mod_dir) get
/// identity: their output is embedded in or stands for another response,
/// which negotiates for itself, as mod_deflate leaves them alone too.
fn accepted(req: &Request<'_>) -> Accepted {
    if req.is_subrequest() {
        return Accepted::none();
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
    accepted
}

/// An error response made after the handler chose a representation (a
/// 416 from the byterange filter, a filter's 500) keeps only
/// err_headers_out: carry the handler's Vary over, so caches still key
/// the error on Accept-Encoding. Costs nothing on successful responses.
pub fn insert_error_filter(req: &Request<'_>) {
    if req.handler() != Some(HANDLER) {
        return;
    }
    let varies = req.header_out(c"Vary").is_some_and(|v| {
        v.split(|&b| b == b',')
            .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"accept-encoding"))
    });
    if varies {
        req.vary_accept_encoding_err();
    }
}

/// A file version: device, inode, mtime, size.
type FileVersion = (u64, u64, i64, u64);

/// Sibling versions already reported stale by this child.
static STALE_SEEN: Mutex<Option<HashSet<FileVersion>>> = Mutex::new(None);
const STALE_SEEN_MAX: usize = 4096;

/// Warns once per sibling version per child: the warning is about the
/// published files, and repeating it per request would let any client
/// flood the log.
fn warn_stale(req: &Request<'_>, original: &CStr, s: &Sibling<'_>) {
    let first = match STALE_SEEN.lock() {
        Ok(mut g) => {
            let seen = g.get_or_insert_with(HashSet::new);
            if seen.len() >= STALE_SEEN_MAX {
                seen.clear();
            }
            seen.insert(s.info.version())
        }
        Err(_) => true,
    };
    let level = if first { Level::Warn } else { Level::Debug };
    req.log_with(level, 0, || {
        format!(
            "stale sibling not served (older than {}): {}",
            original.to_string_lossy(),
            s.path.to_string_lossy()
        )
    });
}

/// This candidate could not be used (vanished, unreadable); try the next.
struct Skip;

/// Siblings this request could not open (or opened as something the
/// symlink policy refuses), by coding: a sibling can be a candidate to
/// send and then to decompress, but it is opened, and logged, once.
#[derive(Default)]
struct Unopenable(std::cell::Cell<[bool; 3]>);

impl Unopenable {
    fn has(&self, c: Coding) -> bool {
        self.0.get()[c.index()]
    }

    fn add(&self, c: Coding) {
        let mut v = self.0.get();
        v[c.index()] = true;
        self.0.set(v);
    }
}

fn open_or_skip<'r>(
    req: &Request<'r>,
    c: Coding,
    s: Sibling<'r>,
    gone: &Unopenable,
) -> Result<File<'r>, Skip> {
    if gone.has(c) {
        return Err(Skip);
    }
    match req.open(s.path) {
        Ok(f) if opened_as_allowed(req, s.path, f.info()) => Ok(f),
        Ok(_) => {
            gone.add(c);
            Err(Skip)
        }
        Err(st) => {
            gone.add(c);
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
fn send_sibling(
    req: &Request<'_>,
    c: Coding,
    s: Sibling<'_>,
    gone: &Unopenable,
) -> Result<c_int, Skip> {
    let file = open_or_skip(req, c, s, gone)?;
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
    let st = bb.pass();
    bb.cleanup();
    pass_status(req, st)
}

/// What a handler returns after passing its last brigade, as core's
/// default handler decides: a failure the filters did not already turn
/// into a response, on a live connection, is a filter error.
fn pass_status(req: &Request<'_>, st: httpd::apr_status_t) -> c_int {
    if st == 0 || req.status() != HTTP_OK || req.aborted() {
        return OK;
    }
    req.log(
        Level::Debug,
        st,
        "passing the response down the filters failed",
    );
    AP_FILTER_ERROR
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
    if !opened_as_allowed(req, path, &info) {
        return Ok(HTTP_FORBIDDEN);
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

/// A file version: device, inode, mtime, size.
type Version = (u64, u64, i64, u64);

/// Per-process answers that cost a read or a decode, learnt once per file
/// version; cleared when full, so memory stays bounded.
struct VersionCache<K, V>(Mutex<Option<HashMap<K, V>>>);
const JITTER_CACHE_MAX: usize = 16_384;

impl<K: std::hash::Hash + Eq, V: Copy> VersionCache<K, V> {
    const fn new() -> Self {
        VersionCache(Mutex::new(None))
    }

    fn get(&self, k: &K) -> Option<V> {
        self.0.lock().ok()?.as_ref()?.get(k).copied()
    }

    fn put(&self, k: K, v: V) {
        if let Ok(mut g) = self.0.lock() {
            let map = g.get_or_insert_with(HashMap::new);
            if map.len() >= JITTER_CACHE_MAX {
                map.clear();
            }
            map.insert(k, v);
        }
    }
}

/// Keyed padding lengths per file version, max, buffer and key id.
type JitterKey = (Version, u32, i64, u64);
static JITTER_CACHE: VersionCache<JitterKey, u32> = VersionCache::new();

/// Brotli proofs (`jitter::prove_brotli`, two decodes) per file version.
static BROTLI_PROOFS: VersionCache<Version, Result<(), jitter::NoJitter>> = VersionCache::new();

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
    let planned = jitter_len(req, file, size, j).and_then(|pad| {
        let read = |at: u64, n: usize| file.read_pool(req, at, n).map_err(|_| jitter::NoJitter::Io);
        let (head, tail) = match c {
            Coding::Gzip => (read(0, GZIP_HEADER_READ.min(size as usize))?, &[][..]),
            Coding::Br => {
                let n = jitter::brotli_tail_len().min(size as usize);
                let tail = read(size - n as u64, n)?;
                if tail.len() != n {
                    return Err(jitter::NoJitter::Io); // shrunk since the stat
                }
                // The cheap look at the ending first, then the cached proof.
                jitter::splice(c, &[], tail, size, 1)?;
                brotli_proven(file, size)?;
                (&[][..], tail)
            }
            Coding::Zstd => (&[][..], &[][..]),
        };
        jitter::splice(c, head, tail, size, pad as usize).map(|s| (s, pad))
    });
    match planned {
        Ok((splice, pad)) => Some(Padded {
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

/// The padding length: random per response, or the keyed hash of the
/// file (`jitter::keyed_len`), computed once per file version and key.
fn jitter_len(
    req: &Request<'_>,
    file: &File<'_>,
    size: u64,
    j: crate::config::Jitter,
) -> Result<u32, jitter::NoJitter> {
    if j.buffer < 0 {
        return Ok(jitter::random_len(j.max, httpd::random_u32()));
    }
    let secret = req.jitter_secret().ok_or(jitter::NoJitter::NoKey)?;
    let key: JitterKey = (file.info().version(), j.max, j.buffer, secret.id());
    if let Some(p) = JITTER_CACHE.get(&key) {
        return Ok(p);
    }
    let n = j.buffer.unsigned_abs().min(size);
    let head = file
        .read_pool(req, 0, n as usize)
        .map_err(|_| jitter::NoJitter::Io)?;
    let t = jitter::KEYED_TAIL.min(size - n);
    let tail = file
        .read_pool(req, size - t, t as usize)
        .map_err(|_| jitter::NoJitter::Io)?;
    let p = jitter::keyed_len(j.max, secret, size, head, tail);
    JITTER_CACHE.put(key, p);
    Ok(p)
}

/// Whether padding may go before this brotli file's final empty last
/// meta-block, proved by decoding once per file version (an I/O error is
/// not remembered).
fn brotli_proven(file: &File<'_>, size: u64) -> Result<(), jitter::NoJitter> {
    let v = file.info().version();
    if let Some(r) = BROTLI_PROOFS.get(&v) {
        return r;
    }
    let r = jitter::prove_brotli(|at| file.reader(at), size, jitter::BROTLI_PROOF_MAX);
    if r != Err(jitter::NoJitter::Io) {
        BROTLI_PROOFS.put(v, r);
    }
    r
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

/// Decodes the next chunk, or up to the end of the stream.
fn fill(dec: &mut Body<'_, File<'_>>) -> Result<Chunk, DecodeError> {
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
    gone: &Unopenable,
) -> Result<c_int, Skip> {
    let file = open_or_skip(req, c, s, gone)?;
    let info = *file.info();
    let (facts, key) = decodable_facts(req, c, &file, s.path, later_gzip, failed)?;
    let body = Body::new(c, &file, info.meta().size, facts.declared_len, OUT_CHUNK);
    let started = body.and_then(|mut dec| {
        let first = fill(&mut dec)?;
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
        return Ok(pass_status(req, st));
    }
    let (rc, complete) = stream(req, &bb, &mut dec, first, s.path, declared);
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
/// decoded; memory stays bounded by the decoder's window plus one chunk,
/// or by the size `decode::Body` decodes whole.
/// Returns the status and, when the stream was decoded to its end, its
/// length.
fn stream(
    req: &Request<'_>,
    bb: &Brigade<'_, '_>,
    dec: &mut Body<'_, File<'_>>,
    first: Chunk,
    path: &CStr,
    declared: Option<u64>,
) -> (c_int, Option<u64>) {
    let mut chunk = first;
    let mut total: u64 = 0;
    loop {
        total += chunk.filled as u64;
        bb.transient(dec.chunk());
        if chunk.eof {
            bb.eos();
        }
        let st = bb.pass();
        bb.cleanup();
        if chunk.eof {
            return (pass_status(req, st), Some(total));
        }
        if st != 0 || req.aborted() {
            return (pass_status(req, st), None);
        }
        chunk = match fill(dec) {
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

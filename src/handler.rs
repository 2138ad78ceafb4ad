//! The content handler and its fixup: the facts of the request and of the
//! files beside it go to `variant` for a decision, and each planned
//! outcome to `respond`, until one answers.

use crate::coding::Coding;
use crate::dictionary;
use crate::httpd::{self, FileKind, Level, Request, Status};
use crate::lookup::{self, Lookup};
use crate::module::dir_config;
use crate::negotiate::{self, Accepted, Ranked};
use crate::respond::{self, Attempt};
use crate::variant::{self, FileMeta, Inputs, Method};
use std::ffi::CStr;

/// The handler name, as `SetHandler` and `[H=…]` give it.
pub const HANDLER: &CStr = c"gzip-disk-ng";

/// Set by the fixup when `r->finfo` describes a sibling, not the original.
const NOTE_SIBLING_FINFO: &CStr = c"gzip-disk-ng-sibling-finfo";

/// Decoding order: fastest first (zstd 2.8 GB/s, gzip 1.35, brotli 1.28
/// with costly set-up).
const DECODE_ORDER: [Coding; 3] = [Coding::Zstd, Coding::Gzip, Coding::Br];

/// The content handler.
pub fn handle(req: &Request<'_>) -> Status {
    if !req.handler_is(HANDLER) {
        return Status::DECLINED;
    }
    let Some(filename) = req.filename() else {
        return Status::DECLINED;
    };
    let kind = original_kind(req);
    if kind == FileKind::Directory {
        return Status::DECLINED;
    }
    req.allow_get_options();
    let st = req.discard_body();
    if st != Status::OK {
        return st;
    }
    let attempt = Attempt::new(req, filename);
    if let Some(o) = variant::before_files(method(req), req.rejects_path_info()) {
        return attempt.answer(o);
    }
    let original = (kind == FileKind::Regular).then(|| lookup::meta(&req.finfo()));
    let cfg = dir_config(req);
    let accepted = accepted(req);
    if let Some(st) = delta(&attempt, &accepted, original) {
        return st;
    }
    let ranked = accepted.ranked(cfg.encodings());
    let known = match favourite(&attempt, &accepted, &ranked, original) {
        Favourite::Answered(st) => return st,
        Favourite::Passed(known) => known,
    };
    let siblings = lookup::find_siblings(req, filename, cfg.encodings(), known);
    let plan = variant::plan(&Inputs {
        original,
        siblings: siblings.map(|s| s.map(|s| lookup::meta(&s.info))),
        ranked,
        identity_preference: accepted.identity_preference(),
        decompress: cfg.decompress(),
        decode_order: DECODE_ORDER,
    });
    if plan.varies {
        req.vary(c"Accept-Encoding");
    }
    for c in Coding::ALL {
        if let (true, Some(s)) = (plan.stale[c.index()], siblings[c.index()]) {
            lookup::warn_stale(req, filename, &s);
        }
    }
    attempt.follow(&plan, siblings)
}

/// What `r->finfo` says of the original: missing when the fixup put a
/// sibling's stat there.
fn original_kind(req: &Request<'_>) -> FileKind {
    match req.finfo().kind() {
        FileKind::Regular if req.notes_get(NOTE_SIBLING_FINFO).is_some() => FileKind::Missing,
        kind => kind,
    }
}

fn method(req: &Request<'_>) -> Method {
    match req.method_number() {
        httpd::M_GET => Method::Get,
        httpd::M_OPTIONS => Method::Options,
        httpd::M_INVALID => Method::Invalid,
        _ => Method::Other,
    }
}

/// What the fast path did.
enum Favourite<'r> {
    /// The response went out.
    Answered(Status),
    /// Not taken; the lookup it made, for the plan.
    Passed(Lookup<'r>),
}

/// Fast path, the common case: the client's favourite coding has a fresh
/// sibling and is preferred to identity, so one lstat decides.
fn favourite<'r>(
    attempt: &Attempt<'_, 'r>,
    accepted: &Accepted,
    ranked: &Ranked,
    original: Option<FileMeta>,
) -> Favourite<'r> {
    let Some((best, q)) = ranked.iter_q().next() else {
        return Favourite::Passed(None);
    };
    let s = lookup::find_sibling(attempt.req, attempt.filename, best);
    if let Some(s) = s {
        let pref = accepted.identity_preference();
        if variant::favourite_answers(q, pref, original, lookup::meta(&s.info)) {
            attempt.req.vary(c"Accept-Encoding");
            if let Ok(st) = respond::send_sibling(attempt, best, s) {
                return Favourite::Answered(st);
            }
        }
    }
    Favourite::Passed(Some((best, s)))
}

/// Dictionary transport (RFC 9842): when the client names `dcz` or `dcb`
/// and announces a dictionary for which a fresh delta exists, the delta
/// answers. Responses vary on `Available-Dictionary` wherever it is read
/// (a request naming a dictionary coding) and in scopes that offer
/// dictionaries.
fn delta(a: &Attempt<'_, '_>, accepted: &Accepted, original: Option<FileMeta>) -> Option<Status> {
    let req = a.req;
    let offers = dir_config(req).use_as_dictionary().is_some();
    let mut codings = variant::delta_codings(accepted).peekable();
    if codings.peek().is_none() {
        if offers {
            a.vary_on_dictionary();
        }
        return None;
    }
    a.vary_on_dictionary();
    let hash = negotiate::available_dictionary(req.header_in(c"Available-Dictionary")?)?;
    for (d, q) in codings {
        let Some(s) = lookup::find_delta(req, a.filename, d, &hash) else {
            continue;
        };
        let pref = accepted.identity_preference();
        if !variant::favourite_answers(q, pref, original, lookup::meta(&s.info)) {
            continue;
        }
        req.vary(c"Accept-Encoding");
        if let Ok(st) = respond::send_delta(a, d, s) {
            return Some(st);
        }
    }
    None
}

/// What the client accepts. Subrequests (mod_include, mod_dir) get
/// identity: their output is embedded in or stands for another response,
/// which negotiates for itself, as mod_deflate leaves them alone too.
fn accepted(req: &Request<'_>) -> Accepted {
    if req.is_subrequest() {
        return Accepted::none();
    }
    let mut accepted = Accepted::parse_bytes(req.header_in(c"Accept-Encoding"));
    if !req.env_is_empty() {
        for c in Coding::ALL {
            if req.env_is_set(c.no_env()) {
                accepted.forbid(c);
            }
        }
    }
    accepted
}

/// An error response made after the handler chose a representation (a
/// 416 from the byterange filter, a filter's 500) keeps only
/// err_headers_out: carry the handler's Vary over, so caches still key
/// the error on Accept-Encoding. Costs nothing on successful responses.
pub fn insert_error_filter(req: &Request<'_>) {
    if !req.handler_is(HANDLER) {
        return;
    }
    for name in [c"Accept-Encoding", c"Available-Dictionary"] {
        let listed = req.header_out(c"Vary").is_some_and(|v| {
            v.split(|&b| b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(name.to_bytes()))
        });
        if listed {
            req.vary_on_error(name);
        }
    }
}

/// Late fixup: when this module will handle an index subrequest whose file
/// is missing but a sibling exists, make the sibling's stat visible so
/// mod_dir accepts it as a DirectoryIndex candidate. Main requests need no
/// help (the handler copes with a missing file), so they pay nothing here.
pub fn fixup(req: &Request<'_>) -> Status {
    if let Some(st) = refuse_store(req) {
        return st;
    }
    if !req.is_subrequest()
        || !req.handler_is(HANDLER)
        || req.finfo().kind() != FileKind::Missing
        || req.rejects_path_info()
    {
        return Status::DECLINED;
    }
    let Some(filename) = req.filename() else {
        return Status::DECLINED;
    };
    let first = dir_config(req)
        .encodings()
        .iter()
        .find_map(|&c| lookup::find_sibling(req, filename, c));
    if let Some(s) = first {
        req.set_finfo(&s.info);
        req.set_note(NOTE_SIBLING_FINFO, c"1");
    }
    Status::DECLINED
}

/// The publish tool's dictionary store holds earlier versions of files
/// that were replaced, perhaps because they must no longer be served:
/// refused whatever the handler, as the module's own files.
fn refuse_store(req: &Request<'_>) -> Option<Status> {
    let filename = req.filename()?;
    if !dictionary::in_store_bytes(filename.to_bytes()) {
        return None;
    }
    req.log_with(Level::Info, 0, || {
        format!(
            "request into the dictionary store refused: {}",
            filename.to_string_lossy()
        )
    });
    Some(Status::NOT_FOUND)
}

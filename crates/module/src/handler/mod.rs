//! The content handler: what the request asks, read once
//! (`negotiation`), and the facts of the files beside it (`facts`) go to
//! `variant` for a decision, the walk hands each
//! candidate it resolves to a responder (`respond`) until one answers,
//! and the counters and the cache learn what went out
//! (`metrics::answered`, `ondemand::ask`). Its neighbours: the index fixup
//! (`fixup`), the error responses' `Vary` (`error_vary`); the metrics
//! route is `status::route`, the store refusal `store_guard`.

pub(crate) mod error_vary;
pub(crate) mod fixup;
pub(crate) mod name;
mod negotiation;
mod script;

use crate::config::Settings;
use crate::facts::disk::{Disk, OpenCopy, Scope};
use crate::facts::{self, Noted, Wanted};
use crate::lookup::Sibling;
use crate::metrics::answered::{self, PassedOver};
use crate::ondemand::ask::ToAsk;
use crate::ondemand::{self, cache};
use crate::respond::Responder;
use crate::site;
use crate::walk::{self, Walked};
use gdn_compressor::job::CodingSet;
use gdn_core::coding::Coding;
use gdn_core::variant::{self, FileMeta, Method, Size, Sizes};
use gdn_httpd::{self, FileKind, Level, Request, Status};
use name::HANDLER;
use negotiation::{Negotiation, OnDemand};

use std::ffi::CStr;

/// The content handler, in four steps: the request's and the disk's
/// facts gathered, `variant`'s decision, the walk sending one
/// representation, and what follows the answer. `settings` reads the
/// configuration, once, for requests this handler takes.
pub fn handle<'r>(req: &Request<'r>, settings: impl FnOnce() -> Settings<'r>) -> Status {
    if !req.handler_is(HANDLER) {
        return Status::DECLINED;
    }
    if let Some(st) = script::step_aside(req) {
        return st;
    }
    let Some(filename) = req.filename() else {
        return Status::DECLINED;
    };
    let kind = original_kind(req);
    if kind == FileKind::Directory {
        return Status::DECLINED;
    }
    if let Some(st) = script::refuse(req, filename, kind) {
        return st;
    }
    if let Some(st) = give_way_to_content_filter(req, kind) {
        return st;
    }
    req.allow_get_options();
    let st = req.discard_body();
    if st != Status::OK {
        return st;
    }
    let settings = settings();
    if let Some(c) = variant::before_files(method(req), req.rejects_path_info()) {
        let disk = Disk::new(req, Scope::bare(filename));
        let send = Responder::new(req, filename, settings);
        let walked = walk::walk(Noted::new(&disk), &[c], |r| send.send(r));
        return after_answer(req, filename, &ResourceSizes::default(), walked, None);
    }
    serve(req, filename, kind, settings)
}

/// Serves a file's representations: the facts gathered, the decision,
/// the walk, and what follows the answer.
fn serve<'r>(
    req: &Request<'r>,
    filename: &'r CStr,
    kind: FileKind,
    settings: Settings<'r>,
) -> Status {
    let asked = Negotiation::read(req, &settings, filename, kind);
    let dir = settings.dir;
    let disk = Disk::new(req, asked.scope(dir.encodings()));
    let facts = Noted::new(&disk);
    // The default order sends the smallest; an admin's order is fixed.
    let sizes = (asked.original.is_some() && dir.smallest_first())
        .then(|| facts::sizes(&facts, &asked.ranked, &asked.deltas));
    let candidates = variant::candidates(&asked.inputs(&settings, sizes));
    let period = settings.site_period;
    let send = Responder::new(req, filename, settings)
        .with(asked.dictionary, asked.link)
        .with_original(kind == FileKind::Regular);
    let walked = walk::walk(facts, candidates.as_slice(), |r| send.send(r));
    let resource = ResourceSizes::of(asked.original, sizes);
    let status = after_answer(req, filename, &resource, walked, asked.on_demand);
    if let Some(c) = asked.site_cache() {
        site::judge(req, c, period);
    }
    status
}

/// What the counters need of the resource beside the walk: the
/// original's size and the br size the decision learned, where known.
#[derive(Default)]
struct ResourceSizes {
    original: Option<u64>,
    br: Option<u64>,
}

impl ResourceSizes {
    fn of(original: Option<FileMeta>, sizes: Option<Sizes>) -> Self {
        let br = sizes.map(|s| s.codings[Coding::Br.index()]);
        ResourceSizes {
            original: original.map(|o| o.size),
            br: match br {
                Some(Size::Bytes(b)) => Some(b),
                _ => None,
            },
        }
    }
}

/// What follows an answer, from what the walk learned alone: the siblings
/// passed over counted, the decoded copies missing asked for (whether or
/// not it answered), the cache told of the copy sent and asked for those
/// missing, the response counted as it went out, and its log note.
fn after_answer<'r>(
    req: &Request<'r>,
    filename: &CStr,
    resource: &ResourceSizes,
    walked: Walked<'r, &Sibling<'r>, OpenCopy<'r>>,
    on_demand: Option<OnDemand<'r>>,
) -> Status {
    let Walked {
        answer,
        tried,
        learned,
        sent_copy,
    } = walked;
    let (stale, undecodable, window) = (learned.stale, tried.undecodable, tried.window);
    answered::passed_over(&PassedOver {
        stale,
        undecodable,
        window,
    });
    let asked = on_demand.map(|o| {
        let missing = missing(learned.wanted(o.sent_once_made));
        ondemand::ask::decoded_copies(req, o.cache, &missing);
        (o, missing)
    });
    let Some(a) = answer else {
        return Status::NOT_FOUND;
    };
    let queued = asked.is_some_and(|(o, missing)| {
        let copy = sent_copy.filter(|_| a.outcome.is_copy()).map(|c| c.key);
        ondemand::ask::sent(req, o.cache, copy);
        ondemand::ask::copies(req, o.cache, filename, o.version, &missing, o.made)
    });
    let resource = answered::Resource {
        original: resource.original,
        br: || resource.br.or(learned.br_size()),
        stale: stale.contains(&true),
    };
    answered::record(req, a, resource, queued);
    a.status
}

/// The copies a request asks the compressor for, as jobs name them.
fn missing<'r>(w: Wanted<&Sibling<'r>>) -> ToAsk<'r> {
    ToAsk {
        codings: w.copy.into_iter().fold(CodingSet::empty(), CodingSet::with),
        delta: w.delta,
        decoded: w
            .decoded
            .map(|s| s.map(|s| (s.path, cache::version_of(&s.info)))),
    }
}

/// A filter that may change the content (mod_include, mod_substitute,
/// any filter not known to leave it as the file holds it) is about to
/// run: no sibling, copy or delta holds what it would make of the file,
/// so Apache answers, as it would without the module (core's handler,
/// or 404 where only a sibling exists).
fn give_way_to_content_filter(req: &Request<'_>, kind: FileKind) -> Option<Status> {
    let filter = req.content_filter()?;
    req.log_with(Level::Debug, 0, || {
        format!(
            "output filter {} may change the content: answered by Apache",
            filter.to_string_lossy()
        )
    });
    Some(match kind {
        FileKind::Regular => Status::DECLINED,
        _ => Status::NOT_FOUND,
    })
}

/// What `r->finfo` says of the original: missing when the fixup put a
/// sibling's stat there.
fn original_kind(req: &Request<'_>) -> FileKind {
    match req.finfo().kind() {
        FileKind::Regular if fixup::put_sibling_finfo(req) => FileKind::Missing,
        kind => kind,
    }
}

fn method(req: &Request<'_>) -> Method {
    match req.method_number() {
        gdn_httpd::M_GET => Method::Get,
        gdn_httpd::M_OPTIONS => Method::Options,
        gdn_httpd::M_INVALID => Method::Invalid,
        _ => Method::Other,
    }
}

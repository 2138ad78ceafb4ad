//! The content handler: the facts of the request and of the files beside
//! it (`facts`) go to `variant` for a decision, the walk hands each
//! candidate it resolves to a responder (`respond`) until one answers,
//! and the counters and the cache learn what went out
//! (`metrics::answered`, `ondemand::ask`). Its neighbours: the index fixup
//! (`fixup`), the error responses' `Vary` (`error_vary`); the metrics
//! route is `status::route`, the store refusal `store_guard`.

pub(crate) mod error_vary;
pub(crate) mod fixup;
pub(crate) mod name;
mod script;

use crate::config::{Settings, UseAsDictionary};
use crate::facts::disk::{Copy, Disk, Scope};
use crate::facts::{self, Noted, Wanted};
use crate::lookup::{self, Sibling};
use crate::metrics::answered::{self, PassedOver};
use crate::ondemand::ask::{Missing, OnDemandDeltas};
use crate::ondemand::{self, cache};
use crate::respond::Responder;
use crate::site;
use crate::walk::{self, Walked};
use gdn_compressor::job::CodingSet;
use gdn_compressor::key::Version;
use gdn_core::coding::Coding;
use gdn_core::negotiate::{self, Accepted, Ranked};
use gdn_core::variant::{self, FileMeta, Inputs, Method, Size, Sizes};
use gdn_httpd::{self, FileKind, Level, Request, Status};
use name::HANDLER;

use std::ffi::CStr;

/// The content handler, in four steps: the request's and the disk's
/// facts gathered, `variant`'s decision, the walk sending one
/// representation, and what follows the answer. `settings` reads the
/// configuration, once, for requests this handler takes.
pub fn handle<'r>(req: &Request<'r>, settings: impl FnOnce() -> Settings<'r>) -> Status {
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
        return after_answer(req, filename, &Resource::default(), walked, None);
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
    let original = (kind == FileKind::Regular).then(|| lookup::meta(&req.finfo()));
    let accepted = accepted(req);
    let (deltas, dictionary) = announced(req, &settings, &accepted);
    let dir = settings.dir;
    let (cache, made) = on_demand(req, &settings, filename, original);
    let version = cache.map(|_| cache::version_of(&req.finfo()));
    let disk = Disk::new(
        req,
        Scope {
            filename,
            allowed: dir.encodings(),
            original,
            dictionary,
            cache,
            deltas_on_demand: made.is_some(),
            version,
        },
    );
    let facts = Noted::new(&disk);
    let ranked = accepted.ranked(dir.encodings());
    let sent_once_made = sent_once_made(&settings, &ranked);
    // The default order sends the smallest; an admin's order is fixed.
    let sizes = (original.is_some() && dir.smallest_first())
        .then(|| facts::sizes(&facts, &ranked, &deltas));
    let candidates = variant::candidates(&Inputs {
        original,
        ranked,
        allowed: dir.encodings(),
        identity_preference: accepted.identity_preference(),
        decompress: dir.decompress(),
        deltas,
        cache: cache.is_some(),
        sizes,
    });
    let link = site_link(req, &settings, cache.zip(made), dictionary.as_ref());
    let period = settings.site_period;
    let send = Responder::new(req, filename, settings)
        .with(dictionary, link)
        .with_original(kind == FileKind::Regular);
    let walked = walk::walk(facts, candidates.as_slice(), |r| send.send(r));
    let resource = Resource::of(original, sizes);
    let asked = cache.zip(version).map(|(cache, version)| OnDemand {
        cache,
        version,
        made,
        sent_once_made,
    });
    let status = after_answer(req, filename, &resource, walked, asked);
    if let (Some(c), Some(OnDemandDeltas { site: true, .. })) = (cache, made) {
        site::judge(req, c, period);
    }
    status
}

/// The `Link` to the host's site dictionary, on a page that joins it.
fn site_link<'r>(
    req: &Request<'r>,
    settings: &Settings<'r>,
    on_demand: Option<(&'static cache::Active, OnDemandDeltas<'r>)>,
    dictionary: Option<&[u8; 32]>,
) -> Option<&'r CStr> {
    match (settings.site_dictionary, on_demand) {
        (Some(path), Some((cache, d))) if d.site => site::page_link(req, cache, path, dictionary),
        _ => None,
    }
}

/// The on-demand cache, where the request's scope has it on and the file
/// is worth it (a compressible original's codings, or a sibling's decoded
/// content where there is no original), and the deltas it makes there.
fn on_demand<'r>(
    req: &Request<'r>,
    settings: &Settings<'r>,
    filename: &CStr,
    original: Option<FileMeta>,
) -> (Option<&'static cache::Active>, Option<OnDemandDeltas<'r>>) {
    let cache = settings
        .dir
        .on_demand()
        .then(cache::active)
        .flatten()
        .filter(|_| original.is_none_or(|o| cache::compressible(filename, o.size)))
        .filter(|_| original.is_none() || static_type(req));
    let made = match (cache, original) {
        (Some(_), Some(_)) => deltas_on_demand(req, settings),
        _ => None,
    };
    (cache, made)
}

/// True when the type Apache gave the request is one that compresses:
/// an `AddType` or `ForceType` of the admin's decides over the name.
fn static_type(req: &Request<'_>) -> bool {
    req.content_type()
        .is_some_and(gdn_core::types::is_compressible_type)
}

/// What the counters need of the resource beside the walk: the
/// original's size and the br size the decision learned, where known.
#[derive(Default)]
struct Resource {
    original: Option<u64>,
    br: Option<u64>,
}

impl Resource {
    fn of(original: Option<FileMeta>, sizes: Option<Sizes>) -> Self {
        let br = sizes.map(|s| s.codings[Coding::Br.index()]);
        Resource {
            original: original.map(|o| o.size),
            br: match br {
                Some(Size::Bytes(b)) => Some(b),
                _ => None,
            },
        }
    }
}

/// The one copy worth asking for: what this client gets once it exists
/// (the default order sends the smallest; an admin's order is fixed).
fn sent_once_made(settings: &Settings<'_>, ranked: &Ranked) -> Option<Coding> {
    if settings.dir.smallest_first() {
        variant::likely_sent(ranked)
    } else {
        ranked.iter_q().next().map(|(c, _)| c)
    }
}

/// The on-demand cache in a request's scope, as the steps after the
/// answer ask it.
#[derive(Clone, Copy)]
struct OnDemand<'r> {
    cache: &'static cache::Active,
    /// The original's version, as jobs name it.
    version: Version,
    made: Option<OnDemandDeltas<'r>>,
    /// The one copy worth asking for: what this client gets once it exists.
    sent_once_made: Option<Coding>,
}

/// What follows an answer, from what the walk learned alone: the siblings
/// passed over counted, the decoded copies missing asked for (whether or
/// not it answered), the cache told of the copy sent and asked for those
/// missing, the response counted as it went out, and its log note.
fn after_answer<'r>(
    req: &Request<'r>,
    filename: &CStr,
    resource: &Resource,
    walked: Walked<'r, &Sibling<'r>, Copy<'r>>,
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
fn missing<'r>(w: Wanted<&Sibling<'r>>) -> Missing<'r> {
    Missing {
        codings: w.copy.into_iter().fold(CodingSet::empty(), CodingSet::with),
        delta: w.delta,
        decoded: w
            .decoded
            .map(|s| s.map(|s| (s.path, cache::version_of(&s.info)))),
    }
}

/// Deltas on demand in the request's scope: its file's own versions
/// (`GzipDiskNgUseAsDictionary self`), its versioned group's (a pattern),
/// and, for an HTML page where `GzipDiskNgSiteDictionary` is set, the
/// host's site dictionary. A page served to an authenticated user never
/// joins the site dictionary, which anyone may fetch.
fn deltas_on_demand<'r>(req: &Request<'r>, settings: &Settings<'r>) -> Option<OnDemandDeltas<'r>> {
    let dir = settings.dir;
    let (versions, group) = match dir.use_as_dictionary() {
        _ if dir.delta_versions() == 0 => (0, None),
        Some(UseAsDictionary::OwnPath { .. }) => (dir.delta_versions(), None),
        Some(UseAsDictionary::Header { pattern, .. }) => {
            (dir.delta_versions(), Some(pattern.as_str()))
        }
        _ => (0, None),
    };
    let page = req
        .content_type()
        .is_some_and(|t| t.len() >= 9 && t[..9].eq_ignore_ascii_case(b"text/html"));
    let site = settings.site_dictionary.is_some() && page && req.user().is_none();
    (versions > 0 || site).then_some(OnDemandDeltas {
        versions,
        group,
        site,
    })
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

/// The delta codings a request names, with their q-values.
type Deltas = [Option<(gdn_core::coding::DeltaCoding, u16)>; 2];

/// The delta codings the request may get and the dictionary it
/// announced: no delta coding without a dictionary this scope serves.
fn announced(
    req: &Request<'_>,
    settings: &Settings<'_>,
    accepted: &Accepted,
) -> (Deltas, Option<[u8; 32]>) {
    let deltas = variant::delta_codings(accepted);
    match announced_dictionary(req, settings, &deltas) {
        Some(d) => (deltas, Some(d)),
        None => ([None; 2], None),
    }
}

/// Dictionary transport (RFC 9842): the dictionary the client announced,
/// when it names `dcz` or `dcb`. Responses vary on `Available-Dictionary`
/// wherever it is read (a request naming a dictionary coding), in scopes
/// that offer dictionaries and in hosts with a site dictionary.
fn announced_dictionary(
    req: &Request<'_>,
    settings: &Settings<'_>,
    deltas: &Deltas,
) -> Option<[u8; 32]> {
    let named = deltas.iter().any(Option::is_some);
    let offered = settings.dir.use_as_dictionary().is_some() || settings.site_dictionary.is_some();
    if named || offered {
        req.vary(c"Available-Dictionary");
    }
    if !named {
        return None;
    }
    negotiate::available_dictionary(req.header_in(c"Available-Dictionary")?)
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

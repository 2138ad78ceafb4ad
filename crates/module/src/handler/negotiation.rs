//! What a request asks of a file, read once before any lookup: the
//! codings it accepts and their ranking in this scope, the deltas and
//! the dictionary it announced, the original's stat, the on-demand
//! cache's part (its scope, the file's version, the deltas made there,
//! the copy worth asking for) and the site dictionary's (the `Link`, the
//! period's judgment). Each step of the handler borrows it.

use crate::config::{self, Settings};
use crate::facts::disk::Scope;
use crate::lookup;
use crate::memo;
use crate::ondemand::ask::OnDemandDeltas;
use crate::ondemand::cache;
use crate::site;
use gdn_compressor::key::Version;
use gdn_core::coding::{Coding, DeltaCoding};
use gdn_core::negotiate::{self, Accepted, Ranked};
use gdn_core::variant::{self, FileMeta, Inputs, Sizes};
use gdn_httpd::{FileKind, Request};
use gdn_publish::store::Store;
use std::ffi::CStr;

/// The delta codings a request names, with their q-values.
type Deltas = [Option<(DeltaCoding, u16)>; 2];

/// The request's negotiation, read once.
pub(super) struct Negotiation<'r> {
    pub filename: &'r CStr,
    /// The original's stat, where it exists.
    pub original: Option<FileMeta>,
    /// The client's identity q (an original goes before a coding it
    /// likes less).
    identity_preference: u16,
    /// The codings accepted, best first, within those the scope allows.
    pub ranked: Ranked,
    /// The delta codings it may get: none without a dictionary this
    /// scope serves.
    pub deltas: Deltas,
    /// The dictionary it announced (SHA-256).
    pub dictionary: Option<[u8; 32]>,
    /// The publish store of the file's tree, where a dictionary was
    /// announced (`GzipDiskNgDeltaStore`).
    store: Option<&'r Store>,
    /// The on-demand cache's part, where the scope has it on and the
    /// file is worth it.
    pub on_demand: Option<OnDemand<'r>>,
    /// The `Link` to the host's site dictionary, on a page that joins it.
    pub link: Option<&'r CStr>,
}

/// The on-demand cache in a request's scope.
#[derive(Clone, Copy)]
pub(super) struct OnDemand<'r> {
    pub cache: &'static cache::Active,
    /// The original's version, as jobs name it.
    pub version: Version,
    /// The deltas made there.
    pub made: Option<OnDemandDeltas<'r>>,
    /// The one copy worth asking for: what this client gets once it exists.
    pub sent_once_made: Option<Coding>,
}

impl<'r> Negotiation<'r> {
    /// Reads what `req` asks of `filename`, whose original is `kind`.
    pub fn read(
        req: &Request<'r>,
        settings: &Settings<'r>,
        filename: &'r CStr,
        kind: FileKind,
    ) -> Self {
        let original = (kind == FileKind::Regular).then(|| lookup::meta(&req.finfo()));
        let accepted = accepted(req);
        let (deltas, dictionary) = announced(req, settings, &accepted);
        let ranked = accepted.ranked(settings.dir.encodings());
        let on_demand =
            on_demand(req, settings, filename, original).map(|(cache, made)| OnDemand {
                cache,
                version: cache::version_of(&req.finfo()),
                made,
                sent_once_made: sent_once_made(settings, &ranked),
            });
        let link = match (settings.site_dictionary, on_demand) {
            (Some(path), Some(o)) if o.made.is_some_and(|d| d.site) => {
                site::page_link(req, o.cache, path, dictionary.as_ref())
            }
            _ => None,
        };
        let store = dictionary.and_then(|_| config::store_for(settings.delta_stores, filename));
        Negotiation {
            filename,
            original,
            identity_preference: accepted.identity_preference(),
            ranked,
            deltas,
            dictionary,
            store,
            on_demand,
            link,
        }
    }

    /// What the disk's lookups may find in this scope.
    pub fn scope(&self, allowed: &'r [Coding]) -> Scope<'r> {
        Scope {
            filename: self.filename,
            allowed,
            original: self.original,
            dictionary: self.dictionary,
            cache: self.on_demand.map(|o| o.cache),
            store: self.store,
            deltas_on_demand: self.on_demand.is_some_and(|o| o.made.is_some()),
            version: self.on_demand.map(|o| o.version),
        }
    }

    /// The decision's inputs, with the sizes the facts gave.
    pub fn inputs<'a>(&self, settings: &'a Settings<'_>, sizes: Option<Sizes>) -> Inputs<'a> {
        Inputs {
            original: self.original,
            ranked: self.ranked,
            allowed: settings.dir.encodings(),
            identity_preference: self.identity_preference,
            decompress: settings.dir.decompress(),
            deltas: self.deltas,
            cache: self.on_demand.is_some(),
            sizes,
        }
    }

    /// The cache, where the page joins its host's site dictionary: this
    /// period's judgment of its pages is asked there after the answer.
    pub fn site_cache(&self) -> Option<&'static cache::Active> {
        self.on_demand
            .filter(|o| o.made.is_some_and(|d| d.site))
            .map(|o| o.cache)
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
) -> Option<(&'static cache::Active, Option<OnDemandDeltas<'r>>)> {
    let cache = settings
        .dir
        .on_demand()
        .then(cache::active)
        .flatten()
        .filter(|_| original.is_none_or(|o| cache::compressible(filename, o.size)))
        .filter(|_| original.is_none() || static_type(req))?;
    let made = original.and_then(|_| OnDemandDeltas::of(req, settings));
    Some((cache, made))
}

/// True when the type Apache gave the request is one that compresses:
/// an `AddType` or `ForceType` of the admin's decides over the name.
fn static_type(req: &Request<'_>) -> bool {
    req.content_type()
        .is_some_and(gdn_core::types::is_compressible_type)
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
    let mut accepted = memo::accepted::parsed(req.header_in(c"Accept-Encoding"));
    if !req.env_is_empty() {
        for c in Coding::ALL {
            if req.env_is_set(c.no_env()) {
                accepted.forbid(c);
            }
        }
    }
    accepted
}

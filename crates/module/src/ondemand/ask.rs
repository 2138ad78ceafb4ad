//! The on-demand cache's part of what follows an answer: the copy sent
//! is marked used, and the copies, deltas and decoded copies the request
//! found missing are asked of the compressor. The request never waits
//! for them.

use super::cache::Active;
use crate::config::{Settings, UseAsDictionary};
use gdn_compressor::job::{CodingSet, JobDeltas};
use gdn_compressor::key::{Kind, SourceHash, Version};
use gdn_httpd::{Level, Request};
use std::ffi::CStr;

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

impl<'r> OnDemandDeltas<'r> {
    /// Deltas on demand in the request's scope: its file's own versions
    /// (`GzipDiskNgUseAsDictionary self`), its versioned group's (a pattern),
    /// and, for an HTML page where `GzipDiskNgSiteDictionary` is set, the
    /// host's site dictionary. A page served to an authenticated user never
    /// joins the site dictionary, which anyone may fetch.
    pub fn of(req: &Request<'r>, settings: &Settings<'r>) -> Option<Self> {
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

    /// What of this scope may feed a dictionary others fetch or decode
    /// with: a site dictionary (anyone may fetch it) and a group's kept
    /// versions (another file's deltas) learn a page only when Apache
    /// would send it, as it is, to a client no rule knows. Asked once
    /// per job, not per request; the file's own versions stay.
    fn public_only(self, req: &Request<'_>) -> Self {
        if !self.site && self.group.is_none() {
            return self;
        }
        match crate::policy::public(&req.ask_public()) {
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

/// What one request found missing from the cache: the copies to ask
/// the compressor for.
#[derive(Clone, Copy, Debug, Default)]
pub struct ToAsk<'r> {
    /// Copies of the original, by coding.
    pub codings: CodingSet,
    /// A delta against a dictionary the cache keeps.
    pub delta: bool,
    /// Each coding's fresh sibling whose decoded copy is missing: its
    /// path and version.
    pub decoded: [Option<(&'r CStr, Version)>; 3],
}

/// Marks the copy an answer sent as used, for least-recently-used
/// eviction.
pub fn sent(req: &Request<'_>, cache: &Active, copy: Option<(SourceHash, Kind)>) {
    if let Some((source, kind)) = copy {
        cache.touch(source, kind, req.request_time_secs());
    }
}

/// Asks the compressor for the copies of the original `filename`
/// (version `v`) this request found missing; whether a job was sent. A
/// new version (its copies missing) joins its histories; a delta missing
/// against a version the cache keeps is made again.
pub fn copies(
    req: &Request<'_>,
    cache: &Active,
    filename: &CStr,
    v: Version,
    missing: &ToAsk<'_>,
    deltas: Option<OnDemandDeltas<'_>>,
) -> bool {
    let wanted = missing.codings;
    let deltas = deltas
        .filter(|_| !wanted.is_empty() || missing.delta)
        .map(|d| d.public_only(req));
    if wanted.is_empty() && deltas.is_none() {
        return false;
    }
    let host = deltas.map(|_| req.host_key()).unwrap_or_default();
    let group = deltas
        .and_then(|d| d.group)
        .map(|p| [host, b" ", p.as_bytes()].concat())
        .unwrap_or_default();
    let deltas = deltas.map(|d| JobDeltas {
        versions: d.versions,
        group: &group,
        site: if d.site { host } else { &[] },
    });
    cache.queue_compress(filename, v, wanted, deltas, req.request_time_us())
}

/// Asks for the decoded copies this request found missing, whether or
/// not it answered (the siblings were decoded meanwhile).
pub fn decoded_copies(req: &Request<'_>, cache: &Active, missing: &ToAsk<'_>) {
    for (c, found) in gdn_core::coding::Coding::ALL.iter().zip(missing.decoded) {
        if let Some((path, v)) = found {
            cache.queue_decode(path, *c, v, req.request_time_secs());
        }
    }
}

//! The facts over Apache: what the disk says of one request's resource,
//! for the decision and the walk: the siblings as Apache would serve
//! them, the published deltas, what the on-demand cache holds, and the
//! sizes remembered per version of the original. Each is looked up the
//! first time it is asked and kept for the request, so the common case
//! costs one lookup and none is made twice.

use super::{Facts, Held, Seen};
use crate::delta_dictionary::Sources;
use crate::lookup::{self, Route, Sibling};
use crate::memo;
use crate::ondemand::cache::{Active, CachedCopy};
use crate::verified_delta::{self, Verdict};
use gdn_compressor::key::{Kind, Named, SourceHash, Version};
use gdn_core::coding::{Coding, DeltaCoding};
use gdn_core::variant::{self, FileMeta, Size, Sizes};
use gdn_httpd::{File, Request};
use gdn_publish::store::Store;
use std::cell::OnceCell;
use std::ffi::CStr;

/// A copy in the on-demand cache, opened.
#[derive(Clone, Copy)]
pub struct OpenCopy<'r> {
    pub path: &'r CStr,
    pub file: File<'r>,
    /// What names it in the cache: the digest of the bytes it was made
    /// from, and what it holds of them.
    pub key: (SourceHash, Kind),
}

/// What a request's scope says of its resource, before any lookup.
#[derive(Clone, Copy)]
pub struct Scope<'r> {
    pub filename: &'r CStr,
    /// The codings this scope serves.
    pub allowed: &'r [Coding],
    /// The original's stat, where it exists.
    pub original: Option<FileMeta>,
    /// The dictionary the client announced (SHA-256), for deltas.
    pub dictionary: Option<[u8; 32]>,
    /// The on-demand cache, where this request's scope has it on.
    pub cache: Option<&'static Active>,
    /// The publish store of the file's tree (`GzipDiskNgDeltaStore`),
    /// where a dictionary was announced.
    pub store: Option<&'r Store>,
    /// Whether this scope makes deltas on demand.
    pub deltas_on_demand: bool,
    /// The original's version as jobs name it, where the cache is on.
    pub version: Option<Version>,
}

impl<'r> Scope<'r> {
    /// A scope that serves no coding (an answer before any file).
    pub fn bare(filename: &'r CStr) -> Self {
        Scope {
            filename,
            allowed: &[],
            original: None,
            dictionary: None,
            cache: None,
            store: None,
            deltas_on_demand: false,
            version: None,
        }
    }
}

/// The facts of one request's resource. Made once, in place: it holds
/// every lookup's answer, a few kilobytes not worth moving.
pub struct Disk<'a, 'r> {
    req: &'a Request<'r>,
    scope: Scope<'r>,
    siblings: Siblings<Sibling<'r>>,
    deltas: [OnceCell<Option<Sibling<'r>>>; 2],
    copies: [OnceCell<Held<OpenCopy<'r>>>; 3],
    decoded_copies: [OnceCell<Held<OpenCopy<'r>>>; 3],
    cached_deltas: [OnceCell<Held<OpenCopy<'r>>>; 2],
    /// The sizes remembered for the original's version, checked against
    /// each representation looked up.
    memo: OnceCell<Sizes>,
    /// The digest of the original's bytes, as this host recorded it:
    /// what names its copies and deltas.
    source: OnceCell<Option<Named>>,
}

impl<'a, 'r> Disk<'a, 'r> {
    pub fn new(req: &'a Request<'r>, scope: Scope<'r>) -> Self {
        Disk {
            req,
            scope,
            siblings: Siblings::default(),
            deltas: Default::default(),
            copies: Default::default(),
            decoded_copies: Default::default(),
            cached_deltas: Default::default(),
            memo: OnceCell::new(),
            source: OnceCell::new(),
        }
    }

    /// The digest of the original's bytes (the file the request resolved
    /// to, as it is now), where this host knows it: looked up once per
    /// request.
    fn original_source(&self) -> Option<Named> {
        *self.source.get_or_init(|| {
            self.scope
                .cache
                .and_then(|cache| cache.source(self.req, &self.req.finfo()))
        })
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

    fn found(&self, c: Coding) -> &Seen<Sibling<'r>> {
        self.siblings.get(c, || {
            if !self.scope.allowed.contains(&c) {
                return None;
            }
            // With the original, a sibling is sent only once verified
            // to decode to it (`lookup::Route::Verified`).
            let route = match self.scope.original {
                Some(_) => Route::Verified,
                None => Route::OwnName,
            };
            let found = lookup::find_sibling(self.req, self.scope.filename, c, route);
            let fresh = found
                .as_ref()
                .filter(|s| variant::usable(lookup::meta(&s.info), self.scope.original));
            match fresh {
                Some(s) => self.check_memo(c, Size::Bytes(s.info.size())),
                None if self.scope.cache.is_none() => self.check_memo(c, Size::Absent),
                None => {}
            }
            let s = found?;
            let fresh = fresh.is_some();
            if !fresh {
                lookup::warn_stale(self.req, self.scope.filename, &s);
            }
            Some((s, fresh))
        })
    }

    /// The published delta against `hash`, fresh: beside an original and
    /// with the dictionary kept in the cache or the tree's publish store,
    /// sent once it decodes to the original (`verified_delta`) without
    /// asking its own name; one found not to, never; else as its own
    /// name's rules decide.
    fn published_delta(&self, d: DeltaCoding, hash: &[u8; 32]) -> Option<Sibling<'r>> {
        let (req, base, original) = (self.req, self.scope.filename, self.scope.original);
        let fresh = |s: Sibling<'r>| variant::usable(lookup::meta(&s.info), original).then_some(s);
        let sources = Sources {
            cache: self.scope.cache,
            store: self.scope.store,
        };
        if let (Some(_), true) = (original, sources.any()) {
            if let Some(s) = lookup::find_delta(req, base, d, hash, Route::Verified) {
                let s = fresh(s)?;
                match verified_delta::judge(req, sources, d, hash, &s, base) {
                    Verdict::Page => return Some(s),
                    Verdict::Not => return None,
                    Verdict::Unchecked => {}
                }
            }
        }
        fresh(lookup::find_delta(req, base, d, hash, Route::OwnName)?)
    }

    fn find_copy(&self, c: Coding) -> Held<OpenCopy<'r>> {
        let Some(cache) = self.scope.cache else {
            return Held::NotWorth;
        };
        let asked = self.scope.version.as_ref();
        if asked.is_some_and(|v| cache.asked_lately(v, c, self.req.request_time_us())) {
            return Held::Missing;
        }
        match self.original_source() {
            Some(source) => find(self.req, cache, source, Kind::Coded(c)),
            None => Held::Missing,
        }
    }
}

/// The facts borrowed: a sibling found is handed on by reference, not
/// copied (its stat is most of its size).
impl<'d, 'r> Facts for &'d Disk<'_, 'r> {
    type Found = &'d Sibling<'r>;
    type OpenCopy = OpenCopy<'r>;

    fn sibling(&self, c: Coding) -> Seen<&'d Sibling<'r>> {
        Disk::found(self, c).as_ref()
    }

    fn delta(&self, d: DeltaCoding) -> Option<&'d Sibling<'r>> {
        self.deltas[d.index()]
            .get_or_init(|| {
                let hash = self.scope.dictionary.as_ref()?;
                self.published_delta(d, hash)
            })
            .as_ref()
    }

    /// A missing delta on demand is asked for only when the cache keeps
    /// the dictionary: a hash it does not know (never served here,
    /// forged, evicted) costs one stat and asks for nothing.
    fn cached_delta(&self, d: DeltaCoding) -> Held<OpenCopy<'r>> {
        *self.cached_deltas[d.index()].get_or_init(|| {
            let (Some(cache), Some(h)) = (self.scope.cache, self.scope.dictionary.as_ref()) else {
                return Held::NotWorth;
            };
            if !self.scope.deltas_on_demand {
                return Held::NotWorth;
            }
            let found = match self.original_source() {
                Some(source) => find(self.req, cache, source, Kind::Delta(d, *h)),
                None => Held::Missing,
            };
            match found {
                Held::Missing if !cache.keeps(self.req, h) => Held::NotWorth,
                held => held,
            }
        })
    }

    fn copy(&self, c: Coding) -> Held<OpenCopy<'r>> {
        *self.copies[c.index()].get_or_init(|| {
            let held = self.find_copy(c);
            if let Held::Ready(copy) = held {
                self.check_memo(c, Size::Bytes(copy.file.info().size()));
            }
            held
        })
    }

    fn decoded_copy(&self, c: Coding, s: &&'d Sibling<'r>) -> Held<OpenCopy<'r>> {
        *self.decoded_copies[c.index()].get_or_init(|| match self.scope.cache {
            Some(cache) => match cache.source(self.req, &s.info) {
                Some(source) => find(self.req, cache, source, Kind::Decoded(c)),
                None => Held::Missing,
            },
            None => Held::NotWorth,
        })
    }

    fn cache_on(&self) -> bool {
        self.scope.cache.is_some()
    }

    fn found_size(s: &&'d Sibling<'r>) -> u64 {
        s.info.size()
    }

    fn copy_size(c: &OpenCopy<'r>) -> u64 {
        c.file.info().size()
    }

    fn remembered_sizes(&self) -> Option<Sizes> {
        let (v, now) = (self.req.finfo().version(), self.req.request_time_secs());
        memo::size::get(&v, now)
    }

    /// The sizes are checked against each representation looked up from
    /// now on (`check_memo`).
    fn remember_sizes(&self, sizes: Sizes, learned: bool) {
        if learned {
            let (v, now) = (self.req.finfo().version(), self.req.request_time_secs());
            memo::size::put(v, sizes, now);
        }
        let _ = self.memo.set(sizes);
    }
}

/// The copy of `source` holding `kind` in the cache, as the walk takes it.
fn find<'r>(req: &Request<'r>, cache: &Active, source: Named, kind: Kind) -> Held<OpenCopy<'r>> {
    match cache.find(req, &source, kind) {
        CachedCopy::Ready(path, file) => Held::Ready(OpenCopy {
            path,
            file,
            key: (*source.source(), kind),
        }),
        CachedCopy::NotWorth => Held::NotWorth,
        CachedCopy::Missing => Held::Missing,
    }
}

/// A request's siblings, each looked up the first time a candidate asks,
/// so the common case costs one stat and none is looked up twice.
struct Siblings<S>([OnceCell<Seen<S>>; 3]);

impl<S> Default for Siblings<S> {
    fn default() -> Self {
        Siblings([OnceCell::new(), OnceCell::new(), OnceCell::new()])
    }
}

impl<S> Siblings<S> {
    /// What is known of `c`, looking it up with `find` (the sibling, and
    /// whether it is fresh) the first time.
    fn get(&self, c: Coding, find: impl FnOnce() -> Option<(S, bool)>) -> &Seen<S> {
        self.0[c.index()].get_or_init(|| match find() {
            Some((s, true)) => Seen::Fresh(s),
            Some((_, false)) => Seen::Stale,
            None => Seen::Missing,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::cell::Cell;

    #[test]
    fn siblings_are_looked_up_once() {
        let table = Siblings::default();
        let looked = Cell::new(0);
        let find = |r: Option<(&'static str, bool)>| {
            let looked = &looked;
            move || {
                looked.set(looked.get() + 1);
                r
            }
        };
        let fresh = Seen::Fresh("x.gz");
        assert_eq!(*table.get(Coding::Gzip, find(Some(("x.gz", true)))), fresh);
        assert_eq!(*table.get(Coding::Gzip, find(None)), fresh);
        assert_eq!(
            *table.get(Coding::Zstd, find(Some(("x.zst", false)))),
            Seen::Stale
        );
        assert_eq!(*table.get(Coding::Br, find(None)), Seen::Missing);
        assert_eq!(
            *table.get(Coding::Br, find(Some(("x.br", true)))),
            Seen::Missing
        );
        assert_eq!(looked.get(), 3);
    }
}

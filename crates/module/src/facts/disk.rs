//! What the disk says of one request's resource, gathered for the
//! decision and the walk: the siblings as Apache would serve them, the
//! published deltas, what the on-demand cache holds, and the sizes
//! remembered per version of the original. Each is looked up the first
//! time it is asked and kept for the request, so the common case costs
//! one lookup and none is made twice; what was found missing is what the
//! compressor is asked for once the request is answered.

use super::{Facts, Held, Seen};
use crate::lookup::{self, Sibling};
use crate::memo;
use crate::ondemand::ask::Missing;
use crate::ondemand::cache::{self, Active, CachedCopy};
use crate::ondemand::job::CodingSet;
use crate::ondemand::key::{Kind, Source, Version};
use crate::outcome::Outcome;
use gdn_core::coding::{Coding, DeltaCoding};
use gdn_core::negotiate::Ranked;
use gdn_core::variant::{self, FileMeta, Size, Sizes};
use gdn_httpd::{File, Finfo, Request};
use std::cell::OnceCell;
use std::ffi::CStr;

/// A copy in the on-demand cache, where it is, opened.
pub type Copy<'r> = (&'r CStr, File<'r>);

/// The facts of one request's resource.
pub struct Disk<'a, 'r> {
    req: &'a Request<'r>,
    filename: &'r CStr,
    /// The codings this scope serves.
    allowed: &'r [Coding],
    original: Option<FileMeta>,
    siblings: Siblings<Sibling<'r>>,
    /// The dictionary the client announced (SHA-256), for deltas.
    dictionary: Option<[u8; 32]>,
    deltas: [OnceCell<Option<Sibling<'r>>>; 2],
    /// The on-demand cache, where this request's scope has it on.
    cache: Option<&'static Active>,
    /// Whether this scope makes deltas on demand.
    deltas_on_demand: bool,
    copies: [OnceCell<Held<Copy<'r>>>; 3],
    decoded_copies: [OnceCell<Held<Copy<'r>>>; 3],
    cached_deltas: [OnceCell<Held<Copy<'r>>>; 2],
    /// The sizes remembered for the original's version, checked against
    /// each representation looked up.
    memo: OnceCell<Sizes>,
    /// The digest of the original's bytes, as this host recorded it:
    /// what names its copies and deltas.
    source: OnceCell<Option<Source>>,
}

impl<'a, 'r> Disk<'a, 'r> {
    pub fn new(req: &'a Request<'r>, filename: &'r CStr, allowed: &'r [Coding]) -> Self {
        Disk {
            req,
            filename,
            allowed,
            original: None,
            siblings: Siblings::default(),
            dictionary: None,
            deltas: Default::default(),
            cache: None,
            deltas_on_demand: false,
            copies: Default::default(),
            decoded_copies: Default::default(),
            cached_deltas: Default::default(),
            memo: OnceCell::new(),
            source: OnceCell::new(),
        }
    }

    /// Version `f` of a file, as jobs name it.
    pub fn version(&self, f: &Finfo) -> Version {
        cache::version_of(f)
    }

    /// The digest of the original's bytes (the file the request resolved
    /// to, as it is now), where this host knows it: looked up once per
    /// request.
    fn original_source(&self) -> Option<Source> {
        *self.source.get_or_init(|| {
            self.cache
                .and_then(|cache| cache.source(self.req, &self.req.finfo()))
        })
    }

    /// The facts with the original's stat, where it exists.
    pub fn with_original(mut self, original: Option<FileMeta>) -> Self {
        self.original = original;
        self
    }

    /// The facts with the dictionary the client announced.
    pub fn with_dictionary(mut self, dictionary: Option<[u8; 32]>) -> Self {
        self.dictionary = dictionary;
        self
    }

    /// The facts with the on-demand cache, where the scope has it on,
    /// and whether it makes deltas there.
    pub fn with_cache(mut self, cache: Option<&'static Active>, deltas: bool) -> Self {
        self.cache = cache;
        self.deltas_on_demand = deltas;
        self
    }

    pub fn filename(&self) -> &'r CStr {
        self.filename
    }

    /// The original's size, where it exists.
    pub fn original_size(&self) -> Option<u64> {
        self.original.map(|o| o.size)
    }

    /// The sizes of the representations the client accepts at equal q,
    /// for the default order (smallest first): remembered per version of
    /// the original, else learned by looking each up (as the walk would,
    /// so none is looked up twice) and remembered. Deltas are looked up:
    /// the walk would start with them anyway.
    pub fn sizes(&self, ranked: &Ranked, deltas: &[Option<(DeltaCoding, u16)>; 2]) -> Sizes {
        let mut sizes = Sizes::default();
        for &(d, _) in deltas.iter().flatten() {
            sizes.deltas[d.index()] = match Facts::delta(&self, d) {
                Some(s) => Size::Bytes(s.info.size()),
                None => match Facts::cached_delta(&self, d) {
                    Held::Ready((_, f)) => Size::Bytes(f.info().size()),
                    Held::Missing | Held::NotWorth => Size::Absent,
                },
            };
        }
        let wanted = variant::sizes_wanted(ranked, deltas.iter().any(Option::is_some));
        if !wanted.contains(&true) {
            return sizes;
        }
        let (v, now) = (self.req.finfo().version(), self.req.request_time_secs());
        let mut memo = memo::size::get(&v, now).unwrap_or_default();
        let mut learned = false;
        for c in Coding::ALL {
            let known = &mut memo.codings[c.index()];
            if !wanted[c.index()] || *known != Size::Unknown {
                continue;
            }
            let size = self.learn(c);
            // A copy still being made is looked for again next time.
            if size != Size::Unknown {
                *known = size;
                learned = true;
            }
        }
        if learned {
            memo::size::put(v, memo, now);
        }
        let _ = self.memo.set(memo);
        sizes.codings = memo.codings;
        sizes
    }

    /// The size of coding `c`'s representation: its fresh sibling's, else
    /// its cached copy's (`Unknown` while the copy is being made).
    fn learn(&self, c: Coding) -> Size {
        if let Seen::Fresh(s) = self.found(c) {
            return Size::Bytes(s.info.size());
        }
        match Facts::copy(&self, c) {
            Held::Ready((_, f)) => Size::Bytes(f.info().size()),
            Held::NotWorth => Size::Absent,
            Held::Missing => Size::Unknown,
        }
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
            if !self.allowed.contains(&c) {
                return None;
            }
            let found = lookup::find_sibling(self.req, self.filename, c);
            let fresh = found
                .as_ref()
                .filter(|s| variant::usable(lookup::meta(&s.info), self.original));
            match fresh {
                Some(s) => self.check_memo(c, Size::Bytes(s.info.size())),
                None if self.cache.is_none() => self.check_memo(c, Size::Absent),
                None => {}
            }
            let s = found?;
            let fresh = fresh.is_some();
            if !fresh {
                lookup::warn_stale(self.req, self.filename, &s);
            }
            Some((s, fresh))
        })
    }

    /// The siblings the lookups found stale, by coding.
    pub fn stale(&self) -> [bool; 3] {
        Coding::ALL.map(|c| matches!(self.siblings.known(c), Some(Seen::Stale)))
    }

    /// The size of the br representation of the original's version (its
    /// fresh sibling, else its cached copy), where known without a look
    /// the walk did not make: what a delta is measured against.
    pub fn br_size(&self) -> Option<u64> {
        let br = Coding::Br.index();
        if let Some(Size::Bytes(b)) = self.memo.get().map(|m| m.codings[br]) {
            return Some(b);
        }
        if let Some(Seen::Fresh(s)) = self.siblings.known(Coding::Br) {
            return Some(s.info.size());
        }
        match self.copies[br].get() {
            Some(Held::Ready((_, f))) => Some(f.info().size()),
            _ => None,
        }
    }

    /// What this request found missing from the on-demand cache: the
    /// copy of the original in `sent` (the coding the client gets once
    /// every copy exists), if that one is missing, a delta against a
    /// dictionary it keeps, and the decoded copies of the siblings. The
    /// other codings' copies it looked up are not asked for: a client
    /// that would get them asks for them, so one pass of browsers costs
    /// one copy per page.
    pub fn missing(&self, sent: Option<Coding>) -> Missing<'r> {
        let missing = |h: &OnceCell<Held<Copy<'r>>>| matches!(h.get(), Some(Held::Missing));
        let codings = sent
            .into_iter()
            .filter(|c| missing(&self.copies[c.index()]))
            .fold(CodingSet::empty(), CodingSet::with);
        let decoded = Coding::ALL.map(|c| match self.siblings.known(c) {
            Some(Seen::Fresh(s)) if missing(&self.decoded_copies[c.index()]) => {
                Some((s.path, self.version(&s.info)))
            }
            _ => None,
        });
        Missing {
            codings,
            delta: self.cached_deltas.iter().any(missing),
            decoded,
        }
    }

    /// The cached copy an answer sent, for the cache's least-recently-used
    /// order.
    pub fn copy_sent(&self, o: Outcome) -> Option<(Source, Kind)> {
        match o {
            Outcome::Cached(c) => Some((self.original_source()?, Kind::Coded(c))),
            Outcome::CachedDelta(d) => {
                Some((self.original_source()?, Kind::Delta(d, self.dictionary?)))
            }
            Outcome::DecodedCopy(c) => match self.siblings.known(c) {
                Some(Seen::Fresh(s)) => {
                    Some((self.cache?.source(self.req, &s.info)?, Kind::Decoded(c)))
                }
                _ => None,
            },
            _ => None,
        }
    }

    fn find_copy(&self, c: Coding) -> Held<Copy<'r>> {
        let Some(cache) = self.cache else {
            return Held::NotWorth;
        };
        let v = self.version(&self.req.finfo());
        if cache.asked_lately(&v, c, self.req.request_time_us()) {
            return Held::Missing;
        }
        match self.original_source() {
            Some(source) => held(cache.find(self.req, &source, Kind::Coded(c))),
            None => Held::Missing,
        }
    }
}

/// The facts borrowed: a sibling found is handed on by reference, not
/// copied (its stat is most of its size).
impl<'d, 'r> Facts for &'d Disk<'_, 'r> {
    type Found = &'d Sibling<'r>;
    type Copy = Copy<'r>;

    fn sibling(&self, c: Coding) -> Seen<&'d Sibling<'r>> {
        Disk::found(self, c).as_ref()
    }

    fn delta(&self, d: DeltaCoding) -> Option<&'d Sibling<'r>> {
        self.deltas[d.index()]
            .get_or_init(|| {
                let hash = self.dictionary.as_ref()?;
                let s = lookup::find_delta(self.req, self.filename, d, hash)?;
                variant::usable(lookup::meta(&s.info), self.original).then_some(s)
            })
            .as_ref()
    }

    /// A missing delta on demand is asked for only when the cache keeps
    /// the dictionary: a hash it does not know (never served here,
    /// forged, evicted) costs one stat and asks for nothing.
    fn cached_delta(&self, d: DeltaCoding) -> Held<Copy<'r>> {
        *self.cached_deltas[d.index()].get_or_init(|| {
            let (Some(cache), Some(h)) = (self.cache, self.dictionary.as_ref()) else {
                return Held::NotWorth;
            };
            if !self.deltas_on_demand {
                return Held::NotWorth;
            }
            let found = match self.original_source() {
                Some(source) => held(cache.find(self.req, &source, Kind::Delta(d, *h))),
                None => Held::Missing,
            };
            match found {
                Held::Missing if !cache.keeps(self.req, h) => Held::NotWorth,
                held => held,
            }
        })
    }

    fn copy(&self, c: Coding) -> Held<Copy<'r>> {
        *self.copies[c.index()].get_or_init(|| {
            let held = self.find_copy(c);
            if let Held::Ready((_, f)) = held {
                self.check_memo(c, Size::Bytes(f.info().size()));
            }
            held
        })
    }

    fn decoded_copy(&self, c: Coding, s: &&'d Sibling<'r>) -> Held<Copy<'r>> {
        *self.decoded_copies[c.index()].get_or_init(|| match self.cache {
            Some(cache) => match cache.source(self.req, &s.info) {
                Some(source) => held(cache.find(self.req, &source, Kind::Decoded(c))),
                None => Held::Missing,
            },
            None => Held::NotWorth,
        })
    }

    fn cache_on(&self) -> bool {
        self.cache.is_some()
    }
}

fn held(c: CachedCopy<'_>) -> Held<Copy<'_>> {
    match c {
        CachedCopy::Ready(path, file) => Held::Ready((path, file)),
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

    /// What is known of `c` without looking it up (`None`: not looked
    /// up yet).
    fn known(&self, c: Coding) -> Option<&Seen<S>> {
        self.0[c.index()].get()
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
        assert_eq!(table.known(Coding::Gzip), None);
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

//! The deltas (RFC 9842) against the dictionary the client announced:
//! a published one beside the file, else one the on-demand cache made,
//! each sent only when its header names that dictionary (checked once per
//! file version and remembered beside the other per-version facts).

use super::answer::{Answer, Skip};
use super::{send_file, Attempt, Held, Representation, Tag, Tried};
use crate::lookup::{self, Found, Sibling};
use crate::memo::version::VersionMemo;
use crate::metrics::tally::Outcome;
use crate::ondemand::cache;
use crate::ondemand::key::Kind;
use gdn_core::coding::Coding;
use gdn_core::dictionary::{self, DeltaCoding, Hash};
use gdn_core::variant::{self, Size};
use gdn_httpd::{File, FileKind, FileVersion, Level, PoolBytes, Request};
use std::ffi::CStr;

/// Verdicts kept.
const MAX_ENTRIES: usize = 16_384;

/// A delta file's version, its coding and the dictionary it is named for.
type Key = (FileVersion, DeltaCoding, Hash);

static VERDICTS: VersionMemo<Key, bool> = VersionMemo::new(MAX_ENTRIES);

/// Whether the delta at `path` starts with the `d` header naming `h`; a
/// mismatch is logged once per file version (and process) and the delta
/// is not sent. A read error is not remembered.
pub(super) fn names(
    req: &Request<'_>,
    d: DeltaCoding,
    h: &Hash,
    file: &File<'_>,
    path: &CStr,
) -> bool {
    let key = (file.info().version(), d, *h);
    if let Some(ok) = VERDICTS.get(&key) {
        return ok;
    }
    let Ok(head) = file.read_pool(req, 0, d.header_len()) else {
        return false;
    };
    let ok = dictionary::header_names(d, h, PoolBytes::bytes(head));
    if !ok {
        req.log(
            Level::Warn,
            0,
            &format!(
                "{}: its header does not name the dictionary {} its name does; not sent",
                path.to_string_lossy(),
                dictionary::to_hex(h)
            ),
        );
    }
    VERDICTS.put(key, ok);
    ok
}

impl<'r> Attempt<'_, 'r> {
    /// The delta against the announced dictionary, if it exists and is
    /// fresh.
    pub(super) fn delta(&self, d: DeltaCoding) -> Result<Sibling<'r>, Skip<'r>> {
        let found = self.deltas[d.index()].get_or_init(|| {
            let hash = self.dictionary.as_ref()?;
            let s = lookup::find_delta(self.req, self.filename, d, hash)?;
            variant::usable(lookup::meta(&s.info), self.original).then_some(s)
        });
        (*found).ok_or(Skip::Missing)
    }

    /// The delta on demand against the announced dictionary, looked up
    /// once per request. A missing one is asked for only when the cache
    /// keeps that dictionary: a hash it does not know (never served here,
    /// forged, evicted) costs one stat and asks for nothing.
    pub(super) fn cached_delta(&self, d: DeltaCoding) -> Held<'r> {
        *self.cached_deltas[d.index()].get_or_init(|| {
            let (Some(cache), Some(h)) = (self.cache, self.dictionary.as_ref()) else {
                return Held::NotWorth;
            };
            if self.deltas_on_demand.is_none() {
                return Held::NotWorth;
            }
            let v = cache::version(self.req, &self.req.finfo());
            match Held::from(cache.find(self.req, &v, Kind::Delta(d, *h))) {
                Held::Missing if !cache.keeps(self.req, h) => Held::NotWorth,
                held => held,
            }
        })
    }

    /// Sends the delta on demand against the announced dictionary, as a
    /// published delta goes out.
    pub(super) fn send_cached_delta(&self, d: DeltaCoding) -> Result<Answer, Skip<'r>> {
        match self.cached_delta(d) {
            Held::Ready(path, file) => {
                self.vary(true);
                send_checked(self, d, &file, path, Outcome::CachedDelta(d))
            }
            Held::Missing => Err(Skip::WantsCopy),
            Held::NotWorth => Err(Skip::Missing),
        }
    }

    /// The size of the br representation of the original's version (its
    /// fresh sibling, else its cached copy), where known without a look
    /// the walk did not make: what a delta is measured against.
    pub(super) fn br_size(&self) -> Option<u64> {
        if let Some(Size::Bytes(b)) = self.memo.get().map(|m| m.codings[Coding::Br.index()]) {
            return Some(b);
        }
        if let Found::Fresh(s) = self.siblings.known(Coding::Br) {
            return Some(s.info.size());
        }
        match self.copies[Coding::Br.index()].get() {
            Some(Held::Ready(_, f)) => Some(f.info().size()),
            _ => None,
        }
    }
}

/// Sends a published delta against the dictionary the client announced
/// (RFC 9842).
pub(super) fn send_delta<'r>(
    a: &Attempt<'_, 'r>,
    d: DeltaCoding,
    s: &Sibling<'r>,
) -> Result<Answer, Skip<'r>> {
    let file = a.open(None, s, &Tried::default())?;
    if file.info().kind() != FileKind::Regular {
        return Err(Skip::Refused);
    }
    send_checked(a, d, &file, s.path, Outcome::Delta(d))
}

/// Sends the delta in `file` zero-copy like any sibling, with
/// `Content-Encoding: dcz` or `dcb`, once its header names the announced
/// dictionary.
fn send_checked<'r>(
    a: &Attempt<'_, 'r>,
    d: DeltaCoding,
    file: &File<'r>,
    path: &CStr,
    outcome: Outcome,
) -> Result<Answer, Skip<'r>> {
    match &a.dictionary {
        Some(h) if names(a.req, d, h, file, path) => {}
        _ => return Err(Skip::Refused),
    }
    Ok(send_file(
        a,
        Representation {
            file,
            path,
            validators_of: None,
            coding: Some(d.c_token()),
            tag: Tag::Plain(d.token()),
            as_is: Some(true),
            outcome,
            splice: None,
        },
    ))
}

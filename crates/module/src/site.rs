//! The site dictionary as requests see it: served at the virtual host's
//! `GzipDiskNgSiteDictionary` path once the compressor trained one from
//! the host's pages (`gdn_compressor`), with what makes a browser
//! keep it for the host's pages; and the judging of those pages, once a
//! training period, that the compressor trains from (`judge`).
//!
//! Pages link it under a name that changes with its content
//! (`<path>?h=<16 hex of its SHA-256>`), served as immutable: no cache in
//! front of a fleet can hold one server's dictionary under a name another
//! server links to other bytes, and a retrained dictionary is a new URL.
//! That name answers with those bytes while this server keeps them (the
//! current dictionary, and the one before for its lifetime, unless it
//! was withdrawn); else with a 404 no cache and no browser keeps
//! (`Cache-Control: no-store`, no `Use-As-Dictionary`). The bare path
//! answers with the current one, for a day.

use crate::memo;
use crate::ondemand::cache;
use crate::respond;
use gdn_core::coding::Coding;
use gdn_core::dictionary::{self, Hash};
use gdn_core::negotiate::Accepted;
use gdn_httpd::{self, Level, PoolBytes, Request, Status};
use std::ffi::CStr;

mod judge;
pub use judge::judge;
use std::hash::BuildHasher;
use std::sync::Mutex;

/// What a browser is told to use the dictionary for: every page of the
/// origin, for navigations (RFC 9842 `match-dest`).
const USE_AS_DICTIONARY: &std::ffi::CStr = cr#"match="/*", match-dest=("document")"#;

/// `Cache-Control` of the dictionary at its bare path: `ondemand`'s
/// lifetime for it, after which a retrained one's deltas go.
const CACHE_CONTROL: &std::ffi::CStr = c"max-age=86400";

/// `Cache-Control` of the dictionary under its content's name: those
/// bytes are the only ones that name ever answers with.
const CACHE_CONTROL_NAMED: &std::ffi::CStr = c"public, max-age=31536000, immutable";

/// The query that names a dictionary's content: `h=` and this many hex
/// digits of its SHA-256 (64 bits: no two dictionaries of a site meet).
const NAME_QUERY: &str = "h=";
const NAME_HEX: usize = 16;

/// Answers a request for the host's `GzipDiskNgSiteDictionary` path;
/// `None` for any other request.
pub fn route(req: &Request<'_>, path: Option<&str>) -> Option<Status> {
    let path = path?;
    if req.uri()? != path.as_bytes() || req.is_subrequest() {
        return None;
    }
    Some(serve(req))
}

fn serve(req: &Request<'_>) -> Status {
    if let Some(st) = req.only_get() {
        return st;
    }
    let Some(cache) = cache::active() else {
        return Status::NOT_FOUND;
    };
    req.vary(c"Accept-Encoding");
    let named = match req.query() {
        None => None,
        Some(q) => match named_hex(q) {
            Some(hex) => Some(hex),
            // A stray query: never the current bytes under it.
            None => return not_kept(req),
        },
    };
    let Some((file, coding)) = negotiated(req, cache, named) else {
        req.log_with(Level::Debug, 0, || match named {
            Some(hex) => format!("site dictionary {hex} not kept here"),
            None => "no site dictionary trained yet".to_owned(),
        });
        return not_kept(req);
    };
    let Some(hash) = content_hash(req, &file) else {
        return Status::INTERNAL_SERVER_ERROR;
    };
    req.set_content_type(c"application/octet-stream");
    if let Some(c) = coding {
        req.set_content_encoding(c.c_token());
    }
    req.set_header_static(c"Use-As-Dictionary", USE_AS_DICTIONARY);
    let cc = if named.is_some() {
        CACHE_CONTROL_NAMED
    } else {
        CACHE_CONTROL
    };
    req.set_header_static(c"Cache-Control", cc);
    // The hash of the bytes sent: a strong tag, one per representation,
    // from the moment the dictionary is trained (a tag made from the
    // file's mtime is weak for a second after a write).
    let etag = format!("\"{}\"", &dictionary::to_hex(&hash)[..32]);
    respond::send_static(req, &file, &etag)
}

/// A 404 for a dictionary this server does not keep (another server's,
/// a withdrawn or expired one, none yet): nothing may keep it, as a
/// dictionary or otherwise.
fn not_kept(req: &Request<'_>) -> Status {
    req.set_error_header_value(c"Cache-Control", "no-store");
    Status::NOT_FOUND
}

/// The hex a query `h=<16 lowercase hex>` names a dictionary by.
fn named_hex(q: &[u8]) -> Option<&str> {
    let hex = q.strip_prefix(NAME_QUERY.as_bytes())?;
    let ok = hex.len() == NAME_HEX && hex.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    ok.then(|| std::str::from_utf8(hex).ok()).flatten()
}

/// The host's dictionary (the current one, or the one `named` by its
/// URL) in the coding the client prefers among those it accepts
/// (brotli's is the smallest, so it goes first among equals), or as it
/// is.
fn negotiated<'r>(
    req: &Request<'r>,
    cache: &cache::Active,
    named: Option<&str>,
) -> Option<(gdn_httpd::File<'r>, Option<Coding>)> {
    let host = req.host_key();
    let accepted = Accepted::parse_bytes(req.header_in(c"Accept-Encoding"));
    let ranked = accepted.ranked(&[Coding::Br, Coding::Zstd, Coding::Gzip]);
    let open = |c| match named {
        None => cache.site_dictionary(req, host, c),
        Some(hex) => cache.named_site_dictionary(req, host, hex, c),
    };
    for c in ranked.iter() {
        if let Some(f) = open(Some(c)) {
            return Some((f, Some(c)));
        }
    }
    Some((open(None)?, None))
}

/// The query naming the dictionary whose SHA-256 is `hash`.
fn name(hash: &Hash) -> String {
    format!("{NAME_QUERY}{}", &dictionary::to_hex(hash)[..NAME_HEX])
}

/// The hex of a dictionary's name (`NAME_HEX` digits of its SHA-256),
/// without a heap call.
fn name_hex(hash: &Hash) -> [u8; NAME_HEX] {
    let mut out = [0; NAME_HEX];
    // Cannot fail: the slice is exactly twice the bytes encoded.
    let _ = hex::encode_to_slice(&hash[..NAME_HEX / 2], &mut out);
    out
}

/// The `Link` a host's HTML page carries once its site dictionary is
/// trained, so a browser fetches it and sends its hash with later
/// navigations: `path` under the current dictionary's name, as this
/// process looked it up in this second (`LINKED`). A client that
/// `announced` another dictionary of the host this server still serves
/// under its name (the one before, within its lifetime, not withdrawn)
/// is linked to that one: it keeps the dictionary it holds rather than
/// fetch one that another server of a fleet, whose files are not the
/// same yet (a deploy half done), may not have.
pub fn page_link<'r>(
    req: &Request<'r>,
    cache: &cache::Active,
    path: &str,
    announced: Option<&Hash>,
) -> Option<&'r CStr> {
    let now = req.request_time_secs();
    let host = req.host_key();
    if !cache.has_site_dictionary(req, host, now) {
        return None;
    }
    let current = LINKED.lately(host, now, || {
        let hash = cache
            .site_dictionary(req, host, None)
            .and_then(|file| content_hash(req, &file));
        req.log_with(Level::Debug, 0, || match &hash {
            Some(h) => format!("pages link the site dictionary as {} this second", name(h)),
            None => "no site dictionary to link this second".to_owned(),
        });
        hash
    })?;
    let hash = match announced {
        Some(h) if *h != current && held_here(req, cache, host, h) => *h,
        _ => current,
    };
    Some(req.pool_join(&[
        b"<",
        path.as_bytes(),
        b"?",
        NAME_QUERY.as_bytes(),
        &name_hex(&hash),
        b">; rel=\"compression-dictionary\"",
    ]))
}

/// Whether this server serves the host's dictionary `h` under its name.
fn held_here(req: &Request<'_>, cache: &cache::Active, host: &[u8], h: &Hash) -> bool {
    let hex = name_hex(h);
    std::str::from_utf8(&hex)
        .ok()
        .and_then(|hex| cache.named_site_dictionary(req, host, hex, None))
        .is_some()
}

/// The hash of the dictionary each host's pages link, as this process
/// looked it up in a second: a host's pages open their dictionary at
/// most once a second per process, not once per response, and link a
/// retrained one at most a second late (as `has_site_dictionary` sees a
/// first one a second late at most).
static LINKED: Links = Links::new();

/// What a few hosts' pages link, a slot per host by its key's hash.
/// An entry (a 32-byte hash and its second) is more than an atomic
/// holds, so a lock keeps the slots; only pages of hosts with a site
/// dictionary take it, never while opening or hashing one. Two hosts of
/// a slot take turns in it (each looks its dictionary up more often);
/// a host is known by its key's 64-bit hash, as host keys come from the
/// configuration, not from clients.
struct Links {
    slots: Mutex<[Option<Linked>; LINKS_SLOTS]>,
}

const LINKS_SLOTS: usize = 16;

/// A host's entry: what its pages link in `second` (`None`: nothing, as
/// the dictionary could not be opened or read).
#[derive(Clone, Copy)]
struct Linked {
    host: u64,
    second: i64,
    hash: Option<Hash>,
}

impl Links {
    const fn new() -> Self {
        Links {
            slots: Mutex::new([None; LINKS_SLOTS]),
        }
    }

    /// What the pages of the host `host_key` link in the second `now`:
    /// as remembered for that second, else what `look` finds, then
    /// remembered for it. A lock a thread panicked holding only makes
    /// every response look.
    fn lately(
        &self,
        host_key: &[u8],
        now: i64,
        look: impl FnOnce() -> Option<Hash>,
    ) -> Option<Hash> {
        let host = rustc_hash::FxBuildHasher.hash_one(host_key);
        let slot = (host as usize) % LINKS_SLOTS;
        if let Ok(slots) = self.slots.lock() {
            if let Some(e) = slots[slot].filter(|e| e.host == host && e.second == now) {
                return e.hash;
            }
        }
        let hash = look();
        if let Ok(mut slots) = self.slots.lock() {
            slots[slot] = Some(Linked {
                host,
                second: now,
                hash,
            });
        }
        hash
    }
}

/// The SHA-256 of the bytes in `file` (the dictionary, or it in a
/// coding), read once per version of the file.
fn content_hash(req: &Request<'_>, file: &gdn_httpd::File<'_>) -> Option<Hash> {
    let v = file.info().version();
    if let Some(h) = memo::dictionary::get(&v) {
        return Some(h);
    }
    let size = usize::try_from(file.info().size()).ok()?;
    let bytes = file.read_pool(req, 0, size).ok()?;
    let bytes = PoolBytes::bytes(bytes);
    if bytes.len() != size {
        return None;
    }
    let h = dictionary::hash(bytes);
    memo::dictionary::put(v, h);
    Some(h)
}

#[cfg(test)]
mod tests {
    use super::{name, name_hex, Links, NAME_QUERY};
    use gdn_core::dictionary::{self, Hash};

    #[test]
    fn the_link_names_the_dictionary_as_its_url_does() {
        for h in [[0u8; 32], [0xff; 32], dictionary::hash(b"a dictionary")] {
            let hex = name_hex(&h);
            let linked = format!("{NAME_QUERY}{}", std::str::from_utf8(&hex).unwrap());
            assert_eq!(linked, name(&h));
        }
    }

    #[test]
    fn pages_link_what_was_looked_up_in_the_second() {
        let l = Links::new();
        let (first, retrained): (Hash, Hash) = ([1; 32], [2; 32]);
        let mut looks = 0;
        let mut look = |h: Option<Hash>| {
            looks += 1;
            h
        };
        assert_eq!(l.lately(b"a:80@1", 100, || look(Some(first))), Some(first));
        assert_eq!(
            l.lately(b"a:80@1", 100, || look(Some(retrained))),
            Some(first),
            "the same second"
        );
        assert_eq!(
            l.lately(b"b:80@2", 100, || look(None)),
            None,
            "another host"
        );
        assert_eq!(
            l.lately(b"b:80@2", 100, || look(Some(first))),
            None,
            "none, remembered"
        );
        assert_eq!(
            l.lately(b"a:80@1", 101, || look(Some(retrained))),
            Some(retrained),
            "a second later"
        );
        assert_eq!(looks, 3);
    }
}

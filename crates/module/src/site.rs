//! The site dictionary as requests see it: served at the virtual host's
//! `GzipDiskNgSiteDictionary` path once the compressor trained one from
//! the host's pages (`ondemand::compressor`), with what makes a browser
//! keep it for the host's pages.
//!
//! Pages link it under a name that changes with its content
//! (`<path>?h=<16 hex of its SHA-256>`), served as immutable: no cache in
//! front of a fleet can hold one server's dictionary under a name another
//! server links to other bytes, and a retrained dictionary is a new URL.
//! That name answers only while it is the current dictionary (404
//! after); the bare path answers with the current one, for a day.

use crate::memo::version::VersionMemo;
use crate::ondemand::cache;
use crate::respond;
use gdn_core::coding::Coding;
use gdn_core::dictionary::{self, Hash};
use gdn_core::negotiate::Accepted;
use gdn_httpd::{self, FileVersion, Level, PoolBytes, Request, Status};

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
        None => false,
        Some(q) => match current_name(req, cache) {
            Some(n) if q == n.as_bytes() => true,
            // Another dictionary's name (or a stray query): never the
            // current bytes under it.
            _ => return Status::NOT_FOUND,
        },
    };
    let Some((file, coding)) = negotiated(req, cache) else {
        req.log_with(Level::Debug, 0, || {
            "no site dictionary trained yet".to_owned()
        });
        return Status::NOT_FOUND;
    };
    let Some(hash) = content_hash(req, &file) else {
        return Status::INTERNAL_SERVER_ERROR;
    };
    req.set_content_type(c"application/octet-stream");
    if let Some(c) = coding {
        req.set_content_encoding(c.c_token());
    }
    req.set_header_static(c"Use-As-Dictionary", USE_AS_DICTIONARY);
    let cc = if named {
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

/// The host's dictionary in the coding the client prefers among those it
/// accepts (brotli's is the smallest, so it goes first among equals), or
/// as it is.
fn negotiated<'r>(
    req: &Request<'r>,
    cache: &cache::Active,
) -> Option<(gdn_httpd::File<'r>, Option<Coding>)> {
    let host = req.host_key();
    let accepted = Accepted::parse_bytes(req.header_in(c"Accept-Encoding"));
    let ranked = accepted.ranked(&[Coding::Br, Coding::Zstd, Coding::Gzip]);
    for c in ranked.iter() {
        if let Some(f) = cache.site_dictionary(req, &host, Some(c)) {
            return Some((f, Some(c)));
        }
    }
    Some((cache.site_dictionary(req, &host, None)?, None))
}

/// The query naming the host's current dictionary, `h=<hex>`.
fn current_name(req: &Request<'_>, cache: &cache::Active) -> Option<String> {
    let file = cache.site_dictionary(req, &req.host_key(), None)?;
    let hash = content_hash(req, &file)?;
    Some(format!(
        "{NAME_QUERY}{}",
        &dictionary::to_hex(&hash)[..NAME_HEX]
    ))
}

/// The `Link` a host's HTML page carries once its site dictionary is
/// trained, so a browser fetches it and sends its hash with later
/// navigations.
pub fn page_link(req: &Request<'_>, cache: &cache::Active, path: &str) -> Option<String> {
    let now = req.request_time_secs();
    if !cache.has_site_dictionary(req, &req.host_key(), now) {
        return None;
    }
    link(req, cache, path)
}

/// The `Link` value pointing a page's browser to the host's current
/// dictionary, served at `path` under its content's name; `None` while
/// there is none.
fn link(req: &Request<'_>, cache: &cache::Active, path: &str) -> Option<String> {
    let name = current_name(req, cache)?;
    Some(format!("<{path}?{name}>; rel=\"compression-dictionary\""))
}

/// Hashes remembered per version of a dictionary file.
static HASHES: VersionMemo<FileVersion, Hash> = VersionMemo::new(64);

/// The SHA-256 of the bytes in `file` (the dictionary, or it in a
/// coding), read once per version of the file.
fn content_hash(req: &Request<'_>, file: &gdn_httpd::File<'_>) -> Option<Hash> {
    let v = file.info().version();
    if let Some(h) = HASHES.get(&v) {
        return Some(h);
    }
    let size = usize::try_from(file.info().size()).ok()?;
    let bytes = file.read_pool(req, 0, size).ok()?;
    let bytes = PoolBytes::bytes(bytes);
    if bytes.len() != size {
        return None;
    }
    let h = dictionary::hash(bytes);
    HASHES.put(v, h);
    Some(h)
}

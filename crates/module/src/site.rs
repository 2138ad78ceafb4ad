//! The site dictionary as requests see it: served at the virtual host's
//! `GzipDiskNgSiteDictionary` path once the compressor trained one from
//! the host's pages (`ondemand::compressor`), with what makes a browser
//! keep it for the host's pages.

use crate::cache;
use crate::dictionary::{self, Hash};
use crate::httpd::{self, FileVersion, Level, PoolBytes, Request, Status};
use crate::memo::version::VersionMemo;
use crate::respond;

/// What a browser is told to use the dictionary for: every page of the
/// origin, for navigations (RFC 9842 `match-dest`).
const USE_AS_DICTIONARY: &std::ffi::CStr = cr#"match="/*", match-dest=("document")"#;

/// `Cache-Control` of the dictionary: `ondemand`'s lifetime for it, after
/// which a retrained one's deltas go.
const CACHE_CONTROL: &std::ffi::CStr = c"max-age=86400";

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
    let Some((_, file)) = cache.site_dictionary(req, &req.host_key()) else {
        req.log_with(Level::Debug, 0, || {
            "no site dictionary trained yet".to_owned()
        });
        return Status::NOT_FOUND;
    };
    let Some(hash) = content_hash(req, &file) else {
        return Status::INTERNAL_SERVER_ERROR;
    };
    req.set_content_type(c"application/octet-stream");
    req.set_header_static(c"Use-As-Dictionary", USE_AS_DICTIONARY);
    req.set_header_static(c"Cache-Control", CACHE_CONTROL);
    // The dictionary's own hash, the one `Available-Dictionary` names: a
    // strong tag from the moment it is trained (one made from the file's
    // mtime is weak for a second after a write).
    let etag = format!("\"{}\"", &dictionary::to_hex(&hash)[..32]);
    respond::send_static(req, &file, &etag)
}

/// Hashes remembered per version of a dictionary file.
static HASHES: VersionMemo<FileVersion, Hash> = VersionMemo::new(64);

/// The SHA-256 of the dictionary in `file`, read once per version of it.
fn content_hash(req: &Request<'_>, file: &httpd::File<'_>) -> Option<Hash> {
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

//! The site dictionary's part of a dynamic response: a client that holds
//! the host's trained dictionary (announced by `Available-Dictionary`,
//! offered `dcz`) gets the body coded against it (RFC 9842). The
//! dictionary's bytes are read from the cache the compressor trained it
//! into, checked against the SHA-256 the client named, and kept per
//! process by the file's version, so a response reads it only when it
//! changed. A dynamic body is coded against the dictionary, never
//! learned into it: it holds only what every reader may GET.

use crate::ondemand::cache;
use gdn_core::coding::DeltaCoding;
use gdn_core::dictionary::{self, Hash};
use gdn_core::negotiate::{self, Accepted};
use gdn_httpd::{FileVersion, Level, Request};
use std::sync::{Arc, Mutex, PoisonError};

/// Largest dictionary read: what RFC 9842's `dcz` window allows a client
/// to keep for it, and far above what the compressor trains.
const DICTIONARY_MAX: u64 = 8 << 20;

/// A dictionary's bytes, verified to hash to `hash`.
pub struct Dictionary {
    pub hash: Hash,
    pub bytes: Arc<[u8]>,
}

/// A dictionary read, with the version of the file it was read from.
type Read = (FileVersion, Hash, Arc<[u8]>);

/// The last dictionary read in this process, by the file's version.
static LAST: Mutex<Option<Read>> = Mutex::new(None);

/// Whether the host has a site dictionary the filter could code against:
/// responses then vary on `Available-Dictionary` too.
pub fn offered(site: Option<&str>) -> bool {
    site.is_some() && cache::active().is_some()
}

/// The dictionary a `dcz` body is coded against for this client: the
/// host's, under the hash the client announced, where it offers `dcz`
/// and this server holds that dictionary.
pub fn for_client(
    req: &Request<'_>,
    accepted: &Accepted,
    site: Option<&str>,
) -> Option<Dictionary> {
    if accepted.delta_q(DeltaCoding::Dcz) == 0 || !offered(site) {
        return None;
    }
    let hash = negotiate::available_dictionary(req.header_in(c"Available-Dictionary")?)?;
    let cache = cache::active()?;
    let hex = dictionary::to_hex(&hash);
    let file = cache.named_site_dictionary(req, req.host_key(), &hex[..16], None)?;
    let version = file.info().version();
    let remembered = {
        let last = LAST.lock().unwrap_or_else(PoisonError::into_inner);
        last.as_ref()
            .filter(|(v, h, _)| *v == version && *h == hash)
            .map(|(_, _, b)| Arc::clone(b))
    };
    let bytes = match remembered {
        Some(b) => b,
        None => read(req, &file, &hash, version)?,
    };
    Some(Dictionary { hash, bytes })
}

/// Reads a dictionary file whole and keeps it, if it hashes to `hash`.
fn read(
    req: &Request<'_>,
    file: &gdn_httpd::File<'_>,
    hash: &Hash,
    version: FileVersion,
) -> Option<Arc<[u8]>> {
    let size = file.info().size();
    if size > DICTIONARY_MAX {
        return None;
    }
    let mut bytes = Vec::with_capacity(size as usize);
    std::io::Read::read_to_end(&mut file.reader(0), &mut bytes).ok()?;
    if dictionary::hash(&bytes) != *hash {
        req.log(
            Level::Warn,
            0,
            "a site dictionary's bytes do not match its name; not used",
        );
        return None;
    }
    let bytes: Arc<[u8]> = bytes.into();
    *LAST.lock().unwrap_or_else(PoisonError::into_inner) =
        Some((version, *hash, Arc::clone(&bytes)));
    Some(bytes)
}

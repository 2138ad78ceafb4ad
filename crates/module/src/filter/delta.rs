//! The site dictionary's part of a dynamic response: a client that holds
//! the host's trained dictionary (announced by `Available-Dictionary`,
//! offered `dcz` or `dcb`) gets the body coded against it (RFC 9842). The
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

/// A dictionary's bytes, verified to hash to `hash`, and the delta
/// coding the client gets against it.
pub struct Dictionary {
    pub coding: DeltaCoding,
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

/// The dictionary a delta body is coded against for this client: the
/// host's, under the hash the client announced, where it offers a delta
/// coding whose base coding is `usable` and this server holds that
/// dictionary.
pub fn for_client(
    req: &Request<'_>,
    accepted: &Accepted,
    site: Option<&str>,
    usable: impl Fn(gdn_core::coding::Coding) -> bool,
) -> Option<Dictionary> {
    let coding = delta_coding(accepted, usable)?;
    if !offered(site) {
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
    Some(Dictionary {
        coding,
        hash,
        bytes,
    })
}

/// The client's delta coding: the higher q-value, `dcz` on a tie (as
/// small as `dcb` on the pages measured, and faster: docs/dynamic.md).
fn delta_coding(
    accepted: &Accepted,
    usable: impl Fn(gdn_core::coding::Coding) -> bool,
) -> Option<DeltaCoding> {
    DeltaCoding::ALL
        .into_iter()
        .filter(|&d| usable(d.base()) && accepted.delta_q(d) > 0)
        .max_by_key(|&d| (accepted.delta_q(d), std::cmp::Reverse(d.index())))
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

#[cfg(test)]
mod tests {
    use super::*;
    use gdn_core::coding::Coding;

    fn chosen(header: &str, usable: &[Coding]) -> Option<DeltaCoding> {
        let acc = Accepted::parse_bytes(Some(header.as_bytes()));
        delta_coding(&acc, |c| usable.contains(&c))
    }

    #[test]
    fn the_client_s_delta_coding_by_q_value_dcz_on_a_tie_within_the_configured() {
        let all = [Coding::Zstd, Coding::Br, Coding::Gzip];
        assert_eq!(chosen("dcz, dcb, br", &all), Some(DeltaCoding::Dcz));
        assert_eq!(chosen("dcb, dcz", &all), Some(DeltaCoding::Dcz));
        assert_eq!(chosen("dcz;q=0.5, dcb", &all), Some(DeltaCoding::Dcb));
        assert_eq!(chosen("dcb, br", &all), Some(DeltaCoding::Dcb));
        assert_eq!(chosen("dcz, dcb", &[Coding::Br]), Some(DeltaCoding::Dcb));
        assert_eq!(chosen("dcz, dcb", &[Coding::Gzip]), None);
        assert_eq!(chosen("dcz;q=0, br", &all), None);
        assert_eq!(chosen("zstd, br", &all), None);
    }
}

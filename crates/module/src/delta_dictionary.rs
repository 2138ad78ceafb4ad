//! Where the dictionary a published delta names is found, so that the
//! delta can be verified against its page (`verified_delta`): a version
//! the on-demand cache keeps, or the publish tool's store of the tree
//! (`GzipDiskNgDeltaStore`), which holds the page's earlier versions and
//! names the files of the tree used whole as dictionaries, read as the
//! tool reads it (`gdn_publish::store`).
//! Whatever is read, and whoever could write it, is used only once its
//! SHA-256 is the one the delta names; no dictionary read here is sent.

use crate::ondemand::cache::Active;
use gdn_core::coding::Coding;
use gdn_core::decode::Decoder;
use gdn_core::dictionary::{self, Hash};
use gdn_httpd::{Level, Request};
use gdn_publish::store::{take_limited, Store};
use std::ffi::{CStr, OsStr};
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Where a request's published delta may find its dictionary.
#[derive(Clone, Copy, Default)]
pub struct Sources<'a> {
    /// The on-demand cache, where the request's scope has it on.
    pub cache: Option<&'a Active>,
    /// The publish tool's store of the tree holding the request's file.
    pub store: Option<&'a Store>,
}

impl Sources<'_> {
    /// Whether any source could hold a dictionary.
    pub fn any(&self) -> bool {
        self.cache.is_some() || self.store.is_some()
    }
}

/// The dictionary with SHA-256 `h` for deltas of the file at `original`,
/// at most `max` bytes, checked against `h`; `None` where no source holds
/// it as it must be.
pub fn find(
    req: &Request<'_>,
    sources: Sources<'_>,
    h: &Hash,
    original: &CStr,
    max: u64,
) -> Option<Vec<u8>> {
    let kept = sources.cache.and_then(|cache| {
        let f = cache.kept_version(req, h)?;
        let bytes = take_limited(unzstd(f.reader(0)).ok()?, max).ok()?;
        checked(req, "kept version", bytes, h)
    });
    kept.or_else(|| {
        let store = sources.store?;
        let file = Path::new(OsStr::from_bytes(original.to_bytes()));
        from_store(req, store, store.relative(file)?, h, max)
    })
}

/// The store's dictionary `h` for the file at `rel`, checked against
/// `h` (`Store::find_within`).
fn from_store(req: &Request<'_>, store: &Store, rel: &Path, h: &Hash, max: u64) -> Option<Vec<u8>> {
    match store.find_within(rel, h, max) {
        Ok(Some(d)) => Some(d),
        Ok(None) => {
            req.log_with(Level::Debug, 0, || {
                format!(
                    "GzipDiskNgDeltaStore {}: no dictionary {} for {}",
                    store.dir().display(),
                    dictionary::to_hex(h),
                    rel.display()
                )
            });
            None
        }
        Err(e) => unreadable(req, store.dir(), &e),
    }
}

/// `bytes` once they have SHA-256 `h`.
fn checked(req: &Request<'_>, what: &str, bytes: Vec<u8>, h: &Hash) -> Option<Vec<u8>> {
    if dictionary::hash(&bytes) == *h {
        return Some(bytes);
    }
    req.log_with(Level::Debug, 0, || {
        format!(
            "{what} {} is not the dictionary its name says; not used",
            dictionary::to_hex(h)
        )
    });
    None
}

/// A store whose files (or a file its catalogue names) the server
/// cannot read: said once per process (the deltas are then asked under their
/// own names, as without the store).
fn unreadable(req: &Request<'_>, path: &Path, e: &io::Error) -> Option<Vec<u8>> {
    static SAID: AtomicBool = AtomicBool::new(false);
    let level = match SAID.swap(true, Ordering::Relaxed) {
        false => Level::Warn,
        true => Level::Debug,
    };
    req.log_with(level, 0, || {
        let hint = match e.kind() {
            io::ErrorKind::PermissionDenied => {
                " (the store must be readable by the server's user, e.g. made 2750 for its group)"
            }
            _ => "",
        };
        format!(
            "GzipDiskNgDeltaStore {}: {e}; published deltas it would verify are asked under \
             their own names{hint}",
            path.display()
        )
    });
    None
}

/// What `r` holds once zstd-decoded, as the cache keeps versions.
fn unzstd<R: Read>(r: R) -> io::Result<DecodedReader<R>> {
    Decoder::new(Coding::Zstd, r)
        .map(DecodedReader)
        .map_err(io::Error::other)
}

/// A `Decoder` read as `std::io::Read`.
struct DecodedReader<R: Read>(Decoder<R>);

impl<R: Read> Read for DecodedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf).map_err(io::Error::other)
    }
}

//! Where the dictionary a published delta names is found, so that the
//! delta can be verified against its page (`verified_delta`): a version
//! the on-demand cache keeps, or the publish tool's store of the tree
//! (`GzipDiskNgDeltaStore`), which holds the page's earlier versions
//! (`versions/<path in the tree>/<hex>.zst`) and names the files of the
//! tree used whole as dictionaries (`dictionaries/<hex>` holds the path).
//! Whatever is read, and whoever could write it, is used only once its
//! SHA-256 is the one the delta names; no dictionary read here is sent.

use crate::config::DeltaStore;
use crate::ondemand::cache::Active;
use gdn_core::coding::Coding;
use gdn_core::decode::Decoder;
use gdn_core::dictionary::{self, Hash, VERSIONS_DIR};
use gdn_httpd::{Level, Request};
use std::ffi::{CStr, OsStr};
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Where the store names its whole-file dictionaries (as the publish
/// tool's `store` module writes them).
const CATALOGUE_DIR: &str = "dictionaries";

/// Longest path a catalogue entry holds.
const CATALOGUE_ENTRY_MAX: u64 = 4096;

/// Where a request's published delta may find its dictionary.
#[derive(Clone, Copy, Default)]
pub struct Sources<'a> {
    /// The on-demand cache, where the request's scope has it on.
    pub cache: Option<&'a Active>,
    /// The publish tool's store of the tree holding the request's file.
    pub store: Option<&'a DeltaStore>,
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
        let bytes = read_bounded(unzstd(f.reader(0)).ok()?, max).ok()?;
        checked(req, "kept version", bytes, h)
    });
    kept.or_else(|| {
        let store = sources.store?;
        let file = Path::new(OsStr::from_bytes(original.to_bytes()));
        from_store(req, store, store.relative(file)?, h, max)
    })
}

/// The store's earlier version of the file at `rel` named `h`, else the
/// tree's file the store's catalogue names for `h`.
fn from_store(
    req: &Request<'_>,
    store: &DeltaStore,
    rel: &Path,
    h: &Hash,
    max: u64,
) -> Option<Vec<u8>> {
    let hex = dictionary::to_hex(h);
    let version = store
        .dir
        .join(VERSIONS_DIR)
        .join(rel)
        .join(format!("{hex}.zst"));
    let read = match opened(&version) {
        Ok(Some(f)) => unzstd(f).and_then(|d| read_bounded(d, max)),
        Ok(None) => {
            let entry = store.dir.join(CATALOGUE_DIR).join(&hex);
            let file = match catalogued(store, &entry) {
                Ok(Some(file)) => file,
                Ok(None) => return None,
                Err(e) => return unreadable(req, &entry, &e),
            };
            // A catalogued file since removed from the tree names no
            // dictionary.
            match opened(&file) {
                Ok(Some(f)) => read_bounded(f, max),
                Ok(None) => return None,
                Err(e) => return unreadable(req, &file, &e),
            }
        }
        Err(e) => Err(e),
    };
    match read {
        Ok(bytes) => checked(req, "stored version", bytes, h),
        Err(e) => unreadable(req, &version, &e),
    }
}

/// The file at `path`, opened; `None` where there is none.
fn opened(path: &Path) -> io::Result<Option<std::fs::File>> {
    match std::fs::File::open(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The tree's file a catalogue entry names: a path inside the tree, with
/// no `..`; `None` where there is no entry or it names no such path.
fn catalogued(store: &DeltaStore, entry: &Path) -> io::Result<Option<PathBuf>> {
    let Some(f) = opened(entry)? else {
        return Ok(None);
    };
    let bytes = read_bounded(f, CATALOGUE_ENTRY_MAX)?;
    let rel = Path::new(OsStr::from_bytes(&bytes));
    let inside = !bytes.is_empty()
        && !bytes.contains(&0)
        && rel.components().all(|c| matches!(c, Component::Normal(_)));
    Ok(inside.then(|| store.tree.join(rel)))
}

/// All of `r`, refused above `max` bytes.
fn read_bounded(r: impl Read, max: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    r.take(max + 1).read_to_end(&mut out)?;
    if out.len() as u64 > max {
        return Err(io::Error::other("larger than a check reads"));
    }
    Ok(out)
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

/// A file of the store (or one its catalogue names) the server cannot
/// read: said once per process (the deltas are then asked under their
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
            "GzipDiskNgDeltaStore: {}: {e}; published deltas it would verify are asked under \
             their own names{hint}",
            path.display()
        )
    });
    None
}

/// What `r` holds once zstd-decoded, as the cache and the store keep
/// versions.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A catalogue entry is used only where it names a path inside the
    /// tree: no `..`, no absolute path, nothing empty; an entry too long
    /// to be a path is an error, a missing one none.
    #[test]
    fn catalogue_entries_name_only_paths_inside_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        let store = DeltaStore {
            tree: PathBuf::from("/srv/tree"),
            dir: dir.path().to_path_buf(),
        };
        let entry = dir.path().join("e");
        let named = |text: &[u8]| {
            std::fs::write(&entry, text).unwrap();
            catalogued(&store, &entry).unwrap()
        };
        assert_eq!(
            named(b"assets/app.1.js"),
            Some(PathBuf::from("/srv/tree/assets/app.1.js"))
        );
        for bad in [
            &b"../secret"[..],
            b"a/../../b",
            b"/etc/passwd",
            b"",
            b"./a",
            b"a\0b",
        ] {
            assert_eq!(named(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        std::fs::write(&entry, vec![b'a'; CATALOGUE_ENTRY_MAX as usize + 1]).unwrap();
        assert!(catalogued(&store, &entry).is_err());
        assert_eq!(catalogued(&store, &dir.path().join("none")).unwrap(), None);
    }

    #[test]
    fn reads_are_bounded() {
        assert_eq!(read_bounded(&b"abcd"[..], 4).unwrap(), b"abcd");
        assert!(read_bounded(&b"abcde"[..], 4).is_err());
    }
}

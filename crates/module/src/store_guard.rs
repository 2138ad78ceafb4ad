//! The dictionary store older releases of the publish tool kept inside the
//! tree (`TREE/.gzip-disk-ng/`) holds earlier versions of files, perhaps
//! withdrawn because they must no longer be seen; the on-demand cache
//! root holds copies of files some clients only may read, and the
//! publish tool's system state directory its stores. None is ever
//! served, whether a request names it, an `Alias` or a `RewriteRule`
//! maps a URL into it, or a symlink reaches it.

use crate::memo;
use gdn_core::dictionary;
use gdn_httpd::{FileKind, FileVersion, Level, Request, Status};
use std::ffi::{CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{PoisonError, RwLock};

/// Length of a hash in hex, as the store names every file it holds.
const HASH_HEX: usize = 2 * dictionary::HASH_LEN;

/// Directories never served besides in-tree stores: the cache root and
/// the publish tool's system state directory, as configured and
/// resolved. Set in the parent at start-up (`guard`), before the
/// children fork; leaked per restart so requests hold plain references.
static GUARDED: RwLock<&'static [PathBuf]> = RwLock::new(&[]);

/// Guards `cache_root` (if any) and the publish tool's system state
/// directory from now on.
pub fn guard(cache_root: Option<&Path>) {
    // Room for every entry up front: a record leaked per restart is
    // allocated once, never reallocated.
    let mut dirs: Vec<PathBuf> = Vec::with_capacity(4);
    let system = Path::new(gdn_publish::state::SYSTEM_STATE);
    for d in cache_root.into_iter().chain([system]) {
        dirs.push(d.to_path_buf());
        if let Ok(real) = std::fs::canonicalize(d) {
            if real != d {
                dirs.push(real);
            }
        }
    }
    *GUARDED.write().unwrap_or_else(PoisonError::into_inner) = Box::leak(Box::new(dirs)).as_slice();
}

/// Whether `path` lies in a guarded directory, by its name.
fn in_guarded(path: &[u8]) -> bool {
    let dirs = *GUARDED.read().unwrap_or_else(PoisonError::into_inner);
    dirs.iter().any(|d| {
        let d = d.as_os_str().as_bytes();
        path.starts_with(d) && matches!(path.get(d.len()), None | Some(b'/'))
    })
}

/// The request's file, by its name or resolved, lies in a store or a
/// guarded directory: 404, whatever the handler, with one info line.
pub fn refuse_request(req: &Request<'_>) -> Option<Status> {
    let filename = req.filename()?;
    let bytes = filename.to_bytes();
    let resolved = if dictionary::in_store_bytes(bytes) || in_guarded(bytes) {
        None
    } else {
        Some(resolves_into_store(
            req,
            Path::new(OsStr::from_bytes(bytes)),
        )?)
    };
    log_refusal(req, filename, resolved.as_deref());
    Some(Status::NOT_FOUND)
}

/// Where the request's file resolves, when that is inside a store. A
/// missing file (the module may answer it from a sibling) is resolved
/// only when its name is a stored file's, a 64-hex hash: every file a
/// store holds is named so.
fn resolves_into_store(req: &Request<'_>, path: &Path) -> Option<PathBuf> {
    let info = req.finfo();
    match info.kind() {
        FileKind::Regular | FileKind::Directory => version_in_store(path, info.version()),
        _ => {
            let name = path.file_name()?.as_bytes();
            has_hash_run(name).then(|| in_store_resolved(path))?
        }
    }
}

/// Where `path`, whose file is version `v`, resolves, when that is inside
/// a store: resolved the first time this process meets `v`.
fn version_in_store(path: &Path, v: FileVersion) -> Option<PathBuf> {
    if memo::store::get(&v) == Some(false) {
        return None;
    }
    let real = in_store_resolved(path);
    memo::store::put(v, real.is_some());
    real
}

/// A sibling or delta opened at `path` (following symlinks), version `v`:
/// refused (with one info line) when it lies in a store.
pub fn opened_refused(req: &Request<'_>, path: &CStr, v: FileVersion) -> bool {
    let Some(real) = version_in_store(Path::new(OsStr::from_bytes(path.to_bytes())), v) else {
        return false;
    };
    log_refusal(req, path, Some(&real));
    true
}

/// A sibling or delta at `path` whose lstat showed a symlink `Options`
/// allow: refused (with one info line) when it resolves into a store.
pub fn link_refused(req: &Request<'_>, path: &CStr) -> bool {
    let Some(real) = in_store_resolved(Path::new(OsStr::from_bytes(path.to_bytes()))) else {
        return false;
    };
    log_refusal(req, path, Some(&real));
    true
}

/// Where `path` resolves (following every symlink; its directory when it
/// does not exist), when that is inside a store.
fn in_store_resolved(path: &Path) -> Option<PathBuf> {
    let real = match std::fs::canonicalize(path) {
        Ok(real) => real,
        Err(_) => std::fs::canonicalize(path.parent()?).ok()?,
    };
    (dictionary::in_store(&real) || in_guarded(real.as_os_str().as_bytes())).then_some(real)
}

fn log_refusal(req: &Request<'_>, path: &CStr, real: Option<&Path>) {
    let store =
        dictionary::in_store_bytes(path.to_bytes()) || real.is_some_and(dictionary::in_store);
    let into = if store {
        "the dictionary store"
    } else {
        "the cache root"
    };
    req.log_with(Level::Info, 0, || match real {
        None => format!("request into {into} refused: {}", path.to_string_lossy()),
        Some(real) => format!(
            "request into {into} refused: {} resolves to {}",
            path.to_string_lossy(),
            real.display()
        ),
    });
}

/// Whether `name` holds 64 hex digits in a row, as every file the store
/// holds is named (`<hex>.zst`, `<hex>`, their temporaries).
fn has_hash_run(name: &[u8]) -> bool {
    let mut run = 0;
    name.iter().any(|b| {
        run = if b.is_ascii_hexdigit() { run + 1 } else { 0 };
        run >= HASH_HEX
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_names_are_recognised() {
        let hex = dictionary::to_hex(&dictionary::hash(b"v1"));
        assert!(has_hash_run(format!("{hex}.zst").as_bytes()));
        assert!(has_hash_run(hex.as_bytes()));
        assert!(has_hash_run(format!(".{hex}.zst.tmp1a2b").as_bytes()));
        assert!(!has_hash_run(&hex.as_bytes()[1..]));
        assert!(!has_hash_run(b"index.html"));
        let split = format!("{}-{}", &hex[..32], &hex[32..]);
        assert!(!has_hash_run(split.as_bytes()));
    }

    #[test]
    fn resolved_paths_are_checked_through_symlinks() {
        let d = tempfile::tempdir().unwrap();
        let store = d.path().join(".gzip-disk-ng/versions/a.html");
        std::fs::create_dir_all(&store).unwrap();
        std::fs::write(store.join("x.zst"), b"old").unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(d.path().join(".gzip-disk-ng"), &link).unwrap();
        let file = d.path().join("old.html");
        std::os::unix::fs::symlink(store.join("x.zst"), &file).unwrap();
        for p in [
            link.join("versions/a.html/x.zst"),
            link.join("versions/a.html/missing"),
            file,
            link,
        ] {
            assert!(in_store_resolved(&p).is_some(), "{}", p.display());
        }
        std::fs::write(d.path().join("page.html"), b"new").unwrap();
        assert!(in_store_resolved(&d.path().join("page.html")).is_none());
        assert!(in_store_resolved(&d.path().join("gone/x")).is_none());
    }
}

//! The dictionary store: earlier versions of files, kept so that deltas of
//! the current version can be made against them, in a directory outside
//! the published tree (`publish::state` chooses it), since a server of the
//! tree must never hand them out.
//!
//! Layout under it:
//! - `versions/<path relative to the tree>/<hex SHA-256>.zst`: one earlier
//!   version of that file, zstd-compressed, with the mtime that version
//!   had; the newest K are kept;
//! - `dictionaries/<hex SHA-256>`: the path, relative to the tree, of a
//!   file used whole as a dictionary (a group member, a site dictionary),
//!   so `verify` (and the module, where `GzipDiskNgDeltaStore` names the
//!   store) can find it from a delta's hash.
//!
//! A store is created private (0700); one that exists keeps its mode, so
//! an admin can make it for the server's group.

use crate::atomic::TempFile;
use gdn_core::dictionary::{self, Hash, VERSIONS_DIR};
use std::ffi::OsStr;
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

/// Where file dictionaries are catalogued, under the store.
const CATALOGUE_DIR: &str = "dictionaries";

/// Longest path a catalogue entry holds.
const CATALOGUE_ENTRY_MAX: u64 = 4096;

/// zstd level of stored versions: read back rarely, kept long.
const STORE_LEVEL: i32 = 19;

/// Largest file that gets deltas or serves as a dictionary: both are held
/// in memory while a delta is made.
pub const DELTA_INPUT_MAX: u64 = 128 << 20;

/// The store of one published tree.
#[derive(Clone, Debug)]
pub struct Store {
    /// The tree's top directory.
    tree: PathBuf,
    /// The store's own directory, created (private) on the first write.
    dir: PathBuf,
}

/// One stored version of a file.
#[derive(Clone, Debug)]
pub struct StoredVersion {
    pub hash: Hash,
    pub mtime: SystemTime,
    pub path: PathBuf,
}

impl Store {
    /// The store at `dir` of the tree whose top directory is `tree`.
    pub fn at(tree: &Path, dir: PathBuf) -> Store {
        Store {
            tree: tree.to_path_buf(),
            dir,
        }
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The tree's top directory.
    pub fn tree(&self) -> &Path {
        &self.tree
    }

    /// `file`'s path relative to the tree, when it is inside it.
    pub fn relative<'a>(&self, file: &'a Path) -> Option<&'a Path> {
        file.strip_prefix(&self.tree)
            .ok()
            .filter(|r| !r.as_os_str().is_empty())
    }

    fn versions_dir(&self, rel: &Path) -> PathBuf {
        self.dir.join(VERSIONS_DIR).join(rel)
    }

    /// The stored versions of the file at `rel`, newest first.
    pub fn versions(&self, rel: &Path) -> Vec<StoredVersion> {
        let Ok(entries) = fs::read_dir(self.versions_dir(rel)) else {
            return Vec::new();
        };
        let mut v: Vec<StoredVersion> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name();
                let hash = dictionary::from_hex(name.to_str()?.strip_suffix(".zst")?)?;
                let meta = e.metadata().ok().filter(|m| m.is_file())?;
                Some(StoredVersion {
                    hash,
                    mtime: meta.modified().ok()?,
                    path: e.path(),
                })
            })
            .collect();
        v.sort_by(|a, b| b.mtime.cmp(&a.mtime).then_with(|| b.path.cmp(&a.path)));
        v
    }

    /// Stores `content`, an earlier version of the file at `rel` that had
    /// the mtime and permissions of `like`; false when it already was.
    pub fn add(&self, rel: &Path, content: &[u8], like: &fs::Metadata) -> io::Result<bool> {
        let hash = dictionary::hash(content);
        let dir = self.versions_dir(rel);
        let path = dir.join(format!("{}.zst", dictionary::to_hex(&hash)));
        if path.is_file() {
            return Ok(false);
        }
        create_private(&self.dir)?;
        fs::create_dir_all(&dir)?;
        let mut tmp = TempFile::new(&path)?;
        write_version(&mut tmp, content, STORE_LEVEL)?;
        tmp.commit(&path, like)?;
        Ok(true)
    }

    /// Removes all but the newest `keep` versions of the file at `rel`;
    /// returns how many went.
    pub fn prune(&self, rel: &Path, keep: usize) -> io::Result<u64> {
        let mut removed = 0;
        for v in self.versions(rel).into_iter().skip(keep) {
            fs::remove_file(&v.path)?;
            removed += 1;
        }
        Ok(removed)
    }

    /// Records that the file at `file` (inside the tree) is a dictionary
    /// with hash `hash`, so `verify` can find it.
    pub fn catalogue(&self, hash: &Hash, file: &Path) -> io::Result<()> {
        let Some(rel) = self.relative(file).and_then(Path::to_str) else {
            return Ok(()); // Outside the tree: `verify` is told where it is.
        };
        let path = self.catalogue_path(hash);
        if fs::read(&path).is_ok_and(|old| old == rel.as_bytes()) {
            return Ok(());
        }
        create_private(&self.dir)?;
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        let mut tmp = TempFile::new(&path)?;
        tmp.write_all(rel.as_bytes())?;
        tmp.commit(&path, &fs::metadata(file)?)
    }

    /// Whether the store names the dictionary with hash `hash` for the
    /// file at `rel`: a stored version of it, or a catalogued file.
    pub fn records(&self, rel: &Path, hash: &Hash) -> bool {
        let stored = self
            .versions_dir(rel)
            .join(format!("{}.zst", dictionary::to_hex(hash)));
        stored.is_file() || self.catalogue_path(hash).is_file()
    }

    fn catalogue_path(&self, hash: &Hash) -> PathBuf {
        self.dir.join(CATALOGUE_DIR).join(dictionary::to_hex(hash))
    }

    /// The dictionary with hash `hash` that deltas of the file at `rel`
    /// may use: a stored version of it or a catalogued file, checked
    /// against the hash.
    pub fn find(&self, rel: &Path, hash: &Hash) -> io::Result<Option<Vec<u8>>> {
        self.find_within(rel, hash, DELTA_INPUT_MAX)
    }

    /// As `find`, reading at most `max` bytes of the dictionary (a larger
    /// one is an error): the module verifies published deltas with it
    /// (`GzipDiskNgDeltaStore`) in the request that meets them. A missing
    /// file is `None`, one that cannot be read an error; a catalogue
    /// entry names a dictionary only where it names a path inside the
    /// tree.
    pub fn find_within(&self, rel: &Path, hash: &Hash, max: u64) -> io::Result<Option<Vec<u8>>> {
        let stored = self
            .versions_dir(rel)
            .join(format!("{}.zst", dictionary::to_hex(hash)));
        let content = match opened(&stored)? {
            Some(f) => decode_limited(f, max)?,
            None => {
                let Some(file) = self.catalogued(hash)? else {
                    return Ok(None);
                };
                let Some(f) = opened(&file)? else {
                    return Ok(None);
                };
                take_limited(f, max)?
            }
        };
        Ok((dictionary::hash(&content) == *hash).then_some(content))
    }

    /// The tree's file the catalogue names for `hash`: a path inside the
    /// tree, with no `..`; `None` where there is no entry or it names no
    /// such path.
    fn catalogued(&self, hash: &Hash) -> io::Result<Option<PathBuf>> {
        let Some(f) = opened(&self.catalogue_path(hash))? else {
            return Ok(None);
        };
        let bytes = take_limited(f, CATALOGUE_ENTRY_MAX)?;
        let rel = Path::new(OsStr::from_bytes(&bytes));
        let inside = !bytes.is_empty()
            && !bytes.contains(&0)
            && rel.components().all(|c| matches!(c, Component::Normal(_)));
        Ok(inside.then(|| self.tree.join(rel)))
    }
}

/// The file at `path`, opened; `None` where there is none.
fn opened(path: &Path) -> io::Result<Option<fs::File>> {
    match fs::File::open(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// All of `r`, refused above `max` bytes.
pub fn take_limited(r: impl Read, max: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    r.take(max + 1).read_to_end(&mut out)?;
    if out.len() as u64 > max {
        return Err(io::Error::other(format!("larger than {max} bytes")));
    }
    Ok(out)
}

/// What the stored version `r` holds, refused above `max` bytes.
fn decode_limited(r: impl Read, max: u64) -> io::Result<Vec<u8>> {
    take_limited(zstd::stream::read::Decoder::new(r)?, max)
}

/// Writes `content` as a stored version is kept (zstd at `level`, with a
/// checksum), for `load_version` to read back: the store's versions, and
/// the versions the module's on-demand compressor keeps for its deltas.
pub fn write_version(out: &mut impl Write, content: &[u8], level: i32) -> io::Result<()> {
    let mut e = zstd::stream::write::Encoder::new(out, level)?;
    e.include_checksum(true)?;
    e.write_all(content)?;
    e.finish()?;
    Ok(())
}

/// A stored version's content.
pub fn load_version(path: &Path) -> io::Result<Vec<u8>> {
    decode_limited(fs::File::open(path)?, DELTA_INPUT_MAX)
}

/// A file's content, refused above `DELTA_INPUT_MAX`.
pub fn read_limited(path: &Path) -> io::Result<Vec<u8>> {
    take_limited(fs::File::open(path)?, DELTA_INPUT_MAX)
}

/// Creates `dir` and any missing parent private (0700): stored versions
/// are earlier contents of files, perhaps ones withdrawn for a reason.
pub fn create_private(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::time::Duration;

    /// A catalogue entry names a dictionary only where it names a path
    /// inside the tree: no `..`, no absolute path, nothing empty; one too
    /// long to be a path is an error, a missing one none.
    #[test]
    fn catalogue_entries_name_only_paths_inside_the_tree() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::at(Path::new("/srv/tree"), d.path().to_path_buf());
        let h = dictionary::hash(b"x");
        fs::create_dir_all(s.catalogue_path(&h).parent().unwrap()).unwrap();
        let named = |text: &[u8]| {
            fs::write(s.catalogue_path(&h), text).unwrap();
            s.catalogued(&h).unwrap()
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
        fs::write(
            s.catalogue_path(&h),
            vec![b'a'; CATALOGUE_ENTRY_MAX as usize + 1],
        )
        .unwrap();
        assert!(s.catalogued(&h).is_err());
        assert_eq!(s.catalogued(&dictionary::hash(b"y")).unwrap(), None);
        // A catalogued file gone from the tree names no dictionary.
        let t = tempfile::tempdir().unwrap();
        let s = Store::at(t.path(), d.path().to_path_buf());
        fs::write(s.catalogue_path(&h), b"gone.js").unwrap();
        assert_eq!(
            s.find_within(Path::new("p.html"), &h, 1 << 20).unwrap(),
            None
        );
        fs::write(t.path().join("gone.js"), b"x").unwrap();
        assert_eq!(
            s.find_within(Path::new("p.html"), &h, 1 << 20).unwrap(),
            Some(b"x".to_vec())
        );
        assert!(s.find_within(Path::new("p.html"), &h, 0).is_err());
        assert!(take_limited(&b"abcde"[..], 4).is_err());
        assert_eq!(take_limited(&b"abcd"[..], 4).unwrap(), b"abcd");
    }

    /// A store the admin made for the server's group (the module reads it,
    /// `GzipDiskNgDeltaStore`) keeps its mode; what goes in stays
    /// readable through it as the files it came from are.
    #[test]
    fn an_existing_store_keeps_its_mode() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("store");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o750)).unwrap();
        let s = Store::at(d.path(), dir.clone());
        let f = d.path().join("page.html");
        fs::write(&f, b"v1").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o644)).unwrap();
        assert!(s
            .add(Path::new("page.html"), b"v1", &fs::metadata(&f).unwrap())
            .unwrap());
        s.catalogue(&dictionary::hash(b"v1"), &f).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o750);
        let version = &s.versions(Path::new("page.html"))[0].path;
        assert_eq!(mode(version), 0o644);
        assert_eq!(mode(&s.catalogue_path(&dictionary::hash(b"v1"))), 0o644);
    }

    #[test]
    fn versions_are_added_listed_newest_first_and_pruned() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::at(d.path(), d.path().join("state/store"));
        let rel = Path::new("docs/a.html");
        let f = d.path().join("like");
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        for i in 0..4u64 {
            fs::write(&f, b"x").unwrap();
            fs::File::options()
                .write(true)
                .open(&f)
                .unwrap()
                .set_modified(t0 + Duration::from_secs(i))
                .unwrap();
            let m = fs::metadata(&f).unwrap();
            assert!(s.add(rel, format!("version {i}").as_bytes(), &m).unwrap());
            assert!(!s.add(rel, format!("version {i}").as_bytes(), &m).unwrap());
        }
        let v = s.versions(rel);
        assert_eq!(v.len(), 4);
        assert_eq!(v[0].hash, dictionary::hash(b"version 3"));
        assert_eq!(load_version(&v[0].path).unwrap(), b"version 3");
        assert!(v[0]
            .path
            .starts_with(d.path().join("state/store/versions/docs/a.html")));
        let mode = fs::metadata(s.dir()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        assert_eq!(s.prune(rel, 2).unwrap(), 2);
        let v = s.versions(rel);
        assert_eq!(v.len(), 2);
        assert_eq!(v[1].hash, dictionary::hash(b"version 2"));
        assert_eq!(
            s.find(rel, &dictionary::hash(b"version 2"))
                .unwrap()
                .unwrap(),
            b"version 2"
        );
        assert!(s
            .find(rel, &dictionary::hash(b"version 0"))
            .unwrap()
            .is_none());
    }

    #[test]
    fn catalogued_files_are_found_while_unchanged() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::at(d.path(), d.path().join("store"));
        let dict = d.path().join("dictionary.dat");
        fs::write(&dict, b"shared words").unwrap();
        let h = dictionary::hash(b"shared words");
        s.catalogue(&h, &dict).unwrap();
        let found = s.find(Path::new("any.html"), &h).unwrap();
        assert_eq!(found.as_deref(), Some(&b"shared words"[..]));
        fs::write(&dict, b"retrained").unwrap();
        assert!(s.find(Path::new("any.html"), &h).unwrap().is_none());
    }
}

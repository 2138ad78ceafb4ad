//! Where each published tree's dictionary store lies: outside every tree,
//! in a state directory, because it holds earlier versions of files that
//! a server of the tree must never hand out (whatever serves it, with or
//! without the module). Also moves the in-tree store of older releases
//! (`TREE/.gzip-disk-ng/`) there.

use crate::store::{create_private, Store};
use gdn_core::dictionary::STORE_DIR;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Overrides the state directory (tests, packaging, several instances).
pub const STATE_ENV: &str = "GZIP_DISK_NG_STATE";

/// The state directory of a run as root.
pub const SYSTEM_STATE: &str = "/var/lib/gzip-disk-ng";

/// The tool's own directory name under `$XDG_STATE_HOME` or
/// `~/.local/state`.
const NAME: &str = "gzip-disk-ng";

/// At most this many bytes of the tree's path go into its store's name
/// (its tail, the most telling part); the hash keeps names apart.
const SLUG_MAX: usize = 48;

/// The state directory: `$GZIP_DISK_NG_STATE`, else for root
/// `/var/lib/gzip-disk-ng`, else `$XDG_STATE_HOME/gzip-disk-ng` or
/// `~/.local/state/gzip-disk-ng`.
pub fn state_root() -> Result<PathBuf, String> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(d) = var(STATE_ENV) {
        return Ok(PathBuf::from(d));
    }
    if is_root() {
        return Ok(PathBuf::from(SYSTEM_STATE));
    }
    if let Some(x) = var("XDG_STATE_HOME").map(PathBuf::from) {
        if x.is_absolute() {
            return Ok(x.join(NAME));
        }
    }
    match var("HOME") {
        Some(h) => Ok(PathBuf::from(h).join(".local/state").join(NAME)),
        None => Err(format!(
            "no state directory for the dictionary store: set {STATE_ENV} or HOME, or give --store"
        )),
    }
}

/// Whether the tool runs as root: `/proc/self` belongs to the effective
/// user (read with std alone).
fn is_root() -> bool {
    fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// The store's name under the state directory for the tree whose
/// canonical path is `canonical`: a readable slug of the path's tail and
/// 16 hex digits of its SHA-256, so two trees never share a store.
pub fn store_name(canonical: &Path) -> String {
    let mut slug: String = canonical
        .as_os_str()
        .as_bytes()
        .iter()
        .map(|&b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'_' => b as char,
            _ => '-',
        })
        .collect();
    slug = slug.trim_matches(|c| c == '-' || c == '.').to_owned();
    if slug.len() > SLUG_MAX {
        slug = slug[slug.len() - SLUG_MAX..]
            .trim_start_matches('-')
            .to_owned();
    }
    if slug.is_empty() {
        slug.push_str("root");
    }
    let h = gdn_core::dictionary::hash(canonical.as_os_str().as_bytes());
    format!("{slug}-{}", hex::encode(&h[..8]))
}

/// `path` made absolute with symlinks resolved as far as it exists, the
/// rest appended: where a store not yet created will be.
fn canonical_lenient(path: &Path) -> io::Result<PathBuf> {
    let mut rest: Vec<OsString> = Vec::new();
    let mut at = std::path::absolute(path)?;
    loop {
        match fs::canonicalize(&at) {
            Ok(c) => return Ok(rest.iter().rev().fold(c, |p, r| p.join(r))),
            Err(e) => match (at.file_name(), at.parent()) {
                (Some(n), Some(p)) => {
                    rest.push(n.to_owned());
                    at = p.to_path_buf();
                }
                _ => return Err(e),
            },
        }
    }
}

/// The tree's canonical path (`""`, a bare file's tree, is the current
/// directory).
fn canonical_tree(tree: &Path) -> Result<PathBuf, String> {
    let t = if tree.as_os_str().is_empty() {
        Path::new(".")
    } else {
        tree
    };
    fs::canonicalize(t).map_err(|e| format!("{}: {e}", tree.display()))
}

/// The stores of the trees `paths` publish, each moved out of its tree
/// first when an older release left it there (unless `dry_run`, which
/// reads it where it is). `explicit` (`--store`) is the store of the one
/// tree given. A store inside a published tree is refused: the server
/// would hand out its earlier versions.
pub fn stores(
    paths: &[PathBuf],
    explicit: Option<&Path>,
    dry_run: bool,
) -> Result<Vec<Store>, String> {
    store_dirs(paths, explicit)?
        .into_iter()
        .map(|(tree, dir)| open(&tree, dir, dry_run))
        .collect()
}

/// The stores of the trees `paths` publish, where they lie now, moving
/// none: each is read from the in-tree store an older release left, if
/// there is one, and both places are named (`clean` removes them).
pub fn stores_in_place(
    paths: &[PathBuf],
    explicit: Option<&Path>,
) -> Result<Vec<(Store, Vec<PathBuf>)>, String> {
    let mut out = Vec::new();
    for (tree, dir) in store_dirs(paths, explicit)? {
        let old = tree.join(STORE_DIR);
        let is_old_store = fs::symlink_metadata(&old).is_ok_and(|m| m.is_dir());
        let read = if is_old_store {
            old.clone()
        } else {
            dir.clone()
        };
        let places = [dir, old]
            .into_iter()
            .filter(|d| fs::symlink_metadata(d).is_ok_and(|m| m.is_dir()))
            .collect();
        out.push((Store::at(&tree, read), places));
    }
    Ok(out)
}

/// Each tree `paths` publish, once, with its store's directory, which
/// must lie outside every one of them.
fn store_dirs(
    paths: &[PathBuf],
    explicit: Option<&Path>,
) -> Result<Vec<(PathBuf, PathBuf)>, String> {
    let mut trees: Vec<(PathBuf, PathBuf)> = Vec::new();
    for p in paths {
        let tree = tree_of(p);
        let canonical = canonical_tree(&tree)?;
        if !trees.iter().any(|(t, c)| *t == tree || *c == canonical) {
            trees.push((tree, canonical));
        }
    }
    if explicit.is_some() && trees.len() > 1 {
        return Err("--store names the store of one tree: publish one tree per run".into());
    }
    let canonicals: Vec<&PathBuf> = trees.iter().map(|(_, c)| c).collect();
    let mut out = Vec::with_capacity(trees.len());
    for (tree, canonical) in &trees {
        let dir = match explicit {
            Some(d) => d.to_path_buf(),
            None => state_root()?.join(store_name(canonical)),
        };
        let real = canonical_lenient(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        if let Some(t) = canonicals.iter().find(|c| real.starts_with(c)) {
            return Err(format!(
                "the dictionary store {} lies inside the published tree {}: choose one outside (--store or {STATE_ENV})",
                dir.display(),
                t.display()
            ));
        }
        out.push((tree.clone(), dir));
    }
    Ok(out)
}

/// The store at `dir` of `tree`, with the tree's old in-tree store moved
/// into it (or, in a dry run, read where it is).
fn open(tree: &Path, dir: PathBuf, dry_run: bool) -> Result<Store, String> {
    let old = tree.join(STORE_DIR);
    let is_old_store = fs::symlink_metadata(&old).is_ok_and(|m| m.is_dir());
    if !is_old_store {
        return Ok(Store::at(tree, dir));
    }
    if dry_run {
        eprintln!(
            "gzip-disk-ng: would move the dictionary store {} out of the tree to {}",
            old.display(),
            dir.display()
        );
        return Ok(Store::at(tree, old));
    }
    migrate(&old, &dir).map_err(|e| {
        format!(
            "cannot move the dictionary store {} to {}: {e}",
            old.display(),
            dir.display()
        )
    })?;
    eprintln!(
        "gzip-disk-ng: moved the dictionary store {} out of the tree to {}",
        old.display(),
        dir.display()
    );
    Ok(Store::at(tree, dir))
}

/// Moves the old store `old` to `dir`: one rename when `dir` does not
/// exist yet and both are on one filesystem, else file by file (copied
/// across filesystems). Where `dir` already holds a store the two are
/// merged, its own files kept where both have one: a version's name is its
/// content's hash, and a catalogue entry is checked against the hash when
/// used, so either is right. `old` is gone afterwards.
pub fn migrate(old: &Path, dir: &Path) -> io::Result<()> {
    if let Some(parent) = dir.parent() {
        create_private(parent)?;
    }
    if !dir.exists() {
        match fs::rename(old, dir) {
            Ok(()) => return fs::set_permissions(dir, fs::Permissions::from_mode(0o700)),
            Err(e) if e.kind() == io::ErrorKind::CrossesDevices => {}
            Err(e) => return Err(e),
        }
    }
    create_private(dir)?;
    merge(old, dir)?;
    fs::remove_dir_all(old)
}

/// Moves every regular file under `from` to the same place under `to`,
/// leaving those `to` already has.
fn merge(from: &Path, to: &Path) -> io::Result<()> {
    for e in fs::read_dir(from)? {
        let e = e?;
        let (src, dest) = (e.path(), to.join(e.file_name()));
        let ft = e.file_type()?;
        if ft.is_dir() {
            fs::create_dir_all(&dest)?;
            merge(&src, &dest)?;
        } else if ft.is_file() && fs::symlink_metadata(&dest).is_err() {
            match fs::rename(&src, &dest) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::CrossesDevices => copy_file(&src, &dest)?,
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Copies a stored file with its mtime, by which versions are ordered.
pub fn copy_file(src: &Path, dest: &Path) -> io::Result<()> {
    fs::copy(src, dest)?;
    let mtime = fs::metadata(src)?.modified()?;
    fs::File::options()
        .write(true)
        .open(dest)?
        .set_modified(mtime)
}

/// Whether a tree `paths` publish still has the in-tree store of an older
/// release, which every run moves out, deltas asked for or not.
pub fn any_old_store(paths: &[PathBuf]) -> bool {
    paths
        .iter()
        .any(|p| fs::symlink_metadata(tree_of(p).join(STORE_DIR)).is_ok_and(|m| m.is_dir()))
}

/// The top directory of the tree an argument publishes: a directory, or
/// a file's own directory (empty for a bare name, which paths found under
/// it are relative to).
pub fn tree_of(arg: &Path) -> PathBuf {
    if arg.is_dir() {
        arg.to_path_buf()
    } else {
        arg.parent().unwrap_or(Path::new("")).to_path_buf()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn put(p: &Path, bytes: &[u8], t: SystemTime) {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, bytes).unwrap();
        fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }

    #[test]
    fn store_names_are_readable_distinct_and_stable() {
        let a = store_name(Path::new("/var/www/html"));
        assert!(a.starts_with("var-www-html-"), "{a}");
        assert_eq!(a, store_name(Path::new("/var/www/html")));
        assert_ne!(a, store_name(Path::new("/var/www-html")));
        assert!(store_name(Path::new("/")).starts_with("root-"));
        let long = format!("/srv/{}/site", "x".repeat(200));
        let n = store_name(Path::new(&long));
        assert!(n.len() <= SLUG_MAX + 17 && n.contains("site-"), "{n}");
        assert!(!n.contains('/'));
    }

    #[test]
    fn an_old_store_is_renamed_out_of_the_tree_private() {
        let d = tempfile::tempdir().unwrap();
        let tree = d.path().join("site");
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        put(
            &tree.join(STORE_DIR).join("versions/a.html/x.zst"),
            b"v1",
            t,
        );
        let dir = d.path().join("state/site-1");
        let s = stores(std::slice::from_ref(&tree), Some(&dir), false).unwrap();
        assert_eq!(s[0].dir(), dir);
        assert!(!tree.join(STORE_DIR).exists());
        assert_eq!(fs::read(dir.join("versions/a.html/x.zst")).unwrap(), b"v1");
        let mode = fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{mode:o}");
    }

    #[test]
    fn an_old_store_merges_into_an_existing_one_which_wins() {
        let d = tempfile::tempdir().unwrap();
        let (old, dir) = (d.path().join("old"), d.path().join("new"));
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        put(&old.join("versions/a.html/1.zst"), b"only old", t);
        put(&old.join("dictionaries/h"), b"old entry", t);
        put(&dir.join("dictionaries/h"), b"new entry", t);
        put(&dir.join("versions/b.html/2.zst"), b"only new", t);
        migrate(&old, &dir).unwrap();
        assert!(!old.exists());
        let read = |p: &str| fs::read(dir.join(p)).unwrap();
        assert_eq!(read("versions/a.html/1.zst"), b"only old");
        assert_eq!(read("versions/b.html/2.zst"), b"only new");
        assert_eq!(read("dictionaries/h"), b"new entry");
        let m = fs::metadata(dir.join("versions/a.html/1.zst")).unwrap();
        assert_eq!(m.modified().unwrap(), t);
    }

    #[test]
    fn copies_keep_the_mtime_versions_are_ordered_by() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_234_567);
        put(&a, b"stored", t);
        copy_file(&a, &b).unwrap();
        assert_eq!(fs::read(&b).unwrap(), b"stored");
        assert_eq!(fs::metadata(&b).unwrap().modified().unwrap(), t);
    }

    #[test]
    fn a_store_inside_a_tree_or_shared_by_trees_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        fs::create_dir_all(&a).unwrap();
        fs::create_dir_all(&b).unwrap();
        let inside = a.join("private/store");
        let e = stores(std::slice::from_ref(&a), Some(&inside), false).unwrap_err();
        assert!(e.contains("inside the published tree"), "{e}");
        assert!(!a.join("private").exists());
        let outside = d.path().join("store");
        let e = stores(&[a.clone(), b], Some(&outside), false).unwrap_err();
        assert!(e.contains("one tree"), "{e}");
        let same = [a.clone(), a.join(".")];
        assert_eq!(stores(&same, Some(&outside), false).unwrap().len(), 1);
    }

    #[test]
    fn a_dry_run_reads_the_old_store_where_it_is() {
        let d = tempfile::tempdir().unwrap();
        let tree = d.path().join("site");
        let old = tree.join(STORE_DIR);
        put(&old.join("versions/a/x.zst"), b"v", SystemTime::now());
        let dir = d.path().join("store");
        let s = stores(std::slice::from_ref(&tree), Some(&dir), true).unwrap();
        assert_eq!(s[0].dir(), old);
        assert!(old.exists() && !dir.exists());
        assert!(any_old_store(&[tree]));
    }
}

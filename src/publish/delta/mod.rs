//! Deltas (RFC 9842) made at publish time: which dictionaries each file
//! gets a delta against, the earlier version recovered from a stale
//! sibling before the siblings are rewritten, and each delta made, kept or
//! dropped like a sibling.
//!
//! Three sources of dictionaries, in any mix:
//! - earlier versions of the same path (`--delta-versions K`), kept in the
//!   tree's store and recovered from the `.zst`/`.gz`/`.br` sibling of a
//!   file that changed since its siblings were made;
//! - older members of a group of versioned names (`--delta-group GLOB`);
//! - one site dictionary (`--dictionary FILE`).
//!
//! When any is asked for, a file's deltas are exactly those of this run:
//! a delta whose dictionary is no longer among them is removed.

use super::atomic::TempFile;
use super::encode::encode_vec;
use super::freshness::{changed_since, made_from, mtime};
use super::options::{CompressOptions, DeltaOptions};
use super::sibling_path;
use super::store::{self, Store};
use crate::coding::Coding;
use crate::decode::Decoder;
use crate::dictionary::{self, DeltaCoding, Hash};
use globset::Glob;
use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// What happened to one delta of one file.
#[derive(Clone, Debug, PartialEq)]
pub enum DeltaOutcome {
    /// Already made from this original against this dictionary.
    UpToDate,
    /// Dry run: would be written; its size and the br sibling's.
    WouldWrite { after: u64, br: u64 },
    /// Written; its size and the br sibling's (or the smallest other
    /// representation when there is no br sibling).
    Written { after: u64, br: u64 },
    /// Not smaller than the br sibling: not kept (an old one `removed`).
    NotSmaller { after: u64, br: u64, removed: bool },
    /// Its dictionary is no longer one of the file's: removed (or, in a
    /// dry run, would be).
    Stale,
    /// A dcb whose dictionary and file exceed brotli's 16 MiB window
    /// together: not made (an old one `removed`).
    TooLarge { removed: bool },
    /// Something failed; nothing was left half-written.
    Failed(String),
}

/// One delta's outcome, with its coding and dictionary.
#[derive(Clone, Debug, PartialEq)]
pub struct DeltaResult {
    pub coding: DeltaCoding,
    pub dictionary: Hash,
    pub outcome: DeltaOutcome,
}

/// A delta already on disk.
#[derive(Clone, Debug)]
struct Existing {
    hash: Hash,
    coding: DeltaCoding,
    path: PathBuf,
}

/// A dictionary a file gets deltas against.
#[derive(Clone, Debug)]
struct Dict {
    hash: Hash,
    source: Source,
}

#[derive(Clone, Debug)]
enum Source {
    /// A version in the store, loaded only when a delta must be made.
    Stored(PathBuf),
    /// Bytes at hand, and the file they are, when they are one.
    Bytes(Arc<Vec<u8>>, Option<PathBuf>),
}

/// The site dictionary of `--dictionary`.
struct Site {
    hash: Hash,
    bytes: Arc<Vec<u8>>,
    path: PathBuf,
}

/// Everything decided before the files are worked on in parallel.
pub(super) struct Plan {
    trees: Vec<Store>,
    site: Option<Site>,
    /// Group member -> the older members it gets deltas against.
    groups: HashMap<PathBuf, Vec<PathBuf>>,
    /// Original -> its deltas on disk.
    existing: HashMap<PathBuf, Vec<Existing>>,
}

/// The top directory of the tree an argument publishes: a directory, or
/// a file's own directory (empty for a bare name, which paths found under
/// it are relative to).
pub(super) fn tree_of(arg: &Path) -> PathBuf {
    if arg.is_dir() {
        arg.to_path_buf()
    } else {
        arg.parent().unwrap_or(Path::new("")).to_path_buf()
    }
}

impl Plan {
    /// The plan for `files`, found under the arguments `paths`; `None`
    /// when no delta is asked for.
    pub(super) fn new(
        paths: &[PathBuf],
        files: &[(PathBuf, u64)],
        opts: &DeltaOptions,
    ) -> Result<Option<Plan>, String> {
        if !opts.active() {
            return Ok(None);
        }
        let mut trees: Vec<Store> = paths.iter().map(|p| Store::of_tree(&tree_of(p))).collect();
        // Deepest first, so a file belongs to the innermost tree given.
        trees.sort_by_key(|s| std::cmp::Reverse(s.tree().components().count()));
        let site = match &opts.dictionary {
            Some(p) => Some(site_dictionary(p)?),
            None => None,
        };
        let mut plan = Plan {
            trees,
            site,
            groups: HashMap::new(),
            existing: existing_deltas(files),
        };
        plan.groups = plan.group_members(files, opts)?;
        Ok(Some(plan))
    }

    /// The store of the tree `file` belongs to, and its relative path.
    fn store_of<'a>(&self, file: &'a Path) -> Option<(&Store, &'a Path)> {
        self.trees
            .iter()
            .find_map(|s| s.relative(file).map(|rel| (s, rel)))
    }

    /// For every file in a group, its older members (newest first, at most
    /// `group_depth`): newer members are what browsers are moving to.
    fn group_members(
        &self,
        files: &[(PathBuf, u64)],
        opts: &DeltaOptions,
    ) -> Result<HashMap<PathBuf, Vec<PathBuf>>, String> {
        let mut out: HashMap<PathBuf, Vec<PathBuf>> = HashMap::new();
        for g in &opts.groups {
            let glob = Glob::new(g)
                .map_err(|e| format!("bad --delta-group {g:?}: {e}"))?
                .compile_matcher();
            let mut members: Vec<(SystemTime, &PathBuf)> = files
                .iter()
                .filter(|(f, _)| self.in_group(&glob, f))
                .filter_map(|(f, _)| Some((fs::metadata(f).ok()?.modified().ok()?, f)))
                .collect();
            members.sort();
            for (i, (_, m)) in members.iter().enumerate() {
                let older = members[..i].iter().rev().take(opts.group_depth);
                let entry = out.entry((*m).clone()).or_default();
                entry.extend(older.map(|(_, f)| (*f).clone()));
            }
        }
        Ok(out)
    }

    /// Whether `file` matches a group glob: by its path in its tree, or by
    /// its name, as `--include` matches.
    fn in_group(&self, glob: &globset::GlobMatcher, file: &Path) -> bool {
        let rel = self.store_of(file).map_or(file, |(_, r)| r);
        glob.is_match(rel) || file.file_name().is_some_and(|n| glob.is_match(n))
    }
}

/// Reads and hashes the site dictionary.
fn site_dictionary(path: &Path) -> Result<Site, String> {
    let bytes = store::read_limited(path)
        .map_err(|e| format!("cannot read dictionary {}: {e}", path.display()))?;
    if bytes.is_empty() {
        return Err(format!("dictionary {} is empty", path.display()));
    }
    Ok(Site {
        hash: dictionary::hash(&bytes),
        bytes: Arc::new(bytes),
        path: fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
    })
}

/// The deltas already beside `files`, by original: one listing of each
/// directory, whatever `--include` would let the walk see.
fn existing_deltas(files: &[(PathBuf, u64)]) -> HashMap<PathBuf, Vec<Existing>> {
    let dirs: BTreeSet<&Path> = files.iter().filter_map(|(f, _)| f.parent()).collect();
    let mut out: HashMap<PathBuf, Vec<Existing>> = HashMap::new();
    for dir in dirs {
        let Ok(entries) = fs::read_dir(dir) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let name = e.file_name();
            let Some((orig, hash, coding)) = name.to_str().and_then(dictionary::parse_delta_name)
            else {
                continue;
            };
            out.entry(dir.join(orig)).or_default().push(Existing {
                hash,
                coding,
                path: e.path(),
            });
        }
    }
    out
}

/// A file's content, read before its siblings are rewritten, and the
/// earlier version recovered from a stale sibling.
pub(super) struct Prepared {
    current: Arc<Vec<u8>>,
    /// The earlier version a dry run recovered but does not store.
    pending: Option<Arc<Vec<u8>>>,
    /// An earlier version was recovered from a stale sibling.
    pub(super) recovered: bool,
}

/// Reads the file and, for `--delta-versions`, recovers the version its
/// stale siblings still hold and adds it to the store. `Ok(None)` when the
/// file gets no delta (too large, or outside every tree and dictionary).
pub(super) fn prepare(
    path: &Path,
    meta: &fs::Metadata,
    plan: &Plan,
    opts: &CompressOptions,
) -> Result<Option<Prepared>, String> {
    if meta.len() > store::DELTA_INPUT_MAX {
        return Ok(None);
    }
    let current = Arc::new(store::read_limited(path).map_err(|e| format!("cannot read: {e}"))?);
    let mut prepared = Prepared {
        current,
        pending: None,
        recovered: false,
    };
    let Some((store, rel)) = plan.store_of(path).filter(|_| opts.deltas.versions > 0) else {
        return Ok(Some(prepared));
    };
    let Some((old, like)) = previous_version(path, meta)? else {
        return Ok(Some(prepared));
    };
    if dictionary::hash(&old) == dictionary::hash(&prepared.current) {
        return Ok(Some(prepared));
    }
    prepared.recovered = true;
    if opts.dry_run {
        prepared.pending = Some(Arc::new(old));
    } else {
        store
            .add(rel, &old, &like)
            .map_err(|e| format!("cannot store the previous version: {e}"))?;
    }
    Ok(Some(prepared))
}

/// The content a stale sibling decodes to (the version it was made from)
/// and that sibling's metadata (the version's mtime); `None` when the
/// siblings are up to date or there is none.
fn previous_version(
    path: &Path,
    meta: &fs::Metadata,
) -> Result<Option<(Vec<u8>, fs::Metadata)>, String> {
    for c in [Coding::Zstd, Coding::Gzip, Coding::Br] {
        let sib = sibling_path(path, c);
        let Ok(sib_meta) = fs::symlink_metadata(&sib) else {
            continue;
        };
        if !sib_meta.is_file() {
            continue;
        }
        if made_from(c, &sib, &sib_meta, meta) {
            return Ok(None);
        }
        let decoded = fs::File::open(&sib)
            .map_err(|e| e.to_string())
            .and_then(|f| Decoder::new(c, f).map_err(|e| e.to_string()))
            .and_then(|mut d| {
                let mut out = Vec::new();
                let mut limited = Limited {
                    out: &mut out,
                    left: store::DELTA_INPUT_MAX,
                };
                d.copy_to(&mut limited).map_err(|e| e.to_string())?;
                Ok(out)
            })
            .map_err(|e| {
                format!(
                    "cannot recover the previous version from {}: {e}",
                    sib.display()
                )
            })?;
        return Ok(Some((decoded, sib_meta)));
    }
    Ok(None)
}

/// A writer that refuses to grow past a limit.
struct Limited<'a> {
    out: &'a mut Vec<u8>,
    left: u64,
}

impl Write for Limited<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if b.len() as u64 > self.left {
            return Err(std::io::Error::other("too large for deltas"));
        }
        self.left -= b.len() as u64;
        self.out.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The dictionaries `path` gets deltas against, without its own content.
fn dictionaries(path: &Path, prepared: &Prepared, plan: &Plan, opts: &DeltaOptions) -> Vec<Dict> {
    let own = dictionary::hash(&prepared.current);
    let mut v = Vec::new();
    if let (Some((store, rel)), true) = (plan.store_of(path), opts.versions > 0) {
        let pending = prepared.pending.iter().map(|b| Dict {
            hash: dictionary::hash(b),
            source: Source::Bytes(b.clone(), None),
        });
        let stored = store.versions(rel).into_iter().map(|s| Dict {
            hash: s.hash,
            source: Source::Stored(s.path),
        });
        let versions: Vec<Dict> = pending.chain(stored).filter(|d| d.hash != own).collect();
        v.extend(dedup(versions).into_iter().take(opts.versions));
    }
    for member in plan.groups.get(path).into_iter().flatten() {
        if let Ok(b) = store::read_limited(member) {
            v.push(Dict {
                hash: dictionary::hash(&b),
                source: Source::Bytes(Arc::new(b), Some(member.clone())),
            });
        }
    }
    if let Some(site) = &plan.site {
        let itself = fs::canonicalize(path).is_ok_and(|p| p == site.path);
        if !itself {
            v.push(Dict {
                hash: site.hash,
                source: Source::Bytes(site.bytes.clone(), Some(site.path.clone())),
            });
        }
    }
    dedup(v).into_iter().filter(|d| d.hash != own).collect()
}

/// `dicts` without repeated hashes, first kept.
fn dedup(dicts: Vec<Dict>) -> Vec<Dict> {
    let mut seen = BTreeSet::new();
    dicts.into_iter().filter(|d| seen.insert(d.hash)).collect()
}

/// Makes (or keeps, drops, removes) every delta of the file at `path`,
/// after its siblings are done, and prunes its stored versions.
pub(super) fn make_deltas(
    path: &Path,
    meta: &fs::Metadata,
    prepared: &Prepared,
    plan: &Plan,
    opts: &CompressOptions,
) -> Vec<DeltaResult> {
    let dicts = dictionaries(path, prepared, plan, &opts.deltas);
    let br = rival_size(path, meta, &prepared.current, opts);
    let existing = plan.existing.get(path).map(Vec::as_slice).unwrap_or(&[]);
    let mut out = Vec::new();
    for d in &dicts {
        for &coding in &opts.deltas.codings {
            let outcome = make_delta(path, meta, prepared, d, coding, br, opts);
            if matches!(
                outcome,
                DeltaOutcome::UpToDate | DeltaOutcome::Written { .. }
            ) {
                catalogue(plan, d);
            }
            out.push(DeltaResult {
                coding,
                dictionary: d.hash,
                outcome,
            });
        }
    }
    let wanted: BTreeSet<(Hash, DeltaCoding)> = dicts
        .iter()
        .flat_map(|d| opts.deltas.codings.iter().map(|&c| (d.hash, c)))
        .collect();
    for e in existing
        .iter()
        .filter(|e| !wanted.contains(&(e.hash, e.coding)))
    {
        out.push(DeltaResult {
            coding: e.coding,
            dictionary: e.hash,
            outcome: remove_stale(&e.path, opts.dry_run),
        });
    }
    prune(path, plan, opts, &mut out);
    out
}

/// Records a file dictionary in the store of the tree it is in, so that
/// `verify` finds it; failing only costs `verify` that knowledge.
fn catalogue(plan: &Plan, d: &Dict) {
    if let Source::Bytes(_, Some(file)) = &d.source {
        if let Some((store, _)) = plan.store_of(file) {
            let _ = store.catalogue(&d.hash, file);
        }
    }
}

/// Removes a delta whose dictionary is no longer the file's.
fn remove_stale(path: &Path, dry_run: bool) -> DeltaOutcome {
    if dry_run {
        return DeltaOutcome::Stale;
    }
    match fs::remove_file(path) {
        Ok(()) => DeltaOutcome::Stale,
        Err(e) => DeltaOutcome::Failed(format!("cannot remove stale {}: {e}", path.display())),
    }
}

/// Keeps the newest `--delta-versions` stored versions of the file.
fn prune(path: &Path, plan: &Plan, opts: &CompressOptions, out: &mut Vec<DeltaResult>) {
    if opts.dry_run || opts.deltas.versions == 0 {
        return;
    }
    if let Some((store, rel)) = plan.store_of(path) {
        if let Err(e) = store.prune(rel, opts.deltas.versions) {
            out.push(DeltaResult {
                coding: DeltaCoding::Dcz,
                dictionary: [0; dictionary::HASH_LEN],
                outcome: DeltaOutcome::Failed(format!("cannot prune stored versions: {e}")),
            });
        }
    }
}

/// What a delta must beat: the br sibling made from this original (in a
/// dry run, which writes none, the one that would be made), else the
/// smallest other sibling, else the original itself.
fn rival_size(path: &Path, meta: &fs::Metadata, current: &[u8], opts: &CompressOptions) -> u64 {
    let made = |c: Coding| {
        let sib = sibling_path(path, c);
        fs::symlink_metadata(&sib)
            .ok()
            .filter(|m| m.is_file() && mtime(m) == mtime(meta))
            .map(|m| m.len())
    };
    let would_be = || {
        (opts.dry_run && opts.codings.contains(&Coding::Br))
            .then(|| encode_vec(Coding::Br, &opts.levels, current).ok())
            .flatten()
            .map(|v| v.len() as u64)
    };
    made(Coding::Br)
        .or_else(would_be)
        .or_else(|| {
            [Coding::Zstd, Coding::Gzip]
                .into_iter()
                .filter_map(made)
                .min()
        })
        .unwrap_or(meta.len())
}

/// Makes one delta, or keeps or drops it.
fn make_delta(
    path: &Path,
    meta: &fs::Metadata,
    prepared: &Prepared,
    d: &Dict,
    coding: DeltaCoding,
    br: u64,
    opts: &CompressOptions,
) -> DeltaOutcome {
    let Some(target) = dictionary::delta_path(path, &d.hash, coding) else {
        return DeltaOutcome::Failed("file name is not valid UTF-8".into());
    };
    let existing = fs::symlink_metadata(&target).ok();
    if !opts.force
        && existing
            .as_ref()
            .is_some_and(|m| up_to_date(&target, m, meta, &d.hash))
    {
        return DeltaOutcome::UpToDate;
    }
    let dict = match load(&d.source) {
        Ok(x) => x,
        Err(why) => return DeltaOutcome::Failed(why),
    };
    let data = &prepared.current;
    if coding == DeltaCoding::Dcb && !dictionary::dcb_fits(dict.len() as u64, data.len() as u64) {
        return match drop_existing(&target, existing.as_ref(), opts.dry_run) {
            Ok(removed) => DeltaOutcome::TooLarge { removed },
            Err(why) => DeltaOutcome::Failed(why),
        };
    }
    let delta = match dictionary::encode(coding, &opts.deltas.levels, &dict, data) {
        Ok(x) => x,
        Err(e) => return DeltaOutcome::Failed(format!("cannot encode: {e}")),
    };
    let after = delta.len() as u64;
    if after >= br {
        return match drop_existing(&target, existing.as_ref(), opts.dry_run) {
            Ok(removed) => DeltaOutcome::NotSmaller { after, br, removed },
            Err(why) => DeltaOutcome::Failed(why),
        };
    }
    if opts.dry_run {
        return DeltaOutcome::WouldWrite { after, br };
    }
    match write_delta(path, meta, &target, &delta) {
        Ok(()) => DeltaOutcome::Written { after, br },
        Err(why) => DeltaOutcome::Failed(why),
    }
}

/// Removes a delta that is no longer made; whether there was one.
fn drop_existing(
    target: &Path,
    existing: Option<&fs::Metadata>,
    dry_run: bool,
) -> Result<bool, String> {
    if dry_run || !existing.is_some_and(|m| m.is_file()) {
        return Ok(false);
    }
    fs::remove_file(target).map_err(|e| format!("cannot remove {}: {e}", target.display()))?;
    Ok(true)
}

/// True when the delta at `target` was made from the original `meta`
/// describes (same mtime, as siblings) against the dictionary `hash`.
fn up_to_date(target: &Path, m: &fs::Metadata, meta: &fs::Metadata, hash: &Hash) -> bool {
    if !m.is_file() || mtime(m).is_none() || mtime(m) != mtime(meta) {
        return false;
    }
    let mut head = [0u8; 40];
    let n = fs::File::open(target)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    dictionary::split_header(&head[..n]).is_some_and(|(_, h, _)| h == *hash)
}

/// A dictionary's bytes.
fn load(source: &Source) -> Result<Arc<Vec<u8>>, String> {
    match source {
        Source::Bytes(b, _) => Ok(b.clone()),
        Source::Stored(p) => store::load_version(p)
            .map(Arc::new)
            .map_err(|e| format!("cannot read stored version {}: {e}", p.display())),
    }
}

/// Writes a delta atomically with the original's mtime, unless the
/// original changed since it was read.
fn write_delta(
    path: &Path,
    meta: &fs::Metadata,
    target: &Path,
    delta: &[u8],
) -> Result<(), String> {
    let write = || -> std::io::Result<TempFile> {
        let mut tmp = TempFile::new(target)?;
        tmp.write_all(delta)?;
        Ok(tmp)
    };
    let tmp = write().map_err(|e| format!("cannot write {}: {e}", target.display()))?;
    if changed_since(path, meta)? {
        return Err("file changed while being compressed; left as it was".into());
    }
    tmp.commit(target, meta)
        .map_err(|e| format!("cannot write {}: {e}", target.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_belongs_to_the_innermost_tree_given() {
        let d = tempfile::tempdir().unwrap();
        let (top, sub) = (d.path().to_path_buf(), d.path().join("assets"));
        fs::create_dir_all(&sub).unwrap();
        let f = sub.join("app.js");
        fs::write(&f, b"x").unwrap();
        assert_eq!(tree_of(&f), sub);
        assert_eq!(tree_of(Path::new("app.js")), Path::new(""));
        let opts = DeltaOptions {
            versions: 1,
            ..Default::default()
        };
        let files = [(f.clone(), 1)];
        let plan = Plan::new(&[top.clone(), sub.clone()], &files, &opts)
            .unwrap()
            .unwrap();
        let (store, rel) = plan.store_of(&f).unwrap();
        assert_eq!((store.tree(), rel), (sub.as_path(), Path::new("app.js")));
        let plan = Plan::new(std::slice::from_ref(&top), &files, &opts)
            .unwrap()
            .unwrap();
        assert_eq!(plan.store_of(&f).unwrap().1, Path::new("assets/app.js"));
        assert!(Store::of_tree(Path::new(""))
            .relative(Path::new("app.js"))
            .is_some());
    }

    #[test]
    fn group_members_get_older_members_newest_first() {
        let d = tempfile::tempdir().unwrap();
        let t0 = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        let mut files = Vec::new();
        for (i, name) in ["app.c.js", "app.a.js", "app.b.js", "other.js"]
            .iter()
            .enumerate()
        {
            let p = d.path().join(name);
            fs::write(&p, name).unwrap();
            fs::File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .set_modified(t0 + std::time::Duration::from_secs(i as u64))
                .unwrap();
            files.push((p, 8));
        }
        let opts = DeltaOptions {
            groups: vec!["app.*.js".into()],
            group_depth: 2,
            ..Default::default()
        };
        let plan = Plan::new(&[d.path().to_path_buf()], &files, &opts)
            .unwrap()
            .unwrap();
        let older = |n: &str| {
            plan.groups
                .get(&d.path().join(n))
                .cloned()
                .unwrap_or_default()
        };
        assert!(older("app.c.js").is_empty());
        assert_eq!(older("app.a.js"), [d.path().join("app.c.js")]);
        assert_eq!(
            older("app.b.js"),
            [d.path().join("app.a.js"), d.path().join("app.c.js")]
        );
        assert!(older("other.js").is_empty());
        let bad = DeltaOptions {
            groups: vec!["app.[.js".into()],
            ..Default::default()
        };
        assert!(Plan::new(&[d.path().to_path_buf()], &files, &bad).is_err());
    }
}

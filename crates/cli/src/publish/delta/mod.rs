//! Deltas (RFC 9842) made at publish time: which dictionaries each file
//! gets a delta against (here), the earlier version recovered from a stale
//! sibling before the siblings are rewritten (`previous`), and each delta
//! made, kept or dropped through the siblings' lifecycle (`make`).
//!
//! Three sources of dictionaries, in any mix:
//! - earlier versions of the same path (`--delta-versions K`), kept in the
//!   tree's store (outside the tree, `publish::state`) and recovered from the `.zst`/`.gz`/`.br` sibling of a
//!   file that changed since its siblings were made;
//! - older members of a group of versioned names (`--delta-group GLOB`);
//! - one site dictionary (`--dictionary FILE`).
//!
//! When any is asked for, a file's deltas are exactly those of this run:
//! a delta whose dictionary is no longer among them is removed.

pub(super) use gdn_core::delta_codec as codec;
mod make;
mod previous;

pub use codec::DeltaLevels;
pub use make::DeltaResult;
pub(super) use make::{make_deltas, prune};
pub(super) use previous::{prepare, Prepared};

use gdn_core::dictionary::{self, DeltaCoding, Hash};
use gdn_publish::options::DeltaOptions;
use gdn_publish::store::{self, Store};
use globset::Glob;
use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

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
    source: DictSource,
}

#[derive(Clone, Debug)]
enum DictSource {
    /// A version in the store, loaded only when a delta must be made.
    Stored(PathBuf),
    /// Bytes at hand, and the file they are, when they are one.
    Bytes(Arc<Vec<u8>>, Option<PathBuf>),
}

/// The site dictionary of `--dictionary`.
struct SiteDictionary {
    hash: Hash,
    bytes: Arc<Vec<u8>>,
    path: PathBuf,
}

/// Everything decided before the files are worked on in parallel.
pub(super) struct DeltaPlan {
    trees: Vec<Store>,
    site: Option<SiteDictionary>,
    /// Group member -> the older members it gets deltas against.
    groups: HashMap<PathBuf, Vec<PathBuf>>,
    /// Original -> its deltas on disk.
    existing: HashMap<PathBuf, Vec<Existing>>,
}

impl DeltaPlan {
    /// The plan for `files`, found in the trees of `trees`; `None` when no
    /// delta is asked for.
    pub(super) fn new(
        mut trees: Vec<Store>,
        files: &[(PathBuf, u64)],
        opts: &DeltaOptions,
    ) -> Result<Option<DeltaPlan>, String> {
        if !opts.active() {
            return Ok(None);
        }
        // Deepest first, so a file belongs to the innermost tree given.
        trees.sort_by_key(|s| std::cmp::Reverse(s.tree().components().count()));
        let site = match &opts.dictionary {
            Some(p) => Some(site_dictionary(p)?),
            None => None,
        };
        let mut plan = DeltaPlan {
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
fn site_dictionary(path: &Path) -> Result<SiteDictionary, String> {
    let bytes = store::read_limited(path)
        .map_err(|e| format!("cannot read dictionary {}: {e}", path.display()))?;
    if bytes.is_empty() {
        return Err(format!("dictionary {} is empty", path.display()));
    }
    Ok(SiteDictionary {
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

/// The dictionaries `path` gets deltas against, without its own content.
fn dictionaries(
    path: &Path,
    prepared: &Prepared,
    plan: &DeltaPlan,
    opts: &DeltaOptions,
) -> Vec<Dict> {
    let own = dictionary::hash(&prepared.current);
    let mut v = Vec::new();
    if let (Some((store, rel)), true) = (plan.store_of(path), opts.versions > 0) {
        let pending = prepared.pending.iter().map(|b| Dict {
            hash: dictionary::hash(b),
            source: DictSource::Bytes(b.clone(), None),
        });
        let stored = store.versions(rel).into_iter().map(|s| Dict {
            hash: s.hash,
            source: DictSource::Stored(s.path),
        });
        let versions: Vec<Dict> = pending.chain(stored).filter(|d| d.hash != own).collect();
        v.extend(dedup(versions).into_iter().take(opts.versions));
    }
    for member in plan.groups.get(path).into_iter().flatten() {
        if let Ok(b) = store::read_limited(member) {
            v.push(Dict {
                hash: dictionary::hash(&b),
                source: DictSource::Bytes(Arc::new(b), Some(member.clone())),
            });
        }
    }
    if let Some(site) = &plan.site {
        let itself = fs::canonicalize(path).is_ok_and(|p| p == site.path);
        if !itself {
            v.push(Dict {
                hash: site.hash,
                source: DictSource::Bytes(site.bytes.clone(), Some(site.path.clone())),
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

#[cfg(test)]
mod tests {
    use super::*;
    use gdn_publish::state::tree_of;

    /// Stores of the trees of `paths`, never written by these tests.
    fn stores(paths: &[PathBuf]) -> Vec<Store> {
        let nowhere = PathBuf::from("/nonexistent/gzip-disk-ng-store");
        paths
            .iter()
            .map(|p| Store::at(&tree_of(p), nowhere.clone()))
            .collect()
    }

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
        let plan = DeltaPlan::new(stores(&[top.clone(), sub.clone()]), &files, &opts)
            .unwrap()
            .unwrap();
        let (store, rel) = plan.store_of(&f).unwrap();
        assert_eq!((store.tree(), rel), (sub.as_path(), Path::new("app.js")));
        let plan = DeltaPlan::new(stores(std::slice::from_ref(&top)), &files, &opts)
            .unwrap()
            .unwrap();
        assert_eq!(plan.store_of(&f).unwrap().1, Path::new("assets/app.js"));
        assert!(Store::at(Path::new(""), PathBuf::new())
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
        let plan = DeltaPlan::new(stores(&[d.path().to_path_buf()]), &files, &opts)
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
        assert!(DeltaPlan::new(stores(&[d.path().to_path_buf()]), &files, &bad).is_err());
    }
}

//! `verify`: every sibling under the given paths must decode completely,
//! match its original when that exists, not be older than it, and be
//! decodable by browsers (zstd window, no large-window brotli); every
//! delta must name its dictionary in its header and decode against it to
//! its original.

use super::delta::codec;
use super::progress::Progress;
use super::summary::VerifySummary;
use super::walk::{FoundFile, SkipReason, WalkFilter};
use gdn_core::coding::Coding;
use gdn_core::dictionary::{self, DeltaCoding, Hash};
use gdn_core::types::{TypeKind, Types};
use gdn_publish::check;
use gdn_publish::freshness::mtime;
use gdn_publish::options::Report;
use gdn_publish::state;
use gdn_publish::store::{self, Store};
use rayon::prelude::*;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

enum Verdict {
    Ok,
    Stale,
    Bad(String),
}

/// What a sibling or delta found by the walk is.
pub(super) enum MadeKind {
    Sibling(Coding),
    Delta(DeltaCoding, Hash),
}

/// A sibling or delta found by the walk: its path, kind and original's path.
pub(super) struct MadeFile {
    pub(super) path: PathBuf,
    pub(super) kind: MadeKind,
    pub(super) original: PathBuf,
}

/// What a walk found that `compress` makes.
#[derive(Default)]
pub(super) struct MadeFiles {
    /// Siblings and deltas, by their names.
    pub(super) files: Vec<MadeFile>,
    /// Temporaries of interrupted runs.
    pub(super) temporaries: Vec<PathBuf>,
    /// What could not be examined, and why.
    pub(super) errors: Vec<(PathBuf, String)>,
}

/// Runs `verify` over `paths`.
pub fn verify(paths: &[PathBuf], follow_symlinks: bool, report: Report) -> VerifySummary {
    verify_with_dictionaries(paths, follow_symlinks, report, &[], None)
}

/// Runs `verify` over `paths`; deltas may also use the dictionaries in
/// `extra` besides those of the trees' stores (`store`, else each tree's
/// in the state directory).
pub fn verify_with_dictionaries(
    paths: &[PathBuf],
    follow_symlinks: bool,
    report: Report,
    extra: &[PathBuf],
    store: Option<&Path>,
) -> VerifySummary {
    let start = Instant::now();
    let mut summary = VerifySummary::default();
    let dicts = match Dictionaries::new(paths, extra, store) {
        Ok(d) => d,
        Err(why) => {
            Progress::errors_only().problem(Path::new("dictionaries"), &why);
            summary.errors += 1;
            return summary;
        }
    };
    let sibs = siblings_under(paths, follow_symlinks, &mut summary);
    let types = super::walk::load_types(None, &[]).unwrap_or_default();
    let progress = Progress::new(report, sibs.len() as u64);
    let verdicts: Vec<Verdict> = sibs
        .par_iter()
        .map(|s| {
            progress.file_started(&s.path);
            let v = match (not_a_page(&types, s), &s.kind) {
                (Some(why), _) => Verdict::Bad(why),
                (None, MadeKind::Sibling(c)) => verify_sibling(*c, &s.path, &s.original),
                (None, MadeKind::Delta(c, h)) => verify_delta(*c, h, &s.path, &s.original, &dicts),
            };
            match &v {
                Verdict::Ok => progress.file_line(&format!("{}: ok", s.path.display())),
                Verdict::Stale => progress.problem(&s.path, "stale: older than its original"),
                Verdict::Bad(why) => progress.problem(&s.path, why),
            }
            progress.file_done();
            v
        })
        .collect();
    progress.finish();
    summary.checked = verdicts.len() as u64;
    for v in verdicts {
        match v {
            Verdict::Ok => summary.ok += 1,
            Verdict::Stale => summary.stale += 1,
            Verdict::Bad(_) => summary.bad += 1,
        }
    }
    summary.elapsed = start.elapsed();
    summary
}

/// Why a sibling or delta must not be published, if it must not: its
/// original is a server-side script (Apache runs it; its sibling is its
/// source, sent as bytes), or an existing file of no MIME type (`.inc`,
/// `.bak`: configuration and backups, not pages). `clean` removes them.
fn not_a_page(types: &Types, s: &MadeFile) -> Option<String> {
    let name = s.original.file_name()?.to_str()?;
    match types.kind(name.as_bytes()) {
        TypeKind::Script => Some(format!(
            "a copy of the server-side script {name}: Apache sends it as bytes, \
             source included; remove it (gzip-disk-ng clean)"
        )),
        TypeKind::Untyped if s.original.is_file() => Some(format!(
            "a copy of {name}, which has no MIME type (not a page): \
             remove it (gzip-disk-ng clean)"
        )),
        _ => None,
    }
}

/// Every sibling below `paths`; what cannot be walked is told and counted
/// in `summary`.
fn siblings_under(
    paths: &[PathBuf],
    follow_symlinks: bool,
    summary: &mut VerifySummary,
) -> Vec<MadeFile> {
    let made = made_under(paths, follow_symlinks);
    let problems = Progress::errors_only();
    for (path, why) in &made.errors {
        problems.problem(path, why);
        summary.errors += 1;
    }
    made.files
}

/// Every sibling and delta below `paths` by its name, and the temporaries.
pub(super) fn made_under(paths: &[PathBuf], follow_symlinks: bool) -> MadeFiles {
    let mut filter = WalkFilter::default();
    filter.follow_symlinks = follow_symlinks;
    let mut made = MadeFiles::default();
    for found in filter.walk(paths) {
        match found {
            FoundFile::File(path, _) => made.files.extend(sibling_named(path)),
            FoundFile::Skipped(path, SkipReason::Temporary) => made.temporaries.push(path),
            FoundFile::Skipped(..) => {}
            FoundFile::Error(path, why) => made.errors.push((path, why)),
        }
    }
    made
}

/// The original of the sibling or delta `path` names, if it names one.
pub(super) fn original_named(path: &Path) -> Option<PathBuf> {
    sibling_named(path.to_path_buf()).map(|s| s.original)
}

/// The sibling or delta `path` names, if it names one.
fn sibling_named(path: PathBuf) -> Option<MadeFile> {
    if let Some((coding, original)) = check::sibling_of(&path) {
        return Some(MadeFile {
            path,
            kind: MadeKind::Sibling(coding),
            original,
        });
    }
    let (name, hash, coding) = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(dictionary::parse_delta_name)?;
    Some(MadeFile {
        original: path.with_file_name(name),
        kind: MadeKind::Delta(coding, hash),
        path,
    })
}

fn verify_sibling(coding: Coding, sib: &Path, orig: &Path) -> Verdict {
    let sib_meta = match fs::metadata(sib) {
        Ok(m) => m,
        Err(e) => return Verdict::Bad(format!("cannot stat: {e}")),
    };
    if let Err(why) = check::browsers_accept(coding, sib) {
        return Verdict::Bad(why);
    }
    match fs::metadata(orig) {
        Ok(orig_meta) if orig_meta.is_file() => {
            if mtime(&sib_meta) < mtime(&orig_meta) {
                // Decoding still has to succeed; comparing is pointless.
                return match check::decodes(coding, sib) {
                    Ok(_) => Verdict::Stale,
                    Err(e) => Verdict::Bad(format!("stale, and {e}")),
                };
            }
            match check::judge(coding, sib, Some(orig)) {
                Ok(_) => Verdict::Ok,
                Err(e) => Verdict::Bad(e),
            }
        }
        _ => match check::judge(coding, sib, None) {
            Ok(_) => Verdict::Ok,
            Err(e) => Verdict::Bad(e),
        },
    }
}

/// Where deltas' dictionaries are looked up: the stores of the checked
/// trees, then the dictionaries given on the command line.
pub(super) struct Dictionaries {
    trees: Vec<Store>,
    extra: HashMap<Hash, Vec<u8>>,
}

impl Dictionaries {
    fn new(
        paths: &[PathBuf],
        extra: &[PathBuf],
        store: Option<&Path>,
    ) -> Result<Dictionaries, String> {
        Dictionaries::with_stores(state::stores(paths, store, false)?, extra)
    }

    /// The dictionaries of `trees`, then those of `extra`.
    pub(super) fn with_stores(
        trees: Vec<Store>,
        extra: &[PathBuf],
    ) -> Result<Dictionaries, String> {
        let mut by_hash = HashMap::new();
        for p in extra {
            let b = store::read_limited(p).map_err(|e| format!("{}: {e}", p.display()))?;
            by_hash.insert(dictionary::hash(&b), b);
        }
        Ok(Dictionaries {
            trees,
            extra: by_hash,
        })
    }

    /// Whether a store of the checked trees names the dictionary with
    /// hash `hash` for `original` (`Store::records`).
    pub(super) fn recorded(&self, original: &Path, hash: &Hash) -> bool {
        self.trees
            .iter()
            .any(|s| s.relative(original).is_some_and(|rel| s.records(rel, hash)))
    }

    /// The dictionary with `hash` that deltas of `original` may use.
    fn find(&self, original: &Path, hash: &Hash) -> Result<Option<Vec<u8>>, String> {
        for s in &self.trees {
            if let Some(rel) = s.relative(original) {
                if let Some(d) = s.find(rel, hash).map_err(|e| e.to_string())? {
                    return Ok(Some(d));
                }
            }
        }
        Ok(self.extra.get(hash).cloned())
    }
}

/// A delta's verdict: its header names the dictionary its name does, it
/// decodes against that dictionary, and to its original when there is one.
fn verify_delta(
    coding: DeltaCoding,
    hash: &Hash,
    path: &Path,
    orig: &Path,
    dicts: &Dictionaries,
) -> Verdict {
    let decoded = match decode_delta(coding, hash, path, orig, dicts) {
        Ok(d) => d,
        Err(why) => return Verdict::Bad(why),
    };
    let (Ok(meta), Ok(orig_meta)) = (fs::metadata(path), fs::metadata(orig)) else {
        return Verdict::Ok;
    };
    if mtime(&meta) < mtime(&orig_meta) {
        return Verdict::Stale;
    }
    match store::read_limited(orig) {
        Ok(o) if o == decoded => Verdict::Ok,
        Ok(_) => Verdict::Bad("decodes to different content than its original".into()),
        Err(e) => Verdict::Bad(format!("cannot read original: {e}")),
    }
}

/// What the delta at `path` of `orig` decodes to, once its header names
/// the dictionary its name does (`coding`, `hash`) and that dictionary is
/// found in `dicts`.
pub(super) fn decode_delta(
    coding: DeltaCoding,
    hash: &Hash,
    path: &Path,
    orig: &Path,
    dicts: &Dictionaries,
) -> Result<Vec<u8>, String> {
    let delta = store::read_limited(path).map_err(|e| format!("cannot read: {e}"))?;
    match dictionary::split_header(&delta) {
        Some((c, h, _)) if c == coding && h == *hash => {}
        Some(_) => return Err("header does not match the file name".into()),
        None => return Err(format!("no {} header", coding.token())),
    }
    let dict = match dicts.find(orig, hash) {
        Ok(Some(d)) => d,
        Ok(None) => {
            return Err(format!(
                "dictionary {} not found (not stored, catalogued or given)",
                dictionary::to_hex(hash)
            ))
        }
        Err(e) => return Err(format!("cannot read its dictionary: {e}")),
    };
    codec::decode(&dict, &delta).map_err(|e| e.to_string())
}

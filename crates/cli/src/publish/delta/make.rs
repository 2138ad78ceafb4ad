//! Each delta of one file run through the lifecycle a sibling goes
//! through, against the br sibling the siblings' step left; deltas whose
//! dictionary is no longer the file's removed; stored versions pruned.

use super::codec::{self, DeltaLevels};
use super::previous::Prepared;
use super::{dictionaries, DeltaPlan, Dict, DictSource};
use gdn_core::coding::Coding;
use gdn_core::dictionary::{self, DeltaCoding, Hash};
use gdn_core::encode::encode_vec;
use gdn_publish::error::{PublishError, Removal};
use gdn_publish::freshness::mtime;
use gdn_publish::lifecycle::{self, Encoded, LifecycleJob, LifecycleOutcome, Made, SizeAgainst};
use gdn_publish::options::CompressOptions;
use gdn_publish::original::Original;
use gdn_publish::store;
use std::collections::BTreeSet;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One delta's outcome, with its coding and dictionary.
#[derive(Debug)]
pub struct DeltaResult {
    pub coding: DeltaCoding,
    pub dictionary: Hash,
    pub outcome: LifecycleOutcome,
}

/// Makes (or keeps, drops, removes) every delta of `original`, after its
/// siblings are done.
pub(in crate::publish) fn make_deltas(
    original: &Original<'_>,
    prepared: &Prepared,
    plan: &DeltaPlan,
    opts: &CompressOptions,
) -> Vec<DeltaResult> {
    let path = original.path;
    let dicts = dictionaries(path, prepared, plan, &opts.deltas);
    let br = rival_size(original, &prepared.current, opts);
    let mut out = Vec::new();
    for d in &dicts {
        for &coding in &opts.deltas.codings {
            let outcome = make_delta(original, prepared, d, coding, br, opts);
            if matches!(
                outcome,
                LifecycleOutcome::UpToDate | LifecycleOutcome::Written(_)
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
    let existing = plan.existing.get(path).map(Vec::as_slice).unwrap_or(&[]);
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
    out
}

/// Records a file dictionary in the store of the tree it is in, so that
/// `verify` finds it; failing only costs `verify` that knowledge.
fn catalogue(plan: &DeltaPlan, d: &Dict) {
    if let DictSource::Bytes(_, Some(file)) = &d.source {
        if let Some((store, _)) = plan.store_of(file) {
            let _ = store.catalogue(&d.hash, file);
        }
    }
}

/// Removes a delta whose dictionary is no longer the file's.
fn remove_stale(path: &Path, dry_run: bool) -> LifecycleOutcome {
    if dry_run {
        return LifecycleOutcome::Stale;
    }
    match fs::remove_file(path) {
        Ok(()) => LifecycleOutcome::Stale,
        Err(e) => {
            LifecycleOutcome::Failed(PublishError::Remove(Removal::Stale, path.to_path_buf(), e))
        }
    }
}

/// Keeps the newest `--delta-versions` stored versions of the file.
pub(in crate::publish) fn prune(
    original: &Original<'_>,
    plan: &DeltaPlan,
    opts: &CompressOptions,
) -> Result<(), PublishError> {
    if opts.dry_run || opts.deltas.versions == 0 {
        return Ok(());
    }
    if let Some((store, rel)) = plan.store_of(original.path) {
        store
            .prune(rel, opts.deltas.versions)
            .map_err(PublishError::Prune)?;
    }
    Ok(())
}

/// What a delta must beat: the br sibling made from this original (in a
/// dry run, which writes none, the one that would be made), else the
/// smallest other sibling, else the original itself.
fn rival_size(original: &Original<'_>, current: &[u8], opts: &CompressOptions) -> u64 {
    let would_be = || {
        (opts.dry_run && opts.codings.contains(&Coding::Br))
            .then(|| encode_vec(Coding::Br, &opts.levels, current).ok())
            .flatten()
            .map(|v| v.len() as u64)
    };
    original
        .current_len(Coding::Br)
        .or_else(would_be)
        .or_else(|| {
            [Coding::Zstd, Coding::Gzip]
                .into_iter()
                .filter_map(|c| original.current_len(c))
                .min()
        })
        .unwrap_or(original.meta.len())
}

/// Makes one delta, or keeps or drops it.
fn make_delta(
    original: &Original<'_>,
    prepared: &Prepared,
    dict: &Dict,
    coding: DeltaCoding,
    br: u64,
    opts: &CompressOptions,
) -> LifecycleOutcome {
    let Some(target) = dictionary::delta_path(original.path, &dict.hash, coding) else {
        return LifecycleOutcome::Failed(PublishError::NameNotUtf8);
    };
    let job = DeltaJob {
        original,
        prepared,
        dict,
        coding,
        existing: fs::symlink_metadata(&target).ok(),
        target,
        br,
        levels: &opts.deltas.levels,
    };
    lifecycle::run(&job, original, opts)
}

/// One delta of one original against one dictionary.
struct DeltaJob<'a> {
    original: &'a Original<'a>,
    prepared: &'a Prepared,
    dict: &'a Dict,
    coding: DeltaCoding,
    target: PathBuf,
    existing: Option<fs::Metadata>,
    /// What it must be smaller than (`rival_size`).
    br: u64,
    levels: &'a DeltaLevels,
}

impl LifecycleJob for DeltaJob<'_> {
    fn target(&self) -> &Path {
        &self.target
    }
    fn existing(&self) -> Option<&fs::Metadata> {
        self.existing.as_ref()
    }
    /// Made from this original (same mtime, as siblings) against this
    /// dictionary (its header names it).
    fn up_to_date(&self, m: &fs::Metadata) -> bool {
        if !m.is_file() || mtime(m).is_none() || mtime(m) != mtime(&self.original.meta) {
            return false;
        }
        let mut head = [0u8; 40];
        let n = fs::File::open(&self.target)
            .and_then(|mut f| f.read(&mut head))
            .unwrap_or(0);
        dictionary::split_header(&head[..n]).is_some_and(|(_, h, _)| h == self.dict.hash)
    }
    fn dry_run_encodes(&self) -> bool {
        true
    }
    fn encode(&self) -> Result<Made, PublishError> {
        let dict = load(&self.dict.source)?;
        let data = &self.prepared.current;
        if self.coding == DeltaCoding::Dcb && !codec::dcb_fits(dict.len() as u64, data.len() as u64)
        {
            return Ok(Made::TooLarge);
        }
        let delta =
            codec::encode(self.coding, self.levels, &dict, data).map_err(PublishError::Encode)?;
        let sizes = SizeAgainst {
            size: delta.len() as u64,
            against: self.br,
        };
        Ok(Made::Encoded(Encoded::Bytes(delta), sizes))
    }
    fn pays(&self, sizes: SizeAgainst) -> bool {
        sizes.size < sizes.against
    }
    fn removal(&self) -> Removal {
        Removal::NotMade
    }
}

/// A dictionary's bytes.
fn load(source: &DictSource) -> Result<Arc<Vec<u8>>, PublishError> {
    match source {
        DictSource::Bytes(b, _) => Ok(b.clone()),
        DictSource::Stored(p) => store::load_version(p)
            .map(Arc::new)
            .map_err(|e| PublishError::LoadVersion(p.clone(), e)),
    }
}

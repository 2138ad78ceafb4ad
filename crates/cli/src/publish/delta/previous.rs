//! The file's content read for its deltas, and the earlier version its
//! stale siblings still hold, recovered before they are rewritten.

use super::DeltaPlan;
use gdn_core::coding::Coding;
use gdn_core::decode::Decoder;
use gdn_core::dictionary;
use gdn_publish::error::PublishError;
use gdn_publish::freshness::made_from;
use gdn_publish::options::CompressOptions;
use gdn_publish::original::Original;
use gdn_publish::{sibling_path, store};
use std::fs;
use std::io::Write;
use std::sync::Arc;

/// A file's content, read before its siblings are rewritten, and the
/// earlier version recovered from a stale sibling.
pub(in crate::publish) struct Prepared {
    pub(super) current: Arc<Vec<u8>>,
    /// The earlier version a dry run recovered but does not store.
    pub(super) pending: Option<Arc<Vec<u8>>>,
    /// An earlier version was recovered from a stale sibling.
    pub(in crate::publish) recovered: bool,
}

/// Reads the file and, for `--delta-versions`, recovers the version its
/// stale siblings still hold and adds it to the store. `Ok(None)` when the
/// file gets no delta (too large, or outside every tree and dictionary).
pub(in crate::publish) fn prepare(
    original: &Original<'_>,
    plan: &DeltaPlan,
    opts: &CompressOptions,
) -> Result<Option<Prepared>, PublishError> {
    let path = original.path;
    if original.meta.len() > store::DELTA_INPUT_MAX {
        return Ok(None);
    }
    let current = Arc::new(store::read_limited(path).map_err(PublishError::Read)?);
    let mut prepared = Prepared {
        current,
        pending: None,
        recovered: false,
    };
    let Some((store, rel)) = plan.store_of(path).filter(|_| opts.deltas.versions > 0) else {
        return Ok(Some(prepared));
    };
    let Some((old, like)) = previous_version(original)? else {
        return Ok(Some(prepared));
    };
    if dictionary::hash(&old) == dictionary::hash(&prepared.current) {
        return Ok(Some(prepared));
    }
    prepared.recovered = true;
    if opts.dry_run {
        prepared.pending = Some(Arc::new(old));
    } else {
        store.add(rel, &old, like).map_err(PublishError::Store)?;
    }
    Ok(Some(prepared))
}

/// The content a stale sibling decodes to (the version it was made from)
/// and that sibling's metadata (the version's mtime); `None` when the
/// siblings are up to date or there is none.
fn previous_version<'a>(
    original: &'a Original<'_>,
) -> Result<Option<(Vec<u8>, &'a fs::Metadata)>, PublishError> {
    for c in [Coding::Zstd, Coding::Gzip, Coding::Br] {
        let Some(sib_meta) = original.found(c).filter(|m| m.is_file()) else {
            continue;
        };
        let sib = sibling_path(original.path, c);
        if made_from(c, &sib, sib_meta, &original.meta) {
            return Ok(None);
        }
        let decoded = decode_limited(c, &sib).map_err(|e| PublishError::Recover(sib, e))?;
        return Ok(Some((decoded, sib_meta)));
    }
    Ok(None)
}

/// What the `coding` sibling at `sib` decodes to, refused past
/// `store::DELTA_INPUT_MAX`.
fn decode_limited(
    coding: Coding,
    sib: &std::path::Path,
) -> Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>> {
    let mut decoder = Decoder::new(coding, fs::File::open(sib)?)?;
    let mut out = Vec::new();
    let mut limited = Limited {
        out: &mut out,
        left: store::DELTA_INPUT_MAX,
    };
    decoder.copy_to(&mut limited)?;
    Ok(out)
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

//! Which compressor makes a copy, when several share a cache root (a
//! fleet's servers on one filesystem): the first to create the copy's
//! claim file, exclusively, makes it; the others take the copy as on its
//! way. No lock and no inode number is relied on: an exclusive create is
//! atomic on NFS (v3 and later) as on a local filesystem.

use gdn_core::publish::atomic::TMP_MARK;
use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A claim older than this is a killed compressor's: taken over. Longer
/// than compressing the largest file takes (brotli at quality 11 over
/// `key::MAX_SIZE`), far shorter than the hour a start waits before it
/// removes a temporary.
const STALE: Duration = Duration::from_secs(600);

/// A copy being made here; the claim file goes when this is dropped.
pub(super) struct Claim {
    path: PathBuf,
}

impl Claim {
    /// Claims making the copy at `target` (its directory exists): `None`
    /// while another compressor's fresh claim stands. The claim is named
    /// as a temporary of the copy (`.<name>.tmp0`), so a start's cleanup
    /// of stale temporaries removes one a killed run left.
    pub(super) fn take(target: &Path) -> io::Result<Option<Claim>> {
        let name = target.file_name().unwrap_or_default().to_string_lossy();
        let path = target.with_file_name(format!(".{name}{TMP_MARK}0"));
        for _ in 0..2 {
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(_) => return Ok(Some(Claim { path })),
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
                Err(_) if !stale(&path) => return Ok(None),
                // Gone meanwhile, or removed here: tried once more.
                Err(_) => {
                    let _ = fs::remove_file(&path);
                }
            }
        }
        Ok(None)
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// Whether the claim at `path` is older than `STALE` (or gone).
fn stale(path: &Path) -> bool {
    let written = fs::symlink_metadata(path).and_then(|m| m.modified());
    written.map_or(true, |t| {
        SystemTime::now()
            .duration_since(t)
            .is_ok_and(|age| age >= STALE)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_claim_at_a_time_and_a_stale_one_is_taken_over() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("ab-1-2.br");
        let first = Claim::take(&target).unwrap().expect("free");
        let file = d.path().join(".ab-1-2.br.tmp0");
        assert!(file.exists());
        assert!(Claim::take(&target).unwrap().is_none(), "held");
        drop(first);
        assert!(!file.exists());
        let again = Claim::take(&target).unwrap().expect("free again");
        std::mem::forget(again);
        let old = SystemTime::now() - STALE - Duration::from_secs(1);
        let f = fs::File::options().write(true).open(&file).unwrap();
        f.set_modified(old).unwrap();
        let taken = Claim::take(&target).unwrap();
        assert!(taken.is_some(), "a stale claim is taken over");
    }
}

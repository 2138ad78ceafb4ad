//! Which compressor makes a copy, when several share a cache root (a
//! fleet's servers on one filesystem, or Apache instances on one host):
//! the one holding the copy's claim file locked makes it; the others take
//! the copy as on its way.
//!
//! The lock is `flock`'s, which the kernel drops when its holder exits,
//! however it exits: a compressor killed mid-job (SIGKILL, or httpd
//! ending it at a restart) leaves a claim file nobody holds, and the next
//! job for that copy takes it over at once. Where the filesystem refuses
//! locks (`flock` fails: NFS without its lock service, some FUSE
//! filesystems), a claim is an exclusively created file as before, taken
//! over once older than `STALE`. On NFS mounted `nolock` (or
//! `local_lock=flock`), locks are the host's own: another server's live
//! claim looks free, and a copy may be made twice, which is harmless
//! (each writes a temporary of its own and renames the same bytes).

use gdn_publish::atomic::TMP_MARK;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Where locks do not work, a claim older than this is a killed
/// compressor's: taken over. Longer than compressing the largest file
/// takes (brotli at quality 11 over `key::MAX_SIZE`).
const STALE: Duration = Duration::from_secs(600);

/// A copy being made here; the claim file goes when this is dropped, and
/// its lock with the process, whatever ends it.
pub(super) struct Claim {
    path: PathBuf,
    _file: File,
}

/// Whether a file is held by a live process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Holder {
    /// Locked now by `file`'s opener (the lock goes when it is closed).
    Free,
    /// Locked by another open file: a live holder.
    Busy,
    /// The filesystem refuses locks: only its age can tell.
    Unknown,
}

/// Tries to lock `file` without waiting.
pub(super) fn try_lock(file: &File) -> Holder {
    match file.try_lock() {
        Ok(()) => Holder::Free,
        Err(TryLockError::WouldBlock) => Holder::Busy,
        Err(TryLockError::Error(_)) => Holder::Unknown,
    }
}

impl Claim {
    /// Claims making the copy at `target` (its directory exists): `None`
    /// while another live compressor holds the claim. The claim is named
    /// as a temporary of the copy (`.<name>.tmp0`), so a start's cleanup
    /// of orphaned temporaries removes one a killed run left.
    pub(super) fn take(target: &Path) -> io::Result<Option<Claim>> {
        let name = target.file_name().unwrap_or_default().to_string_lossy();
        let path = target.with_file_name(format!(".{name}{TMP_MARK}0"));
        for _ in 0..3 {
            let (file, created) = match OpenOptions::new().write(true).create_new(true).open(&path)
            {
                Ok(f) => (f, true),
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
                Err(_) => match OpenOptions::new().write(true).open(&path) {
                    Ok(f) => (f, false),
                    // Released meanwhile: tried again.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(e),
                },
            };
            match (try_lock(&file), created) {
                (Holder::Busy, _) => return Ok(None),
                (Holder::Free, _) if !is_at(&file, &path) => continue,
                (Holder::Free, _) | (Holder::Unknown, true) => {
                    if !created {
                        // Taken over: its age restarts.
                        let _ = file.set_modified(SystemTime::now());
                    }
                    return Ok(Some(Claim { path, _file: file }));
                }
                (Holder::Unknown, false) if !stale(&path) => return Ok(None),
                (Holder::Unknown, false) => {
                    let _ = fs::remove_file(&path);
                }
            }
        }
        Ok(None)
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        // Removed while still locked, so no one takes a claim on its way
        // out; the lock goes with the file, right after.
        let _ = fs::remove_file(&self.path);
    }
}

/// Whether `path` still names the open `file` (a holder that released the
/// claim removed it, and another may have made a new one there).
fn is_at(file: &File, path: &Path) -> bool {
    match (file.metadata(), fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
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

/// Whether the temporary (or claim) at `path` is orphaned: no live
/// process holds it, or, where the filesystem refuses locks, it was last
/// written `stale_after` ago.
pub(super) fn orphaned(path: &Path, stale_after: Duration) -> bool {
    let Ok(file) = OpenOptions::new().read(true).open(path) else {
        return false;
    };
    match try_lock(&file) {
        Holder::Free => true,
        Holder::Busy => false,
        Holder::Unknown => file
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .is_some_and(|age| age >= stale_after),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_claim_at_a_time_and_a_dead_holders_is_taken_over() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("ab-1-2.br");
        let first = Claim::take(&target).unwrap().expect("free");
        let file = d.path().join(".ab-1-2.br.tmp0");
        assert!(file.exists());
        assert!(Claim::take(&target).unwrap().is_none(), "held");
        assert!(!orphaned(&file, STALE), "a live claim is not orphaned");
        drop(first);
        assert!(!file.exists());
        // A holder gone without its destructor: the file stays, unlocked.
        fs::write(&file, b"").unwrap();
        assert!(orphaned(&file, STALE));
        let taken = Claim::take(&target).unwrap();
        assert!(
            taken.is_some(),
            "a dead holder's claim is taken over at once"
        );
    }
}

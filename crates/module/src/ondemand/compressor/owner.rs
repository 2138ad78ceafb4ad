//! One compressor at a time per cache root. Two Apache instances (two
//! configurations, a test server beside production) may name the same
//! `GzipDiskNgCacheRoot`; were both to write it, each would remove the
//! other's temporaries at start and evict by its own accounting. The
//! compressor holding an exclusive lock on `LOCK_NAME` in the root owns
//! it; another makes nothing and tries again every `RETRY`. The lock is
//! the kernel's (`flock`), so it goes with the process however it ends:
//! a killed compressor never leaves the root locked.

use super::{Level, Log};
use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

/// The lock file in the cache root. Neither a fan-out directory's name
/// (two hex digits) nor a temporary's (`.<copy name>.tmp<hex>`), so the
/// cache's scan, cleanup and eviction never see it.
pub(super) const LOCK_NAME: &str = "compressor.lock";

/// How often a compressor whose root another one owns tries the lock
/// again: a stopped owner is followed within seconds, and a try is one
/// system call.
pub(super) const RETRY: Duration = Duration::from_secs(5);

/// How long a start waits for a lock that is being let go before it
/// takes the root as another's. The lock goes with the last descriptor
/// of its open file: an owner that is exiting still holds it for a
/// moment, and so does a child forked from the process that held it
/// until its `exec` closes the copy.
const GRACE: Duration = Duration::from_secs(1);

/// What became of the lock at start.
pub(super) enum Taken {
    /// This compressor owns the root; the file holds the lock, and is
    /// `None` when the root has no lock file to take (it cannot be
    /// written: the cache's own checks say so) or locks are not supported
    /// there: the root is then kept as a single instance's is.
    Owned(Option<File>),
    /// Another process holds the lock: try again with this file.
    Busy(File),
}

/// Tries to own `root`, for up to `GRACE` while the lock is held. A lock
/// file that cannot be opened or locked is told at `Debug` and taken as
/// owned: the cache then behaves as it did for a single instance, and an
/// unwritable root warns on its own.
pub(super) fn take(root: &Path, log: Log<'_>) -> Taken {
    let locked = open(root).and_then(|file| {
        let deadline = Instant::now() + GRACE;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Taken::Owned(Some(file))),
                Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                    thread::sleep(GRACE / 50);
                }
                Err(TryLockError::WouldBlock) => return Ok(Taken::Busy(file)),
                Err(TryLockError::Error(e)) => return Err(e),
            }
        }
    });
    locked.unwrap_or_else(|e| {
        let path = root.join(LOCK_NAME);
        log(
            Level::Debug,
            &format!(
                "cannot lock {}: {e}; the cache is not shared safely",
                path.display()
            ),
        );
        Taken::Owned(None)
    })
}

/// Whether `file`'s lock is free now, and taken.
pub(super) fn try_again(file: &File) -> bool {
    file.try_lock().is_ok()
}

/// The lock file, made if missing; read-only when another user made it
/// (a lock needs no write access).
fn open(root: &Path) -> io::Result<File> {
    let path = root.join(LOCK_NAME);
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .or_else(|e| match e.kind() {
            io::ErrorKind::PermissionDenied => File::open(&path),
            _ => Err(e),
        })
}

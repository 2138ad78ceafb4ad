//! The wanted set (`wanted`) shared by the job reader and the workers,
//! and kept on disk: written every few seconds while it changes and at
//! stop to `wanted-<pid>@<host>` in the cache root, and read back (and
//! removed) by the next compressor of the host once the process that
//! wrote it is gone (a restart, graceful or not, or a crash). A
//! compressor never blocks the children: they send without waiting, the
//! reader only adds to the set.

use super::index::CopyId;
use super::wanted::{Added, WantKey, WantedSet, MAX_WANTED};
use crate::job::{self, OwnedJob, MAX_JOB};
use gdn_publish::atomic::TempFile;
use std::collections::VecDeque;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

/// What a wanted file starts with.
const MAGIC: &[u8] = b"gdn-wanted 1\n";

/// The set and what the workers do with it.
struct Inner {
    wanted: WantedSet,
    /// The job stream ended: the workers finish what is wanted, then end.
    closed: bool,
    /// The process is asked to stop: the workers take no more.
    stopping: bool,
    /// Workers at work on an entry.
    busy: usize,
    /// The cache was scanned at start: the workers may begin.
    started: bool,
    /// Changed since last written down.
    dirty: bool,
    /// Copies made at the fast levels and served since, to make again at
    /// the best levels when nothing is wanted (kept across restarts:
    /// `upgrades`).
    remakes: VecDeque<(CopyId, PathBuf)>,
    /// Site dictionary verdicts to act on, first come first (a child
    /// sends them once a training period: few, and never dropped).
    trains: VecDeque<OwnedJob>,
}

/// Most copies waiting to be made again at the best levels.
const MAX_REMAKES: usize = 1 << 16;

/// What a worker does next.
pub(super) enum Next {
    /// A wanted entry.
    Wanted(WantKey, OwnedJob),
    /// A copy made at the fast levels, served since: made again at the
    /// best levels.
    Remake(CopyId, PathBuf),
    /// A host's pages judged: train or withdraw its site dictionary.
    Train(OwnedJob),
}

/// The wanted set, shared.
pub(super) struct Backlog {
    inner: Mutex<Inner>,
    /// Work arrived, or the stream ended, or a stop.
    work: Condvar,
    /// A worker finished an entry.
    finished: Condvar,
}

/// Seconds since the epoch.
pub(super) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Backlog {
    pub(super) fn new() -> Backlog {
        Backlog::with_max(MAX_WANTED)
    }

    pub(super) fn with_max(max: usize) -> Backlog {
        Backlog {
            inner: Mutex::new(Inner {
                wanted: WantedSet::new(max),
                closed: false,
                stopping: false,
                busy: 0,
                started: false,
                dirty: false,
                remakes: VecDeque::new(),
                trains: VecDeque::new(),
            }),
            work: Condvar::new(),
            finished: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Asks for `job`, asked `hits` times since `since`.
    pub(super) fn ask(&self, job: OwnedJob, hits: u32, since: u64) -> Added {
        let mut inner = self.lock();
        let added = inner.wanted.add(job, hits, since);
        inner.dirty = true;
        drop(inner);
        self.work.notify_one();
        added
    }

    /// Asks for the copy `key`, made at the fast levels, to be made again
    /// at the best levels when nothing is wanted.
    pub(super) fn remake(&self, key: CopyId, path: PathBuf) {
        let mut inner = self.lock();
        if inner.remakes.len() < MAX_REMAKES {
            inner.remakes.push_back((key, path));
        }
        drop(inner);
        self.work.notify_one();
    }

    /// The copies waiting to be made again at the best levels.
    pub(super) fn remakes(&self) -> Vec<(CopyId, PathBuf)> {
        self.lock().remakes.iter().cloned().collect()
    }

    /// Asks for a host's judged pages (`OwnedJob::Train`) to be acted on,
    /// before any copy is made.
    pub(super) fn train(&self, job: OwnedJob) {
        let mut inner = self.lock();
        if inner.trains.len() < MAX_REMAKES {
            inner.trains.push_back(job);
        }
        drop(inner);
        self.work.notify_one();
    }

    /// The next work, waiting for some; `None` once the stream ended and
    /// nothing is wanted, or at a stop. Wanted entries come first.
    pub(super) fn next(&self) -> Option<Next> {
        let mut inner = self.lock();
        loop {
            if inner.stopping {
                return None;
            }
            if !inner.started {
                inner = self
                    .work
                    .wait(inner)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            if let Some(job) = inner.trains.pop_front() {
                inner.busy += 1;
                return Some(Next::Train(job));
            }
            if let Some((key, job)) = inner.wanted.take() {
                inner.busy += 1;
                return Some(Next::Wanted(key, job));
            }
            if let Some((key, path)) = inner.remakes.pop_front() {
                inner.busy += 1;
                return Some(Next::Remake(key, path));
            }
            if inner.closed && inner.busy == 0 {
                return None;
            }
            inner = self
                .work
                .wait(inner)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// A worker finished the entry `key`, having done `job` (`None`: a
    /// copy made again).
    pub(super) fn finished(&self, done: Option<(&WantKey, &OwnedJob)>) {
        let mut inner = self.lock();
        if let Some((key, job)) = done {
            inner.wanted.done(key, job);
        }
        inner.busy -= 1;
        inner.dirty = true;
        if inner.wanted.idle() && inner.busy == 0 {
            inner.wanted.shrink();
        }
        drop(inner);
        // A worker waiting for the last one to finish may end now.
        self.work.notify_all();
        self.finished.notify_all();
    }

    /// The cache was scanned and indexed: the workers begin.
    pub(super) fn started(&self) {
        self.lock().started = true;
        self.work.notify_all();
    }

    /// Whether the cache was scanned and indexed.
    pub(super) fn has_started(&self) -> bool {
        self.lock().started
    }

    /// The job stream ended: the workers end once nothing is wanted.
    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.work.notify_all();
    }

    /// A stop: the workers take nothing more; waits up to `within` for
    /// those at work to finish.
    pub(super) fn stop(&self, within: Duration) {
        let mut inner = self.lock();
        inner.stopping = true;
        self.work.notify_all();
        let deadline = std::time::Instant::now() + within;
        while inner.busy > 0 {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            inner = self
                .finished
                .wait_timeout(inner, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Holds the set's lock until what this returns is dropped, as a
    /// worker does while it takes or finishes an entry.
    #[cfg(test)]
    pub(super) fn hold(&self) -> impl Sized + '_ {
        self.lock()
    }

    /// Entries wanted, and when the oldest was first asked for.
    pub(super) fn status(&self) -> (usize, Option<u64>) {
        let inner = self.lock();
        (inner.wanted.len(), inner.wanted.oldest())
    }

    /// Whether no entry or copy to make again waits and no worker is at
    /// work.
    pub(super) fn idle(&self) -> bool {
        let inner = self.lock();
        inner.wanted.idle()
            && inner.remakes.is_empty()
            && inner.trains.is_empty()
            && inner.busy == 0
    }

    /// Writes the set down at `path` if it changed (or `always`), or
    /// removes the file when nothing is wanted.
    pub(super) fn save(&self, path: &Path, always: bool) -> io::Result<()> {
        let records = {
            let mut inner = self.lock();
            if !inner.dirty && !always {
                return Ok(());
            }
            inner.dirty = false;
            records(&inner.wanted)
        };
        if records.len() == MAGIC.len() {
            return match fs::remove_file(path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            };
        }
        let mut tmp = TempFile::new(path)?;
        tmp.write_all(&records)?;
        tmp.persist(path)
    }

    /// Asks for what the wanted file at `path` holds, and removes it; the
    /// copies read.
    pub(super) fn load(&self, path: &Path) -> io::Result<usize> {
        let bytes = fs::read(path)?;
        fs::remove_file(path)?;
        let mut n = 0;
        for (job, hits, since) in parse(&bytes) {
            n += super::wanted::copies_of(&job);
            self.ask(job, hits, since);
        }
        Ok(n)
    }
}

/// The wanted file's bytes: the magic, then per entry its hits (u32 LE),
/// when first asked (u64 LE), its message's length (u16 LE) and the
/// message as a child sends it.
fn records(w: &WantedSet) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    let mut buf = [0u8; MAX_JOB];
    for (job, hits, since) in w.entries() {
        let Some(msg) = job::encode(&job.as_job(), &mut buf) else {
            continue;
        };
        out.extend_from_slice(&hits.to_le_bytes());
        out.extend_from_slice(&since.to_le_bytes());
        out.extend_from_slice(&(msg.len() as u16).to_le_bytes());
        out.extend_from_slice(msg);
    }
    out
}

/// The entries of a wanted file; what cannot be read ends it.
fn parse(bytes: &[u8]) -> Vec<(OwnedJob, u32, u64)> {
    let mut out = Vec::new();
    let Some(mut rest) = bytes.strip_prefix(MAGIC) else {
        return out;
    };
    while let Some((head, tail)) = rest.split_at_checked(14) {
        let hits = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let mut since = [0u8; 8];
        since.copy_from_slice(&head[4..12]);
        let len = usize::from(u16::from_le_bytes([head[12], head[13]]));
        let Some((msg, tail)) = tail.split_at_checked(len) else {
            break;
        };
        if let Some(job) = job::decode(msg) {
            out.push((job, hits, u64::from_le_bytes(since)));
        }
        rest = tail;
    }
    out
}

/// This host's name, as wanted files are named.
fn host() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().replace(['/', '@'], "_"))
        .unwrap_or_default()
}

/// What names a wanted file.
pub(super) const WANTED: &str = "wanted-";

/// What names a file of copies made at the fast levels (`upgrades`).
pub(super) const FAST: &str = "fast-";

/// Where this process writes its wanted set under `root`.
pub(super) fn own_file(root: &Path) -> PathBuf {
    own(root, WANTED)
}

/// Where this process writes its file named `kind` (`WANTED`, `FAST`)
/// under `root`.
pub(super) fn own(root: &Path, kind: &str) -> PathBuf {
    root.join(format!("{kind}{}@{}", std::process::id(), host()))
}

/// The wanted files under `root` left by processes of this host that are
/// gone: a compressor before a restart, or one that died.
pub(super) fn orphans(root: &Path) -> Vec<PathBuf> {
    orphans_of(root, WANTED)
}

/// The files named `kind` under `root` left by processes of this host
/// that are gone.
pub(super) fn orphans_of(root: &Path, kind: &str) -> Vec<PathBuf> {
    let host = host();
    let mine = std::process::id();
    let Ok(dir) = fs::read_dir(root) else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let Some((pid, h)) = name
                .to_str()
                .and_then(|n| n.strip_prefix(kind))
                .and_then(|n| n.split_once('@'))
            else {
                return false;
            };
            let pid: Option<u32> = pid.parse().ok();
            h == host
                && pid.is_some_and(|p| p != mine && !Path::new(&format!("/proc/{p}")).exists())
        })
        .map(|e| e.path())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use gdn_core::coding::Coding;

    fn job(n: u64) -> OwnedJob {
        super::super::wanted::tests::job(n, Coding::Br)
    }

    fn wanted(n: Option<Next>) -> (WantKey, OwnedJob) {
        match n {
            Some(Next::Wanted(k, j)) => (k, j),
            _ => panic!("not a wanted entry"),
        }
    }

    #[test]
    fn the_set_is_written_down_and_read_back() {
        let d = tempfile::tempdir().unwrap();
        let file = own_file(d.path());
        let one = Backlog::new();
        one.started();
        one.ask(job(1), 1, 10);
        one.ask(job(2), 3, 20);
        let taken = wanted(one.next());
        assert_eq!(taken.1, job(2), "most asked first");
        one.save(&file, false).unwrap();
        assert!(orphans(d.path()).is_empty(), "a live process's file");
        let two = Backlog::new();
        two.started();
        assert_eq!(two.load(&file).unwrap(), 2, "the taken one too");
        assert!(!file.exists());
        assert_eq!(two.status(), (2, Some(10)));
        assert_eq!(wanted(two.next()).1, job(2));
        // Nothing wanted: the file goes.
        one.finished(Some((&taken.0, &taken.1)));
        let last = wanted(one.next());
        one.finished(Some((&last.0, &last.1)));
        one.save(&file, false).unwrap();
        assert!(!file.exists());
    }

    #[test]
    fn a_gone_process_file_is_an_orphan() {
        let d = tempfile::tempdir().unwrap();
        let gone = d.path().join(format!("wanted-{}@{}", u32::MAX, host()));
        fs::write(&gone, MAGIC).unwrap();
        fs::write(d.path().join("wanted-1@elsewhere"), MAGIC).unwrap();
        assert_eq!(orphans(d.path()), [gone]);
    }
}

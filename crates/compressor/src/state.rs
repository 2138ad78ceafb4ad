//! The compressor's shared state and the cache directory it keeps: the
//! index read back at start (stale leftovers of a killed run, copies
//! named the older ways, path-keyed histories and the records of this
//! host's earlier boots removed), the digests this host learned of file
//! versions, which jobs are pending, done or failed,
//! eviction after each new copy, and the one warning while the cache
//! cannot be written. Other compressors may write the same root at the
//! same time (a fleet sharing it): a copy one of them made is taken as
//! done, a temporary is removed only once stale, and a file gone or
//! appeared behind this one's back is no error.

use super::disk::allocated;
use super::index::{max_entries, CopyId, Index};
use super::records::Records;
use crate::host::Host;
use crate::key::{
    copy_name, fan_out, is_old_copy_name, parse_copy_name, parse_kept_name, Kind, NameBuf,
    SourceHash, Version, KEPT_DIR, RETIRED_SITE_DIR,
};
use crate::settings::{CompressorSettings, Log, Severity};
use gdn_core::dictionary::Hash;
use gdn_publish::atomic::TMP_MARK;
use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Where the filesystem refuses locks, how old a temporary must be before
/// a start removes it: another compressor sharing the root may be writing
/// it (brotli at quality 11 over `key::MAX_SIZE` takes minutes, not an
/// hour). Elsewhere its writer's lock tells, and a killed run's go at once.
pub(super) const STALE_TEMP: Duration = Duration::from_secs(3600);

/// Versions whose job failed for a reason that would recur (an unreadable
/// original, a corrupt sibling) are not retried until this many have
/// failed; then the record starts over.
const FAILED_MAX: usize = 4096;

/// Where the histories of deltas on demand were kept while they were
/// keyed by a file's path alone, whatever host shared the root: removed
/// at start.
const RETIRED_HISTORY_DIR: &str = "history";

/// A copy a job asks for, before the file is read: the file's version
/// on this host and the kind.
pub(super) type Task = (Version, Kind);

/// Everything the reader and the workers share, behind one lock.
pub(super) struct State {
    pub(super) index: Index,
    pending: HashSet<Task>,
    failed: HashSet<Task>,
    /// Versions whose deltas are being made or were made: a repeated job
    /// does not read and hash the file again.
    deltas: HashSet<Version>,
    /// The digests of the file versions this host read lately.
    sources: HashMap<Version, SourceHash>,
    /// This boot's table of digest records, once opened.
    records: Option<Records>,
    /// What that table takes on disk, within the limit.
    records_bytes: u64,
    /// The cache could not be written last time it was tried.
    failing: bool,
    /// Copies evicted since `holding` last said.
    evicted: u64,
    /// Touches read before the start's scan indexed the cache, applied
    /// after it (`None` once it did).
    early_touches: Option<Vec<CopyId>>,
    /// Copies made at the fast levels, and their originals' paths: made
    /// again at the best levels once served (`touch`).
    fast: HashMap<CopyId, PathBuf>,
    /// Copies of the original made, and the CPU they took (µs).
    made: u64,
    made_cpu_us: u64,
}

/// The copy of `key`'s path under `root`.
pub(super) fn copy_path(root: &Path, key: &CopyId) -> PathBuf {
    let mut name = NameBuf::new();
    root.join(copy_name(&key.0, key.1, &mut name))
}

/// Whether a copy the cache may keep is at `target`: a regular file of
/// the cache root's owner (the server's user) that no one else may write.
/// Anything else at a copy's name (a symlink, another user's file, one
/// others may write, as copies were when they took their source's mode)
/// is removed, so that it is made again: `false` then.
pub(super) fn copy_there(root: &Path, target: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(m) = fs::symlink_metadata(target) else {
        return false;
    };
    let owner = fs::metadata(root).map(|r| r.uid());
    if m.file_type().is_file() && owner.is_ok_and(|o| o == m.uid()) && m.mode() & 0o022 == 0 {
        return true;
    }
    // Where it cannot go, nothing is made over it either.
    fs::remove_file(target).is_err()
}

/// Creates the empty file that marks a copy not worth keeping: the
/// server user's alone (0600), as copies are.
pub(super) fn mark_not_worth(target: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(target)
        .map(drop)
}

/// The index key of the kept version `h` (its own source).
pub(super) fn kept_key(h: Hash) -> CopyId {
    (h, Kind::Kept(h))
}

/// A copy found at start, and when it was last used.
struct FoundCopy {
    key: CopyId,
    size: u64,
    used: SystemTime,
}

impl State {
    /// The state of the cache at `settings.root`: its copies indexed, the
    /// temporaries of a killed run removed, what exceeds the size limit
    /// evicted.
    #[cfg(test)]
    pub(super) fn start(settings: &CompressorSettings, log: Log<'_>) -> State {
        let state = std::sync::Mutex::new(State::empty(settings));
        let _ = State::start_into(&state, settings, log);
        state
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Scans the cache at `settings.root` into `state`, which the workers
    /// use meanwhile: the lock is held only to index what was found (as
    /// older than what they made since) and evict beyond the limits.
    /// Returns the fast copies served meanwhile, to make again.
    pub(super) fn start_into(
        state: &std::sync::Mutex<State>,
        settings: &CompressorSettings,
        log: Log<'_>,
    ) -> Vec<(CopyId, PathBuf)> {
        let lock = || {
            state
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        let mut found = Vec::new();
        let mut leftovers = 0;
        if let Err(e) = scan(&settings.root, &settings.host, &mut found, &mut leftovers) {
            lock().cache_failed(settings, &e, log);
        }
        found.sort_by_key(|f| f.used);
        let mut state = lock();
        for f in found {
            state.index.insert_found(f.key, f.size);
        }
        let remakes = state
            .early_touches
            .take()
            .unwrap_or_default()
            .iter()
            .filter_map(|key| state.touch(settings, key))
            .collect();
        if let Err(e) = state.records(settings) {
            state.cache_failed(settings, &e, log);
        }
        let evicted = state.evict(settings, log);
        state.index.shrink();
        log(
            Severity::Info,
            &format!(
                "cache {}: {} entries, {} bytes; {leftovers} leftover temporaries removed, {evicted} evicted",
                settings.root.display(),
                state.index.len(),
                state.index.total()
            ),
        );
        remakes
    }

    /// Nothing indexed, pending or failed.
    pub(super) fn empty(settings: &CompressorSettings) -> State {
        State {
            index: Index::with_max_entries(max_entries(settings.max_size)),
            pending: HashSet::new(),
            failed: HashSet::new(),
            deltas: HashSet::new(),
            sources: HashMap::new(),
            records: None,
            records_bytes: 0,
            failing: false,
            evicted: 0,
            early_touches: Some(Vec::new()),
            fast: HashMap::new(),
            made: 0,
            made_cpu_us: 0,
        }
    }

    /// Takes `task` on: false when it is pending, failed before, or done
    /// (this host knows the version's digest and a copy or stand-in is
    /// there, whichever compressor sharing the root made it: it is
    /// indexed here so this one's eviction sees it). A file at the copy's
    /// name that is not one a compressor made (`copy_there`: another
    /// user's, or one others could write) is removed and made anew, as
    /// one removed behind the compressor's back is.
    pub(super) fn claim(&mut self, settings: &CompressorSettings, task: Task) -> bool {
        if self.pending.contains(&task) || self.failed.contains(&task) {
            return false;
        }
        if let Some(source) = self.source_of(settings, &task.0) {
            let key = (source, task.1);
            let path = copy_path(&settings.root, &key);
            if copy_there(&settings.root, &path) {
                let meta = fs::symlink_metadata(&path).ok();
                if let Some(meta) = meta.filter(|m| m.is_file() && !self.index.contains(&key)) {
                    self.index.insert(key, allocated(&meta));
                }
                return false;
            }
            self.index.remove(&key);
        }
        self.pending.insert(task)
    }

    /// This boot's table of digest records, opened (or made) once.
    fn records(&mut self, settings: &CompressorSettings) -> io::Result<&mut Records> {
        if self.records.is_none() {
            let r = Records::open(settings)?;
            self.records_bytes = r.allocated();
            self.records = Some(r);
        }
        self.records
            .as_mut()
            .ok_or_else(|| io::Error::other("no digest table"))
    }

    /// The digest of the file version `v`, as this host recorded it. One
    /// learned here but gone from the table (its slot taken, or written
    /// to a table another compressor sharing the root replaced meanwhile)
    /// is recorded again: the children look for it there.
    fn source_of(&mut self, settings: &CompressorSettings, v: &Version) -> Option<SourceHash> {
        let recorded = self.records(settings).ok().and_then(|r| r.get(v));
        if let Some(s) = recorded {
            self.learned(*v, s);
            return Some(s);
        }
        let s = *self.sources.get(v)?;
        let _ = self.record(settings, *v, s);
        Some(s)
    }

    /// Records that the file version `v` has the digest `source`, where
    /// this host's requests look for it; the table's blocks count against
    /// the limit.
    pub(super) fn record(
        &mut self,
        settings: &CompressorSettings,
        v: Version,
        source: SourceHash,
    ) -> io::Result<()> {
        let records = self.records(settings)?;
        records.put(&v, &source)?;
        self.records_bytes = records.allocated();
        self.learned(v, source);
        Ok(())
    }

    /// The bytes copies may take: the limit less the digest table's.
    fn copies_limit(&self, settings: &CompressorSettings) -> u64 {
        settings.max_size.saturating_sub(self.records_bytes)
    }

    /// Remembers that the file version `v` has the digest `source`.
    pub(super) fn learned(&mut self, v: Version, source: SourceHash) {
        if self.sources.len() >= FAILED_MAX {
            self.sources.clear();
        }
        self.sources.insert(v, source);
    }

    /// Lets the deltas of every version whose digest is among `gone` be
    /// asked for again: one of them was removed.
    fn forget_deltas_of(&mut self, gone: &HashSet<SourceHash>) {
        let sources = &self.sources;
        self.deltas
            .retain(|v| !sources.get(v).is_some_and(|s| gone.contains(s)));
    }

    /// Takes on the deltas of `v`: false when they are being made, or
    /// were made and none of them was evicted since.
    pub(super) fn claim_deltas(&mut self, v: Version) -> bool {
        if self.deltas.len() >= FAILED_MAX {
            self.deltas.clear();
        }
        self.deltas.insert(v)
    }

    /// Forgets the kept version `h` and the deltas against it, files and
    /// all: a dictionary no browser may hold any more.
    pub(super) fn forget_kept(&mut self, settings: &CompressorSettings, h: Hash, log: Log<'_>) {
        let mut gone = self.index.deltas_against(&[h]);
        gone.push(kept_key(h));
        let sources = gone.iter().map(|k| k.0).collect();
        self.forget_deltas_of(&sources);
        for key in &gone {
            self.index.remove(key);
            let path = copy_path(&settings.root, key);
            if let Err(e) = fs::remove_file(&path) {
                if e.kind() != io::ErrorKind::NotFound {
                    self.cache_failed(settings, &e, log);
                }
            }
        }
    }

    /// `task` is over, whatever became of it.
    pub(super) fn release(&mut self, task: &Task) {
        self.pending.remove(task);
    }

    /// `task` failed in a way a retry would repeat.
    pub(super) fn failed(&mut self, task: Task) {
        if self.failed.len() >= FAILED_MAX {
            self.failed.clear();
        }
        self.failed.insert(task);
    }

    /// A copy (or stand-in) of `size` bytes was made at `key`'s name:
    /// indexed as the most recently used, its atime set to now so a later
    /// start sees it so, and older ones evicted until the cache, the new
    /// copy included, fits the limit. A copy larger than the whole limit
    /// is replaced by a stand-in (so it is not made again); false then.
    pub(super) fn made(
        &mut self,
        settings: &CompressorSettings,
        key: CopyId,
        size: u64,
        log: Log<'_>,
    ) -> bool {
        self.cache_ok(log);
        let path = copy_path(&settings.root, &key);
        let kept = size <= self.copies_limit(settings);
        if !kept {
            log(
                Severity::Info,
                &format!(
                    "{}: {size} bytes, larger than the cache's {} byte limit: not kept",
                    path.display(),
                    settings.max_size
                ),
            );
            // Removed first: a child serving the copy keeps its own inode.
            let marked = fs::remove_file(&path).and_then(|()| mark_not_worth(&path));
            if let Err(e) = marked {
                self.cache_failed(settings, &e, log);
                return false;
            }
        }
        let now = fs::FileTimes::new().set_accessed(SystemTime::now());
        let opened = fs::File::open(&path);
        let _ = opened.as_ref().map(|f| f.set_times(now));
        // What the copy takes on disk, its blocks; its length where the
        // filesystem cannot say yet.
        let blocks = opened.and_then(|f| f.metadata()).map(|m| allocated(&m));
        let size = blocks.ok().filter(|&b| b > 0).unwrap_or(size);
        self.index.insert(key, if kept { size } else { 0 });
        self.evict(settings, log);
        kept
    }

    /// `made`, for a copy of the original that took `cpu_us` of CPU.
    pub(super) fn made_with_cpu(
        &mut self,
        settings: &CompressorSettings,
        key: CopyId,
        size: u64,
        cpu_us: u64,
        log: Log<'_>,
    ) -> bool {
        self.made += 1;
        self.made_cpu_us += cpu_us;
        self.made(settings, key, size, log)
    }

    /// The copy `key` of the original at `path` was made at the fast
    /// levels (bounded: one not remembered stays as it is).
    pub(super) fn made_fast(&mut self, key: CopyId, path: &Path) {
        if self.fast.len() < self.index.max_entries() {
            self.fast.insert(key, path.to_path_buf());
        }
    }

    /// The copies made at the fast levels and not served since, with
    /// their originals' paths.
    pub(super) fn fast_copies(&self) -> Vec<(CopyId, PathBuf)> {
        self.fast.iter().map(|(k, p)| (*k, p.clone())).collect()
    }

    /// Microseconds of CPU a copy of an original took, on average.
    pub(super) fn cpu_per_copy(&self) -> Option<u64> {
        (self.made > 0).then(|| self.made_cpu_us / self.made)
    }

    /// A copy was served: the most recently used now, on disk too.
    /// A delta served keeps the version it was made against as recent:
    /// evicting that version would take the delta with it.
    /// A copy made at the fast levels and served is returned with its
    /// original's path, to be made again at the best levels.
    pub(super) fn touch(
        &mut self,
        settings: &CompressorSettings,
        key: &CopyId,
    ) -> Option<(CopyId, PathBuf)> {
        if let Some(early) = &mut self.early_touches {
            // Bounded: a touch lost costs an order of eviction, no more.
            if early.len() < FAILED_MAX {
                early.push(*key);
            }
            return None;
        }
        if let Kind::Delta(_, h) = key.1 {
            let _ = self.touch(settings, &kept_key(h));
        }
        if self.index.touch(key) {
            // The children send a copy's touch at most once a second each.
            let now = fs::FileTimes::new().set_accessed(SystemTime::now());
            let path = copy_path(&settings.root, key);
            let _ = fs::File::open(path).and_then(|f| f.set_times(now));
        }
        self.fast.remove_entry(key)
    }

    /// What the cache holds (entries, bytes) and the copies evicted
    /// since the last call.
    pub(super) fn holding(&mut self) -> (u64, u64, u64) {
        let evicted = std::mem::take(&mut self.evicted);
        (self.index.len() as u64, self.index.total(), evicted)
    }

    /// Evicts beyond the limits, least recently used first; how many went.
    /// A kept version takes the deltas made against it along: no delta
    /// is offered against a version the cache no longer holds.
    pub(super) fn evict(&mut self, settings: &CompressorSettings, log: Log<'_>) -> usize {
        let mut gone = self.index.evict(self.copies_limit(settings));
        let kept: Vec<_> = gone
            .iter()
            .filter_map(|k| match k.1 {
                Kind::Kept(h) => Some(h),
                _ => None,
            })
            .collect();
        if !kept.is_empty() {
            let against = self.index.deltas_against(&kept);
            for key in &against {
                self.index.remove(key);
            }
            gone.extend(against);
        }
        self.evicted += gone.len() as u64;
        let sources = gone
            .iter()
            .filter(|k| matches!(k.1, Kind::Delta(..)))
            .map(|k| k.0)
            .collect();
        self.forget_deltas_of(&sources);
        for key in &gone {
            self.fast.remove(key);
        }
        for key in &gone {
            let path = copy_path(&settings.root, key);
            match fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    self.cache_failed(settings, &e, log);
                }
                _ => log(Severity::Debug, &format!("evicted {}", path.display())),
            }
        }
        gone.len()
    }

    /// The cache could not be written: one warning until it can again.
    pub(super) fn cache_failed(
        &mut self,
        settings: &CompressorSettings,
        e: &io::Error,
        log: Log<'_>,
    ) {
        let root = settings.root.display();
        // A root deleted under a running server: making a fan-out
        // directory then fails in the root's parent (often "Permission
        // denied"), which is not what is wrong.
        let gone = fs::symlink_metadata(&settings.root)
            .is_err_and(|e| e.kind() == io::ErrorKind::NotFound);
        let e = &match gone {
            true => io::Error::new(
                io::ErrorKind::NotFound,
                "the cache root is missing (deleted?)",
            ),
            false => io::Error::new(e.kind(), e.to_string()),
        };
        if self.failing {
            log(
                Severity::Debug,
                &format!("cache {root} still not writable: {e}"),
            );
        } else {
            self.failing = true;
            log(
                Severity::Warn,
                &format!("cannot write the cache {root}: {e}; requests are answered without it until it can be written"),
            );
        }
    }

    /// The cache was written.
    fn cache_ok(&mut self, log: Log<'_>) {
        if self.failing {
            self.failing = false;
            log(Severity::Notice, "the cache can be written again");
        }
    }
}

/// Indexes the fan-out directories under `root` into `found`, removing
/// stale leftover temporaries (counted in `leftovers`) in them and in
/// `root`, and copies named the older way. Anything else (files an admin
/// put there, another compressor's temporaries being written) is left
/// alone and not counted.
fn scan(
    root: &Path,
    host: &Host,
    found: &mut Vec<FoundCopy>,
    leftovers: &mut usize,
) -> io::Result<()> {
    retire_earlier_boots(root, host);
    for entry in fs::read_dir(root)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if is_leftover(name) {
            *leftovers += remove_stale(&entry);
            continue;
        }
        let retired = name == RETIRED_SITE_DIR || name == RETIRED_HISTORY_DIR;
        if retired && entry.file_type()?.is_dir() {
            fs::remove_dir_all(entry.path())?;
            continue;
        }
        if name == KEPT_DIR && entry.file_type()?.is_dir() {
            scan_kept(&entry.path(), found, leftovers)?;
            continue;
        }
        let Some(dir) = parse_fan_out(name) else {
            continue;
        };
        if !entry.file_type()?.is_dir() {
            continue;
        }
        for copy in fs::read_dir(entry.path())? {
            let copy = copy?;
            let name = copy.file_name();
            let Some(name) = name.to_str() else { continue };
            if is_leftover(name) {
                *leftovers += remove_stale(&copy);
            } else if let Some(f) = indexed(name, dir, &copy) {
                found.push(f);
            } else if is_old_copy_name(name) {
                // Keyed by place, or by device and inode: never served
                // any more.
                let _ = fs::remove_file(copy.path());
            }
        }
    }
    Ok(())
}

/// Removes the records of this host's earlier boots (their device and
/// inode numbers may name other files now), and this boot's records kept
/// a file each, as they were before the table (`digests`).
fn retire_earlier_boots(root: &Path, host: &Host) {
    let Ok(boots) = fs::read_dir(root.join(host.machine_dir())) else {
        return;
    };
    for boot in boots.flatten() {
        if !boot.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if boot.file_name() != host.boot.as_str() {
            let _ = fs::remove_dir_all(boot.path());
            continue;
        }
        for old in fs::read_dir(boot.path()).into_iter().flatten().flatten() {
            if old.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = fs::remove_dir_all(old.path());
            }
        }
    }
}

/// Indexes the kept versions under `kept/<2 hex>/`, removing leftover
/// temporaries.
fn scan_kept(dir: &Path, found: &mut Vec<FoundCopy>, leftovers: &mut usize) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let fan = entry.file_name();
        let Some(fan) = fan.to_str().and_then(parse_fan_out) else {
            continue;
        };
        if !entry.file_type()?.is_dir() {
            continue;
        }
        for kept in fs::read_dir(entry.path())? {
            let kept = kept?;
            let name = kept.file_name();
            let Some(name) = name.to_str() else { continue };
            if is_leftover(name) {
                *leftovers += remove_stale(&kept);
                continue;
            }
            let Some(h) = parse_kept_name(name).filter(|h| h[0] == fan) else {
                continue;
            };
            if let Some(f) = found_at(&kept, kept_key(h)) {
                found.push(f);
            }
        }
    }
    Ok(())
}

/// A fan-out directory's number: two lower-case hex digits.
fn parse_fan_out(name: &str) -> Option<u8> {
    let canonical = name.len() == 2 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    canonical.then(|| u8::from_str_radix(name, 16).ok())?
}

/// The entry for the copy `name` in fan-out directory `dir`, if it is one
/// and in its right place; last used at its atime or mtime, the later.
fn indexed(name: &str, dir: u8, entry: &fs::DirEntry) -> Option<FoundCopy> {
    let (source, kind) = parse_copy_name(name)?;
    if fan_out(&source) != dir {
        return None;
    }
    found_at(entry, (source, kind))
}

/// The entry for the regular file `entry` at `key`; last used at its
/// atime or mtime, the later.
fn found_at(entry: &fs::DirEntry, key: CopyId) -> Option<FoundCopy> {
    let meta = entry.metadata().ok().filter(|m| m.is_file())?;
    let at = |t: io::Result<SystemTime>| t.unwrap_or(SystemTime::UNIX_EPOCH);
    Some(FoundCopy {
        key,
        size: allocated(&meta),
        used: at(meta.accessed()).max(at(meta.modified())),
    })
}

/// Removes the temporary (or claim) `entry` if no live process holds it
/// (`claim::orphaned`: a killed run's, gone at once), or, where the
/// filesystem refuses locks, once it was last written `STALE_TEMP` ago;
/// 1 if it went.
fn remove_stale(entry: &fs::DirEntry) -> usize {
    let path = entry.path();
    usize::from(super::claim::orphaned(&path, STALE_TEMP) && fs::remove_file(&path).is_ok())
}

/// A temporary the lifecycle or the decoder left: `.<copy name>.tmp<hex>`
/// (the copy named as now, or the older way).
fn is_leftover(name: &str) -> bool {
    let Some((copy, tail)) = name.strip_prefix('.').and_then(|n| n.rsplit_once(TMP_MARK)) else {
        return false;
    };
    !tail.is_empty()
        && tail.bytes().all(|b| b.is_ascii_hexdigit())
        && (parse_copy_name(copy).is_some()
            || parse_kept_name(copy).is_some()
            || is_old_copy_name(copy))
}

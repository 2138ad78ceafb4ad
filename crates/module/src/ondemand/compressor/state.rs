//! The compressor's shared state and the cache directory it keeps: the
//! index read back at start (stale leftovers of a killed run and copies
//! named the older way removed), which jobs are pending, done or failed,
//! eviction after each new copy, and the one warning while the cache
//! cannot be written. Other compressors may write the same root at the
//! same time (a fleet sharing it): a copy one of them made is taken as
//! done, a temporary is removed only once stale, and a file gone or
//! appeared behind this one's back is no error.

use super::index::{Index, Key};
use super::{Level, Log, Settings};
use crate::ondemand::key::{
    copy_name, fan_out, is_old_copy_name, parse_copy_name, parse_kept_name, Kind, NameBuf, Version,
    KEPT_DIR, RETIRED_SITE_DIR,
};
use gdn_core::dictionary::Hash;
use gdn_core::publish::atomic::TMP_MARK;
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

/// Everything the reader and the workers share, behind one lock.
pub(super) struct State {
    pub(super) index: Index,
    pending: HashSet<Key>,
    failed: HashSet<Key>,
    /// Versions whose deltas are being made or were made: a repeated job
    /// does not read and hash the file again.
    deltas: HashSet<Version>,
    /// Site dictionaries trained or being trained, by the site's
    /// directory: the pages listed then.
    site_tries: HashMap<PathBuf, usize>,
    /// The cache could not be written last time it was tried.
    failing: bool,
    /// Copies evicted since `holding` last said.
    evicted: u64,
}

/// The copy of `key`'s path under `root`.
pub(super) fn copy_path(root: &Path, key: &Key) -> PathBuf {
    let mut name = NameBuf::new();
    root.join(copy_name(&key.0, key.1, &mut name))
}

/// A copy found at start, and when it was last used.
struct Found {
    key: Key,
    size: u64,
    used: SystemTime,
}

impl State {
    /// The state of the cache at `settings.root`: its copies indexed, the
    /// temporaries of a killed run removed, what exceeds the size limit
    /// evicted.
    pub(super) fn start(settings: &Settings, log: Log<'_>) -> State {
        let mut state = State::empty();
        let mut found = Vec::new();
        let mut leftovers = 0;
        if let Err(e) = scan(&settings.root, &mut found, &mut leftovers) {
            state.cache_failed(settings, &e, log);
        }
        found.sort_by_key(|f| f.used);
        for f in found {
            state.index.insert(f.key, f.size);
        }
        let evicted = state.evict(settings, log);
        log(
            Level::Info,
            &format!(
                "cache {}: {} entries, {} bytes; {leftovers} leftover temporaries removed, {evicted} evicted",
                settings.root.display(),
                state.index.len(),
                state.index.total()
            ),
        );
        state
    }

    /// Nothing indexed, pending or failed.
    fn empty() -> State {
        State {
            index: Index::default(),
            pending: HashSet::new(),
            failed: HashSet::new(),
            deltas: HashSet::new(),
            site_tries: HashMap::new(),
            failing: false,
            evicted: 0,
        }
    }

    /// Takes `key` on: false when it is pending, failed before, or done
    /// (a copy or marker is there, whoever made it: another compressor
    /// sharing the root counts it too, and it is indexed here so this
    /// one's eviction sees it).
    pub(super) fn claim(&mut self, settings: &Settings, key: Key) -> bool {
        if self.pending.contains(&key) || self.failed.contains(&key) {
            return false;
        }
        match fs::symlink_metadata(copy_path(&settings.root, &key)) {
            Ok(meta) => {
                if !self.index.contains(&key) && meta.is_file() {
                    self.index.insert(key, meta.len());
                }
                return false;
            }
            // Removed behind the compressor's back: made again.
            Err(_) => {
                self.index.remove(&key);
            }
        }
        self.pending.insert(key)
    }

    /// Takes on the deltas of `v`: false when they are being made, or
    /// were made and none of them was evicted since.
    pub(super) fn claim_deltas(&mut self, v: Version) -> bool {
        if self.deltas.len() >= FAILED_MAX {
            self.deltas.clear();
        }
        self.deltas.insert(v)
    }

    /// The deltas of `v` may be asked for again (one was evicted, or its
    /// job was dropped).
    pub(super) fn forget_deltas(&mut self, v: &Version) {
        self.deltas.remove(v);
    }

    /// Takes on training the site at `dir` with `pages` listed: false
    /// when another worker trains it, or a training tried with half as
    /// many or more (a failed one is tried again once they doubled).
    pub(super) fn take_training(&mut self, dir: &Path, pages: usize) -> bool {
        let free = self.site_tries.get(dir).is_none_or(|&n| pages >= 2 * n);
        if free {
            self.site_tries.insert(dir.to_path_buf(), pages);
        }
        free
    }

    /// Forgets the kept version `h` and the deltas against it, files and
    /// all: a dictionary no browser may hold any more.
    pub(super) fn forget_kept(&mut self, settings: &Settings, h: Hash, log: Log<'_>) {
        let mut gone = self.index.deltas_against(&[h]);
        gone.push((Version::NONE, Kind::Kept(h)));
        for key in &gone {
            self.index.remove(key);
            self.deltas.remove(&key.0);
            let path = copy_path(&settings.root, key);
            if let Err(e) = fs::remove_file(&path) {
                if e.kind() != io::ErrorKind::NotFound {
                    self.cache_failed(settings, &e, log);
                }
            }
        }
    }

    /// `key`'s job is over, whatever became of it.
    pub(super) fn release(&mut self, key: &Key) {
        self.pending.remove(key);
    }

    /// `key`'s job failed in a way a retry would repeat.
    pub(super) fn failed(&mut self, key: Key) {
        if self.failed.len() >= FAILED_MAX {
            self.failed.clear();
        }
        self.failed.insert(key);
    }

    /// A copy (or marker) of `size` bytes was made at `key`'s name:
    /// indexed as the most recently used, its atime set to now so a later
    /// start sees it so, and older ones evicted until the cache, the new
    /// copy included, fits the limit. A copy larger than the whole limit
    /// is replaced by a marker (so it is not made again); false then.
    pub(super) fn made(&mut self, settings: &Settings, key: Key, size: u64, log: Log<'_>) -> bool {
        self.cache_ok(log);
        let path = copy_path(&settings.root, &key);
        let kept = size <= settings.max_size;
        if !kept {
            log(
                Level::Info,
                &format!(
                    "{}: {size} bytes, larger than the cache's {} byte limit: not kept",
                    path.display(),
                    settings.max_size
                ),
            );
            // Removed first: a child serving the copy keeps its own inode.
            let marked = fs::remove_file(&path).and_then(|()| fs::File::create(&path));
            if let Err(e) = marked {
                self.cache_failed(settings, &e, log);
                return false;
            }
        }
        let now = fs::FileTimes::new().set_accessed(SystemTime::now());
        let _ = fs::File::open(&path).and_then(|f| f.set_times(now));
        self.index.insert(key, if kept { size } else { 0 });
        self.evict(settings, log);
        kept
    }

    /// A copy was served: the most recently used now, on disk too.
    /// A delta served keeps the version it was made against as recent:
    /// evicting that version would take the delta with it.
    pub(super) fn touch(&mut self, settings: &Settings, key: &Key) {
        if let Kind::Delta(_, h) = key.1 {
            self.touch(settings, &(Version::NONE, Kind::Kept(h)));
        }
        if self.index.touch(key) {
            // The children send a copy's touch at most once a second each.
            let now = fs::FileTimes::new().set_accessed(SystemTime::now());
            let path = copy_path(&settings.root, key);
            let _ = fs::File::open(path).and_then(|f| f.set_times(now));
        }
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
    pub(super) fn evict(&mut self, settings: &Settings, log: Log<'_>) -> usize {
        let mut gone = self.index.evict(settings.max_size);
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
        for key in &gone {
            if let Kind::Delta(..) = key.1 {
                self.deltas.remove(&key.0);
            }
        }
        for key in &gone {
            let path = copy_path(&settings.root, key);
            match fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    self.cache_failed(settings, &e, log);
                }
                _ => log(Level::Debug, &format!("evicted {}", path.display())),
            }
        }
        gone.len()
    }

    /// The cache could not be written: one warning until it can again.
    pub(super) fn cache_failed(&mut self, settings: &Settings, e: &io::Error, log: Log<'_>) {
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
                Level::Debug,
                &format!("cache {root} still not writable: {e}"),
            );
        } else {
            self.failing = true;
            log(
                Level::Warn,
                &format!("cannot write the cache {root}: {e}; requests are answered without it until it can be written"),
            );
        }
    }

    /// The cache was written.
    fn cache_ok(&mut self, log: Log<'_>) {
        if self.failing {
            self.failing = false;
            log(Level::Notice, "the cache can be written again");
        }
    }
}

/// Indexes the fan-out directories under `root` into `found`, removing
/// stale leftover temporaries (counted in `leftovers`) in them and in
/// `root`, and copies named the older way. Anything else (files an admin
/// put there, another compressor's temporaries being written) is left
/// alone and not counted.
fn scan(root: &Path, found: &mut Vec<Found>, leftovers: &mut usize) -> io::Result<()> {
    for entry in fs::read_dir(root)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if is_leftover(name) {
            *leftovers += remove_stale(&entry);
            continue;
        }
        if name == RETIRED_SITE_DIR && entry.file_type()?.is_dir() {
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
                // Keyed by device and inode: never served any more.
                let _ = fs::remove_file(copy.path());
            }
        }
    }
    Ok(())
}

/// Indexes the kept versions under `kept/<2 hex>/`, removing leftover
/// temporaries.
fn scan_kept(dir: &Path, found: &mut Vec<Found>, leftovers: &mut usize) -> io::Result<()> {
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
            if let Some(f) = found_at(&kept, (Version::NONE, Kind::Kept(h))) {
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
fn indexed(name: &str, dir: u8, entry: &fs::DirEntry) -> Option<Found> {
    let (version, kind): (Version, Kind) = parse_copy_name(name)?;
    if fan_out(version.path) != dir {
        return None;
    }
    found_at(entry, (version, kind))
}

/// The entry for the regular file `entry` at `key`; last used at its
/// atime or mtime, the later.
fn found_at(entry: &fs::DirEntry, key: Key) -> Option<Found> {
    let meta = entry.metadata().ok().filter(|m| m.is_file())?;
    let at = |t: io::Result<SystemTime>| t.unwrap_or(SystemTime::UNIX_EPOCH);
    Some(Found {
        key,
        size: meta.len(),
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

//! Making one job's copies: each coding of an original through the
//! publish tool's own lifecycle (`publish::make_copy`), or a sibling's
//! decoded content, each only while its file keeps the version the
//! request saw, before and after the work.

use super::claim::Claim;
use super::index::Key;
use super::state::{copy_path, State};
use super::{Event, Level, Log, Settings, Tally};
use crate::metrics::tally::Job;
use crate::ondemand::job::{CodingSet, OwnedDeltas};
use crate::ondemand::key::{compressible, Kind, Version, MAX_SIZE};
use gdn_core::coding::Coding;
use gdn_core::decode::{self, DecodeError, Decoder};
use gdn_core::publish::atomic::TempFile;
use gdn_core::publish::{self, Outcome, PublishError};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// What a worker needs for any job.
pub(super) struct Ctx<'a> {
    pub(super) settings: &'a Settings,
    pub(super) state: &'a Mutex<State>,
    pub(super) log: Log<'a>,
    pub(super) tally: Tally<'a>,
}

/// Why a job made nothing.
pub(super) enum Problem {
    /// The cache cannot be written.
    Cache(io::Error),
    /// The file is gone or has another version now: nothing to do.
    Gone(String),
    /// Left alone by choice (too large decoded): not retried.
    Declined(String),
    /// Failed in a way a retry would repeat: not retried.
    Failed(String),
}

impl Ctx<'_> {
    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tells the counters `n` copies reached state `j`.
    pub(super) fn copies(&self, j: Job, n: usize) {
        if n > 0 {
            (self.tally)(Event::Copies(j, n as u64));
        }
    }

    /// Microseconds of CPU a copy has taken, on average so far.
    pub(super) fn cpu_per_copy(&self) -> Option<u64> {
        self.state().cpu_per_copy()
    }

    /// Tells the counters what the cache holds after a job.
    pub(super) fn holding(&self) {
        let (entries, bytes, evicted) = self.state().holding();
        (self.tally)(Event::Holding {
            entries,
            bytes,
            evicted,
        });
    }

    /// Tells `problem` and keeps the jobs of `keys` from being retried
    /// when a retry would do the same.
    pub(super) fn report(&self, keys: impl Iterator<Item = (Version, Kind)>, problem: Problem) {
        let (level, why) = match problem {
            Problem::Cache(e) => return self.state().cache_failed(self.settings, &e, self.log),
            Problem::Gone(why) => (Level::Debug, why),
            Problem::Declined(why) => (Level::Info, why),
            Problem::Failed(why) => (Level::Warn, why),
        };
        (self.log)(level, &why);
        if level != Level::Debug {
            let mut state = self.state();
            keys.for_each(|k| state.failed(k));
        }
    }

    /// Claims making the copy of `key` against the other compressors
    /// sharing the root (`claim`): `None` when another is making it, or
    /// it is there already, or its directory cannot be made.
    pub(super) fn claim_copy(&self, key: &Key) -> Option<Claim> {
        let target = copy_path(&self.settings.root, key);
        make_dir(&target).ok()?;
        let claim = Claim::take(&target).ok().flatten()?;
        fs::symlink_metadata(&target).is_err().then_some(claim)
    }

    /// Makes the deltas the job asks for, then the copies of `codings` of
    /// the original at `path`: a browser holding an earlier version gains
    /// most from a delta, so it comes first.
    pub(super) fn compress(
        &self,
        path: &Path,
        version: Version,
        codings: CodingSet,
        deltas: Option<&OwnedDeltas>,
    ) {
        if let Some(d) = deltas {
            if let Err(problem) = self.read_for_deltas(path, version, d) {
                self.report(std::iter::empty(), problem);
            }
        }
        let keys = move || codings.iter().map(move |c| (version, Kind::Coded(c)));
        let mut finished = 0;
        if let Err(problem) = self.compress_codings(path, version, codings, &mut finished) {
            self.copies(Job::Failed, codings.len() - finished);
            self.report(keys(), problem);
        }
        {
            let mut state = self.state();
            keys().for_each(|k| state.release(&k));
        }
        self.holding();
    }

    /// Reads the original at `path` while it has `version`, for its deltas.
    fn read_for_deltas(
        &self,
        path: &Path,
        version: Version,
        d: &OwnedDeltas,
    ) -> Result<(), Problem> {
        let pinned = pin(path, &version)?;
        let meta = pinned.meta.clone();
        if !compressible(path.as_os_str().as_bytes(), meta.len()) {
            return Ok(());
        }
        let content = read_pinned(path, &pinned)?;
        current(path, &version)?;
        if d.versions > 0 {
            self.deltas(path, &meta, version, &content, d)?;
        }
        if !d.site.is_empty() {
            self.site_page(path, &meta, version, &content, &d.site);
        }
        Ok(())
    }

    fn compress_codings(
        &self,
        path: &Path,
        version: Version,
        codings: CodingSet,
        finished: &mut usize,
    ) -> Result<(), Problem> {
        let pinned = pin(path, &version)?;
        if !compressible(path.as_os_str().as_bytes(), pinned.meta.len()) {
            return Err(Problem::Gone(format!(
                "{} is not compressed on demand",
                path.display()
            )));
        }
        for c in codings.iter() {
            let key = (version, Kind::Coded(c));
            let cpu = gdn_httpd::shm::thread_cpu_micros();
            let made = self.compress_one(path, &pinned, &version, c)?;
            *finished += 1;
            let Some(size) = made else {
                self.copies(Job::Merged, 1);
                continue;
            };
            let cpu = gdn_httpd::shm::thread_cpu_micros().saturating_sub(cpu);
            let mut state = self.state();
            let kept = state.made_with_cpu(self.settings, key, size, cpu, self.log);
            let done = size > 0 && kept;
            if done && self.settings.fast_levels.is_some() {
                state.made_fast(key, path);
            }
            drop(state);
            self.copies(if done { Job::Done } else { Job::NotWorth }, 1);
            (self.log)(
                Level::Debug,
                &format!("{}: {} copy of {size} bytes", path.display(), c.token()),
            );
        }
        Ok(())
    }

    /// Makes the `c` copy (or the marker that it does not pay); its size,
    /// or `None` when it was there already or another compressor sharing
    /// the root is making it (a later request finds it).
    fn compress_one(
        &self,
        path: &Path,
        pinned: &Pinned,
        version: &Version,
        c: Coding,
    ) -> Result<Option<u64>, Problem> {
        let s = self.settings;
        let target = copy_path(&s.root, &(*version, Kind::Coded(c)));
        if fs::symlink_metadata(&target).is_ok() {
            return Ok(None);
        }
        make_dir(&target)?;
        let Some(_claim) = Claim::take(&target).map_err(Problem::Cache)? else {
            return Ok(None);
        };
        if fs::symlink_metadata(&target).is_ok() {
            return Ok(None);
        }
        let (from, meta) = (&pinned.proc, &pinned.meta);
        let levels = s.fast_levels.as_ref().unwrap_or(&s.levels);
        let outcome = publish::make_copy(from, meta, c, levels, s.min_saving, &target);
        let size = match outcome {
            Outcome::Written(sizes) => sizes.size,
            Outcome::NotWorth { .. } => {
                File::create(&target).map_err(Problem::Cache)?;
                0
            }
            Outcome::Failed(e) => return Err(publish_problem(path, c, e)),
            other => {
                let why = format!("{}: {}: unexpected {other:?}", path.display(), c.token());
                return Err(Problem::Failed(why));
            }
        };
        // The lifecycle saw no change in size and mtime; a new inode or
        // ctime would still make the copy another version's.
        if let Err(p) = current(path, version) {
            let _ = fs::remove_file(&target);
            return Err(p);
        }
        Ok(Some(size))
    }

    /// Makes the copy `key` of the original at `path` again at the best
    /// levels, over the fast one served so far (a new file: its ETag
    /// changes with its bytes); left as it is when the original changed,
    /// the copy went, or another compressor is at it.
    pub(super) fn remake(&self, path: &Path, key: Key) {
        match self.remake_copy(path, &key) {
            Ok(Some(size)) => {
                self.state().made(self.settings, key, size, self.log);
                (self.log)(
                    Level::Debug,
                    &format!(
                        "{}: copy made again at the best level, {size} bytes",
                        path.display()
                    ),
                );
            }
            Ok(None) => {}
            Err(problem) => self.report(std::iter::empty(), problem),
        }
        self.holding();
    }

    fn remake_copy(&self, path: &Path, key: &Key) -> Result<Option<u64>, Problem> {
        let (version, Kind::Coded(c)) = *key else {
            return Ok(None);
        };
        let s = self.settings;
        let target = copy_path(&s.root, key);
        let pinned = pin(path, &version)?;
        if fs::symlink_metadata(&target).is_err() {
            return Ok(None);
        }
        let Some(_claim) = Claim::take(&target).map_err(Problem::Cache)? else {
            return Ok(None);
        };
        let (from, meta) = (&pinned.proc, &pinned.meta);
        let size = match publish::make_copy(from, meta, c, &s.levels, s.min_saving, &target) {
            Outcome::Written(sizes) => sizes.size,
            Outcome::Failed(e) => return Err(publish_problem(path, c, e)),
            _ => return Ok(None),
        };
        if let Err(p) = current(path, &version) {
            let _ = fs::remove_file(&target);
            return Err(p);
        }
        Ok(Some(size))
    }

    /// Keeps the decoded content of the `coding` sibling at `path`.
    pub(super) fn decode(&self, path: &Path, coding: Coding, version: Version) {
        let key = (version, Kind::Decoded);
        match self.decode_sibling(path, coding, &version) {
            Ok(Some(size)) => {
                let kept = self.state().made(self.settings, key, size, self.log);
                self.copies(if kept { Job::Done } else { Job::NotWorth }, 1);
            }
            Ok(None) => self.copies(Job::Merged, 1),
            Err(problem) => {
                self.copies(Job::Failed, 1);
                self.report(std::iter::once(key), problem);
            }
        }
        self.state().release(&key);
        self.holding();
    }

    fn decode_sibling(
        &self,
        path: &Path,
        coding: Coding,
        version: &Version,
    ) -> Result<Option<u64>, Problem> {
        let Pinned { file, meta, .. } = pin(path, version)?;
        let target = copy_path(&self.settings.root, &(*version, Kind::Decoded));
        if fs::symlink_metadata(&target).is_ok() {
            return Ok(None);
        }
        make_dir(&target)?;
        let mut tmp = TempFile::new(&target).map_err(Problem::Cache)?;
        let decoded = decode_into(coding, &file, meta.len(), &mut tmp);
        // A change explains a decoding error, and voids a good decode.
        current(path, version)?;
        let size = decoded.map_err(|e| match e {
            DecodeFailed::Sink(e) => Problem::Cache(e),
            DecodeFailed::TooLarge => Problem::Declined(format!(
                "{} decodes to over {} bytes: not kept",
                path.display(),
                MAX_SIZE
            )),
            DecodeFailed::Decode(e) => {
                Problem::Failed(format!("cannot decode {}: {e}", path.display()))
            }
        })?;
        tmp.commit(&target, &meta).map_err(Problem::Cache)?;
        Ok(Some(size))
    }
}

/// Why decoding into the cache stopped.
pub(super) enum DecodeFailed {
    Decode(DecodeError),
    Sink(io::Error),
    TooLarge,
}

/// Decodes the `coding` stream in `file` (`len` bytes) into `sink`, with
/// the memory bound the module's decompress path has; the decoded length.
pub(super) fn decode_into(
    coding: Coding,
    file: &File,
    len: u64,
    sink: &mut impl Write,
) -> Result<u64, DecodeFailed> {
    let facts = decode::inspect(coding, file, len).map_err(DecodeFailed::Decode)?;
    let mut decoder =
        Decoder::with_facts(coding, file, Some(&facts)).map_err(DecodeFailed::Decode)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = decoder.read(&mut buf).map_err(DecodeFailed::Decode)?;
        if n == 0 {
            return Ok(total);
        }
        total += n as u64;
        if total > MAX_SIZE {
            return Err(DecodeFailed::TooLarge);
        }
        sink.write_all(&buf[..n]).map_err(DecodeFailed::Sink)?;
    }
}

/// The file at `path` while it still has `version`.
/// A file opened as the version a request judged: the job's name is
/// opened (without blocking on a FIFO) and what was opened must have the
/// size and mtime Apache saw (the fields a copy's name carries; device,
/// inode and ctime differ between the servers sharing a cache), so a
/// name swapped for another file after Apache's checks is not read. Later
/// reads go through the descriptor, or through `proc`, its name in
/// `/proc/self/fd`, which reopens that same file whatever the name now
/// holds.
pub(super) struct Pinned {
    pub file: File,
    pub meta: fs::Metadata,
    pub proc: PathBuf,
}

pub(super) fn pin(path: &Path, version: &Version) -> Result<Pinned, Problem> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| read_problem(path, e))?;
    let meta = file.metadata().map_err(|e| read_problem(path, e))?;
    if !meta.is_file() || !version.matches(&meta) {
        return Err(Problem::Gone(format!(
            "{} is not the version queued any more",
            path.display()
        )));
    }
    let proc = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    Ok(Pinned { file, meta, proc })
}

/// The content of the pinned file, checked to be whole.
pub(super) fn read_pinned(path: &Path, p: &Pinned) -> Result<Vec<u8>, Problem> {
    let mut content = Vec::with_capacity(p.meta.len() as usize);
    (&p.file)
        .read_to_end(&mut content)
        .map_err(|e| read_problem(path, e))?;
    if content.len() as u64 != p.meta.len() {
        return Err(Problem::Gone(format!(
            "{} changed while read",
            path.display()
        )));
    }
    Ok(content)
}

pub(super) fn current(path: &Path, version: &Version) -> Result<fs::Metadata, Problem> {
    let meta = fs::metadata(path).map_err(|e| read_problem(path, e))?;
    if !meta.is_file() || !version.matches(&meta) {
        return Err(Problem::Gone(format!(
            "{} is not the version queued any more",
            path.display()
        )));
    }
    Ok(meta)
}

/// An original or sibling that cannot be read: gone, or failing.
fn read_problem(path: &Path, e: io::Error) -> Problem {
    let why = format!("cannot read {}: {e}", path.display());
    match e.kind() {
        io::ErrorKind::NotFound => Problem::Gone(why),
        _ => Problem::Failed(why),
    }
}

/// What the lifecycle's failure means here.
fn publish_problem(path: &Path, c: Coding, e: PublishError) -> Problem {
    match e {
        PublishError::Write(_, e) => Problem::Cache(e),
        PublishError::Stat(e) | PublishError::StatAgain(e) | PublishError::Read(e) => {
            read_problem(path, e)
        }
        PublishError::Changed => Problem::Gone(format!("{}: {e}", path.display())),
        e => Problem::Failed(format!("{}: {}: {e}", path.display(), c.token())),
    }
}

/// Creates the directories `target` goes in, if needed: 0755 at
/// most, whatever the umask, as the start-up check of the root wants.
pub(super) fn make_dir(target: &Path) -> Result<(), Problem> {
    dirs_for(target).map_err(Problem::Cache)
}

/// `make_dir`, for callers that keep the `io::Error`.
pub(super) fn dirs_for(target: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = target.parent().unwrap_or(Path::new("."));
    match fs::DirBuilder::new()
        .mode(0o755)
        .recursive(true)
        .create(dir)
    {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

/// Writes `bytes` at `target` through a temporary, its directories made
/// as `make_dir` makes them: the compressor's records.
pub(super) fn write_record(target: &Path, bytes: &[u8]) -> io::Result<()> {
    dirs_for(target)?;
    let mut tmp = TempFile::new(target)?;
    tmp.write_all(bytes)?;
    tmp.persist(target)
}

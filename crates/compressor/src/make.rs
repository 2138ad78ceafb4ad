//! Making one job's copies: each coding of an original with the publish
//! tool's encoders and rules (`gdn_publish::make_copy_of`), or a sibling's
//! decoded content. The file is read once, only while it keeps the
//! version the request saw (before and after the read); the copies are
//! made from the bytes read and named by their SHA-256, which is recorded
//! for this host as that version's digest.

use super::claim::Claim;
use super::disk::dirs_for;
use super::index::CopyId;
use super::os;
use super::state::{copy_path, copy_there, mark_not_worth, State, Task};
use crate::job::{CodingSet, OwnedDeltas};
use crate::key::{compressible, Kind, SourceHash, Version, MAX_SIZE};
use crate::settings::{CompressorSettings, Event, Log, Severity, Tally};
use crate::tally::CopyFate;
use gdn_core::coding::Coding;
use gdn_core::decode::{self, DecodeError, Decoder};
use gdn_core::dictionary;
use gdn_publish::atomic::TempFile;
use gdn_publish::{LifecycleOutcome, PublishError};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// What a worker needs for any job.
pub(super) struct Ctx<'a> {
    pub(super) settings: &'a CompressorSettings,
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
    pub(super) fn copies(&self, j: CopyFate, n: usize) {
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

    /// Tells `problem` and keeps the tasks `tasks` from being retried
    /// when a retry would do the same.
    pub(super) fn report(&self, tasks: impl Iterator<Item = Task>, problem: Problem) {
        let (level, why) = match problem {
            Problem::Cache(e) => return self.state().cache_failed(self.settings, &e, self.log),
            Problem::Gone(why) => (Severity::Debug, why),
            Problem::Declined(why) => (Severity::Info, why),
            Problem::Failed(why) => (Severity::Warn, why),
        };
        (self.log)(level, &why);
        if level != Severity::Debug {
            let mut state = self.state();
            tasks.for_each(|k| state.failed(k));
        }
    }

    /// Claims making the copy of `key` against the other compressors
    /// sharing the root (`claim`): `None` when another is making it, or
    /// it is there already, or its directory cannot be made.
    pub(super) fn claim_copy(&self, key: &CopyId) -> Option<Claim> {
        let target = copy_path(&self.settings.root, key);
        make_dir(&target).ok()?;
        let claim = Claim::take(&target).ok().flatten()?;
        (!copy_there(&self.settings.root, &target)).then_some(claim)
    }

    /// Reads the file at `path` while it has `version`, once: its bytes,
    /// what it was when read, and their SHA-256, recorded for this host
    /// (`learn`) once the file is seen unchanged after the read.
    pub(super) fn read_source(&self, path: &Path, version: Version) -> Result<Loaded, Problem> {
        let pinned = pin(path, &version)?;
        if pinned.meta.len() > MAX_SIZE {
            return Err(Problem::Declined(format!(
                "{} is over {MAX_SIZE} bytes: not read",
                path.display()
            )));
        }
        let content = read_pinned(path, &pinned)?;
        current(path, &version)?;
        let source = dictionary::hash(&content);
        self.learn(Version::of(&pinned.meta), source);
        Ok(Loaded {
            meta: pinned.meta,
            content,
            source,
        })
    }

    /// Records that the file version `v` has the digest `source`, where
    /// this host's requests look for it.
    fn learn(&self, v: Version, source: SourceHash) {
        let mut state = self.state();
        if let Err(e) = state.record(self.settings, v, source) {
            state.cache_failed(self.settings, &e, self.log);
        }
    }

    /// Makes the deltas the job asks for, then the copies of `codings` of
    /// the original at `path`, all from one read of it: a browser holding
    /// an earlier version gains most from a delta, so it comes first.
    pub(super) fn compress(
        &self,
        path: &Path,
        version: Version,
        codings: CodingSet,
        deltas: Option<&OwnedDeltas>,
    ) {
        let tasks = move || codings.iter().map(move |c| (version, Kind::Coded(c)));
        let made = self
            .read_source(path, version)
            .and_then(|read| self.compress_read(path, version, &read, codings, deltas));
        if let Err(problem) = made {
            self.copies(CopyFate::Failed, codings.len());
            self.report(tasks(), problem);
        }
        {
            let mut state = self.state();
            tasks().for_each(|k| state.release(&k));
        }
        self.holding();
    }

    /// `compress`, once the original is read.
    fn compress_read(
        &self,
        path: &Path,
        version: Version,
        read: &Loaded,
        codings: CodingSet,
        deltas: Option<&OwnedDeltas>,
    ) -> Result<(), Problem> {
        if !compressible(path.as_os_str().as_bytes(), read.meta.len()) {
            return Err(Problem::Gone(format!(
                "{} is not compressed on demand",
                path.display()
            )));
        }
        if let Some(d) = deltas {
            if d.versions > 0 {
                if let Err(problem) = self.deltas(path, version, read, d) {
                    self.report(std::iter::empty(), problem);
                }
            }
            if !d.site.is_empty() {
                self.site_page(path, &read.meta, version, &read.content, &d.site);
            }
        }
        for c in codings.iter() {
            let key = (read.source, Kind::Coded(c));
            let cpu = os::thread_cpu_micros();
            let Some(size) = self.compress_one(path, read, c)? else {
                self.copies(CopyFate::Merged, 1);
                continue;
            };
            let cpu = os::thread_cpu_micros().saturating_sub(cpu);
            let mut state = self.state();
            let kept = state.made_with_cpu(self.settings, key, size, cpu, self.log);
            let done = size > 0 && kept;
            if done && self.settings.fast_levels.is_some() {
                state.made_fast(key, path);
            }
            drop(state);
            self.copies(
                if done {
                    CopyFate::Done
                } else {
                    CopyFate::NotWorth
                },
                1,
            );
            (self.log)(
                Severity::Debug,
                &format!("{}: {} copy of {size} bytes", path.display(), c.token()),
            );
        }
        Ok(())
    }

    /// Makes the `c` copy of the bytes read (or the stand-in that it does
    /// not pay); its size, or `None` when it was there already or another
    /// compressor sharing the root is making it (a later request finds
    /// it).
    fn compress_one(&self, path: &Path, read: &Loaded, c: Coding) -> Result<Option<u64>, Problem> {
        let s = self.settings;
        let target = copy_path(&s.root, &(read.source, Kind::Coded(c)));
        if copy_there(&s.root, &target) {
            return Ok(None);
        }
        make_dir(&target)?;
        let Some(_claim) = Claim::take(&target).map_err(Problem::Cache)? else {
            return Ok(None);
        };
        if copy_there(&s.root, &target) {
            return Ok(None);
        }
        let levels = s.fast_levels.as_ref().unwrap_or(&s.levels);
        let outcome =
            gdn_publish::make_copy_of(&read.content, &read.meta, c, levels, s.min_saving, &target);
        match outcome {
            LifecycleOutcome::Written(sizes) => Ok(Some(sizes.size)),
            LifecycleOutcome::NotWorth { .. } => {
                mark_not_worth(&target).map_err(Problem::Cache)?;
                Ok(Some(0))
            }
            LifecycleOutcome::Failed(e) => Err(publish_problem(path, c, e)),
            other => {
                let why = format!("{}: {}: unexpected {other:?}", path.display(), c.token());
                Err(Problem::Failed(why))
            }
        }
    }

    /// Makes the copy `key` of the original at `path` again at the best
    /// levels, over the fast one served so far (a new file: its ETag
    /// changes with its bytes); left as it is when the original no longer
    /// has the copy's source bytes, the copy went, or another compressor
    /// is at it.
    pub(super) fn remake(&self, path: &Path, key: CopyId) {
        match self.remake_copy(path, &key) {
            Ok(Some(size)) => {
                self.state().made(self.settings, key, size, self.log);
                (self.log)(
                    Severity::Debug,
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

    fn remake_copy(&self, path: &Path, key: &CopyId) -> Result<Option<u64>, Problem> {
        let (source, Kind::Coded(c)) = *key else {
            return Ok(None);
        };
        let s = self.settings;
        let target = copy_path(&s.root, key);
        if fs::symlink_metadata(&target).is_err() {
            return Ok(None);
        }
        let meta = fs::symlink_metadata(path).map_err(|e| read_problem(path, e))?;
        let read = self.read_source(path, Version::of(&meta))?;
        if read.source != source {
            return Ok(None);
        }
        let Some(_claim) = Claim::take(&target).map_err(Problem::Cache)? else {
            return Ok(None);
        };
        let outcome = gdn_publish::make_copy_of(
            &read.content,
            &read.meta,
            c,
            &s.levels,
            s.min_saving,
            &target,
        );
        match outcome {
            LifecycleOutcome::Written(sizes) => Ok(Some(sizes.size)),
            LifecycleOutcome::Failed(e) => Err(publish_problem(path, c, e)),
            _ => Ok(None),
        }
    }

    /// Keeps the decoded content of the `coding` sibling at `path`, named
    /// by the digest of the sibling's own bytes and its coding.
    pub(super) fn decode(&self, path: &Path, coding: Coding, version: Version) {
        let task = (version, Kind::Decoded(coding));
        match self.decode_sibling(path, coding, version) {
            Ok(Some((key, size))) => {
                let kept = self.state().made(self.settings, key, size, self.log);
                self.copies(
                    if kept {
                        CopyFate::Done
                    } else {
                        CopyFate::NotWorth
                    },
                    1,
                );
            }
            Ok(None) => self.copies(CopyFate::Merged, 1),
            Err(problem) => {
                self.copies(CopyFate::Failed, 1);
                self.report(std::iter::once(task), problem);
            }
        }
        self.state().release(&task);
        self.holding();
    }

    fn decode_sibling(
        &self,
        path: &Path,
        coding: Coding,
        version: Version,
    ) -> Result<Option<(CopyId, u64)>, Problem> {
        let read = self.read_source(path, version)?;
        let key = (read.source, Kind::Decoded(coding));
        let target = copy_path(&self.settings.root, &key);
        if copy_there(&self.settings.root, &target) {
            return Ok(None);
        }
        make_dir(&target)?;
        let mut tmp = TempFile::new(&target).map_err(Problem::Cache)?;
        let size = decode_into(coding, &read.content, &mut tmp).map_err(|e| match e {
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
        tmp.commit_private(&target, &read.meta)
            .map_err(Problem::Cache)?;
        Ok(Some((key, size)))
    }
}

/// A file read whole as one version: what it was, its bytes and their
/// SHA-256.
pub(super) struct Loaded {
    pub meta: fs::Metadata,
    pub content: Vec<u8>,
    pub source: SourceHash,
}

/// Why decoding into the cache stopped.
pub(super) enum DecodeFailed {
    Decode(DecodeError),
    Sink(io::Error),
    TooLarge,
}

/// Decodes the `coding` stream `src`, with the memory bound the module's
/// decompress path has, into `sink`; the decoded length.
pub(super) fn decode_into(
    coding: Coding,
    src: &[u8],
    sink: &mut impl Write,
) -> Result<u64, DecodeFailed> {
    let facts = decode::inspect(coding, src, src.len() as u64).map_err(DecodeFailed::Decode)?;
    let mut decoder =
        Decoder::with_facts(coding, src, Some(&facts)).map_err(DecodeFailed::Decode)?;
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

/// A file opened as the version a request judged: the job's name is
/// opened (without blocking on a FIFO) and what was opened must have the
/// size, mtime, device, inode and ctime Apache saw (where known), so a
/// name swapped for another file after Apache's checks is not read.
/// Later reads go through the descriptor.
pub(super) struct Pinned {
    pub file: File,
    pub meta: fs::Metadata,
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
    Ok(Pinned { file, meta })
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

/// Writes `bytes` at `target` through a temporary, its directories made
/// as `make_dir` makes them: the compressor's records.
pub(super) fn write_record(target: &Path, bytes: &[u8]) -> io::Result<()> {
    dirs_for(target)?;
    let mut tmp = TempFile::new(target)?;
    tmp.write_all(bytes)?;
    tmp.persist(target)
}

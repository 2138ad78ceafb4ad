//! The compressor: the process that makes the cache's copies, started by
//! the module and fed jobs by Apache's children (see `job`). Pure Rust,
//! no Apache: it runs as Apache's `User` and logs through a callback.
//!
//! One thread reads jobs, drops those already pending or done (and those
//! that failed for good), and queues the rest, up to `QUEUE` of them (a
//! job that finds the queue full is dropped: a later request sends it
//! again). `Settings::workers` threads make the copies (`make`). The
//! cache's state (`state`, `index`) is shared behind one lock, held for
//! bookkeeping only, never while compressing.
//!
//! Several compressors (Apache instances on one host, or a fleet's
//! servers on a shared filesystem) may share a cache root, with no lock:
//! each writes a copy to a temporary of its own and renames it into
//! place, takes a copy another made as done, removes only stale
//! temporaries at start, and evicts by its own accounting, tolerating
//! files that another removed or made (`state`).

mod claim;
mod deltas;
mod index;
mod make;
mod site;
mod state;

use super::job::{OwnedJob, Reader};
use super::key::Kind;
use crate::metrics::tally::Job;
use make::Ctx;
use state::State;
use std::io::Read;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Mutex, PoisonError};
use std::thread::{self, Scope};

/// What the compressor runs with.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The cache root (exists; the process can write it).
    pub root: PathBuf,
    /// Total bytes of copies kept.
    pub max_size: u64,
    /// Compression threads.
    pub workers: usize,
    /// Encoder settings: the publish tool's defaults, so copies are what
    /// `gzip-disk-ng compress` writes.
    pub levels: gdn_core::publish::encode::Levels,
    /// Least saving, in percent, for a copy to be kept.
    pub min_saving: f64,
    /// Delta encoder settings: the publish tool's defaults.
    pub delta_levels: gdn_core::publish::delta_codec::DeltaLevels,
    /// The host this runs on: where it records file versions' digests.
    pub host: crate::ondemand::host::Host,
}

/// How important a log line is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Error,
    Warn,
    Notice,
    Info,
    Debug,
}

/// Where log lines go.
type Log<'a> = &'a (dyn Fn(Level, &str) + Sync);

/// What the compressor tells of its work, for the module's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// `n` copies asked for reached this state.
    Copies(crate::metrics::tally::Job, u64),
    /// After a job or at start: what the cache holds, and how many copies
    /// were evicted since the last such event.
    Holding {
        entries: u64,
        bytes: u64,
        evicted: u64,
    },
}

/// Where events go.
pub type Tally<'a> = &'a (dyn Fn(Event) + Sync);

/// Jobs waiting for a worker at most: enough for a burst of misses across
/// a site, small enough that a job is never stale for long.
pub const QUEUE: usize = 1024;

/// A job taken on, for a worker.
enum Work {
    Compress(OwnedJob),
    Decode(OwnedJob),
    Train(OwnedJob),
}

/// Runs until `jobs` reaches its end (the module closes the channel when
/// Apache stops or restarts) and the jobs already queued are done; the
/// module may end it sooner with a signal, and what a killed run leaves
/// is removed at a later start once stale.
pub fn run<R: Read>(settings: &Settings, jobs: R, log: Log<'_>, tally: Tally<'_>) {
    let state = Mutex::new(State::start(settings, log));
    let ctx = Ctx {
        settings,
        state: &state,
        log,
        tally,
    };
    ctx.holding();
    let (queue, waiting) = mpsc::sync_channel::<Work>(QUEUE);
    let waiting = Mutex::new(waiting);
    thread::scope(|scope| {
        if start_workers(scope, &ctx, &waiting) == 0 {
            return;
        }
        read_jobs(&ctx, jobs, &queue);
        drop(queue);
    });
}

/// Starts `Settings::workers` worker threads; how many started.
fn start_workers<'s>(
    scope: &'s Scope<'s, '_>,
    ctx: &'s Ctx<'_>,
    waiting: &'s Mutex<Receiver<Work>>,
) -> usize {
    let mut started = 0;
    for i in 0..ctx.settings.workers.max(1) {
        let spawned = thread::Builder::new()
            .name(format!("gdn-compress-{i}"))
            .spawn_scoped(scope, move || work(ctx, waiting));
        match spawned {
            Ok(_) => started += 1,
            Err(e) => (ctx.log)(Level::Error, &format!("cannot start a worker thread: {e}")),
        }
    }
    started
}

/// Reads jobs until the end of the stream, taking each on or dropping it.
fn read_jobs<R: Read>(ctx: &Ctx<'_>, jobs: R, queue: &SyncSender<Work>) {
    let mut reader = Reader::new(jobs);
    loop {
        match reader.next() {
            Ok(Some(job)) => take(ctx, job, queue),
            Ok(None) => return,
            Err(e) => {
                (ctx.log)(Level::Error, &format!("cannot read jobs: {e}"));
                return;
            }
        }
    }
}

/// Handles a touch at once; queues what is left of a compress or decode
/// job once pending and done copies are taken out.
fn take(ctx: &Ctx<'_>, job: OwnedJob, queue: &SyncSender<Work>) {
    let lock = || ctx.state.lock().unwrap_or_else(PoisonError::into_inner);
    let work = match job {
        OwnedJob::Touch { source, kind } => {
            lock().touch(ctx.settings, &(source, kind));
            return;
        }
        OwnedJob::Compress {
            path,
            version,
            codings,
            deltas,
        } => {
            let mut state = lock();
            let asked = codings.len();
            let codings = codings
                .iter()
                .filter(|&c| !state.claim(ctx.settings, (version, Kind::Coded(c))))
                .fold(codings, |set, c| set.without(c));
            merged(ctx, asked - codings.len());
            let deltas = deltas.filter(|_| state.claim_deltas(version));
            if codings.is_empty() && deltas.is_none() {
                return;
            }
            Work::Compress(OwnedJob::Compress {
                path,
                version,
                codings,
                deltas,
            })
        }
        OwnedJob::Decode {
            version, coding, ..
        } => {
            if !lock().claim(ctx.settings, (version, Kind::Decoded(coding))) {
                merged(ctx, 1);
                return;
            }
            Work::Decode(job)
        }
        OwnedJob::Train { .. } => Work::Train(job),
    };
    if let Err(TrySendError::Full(w) | TrySendError::Disconnected(w)) = queue.try_send(work) {
        (ctx.log)(Level::Debug, "queue full: job dropped");
        let mut state = lock();
        if let Work::Compress(OwnedJob::Compress {
            version,
            deltas: Some(_),
            ..
        }) = &w
        {
            state.forget_deltas(version);
        }
        let keys = keys(&w);
        for key in &keys {
            state.release(key);
        }
        (ctx.tally)(Event::Copies(Job::Dropped, keys.len() as u64));
    }
}

/// `n` copies asked for are pending, made or failed already.
fn merged(ctx: &Ctx<'_>, n: usize) {
    if n > 0 {
        (ctx.tally)(Event::Copies(Job::Merged, n as u64));
    }
}

/// The copies a job makes.
fn keys(w: &Work) -> Vec<state::Task> {
    match w {
        Work::Compress(OwnedJob::Compress {
            version, codings, ..
        }) => codings.iter().map(|c| (*version, Kind::Coded(c))).collect(),
        Work::Decode(OwnedJob::Decode {
            version, coding, ..
        }) => vec![(*version, Kind::Decoded(*coding))],
        _ => Vec::new(),
    }
}

/// A worker: jobs from the queue until it is closed and empty.
fn work(ctx: &Ctx<'_>, waiting: &Mutex<Receiver<Work>>) {
    loop {
        let next = waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .recv();
        match next {
            Ok(Work::Compress(OwnedJob::Compress {
                path,
                version,
                codings,
                deltas,
            })) => ctx.compress(&path, version, codings, deltas.as_ref()),
            Ok(Work::Decode(OwnedJob::Decode {
                path,
                coding,
                version,
            })) => ctx.decode(&path, coding, version),
            Ok(Work::Train(OwnedJob::Train {
                root,
                site,
                digest,
                bits,
                at,
            })) => ctx.train_site(&root, &site, &digest, &bits, at),
            Ok(_) => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests;

//! The compressor: the process that makes the cache's copies, started by
//! the module and fed jobs by Apache's children (see `job`). Pure Rust,
//! no Apache: it runs as Apache's `User` and logs through a callback.
//!
//! One thread reads jobs from the channel, at the server's CPU priority
//! and waiting on nothing else (a child's job the channel has no room for
//! is dropped), and another takes them into the wanted set (`wanted`,
//! `backlog`): the copies asked for, bounded, most asked first, kept on
//! disk across restarts; a full set drops its coldest entry.
//! `CompressorSettings::workers` threads take the most wanted entry, drop
//! what is already pending or done (or failed for good), and make the rest
//! (`make`). The cache is scanned and evicted at start while jobs are read
//! (the workers begin once it is indexed, so eviction sees every copy;
//! `state`). The cache's state (`state`, `index`) is shared behind one
//! lock, held for bookkeeping only, never while compressing.
//!
//! Several compressors (Apache instances on one host, or a fleet's
//! servers on a shared filesystem) may share a cache root, with no lock:
//! each writes a copy to a temporary of its own and renames it into
//! place, takes a copy another made as done, removes only stale
//! temporaries at start, and evicts by its own accounting, tolerating
//! files that another removed or made (`state`).
//!
//! The crate also holds what the module and the compressor share, so the
//! module depends on this crate and never the other way: `job` (the jobs
//! children send and their wire format), `key` (what names a copy, its
//! digest records, and which files are compressed on demand), `host`
//! (which host and boot this is), `pages` (the pages a site dictionary
//! may learn) and `tally` (what became of a copy asked for, which the
//! module counts from `Event`s). `settings` is what the module starts it
//! with and hears from it.

#![deny(unsafe_code, unsafe_op_in_unsafe_fn)]

pub mod digests;
pub mod host;
pub mod job;
pub mod key;
pub mod pages;
pub mod settings;
pub mod tally;

mod backlog;
mod claim;
mod deltas;
mod disk;
mod index;
mod make;
mod os;
mod records;
mod site;
mod state;
mod upgrades;
mod wanted;

use crate::job::{OwnedJob, Reader};
use crate::key::Kind;
use crate::settings::{CompressorSettings, Event, Log, Severity, Stop, Tally};
use crate::tally::CopyFate;
use backlog::Backlog;
use make::Ctx;
use state::State;
use std::io::Read;
use std::path::Path;
use std::sync::{mpsc, Mutex, PoisonError};
use std::thread::{self, Scope};
use std::time::{Duration, Instant};

/// How often the keeper writes the wanted set down while it changes.
const SAVE_EVERY: Duration = Duration::from_secs(5);

/// How long a stop waits for the copies being made.
const STOP_WAIT: Duration = Duration::from_millis(1500);

/// Runs until `jobs` reaches its end and what is wanted is made, or
/// until `stop` is asked: then the wanted set is written down (the next
/// compressor makes it) and the process ends. Jobs are taken from the
/// first moment: the cache is scanned (and evicted) beside them.
pub fn run<R: Read + Send>(
    settings: &CompressorSettings,
    jobs: R,
    log: Log<'_>,
    tally: Tally<'_>,
    stop: &Stop,
) {
    let state = Mutex::new(State::empty(settings));
    let backlog = Backlog::new();
    let ctx = Ctx {
        settings,
        state: &state,
        log,
        tally,
    };
    let own = backlog::own_file(&settings.root);
    let ended = Mutex::new(false);
    thread::scope(|scope| {
        if start_workers(scope, &ctx, &backlog) == 0 {
            return;
        }
        scope.spawn(|| {
            lower_priority(&ctx);
            // The fast copies of a compressor gone first: a copy served
            // while the cache is scanned is then made again.
            take_over_upgrades(&ctx, &backlog);
            for (key, path) in State::start_into(&state, settings, log) {
                backlog.remake(key, path);
            }
            backlog.started();
            ctx.holding();
        });
        start_reader(scope, &ctx, jobs, &backlog, &ended);
        keep(&ctx, &backlog, &own, stop, &ended);
    });
    save(&ctx, &backlog, &own, true);
}

/// The keeper, until the stream ended and nothing is wanted: reads back
/// the wanted sets of compressors gone, writes its own down every
/// `SAVE_EVERY` while it changes, tells the backlog's figures; at a stop,
/// writes the set down and ends the process.
fn keep(ctx: &Ctx<'_>, backlog: &Backlog, own: &Path, stop: &Stop, ended: &Mutex<bool>) {
    let mut saved = Instant::now();
    let mut told = false;
    loop {
        // Before the scan ends, the start takes them over itself.
        if backlog.has_started() {
            take_over_upgrades(ctx, backlog);
        }
        for orphan in backlog::orphans(&ctx.settings.root) {
            match backlog.load(&orphan) {
                Ok(n) => (ctx.log)(
                    Severity::Info,
                    &format!(
                        "{n} copies wanted before a restart taken over from {}",
                        orphan.display()
                    ),
                ),
                Err(e) => (ctx.log)(Severity::Debug, &format!("{}: {e}", orphan.display())),
            }
        }
        told |= backlog_report(ctx, backlog, told);
        if saved.elapsed() >= SAVE_EVERY {
            save(ctx, backlog, own, false);
            saved = Instant::now();
        }
        if stop.wait(Duration::from_millis(500)) {
            backlog.stop(STOP_WAIT);
            save(ctx, backlog, own, true);
            std::process::exit(0);
        }
        let done = *ended.lock().unwrap_or_else(PoisonError::into_inner);
        if done && backlog.idle() {
            return;
        }
    }
}

/// Writes the wanted set down (`always`: even unchanged); with
/// `always` (a stop, or the end), the copies made at the fast levels
/// too (`upgrades`).
fn save(ctx: &Ctx<'_>, backlog: &Backlog, own: &Path, always: bool) {
    let mut saved = backlog.save(own, always);
    if always && saved.is_ok() {
        let mut ups: Vec<upgrades::Upgrade> = backlog
            .remakes()
            .into_iter()
            .map(|(k, p)| (k, p, upgrades::Fast::Served))
            .collect();
        let fast = ctx.state().fast_copies();
        ups.extend(fast.into_iter().map(|(k, p)| (k, p, upgrades::Fast::Made)));
        let file = backlog::own(&ctx.settings.root, backlog::FAST);
        saved = upgrades::save(&file, &ups);
    }
    if let Err(e) = saved {
        ctx.state().cache_failed(ctx.settings, &e, ctx.log);
    }
}

/// Takes over the copies made at the fast levels by compressors of this
/// host that are gone: those served are made again when nothing else is
/// wanted, the others once served.
fn take_over_upgrades(ctx: &Ctx<'_>, backlog: &Backlog) {
    for orphan in backlog::orphans_of(&ctx.settings.root, backlog::FAST) {
        let ups = match upgrades::load(&orphan) {
            Ok(ups) => ups,
            Err(e) => {
                (ctx.log)(Severity::Debug, &format!("{}: {e}", orphan.display()));
                continue;
            }
        };
        let n = ups.len();
        for (key, path, fast) in ups {
            match fast {
                upgrades::Fast::Served => backlog.remake(key, path),
                upgrades::Fast::Made => ctx.state().made_fast(key, &path),
            }
        }
        (ctx.log)(
            Severity::Info,
            &format!(
                "{n} copies made at the fast levels before a restart taken over from {}",
                orphan.display()
            ),
        );
    }
}

/// Tells the counters how many copies are wanted and since when; says
/// once at `info` (unless `told`) when the backlog outgrows what the
/// workers make in an hour at the CPU a copy has taken so far. Whether
/// it said so.
fn backlog_report(ctx: &Ctx<'_>, backlog: &Backlog, told: bool) -> bool {
    let (wanted, oldest) = backlog.status();
    (ctx.tally)(Event::Backlog {
        wanted: wanted as u64,
        oldest_since: oldest.unwrap_or(0),
    });
    let per_copy = ctx.cpu_per_copy();
    let workers = ctx.settings.workers.max(1) as u64;
    let per_hour = per_copy.map(|us| 3_600_000_000 * workers / us.max(1));
    match per_hour {
        Some(n) if !told && wanted as u64 > n => {
            (ctx.log)(
                Severity::Info,
                &format!(
                    "{wanted} copies wanted: more than the {workers} worker(s) make in an hour \
                     (about {n} at {} ms of CPU a copy); GzipDiskNgCompressorWorkers may be raised",
                    per_copy.unwrap_or(0) / 1000
                ),
            );
            true
        }
        _ => false,
    }
}

/// Starts `CompressorSettings::workers` worker threads; how many started.
fn start_workers<'s>(scope: &'s Scope<'s, '_>, ctx: &'s Ctx<'_>, backlog: &'s Backlog) -> usize {
    let mut started = 0;
    for i in 0..ctx.settings.workers.max(1) {
        let spawned = thread::Builder::new()
            .name(format!("gdn-compress-{i}"))
            .spawn_scoped(scope, move || {
                lower_priority(ctx);
                work(ctx, backlog)
            });
        match spawned {
            Ok(_) => started += 1,
            Err(e) => (ctx.log)(
                Severity::Error,
                &format!("cannot start a worker thread: {e}"),
            ),
        }
    }
    started
}

/// Lowers the calling thread's CPU priority to
/// `CompressorSettings::worker_nice`: compressing and scanning yield to the
/// server. The job reader and the keeper do not call this: the children
/// never wait for the reader, so a reader slower than they are drops their
/// jobs (the channel is full), and the keeper must write the wanted set
/// down before a stop's SIGKILL.
fn lower_priority(ctx: &Ctx<'_>) {
    let nice = ctx.settings.worker_nice;
    if nice != 0 && !os::nice_this_thread(nice) {
        (ctx.log)(
            Severity::Debug,
            &format!("cannot lower a thread to nice {nice}"),
        );
    }
}

/// Starts the job reader (`gdn-jobs`) and the thread that takes what it
/// reads into the wanted set (`gdn-wanted`); when the stream ends (or
/// either cannot start), the backlog is closed and `ended` set. The
/// children never wait for the reader: a job the channel has no room for
/// is dropped. So the reader waits on nothing but the channel: not on the
/// backlog's or the state's lock, which a worker lowered to
/// `CompressorSettings::worker_nice` may hold while the CPU is busy with
/// others (the one taking jobs in waits there instead, the jobs queued in
/// this process meanwhile, unbounded: they are what the channel would have
/// dropped), and neither thread lowers its priority.
fn start_reader<'s, R: Read + Send + 's>(
    scope: &'s Scope<'s, '_>,
    ctx: &'s Ctx<'_>,
    jobs: R,
    backlog: &'s Backlog,
    ended: &'s Mutex<bool>,
) {
    let end = move || {
        backlog.close();
        *ended.lock().unwrap_or_else(PoisonError::into_inner) = true;
    };
    let (tx, rx) = mpsc::channel();
    let taker = thread::Builder::new()
        .name("gdn-wanted".into())
        .spawn_scoped(scope, move || {
            rx.iter().for_each(|job| take_job(ctx, job, backlog));
            end();
        });
    if let Err(e) = taker {
        (ctx.log)(Severity::Error, &format!("cannot start a thread: {e}"));
        return end();
    }
    let reader = thread::Builder::new()
        .name("gdn-jobs".into())
        .spawn_scoped(scope, move || read_jobs(ctx, jobs, &tx));
    // Not started: the sender is gone with it, and the taker ends.
    if let Err(e) = reader {
        (ctx.log)(
            Severity::Error,
            &format!("cannot start the job reader: {e}"),
        );
    }
}

/// Reads jobs until the end of the stream (or until the taker is gone),
/// handing each to the taker.
fn read_jobs<R: Read>(ctx: &Ctx<'_>, jobs: R, to: &mpsc::Sender<OwnedJob>) {
    let mut reader = Reader::new(jobs);
    loop {
        match reader.next() {
            Ok(Some(job)) => {
                if to.send(job).is_err() {
                    return;
                }
            }
            Ok(None) => return,
            Err(e) => {
                (ctx.log)(Severity::Error, &format!("cannot read jobs: {e}"));
                return;
            }
        }
    }
}

/// A job read: a touch is handled at once, a compress or decode job
/// joins the wanted set.
fn take_job(ctx: &Ctx<'_>, job: OwnedJob, backlog: &Backlog) {
    match job {
        OwnedJob::Touch { source, kind } => {
            let remake = ctx.state().touch(ctx.settings, &(source, kind));
            if let Some((key, path)) = remake {
                backlog.remake(key, path);
            }
        }
        job @ OwnedJob::Train { .. } => backlog.train(job),
        job => {
            let added = backlog.ask(job, 1, backlog::now_secs());
            merged(ctx, added.merged);
            if added.dropped > 0 {
                (ctx.log)(
                    Severity::Debug,
                    "wanted set full: the coldest entry dropped",
                );
                ctx.copies(CopyFate::Dropped, added.dropped);
            }
        }
    }
}

/// What is left of a compress or decode job once pending and done copies
/// are taken out; `None` when nothing is.
fn claim(ctx: &Ctx<'_>, job: &OwnedJob) -> Option<OwnedJob> {
    let mut state = ctx.state();
    match job {
        OwnedJob::Compress {
            path,
            version,
            codings,
            deltas,
        } => {
            let version = *version;
            let asked = codings.len();
            let codings = codings
                .iter()
                .filter(|&c| !state.claim(ctx.settings, (version, Kind::Coded(c))))
                .fold(*codings, |set, c| set.without(c));
            merged(ctx, asked - codings.len());
            let deltas = deltas.clone().filter(|_| state.claim_deltas(version));
            if codings.is_empty() && deltas.is_none() {
                return None;
            }
            Some(OwnedJob::Compress {
                path: path.clone(),
                version,
                codings,
                deltas,
            })
        }
        OwnedJob::Decode {
            version, coding, ..
        } => {
            if !state.claim(ctx.settings, (*version, Kind::Decoded(*coding))) {
                merged(ctx, 1);
                return None;
            }
            Some(job.clone())
        }
        OwnedJob::Touch { .. } | OwnedJob::Train { .. } => None,
    }
}

/// `n` copies asked for are pending, made or failed already.
fn merged(ctx: &Ctx<'_>, n: usize) {
    if n > 0 {
        (ctx.tally)(Event::Copies(CopyFate::Merged, n as u64));
    }
}

/// A worker: the most wanted entry, until none is left and the stream
/// ended, or a stop.
fn work(ctx: &Ctx<'_>, backlog: &Backlog) {
    while let Some(next) = backlog.next() {
        let (key, job) = match next {
            backlog::Next::Wanted(key, job) => (key, job),
            backlog::Next::Remake(key, path) => {
                ctx.remake(&path, key);
                backlog.finished(None);
                continue;
            }
            backlog::Next::Train(OwnedJob::Train {
                root,
                site,
                digest,
                bits,
                at,
            }) => {
                ctx.train_site(&root, &site, &digest, &bits, at);
                backlog.finished(None);
                continue;
            }
            backlog::Next::Train(_) => {
                backlog.finished(None);
                continue;
            }
        };
        match claim(ctx, &job) {
            Some(OwnedJob::Compress {
                path,
                version,
                codings,
                deltas,
            }) => ctx.compress(&path, version, codings, deltas.as_ref()),
            Some(OwnedJob::Decode {
                path,
                coding,
                version,
            }) => ctx.decode(&path, coding, version),
            _ => {}
        }
        backlog.finished(Some((&key, &job)));
    }
}

#[cfg(test)]
mod tests;

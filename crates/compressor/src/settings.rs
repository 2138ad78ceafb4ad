//! What the compressor is started with and how it answers: its settings,
//! the stop it waits on, and the log lines and events it reports through
//! the callbacks the module passes in (the module counts the events; this
//! crate knows nothing of its counters).

use crate::tally::CopyFate;
use std::path::PathBuf;
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

/// What the compressor runs with.
#[derive(Clone, Debug)]
pub struct CompressorSettings {
    /// The cache root (exists; the process can write it).
    pub root: PathBuf,
    /// Total bytes of copies kept.
    pub max_size: u64,
    /// Compression threads.
    pub workers: usize,
    /// The CPU priority (nice) the compression threads and the start's
    /// scan lower themselves to (0: as the process). The thread reading
    /// the children's jobs and the one writing the wanted set down keep
    /// the process's: a send that finds the channel full is dropped, so
    /// the reader must keep pace with the children however busy the CPU.
    pub worker_nice: i32,
    /// Encoder settings: the publish tool's defaults, so copies are what
    /// `gzip-disk-ng compress` writes.
    pub levels: gdn_core::encode::Levels,
    /// Where set, a first copy is made at these faster levels, and made
    /// again at `levels` once it is served, when nothing is wanted.
    pub fast_levels: Option<gdn_core::encode::Levels>,
    /// Least saving, in percent, for a copy to be kept.
    pub min_saving: f64,
    /// Delta encoder settings: the publish tool's defaults.
    pub delta_levels: gdn_core::delta_codec::DeltaLevels,
    /// The host this runs on: where it records file versions' digests.
    pub host: crate::host::Host,
}

/// The levels of a first copy: brotli 4, zstd 3, gzip 6. On 100 pages of
/// 16 KB (`gzip-disk-ng compress --brotli-quality 4`) brotli 4 took 0.07 s
/// of user CPU and 0.37 s in all where brotli 11 took 1.73 s and 7.05 s
/// (and brotli 5, whose hash tables are allocated and cleared per file,
/// 8.7 s), for 4 % more bytes (`docs/on-demand.md`): a page is served
/// compressed within seconds of its first request, however long the
/// backlog.
pub const FAST_LEVELS: gdn_core::encode::Levels = gdn_core::encode::Levels {
    gzip: 6,
    brotli_quality: 4,
    brotli_lgwin: gdn_core::encode::BROTLI_LGWIN_MAX,
    zstd: 3,
    zstd_window_log: gdn_core::encode::ZSTD_WINDOW_LOG_MAX,
};

/// How important a log line is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warn,
    Notice,
    Info,
    Debug,
}

/// Where log lines go.
pub type Log<'a> = &'a (dyn Fn(Severity, &str) + Sync);

/// What the compressor tells of its work, for the module's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// `n` copies asked for reached this state.
    Copies(CopyFate, u64),
    /// After a job or at start: what the cache holds, and how many copies
    /// were evicted since the last such event (after many, the host may
    /// have the allocator give their memory back: the compressor keeps
    /// no allocator of its own).
    Holding {
        entries: u64,
        bytes: u64,
        evicted: u64,
    },
    /// Every half second: entries wanted (copies not made yet), and when
    /// the oldest was first asked for (seconds since the epoch; 0: none).
    Backlog { wanted: u64, oldest_since: u64 },
}

/// Where events go.
pub type Tally<'a> = &'a (dyn Fn(Event) + Sync);

/// Asks the compressor to stop (the process is told to end): `run`
/// writes its wanted set down and ends the process.
pub struct Stop {
    asked: Mutex<bool>,
    cond: Condvar,
}

impl Stop {
    pub const fn new() -> Stop {
        Stop {
            asked: Mutex::new(false),
            cond: Condvar::new(),
        }
    }

    /// Asks `run` to stop.
    pub fn request(&self) {
        *self.asked.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.cond.notify_all();
    }

    /// Waits up to `d` for a stop; whether one was asked.
    pub(crate) fn wait(&self, d: Duration) -> bool {
        let asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
        let (asked, _) = self
            .cond
            .wait_timeout_while(asked, d, |a| !*a)
            .unwrap_or_else(PoisonError::into_inner);
        *asked
    }
}

impl Default for Stop {
    fn default() -> Self {
        Stop::new()
    }
}

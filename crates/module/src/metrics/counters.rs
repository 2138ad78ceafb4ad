//! The live counters of `tally`'s layout: one shared segment per Apache
//! instance, made in the parent after the configuration is read and kept
//! across graceful and full restarts; counted by every child and the
//! on-demand compressor with atomic adds, read by the status hook and the
//! metrics handler.

use crate::metrics::tally::{self, slot, Counted, Reason, Snapshot};
use gdn_compressor::tally::CopyFate;
use gdn_core::coding::Coding;
use gdn_httpd::shm::{self, Counters};
use gdn_httpd::PostConfig;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Where the segment hangs on the process pool.
const KEY: &std::ffi::CStr = c"mod_gzip_disk_ng counters";

static COUNTERS: Counters<{ slot::COUNT }> = Counters::new();

/// Whether to count: always, except in a build with the `bench-knobs`
/// feature run with `GZIP_DISK_NG_NO_COUNTERS` in its environment, which
/// `bench/counters_cost.sh` compares with to measure what counting costs
/// a request.
#[cfg(not(feature = "bench-knobs"))]
#[inline]
pub fn counting() -> bool {
    true
}

/// Whether to count (see the build without `bench-knobs`).
#[cfg(feature = "bench-knobs")]
pub fn counting() -> bool {
    static ON: std::sync::LazyLock<bool> =
        std::sync::LazyLock::new(|| std::env::var_os("GZIP_DISK_NG_NO_COUNTERS").is_none());
    *ON
}

/// Finds or makes the segment (post_config, in the parent).
pub fn attach(ctx: &PostConfig<'_>) {
    if !counting() {
        return;
    }
    let Some(fresh) = COUNTERS.attach(ctx, KEY, tally::layout()) else {
        return;
    };
    if fresh {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        set(slot::SINCE, now);
    }
    add(slot::GENERATION, 1);
}

#[inline]
fn counter(i: usize) -> Option<&'static AtomicU64> {
    if !counting() {
        return None;
    }
    COUNTERS.get().and_then(|c| c.get(i))
}

#[inline]
fn add(i: usize, n: u64) {
    if let Some(c) = counter(i) {
        c.fetch_add(n, Relaxed);
    }
}

fn set(i: usize, v: u64) {
    if let Some(c) = counter(i) {
        c.store(v, Relaxed);
    }
}

fn get(i: usize) -> u64 {
    counter(i).map_or(0, |c| c.load(Relaxed))
}

/// One response: what it was, the body bytes it sent, and what they
/// would have been uncompressed (where known).
#[inline]
pub fn response(c: Counted) {
    let o = c.outcome;
    add(slot::responses(o), 1);
    add(slot::sent_bytes(o), c.sent);
    match c.uncompressed {
        Some(n) => add(slot::original_bytes(o), n),
        None => add(slot::unknown_size_bytes(o), c.sent),
    }
}

/// What a delta of coding `d` saved against the br representation.
pub fn delta_saved_vs_br(d: gdn_core::coding::DeltaCoding, bytes: u64) {
    add(slot::delta_saved_vs_br(d), bytes);
}

/// A sibling not used, and why.
pub fn passed_over(r: Reason, c: Coding) {
    add(slot::passed_over(r, c), 1);
}

/// This thread's CPU time in microseconds, where counting (a decode
/// takes the difference).
pub fn cpu_now() -> u64 {
    if counting() {
        shm::thread_cpu_micros()
    } else {
        0
    }
}

/// CPU a decode took.
pub fn decode_cpu(c: Coding, micros: u64) {
    add(slot::decode_cpu_us(c), micros);
}

/// `n` on-demand copies reached state `j`.
pub fn copies(j: CopyFate, n: u64) {
    add(slot::job(j), n);
}

/// A compressor process starts (in it): its pid, and whether it replaces
/// one of the same configuration generation that died.
pub fn compressor_started() {
    let generation = get(slot::GENERATION);
    let previous = counter(slot::COMPRESSOR_GENERATION).map(|c| c.swap(generation, Relaxed));
    add(slot::COMPRESSOR_STARTS, 1);
    if previous == Some(generation) {
        add(slot::COMPRESSOR_RESTARTS, 1);
    }
    set(slot::COMPRESSOR_PID, u64::from(std::process::id()));
}

/// Adds the compressor's CPU time used since it last said (any thread).
pub fn compressor_cpu() {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = shm::process_cpu_micros();
    let before = LAST.fetch_max(now, Relaxed);
    if now > before {
        add(slot::COMPRESSOR_CPU_US, now - before);
    }
}

/// What the cache holds now, and copies evicted since last said.
pub fn cache_holds(entries: u64, bytes: u64, evicted: u64) {
    set(slot::CACHE_ENTRIES, entries);
    set(slot::CACHE_BYTES, bytes);
    add(slot::CACHE_EVICTIONS, evicted);
}

/// Copies wanted and not made yet, and when the oldest was first asked
/// for (seconds since the epoch; 0: none).
pub fn backlog(wanted: u64, oldest_since: u64) {
    set(slot::WANTED, wanted);
    set(slot::WANTED_OLDEST, oldest_since);
}

/// The counters now; `None` when there are none (a build without them,
/// or the segment could not be made).
pub fn snapshot(on_demand: bool) -> Option<Snapshot> {
    let c = COUNTERS.get().filter(|_| counting())?;
    let mut values = [0u64; slot::COUNT];
    for (v, x) in values.iter_mut().zip(c.iter()) {
        *v = x.load(Relaxed);
    }
    Some(Snapshot { values, on_demand })
}

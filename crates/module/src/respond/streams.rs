//! The server's streaming decodes: a decoded body longer than what is
//! held whole streams through a fixed buffer and holds its worker until
//! the client has read it all, which a client that reads slowly, or
//! never, makes last the connection's `Timeout`. They are bounded for
//! the whole server, not per process (under prefork a process is one
//! worker): a quarter of the MPM's workers, and a quarter of each
//! process's threads, so slow readers leave the rest to answer others.
//!
//! A place is a slot of a table in shared memory holding its process's
//! pid; a slot whose process has ended (a child killed while it held
//! one) is taken over. Without the segment, only the per-process bound
//! holds.

use gdn_httpd::helper::process_exists;
use gdn_httpd::shm::Counters;
use gdn_httpd::PostConfig;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use std::sync::atomic::{AtomicU32, AtomicUsize};

/// Slots at most, whatever the MPM's size.
const SLOTS: usize = 64;

/// Per process at most, whatever its threads.
const PER_PROCESS_MAX: u32 = 4;

/// Where the segment hangs on the process pool.
const SEGMENT: &std::ffi::CStr = c"mod_gzip_disk_ng decode streams";

/// The table's layout, for a segment an earlier build made.
const LAYOUT: u64 = 0x6764_6e73_0000_0001;

static TABLE: Counters<SLOTS> = Counters::new();

/// The bounds this configuration gives: slots of the table in use, and
/// streams per process (set in the parent at each post_config, inherited
/// by the children it forks).
static SERVER_BOUND: AtomicUsize = AtomicUsize::new(SLOTS);
static PROCESS_BOUND: AtomicU32 = AtomicU32::new(PER_PROCESS_MAX);

/// Streams in this process now.
static HERE: AtomicU32 = AtomicU32::new(0);

/// The two bounds for an MPM of `daemons` processes of `threads` each.
fn bounds(daemons: u32, threads: u32) -> (usize, u32) {
    let workers = u64::from(daemons) * u64::from(threads);
    let server = (workers / 4).clamp(1, SLOTS as u64) as usize;
    (server, (threads / 4).clamp(1, PER_PROCESS_MAX))
}

/// Reads the MPM's size and finds or makes the table (post_config, in
/// the parent, before the children fork).
pub fn attach(ctx: &PostConfig<'_>) {
    let (daemons, threads) = ctx.mpm_workers();
    let (server, process) = bounds(daemons, threads);
    SERVER_BOUND.store(server, Relaxed);
    PROCESS_BOUND.store(process, Relaxed);
    let _ = TABLE.attach(ctx, SEGMENT, LAYOUT);
}

/// A streaming decode's place, given back when dropped.
pub struct DecodePlace {
    slot: Option<usize>,
}

impl DecodePlace {
    /// A place, or `None` where this process or the server has as many
    /// streams as its bound.
    pub fn take() -> Option<DecodePlace> {
        let bound = PROCESS_BOUND.load(Relaxed);
        if HERE.fetch_add(1, AcqRel) >= bound {
            HERE.fetch_sub(1, AcqRel);
            return None;
        }
        let Some(table) = TABLE.get() else {
            return Some(DecodePlace { slot: None });
        };
        let used = &table[..SERVER_BOUND.load(Relaxed).min(SLOTS)];
        let me = u64::from(std::process::id());
        match claim(used, me, process_exists) {
            Some(i) => Some(DecodePlace { slot: Some(i) }),
            None => {
                HERE.fetch_sub(1, AcqRel);
                None
            }
        }
    }
}

impl Drop for DecodePlace {
    fn drop(&mut self) {
        if let (Some(i), Some(t)) = (self.slot, TABLE.get()) {
            t[i].store(0, Relaxed);
        }
        HERE.fetch_sub(1, AcqRel);
    }
}

/// Takes a free slot of `slots` for process `me`, else one whose process
/// `exists` no longer.
fn claim(
    slots: &[std::sync::atomic::AtomicU64],
    me: u64,
    exists: impl Fn(u32) -> bool,
) -> Option<usize> {
    let take = |i: usize, from: u64| slots[i].compare_exchange(from, me, AcqRel, Acquire).is_ok();
    if let Some(i) = (0..slots.len()).find(|&i| take(i, 0)) {
        return Some(i);
    }
    (0..slots.len()).find(|&i| {
        let owner = slots[i].load(Acquire);
        owner != me && !exists(owner as u32) && take(i, owner)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn a_quarter_of_the_workers_and_of_each_process() {
        assert_eq!(bounds(1, 1), (1, 1), "one worker still decodes");
        assert_eq!(bounds(12, 1), (3, 1), "prefork: a quarter of its processes");
        assert_eq!(
            bounds(6, 25),
            (37, 4),
            "event's defaults: at most 4 a process"
        );
        assert_eq!(bounds(3, 4), (3, 1));
        assert_eq!(bounds(400, 64), (SLOTS, 4), "never past the table");
    }

    #[test]
    fn slots_are_taken_once_and_those_of_ended_processes_again() {
        let slots: Vec<AtomicU64> = (0..3).map(|_| AtomicU64::new(0)).collect();
        let alive = |_| true;
        assert_eq!(claim(&slots, 7, alive), Some(0));
        assert_eq!(
            claim(&slots, 7, alive),
            Some(1),
            "a process's own second stream"
        );
        assert_eq!(claim(&slots, 8, alive), Some(2));
        assert_eq!(claim(&slots, 9, alive), None, "full while all live");
        assert_eq!(claim(&slots, 9, |pid| pid != 8), Some(2), "8 ended");
        assert_eq!(slots[2].load(Relaxed), 9);
        let own: Vec<AtomicU64> = (0..2).map(|_| AtomicU64::new(7)).collect();
        assert_eq!(
            claim(&own, 7, |_| false),
            None,
            "its own are not taken over"
        );
        slots[0].store(0, Relaxed);
        assert_eq!(
            claim(&slots, 10, alive),
            Some(0),
            "a slot given back is free"
        );
    }
}

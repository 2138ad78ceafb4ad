//! Counters every process of an Apache instance shares: an anonymous
//! shared memory segment the parent makes after reading the configuration,
//! before it forks children and helpers, hung on the process pool so a
//! graceful or full restart finds the same one. Updates are atomic adds:
//! no lock on the request path.

use super::ffi;
use super::module::PostConfig;
use std::ffi::{c_int, CStr};
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// `N` shared counters, where a module's statics can reach them.
pub struct Counters<const N: usize> {
    block: AtomicPtr<[AtomicU64; N]>,
}

impl<const N: usize> Counters<N> {
    pub const fn new() -> Self {
        Counters {
            block: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// The counters, once `attach` found or made them.
    #[inline]
    pub fn get(&self) -> Option<&'static [AtomicU64; N]> {
        let p = self.block.load(Ordering::Acquire);
        // SAFETY: only `attach` stores a pointer: to `N` counters in a
        // segment of the process pool, which lives until the process ends.
        unsafe { p.as_ref() }
    }

    /// Finds the segment named `key` (made by an earlier generation of the
    /// configuration) or makes it, in the parent, in post_config. A
    /// segment of another `layout` (the module was upgraded) starts over
    /// at zero. Returns whether the counters start at zero.
    pub fn attach(&self, ctx: &PostConfig<'_>, key: &CStr, layout: u64) -> Option<bool> {
        let size = (N + 1) * std::mem::size_of::<AtomicU64>();
        let mut fresh: c_int = 0;
        // SAFETY: the main server record; the C side returns NULL or a
        // segment of at least `size` bytes, page aligned, in the process
        // pool.
        let base = unsafe {
            ffi::gdn_shared_memory(
                ctx.server(),
                super::index::get(),
                key.as_ptr(),
                size,
                &mut fresh,
            )
        };
        if base.is_null() {
            return None;
        }
        // SAFETY: aligned for u64 (page aligned) and `size` bytes long:
        // a layout word followed by N counters, only ever used atomically.
        let words = unsafe { &*(base as *const [AtomicU64; 1]) };
        // SAFETY: as above: the counters follow the layout word.
        let block = unsafe { (base as *mut AtomicU64).add(1) as *mut [AtomicU64; N] };
        // SAFETY: as above.
        let counters = unsafe { &*block };
        let reset = fresh != 0 || words[0].load(Ordering::Acquire) != layout;
        if reset {
            counters.iter().for_each(|c| c.store(0, Ordering::Relaxed));
            words[0].store(layout, Ordering::Release);
        }
        self.block.store(block, Ordering::Release);
        Some(reset)
    }
}

impl<const N: usize> Default for Counters<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// CPU time this thread has used, in microseconds (for what a decode
/// cost).
pub fn thread_cpu_micros() -> u64 {
    cpu_micros(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Gives the free memory the allocator keeps back to the system (glibc's
/// `malloc_trim`), after many allocations were freed at once: without
/// it, a process's RSS stays at its peak.
pub fn trim_heap() {
    #[cfg(target_env = "gnu")]
    // SAFETY: takes no pointer; glibc locks its arenas itself.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// CPU time this process has used, all its threads, in microseconds.
pub fn process_cpu_micros() -> u64 {
    cpu_micros(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn cpu_micros(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes one timespec.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return 0;
    }
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000
        + u64::try_from(ts.tv_nsec).unwrap_or(0) / 1000
}

//! What the compressor asks of the system beside files: a thread's CPU
//! time (what a copy cost) and a thread's priority (workers yield to the
//! server), through rustix's safe calls.

use rustix::process::setpriority_process;
use rustix::thread::gettid;
use rustix::time::{clock_gettime, ClockId};

/// CPU time the calling thread has used, in microseconds.
pub(crate) fn thread_cpu_micros() -> u64 {
    let t = clock_gettime(ClockId::ThreadCPUTime);
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let micros = u64::try_from(t.tv_nsec / 1000).unwrap_or(0);
    secs.saturating_mul(1_000_000).saturating_add(micros)
}

/// Sets the calling thread's nice value (Linux gives each thread its
/// own, by its thread id) and leaves the rest of the process as it is;
/// whether it was set.
pub(crate) fn nice_this_thread(nice: i32) -> bool {
    setpriority_process(Some(gettid()), nice).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_s_cpu_time_grows_with_its_work() {
        let before = thread_cpu_micros();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < std::time::Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let spent = thread_cpu_micros() - before;
        // Busy for 50 ms of wall time: a share of it on the CPU however
        // loaded the machine, and never more than the wall time.
        assert!((1000..=60_000).contains(&spent), "{spent} µs");
        assert!(x > 0);
    }

    #[test]
    fn a_thread_is_niced_alone() {
        let own = rustix::process::getpriority_process(None).expect("own nice");
        let seen = std::thread::spawn(move || {
            assert!(nice_this_thread(own + 1));
            rustix::process::getpriority_process(Some(gettid())).expect("thread's nice")
        })
        .join()
        .expect("thread");
        assert_eq!(seen, own + 1);
        assert_eq!(
            rustix::process::getpriority_process(None).expect("nice"),
            own
        );
    }
}

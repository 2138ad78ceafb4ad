//! Whether the server is busy, so that dynamic bodies are coded at
//! cheaper levels: no idle worker left (the scoreboard), or, where the
//! admin set `GzipDiskNgFilterLoadLimit`, the one-minute load average at
//! the limit. Each is read at most once a second per process, so a
//! response costs an atomic load.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The second last read (high 32 bits) and the load then, in hundredths
/// (low 32 bits); 0 before the first read.
static LAST: AtomicU64 = AtomicU64::new(0);

/// Whether the load average, as of this second, is at `limit`
/// (hundredths) or above. Where it cannot be read the server is taken
/// as not busy: the configured levels apply.
pub fn busy(limit: u32, now_secs: i64) -> bool {
    let now = now_secs as u64 & 0xFFFF_FFFF;
    let last = LAST.load(Relaxed);
    let load = if last >> 32 == now && last != 0 {
        (last & 0xFFFF_FFFF) as u32
    } else {
        let load = read().unwrap_or(0);
        LAST.store(now << 32 | u64::from(load), Relaxed);
        load
    };
    load >= limit
}

/// The second the scoreboard was last read (high 32 bits) and whether it
/// then had an idle worker (bit 0) and was read (bit 1); 0 before.
static WORKERS: AtomicU64 = AtomicU64::new(0);

/// Whether, as of this second, no worker is waiting for a request: the
/// next connection waits for one, and a cheaper level frees this one
/// sooner. Without a scoreboard the server is taken as not busy.
pub fn no_idle_worker(now_secs: i64) -> bool {
    let now = now_secs as u64 & 0xFFFF_FFFF;
    let last = WORKERS.load(Relaxed);
    let seen = if last >> 32 == now && last & 2 != 0 {
        last & 1 == 1
    } else {
        let idle = gdn_httpd::idle_workers().is_none_or(|n| n > 0);
        WORKERS.store(now << 32 | 2 | u64::from(idle), Relaxed);
        idle
    };
    !seen
}

/// The one-minute load average in hundredths.
fn read() -> Option<u32> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    parse(&text)
}

fn parse(text: &str) -> Option<u32> {
    let first = text.split_whitespace().next()?;
    let load: f64 = first.parse().ok()?;
    (load.is_finite() && load >= 0.0)
        .then(|| (load * 100.0).round().min(f64::from(u32::MAX)) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_one_minute_average() {
        assert_eq!(parse("2.50 1.00 0.50 3/400 1234\n"), Some(250));
        assert_eq!(parse("0.00 0.00 0.00 1/1 1\n"), Some(0));
        assert_eq!(parse(""), None);
        assert_eq!(parse("x 1 2"), None);
    }

    #[test]
    fn a_limit_of_zero_load_is_always_busy_and_a_huge_one_never() {
        assert!(busy(0, 1));
        assert!(!busy(u32::MAX, 2));
    }
}

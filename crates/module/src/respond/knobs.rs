//! What the `bench-knobs` build lets a benchmark switch off or change
//! through the environment, to measure what a part of a response costs.
//! A normal build has no knobs: every function here is a constant.
//!
//! - `GZIP_DISK_NG_POOL_READ_MAX`: the largest body read into the request
//!   pool (`bench/small_files.sh`);
//! - `GZIP_DISK_NG_NO_REPR_DIGEST`: no `Repr-Digest` or `Content-Digest`
//!   (`bench/fields_cost.sh`);
//! - `GZIP_DISK_NG_NO_MARKER`: no marker header (`bench/fields_cost.sh`).

/// Largest body read into the request pool when sendfile is off: below
/// it one read costs less than mapping the file (mmap, page faults,
/// munmap), as `bench/small_files.sh` measures.
const POOL_READ_MAX: u64 = 64 * 1024;

#[cfg(feature = "bench-knobs")]
use std::sync::LazyLock;

/// The largest body read into the request pool (`POOL_READ_MAX`).
#[cfg(not(feature = "bench-knobs"))]
#[inline]
pub(super) fn pool_read_max() -> u64 {
    POOL_READ_MAX
}

/// Whether the integrity fields (`Repr-Digest`, `Content-Digest`) are sent.
#[cfg(not(feature = "bench-knobs"))]
#[inline]
pub(super) fn digests() -> bool {
    true
}

/// Whether the marker header is sent, where configured.
#[cfg(not(feature = "bench-knobs"))]
#[inline]
pub(super) fn marker() -> bool {
    true
}

/// `pool_read_max` (above), or `GZIP_DISK_NG_POOL_READ_MAX`.
#[cfg(feature = "bench-knobs")]
pub(super) fn pool_read_max() -> u64 {
    static MAX: LazyLock<u64> = LazyLock::new(|| {
        std::env::var("GZIP_DISK_NG_POOL_READ_MAX")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(POOL_READ_MAX)
    });
    *MAX
}

/// `digests` (above), unless `GZIP_DISK_NG_NO_REPR_DIGEST` is set.
#[cfg(feature = "bench-knobs")]
pub(super) fn digests() -> bool {
    static ON: LazyLock<bool> =
        LazyLock::new(|| std::env::var_os("GZIP_DISK_NG_NO_REPR_DIGEST").is_none());
    *ON
}

/// `marker` (above), unless `GZIP_DISK_NG_NO_MARKER` is set.
#[cfg(feature = "bench-knobs")]
pub(super) fn marker() -> bool {
    static ON: LazyLock<bool> =
        LazyLock::new(|| std::env::var_os("GZIP_DISK_NG_NO_MARKER").is_none());
    *ON
}

//! Rust values kept in APR pools: moved into pool memory and dropped by a
//! pool cleanup, so they live exactly as long as the request or
//! configuration that owns them.

use super::ffi;
use std::ffi::c_void;
use std::ptr;

/// Moves `value` into `pool`, dropped when the pool is cleared.
pub(crate) fn pool_box<T>(pool: *mut ffi::apr_pool_t, value: T) -> *mut c_void {
    unsafe extern "C" fn drop_it<T>(data: *mut c_void) -> ffi::apr_status_t {
        // SAFETY: registered only for a T written by pool_box.
        unsafe { ptr::drop_in_place(data as *mut T) };
        0
    }
    let p = pool_place(pool, value);
    // SAFETY: the cleanup drops the T pool_place wrote, once, before the
    // memory goes.
    unsafe {
        ffi::apr_pool_cleanup_register(
            pool,
            p as *const c_void,
            Some(drop_it::<T>),
            Some(ffi::apr_pool_cleanup_null),
        );
    }
    p
}

/// `value` moved into memory of `pool`, never dropped: only for a value
/// whose drop does nothing (`Config::needs_drop`).
pub(crate) fn pool_place<T>(pool: *mut ffi::apr_pool_t, value: T) -> *mut c_void {
    // SAFETY: palloc returns memory aligned for any type (8 bytes) of the
    // requested size, written once here.
    unsafe {
        let p = ffi::apr_palloc(pool, std::mem::size_of::<T>().max(1)) as *mut T;
        ptr::write(p, value);
        p.cast()
    }
}

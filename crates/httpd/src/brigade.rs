//! Bucket brigades: a response's body handed to the output filters.

use super::{apr_status_t, ffi, File, PoolBytes, Request, Status};
use std::ptr;

impl<'r> Request<'r> {
    /// A brigade on this request's connection.
    pub fn brigade(&self) -> Brigade<'_, 'r> {
        // SAFETY: pool and bucket allocator are live.
        let bb = unsafe {
            ffi::apr_brigade_create(self.raw().pool, (*self.raw().connection).bucket_alloc)
        };
        Brigade { bb, req: self }
    }
}

/// A bucket brigade bound to a request.
pub struct Brigade<'a, 'r> {
    bb: *mut ffi::apr_bucket_brigade,
    req: &'a Request<'r>,
}

impl Brigade<'_, '_> {
    fn alloc(&self) -> *mut ffi::apr_bucket_alloc_t {
        // SAFETY: live connection.
        unsafe { (*self.req.raw().connection).bucket_alloc }
    }

    fn push(&self, b: *mut ffi::apr_bucket) {
        // SAFETY: b is a fresh bucket from this connection's allocator.
        unsafe { ffi::gdn_brigade_insert_tail(self.bb, b) }
    }

    /// A file bucket: sendfile or mmap as core would use them.
    pub fn file(&self, f: &File<'_>, start: u64, len: u64) {
        if len == 0 {
            return;
        }
        // SAFETY: fd lives in the request pool, like the brigade.
        unsafe {
            ffi::gdn_insert_file(
                self.req.r,
                self.bb,
                f.fd,
                start as ffi::apr_off_t,
                len as ffi::apr_off_t,
            )
        }
    }

    /// Passes `data` down the filters without copying it, ending the
    /// response after it when `end` is set, and empties the brigade: the
    /// borrow covers the bucket's whole life, since any filter that keeps
    /// a transient bucket must copy it.
    pub fn pass_borrowed(&self, data: &[u8], end: bool) -> apr_status_t {
        if !data.is_empty() {
            // SAFETY: the bucket is passed and destroyed below, while `data`
            // is still borrowed.
            let b = unsafe {
                ffi::apr_bucket_transient_create(data.as_ptr().cast(), data.len(), self.alloc())
            };
            self.push(b);
        }
        if end {
            self.eos();
        }
        let st = self.pass();
        self.cleanup();
        st
    }

    /// A bucket over request-pool bytes, without a copy.
    pub fn pool(&self, data: PoolBytes<'_>) {
        if data.is_empty() {
            return;
        }
        // SAFETY: the bytes live in the request's pool, which the bucket
        // names, so it copies them if the pool goes first.
        let b = unsafe {
            ffi::apr_bucket_pool_create(
                data.as_ptr().cast(),
                data.len(),
                self.req.raw().pool,
                self.alloc(),
            )
        };
        self.push(b);
    }

    /// A bucket holding a copy of `data`.
    pub fn heap(&self, data: &[u8]) {
        // SAFETY: heap bucket copies `data` (free_func NULL means copy).
        let b = unsafe {
            ffi::apr_bucket_heap_create(data.as_ptr().cast(), data.len(), None, self.alloc())
        };
        self.push(b);
    }

    /// A flush bucket: what passes before EOS makes the headers go out
    /// without a computed Content-Length.
    pub fn flush(&self) {
        // SAFETY: allocator is live.
        let b = unsafe { ffi::apr_bucket_flush_create(self.alloc()) };
        self.push(b);
    }

    pub fn eos(&self) {
        // SAFETY: allocator is live.
        let b = unsafe { ffi::apr_bucket_eos_create(self.alloc()) };
        self.push(b);
    }

    /// An error bucket: the connection is closed without a clean end so
    /// the client sees a failed transfer.
    pub fn error(&self, status: Status) {
        // SAFETY: allocator and pool are live.
        let b = unsafe {
            ffi::ap_bucket_error_create(status.0, ptr::null(), self.req.raw().pool, self.alloc())
        };
        self.push(b);
    }

    /// Sends the brigade down the output filters.
    pub fn pass(&self) -> apr_status_t {
        // SAFETY: live request and brigade.
        unsafe { ffi::ap_pass_brigade(self.req.raw().output_filters, self.bb) }
    }

    /// Empties the brigade (buckets destroyed).
    pub fn cleanup(&self) {
        // SAFETY: live brigade.
        unsafe { ffi::apr_brigade_cleanup(self.bb.cast()) };
    }
}

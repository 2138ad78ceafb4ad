//! Output filters: a module's filter sees a response's body brigade by
//! brigade, bucket by bucket, and passes what it makes to the next filter.
//! The filter's state lives in the request pool (dropped with it), with a
//! brigade of its own for what it passes on.

use super::pool::pool_box;
use super::{apr_status_t, ffi, File, Finfo, Request};
use std::any::Any;
use std::ffi::c_char;
use std::marker::PhantomData;
use std::ptr;

/// What a filter keeps across its calls for one response.
struct Slot {
    out: *mut ffi::apr_bucket_brigade,
    state: Option<Box<dyn Any>>,
}

/// A module's output filter, for one call.
pub struct Filter<'r> {
    f: *mut ffi::ap_filter_t,
    req: Request<'r>,
}

/// One bucket of the brigade a filter was handed.
#[derive(Debug)]
pub enum Piece<'a> {
    Data(&'a [u8]),
    /// The response's end.
    Eos,
    /// Everything so far is to reach the client now.
    Flush,
    /// Any other metadata (an error bucket, mod_http2's): passed on as it is.
    Meta,
}

/// The brigade a filter was handed.
pub struct Input {
    bb: *mut ffi::apr_bucket_brigade,
}

impl<'r> Filter<'r> {
    /// # Safety
    /// `f` is a live filter of a live request.
    pub(crate) unsafe fn from_raw(f: *mut ffi::ap_filter_t) -> Filter<'r> {
        // SAFETY: as the caller promises.
        let req = unsafe { Request::from_raw((*f).r) };
        Filter { f, req }
    }

    pub fn request(&self) -> &Request<'r> {
        &self.req
    }

    fn slot(&mut self) -> &mut Slot {
        // SAFETY: live filter; ctx is NULL or the Slot set below.
        let ctx = unsafe { (*self.f).ctx } as *mut Slot;
        if !ctx.is_null() {
            // SAFETY: a Slot this filter placed in the request pool.
            return unsafe { &mut *ctx };
        }
        let r = self.req.raw();
        // SAFETY: pool and connection are live for the request.
        let out = unsafe { ffi::apr_brigade_create(r.pool, (*r.connection).bucket_alloc) };
        let slot = pool_box(r.pool, Slot { out, state: None }) as *mut Slot;
        // SAFETY: live filter; the slot lives as long as the request.
        unsafe { (*self.f).ctx = slot.cast() };
        // SAFETY: just placed.
        unsafe { &mut *slot }
    }

    /// The state a previous call of this response left, if any.
    pub fn state<T: Any>(&mut self) -> Option<&mut T> {
        self.slot().state.as_mut()?.downcast_mut()
    }

    /// Takes the state out (to be put back with `put_state`), so the
    /// filter can be used while it is held.
    pub fn take_state<T: Any>(&mut self) -> Option<Box<T>> {
        let slot = self.slot();
        match slot.state.take()?.downcast::<T>() {
            Ok(v) => Some(v),
            Err(other) => {
                slot.state = Some(other);
                None
            }
        }
    }

    /// Keeps `value` for this response's next calls.
    pub fn put_state<T: Any>(&mut self, value: Box<T>) {
        self.slot().state = Some(value);
    }

    /// Keeps `value` for this response's next calls.
    pub fn set_state<T: Any>(&mut self, value: T) -> &mut T {
        let slot = self.slot();
        slot.state = Some(Box::new(value));
        match slot.state.as_mut().and_then(|s| s.downcast_mut()) {
            Some(v) => v,
            None => unreachable!("the state was just set to a T"),
        }
    }

    /// Takes the filter out of the response: later brigades go past it.
    pub fn remove(&self) {
        // SAFETY: live filter, removed as httpd's API removes one.
        unsafe { ffi::ap_remove_output_filter(self.f) };
    }

    /// Passes the brigade handed in to the next filter as it is.
    pub fn pass_input(&self, input: &mut Input) -> apr_status_t {
        // SAFETY: live filter chain and brigade.
        unsafe { ffi::ap_pass_brigade((*self.f).next, input.bb) }
    }

    /// Adds a copy of `data` to what this filter passes on.
    pub fn send(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let out = self.slot().out;
        // SAFETY: a heap bucket copies `data` (no free function); the
        // brigade and its allocator are live.
        unsafe {
            let b = ffi::apr_bucket_heap_create(
                data.as_ptr() as *const c_char,
                data.len(),
                None,
                (*out).bucket_alloc,
            );
            ffi::gdn_brigade_insert_tail(out, b);
        }
    }

    /// Adds `len` bytes of `file` from `start` to what this filter passes
    /// on, as a file bucket (sendfile or mmap as core would use them).
    pub fn send_file(&mut self, file: &File<'r>, start: u64, len: u64) {
        if len == 0 {
            return;
        }
        let out = self.slot().out;
        // SAFETY: the file lives in the request pool, as the brigade does.
        unsafe {
            ffi::gdn_insert_file(
                self.req.r,
                out,
                file.fd,
                start as ffi::apr_off_t,
                len as ffi::apr_off_t,
            )
        };
    }

    /// Adds a FLUSH bucket to what this filter passes on.
    pub fn send_flush(&mut self) {
        let out = self.slot().out;
        // SAFETY: as in `send`.
        unsafe {
            let b = ffi::apr_bucket_flush_create((*out).bucket_alloc);
            ffi::gdn_brigade_insert_tail(out, b);
        }
    }

    /// Moves the first bucket handed in to what this filter passes on.
    pub fn send_first_of(&mut self, input: &mut Input) {
        let out = self.slot().out;
        // SAFETY: both brigades are live; the bucket exists (checked).
        unsafe {
            let b = ffi::gdn_brigade_first(input.bb);
            if !b.is_null() {
                ffi::gdn_bucket_move(b, out);
            }
        }
    }

    /// Passes what this filter made to the next filter and empties it.
    pub fn pass(&mut self) -> apr_status_t {
        let out = self.slot().out;
        // SAFETY: live filter chain and brigade.
        unsafe {
            if ffi::gdn_brigade_first(out).is_null() {
                return 0;
            }
            let st = ffi::ap_pass_brigade((*self.f).next, out);
            ffi::apr_brigade_cleanup(out.cast());
            st
        }
    }
}

impl Input {
    /// The first bucket, read (a blocking read where `block`): `None`
    /// when the brigade is empty; an error status, `APR_EAGAIN` among
    /// them (see [`is_eagain`]), when its data is not to be had.
    pub fn first(&self, block: bool) -> Option<Result<Piece<'_>, apr_status_t>> {
        // SAFETY: live brigade.
        let b = unsafe { ffi::gdn_brigade_first(self.bb) };
        if b.is_null() {
            return None;
        }
        // SAFETY: b is a live bucket of the brigade.
        let kind = unsafe { ffi::gdn_bucket_kind(b) };
        Some(match kind {
            1 => Ok(Piece::Eos),
            2 => Ok(Piece::Flush),
            3 => Ok(Piece::Meta),
            _ => {
                let (mut data, mut len) = (ptr::null(), 0usize);
                // SAFETY: a data bucket; its bytes live until it is
                // deleted, which takes `&mut self`.
                let st = unsafe { ffi::gdn_bucket_read(b, &mut data, &mut len, block as i32) };
                if st != 0 {
                    return Some(Err(st));
                }
                if data.is_null() || len == 0 {
                    Ok(Piece::Data(&[]))
                } else {
                    // SAFETY: as above.
                    Ok(Piece::Data(unsafe {
                        std::slice::from_raw_parts(data.cast(), len)
                    }))
                }
            }
        })
    }

    /// The file the brigade holds whole, as core's default handler
    /// passes a static file: one file bucket from its first byte to its
    /// end, then EOS, and nothing else. `None` for any other brigade, or
    /// when the bucket's length is not the open file's size.
    pub fn whole_file<'r>(&self, _req: &Request<'r>) -> Option<File<'r>> {
        let mut len: ffi::apr_off_t = 0;
        // SAFETY: live brigade; out-parameter.
        let fd = unsafe { ffi::gdn_brigade_whole_file(self.bb, &mut len) };
        if fd.is_null() {
            return None;
        }
        let mut raw = ffi::apr_finfo_t::default();
        // SAFETY: the bucket's file is open while the brigade holds it,
        // and lives in a pool at least as long as the request's.
        let st = unsafe { ffi::apr_file_info_get(&mut raw, ffi::APR_FINFO_MIN as i32, fd) };
        if st != 0 && st != ffi::APR_INCOMPLETE as apr_status_t {
            return None;
        }
        let file = File {
            fd,
            info: Finfo { raw },
            _life: PhantomData,
        };
        (file.info().size() == u64::try_from(len).ok()?).then_some(file)
    }

    /// Deletes the first bucket.
    pub fn drop_first(&mut self) {
        // SAFETY: live brigade; NULL checked.
        unsafe {
            let b = ffi::gdn_brigade_first(self.bb);
            if !b.is_null() {
                ffi::gdn_bucket_delete(b);
            }
        }
    }
}

/// Whether a read's status says its data is not there yet.
pub fn is_eagain(st: apr_status_t) -> bool {
    // SAFETY: a status test.
    unsafe { ffi::gdn_status_is_eagain(st) != 0 }
}

/// The C entry httpd calls; `run` is the module's filter.
pub(crate) fn call(
    f: *mut ffi::ap_filter_t,
    bb: *mut ffi::apr_bucket_brigade,
    run: impl FnOnce(&mut Filter<'_>, &mut Input) -> apr_status_t,
) -> apr_status_t {
    if f.is_null() || bb.is_null() {
        return ffi::APR_EGENERAL as apr_status_t;
    }
    // SAFETY: httpd passes a live filter and brigade.
    let mut filter = unsafe { Filter::from_raw(f) };
    let mut input = Input { bb };
    run(&mut filter, &mut input)
}

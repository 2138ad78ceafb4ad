//! A served file's validators, as core's handler makes them: r->mtime
//! and `Last-Modified` (`ap_update_mtime`, `ap_set_last_modified`), and
//! the ETag (`ap_make_etag_ex`, honouring FileETag), with a suffix for a
//! representation of the file. Where those functions read nothing but a
//! file's stat, FileETag and a time they no longer depend on, the same
//! `ValidatorInputs` give the same fields: the fields made once
//! (`Validators`) serve later requests as they are.

use super::{ffi, File, Finfo, Request};
use std::ffi::{c_int, CStr};
use std::ptr;

/// Room for a tag of three 64-bit hex numbers, weak, quoted.
const ETAG_MAX: usize = 64;
/// `APR_RFC822_DATE_LEN` less its NUL.
const DATE_LEN: usize = 29;
/// Within a second of its modification a file's tag is weak.
const SECOND: i64 = 1_000_000;

/// Everything `ap_set_last_modified` and `ap_make_etag_ex` read of a
/// request and a file whose fields do not depend on the time any more:
/// the modification time is not after the request's and the file is a
/// second old or more (core's tag is weak within the second), the
/// request is HTTP/1.0 or later, and FileETag asks for no digest of the
/// bytes (nor a module for a strong tag, nor a variant list for one of
/// its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ValidatorInputs {
    /// r->mtime once updated: what `Last-Modified` says.
    mtime: i64,
    inode: u64,
    size: u64,
    file_mtime: i64,
    /// FileETag's components as merged for the request's directory.
    etag_bits: u32,
    force_weak: bool,
}

/// The `Last-Modified` and ETag (without a representation's suffix; none
/// under `FileETag None`) made for `ValidatorInputs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Validators {
    last_modified: [u8; DATE_LEN],
    etag: [u8; ETAG_MAX],
    etag_len: u8,
}

impl Validators {
    fn of(last_modified: &[u8], etag: &[u8]) -> Option<Validators> {
        let mut v = Validators {
            last_modified: last_modified.try_into().ok()?,
            etag: [0; ETAG_MAX],
            etag_len: u8::try_from(etag.len()).ok()?,
        };
        v.etag.get_mut(..etag.len())?.copy_from_slice(etag);
        Some(v)
    }

    fn etag(&self) -> &[u8] {
        &self.etag[..usize::from(self.etag_len)]
    }
}

impl<'r> Request<'r> {
    /// `ap_update_mtime` + `ap_set_last_modified` for a served file.
    pub fn set_last_modified(&self, f: &Finfo) {
        self.update_mtime(f);
        // SAFETY: live request.
        unsafe { ffi::ap_set_last_modified(self.r) }
    }

    /// `ap_update_mtime` for the file `f` is served from.
    pub fn update_mtime(&self, f: &Finfo) {
        // SAFETY: live request.
        unsafe { ffi::ap_update_mtime(self.r, f.raw.mtime) }
    }

    /// What this request's validators for `f` are made of, once
    /// `update_mtime` ran; `None` where they depend on more (see
    /// `ValidatorInputs`).
    pub fn validator_inputs(&self, f: &Finfo, force_weak: bool) -> Option<ValidatorInputs> {
        let r = self.raw();
        let settled = r.request_time.checked_sub(f.raw.mtime)? >= SECOND;
        if r.assbackwards != 0
            || f.raw.filetype != ffi::apr_filetype_e_APR_REG
            || r.mtime > r.request_time
            || !settled
        {
            return None;
        }
        // SAFETY: live request.
        let bits = unsafe { ffi::gdn_etag_bits(self.r) };
        Some(ValidatorInputs {
            mtime: r.mtime,
            inode: f.raw.inode,
            size: u64::try_from(f.raw.size).ok()?,
            file_mtime: f.raw.mtime,
            etag_bits: u32::try_from(bits).ok()?,
            force_weak,
        })
    }

    /// Sets `Last-Modified` and the ETag of `f` (`file`, where opened:
    /// a digest ETag reads it) as core does, `-suffix` inside the tag's
    /// closing quote; returns the fields made, for `set_validators_made`
    /// with the same inputs.
    pub fn set_validators(
        &self,
        f: &Finfo,
        file: Option<&File<'_>>,
        path: &CStr,
        suffix: &str,
        force_weak: bool,
    ) -> Option<Validators> {
        // SAFETY: live request.
        unsafe { ffi::ap_set_last_modified(self.r) };
        let etag = self.make_etag(f, file, path, force_weak);
        if let Some(tag) = etag.filter(|t| !t.is_empty()) {
            self.set_etag_value(tag, suffix);
        }
        Validators::of(self.header_out(c"Last-Modified")?, etag?)
    }

    /// Sets the fields `set_validators` made for the same inputs.
    pub fn set_validators_made(&self, v: &Validators, suffix: &str) {
        self.set_header_value(c"Last-Modified", v.last_modified);
        if !v.etag().is_empty() {
            self.set_etag_value(v.etag(), suffix);
        }
    }

    /// `ap_make_etag_ex`'s tag for `f`, in the pool; empty under
    /// `FileETag None`.
    fn make_etag(
        &self,
        f: &Finfo,
        file: Option<&File<'_>>,
        path: &CStr,
        force_weak: bool,
    ) -> Option<&'r [u8]> {
        let mut finfo = f.raw;
        let mut er = ffi::etag_rec {
            vlist_validator: ptr::null(),
            request_time: self.raw().request_time,
            finfo: &mut finfo,
            pathname: path.as_ptr(),
            fd: file.map_or(ptr::null_mut(), |f| f.fd),
            force_weak: c_int::from(force_weak),
        };
        // SAFETY: er's pointers are valid for the call.
        let tag = unsafe { ffi::ap_make_etag_ex(self.r, &mut er) };
        // SAFETY: a pool string from ap_make_etag_ex, or none.
        (!tag.is_null()).then(|| unsafe { CStr::from_ptr(tag) }.to_bytes())
    }

    /// Sets the ETag `tag` with `-suffix` inside its closing quote.
    fn set_etag_value(&self, tag: &[u8], suffix: &str) {
        let (head, close) = match tag.split_last() {
            Some((b'"', head)) if !suffix.is_empty() => (head, &b"\""[..]),
            _ => (tag, &b""[..]),
        };
        let dash: &[u8] = if suffix.is_empty() { b"" } else { b"-" };
        self.set_header_parts(c"ETag", &[head, dash, suffix.as_bytes(), close]);
    }
}

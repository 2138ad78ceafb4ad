//! The only place with `unsafe`: httpd/APR bindings and safe wrappers for
//! request, pool, table, brigade, file and log, plus the building blocks of
//! a module (`module`). Names no application type.
//!
//! Everything handed out borrows the request and lives no longer than its
//! pool; strings handed to `apr_table_setn` are `'static` or pool copies.
#![allow(unsafe_code)]

pub mod ffi;
pub mod helper;
pub mod module;
pub mod shm;

use std::ffi::{c_char, c_int, c_void, CStr};
use std::io;
use std::marker::PhantomData;
use std::ptr;

pub use ffi::{apr_status_t, M_GET, M_INVALID, M_OPTIONS};
pub use module::{Args, Command, Config, Directive, Hook, Module, Order, PostConfig, Scope, Takes};

/// What a hook returns, or an HTTP status: httpd mixes both in one `int`,
/// this type names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct Status(c_int);

impl Status {
    /// Handled (or, for a fixup, nothing to object to).
    pub const OK: Status = Status(ffi::OK as c_int);
    /// Not this module's business.
    pub const DECLINED: Status = Status(ffi::DECLINED);
    /// The response is complete; nothing more may be sent.
    pub const DONE: Status = Status(ffi::DONE);
    /// A filter already answered; the handler has nothing more to say.
    pub const FILTER_ERROR: Status = Status(ffi::AP_FILTER_ERROR);
    pub const HTTP_OK: Status = Status(ffi::HTTP_OK as c_int);
    pub const FORBIDDEN: Status = Status(ffi::HTTP_FORBIDDEN as c_int);
    pub const NOT_FOUND: Status = Status(ffi::HTTP_NOT_FOUND as c_int);
    pub const METHOD_NOT_ALLOWED: Status = Status(ffi::HTTP_METHOD_NOT_ALLOWED as c_int);
    pub const NOT_ACCEPTABLE: Status = Status(ffi::HTTP_NOT_ACCEPTABLE as c_int);
    pub const INTERNAL_SERVER_ERROR: Status = Status(ffi::HTTP_INTERNAL_SERVER_ERROR as c_int);
    pub const NOT_IMPLEMENTED: Status = Status(ffi::HTTP_NOT_IMPLEMENTED as c_int);
    pub const BAD_GATEWAY: Status = Status(ffi::HTTP_BAD_GATEWAY as c_int);
    pub const SERVICE_UNAVAILABLE: Status = Status(ffi::HTTP_SERVICE_UNAVAILABLE as c_int);

    /// The value httpd sees.
    pub const fn code(self) -> c_int {
        self.0
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A file version: device, inode, mtime, ctime (microseconds) and size.
/// Two equal versions are the same bytes as far as a static server can
/// tell; the ctime tells apart an in-place rewrite that kept the size
/// and put the mtime back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileVersion {
    pub device: u64,
    pub inode: u64,
    pub mtime: i64,
    pub ctime: i64,
    pub size: u64,
}

/// Log levels, as `LogLevel` names them.
#[derive(Clone, Copy, Debug)]
pub enum Level {
    Err = ffi::APLOG_ERR as isize,
    Warn = ffi::APLOG_WARNING as isize,
    Notice = ffi::APLOG_NOTICE as isize,
    Info = ffi::APLOG_INFO as isize,
    Debug = ffi::APLOG_DEBUG as isize,
}

/// What is at a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    Missing,
    Regular,
    Directory,
    Symlink,
    Other,
}

/// What `Options` say about symlinks in the request's directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymlinkPolicy {
    Always,
    IfOwnerMatch,
    Never,
}

/// A stat result kept in the request pool, for ETags.
#[derive(Clone, Copy)]
pub struct Finfo {
    raw: ffi::apr_finfo_t,
}

impl Finfo {
    pub fn kind(&self) -> FileKind {
        kind_of(self.raw.filetype)
    }
    /// Size in bytes.
    pub fn size(&self) -> u64 {
        u64::try_from(self.raw.size).unwrap_or(0)
    }
    /// Modification time, microseconds since the epoch.
    pub fn mtime(&self) -> i64 {
        self.raw.mtime
    }
    /// Inode change time, microseconds since the epoch: moves whenever
    /// the content is rewritten, even with the old mtime put back.
    pub fn ctime(&self) -> i64 {
        self.raw.ctime
    }
    pub fn device(&self) -> u64 {
        self.version().device
    }
    pub fn inode(&self) -> u64 {
        self.version().inode
    }
    /// Identity of this file version.
    // APR's dev/ino types are u64 here but narrower on other platforms.
    #[allow(clippy::useless_conversion)]
    pub fn version(&self) -> FileVersion {
        FileVersion {
            device: u64::from(self.raw.device),
            inode: u64::from(self.raw.inode),
            mtime: self.raw.mtime,
            ctime: self.raw.ctime,
            size: self.size(),
        }
    }

    /// Whether both describe the same file (device and inode).
    pub fn same_file(&self, other: &Finfo) -> bool {
        self.raw.device == other.raw.device && self.raw.inode == other.raw.inode
    }

    /// Owner uid, for `SymLinksIfOwnerMatch`.
    pub fn user(&self) -> u32 {
        self.raw.user
    }
}

fn kind_of(t: ffi::apr_filetype_e) -> FileKind {
    match t {
        ffi::apr_filetype_e_APR_NOFILE => FileKind::Missing,
        ffi::apr_filetype_e_APR_REG => FileKind::Regular,
        ffi::apr_filetype_e_APR_DIR => FileKind::Directory,
        ffi::apr_filetype_e_APR_LNK => FileKind::Symlink,
        _ => FileKind::Other,
    }
}

/// A borrowed `request_rec`.
pub struct Request<'r> {
    r: *mut ffi::request_rec,
    _life: PhantomData<&'r mut ffi::request_rec>,
}

impl<'r> Request<'r> {
    /// # Safety
    /// `r` is a live request for the duration of `'r`.
    pub(crate) unsafe fn from_raw(r: *mut ffi::request_rec) -> Request<'r> {
        Request {
            r,
            _life: PhantomData,
        }
    }

    fn raw(&self) -> &ffi::request_rec {
        // SAFETY: valid for 'r by construction.
        unsafe { &*self.r }
    }

    /// Whether `r->handler` is `name` (a byte comparison: every hook asks).
    pub fn handler_is(&self, name: &CStr) -> bool {
        let p = self.raw().handler;
        // SAFETY: a non-NULL handler is a NUL-terminated string.
        !p.is_null() && unsafe { CStr::from_ptr(p) } == name
    }

    /// `r->filename` as bytes-safe C string.
    pub fn filename(&self) -> Option<&'r CStr> {
        let p = self.raw().filename;
        // SAFETY: pool string.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) })
    }

    /// Whether the URL carried path info after the file (and the
    /// configuration does not accept it).
    pub fn rejects_path_info(&self) -> bool {
        let r = self.raw();
        // SAFETY: a non-NULL path_info is a NUL-terminated pool string.
        let has = !r.path_info.is_null() && unsafe { *r.path_info } != 0;
        has && r.used_path_info != ffi::AP_REQ_ACCEPT_PATH_INFO as c_int
    }

    /// A subrequest (e.g. mod_dir's index lookup or SSI includes).
    pub fn is_subrequest(&self) -> bool {
        !self.raw().main.is_null()
    }

    /// What `r->finfo` says is at `r->filename`.
    pub fn finfo(&self) -> Finfo {
        Finfo {
            raw: self.raw().finfo,
        }
    }

    /// Replaces `r->finfo` (the DirectoryIndex fixup makes a sibling
    /// visible to mod_dir this way).
    pub fn set_finfo(&self, f: &Finfo) {
        // SAFETY: plain struct write into the live request.
        unsafe { (*self.r).finfo = f.raw }
    }

    /// `r->method_number`: one of the `M_*` numbers (HEAD is `M_GET`).
    pub fn method_number(&self) -> u32 {
        u32::try_from(self.raw().method_number).unwrap_or(ffi::M_INVALID)
    }

    /// HEAD request: headers only.
    pub fn header_only(&self) -> bool {
        self.raw().header_only != 0
    }

    /// Marks GET (and so HEAD) and OPTIONS as the methods this resource
    /// allows, for `Allow` on 405 and OPTIONS.
    pub fn allow_get_options(&self) {
        // SAFETY: live request; the list ends with -1 as the API requires.
        unsafe {
            ffi::ap_allow_standard_methods(
                self.r,
                0,
                ffi::M_GET as c_int,
                ffi::M_OPTIONS as c_int,
                -1 as c_int,
            )
        };
    }

    /// Reads and drops any request body, as core does before answering.
    pub fn discard_body(&self) -> Status {
        // SAFETY: live request.
        Status(unsafe { ffi::ap_discard_request_body(self.r) })
    }

    /// Answers OPTIONS as core does.
    pub fn send_options(&self) -> Status {
        // SAFETY: live request.
        Status(unsafe { ffi::ap_send_http_options(self.r) })
    }

    /// A request header as bytes, `None` if absent.
    pub fn header_in(&self, name: &CStr) -> Option<&'r [u8]> {
        // SAFETY: table strings live in the request pool.
        unsafe {
            let p = ffi::apr_table_get(self.raw().headers_in, name.as_ptr());
            (!p.is_null()).then(|| CStr::from_ptr(p).to_bytes())
        }
    }

    /// A response header set so far (`headers_out`).
    pub fn header_out(&self, name: &CStr) -> Option<&'r [u8]> {
        // SAFETY: table strings live in the request pool.
        unsafe {
            let p = ffi::apr_table_get(self.raw().headers_out, name.as_ptr());
            (!p.is_null()).then(|| CStr::from_ptr(p).to_bytes())
        }
    }

    /// Removes a request header (e.g. Range where ranges are not offered).
    pub fn unset_header_in(&self, name: &CStr) {
        // SAFETY: live table.
        unsafe { ffi::apr_table_unset(self.raw().headers_in, name.as_ptr()) }
    }

    /// Whether no environment variable is set at all (the common case,
    /// which spares looking up each name).
    pub fn env_is_empty(&self) -> bool {
        // SAFETY: live table.
        unsafe { ffi::apr_is_empty_table(self.raw().subprocess_env) != 0 }
    }

    /// Whether an environment variable (SetEnvIf, BrowserMatch) is set.
    pub fn env_is_set(&self, name: &CStr) -> bool {
        // SAFETY: live table.
        unsafe { !ffi::apr_table_get(self.raw().subprocess_env, name.as_ptr()).is_null() }
    }

    /// Sets a response header from static strings (no copy).
    pub fn set_header_static(&self, name: &'static CStr, value: &'static CStr) {
        // SAFETY: 'static strings outlive the pool.
        unsafe { ffi::apr_table_setn(self.raw().headers_out, name.as_ptr(), value.as_ptr()) }
    }

    /// Sets a response header, copying both strings into the pool.
    pub fn set_header(&self, name: &str, value: &CStr) {
        let n = self.pool_str(name);
        // SAFETY: pool copies; apr_table_set copies again anyway.
        unsafe { ffi::apr_table_set(self.raw().headers_out, n, value.as_ptr()) }
    }

    /// Sets a response header to a value copied into the pool.
    pub fn set_header_value(&self, name: &'static CStr, value: &str) {
        let v = self.pool_str(value);
        // SAFETY: static name, pool copy of the value.
        unsafe { ffi::apr_table_setn(self.raw().headers_out, name.as_ptr(), v) }
    }

    /// Adds a request header's name to `Vary` (http_filters merges
    /// and dedups the list).
    pub fn vary(&self, header: &'static CStr) {
        // SAFETY: static strings, so mergen needs no copy.
        unsafe { ffi::apr_table_mergen(self.raw().headers_out, c"Vary".as_ptr(), header.as_ptr()) }
    }

    /// Also on error responses (406/500), which only keep err_headers_out.
    pub fn vary_on_error(&self, header: &'static CStr) {
        // SAFETY: static strings, so mergen needs no copy.
        unsafe {
            ffi::apr_table_mergen(
                self.raw().err_headers_out,
                c"Vary".as_ptr(),
                header.as_ptr(),
            )
        }
    }

    /// The path of the request line as the client sent it (still
    /// percent-encoded), without the query.
    pub fn raw_path(&self) -> Option<&'r [u8]> {
        let p = self.raw().unparsed_uri;
        // SAFETY: a non-NULL unparsed_uri is a NUL-terminated pool string.
        let uri = (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_bytes())?;
        let end = uri.iter().position(|&b| b == b'?' || b == b'#');
        Some(&uri[..end.unwrap_or(uri.len())])
    }

    /// Sets `r->content_encoding`, which the header filter turns into
    /// `Content-Encoding` and compressing filters respect.
    pub fn set_content_encoding(&self, token: &'static CStr) {
        // SAFETY: static string.
        unsafe { (*self.r).content_encoding = token.as_ptr() }
    }

    /// The query string (`r->args`), without its `?`.
    pub fn query(&self) -> Option<&'r [u8]> {
        let p = self.raw().args;
        // SAFETY: a string in the request pool.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_bytes())
    }

    /// The response's `Content-Encoding` as it stands: the header a
    /// filter (mod_deflate, mod_brotli) set, else `r->content_encoding`.
    pub fn content_encoding(&self) -> Option<&'r [u8]> {
        self.header_out(c"Content-Encoding").or_else(|| {
            let p = self.raw().content_encoding;
            // SAFETY: a string in the request pool, or static.
            (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_bytes())
        })
    }

    /// Sets a request note (for `%{gzip-disk-ng}n` in LogFormat).
    pub fn set_note(&self, name: &'static CStr, value: &'static CStr) {
        // SAFETY: both static, so setn needs no copy.
        unsafe { ffi::apr_table_setn(self.raw().notes, name.as_ptr(), value.as_ptr()) }
    }

    /// When the request arrived, in seconds since the epoch.
    pub fn request_time_secs(&self) -> i64 {
        self.raw().request_time / 1_000_000
    }

    /// When the request began, in microseconds since the epoch.
    pub fn request_time_us(&self) -> i64 {
        self.raw().request_time
    }

    /// Sets a request note to the concatenation of `parts`, copied into
    /// the request pool.
    pub fn set_note_copy(&self, name: &'static CStr, parts: &[&[u8]]) {
        let v = self.pool_concat(parts);
        // SAFETY: a static name and a pool string.
        unsafe { ffi::apr_table_setn(self.raw().notes, name.as_ptr(), v) }
    }

    /// Adds request notes holding the decimals of `N` numbers, written
    /// straight into one request-pool block. Added, not set: for notes made
    /// once per request this skips the search for an earlier value.
    pub fn add_note_numbers<const N: usize>(&self, notes: [(&'static CStr, u64); N]) {
        // SAFETY: a block of N 21-byte slots in the request pool (palloc
        // aligns to 8), each holding at most 20 digits and their NUL; the
        // notes point into it and live as long as the pool.
        unsafe {
            let slots = ffi::apr_palloc(self.raw().pool, 21 * N) as *mut [u8; 21];
            for (i, (name, n)) in notes.into_iter().enumerate() {
                let slot = &mut *slots.add(i);
                let first = write_decimal(n, slot);
                let v = slot.as_ptr().add(first) as *const c_char;
                ffi::apr_table_addn(self.raw().notes, name.as_ptr(), v);
            }
        }
    }

    /// A request note.
    pub fn notes_get(&self, name: &CStr) -> Option<&'r [u8]> {
        // SAFETY: table strings live in the request pool.
        unsafe {
            let p = ffi::apr_table_get(self.raw().notes, name.as_ptr());
            (!p.is_null()).then(|| CStr::from_ptr(p).to_bytes())
        }
    }

    /// Copies a Rust string into the request pool.
    fn pool_str(&self, s: &str) -> *const c_char {
        // SAFETY: apr_pstrmemdup copies len bytes and NUL-terminates.
        unsafe { ffi::apr_pstrmemdup(self.raw().pool, s.as_ptr().cast(), s.len()) }
    }

    /// `base` + `suffix`, in the request pool.
    pub fn path_with_suffix(&self, base: &CStr, suffix: impl AsRef<[u8]>) -> &'r CStr {
        let p = self.pool_concat(&[base.to_bytes(), suffix.as_ref()]);
        // SAFETY: a NUL-terminated pool string.
        unsafe { CStr::from_ptr(p) }
    }

    /// `lstat` (`link` true) or `stat` of a path.
    pub fn stat(&self, path: &CStr, link: bool) -> Result<Finfo, apr_status_t> {
        let mut raw = ffi::apr_finfo_t::default();
        let wanted = ffi::APR_FINFO_MIN | if link { ffi::APR_FINFO_LINK } else { 0 };
        // SAFETY: raw is a valid out-parameter; pool is live.
        let st = unsafe { ffi::apr_stat(&mut raw, path.as_ptr(), wanted as i32, self.raw().pool) };
        if st == 0 || st == ffi::APR_INCOMPLETE as apr_status_t {
            Ok(Finfo { raw })
        } else {
            Err(st)
        }
    }

    /// Whether Apache's rules could treat `filename + suffix` differently
    /// from the request's own file. False only where the configuration
    /// was read as one whose sections alone tell names apart (see
    /// csrc/access.c) and those sections match both names alike.
    pub fn sibling_rules_may_differ(&self, suffix: &CStr) -> bool {
        // SAFETY: live request with a filename (checked by the caller's
        // lookup); the shim allocates from the request pool.
        unsafe { ffi::gdn_sibling_rules_may_differ(self.r, suffix.as_ptr()) != 0 }
    }

    /// Why this request's server asks Apache about every sibling: the
    /// first thing in its configuration outside the list the short
    /// answer needs; `None` where sections alone decide.
    pub fn short_answer_refused(&self) -> Option<&'r CStr> {
        // SAFETY: live request; the text lives in the configuration pool.
        let p = unsafe { ffi::gdn_short_answer_refused(self.r) };
        // SAFETY: NUL-terminated when not NULL.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) })
    }

    /// Asks Apache (a GET subrequest for the sibling's URI, built as httpd
    /// builds one) whether it would serve `path`, the request's file plus
    /// `suffix`: the file it found there, or the status it refused with.
    pub fn ask_sibling(&self, path: &CStr, suffix: &CStr) -> Result<Finfo, Status> {
        let mut raw = ffi::apr_finfo_t::default();
        // SAFETY: live request; the subrequest is destroyed by the shim
        // before it returns, and `raw` is copied out of it.
        let st = unsafe { ffi::gdn_sibling_ask(self.r, path.as_ptr(), suffix.as_ptr(), &mut raw) };
        if st == ffi::HTTP_OK as c_int {
            Ok(Finfo { raw })
        } else {
            Err(Status(st))
        }
    }

    /// Whether this is the subrequest that asks Apache about a sibling.
    pub fn is_sibling_check(&self) -> bool {
        // SAFETY: live request.
        unsafe { ffi::gdn_in_sibling_check(self.r) != 0 }
    }

    /// Whether `Options` allow following symlinks here: `Always`,
    /// `IfOwnerMatch`, or `Never`.
    pub fn symlink_policy(&self) -> SymlinkPolicy {
        // SAFETY: live request.
        let opts = unsafe { ffi::ap_allow_options(self.r) } as u32;
        if opts & ffi::OPT_SYM_LINKS != 0 {
            SymlinkPolicy::Always
        } else if opts & ffi::OPT_SYM_OWNER != 0 {
            SymlinkPolicy::IfOwnerMatch
        } else {
            SymlinkPolicy::Never
        }
    }

    /// Gives an error status a plain-text body (as `ErrorDocument` would).
    pub fn custom_response(&self, status: Status, text: &str) {
        let t = self.pool_str(text);
        // SAFETY: pool string; httpd copies it into the request's config.
        unsafe { ffi::ap_custom_response(self.r, status.0, t) }
    }

    /// Opens a file as core's handler does (sendfile per EnableSendfile).
    pub fn open(&self, path: &CStr) -> Result<File<'r>, apr_status_t> {
        let mut fd: *mut ffi::apr_file_t = ptr::null_mut();
        // SAFETY: shim opens into the request pool.
        let st = unsafe { ffi::gdn_open_for_send(self.r, path.as_ptr(), &mut fd) };
        if st != 0 || fd.is_null() {
            return Err(st);
        }
        let mut raw = ffi::apr_finfo_t::default();
        // SAFETY: fd was just opened.
        let st = unsafe { ffi::apr_file_info_get(&mut raw, ffi::APR_FINFO_MIN as i32, fd) };
        if st != 0 && st != ffi::APR_INCOMPLETE as apr_status_t {
            // SAFETY: fd is open and owned here.
            unsafe { ffi::apr_file_close(fd) };
            return Err(st);
        }
        Ok(File {
            fd,
            info: Finfo { raw },
            _life: PhantomData,
        })
    }

    /// Opens a file as `open` does, but not through a symlink at its last
    /// component (O_NOFOLLOW: ELOOP there), for files in a directory
    /// whose entries another user might have planted. APR 1 has no such
    /// flag: the descriptor is opened here, handed to APR, and closed
    /// with the request pool.
    pub fn open_nofollow(&self, path: &CStr) -> Result<File<'r>, apr_status_t> {
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK;
        // SAFETY: a NUL-terminated path.
        let os = unsafe { libc::open(path.as_ptr(), flags) };
        if os < 0 {
            return Err(io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO));
        }
        let pool = self.raw().pool;
        // SAFETY: the descriptor is closed by this cleanup, whatever follows.
        unsafe {
            ffi::apr_pool_cleanup_register(
                pool,
                os as isize as *mut c_void,
                Some(close_fd),
                Some(ffi::apr_pool_cleanup_null),
            )
        };
        // SAFETY: live request.
        let sendfile = unsafe { ffi::gdn_sendfile_enabled(self.r) } != 0;
        let mut aflags = (ffi::APR_FOPEN_READ | ffi::APR_FOPEN_BINARY) as i32;
        if sendfile {
            aflags |= ffi::APR_FOPEN_SENDFILE_ENABLED as i32;
        }
        let mut fd: *mut ffi::apr_file_t = ptr::null_mut();
        let mut osfd: c_int = os;
        // SAFETY: wraps the open descriptor in a pool-allocated apr_file_t.
        let st = unsafe { ffi::apr_os_file_put(&mut fd, &mut osfd, aflags, pool) };
        if st != 0 || fd.is_null() {
            return Err(st);
        }
        let mut raw = ffi::apr_finfo_t::default();
        // SAFETY: fd wraps an open descriptor.
        let st = unsafe { ffi::apr_file_info_get(&mut raw, ffi::APR_FINFO_MIN as i32, fd) };
        if st != 0 && st != ffi::APR_INCOMPLETE as apr_status_t {
            return Err(st);
        }
        Ok(File {
            fd,
            info: Finfo { raw },
            _life: PhantomData,
        })
    }

    /// `ap_update_mtime` + `ap_set_last_modified` for a served file.
    pub fn set_last_modified(&self, f: &Finfo) {
        // SAFETY: live request.
        unsafe {
            ffi::ap_update_mtime(self.r, f.raw.mtime);
            ffi::ap_set_last_modified(self.r);
        }
    }

    /// Sets an ETag made as core makes one for `file` (honouring
    /// FileETag), with `-suffix` inside the closing quote.
    pub fn set_etag(&self, file: &File<'_>, path: &CStr, suffix: &str, force_weak: bool) {
        self.set_etag_raw(&file.info, file.fd, path, suffix, force_weak);
    }

    /// `set_etag` for a file known by its stat, not opened (a
    /// representation whose ETag is another file's, as a decoded copy's
    /// is its sibling's).
    pub fn set_etag_of(&self, info: &Finfo, path: &CStr, suffix: &str, force_weak: bool) {
        self.set_etag_raw(info, ptr::null_mut(), path, suffix, force_weak);
    }

    fn set_etag_raw(
        &self,
        info: &Finfo,
        fd: *mut ffi::apr_file_t,
        path: &CStr,
        suffix: &str,
        force_weak: bool,
    ) {
        let mut finfo = info.raw;
        let mut er = ffi::etag_rec {
            vlist_validator: ptr::null(),
            request_time: self.raw().request_time,
            finfo: &mut finfo,
            pathname: path.as_ptr(),
            fd,
            force_weak: c_int::from(force_weak),
        };
        // SAFETY: er's pointers are valid for the call.
        let tag = unsafe { ffi::ap_make_etag_ex(self.r, &mut er) };
        if tag.is_null() {
            return;
        }
        // SAFETY: pool string from ap_make_etag_ex.
        let t = unsafe { CStr::from_ptr(tag) }.to_bytes();
        if t.is_empty() {
            // `FileETag None`: no ETag at all, Last-Modified validates.
            return;
        }
        if suffix.is_empty() {
            // SAFETY: tag is a pool string.
            unsafe { ffi::apr_table_setn(self.raw().headers_out, c"ETag".as_ptr(), tag) };
            return;
        }
        let (head, close) = match t.split_last() {
            Some((b'"', head)) => (head, &b"\""[..]),
            _ => (t, &b""[..]),
        };
        let v = self.pool_concat(&[head, b"-", suffix.as_bytes(), close]);
        // SAFETY: pool string.
        unsafe { ffi::apr_table_setn(self.raw().headers_out, c"ETag".as_ptr(), v) }
    }

    /// The concatenation of `parts` as a NUL-terminated pool string.
    fn pool_concat(&self, parts: &[&[u8]]) -> *const c_char {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        // SAFETY: len + 1 bytes allocated in the pool and filled in full.
        unsafe {
            let p = ffi::apr_palloc(self.raw().pool, len + 1) as *mut u8;
            let mut at = 0;
            for part in parts {
                ptr::copy_nonoverlapping(part.as_ptr(), p.add(at), part.len());
                at += part.len();
            }
            *p.add(len) = 0;
            p as *const c_char
        }
    }

    /// Whether the request came over HTTP/2: its connection is a stream of
    /// a primary connection.
    pub fn is_http2_stream(&self) -> bool {
        // SAFETY: the connection outlives the request.
        unsafe { !(*self.raw().connection).master.is_null() }
    }

    /// Whether `EnableSendfile` is on for the request's directory (off
    /// unless set, as in Debian's default configuration).
    pub fn sendfile_enabled(&self) -> bool {
        // SAFETY: live request.
        unsafe { ffi::gdn_sendfile_enabled(self.r) != 0 }
    }

    /// `Accept-Ranges: bytes` (or none when MaxRanges forbids).
    pub fn set_accept_ranges(&self) {
        // SAFETY: live request.
        unsafe { ffi::ap_set_accept_ranges(self.r) }
    }

    pub fn set_content_length(&self, len: u64) {
        // SAFETY: live request.
        unsafe { ffi::ap_set_content_length(self.r, len as ffi::apr_off_t) }
    }

    /// 304/412 per If-None-Match, If-Modified-Since, etc.
    pub fn meets_conditions(&self) -> Status {
        // SAFETY: live request.
        Status(unsafe { ffi::ap_meets_conditions(self.r) })
    }

    /// `r->status`.
    pub fn status(&self) -> Status {
        Status(self.raw().status)
    }

    pub fn set_status(&self, status: Status) {
        // SAFETY: field write.
        unsafe { (*self.r).status = status.0 }
    }

    /// Body bytes the filters passed on so far (what `%B` logs): after
    /// the last brigade, the response's.
    pub fn bytes_sent(&self) -> u64 {
        u64::try_from(self.raw().bytes_sent).unwrap_or(0)
    }

    /// Sets `Content-Type`.
    pub fn set_content_type(&self, value: &'static CStr) {
        // SAFETY: a static string, which httpd keeps without copying.
        unsafe { ffi::ap_set_content_type(self.r, value.as_ptr()) }
    }

    /// Writes body bytes through httpd's buffered output (`ap_rwrite`),
    /// as mod_status's hooks do.
    pub fn write(&self, data: &[u8]) {
        if let Ok(len) = c_int::try_from(data.len()) {
            // SAFETY: live request; ap_rwrite copies `data`.
            unsafe { ffi::ap_rwrite(data.as_ptr().cast(), len, self.r) };
        }
    }

    /// The client went away.
    pub fn aborted(&self) -> bool {
        // SAFETY: the connection outlives the request.
        unsafe { (*self.raw().connection).aborted != 0 }
    }

    /// Module `M`'s settings for the request's directory, if any scope
    /// made them.
    pub fn dir_config<M: Module>(&self) -> Option<&'r M::Dir> {
        module::config_in(self.raw().per_dir_config, M::record().as_ptr())
    }

    /// Module `M`'s settings for the request's server (or virtual host).
    pub fn server_config<M: Module>(&self) -> Option<&'r M::Server> {
        // SAFETY: a request's server outlives it.
        let s = unsafe { self.raw().server.as_ref() }?;
        module::config_in(s.module_config, M::record().as_ptr())
    }

    /// Whether a message at `level` would be logged.
    pub fn log_enabled(&self, level: Level) -> bool {
        // SAFETY: live request.
        unsafe { ffi::gdn_log_enabled(self.r, module::index(), level as c_int) != 0 }
    }

    /// Logs one line through `ap_log_rerror` with this module's index.
    pub fn log(&self, level: Level, status: apr_status_t, msg: &str) {
        if !self.log_enabled(level) {
            return;
        }
        let c = self.pool_str(&msg.replace('\0', "\\0"));
        // SAFETY: pool string, "%s" format in the shim.
        unsafe { ffi::gdn_log_r(self.r, module::index(), level as c_int, status, c) }
    }

    /// Logs lazily: the message is built only when the level is on.
    pub fn log_with(&self, level: Level, status: apr_status_t, f: impl FnOnce() -> String) {
        if self.log_enabled(level) {
            self.log(level, status, &f());
        }
    }

    /// A brigade on this request's connection.
    pub fn brigade(&self) -> Brigade<'_, 'r> {
        // SAFETY: pool and bucket allocator are live.
        let bb = unsafe {
            ffi::apr_brigade_create(self.raw().pool, (*self.raw().connection).bucket_alloc)
        };
        Brigade { bb, req: self }
    }
}

/// Writes `n` in decimal, ending at the slot's last byte, a NUL; where
/// the digits start.
fn write_decimal(mut n: u64, slot: &mut [u8; 21]) -> usize {
    let mut i = 20;
    slot[i] = 0;
    loop {
        i -= 1;
        slot[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return i;
        }
    }
}

/// Pool cleanup closing a descriptor `open_nofollow` opened.
unsafe extern "C" fn close_fd(data: *mut c_void) -> apr_status_t {
    // SAFETY: the descriptor registered with this cleanup, closed once.
    unsafe { libc::close(data as isize as c_int) };
    0
}

/// The uid Apache's children (and helpers) run as: `User` when started
/// as root, else the user that started it.
pub fn server_uid() -> u32 {
    // SAFETY: plain libc call.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return euid;
    }
    // SAFETY: set by mod_unixd while the configuration is read, only read
    // after.
    unsafe { ffi::ap_unixd_config.user_id }
}

/// How an admin names `server_uid()`: `User` as configured when started
/// as root (e.g. `www-data`), else the uid as a number.
pub fn server_user_name() -> String {
    // SAFETY: plain libc call.
    if unsafe { libc::geteuid() } != 0 {
        return server_uid().to_string();
    }
    // SAFETY: set by mod_unixd while the configuration is read (a static
    // default or a pconf string), only read after.
    let name = unsafe { ffi::ap_unixd_config.user_name };
    if name.is_null() {
        return server_uid().to_string();
    }
    // SAFETY: as above; NUL-terminated.
    unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned()
}

/// Fills `buf` from APR's random source (urandom); false if it failed.
pub fn random_bytes(buf: &mut [u8]) -> bool {
    // SAFETY: writes exactly buf.len() bytes into buf.
    unsafe { ffi::apr_generate_random_bytes(buf.as_mut_ptr(), buf.len()) == 0 }
}

/// Four bytes from APR's random source (urandom); `None` if it failed.
pub fn random_u32() -> Option<u32> {
    let mut b = [0u8; 4];
    random_bytes(&mut b).then(|| u32::from_le_bytes(b))
}

/// An open APR file in the request pool, which closes it: copies are the
/// same descriptor.
#[derive(Clone, Copy)]
pub struct File<'r> {
    fd: *mut ffi::apr_file_t,
    info: Finfo,
    _life: PhantomData<&'r ()>,
}

impl File<'_> {
    /// What `fstat` says of the open file.
    pub fn info(&self) -> &Finfo {
        &self.info
    }

    /// Reads up to `buf.len()` bytes at `offset`, without moving the
    /// stream position for later reads.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let mut os: c_int = -1;
        // SAFETY: out-parameter; fd is open.
        unsafe { ffi::apr_os_file_get(&mut os, self.fd) };
        // SAFETY: valid fd and buffer.
        let n = unsafe {
            libc::pread(
                os,
                buf.as_mut_ptr() as *mut c_void,
                buf.len(),
                offset as libc::off_t,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// Reads up to `len` bytes at `offset` into request-pool memory (no
    /// heap, no zeroing: only the bytes read are exposed).
    pub fn read_pool<'p>(
        &self,
        req: &Request<'p>,
        offset: u64,
        len: usize,
    ) -> io::Result<PoolBytes<'p>> {
        let mut os: c_int = -1;
        // SAFETY: out-parameter; fd is open.
        unsafe { ffi::apr_os_file_get(&mut os, self.fd) };
        // SAFETY: palloc gives len writable bytes living with the request
        // pool; pread writes at most len of them and we expose only those.
        unsafe {
            let p = ffi::apr_palloc(req.raw().pool, len.max(1)) as *mut u8;
            let n = libc::pread(os, p as *mut c_void, len, offset as libc::off_t);
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(PoolBytes(std::slice::from_raw_parts(p, n as usize)))
        }
    }

    /// Sequential reader from `offset` on.
    pub fn reader(&self, offset: u64) -> FileReader<'_, '_> {
        FileReader {
            file: self,
            pos: offset,
        }
    }
}

/// Bytes in the request pool, which a bucket may reference without a copy
/// for as long as the request (httpd copies them if the bucket outlives it).
#[derive(Clone, Copy)]
pub struct PoolBytes<'p>(&'p [u8]);

impl<'p> PoolBytes<'p> {
    /// The bytes, for as long as the pool.
    pub fn bytes(self) -> &'p [u8] {
        self.0
    }
}

impl std::ops::Deref for PoolBytes<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.0
    }
}

/// `Read` over an APR file with pread, so a decoder can pull from it.
pub struct FileReader<'f, 'r> {
    file: &'f File<'r>,
    pos: u64,
}

impl io::Read for FileReader<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(self.pos, buf)?;
        self.pos += n as u64;
        Ok(n)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_written_with_their_nul() {
        for n in [0u64, 7, 10, 99, 100, 120_000, u64::MAX] {
            let mut slot = [0xffu8; 21];
            let first = write_decimal(n, &mut slot);
            assert_eq!(&slot[first..20], n.to_string().as_bytes());
            assert_eq!(slot[20], 0);
        }
    }
}

//! The request: a borrowed `request_rec` and what the module asks of it
//! and tells it (headers, notes, files, conditionals, status, config).

use super::apr_status_t;
use super::{ffi, module, File, Finfo, Module, Status, SymlinkPolicy};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::io;
use std::marker::PhantomData;
use std::ptr;

/// What a twin (Apache's own request for a URI, run up to its handler)
/// came to: its status, 200 when its handler would run on the very file
/// asked for, and then what would answer it and the file it found; and,
/// whatever its status, what of its rules could tell clients apart.
#[derive(Clone)]
pub struct Asked<'r> {
    pub status: Status,
    pub twin: Option<Twin<'r>>,
    pub found: Option<(Finfo, SymlinkPolicy)>,
    pub clients: ClientRules<'r>,
    /// Why it was stopped before its access hooks (a module's hook there
    /// would have talked to the client's connection), if it was.
    pub stopped: Option<&'r CStr>,
}

/// What would answer a twin that reached its file: its handler and type
/// (`None` where unset), and the first output filter before the
/// protocol's that may change its bytes.
#[derive(Debug, Clone, Copy)]
pub struct Twin<'r> {
    pub handler: Option<&'r CStr>,
    /// The handler it had before core's `SetHandler` replaced it.
    pub handler_before_override: Option<&'r CStr>,
    pub content_type: Option<&'r CStr>,
    pub filter: Option<&'r CStr>,
}

/// What of a twin's configuration could tell clients apart: `<If>`
/// sections, its authorization (mod_authz_core's sections), `Allow` or
/// `Deny` rules, rewrite rules. `unread` says why the other modules'
/// records were not read (an ABI they were not written for, a start-up
/// read-back that failed, a twin not made); then only `if_sections` is.
#[derive(Debug, Clone, Default)]
pub struct ClientRules<'r> {
    pub unread: Option<&'r CStr>,
    pub if_sections: bool,
    pub access_rules: bool,
    pub rewrite_rules: bool,
    pub authz: Vec<AuthzNode<'r>>,
    /// The modules (by source name, `mod_ssl.c`) a section on the path,
    /// or an .htaccess, configures: their per-directory record is not
    /// the server's default.
    pub sectioned: Vec<&'r CStr>,
}

/// One node of an authorization, in order, a section's children after
/// it: a leaf's provider (`None` for a section) and arguments, whether it
/// is negated and applies to GET, a section's number of children.
#[derive(Debug, Clone, Copy)]
pub struct AuthzNode<'r> {
    pub provider: Option<&'r CStr>,
    pub args: &'r CStr,
    pub negate: bool,
    pub get: bool,
    pub children: usize,
}

/// NULL, or a NUL-terminated string of a request's pool.
fn text<'r>(p: *const c_char) -> Option<&'r CStr> {
    // SAFETY: as above; the pool outlives 'r.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) })
}

fn asked<'r>(raw: &ffi::gdn_twin) -> Asked<'r> {
    let reached = raw.status == ffi::HTTP_OK as c_int;
    let authz = if raw.authz.is_null() || raw.authz_count <= 0 {
        &[][..]
    } else {
        // SAFETY: the shim filled `authz_count` nodes in the request pool.
        unsafe { std::slice::from_raw_parts(raw.authz, raw.authz_count as usize) }
    };
    let sectioned = if raw.sectioned.is_null() || raw.sectioned_count <= 0 {
        &[][..]
    } else {
        // SAFETY: the shim filled `sectioned_count` names, each a module's
        // static name.
        unsafe { std::slice::from_raw_parts(raw.sectioned, raw.sectioned_count as usize) }
    };
    let clients = ClientRules {
        sectioned: sectioned.iter().filter_map(|&n| text(n)).collect(),
        unread: text(raw.unread),
        if_sections: raw.if_sections != 0,
        access_rules: raw.access_rules != 0,
        rewrite_rules: raw.rewrite_rules != 0,
        authz: authz
            .iter()
            .map(|n| AuthzNode {
                provider: text(n.provider),
                args: text(n.args).unwrap_or_default(),
                negate: n.negate != 0,
                get: n.get != 0,
                children: usize::try_from(n.children).unwrap_or(0),
            })
            .collect(),
    };
    Asked {
        status: Status(raw.status),
        twin: reached.then(|| Twin {
            handler: text(raw.handler),
            handler_before_override: text(raw.handler_before),
            content_type: text(raw.content_type),
            filter: text(raw.filter),
        }),
        found: reached.then(|| (Finfo { raw: raw.found }, policy_of(raw.options as u32))),
        clients,
        stopped: text(raw.stopped),
    }
}

/// A twin at the last step before its access hooks, and the request
/// that asked for it: what a module's gate reads to stop it there
/// ([`Module::twin_gate`](crate::Module::twin_gate)).
pub struct TwinGate<'r> {
    pub(crate) twin: *const ffi::request_rec,
    pub(crate) asker: *const ffi::request_rec,
    pub(crate) _life: PhantomData<&'r ffi::request_rec>,
}

impl TwinGate<'_> {
    /// Whether the client's connection (an HTTP/2 stream's: its master)
    /// is TLS.
    pub fn on_tls(&self) -> bool {
        // SAFETY: the shim passes a live twin with its connection.
        unsafe { ffi::gdn_conn_is_tls(self.twin) != 0 }
    }

    /// Whether the module of source name `module` (`mod_ssl.c`) has
    /// another per-directory record for the twin than for the request
    /// that asked: a section of the twin's name configures it. `false`
    /// where the module is not loaded.
    pub fn records_differ(&self, module: &CStr) -> bool {
        // SAFETY: two live requests; only their per-directory vectors
        // are read.
        unsafe { ffi::gdn_records_differ(self.twin, self.asker, module.as_ptr()) != 0 }
    }
}

/// A borrowed `request_rec`.
pub struct Request<'r> {
    pub(crate) r: *mut ffi::request_rec,
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

    pub(crate) fn raw(&self) -> &ffi::request_rec {
        // SAFETY: valid for 'r by construction.
        unsafe { &*self.r }
    }

    /// The handler the request had before core's `SetHandler` fixup
    /// replaced it: a `ScriptAlias`'s, an `AddHandler`'s, a proxy
    /// mapping's. `None` where it had none.
    pub fn handler_before_override(&self) -> Option<&'r CStr> {
        // SAFETY: live request; the note is a pool string or NULL.
        let p = unsafe { ffi::gdn_handler_before_override(self.r) };
        // SAFETY: a non-NULL note is a NUL-terminated pool string.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) })
    }

    /// Runs the request's handler hooks again with `handler` as its
    /// handler: the answer of that handler, as if it had been set.
    pub fn run_handler_as(&self, handler: &CStr) -> Status {
        // SAFETY: live request, called from its handler; the name is
        // copied into the request pool.
        Status(unsafe { ffi::gdn_run_handler_as(self.r, handler.as_ptr()) })
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

    /// The request this subrequest was made for, if it is one.
    pub fn main_request(&self) -> Option<Request<'r>> {
        let main = self.raw().main;
        // SAFETY: a subrequest's main request outlives it.
        (!main.is_null()).then(|| unsafe { Request::from_raw(main) })
    }

    /// Keeps `value`, copied into the request pool, as this module's state
    /// for the request in `r->request_config`: httpd's per-module slot,
    /// which, unlike a note, no other module reads or logs.
    pub fn set_request_state(&self, value: &CStr) {
        let index = super::index::get();
        if index < 0 {
            return;
        }
        // SAFETY: a NUL-terminated string copied into the live pool.
        let copy = unsafe { ffi::apr_pstrdup(self.raw().pool, value.as_ptr()) };
        // SAFETY: live request; request_config has a slot per module.
        unsafe { ffi::gdn_set_request_state(self.r, index, copy as *mut c_void) }
    }

    /// The state `set_request_state` kept for this request, if any.
    pub fn request_state(&self) -> Option<&'r CStr> {
        let index = super::index::get();
        if index < 0 {
            return None;
        }
        // SAFETY: live request; the slot is NULL or a pool string of ours.
        let p = unsafe { ffi::gdn_request_state(self.r, index) } as *const c_char;
        // SAFETY: NUL-terminated, in a pool that outlives the request.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) })
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

    /// Whether the request has a body (a `Content-Length` other than 0,
    /// or a `Transfer-Encoding`), read or not.
    pub fn has_body(&self) -> bool {
        // SAFETY: live request; only its headers are read.
        unsafe { ffi::ap_request_has_body(self.r) != 0 }
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

    /// A response header as the client will get it: `headers_out`, else
    /// `err_headers_out` (where a CGI's or FastCGI script's own headers
    /// go).
    pub fn header_out_any(&self, name: &CStr) -> Option<&'r [u8]> {
        self.header_out(name).or_else(|| {
            // SAFETY: table strings live in the request pool.
            unsafe {
                let p = ffi::apr_table_get(self.raw().err_headers_out, name.as_ptr());
                (!p.is_null()).then(|| CStr::from_ptr(p).to_bytes())
            }
        })
    }

    /// Sets a request header to a value copied into the pool (for what the
    /// handler is to read; none may hold a NUL, which would end it early).
    pub fn set_header_in(&self, name: &'static CStr, value: impl AsRef<[u8]>) {
        let v = self.pool_concat(&[value.as_ref()]);
        // SAFETY: static name, pool copy of the value.
        unsafe { ffi::apr_table_setn(self.raw().headers_in, name.as_ptr(), v) }
    }

    /// Adds a registered output filter to this response's chain (before
    /// the handler runs, where it is to see the whole response).
    pub fn add_output_filter(&self, name: &CStr) {
        // SAFETY: live request and connection; httpd looks the name up
        // among registered filters and adds nothing for an unknown one.
        unsafe {
            ffi::ap_add_output_filter(
                name.as_ptr(),
                ptr::null_mut(),
                self.r,
                self.raw().connection,
            );
        }
    }

    /// Removes a request header (e.g. Range where ranges are not offered).
    pub fn unset_header_in(&self, name: &CStr) {
        // SAFETY: live table.
        unsafe { ffi::apr_table_unset(self.raw().headers_in, name.as_ptr()) }
    }

    /// Removes a response header, from both tables it may be in.
    pub fn unset_header_out(&self, name: &CStr) {
        // SAFETY: live tables.
        unsafe {
            ffi::apr_table_unset(self.raw().headers_out, name.as_ptr());
            ffi::apr_table_unset(self.raw().err_headers_out, name.as_ptr());
        }
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

    /// Sets a response header to a value copied into the pool (none may
    /// hold a NUL, which would end it early).
    pub fn set_header_value(&self, name: &'static CStr, value: impl AsRef<[u8]>) {
        let v = self.pool_concat(&[value.as_ref()]);
        // SAFETY: static name, pool copy of the value.
        unsafe { ffi::apr_table_setn(self.raw().headers_out, name.as_ptr(), v) }
    }

    /// Sets a response header to the concatenation of `parts`, made in
    /// the pool (none may hold a NUL).
    pub fn set_header_parts(&self, name: &'static CStr, parts: &[&[u8]]) {
        let v = self.pool_concat(parts);
        // SAFETY: static name, pool string.
        unsafe { ffi::apr_table_setn(self.raw().headers_out, name.as_ptr(), v) }
    }

    /// Sets a header of error responses too (`err_headers_out`, which
    /// an error status keeps), its value copied into the pool.
    pub fn set_error_header_value(&self, name: &'static CStr, value: &str) {
        let v = self.pool_str(value);
        // SAFETY: static name, pool copy of the value.
        unsafe { ffi::apr_table_setn(self.raw().err_headers_out, name.as_ptr(), v) }
    }

    /// For a handler that answers GET and HEAD only: `None` for those
    /// (the body discarded); else the answer, as core's handler gives it
    /// (OPTIONS answered, 405 for other methods, or why the body could
    /// not be read).
    pub fn only_get(&self) -> Option<Status> {
        self.allow_get_options();
        match self.method_number() {
            ffi::M_GET => {}
            ffi::M_OPTIONS => return Some(self.send_options()),
            _ => return Some(Status::METHOD_NOT_ALLOWED),
        }
        let st = self.discard_body();
        (st != Status::OK).then_some(st)
    }

    /// Adds a response header (`apr_table_addn`: beside any of that name).
    pub fn add_header_value(&self, name: &'static CStr, value: &str) {
        let v = self.pool_str(value);
        // SAFETY: static name, pool copy of the value.
        unsafe { ffi::apr_table_addn(self.raw().headers_out, name.as_ptr(), v) }
    }

    /// Adds a header whose value lives as long as the request (a string
    /// of its pool, or of the configuration): no copy.
    pub fn add_header_kept(&self, name: &'static CStr, value: &'r CStr) {
        // SAFETY: static name; the value outlives the request's tables.
        unsafe { ffi::apr_table_addn(self.raw().headers_out, name.as_ptr(), value.as_ptr()) }
    }

    /// Adds a request header's name to `Vary` (http_filters merges
    /// and dedups the list).
    pub fn vary(&self, header: &'static CStr) {
        // SAFETY: static strings, so mergen needs no copy.
        unsafe { ffi::apr_table_mergen(self.raw().headers_out, c"Vary".as_ptr(), header.as_ptr()) }
    }

    /// Adds a `Cache-Control` directive, on error responses too
    /// (`err_headers_out`, sent beside `headers_out`'s, which a cache
    /// reads as one list).
    pub fn cache_control_on_error(&self, directive: &'static CStr) {
        // SAFETY: static strings, so mergen needs no copy.
        unsafe {
            ffi::apr_table_mergen(
                self.raw().err_headers_out,
                c"Cache-Control".as_ptr(),
                directive.as_ptr(),
            )
        }
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

    /// The answering virtual host's `ServerName` and `DocumentRoot`
    /// (either empty when unset): where a file is as every server of a
    /// fleet configured alike names it.
    pub fn server_name_and_root(&self) -> (&'r [u8], &'r [u8]) {
        // SAFETY: every request has a server, whose hostname is a pool
        // string or NULL.
        let s = unsafe { &*self.raw().server };
        let name: &'r [u8] = if s.server_hostname.is_null() {
            b""
        } else {
            // SAFETY: a NUL-terminated configuration-pool string.
            unsafe { CStr::from_ptr(s.server_hostname) }.to_bytes()
        };
        // SAFETY: the server is configuration; the root is a pool string
        // or NULL.
        let root = unsafe { ffi::gdn_document_root(self.raw().server) };
        let root: &'r [u8] = if root.is_null() {
            b""
        } else {
            // SAFETY: as above; NUL-terminated.
            unsafe { CStr::from_ptr(root) }.to_bytes()
        };
        (name, root)
    }

    /// The virtual host answering, as `host:port@file:line` (its
    /// `server_hostname`, the port it was configured with, and where
    /// its `<VirtualHost>` is; `@main` for the main server): what names
    /// it across restarts. Spelled once per configuration (at
    /// post_config); no heap call.
    pub fn host_key(&self) -> &'r [u8] {
        let s = self.raw().server;
        if let Some(key) = crate::host::of(s) {
            return key;
        }
        // SAFETY: every request has a live server of the current
        // configuration; the key is made in the request pool.
        unsafe { crate::host::spell(&*s, |parts| self.pool_join(parts)) }
    }

    /// The user the request authenticated as (`r->user`), if any.
    pub fn user(&self) -> Option<&'r [u8]> {
        let p = self.raw().user;
        // SAFETY: a non-NULL user is a NUL-terminated pool string.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_bytes())
    }

    /// The response's media type as set so far (`r->content_type`).
    pub fn content_type(&self) -> Option<&'r [u8]> {
        let p = self.raw().content_type;
        // SAFETY: a non-NULL content_type is a NUL-terminated string.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_bytes())
    }

    /// The decoded path of the request (`r->uri`).
    pub fn uri(&self) -> Option<&'r [u8]> {
        let p = self.raw().uri;
        // SAFETY: a non-NULL uri is a NUL-terminated pool string.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_bytes())
    }

    /// The query string (`r->args`), without its `?`.
    pub fn query(&self) -> Option<&'r [u8]> {
        let p = self.raw().args;
        // SAFETY: a string in the request pool.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_bytes())
    }

    /// The response's `Content-Encoding` as it stands: the header a
    /// filter (mod_deflate, mod_brotli) set, else `r->content_encoding`.
    /// Once the header filter has sent the headers (`sent_bodyct`), a set
    /// `r->content_encoding` is the header: that filter copied it there
    /// last, so the table need not be searched.
    pub fn content_encoding(&self) -> Option<&'r [u8]> {
        let p = self.raw().content_encoding;
        // SAFETY: a string in the request pool, or static.
        let field = (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_bytes());
        match field {
            Some(f) if self.raw().sent_bodyct != 0 => Some(f),
            _ => self.header_out(c"Content-Encoding").or(field),
        }
    }

    /// Adds a request note (for `%{gzip-disk-ng}n` in LogFormat). Added,
    /// not set: the module makes each of its notes once per request, so
    /// there is no earlier value to replace, and a set would search the
    /// table for one.
    pub fn add_note(&self, name: &'static CStr, value: &'static CStr) {
        // SAFETY: both static, so addn needs no copy.
        unsafe { ffi::apr_table_addn(self.raw().notes, name.as_ptr(), value.as_ptr()) }
    }

    /// When the request arrived, in seconds since the epoch.
    pub fn request_time_secs(&self) -> i64 {
        self.raw().request_time / 1_000_000
    }

    /// When the request began, in microseconds since the epoch.
    pub fn request_time_us(&self) -> i64 {
        self.raw().request_time
    }

    /// Adds a request note holding the concatenation of `parts`, copied
    /// into the request pool (added, as `add_note`).
    pub fn add_note_copy(&self, name: &'static CStr, parts: &[&[u8]]) {
        let v = self.pool_concat(parts);
        // SAFETY: a static name and a pool string.
        unsafe { ffi::apr_table_addn(self.raw().notes, name.as_ptr(), v) }
    }

    /// Adds request notes holding the decimals of `N` numbers. Added, not
    /// set: these notes are made once per request, so there is no earlier
    /// value to replace.
    pub fn add_note_numbers<const N: usize>(&self, notes: [(&'static CStr, u64); N]) {
        for (name, n) in notes {
            let v = self.pool_str(itoa::Buffer::new().format(n));
            // SAFETY: a static name and a pool string.
            unsafe { ffi::apr_table_addn(self.raw().notes, name.as_ptr(), v) }
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
    pub(crate) fn pool_str(&self, s: &str) -> *const c_char {
        // SAFETY: apr_pstrmemdup copies len bytes and NUL-terminates.
        unsafe { ffi::apr_pstrmemdup(self.raw().pool, s.as_ptr().cast(), s.len()) }
    }

    /// `base` + `suffix`, in the request pool.
    pub fn path_with_suffix(&self, base: &CStr, suffix: impl AsRef<[u8]>) -> &'r CStr {
        self.pool_join(&[base.to_bytes(), suffix.as_ref()])
    }

    /// `parts` one after another, in the request pool (none may hold a
    /// NUL, which would end the string early).
    pub fn pool_join(&self, parts: &[&[u8]]) -> &'r CStr {
        let p = self.pool_concat(parts);
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

    /// The path info after the file (`r->path_info`).
    pub fn path_info(&self) -> Option<&'r [u8]> {
        let p = self.raw().path_info;
        // SAFETY: a non-NULL path_info is a NUL-terminated pool string.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_bytes())
    }

    /// Asks Apache (the sibling's twin: a GET request of its own for the
    /// sibling's URI from this client, run as httpd runs a request it has
    /// read, up to its handler) what it would answer for `path`, the
    /// request's file plus `suffix`: the status it came to, what would
    /// answer it where it reached that very file, and what of its rules
    /// could tell clients apart. Judging it is the caller's.
    pub fn ask_sibling(&self, path: &CStr, suffix: &CStr) -> Asked<'r> {
        let mut raw = ffi::gdn_twin::default();
        // SAFETY: live request; the twin is destroyed by the shim before
        // it returns, and what it found is copied out of it (strings into
        // this request's pool).
        unsafe { ffi::gdn_sibling_ask(self.r, path.as_ptr(), suffix.as_ptr(), &mut raw) };
        asked(&raw)
    }

    /// `ask_sibling` for this request's own file, as a client no rule
    /// knows (no user, no headers but `Host`, no environment, an address
    /// of RFC 5737's TEST-NET-1) would ask for it.
    pub fn ask_public(&self) -> Asked<'r> {
        let mut raw = ffi::gdn_twin::default();
        // SAFETY: live request, only read (the twin is a request of its
        // own, destroyed before the shim returns).
        unsafe { ffi::gdn_public_ask(self.r, &mut raw) };
        asked(&raw)
    }

    /// `ask_public` for another file of the host: the file `path` under
    /// the URI `uri` (a decoded path).
    pub fn ask_public_at(&self, uri: &CStr, path: &CStr) -> Asked<'r> {
        let mut raw = ffi::gdn_twin::default();
        // SAFETY: live request; the shim puts back every field it
        // changes before it returns.
        unsafe { ffi::gdn_public_ask_at(self.r, uri.as_ptr(), path.as_ptr(), &mut raw) };
        asked(&raw)
    }

    /// The first output filter about to run on this response that may
    /// change its bytes (not compression, caching or header edits).
    pub fn content_filter(&self) -> Option<&'r CStr> {
        // SAFETY: live request; the name is the filter record's, which
        // lives as long as the configuration.
        let p = unsafe { ffi::gdn_content_filter(self.r) };
        // SAFETY: NULL or a NUL-terminated name, as above.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) })
    }

    /// Takes mod_deflate and mod_brotli (and mod_filter's harness for
    /// them) out of a response that already has a `Content-Encoding`,
    /// from which they would only step aside.
    pub fn skip_compressors(&self) {
        // SAFETY: live request; filters are removed as Apache's own API
        // removes them, before any has run.
        unsafe { ffi::gdn_skip_compressors(self.r) }
    }

    /// Whether this is a sibling's twin (or a subrequest of one), which
    /// asks Apache about a sibling.
    pub fn is_sibling_check(&self) -> bool {
        // SAFETY: live request.
        unsafe { ffi::gdn_in_sibling_check(self.r) != 0 }
    }

    /// Whether `Options` allow following symlinks here: `Always`,
    /// `IfOwnerMatch`, or `Never`.
    pub fn symlink_policy(&self) -> SymlinkPolicy {
        // SAFETY: live request.
        policy_of(unsafe { ffi::ap_allow_options(self.r) } as u32)
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

    /// The concatenation of `parts` as a NUL-terminated pool string.
    pub(crate) fn pool_concat(&self, parts: &[&[u8]]) -> *const c_char {
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
}

/// Pool cleanup closing a descriptor `open_nofollow` opened.
unsafe extern "C" fn close_fd(data: *mut c_void) -> apr_status_t {
    // SAFETY: the descriptor registered with this cleanup, closed once.
    unsafe { libc::close(data as isize as c_int) };
    0
}

/// The symlink policy `Options` bits `opts` give.
fn policy_of(opts: u32) -> SymlinkPolicy {
    if opts & ffi::OPT_SYM_LINKS != 0 {
        SymlinkPolicy::Always
    } else if opts & ffi::OPT_SYM_OWNER != 0 {
        SymlinkPolicy::IfOwnerMatch
    } else {
        SymlinkPolicy::Never
    }
}

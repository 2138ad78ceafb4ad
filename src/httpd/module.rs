//! The `gzip_disk_ng_module` symbol httpd loads: directive table,
//! per-directory config lifecycle, hook registration. Every `extern "C"`
//! entry catches panics: a panic becomes a 500 (or a config error) and a
//! log line, never a dead child.

use super::{ffi, Level, Request};
use crate::config::{self, DirConfig, ServerConfig};
use crate::jitter::Secret;
use std::ffi::{c_char, c_int, c_void, CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::ptr;
use std::sync::OnceLock;

/// httpd writes `module_index`, `next` and `name` into this at load time.
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static mut gzip_disk_ng_module: ffi::module = ffi::module {
    version: ffi::MODULE_MAGIC_NUMBER_MAJOR as c_int,
    minor_version: ffi::MODULE_MAGIC_NUMBER_MINOR as c_int,
    module_index: -1,
    name: c"mod_gzip_disk_ng.c".as_ptr(),
    dynamic_load_handle: ptr::null_mut(),
    next: ptr::null_mut(),
    magic: ffi::MODULE_MAGIC_COOKIE as std::ffi::c_ulong,
    rewrite_args: None,
    create_dir_config: Some(create_dir_config),
    merge_dir_config: Some(merge_dir_config),
    create_server_config: Some(create_server_config),
    merge_server_config: Some(merge_server_config),
    cmds: COMMANDS.0.as_ptr(),
    register_hooks: Some(register_hooks),
    flags: 0,
};

/// This module's index, for per-module log levels.
pub fn index() -> c_int {
    // SAFETY: written once by httpd at load, before any request.
    unsafe { (*ptr::addr_of!(gzip_disk_ng_module)).module_index }
}

fn module_ptr() -> *const ffi::module {
    ptr::addr_of!(gzip_disk_ng_module)
}

/// This module's settings in a per-dir config vector.
pub(crate) fn dir_config<'a>(v: *mut ffi::ap_conf_vector_t) -> &'a DirConfig {
    static DEFAULT: DirConfig = DirConfig {
        encodings: None,
        decompress: None,
        status_header: None,
        jitter: None,
    };
    // SAFETY: the vector slot holds a DirConfig this module created in a
    // pool that outlives the request, or NULL.
    unsafe {
        let p = ffi::gdn_module_config(v, module_ptr()) as *const DirConfig;
        if p.is_null() {
            &DEFAULT
        } else {
            &*p
        }
    }
}

/// This module's settings for a server (main or virtual host).
pub(crate) fn server_config<'a>(s: *const ffi::server_rec) -> Option<&'a ServerConfig> {
    // SAFETY: s is a live server_rec; its vector slot holds a ServerConfig
    // this module created in the configuration pool, or NULL.
    unsafe {
        let s = s.as_ref()?;
        (ffi::gdn_module_config(s.module_config, module_ptr()) as *const ServerConfig).as_ref()
    }
}

/// The padding key of servers without `GzipDiskNgJitterKey`: random,
/// made while the configuration is read, i.e. in the parent before the
/// children fork, so every child pads alike. A restart makes a new one.
static STARTUP_SECRET: OnceLock<Secret> = OnceLock::new();

fn make_startup_secret() {
    STARTUP_SECRET.get_or_init(|| {
        let mut key = [0u8; 32];
        // SAFETY: writes exactly key.len() bytes into key.
        let st = unsafe { ffi::apr_generate_random_bytes(key.as_mut_ptr(), key.len()) };
        if st != 0 {
            // Without a random source, a key nobody chose still differs
            // from server to server and start to start.
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            key[..16].copy_from_slice(&t.as_nanos().to_le_bytes());
            key[16..20].copy_from_slice(&std::process::id().to_le_bytes());
        }
        Secret::new(&key)
    });
}

/// The start-up padding key; `None` only if the configuration was never
/// read (then nothing is padded).
pub(crate) fn startup_secret() -> Option<&'static Secret> {
    STARTUP_SECRET.get()
}

/// Moves `value` into `pool`, dropped when the pool is cleared.
fn pool_box<T>(pool: *mut ffi::apr_pool_t, value: T) -> *mut T {
    unsafe extern "C" fn drop_it<T>(data: *mut c_void) -> ffi::apr_status_t {
        // SAFETY: registered only for a T written by pool_box.
        ptr::drop_in_place(data as *mut T);
        0
    }
    // SAFETY: palloc returns memory aligned for any type (8 bytes) of the
    // requested size; the cleanup drops it once, before the memory goes.
    unsafe {
        let p = ffi::apr_palloc(pool, std::mem::size_of::<T>().max(1)) as *mut T;
        ptr::write(p, value);
        ffi::apr_pool_cleanup_register(
            pool,
            p as *const c_void,
            Some(drop_it::<T>),
            Some(ffi::apr_pool_cleanup_null),
        );
        p
    }
}

unsafe extern "C" fn create_dir_config(
    pool: *mut ffi::apr_pool_t,
    _dir: *mut c_char,
) -> *mut c_void {
    catch_unwind(|| pool_box(pool, DirConfig::default()) as *mut c_void).unwrap_or(ptr::null_mut())
}

unsafe extern "C" fn create_server_config(
    pool: *mut ffi::apr_pool_t,
    _s: *mut ffi::server_rec,
) -> *mut c_void {
    catch_unwind(|| {
        make_startup_secret();
        pool_box(pool, ServerConfig::default()) as *mut c_void
    })
    .unwrap_or(ptr::null_mut())
}

unsafe extern "C" fn merge_server_config(
    pool: *mut ffi::apr_pool_t,
    base: *mut c_void,
    new: *mut c_void,
) -> *mut c_void {
    catch_unwind(AssertUnwindSafe(|| {
        let empty = ServerConfig::default();
        // SAFETY: both come from create_server_config (or are NULL).
        let b = unsafe { (base as *const ServerConfig).as_ref() }.unwrap_or(&empty);
        let n = unsafe { (new as *const ServerConfig).as_ref() }.unwrap_or(&empty);
        pool_box(pool, b.merge(n)) as *mut c_void
    }))
    .unwrap_or(ptr::null_mut())
}

unsafe extern "C" fn merge_dir_config(
    pool: *mut ffi::apr_pool_t,
    base: *mut c_void,
    new: *mut c_void,
) -> *mut c_void {
    catch_unwind(AssertUnwindSafe(|| {
        let empty = DirConfig::default();
        // SAFETY: both come from create_dir_config (or are NULL).
        let b = unsafe { (base as *const DirConfig).as_ref() }.unwrap_or(&empty);
        let n = unsafe { (new as *const DirConfig).as_ref() }.unwrap_or(&empty);
        pool_box(pool, b.merge(n)) as *mut c_void
    }))
    .unwrap_or(ptr::null_mut())
}

/// Runs a directive setter; errors become a pool string httpd prints.
fn directive(
    cmd: *mut ffi::cmd_parms,
    cfg: *mut c_void,
    f: impl FnOnce(&mut DirConfig) -> Result<(), String>,
) -> *const c_char {
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: httpd passes the config this module created for the scope.
        match unsafe { (cfg as *mut DirConfig).as_mut() } {
            Some(c) => f(c),
            None => Err("mod_gzip_disk_ng: no configuration for this scope".into()),
        }
    }))
    .unwrap_or_else(|_| Err("mod_gzip_disk_ng: internal error in directive".into()));
    match result {
        Ok(()) => ptr::null(),
        Err(msg) => {
            let msg = msg.replace('\0', " ");
            // SAFETY: cmd->pool is the configuration pool.
            unsafe { ffi::apr_pstrmemdup((*cmd).pool, msg.as_ptr().cast(), msg.len()) }
        }
    }
}

/// `GzipDiskNgJitterKey <file>`: reads the key now, at configuration time,
/// so a bad file fails `apache2 -t` rather than a request.
unsafe extern "C" fn set_jitter_key(
    cmd: *mut ffi::cmd_parms,
    _cfg: *mut c_void,
    file: *const c_char,
) -> *const c_char {
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: httpd passes live cmd_parms whose server is the one being
        // configured; TAKE1 passes one NUL-terminated word.
        let (pool, server, file) = unsafe { ((*cmd).pool, (*cmd).server, CStr::from_ptr(file)) };
        // SAFETY: a pool string or NULL for a path that cannot be resolved.
        let full = unsafe { ffi::ap_server_root_relative(pool, file.as_ptr()) };
        if full.is_null() {
            return Err(format!(
                "GzipDiskNgJitterKey: invalid path {}",
                file.to_string_lossy()
            ));
        }
        // SAFETY: NUL-terminated, lives in the configuration pool.
        let full = unsafe { CStr::from_ptr(full) };
        let key = config::load_jitter_key(Path::new(OsStr::from_bytes(full.to_bytes())))?;
        // SAFETY: the server's vector slot holds the ServerConfig this
        // module created for it; configuration is single-threaded.
        let cfg = unsafe {
            let v = (*server).module_config;
            (ffi::gdn_module_config(v, module_ptr()) as *mut ServerConfig).as_mut()
        };
        match cfg {
            Some(c) => {
                c.jitter_key = Some(key);
                Ok(())
            }
            None => Err("mod_gzip_disk_ng: no configuration for this server".into()),
        }
    }))
    .unwrap_or_else(|_| Err("mod_gzip_disk_ng: internal error in directive".into()));
    error_string(cmd, result)
}

/// NULL for success, else the message in the configuration pool.
fn error_string(cmd: *mut ffi::cmd_parms, result: Result<(), String>) -> *const c_char {
    match result {
        Ok(()) => ptr::null(),
        Err(msg) => {
            let msg = msg.replace('\0', " ");
            // SAFETY: cmd->pool is the configuration pool.
            unsafe { ffi::apr_pstrmemdup((*cmd).pool, msg.as_ptr().cast(), msg.len()) }
        }
    }
}

/// Collects argv into `&str`s.
///
/// # Safety
/// `argv` holds `argc` NUL-terminated strings.
unsafe fn args<'a>(argc: c_int, argv: *const *mut c_char) -> Result<Vec<&'a str>, String> {
    (0..usize::try_from(argc).unwrap_or(0))
        .map(|i| {
            CStr::from_ptr(*argv.add(i))
                .to_str()
                .map_err(|_| "argument is not UTF-8".to_string())
        })
        .collect()
}

unsafe extern "C" fn set_encodings(
    cmd: *mut ffi::cmd_parms,
    cfg: *mut c_void,
    argc: c_int,
    argv: *const *mut c_char,
) -> *const c_char {
    directive(cmd, cfg, |c| {
        // SAFETY: httpd's TAKE_ARGV contract.
        let a = unsafe { args(argc, argv) }?;
        c.encodings = Some(config::parse_encodings(&a)?);
        Ok(())
    })
}

unsafe extern "C" fn set_decompress(
    cmd: *mut ffi::cmd_parms,
    cfg: *mut c_void,
    on: c_int,
) -> *const c_char {
    directive(cmd, cfg, |c| {
        c.decompress = Some(on != 0);
        Ok(())
    })
}

unsafe extern "C" fn set_status_header(
    cmd: *mut ffi::cmd_parms,
    cfg: *mut c_void,
    w: *const c_char,
) -> *const c_char {
    directive(cmd, cfg, |c| {
        // SAFETY: TAKE1 passes one NUL-terminated word.
        let w = unsafe { CStr::from_ptr(w) }
            .to_str()
            .map_err(|_| "GzipDiskNgStatusHeader: not UTF-8".to_string())?;
        c.status_header = Some(config::parse_status_header(w)?);
        Ok(())
    })
}

unsafe extern "C" fn set_jitter(
    cmd: *mut ffi::cmd_parms,
    cfg: *mut c_void,
    argc: c_int,
    argv: *const *mut c_char,
) -> *const c_char {
    directive(cmd, cfg, |c| {
        // SAFETY: httpd's TAKE_ARGV contract.
        let a = unsafe { args(argc, argv) }?;
        c.jitter = Some(config::parse_jitter(&a)?);
        Ok(())
    })
}

/// A `command_rec` table is plain data; httpd only reads it.
#[repr(transparent)]
struct Commands([ffi::command_rec; 6]);
// SAFETY: immutable after construction; pointers are to 'static data.
unsafe impl Sync for Commands {}

const WHERE: c_int = (ffi::RSRC_CONF | ffi::ACCESS_CONF | ffi::OR_FILEINFO) as c_int;

static COMMANDS: Commands = Commands([
    ffi::command_rec {
        name: c"GzipDiskNgEncodings".as_ptr(),
        func: ffi::cmd_func {
            take_argv: Some(set_encodings),
        },
        cmd_data: ptr::null_mut(),
        req_override: WHERE,
        args_how: ffi::cmd_how_TAKE_ARGV,
        errmsg: c"Codings served from siblings, in server preference order: zstd br gzip".as_ptr(),
    },
    ffi::command_rec {
        name: c"GzipDiskNgDecompress".as_ptr(),
        func: ffi::cmd_func {
            flag: Some(set_decompress),
        },
        cmd_data: ptr::null_mut(),
        req_override: WHERE,
        args_how: ffi::cmd_how_FLAG,
        errmsg: c"On|Off: decompress for clients that accept no sibling (default On)".as_ptr(),
    },
    ffi::command_rec {
        name: c"GzipDiskNgStatusHeader".as_ptr(),
        func: ffi::cmd_func {
            take1: Some(set_status_header),
        },
        cmd_data: ptr::null_mut(),
        req_override: WHERE,
        args_how: ffi::cmd_how_TAKE1,
        errmsg: c"On|Off|<header-name>: the marker response header (default On)".as_ptr(),
    },
    ffi::command_rec {
        name: c"GzipDiskNgJitter".as_ptr(),
        func: ffi::cmd_func {
            take_argv: Some(set_jitter),
        },
        cmd_data: ptr::null_mut(),
        req_override: WHERE,
        args_how: ffi::cmd_how_TAKE_ARGV,
        errmsg: c"Off | <max-bytes> [<buffer-bytes>] [paranoid]".as_ptr(),
    },
    ffi::command_rec {
        name: c"GzipDiskNgJitterKey".as_ptr(),
        func: ffi::cmd_func {
            take1: Some(set_jitter_key),
        },
        cmd_data: ptr::null_mut(),
        req_override: ffi::RSRC_CONF as c_int,
        args_how: ffi::cmd_how_TAKE1,
        errmsg: c"<file>: the secret keying jitter lengths (server config, virtual host)".as_ptr(),
    },
    ffi::command_rec {
        name: ptr::null(),
        func: ffi::cmd_func { no_args: None },
        cmd_data: ptr::null_mut(),
        req_override: 0,
        args_how: 0,
        errmsg: ptr::null(),
    },
]);

unsafe extern "C" fn register_hooks(_p: *mut ffi::apr_pool_t) {
    let _ = catch_unwind(|| {
        // SAFETY: called by httpd during hook registration.
        unsafe {
            ffi::ap_hook_handler(
                Some(handler),
                ptr::null(),
                ptr::null(),
                ffi::APR_HOOK_MIDDLE as c_int,
            );
            ffi::ap_hook_fixups(
                Some(fixups),
                ptr::null(),
                ptr::null(),
                ffi::APR_HOOK_LAST as c_int,
            );
            ffi::ap_hook_insert_error_filter(
                Some(insert_error_filter),
                ptr::null(),
                ptr::null(),
                ffi::APR_HOOK_MIDDLE as c_int,
            );
            ffi::ap_hook_post_config(
                Some(post_config),
                ptr::null(),
                ptr::null(),
                ffi::APR_HOOK_MIDDLE as c_int,
            );
        }
    });
}

/// Reads the parsed configuration once per (re)start, before the
/// children fork: whether any `Require` may look at the file name.
unsafe extern "C" fn post_config(
    pconf: *mut ffi::apr_pool_t,
    _plog: *mut ffi::apr_pool_t,
    ptemp: *mut ffi::apr_pool_t,
    _s: *mut ffi::server_rec,
) -> c_int {
    let _ = catch_unwind(|| {
        // SAFETY: httpd's configuration tree is complete at post_config;
        // the scan only reads it and allocates from the temporary pool.
        unsafe { ffi::gdn_scan_config(if ptemp.is_null() { pconf } else { ptemp }) }
    });
    ffi::OK as c_int
}

/// Runs `f` on the request; a panic is logged and becomes a 500.
fn guarded(r: *mut ffi::request_rec, panic_status: c_int, f: fn(&Request<'_>) -> c_int) -> c_int {
    if r.is_null() {
        return super::DECLINED;
    }
    // SAFETY: httpd passes a live request.
    let req = unsafe { Request::from_raw(r) };
    match catch_unwind(AssertUnwindSafe(|| f(&req))) {
        Ok(rc) => rc,
        Err(e) => {
            let what = e
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| e.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            req.log(Level::Err, 0, &format!("internal error (panic): {what}"));
            panic_status
        }
    }
}

unsafe extern "C" fn handler(r: *mut ffi::request_rec) -> c_int {
    guarded(r, super::HTTP_INTERNAL_SERVER_ERROR, crate::handler::handle)
}

unsafe extern "C" fn insert_error_filter(r: *mut ffi::request_rec) {
    guarded(r, 0, |req| {
        crate::handler::insert_error_filter(req);
        0
    });
}

unsafe extern "C" fn fixups(r: *mut ffi::request_rec) -> c_int {
    guarded(r, super::DECLINED, crate::handler::fixup)
}

//! What any httpd module written in Rust needs and names no application
//! type: the `module` record httpd loads by symbol, configuration objects
//! owned by pools and merged per scope, directive dispatch, hook
//! registration, and the guard every `extern "C"` entry runs under, so a
//! panic becomes a 500 (or a configuration error) and a log line, never a
//! dead child. A module implements [`Module`] and names its symbol with
//! [`declare_module!`](crate::declare_module).

use super::filter::{Filter, Input};
use super::pool::{pool_box, pool_place};
use super::{apr_status_t, ffi, Level, Request, Status, TwinGate};
use std::cell::UnsafeCell;
use std::ffi::{c_char, c_int, c_void, CStr, CString, OsStr};
use std::marker::PhantomData;
use std::os::unix::ffi::OsStrExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::ptr;

/// A configuration object (per directory or per server) and how an inner
/// scope's settings combine with the enclosing ones.
pub trait Config: Default + 'static {
    /// `self` is the enclosing scope, `child` the inner one.
    fn merge(&self, child: &Self) -> Self;

    /// Whether dropping this value does anything (frees memory it owns).
    /// A merged value that does not is put in the pool without a cleanup:
    /// httpd merges per request.
    fn needs_drop(&self) -> bool {
        true
    }

    /// Whether this scope sets nothing, so merging it with another gives
    /// that other unchanged: httpd merges per request, and the merge then
    /// hands back the other's pointer instead of a copy.
    fn is_unset(&self) -> bool {
        false
    }
}

/// Where a hook runs among other modules' hooks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    First,
    Middle,
    Last,
}

impl Order {
    fn raw(self) -> c_int {
        (match self {
            Order::First => ffi::APR_HOOK_FIRST,
            Order::Middle => ffi::APR_HOOK_MIDDLE,
            Order::Last => ffi::APR_HOOK_LAST,
        }) as c_int
    }
}

/// The hooks a module can take part in; each calls the [`Module`] method
/// of the same name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    Handler(Order),
    Fixups(Order),
    InsertErrorFilter(Order),
    PostConfig(Order),
    CheckConfig(Order),
    /// A section in mod_status's `server-status` page.
    Status(Order),
    /// An output filter of this name, of the type mod_deflate's is (after
    /// content filters such as mod_include's, before the protocol's),
    /// with its init function ([`Module::output_filter_init`]). The
    /// number (below [`FILTERS`]) is handed to both: each filter has entry
    /// points of its own, so a call is known by the function httpd (or
    /// mod_filter's harness, under a name an admin chose) calls, never by
    /// a name.
    OutputFilter(&'static CStr, u8),
}

/// How many output filters a module may register.
pub const FILTERS: u8 = 4;

/// A directive's arguments, by the form its table entry declares.
#[derive(Clone, Copy, Debug)]
pub enum Args<'a> {
    Flag(bool),
    One(&'a str),
    List(&'a [&'a str]),
}

/// The argument form of a directive.
#[derive(Clone, Copy, Debug)]
pub enum Takes {
    Flag,
    One,
    List,
}

/// Where a directive may appear.
#[derive(Clone, Copy, Debug)]
pub enum Context {
    /// Server config and virtual hosts only.
    Server,
    /// Also `<Directory>`, `<Location>`, `<Files>` and .htaccess under
    /// `AllowOverride FileInfo`.
    DirectoryFileInfo,
}

impl<'a> Args<'a> {
    /// The `On`/`Off` of a [`Takes::Flag`] directive.
    pub fn flag(self) -> Result<bool, String> {
        match self {
            Args::Flag(on) => Ok(on),
            _ => Err("takes On or Off".into()),
        }
    }

    /// The word of a [`Takes::One`] directive.
    pub fn one(self) -> Result<&'a str, String> {
        match self {
            Args::One(w) => Ok(w),
            _ => Err("takes one argument".into()),
        }
    }

    /// The words of a [`Takes::List`] directive.
    pub fn list(self) -> Result<&'a [&'a str], String> {
        match self {
            Args::List(l) => Ok(l),
            _ => Err("takes a list of arguments".into()),
        }
    }
}

/// Applies a directive's arguments to a configuration object; an error
/// (without the directive's name, which the dispatch puts in front) is
/// what `apache2 -t` shows.
pub type Setter<T> = fn(&mut T, Args<'_>, &dyn Parms) -> Result<(), String>;

/// What a directive sets: the configuration of the scope it appears in,
/// or its server's (or virtual host's).
pub enum Set<D, S> {
    Dir(Setter<D>),
    Server(Setter<S>),
}

/// One row of a module's directive table, as mod_deflate's
/// `AP_INIT_TAKE1(name, setter, …, help)` or an nginx `ngx_command_t`:
/// what httpd is told, what the manual says, and the setter httpd's
/// command table dispatches to. `D` and `S` are the module's directory
/// and server configuration types.
pub struct Directive<D: 'static, S: 'static> {
    pub name: &'static CStr,
    pub takes: Takes,
    pub context: Context,
    /// What `apache2 -t` shows after a wrong use: its arguments and a word.
    pub help: &'static CStr,
    /// Its syntax, in the Apache manual's style (`|` between choices).
    pub syntax: &'static str,
    /// Its default, in Markdown (code in backquotes).
    pub default: &'static str,
    /// Only the main server's value counts: its context is "server
    /// config", though a virtual host accepts it.
    pub main_server: bool,
    pub set: Set<D, S>,
}

impl<D, S> Directive<D, S> {
    /// The directive's name.
    pub fn name(&self) -> &'static str {
        self.name.to_str().unwrap_or("")
    }

    /// Where it may appear, as the Apache manual says it.
    pub fn context(&self) -> &'static str {
        match self.context {
            Context::Server if self.main_server => "server config",
            Context::Server => "server config, virtual host",
            Context::DirectoryFileInfo => "server config, virtual host, directory, .htaccess",
        }
    }

    /// The `AllowOverride` class it needs in .htaccess, if it may be there.
    pub fn allow_override(&self) -> Option<&'static str> {
        match self.context {
            Context::Server => None,
            Context::DirectoryFileInfo => Some("FileInfo"),
        }
    }

    /// `help` as text.
    pub fn help(&self) -> &'static str {
        self.help.to_str().unwrap_or("")
    }

    /// What it is for: `help` without the arguments it starts with, which
    /// a manual shows as the syntax; capitalised.
    pub fn description(&self) -> String {
        let h = self.help();
        // The arguments end at the first ": " outside parentheses: a
        // help without them may say "(default: …)".
        let words = h
            .split_once(": ")
            .filter(|(args, _)| !args.contains('('))
            .map_or(h, |(_, w)| w);
        let mut c = words.chars();
        c.next()
            .map(|f| f.to_uppercase().chain(c).collect())
            .unwrap_or_default()
    }
}

/// An inner scope's value of a setting where it has one, else the
/// enclosing scope's (see [`config_by_field!`](crate::config_by_field)).
pub fn inherit<T: Clone>(outer: &Option<T>, inner: &Option<T>) -> Option<T> {
    inner.as_ref().or(outer.as_ref()).cloned()
}

/// Whether a setting holds memory that dropping it frees.
pub fn owns_heap<T>(v: &Option<T>) -> bool {
    std::mem::needs_drop::<T>() && v.is_some()
}

/// Implements [`Config`] for a struct whose fields are all `Option`s, named
/// here: an inner scope overrides the settings it sets, an unset scope
/// merges to the other, and a value owns heap memory where a set field's
/// type needs dropping. The names are matched exhaustively, so a field
/// left out of the list does not compile.
#[macro_export]
macro_rules! config_by_field {
    ($ty:ident { $($field:ident),* $(,)? }) => {
        impl $crate::module::Config for $ty {
            fn merge(&self, child: &Self) -> Self {
                let $ty { $($field),* } = child;
                $ty { $($field: $crate::module::inherit(&self.$field, $field)),* }
            }

            fn needs_drop(&self) -> bool {
                let $ty { $($field),* } = self;
                false $(|| $crate::module::owns_heap($field))*
            }

            fn is_unset(&self) -> bool {
                let $ty { $($field),* } = self;
                true $(&& $field.is_none())*
            }
        }
    };
}

/// An application module: its configuration types, directives and hooks.
pub trait Module: Sized + 'static {
    type Dir: Config;
    type Server: Config;
    /// The source name httpd shows (`mod_x.c`).
    const NAME: &'static CStr;
    /// httpd's command table: one [`Command::new`] per [`Directive`],
    /// ending with [`Command::END`].
    const COMMANDS: &'static [Command];
    const HOOKS: &'static [Hook];

    /// The record [`declare_module!`](crate::declare_module) exported.
    fn record() -> &'static ModuleRecord;

    fn handler(_req: &Request<'_>) -> Status {
        Status::DECLINED
    }
    fn fixups(_req: &Request<'_>) -> Status {
        Status::DECLINED
    }
    fn insert_error_filter(_req: &Request<'_>) {}
    /// The output filter a [`Hook::OutputFilter`] registered as `which`:
    /// by default it passes every brigade on untouched.
    fn output_filter(_which: u8, f: &mut Filter<'_>, input: &mut Input) -> apr_status_t {
        f.pass_input(input)
    }
    /// Before the handler runs, once for each place the filter holds in
    /// the request's chain: as itself (`SetOutputFilter`) or as a
    /// provider mod_filter may choose once the type is known
    /// (`AddOutputFilterByType`). The only moment a filter can change
    /// what the handler reads of the request, or its own place.
    fn output_filter_init(_which: u8, _req: &Request<'_>, _place: &FilterPlace) {}
    /// After the configuration is read, in the parent, before children
    /// fork: an error stops the server with the message logged.
    fn post_config(_ctx: &PostConfig<'_>) -> Result<(), String> {
        Ok(())
    }
    /// After the configuration is read, also under `apache2 -t`: an error
    /// stops the server (or fails the test) with the message logged.
    fn check_config(_ctx: &PostConfig<'_>) -> Result<(), String> {
        Ok(())
    }
    /// Writes the module's part of `server-status`: HTML, or `Key: value`
    /// lines for `?auto` (`short`).
    fn status(_req: &Request<'_>, _short: bool) {}
    /// Why a twin (a request the module asked Apache to run for a URI,
    /// `Request::ask_sibling`) must stop before its access hooks, on the
    /// client's connection: it is then refused (403), the reason in
    /// `Asked::stopped`. By default none is.
    fn twin_gate(_gate: &TwinGate<'_>) -> Option<&'static CStr> {
        None
    }
}

/// What the module judged of a configuration, for the sibling checks of
/// csrc/access.c: whether request headers may be edited after they are
/// read, and which output filters leave a response's bytes as they are.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SiblingRules {
    /// Whether a module may edit request headers after they are read:
    /// then the headers as read are kept for every request's twins.
    pub headers_edited: bool,
    pub filters: Vec<PlainFilter>,
    /// What a mod_filter harness is, one provider after another.
    pub harness: HarnessRule,
    /// The modules (by the source file their hooks are registered
    /// under) whose post_read_request hook only records the request it
    /// is given, as a log does: a twin, which no client sent, does not
    /// run it.
    pub recorders: Vec<&'static str>,
    /// The least severe level a twin's hooks write to the error log
    /// (`None`: as the configuration has it). What a twin's hooks log is
    /// of a request no client made.
    pub twin_log: Option<Level>,
}

/// What a mod_filter harness is, as the module's rule folds its
/// providers' kinds (`None`: unknown): the kind before any provider, and
/// the kind after each (kind so far, provider's kind) pair. A harness
/// without a provider is unknown. By default every harness is unknown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HarnessRule {
    start: Option<FilterKind>,
    after: [Option<FilterKind>; HARNESS_KINDS * HARNESS_KINDS],
}

impl HarnessRule {
    /// The rule `fold` (the kind so far and the next provider's, to the
    /// kind after it), starting from `start`.
    pub fn of(
        start: Option<FilterKind>,
        fold: impl Fn(Option<FilterKind>, Option<FilterKind>) -> Option<FilterKind>,
    ) -> HarnessRule {
        let kinds = || [None].into_iter().chain(FilterKind::ALL.map(Some));
        let mut after = [None; HARNESS_KINDS * HARNESS_KINDS];
        for a in kinds() {
            for b in kinds() {
                after
                    [FilterKind::shim(a) as usize * HARNESS_KINDS + FilterKind::shim(b) as usize] =
                    fold(a, b);
            }
        }
        HarnessRule { start, after }
    }
}

/// An output filter that leaves a response's content as the file holds
/// it, known by its name and the module whose object holds its function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlainFilter {
    pub name: &'static str,
    pub module: &'static str,
    pub kind: FilterKind,
}

/// How a known filter leaves the content as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterKind {
    /// The bytes pass as they are (a cache, a header edit).
    Plain,
    /// Codes a body not yet coded and steps aside from a coded one; a
    /// module sending a file's coded copy may take it out of the chain.
    Compressor,
    /// Codes a body not yet coded and steps aside from a coded one, but
    /// a handler that sends a file's bytes itself gives way to it
    /// (`Request::content_filter` names it); a twin passing it gets the
    /// file's content.
    Coder,
}

impl FilterKind {
    const ALL: [FilterKind; 3] = [FilterKind::Plain, FilterKind::Compressor, FilterKind::Coder];

    /// The shim's number for it (`csrc/access.c`'s `FILTER_*` less one).
    fn raw(self) -> c_int {
        match self {
            FilterKind::Plain => 0,
            FilterKind::Compressor => 1,
            FilterKind::Coder => 2,
        }
    }

    /// `csrc/access.c`'s `FILTER_*`: 0 for unknown, else one more than
    /// `raw`.
    fn shim(kind: Option<FilterKind>) -> c_int {
        kind.map_or(0, |k| k.raw() + 1)
    }
}

/// Unknown and the three kinds.
const HARNESS_KINDS: usize = 4;

/// What the configuration hooks get: the configuration pool and the main
/// server.
pub struct PostConfig<'p> {
    pconf: *mut ffi::apr_pool_t,
    s: *mut ffi::server_rec,
    _life: PhantomData<&'p ffi::apr_pool_t>,
}

impl PostConfig<'_> {
    fn new(pconf: *mut ffi::apr_pool_t, s: *mut ffi::server_rec) -> Self {
        PostConfig {
            pconf,
            s,
            _life: PhantomData,
        }
    }

    pub(super) fn conf_pool(&self) -> *mut ffi::apr_pool_t {
        self.pconf
    }

    pub(super) fn server(&self) -> *mut ffi::server_rec {
        self.s
    }

    /// The first of the two configuration passes at start-up, in which
    /// nothing should be started.
    pub fn dry_run(&self) -> bool {
        // SAFETY: a state query, valid in any configuration hook.
        unsafe { ffi::gdn_config_dry_run() != 0 }
    }

    /// The MPM's bound on workers: processes at most and threads in each
    /// (`MaxRequestWorkers` divided by `ThreadsPerChild`, and
    /// `ThreadsPerChild`; prefork's processes of one thread each). Known
    /// once the MPM read its directives, as it has at post_config.
    pub fn mpm_workers(&self) -> (u32, u32) {
        let query = |code: u32| {
            let mut v: c_int = 0;
            // SAFETY: a query of the MPM's state into a plain integer.
            let st = unsafe { ffi::ap_mpm_query(code as c_int, &mut v) };
            if st == ffi::APR_SUCCESS as ffi::apr_status_t {
                v.max(1) as u32
            } else {
                1
            }
        };
        (
            query(ffi::AP_MPMQ_MAX_DAEMONS),
            query(ffi::AP_MPMQ_MAX_THREADS),
        )
    }

    /// The main server's configuration of module `M`.
    pub fn server_config<M: Module>(&self) -> Option<&M::Server> {
        // SAFETY: the main server record lives as long as pconf.
        let v = unsafe { (*self.s).module_config };
        config_in(v, M::record().as_ptr())
    }

    /// Log lines on the main server.
    pub fn log(&self) -> super::log::ServerLog {
        super::log::ServerLog::new(self.s)
    }

    /// The configuration as httpd read it: directives, modules, hooks.
    pub fn configuration(&self) -> super::conftree::Configuration {
        super::conftree::read(self.pconf)
    }

    /// Hands the sibling checks what the module judged of this
    /// configuration (see `SiblingRules`).
    pub fn set_sibling_rules(&self, rules: &SiblingRules) {
        let c = |s: &str| CString::new(s.replace('\0', " ")).unwrap_or_default();
        let names: Vec<CString> = rules.filters.iter().map(|f| c(f.name)).collect();
        let mods: Vec<CString> = rules.filters.iter().map(|f| c(f.module)).collect();
        let kinds: Vec<c_int> = rules.filters.iter().map(|f| f.kind.raw()).collect();
        let harness = rules.harness.after.map(FilterKind::shim);
        let ptrs = |v: &[CString]| v.iter().map(|s| s.as_ptr()).collect::<Vec<_>>();
        let (names_p, mods_p) = (ptrs(&names), ptrs(&mods));
        let recorders: Vec<CString> = rules.recorders.iter().map(|m| c(m)).collect();
        let recorders_p = ptrs(&recorders);
        let raw = ffi::gdn_sibling_rules {
            headers_edited: rules.headers_edited.into(),
            filters: c_int::try_from(names.len()).unwrap_or(0),
            filter_names: names_p.as_ptr(),
            filter_modules: mods_p.as_ptr(),
            filter_kinds: kinds.as_ptr(),
            harness: harness.as_ptr(),
            harness_start: FilterKind::shim(rules.harness.start),
            recorders: c_int::try_from(recorders.len()).unwrap_or(0),
            recorder_modules: recorders_p.as_ptr(),
            twin_log_level: rules.twin_log.map_or(-1, |l| l as c_int),
        };
        // SAFETY: httpd's configuration is complete at post_config; the
        // shim copies every string into pconf before this returns.
        unsafe { ffi::gdn_scan_config(self.pconf, self.s, &raw) }
        if self.dry_run() {
            return;
        }
        // SAFETY: NULL or a static or pconf string, set just above.
        let unread = unsafe { ffi::gdn_client_rules_unread() };
        if !unread.is_null() {
            // SAFETY: as above.
            let why = unsafe { CStr::from_ptr(unread) }.to_string_lossy();
            self.log().log(
                Level::Warn,
                &format!(
                    "every page's access is taken as telling clients apart \
                     (siblings answered Cache-Control: private, nothing learned by a \
                     shared dictionary): {why}"
                ),
            );
        }
    }

    /// Module `M`'s configuration of the main server and of every virtual
    /// host, in the server list's order.
    pub fn server_configs<M: Module>(&self) -> Vec<&M::Server> {
        let mut out = Vec::new();
        let mut s = self.s;
        while !s.is_null() {
            // SAFETY: the server list is configuration, complete here and
            // living as long as pconf.
            let v = unsafe { (*s).module_config };
            if let Some(c) = config_in::<M::Server>(v, M::record().as_ptr()) {
                out.push(c);
            }
            // SAFETY: as above.
            s = unsafe { (*s).next };
        }
        out
    }

    /// The `DocumentRoot` of the main server and of every virtual host.
    pub fn document_roots(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut s = self.s;
        while !s.is_null() {
            // SAFETY: the server list is configuration, complete here; the
            // root is a pool string or NULL.
            let root = unsafe { ffi::gdn_document_root(s) };
            if !root.is_null() {
                // SAFETY: as above; NUL-terminated.
                let b = unsafe { CStr::from_ptr(root) }.to_bytes();
                out.push(Path::new(OsStr::from_bytes(b)).to_path_buf());
            }
            // SAFETY: as above.
            s = unsafe { (*s).next };
        }
        out
    }
}

/// The exported `module` record. httpd writes `module_index`, `next` and
/// the load handle into it, so it lives in writable memory.
#[repr(transparent)]
pub struct ModuleRecord(UnsafeCell<ffi::module>);

// SAFETY: httpd writes the record while loading, single-threaded, before
// any request; afterwards it is only read.
unsafe impl Sync for ModuleRecord {}

impl ModuleRecord {
    /// The record of module `M`.
    pub const fn new<M: Module>() -> ModuleRecord {
        ModuleRecord(UnsafeCell::new(ffi::module {
            version: ffi::MODULE_MAGIC_NUMBER_MAJOR as c_int,
            minor_version: ffi::MODULE_MAGIC_NUMBER_MINOR as c_int,
            module_index: -1,
            name: M::NAME.as_ptr(),
            dynamic_load_handle: ptr::null_mut(),
            next: ptr::null_mut(),
            magic: ffi::MODULE_MAGIC_COOKIE as std::ffi::c_ulong,
            rewrite_args: None,
            create_dir_config: Some(create_dir_config::<M>),
            merge_dir_config: Some(merge_config::<M::Dir>),
            create_server_config: Some(create_server_config::<M>),
            merge_server_config: Some(merge_config::<M::Server>),
            cmds: M::COMMANDS.as_ptr() as *const ffi::command_rec,
            register_hooks: Some(register_hooks::<M>),
            flags: 0,
        }))
    }

    pub(super) fn as_ptr(&self) -> *const ffi::module {
        self.0.get()
    }

    fn index(&self) -> c_int {
        // SAFETY: written once by httpd at load, before any reader runs.
        unsafe { (*self.0.get()).module_index }
    }
}

/// Declares the exported module record `$symbol` (the name `LoadModule`
/// gives) for the [`Module`](crate::module::Module) type `$module`.
#[macro_export]
macro_rules! declare_module {
    ($symbol:ident, $module:ty) => {
        #[no_mangle]
        #[allow(non_upper_case_globals, unsafe_code)]
        pub static $symbol: $crate::module::ModuleRecord =
            $crate::module::ModuleRecord::new::<$module>();
    };
}

/// This module's object in a configuration vector, if it made one.
pub(super) fn config_in<'a, T>(
    v: *mut ffi::ap_conf_vector_t,
    m: *const ffi::module,
) -> Option<&'a T> {
    // SAFETY: the slot holds a T this module created (create_*_config of
    // the same Module) in a pool that outlives the borrow, or NULL.
    unsafe { (ffi::gdn_module_config(v, m) as *const T).as_ref() }
}

/// One directive table entry.
#[repr(transparent)]
pub struct Command(ffi::command_rec);

// SAFETY: immutable after construction; its pointers are to 'static data.
unsafe impl Sync for Command {}

impl Command {
    /// httpd's entry for directive `d` of module `M`: the trampoline for
    /// its argument form, with `d` as the `cmd_data` it hands back.
    pub const fn new<M: Module>(d: &'static Directive<M::Dir, M::Server>) -> Command {
        let (func, how) = match d.takes {
            Takes::Flag => (
                ffi::cmd_func {
                    flag: Some(flag_directive::<M>),
                },
                ffi::cmd_how_FLAG,
            ),
            Takes::One => (
                ffi::cmd_func {
                    take1: Some(one_directive::<M>),
                },
                ffi::cmd_how_TAKE1,
            ),
            Takes::List => (
                ffi::cmd_func {
                    take_argv: Some(list_directive::<M>),
                },
                ffi::cmd_how_TAKE_ARGV,
            ),
        };
        let req_override = match d.context {
            Context::Server => ffi::RSRC_CONF as c_int,
            Context::DirectoryFileInfo => {
                (ffi::RSRC_CONF | ffi::ACCESS_CONF | ffi::OR_FILEINFO) as c_int
            }
        };
        Command(ffi::command_rec {
            name: d.name.as_ptr(),
            func,
            cmd_data: ptr::from_ref(d).cast_mut().cast(),
            req_override,
            args_how: how,
            errmsg: d.help.as_ptr(),
        })
    }

    /// The entry that ends a table.
    pub const END: Command = Command(ffi::command_rec {
        name: ptr::null(),
        func: ffi::cmd_func { no_args: None },
        cmd_data: ptr::null_mut(),
        req_override: 0,
        args_how: 0,
        errmsg: ptr::null(),
    });
}

/// What a setter may ask of httpd about the directive being read. A
/// trait, so the table (which the manual pages are also made from) links
/// without httpd and its setters run in unit tests.
pub trait Parms {
    /// `path` relative to ServerRoot, as httpd resolves file arguments.
    fn server_relative(&self, path: &str) -> Option<PathBuf>;
}

/// httpd's `cmd_parms` of the directive being read.
struct CmdParms<'c> {
    cmd: *mut ffi::cmd_parms,
    _life: PhantomData<&'c ffi::cmd_parms>,
}

impl Parms for CmdParms<'_> {
    fn server_relative(&self, path: &str) -> Option<PathBuf> {
        let c = std::ffi::CString::new(path).ok()?;
        // SAFETY: cmd is the live cmd_parms of the directive being read;
        // the result is a pool string, or NULL for a path that cannot be
        // resolved.
        let full = unsafe { ffi::ap_server_root_relative((*self.cmd).pool, c.as_ptr()) };
        (!full.is_null()).then(|| {
            // SAFETY: NUL-terminated, lives in the configuration pool.
            let b = unsafe { CStr::from_ptr(full) }.to_bytes();
            Path::new(OsStr::from_bytes(b)).to_path_buf()
        })
    }
}

/// The configuration module `M` made for the server (or virtual host)
/// whose directive `cmd` is.
///
/// # Safety
/// `cmd` is the live cmd_parms of one of `M`'s directives, and nothing
/// else borrows that server's configuration while the result lives.
unsafe fn server_config<'c, M: Module>(cmd: *mut ffi::cmd_parms) -> Option<&'c mut M::Server> {
    // SAFETY: the server's vector slot holds the object this module's
    // create_server_config made (or NULL); configuration is read
    // single-threaded.
    unsafe {
        let v = (*(*cmd).server).module_config;
        (ffi::gdn_module_config(v, M::record().as_ptr()) as *mut M::Server).as_mut()
    }
}

/// What httpd passed for a directive, before it is borrowed as [`Args`].
enum Given {
    Flag(bool),
    One(String),
    List(Vec<String>),
}

impl Given {
    /// Calls `f` with the arguments borrowed as [`Args`].
    fn with<R>(&self, f: impl FnOnce(Args<'_>) -> R) -> R {
        match self {
            Given::Flag(on) => f(Args::Flag(*on)),
            Given::One(w) => f(Args::One(w)),
            Given::List(l) => f(Args::List(
                &l.iter().map(String::as_str).collect::<Vec<_>>(),
            )),
        }
    }
}

/// Runs the setter of the directive httpd is reading; an error (or a
/// panic) becomes a pool string httpd prints, prefixed with the
/// directive's name, as `apache2 -t` messages of httpd's own modules are.
fn run_directive<M: Module>(
    cmd: *mut ffi::cmd_parms,
    dir: *mut c_void,
    given: impl FnOnce() -> Result<Given, String>,
) -> *const c_char {
    // SAFETY: httpd passes the cmd_parms of a directive of this module's
    // table, whose cmd_data Command::new set to the 'static row.
    let d = unsafe { &*((*cmd).info as *const Directive<M::Dir, M::Server>) };
    let parms = CmdParms {
        cmd,
        _life: PhantomData,
    };
    let result = catch_unwind(AssertUnwindSafe(|| {
        let given = given()?;
        match d.set {
            Set::Dir(set) => {
                // SAFETY: httpd passes the object create_dir_config made
                // for this scope; configuration is read single-threaded.
                let dir = unsafe { (dir as *mut M::Dir).as_mut() }
                    .ok_or("no configuration for this scope")?;
                given.with(|args| set(dir, args, &parms))
            }
            Set::Server(set) => {
                // SAFETY: the cmd_parms of one of M's directives; only
                // this setter borrows the server's configuration.
                let server =
                    unsafe { server_config::<M>(cmd) }.ok_or("no configuration for this server")?;
                given.with(|args| set(server, args, &parms))
            }
        }
    }))
    .unwrap_or_else(|_| Err("internal error in directive".into()));
    match result {
        Ok(()) => ptr::null(),
        Err(msg) => {
            let msg = format!("{}: {msg}", d.name()).replace('\0', " ");
            // SAFETY: cmd->pool is the configuration pool.
            unsafe { ffi::apr_pstrmemdup((*cmd).pool, msg.as_ptr().cast(), msg.len()) }
        }
    }
}

/// A NUL-terminated argument as UTF-8.
///
/// # Safety
/// `p` is a NUL-terminated string.
unsafe fn word(p: *const c_char) -> Result<String, String> {
    // SAFETY: the caller's promise.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map(str::to_owned)
        .map_err(|_| "argument is not UTF-8".to_string())
}

unsafe extern "C" fn flag_directive<M: Module>(
    cmd: *mut ffi::cmd_parms,
    dir: *mut c_void,
    on: c_int,
) -> *const c_char {
    run_directive::<M>(cmd, dir, || Ok(Given::Flag(on != 0)))
}

unsafe extern "C" fn one_directive<M: Module>(
    cmd: *mut ffi::cmd_parms,
    dir: *mut c_void,
    w: *const c_char,
) -> *const c_char {
    // SAFETY: TAKE1 passes one NUL-terminated word.
    run_directive::<M>(cmd, dir, || Ok(Given::One(unsafe { word(w) }?)))
}

unsafe extern "C" fn list_directive<M: Module>(
    cmd: *mut ffi::cmd_parms,
    dir: *mut c_void,
    argc: c_int,
    argv: *const *mut c_char,
) -> *const c_char {
    let given = || {
        (0..usize::try_from(argc).unwrap_or(0))
            // SAFETY: TAKE_ARGV passes argc NUL-terminated strings.
            .map(|i| unsafe { word(*argv.add(i)) })
            .collect::<Result<_, _>>()
            .map(Given::List)
    };
    run_directive::<M>(cmd, dir, given)
}

unsafe extern "C" fn create_dir_config<M: Module>(
    pool: *mut ffi::apr_pool_t,
    _dir: *mut c_char,
) -> *mut c_void {
    catch_unwind(|| pool_box(pool, M::Dir::default())).unwrap_or(ptr::null_mut())
}

unsafe extern "C" fn create_server_config<M: Module>(
    pool: *mut ffi::apr_pool_t,
    _s: *mut ffi::server_rec,
) -> *mut c_void {
    catch_unwind(|| pool_box(pool, M::Server::default())).unwrap_or(ptr::null_mut())
}

unsafe extern "C" fn merge_config<T: Config>(
    pool: *mut ffi::apr_pool_t,
    base: *mut c_void,
    new: *mut c_void,
) -> *mut c_void {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: both come from this module's create_*_config (or NULL).
        let (b, n) = unsafe { ((base as *const T).as_ref(), (new as *const T).as_ref()) };
        let merged = match (b, n) {
            // Configurations are read-only once parsed: either may stand
            // for the merge.
            (Some(_), Some(n)) if n.is_unset() => return base,
            (Some(b), Some(_)) if b.is_unset() => return new,
            (Some(b), Some(n)) => b.merge(n),
            (b, n) => {
                let empty = T::default();
                b.unwrap_or(&empty).merge(n.unwrap_or(&empty))
            }
        };
        if merged.needs_drop() {
            pool_box(pool, merged)
        } else {
            pool_place(pool, merged)
        }
    }))
    .unwrap_or(ptr::null_mut())
}

unsafe extern "C" fn register_hooks<M: Module>(_p: *mut ffi::apr_pool_t) {
    super::index::set(M::record().index());
    // SAFETY: called by httpd during hook registration.
    unsafe {
        ffi::gdn_register_sibling_hooks();
        ffi::gdn_set_twin_gate(Some(twin_gate::<M>));
    }
    let _ = catch_unwind(|| {
        for hook in M::HOOKS {
            // SAFETY: called by httpd during hook registration.
            unsafe {
                match *hook {
                    Hook::Handler(o) => {
                        ffi::ap_hook_handler(Some(handler::<M>), ptr::null(), ptr::null(), o.raw())
                    }
                    Hook::Fixups(o) => {
                        ffi::ap_hook_fixups(Some(fixups::<M>), ptr::null(), ptr::null(), o.raw())
                    }
                    Hook::InsertErrorFilter(o) => ffi::ap_hook_insert_error_filter(
                        Some(insert_error_filter::<M>),
                        ptr::null(),
                        ptr::null(),
                        o.raw(),
                    ),
                    Hook::PostConfig(o) => ffi::ap_hook_post_config(
                        Some(post_config::<M>),
                        ptr::null(),
                        ptr::null(),
                        o.raw(),
                    ),
                    Hook::CheckConfig(o) => ffi::ap_hook_check_config(
                        Some(check_config::<M>),
                        ptr::null(),
                        ptr::null(),
                        o.raw(),
                    ),
                    Hook::Status(o) => ffi::gdn_hook_status(Some(status::<M>), o.raw()),
                    Hook::OutputFilter(name, which) => {
                        if let Some((run, init)) = filter_entries::<M>(which) {
                            ffi::ap_register_output_filter(
                                name.as_ptr(),
                                Some(run),
                                Some(init),
                                ffi::ap_filter_type_AP_FTYPE_CONTENT_SET + 1,
                            );
                        }
                    }
                }
            }
        }
    });
}

/// The module's gate for a twin; one that panicked stops it (fails
/// closed).
unsafe extern "C" fn twin_gate<M: Module>(
    twin: *mut ffi::request_rec,
    asker: *const ffi::request_rec,
) -> *const c_char {
    let gate = TwinGate {
        twin,
        asker,
        _life: PhantomData,
    };
    match catch_unwind(AssertUnwindSafe(|| M::twin_gate(&gate))) {
        Ok(None) => ptr::null(),
        Ok(Some(why)) => why.as_ptr(),
        Err(_) => c"internal error in the module's gate".as_ptr(),
    }
}

unsafe extern "C" fn post_config<M: Module>(
    pconf: *mut ffi::apr_pool_t,
    _plog: *mut ffi::apr_pool_t,
    _ptemp: *mut ffi::apr_pool_t,
    s: *mut ffi::server_rec,
) -> c_int {
    let ctx = PostConfig::new(pconf, s);
    let hook = || {
        // SAFETY: the configuration is complete here (virtual hosts fixed
        // up), before any request of it; its keys go into its pool.
        unsafe { crate::host::keep(pool_box(pconf, crate::host::spelled(s)).cast()) };
        M::post_config(&ctx)
    };
    match catch_unwind(AssertUnwindSafe(hook)) {
        Ok(Err(msg)) => {
            ctx.log().log(Level::Err, &msg);
            Status::INTERNAL_SERVER_ERROR.code()
        }
        _ => ffi::OK as c_int,
    }
}

unsafe extern "C" fn check_config<M: Module>(
    pconf: *mut ffi::apr_pool_t,
    _plog: *mut ffi::apr_pool_t,
    _ptemp: *mut ffi::apr_pool_t,
    s: *mut ffi::server_rec,
) -> c_int {
    let ctx = PostConfig::new(pconf, s);
    let r = catch_unwind(AssertUnwindSafe(|| M::check_config(&ctx)))
        .unwrap_or_else(|_| Err("internal error checking the configuration".into()));
    match r {
        Ok(()) => ffi::OK as c_int,
        Err(msg) => {
            ctx.log().log(Level::Err, &msg);
            Status::INTERNAL_SERVER_ERROR.code()
        }
    }
}

/// Runs `f` on the request; a panic is logged and answered with
/// `on_panic`.
fn guarded(
    r: *mut ffi::request_rec,
    on_panic: Status,
    f: impl FnOnce(&Request<'_>) -> Status,
) -> c_int {
    if r.is_null() {
        return Status::DECLINED.code();
    }
    // SAFETY: httpd passes a live request.
    let req = unsafe { Request::from_raw(r) };
    match catch_unwind(AssertUnwindSafe(|| f(&req))) {
        Ok(st) => st.code(),
        Err(e) => {
            let what = panic_text(&*e);
            req.log(Level::Err, 0, &format!("internal error (panic): {what}"));
            on_panic.code()
        }
    }
}

/// What a panic said.
fn panic_text(e: &(dyn std::any::Any + Send)) -> String {
    e.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| e.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

unsafe extern "C" fn handler<M: Module>(r: *mut ffi::request_rec) -> c_int {
    guarded(r, Status::INTERNAL_SERVER_ERROR, M::handler)
}

unsafe extern "C" fn insert_error_filter<M: Module>(r: *mut ffi::request_rec) {
    guarded(r, Status::OK, |req| {
        M::insert_error_filter(req);
        Status::OK
    });
}

unsafe extern "C" fn status<M: Module>(r: *mut ffi::request_rec, flags: c_int) -> c_int {
    // SAFETY: a flags query.
    let short = unsafe { ffi::gdn_status_is_short(flags) } != 0;
    guarded(r, Status::OK, |req| {
        M::status(req, short);
        Status::OK
    });
    ffi::OK as c_int
}

type FilterRun =
    unsafe extern "C" fn(*mut ffi::ap_filter_t, *mut ffi::apr_bucket_brigade) -> apr_status_t;
type FilterInit = unsafe extern "C" fn(*mut ffi::ap_filter_t) -> c_int;

/// The entry points of output filter `which` (none past [`FILTERS`]).
fn filter_entries<M: Module>(which: u8) -> Option<(FilterRun, FilterInit)> {
    let entries: (FilterRun, FilterInit) = match which {
        0 => (output_filter::<M, 0>, output_filter_init::<M, 0>),
        1 => (output_filter::<M, 1>, output_filter_init::<M, 1>),
        2 => (output_filter::<M, 2>, output_filter_init::<M, 2>),
        3 => (output_filter::<M, 3>, output_filter_init::<M, 3>),
        _ => return None,
    };
    Some(entries)
}

unsafe extern "C" fn output_filter<M: Module, const N: u8>(
    f: *mut ffi::ap_filter_t,
    bb: *mut ffi::apr_bucket_brigade,
) -> apr_status_t {
    let run = || super::filter::call(f, bb, |f, input| M::output_filter(N, f, input));
    catch_unwind(AssertUnwindSafe(run)).unwrap_or_else(|e| {
        if !f.is_null() {
            // SAFETY: httpd passes a live filter of a live request.
            let req = unsafe { Request::from_raw((*f).r) };
            req.log(
                Level::Err,
                0,
                &format!(
                    "internal error (panic) in the output filter: {}",
                    panic_text(&*e)
                ),
            );
        }
        ffi::APR_EGENERAL as apr_status_t
    })
}

/// The place in its request's chain a filter's init is called for: the
/// filter itself, or mod_filter's harness that may dispatch to it.
pub struct FilterPlace {
    f: *mut ffi::ap_filter_t,
}

impl FilterPlace {
    /// Moves this place ahead of the compressors (mod_deflate's,
    /// mod_brotli's, or mod_filter's harnesses of them) right before it,
    /// so that where both would code the response this filter decides.
    /// Before any filter has run: the chain is the request's alone.
    pub fn go_before_compressors(&self) {
        // SAFETY: a live filter of a live request, called from its init,
        // before the handler passes anything down the chain.
        unsafe { ffi::gdn_filter_before_compressors(self.f) }
    }
}

unsafe extern "C" fn output_filter_init<M: Module, const N: u8>(f: *mut ffi::ap_filter_t) -> c_int {
    if f.is_null() {
        return ffi::OK as c_int;
    }
    // SAFETY: httpd (ap_invoke_handler, or mod_filter's harness for its
    // providers) passes a live filter of a live request; only its request
    // is read, never its context, which mod_filter owns in the harness.
    let r = unsafe { (*f).r };
    let place = FilterPlace { f };
    guarded(r, Status::OK, |req| {
        M::output_filter_init(N, req, &place);
        Status::OK
    });
    ffi::OK as c_int
}

unsafe extern "C" fn fixups<M: Module>(r: *mut ffi::request_rec) -> c_int {
    guarded(r, Status::DECLINED, M::fixups)
}

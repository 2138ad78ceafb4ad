//! The configuration as httpd read it, copied out once at post_config: the
//! directive tree (`ap_conftree`), the loaded modules, and which modules
//! registered each request hook. Plain data, for policies written over it
//! elsewhere; nothing here judges what it reads.

use super::ffi;
use std::ffi::{c_char, CStr};

/// One directive or section of the configuration, as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Line {
    /// The directive's name, a section's with its `<` (`<Directory`).
    pub name: String,
    /// Its arguments as written (a section's without the closing `>`).
    pub args: String,
    /// The file and line it was read from.
    pub file: String,
    pub line: u32,
    /// The section it stands in: an index into the same list.
    pub parent: Option<usize>,
}

/// The request hooks a read reports, as `apr_hooks` names them.
pub const HOOKS: [&str; 14] = [
    "post_read_request",
    "pre_translate_name",
    "translate_name",
    "map_to_storage",
    "post_perdir_config",
    "header_parser",
    "access_checker",
    "access_checker_ex",
    "check_user_id",
    "auth_checker",
    "type_checker",
    "fixups",
    "insert_filter",
    "handler",
];

/// What a configuration holds: every directive in reading order (a
/// section before what it contains), the modules loaded, and for each of
/// `HOOKS` the modules registered on it (`None` for an entry without a
/// name).
#[derive(Clone, Debug, Default)]
pub struct Configuration {
    pub lines: Vec<Line>,
    pub modules: Vec<String>,
    pub hooks: Vec<(&'static str, Vec<Option<String>>)>,
}

impl Configuration {
    /// The modules registered on `hook`, empty for a hook not read.
    pub fn hooked(&self, hook: &str) -> &[Option<String>] {
        self.hooks
            .iter()
            .find(|(h, _)| *h == hook)
            .map_or(&[], |(_, m)| m.as_slice())
    }
}

fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: a NUL-terminated string of the configuration's pool.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The tree under `d` (and its siblings after it), in reading order.
fn walk(mut d: *const ffi::ap_directive_t, parent: Option<usize>, out: &mut Vec<Line>) {
    while !d.is_null() {
        // SAFETY: the tree is complete at post_config and lives in pconf.
        let n = unsafe { &*d };
        out.push(Line {
            name: text(n.directive),
            args: text(n.args),
            file: text(n.filename),
            line: u32::try_from(n.line_num).unwrap_or(0),
            parent,
        });
        let me = out.len() - 1;
        walk(n.first_child, Some(me), out);
        d = n.next;
    }
}

/// Reads the configuration httpd holds now (at post_config: complete).
pub(crate) fn read(pool: *mut ffi::apr_pool_t) -> Configuration {
    let mut lines = Vec::new();
    // SAFETY: httpd's global tree, complete and unchanged after reading.
    walk(unsafe { ffi::ap_conftree }, None, &mut lines);
    let mut modules = Vec::new();
    // SAFETY: the loaded modules' list, complete at post_config.
    let mut m = unsafe { ffi::ap_top_module };
    while !m.is_null() {
        // SAFETY: as above.
        let r = unsafe { &*m };
        modules.push(text(r.name));
        m = r.next;
    }
    let hooks = HOOKS.iter().map(|h| (*h, hooked(pool, h))).collect();
    Configuration {
        lines,
        modules,
        hooks,
    }
}

fn hooked(pool: *mut ffi::apr_pool_t, hook: &str) -> Vec<Option<String>> {
    let Ok(name) = std::ffi::CString::new(hook) else {
        return Vec::new();
    };
    // SAFETY: the shim reads the hook's registration array and joins its
    // names into a pool string (each ended by "\n", empty when unnamed).
    let all = unsafe { ffi::gdn_hook_modules(pool, name.as_ptr()) };
    if all.is_null() {
        return Vec::new();
    }
    text(all)
        .split_terminator('\n')
        .map(|m| (!m.is_empty()).then(|| m.to_owned()))
        .collect()
}

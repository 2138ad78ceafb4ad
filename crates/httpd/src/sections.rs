//! Core's sections as the configuration holds them (`<Files>`,
//! `<FilesMatch>`, `<Directory ~>`, `<Location>`), read for a policy
//! written elsewhere: a server's lists, a request's merged `<Files>` list
//! and what else its per-directory configuration holds, each section's
//! pattern, regex and wildcard flag, and the two ways core matches a
//! name (a regex run, `apr_fnmatch`). Nothing here judges what it reads.

use super::log::ServerLog;
use super::{ffi, PostConfig, Request};
use std::borrow::Cow;
use std::ffi::{c_void, CStr};
use std::marker::PhantomData;
use std::ptr;

/// A list of sections, borrowed from the configuration (`'c`).
#[derive(Clone, Copy)]
pub struct Sections<'c> {
    a: *const ffi::apr_array_header_t,
    _life: PhantomData<&'c ffi::apr_array_header_t>,
}

impl<'c> Sections<'c> {
    fn new(a: *const ffi::apr_array_header_t) -> Self {
        Sections {
            a,
            _life: PhantomData,
        }
    }

    /// The list's identity: core's merge makes a new array where a
    /// `<Directory>` or .htaccess adds sections, and keeps the server's
    /// own otherwise.
    pub fn id(&self) -> usize {
        self.a as usize
    }

    pub fn len(&self) -> usize {
        // SAFETY: NULL or a live array of section vectors.
        let n = unsafe { ffi::gdn_sections_count(self.a) };
        usize::try_from(n).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`th section; `i < len()`.
    pub fn at(&self, i: usize) -> Section<'c> {
        assert!(i < self.len(), "section {i} of {}", self.len());
        let mut raw = ffi::gdn_section {
            regex: ptr::null(),
            pattern: ptr::null(),
            wildcard: 0,
            nested: ptr::null(),
        };
        // SAFETY: `i` is within the array (asserted); the shim fills
        // `raw` with pointers of the same configuration.
        unsafe { ffi::gdn_section_at(self.a, i as i32, &mut raw) };
        Section {
            regex: raw.regex,
            // SAFETY: NULL or a NUL-terminated configuration string.
            pattern: (!raw.pattern.is_null()).then(|| unsafe { CStr::from_ptr(raw.pattern) }),
            wildcard: raw.wildcard != 0,
            nested: Sections::new(raw.nested),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = Section<'c>> + '_ {
        (0..self.len()).map(|i| self.at(i))
    }
}

/// One section.
#[derive(Clone, Copy)]
pub struct Section<'c> {
    regex: *const c_void,
    pattern: Option<&'c CStr>,
    wildcard: bool,
    nested: Sections<'c>,
}

impl<'c> Section<'c> {
    /// The compiled regex's identity (`<FilesMatch>`, `<Files ~>` and the
    /// like), `None` for a name or path.
    pub fn regex_id(&self) -> Option<usize> {
        (!self.regex.is_null()).then_some(self.regex as usize)
    }

    /// The name, path or pattern as written.
    pub fn pattern(&self) -> Option<&'c CStr> {
        self.pattern
    }

    /// A name with wildcards, which core matches with `apr_fnmatch`.
    pub fn is_wildcard(&self) -> bool {
        self.wildcard
    }

    /// The `<Files>` a `<Directory>` holds (empty for others).
    pub fn nested(&self) -> Sections<'c> {
        self.nested
    }

    /// Whether the section's regex matches `name` (false without one).
    pub fn regex_matches(&self, name: &CStr) -> bool {
        // SAFETY: a compiled regex of the configuration, a C string.
        !self.regex.is_null() && unsafe { ffi::gdn_regex_matches(self.regex, name.as_ptr()) } != 0
    }

    /// Whether the section's wildcard name matches `name` as core
    /// matches a `<Files>` wildcard (`APR_FNM_PATHNAME`).
    pub fn wildcard_matches(&self, name: &CStr) -> bool {
        let Some(p) = self.pattern else {
            return false;
        };
        // SAFETY: two C strings.
        unsafe { ffi::gdn_wildcard_matches(p.as_ptr(), name.as_ptr()) != 0 }
    }
}

/// A server's own lists: the `<Files>` of its defaults, its
/// `<Directory>` sections, its `<Location>` sections.
#[derive(Clone, Copy)]
pub struct ServerSections<'c> {
    /// The server record's identity.
    pub id: usize,
    server: *const ffi::server_rec,
    pub files: Sections<'c>,
    pub dirs: Sections<'c>,
    pub locations: Sections<'c>,
}

impl<'c> ServerSections<'c> {
    /// Where the server is defined (a `<VirtualHost>`'s file and line);
    /// `None` for the main server. The file as `conftree` spells it (a
    /// name that is not UTF-8, replaced alike).
    pub fn defined_at(&self) -> Option<(Cow<'c, str>, u32)> {
        // SAFETY: a live server record of the configuration; its
        // definition is a configuration-pool string or NULL.
        let (name, line) = unsafe { ((*self.server).defn_name, (*self.server).defn_line_number) };
        if name.is_null() {
            return None;
        }
        // SAFETY: as above.
        let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        Some((name, line))
    }

    /// Log lines on this server.
    pub fn log(&self) -> ServerLog {
        ServerLog::new(self.server.cast_mut())
    }
}

fn server_sections<'c>(s: *const ffi::server_rec) -> ServerSections<'c> {
    let mut raw = ffi::gdn_server_sections {
        files: ptr::null(),
        dirs: ptr::null(),
        locations: ptr::null(),
    };
    // SAFETY: a live server record of the configuration.
    unsafe { ffi::gdn_read_server_sections(s, &mut raw) };
    ServerSections {
        id: s as usize,
        server: s,
        files: Sections::new(raw.files),
        dirs: Sections::new(raw.dirs),
        locations: Sections::new(raw.locations),
    }
}

/// What a request's per-directory configuration holds besides sections
/// of a server's lists.
#[derive(Clone, Copy)]
pub struct DirSections<'r> {
    /// The merged `<Files>` list.
    pub files: Sections<'r>,
    /// `<If>` sections apply.
    pub if_sections: bool,
    /// `AllowOverride AuthConfig` (an .htaccess may require anything).
    pub authcfg_override: bool,
    /// `AllowOverrideList` names directives.
    pub override_list: bool,
}

impl<'p> PostConfig<'p> {
    /// Every server's lists (the main server first).
    pub fn server_sections(&self) -> Vec<ServerSections<'p>> {
        let mut out = Vec::new();
        let mut s = self.server();
        while !s.is_null() {
            out.push(server_sections(s));
            // SAFETY: the server list is complete at post_config.
            s = unsafe { (*s).next };
        }
        out
    }
}

impl<'r> Request<'r> {
    /// The identity of the request's server (`ServerSections::id`).
    pub fn server_id(&self) -> usize {
        self.raw().server as usize
    }

    /// The lists of the request's server.
    pub fn server_sections(&self) -> ServerSections<'r> {
        server_sections(self.raw().server)
    }

    /// What the request's per-directory configuration holds.
    pub fn dir_sections(&self) -> DirSections<'r> {
        let mut raw = ffi::gdn_dir_sections {
            files: ptr::null(),
            if_sections: 0,
            authcfg_override: 0,
            override_list: 0,
        };
        // SAFETY: a live request past its directory walk.
        unsafe { ffi::gdn_read_dir_sections(self.r, &mut raw) };
        DirSections {
            files: Sections::new(raw.files),
            if_sections: raw.if_sections != 0,
            authcfg_override: raw.authcfg_override != 0,
            override_list: raw.override_list != 0,
        }
    }
}

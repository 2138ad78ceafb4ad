//! Finding a request's siblings: stat (symlinks per `Options`), and
//! opening with the symlink check repeated. A sibling of an existing
//! original is that page's representation, sent only once verified to
//! decode to its current bytes (`respond::judge`), so the page's own
//! request, already past its rules, decides for it (`Route::Verified`).
//! A sibling without an original, the only file, is served as Apache
//! would serve it under its own name: the access rules for that name
//! decide (`Route::OwnName`).

use crate::memo;
use crate::metrics::counters;
use crate::metrics::tally::Reason;
use gdn_core::coding::{Coding, DeltaCoding};
use gdn_core::dictionary;
use gdn_core::variant::FileMeta;
use gdn_httpd::{File, FileKind, Finfo, Level, Request, SymlinkPolicy};
use std::ffi::CStr;

/// What the decision needs of a stat.
pub fn meta(f: &Finfo) -> FileMeta {
    FileMeta {
        mtime: f.mtime(),
        size: f.size(),
    }
}

#[derive(Clone, Copy)]
pub struct Sibling<'r> {
    pub path: &'r CStr,
    pub info: Finfo,
    /// How it was judged, which says how its open is checked.
    pub admitted: Admitted,
    /// Already opened by the lookup: where symlinks are followed, opening
    /// is the stat (one `open` and one `fstat`, an `lstat` fewer).
    pub opened: Option<File<'r>>,
}

/// Whose rules decide whether a sibling may be served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// The sibling of the request's own file, which exists as a regular
    /// file and is what the sibling represents: it is sent only once
    /// known to decode to that file's current bytes (`respond::judge`
    /// refuses it until then), which this very request was allowed; its
    /// own name's rules add nothing, so they are not asked (no twin
    /// request, which rate limiters would count as the client's).
    Verified,
    /// A sibling without an original, the only file: its bytes are what
    /// its own name holds, so the rules for that name decide.
    OwnName,
}

/// How a sibling was admitted as a representation of its page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admitted {
    /// By the page's own request (`Route::Verified`), or by sections and
    /// `Options` alone.
    Short,
    /// By Apache's own lookup of its URI, which found `info`, under the
    /// symlink policy of the sibling's own `Options`; or, with
    /// `SymlinkPolicy::Never`, by an lstat that found a regular file
    /// (`no_link`). Its open must find that very file.
    Asked { policy: SymlinkPolicy },
}

/// What is at `path` as Apache would serve it under that name: the file
/// itself, or a symlink's target where `Options` allow following it.
/// Used only where the configuration keeps `Options` in `<Directory>`
/// (csrc/access.c), so the merged options are the directory walk's.
pub fn served_file(req: &Request<'_>, path: &CStr) -> Option<Finfo> {
    let link = req.stat(path, true).ok()?;
    if link.kind() != FileKind::Symlink {
        return Some(link);
    }
    let policy = req.symlink_policy();
    let target = req.stat(path, false).ok()?;
    let allowed = match policy {
        SymlinkPolicy::Always => true,
        SymlinkPolicy::IfOwnerMatch => target.user() == link.user(),
        SymlinkPolicy::Never => false,
    };
    if !allowed {
        req.log_with(Level::Debug, 0, || {
            format!(
                "symlink refused by Options ({policy:?}): {}",
                path.to_string_lossy()
            )
        });
        return None;
    }
    (!crate::store_guard::link_refused(req, path)).then_some(target)
}

/// Whether an opened file is the one `Options` allow under `path`. Where
/// symlinks are restricted the path is checked again after the open, so a
/// file swapped for a symlink between the check and the open is refused.
pub fn opened_as_allowed(req: &Request<'_>, path: &CStr, opened: &Finfo) -> bool {
    if req.symlink_policy() == SymlinkPolicy::Always {
        return true;
    }
    let ok = served_file(req, path).is_some_and(|now| now.same_file(opened));
    if !ok {
        log_swapped(req, path);
    }
    ok
}

fn log_swapped(req: &Request<'_>, path: &CStr) {
    req.log_with(Level::Info, 0, || {
        format!(
            "{} changed while being opened; refused",
            path.to_string_lossy()
        )
    });
}

/// Why a sibling name gives nothing to serve.
enum NotServed {
    /// No such file, or not one Apache would send (a directory, a link
    /// `Options` refuse).
    Absent,
    /// A file Apache's rules refuse under its own URI.
    Refused,
}

/// A sibling of the request's file at `path` (the file's name plus
/// `suffix`). On `Route::Verified`, and where the configuration's
/// sections treat both names alike, a regular file (or a symlink to one
/// that `Options` allow) is enough: one stat. Otherwise the sibling's
/// own URI is asked of Apache once the name exists (its twin request).
fn stat_sibling<'r>(
    req: &Request<'r>,
    path: &'r CStr,
    suffix: &[u8],
    route: Route,
) -> Result<Sibling<'r>, NotServed> {
    if route == Route::Verified || !crate::policy::sibling_rules_may_differ(req, suffix) {
        return stat_short(req, path, route);
    }
    req.stat(path, true).map_err(|_| NotServed::Absent)?;
    let authorization = req.header_in(c"Authorization");
    if let Some(why) = crate::policy::unaskable(req.has_body(), authorization) {
        req.log_with(Level::Debug, 0, || {
            format!("sibling not asked: {why}: {}", path.to_string_lossy())
        });
        return Err(NotServed::Refused);
    }
    // The suffix as a C string: the tail of the path it ends.
    let start = path.to_bytes().len().saturating_sub(suffix.len());
    let c_suffix = CStr::from_bytes_with_nul(&path.to_bytes_with_nul()[start..])
        .map_err(|_| NotServed::Absent)?;
    let (answer, client_dependent) = crate::policy::sibling(&req.ask_sibling(path, c_suffix));
    if let Some(why) = client_dependent {
        depends_on_client(req, &why);
    }
    let (info, policy) = answer.map_err(|refusal| {
        req.log_with(Level::Debug, 0, || {
            format!(
                "sibling refused by the access rules for its own name ({refusal}): {}",
                path.to_string_lossy()
            )
        });
        NotServed::Refused
    })?;
    let admitted = Admitted::Asked { policy };
    let opened = None;
    Ok(Sibling {
        path,
        info,
        admitted,
        opened,
    })
}

/// Says to shared caches (mod_cache included) that this response was
/// chosen by rules of a sibling's name that could answer another client
/// otherwise: what a cache stored for one client must not reach another.
/// Core's answer for the page's own name is its own: it is not marked.
fn depends_on_client(req: &Request<'_>, why: &str) {
    const NOTE: &CStr = c"gzip-disk-ng-private";
    if req.notes_get(NOTE).is_none() {
        req.add_note(NOTE, c"1");
        req.cache_control_on_error(c"private");
        req.log_with(Level::Debug, 0, || {
            format!(
                "Cache-Control: private: a sibling's own rules could answer another client \
                 otherwise ({why})"
            )
        });
    }
}

/// A sibling judged without asking Apache: a regular file, or a symlink
/// followed only as the request's `Options` allow, those of the
/// directory both names are in. A verified sibling's content is the
/// page's, but its file may hold bytes besides (a gzip comment, a zstd
/// skippable frame), sent as they are: so a link is followed only where
/// Apache's walk would follow one there, and its open is checked again
/// (`open_sibling`) against a swap. Where the configuration may set
/// `Options` outside `<Directory>` (in `<Files>`, `<Location>`), the
/// request's merged options are not the walk's: a verified sibling
/// must then be no symlink at all.
fn stat_short<'r>(
    req: &Request<'r>,
    path: &'r CStr,
    route: Route,
) -> Result<Sibling<'r>, NotServed> {
    if route == Route::Verified && !crate::policy::options_are_the_walks(req) {
        return no_link(req, path);
    }
    if req.symlink_policy() == SymlinkPolicy::Always {
        return open_followed(req, path);
    }
    let info = served_file(req, path).ok_or(NotServed::Absent)?;
    if info.kind() != FileKind::Regular {
        req.log_with(Level::Debug, 0, || {
            format!("ignoring {}: not a regular file", path.to_string_lossy())
        });
        return Err(NotServed::Absent);
    }
    let (admitted, opened) = (Admitted::Short, None);
    Ok(Sibling {
        path,
        info,
        admitted,
        opened,
    })
}

/// A sibling that must be a regular file under its own name (an lstat),
/// opened without following a link (`Admitted::Asked` with
/// `SymlinkPolicy::Never`: the opened file must be the one found).
fn no_link<'r>(req: &Request<'r>, path: &'r CStr) -> Result<Sibling<'r>, NotServed> {
    let info = req.stat(path, true).map_err(|_| NotServed::Absent)?;
    if info.kind() != FileKind::Regular {
        req.log_with(Level::Debug, 0, || {
            format!(
                "ignoring {}: not a regular file (symlinks to a verified sibling are \
                 followed only where Options are set in <Directory>)",
                path.to_string_lossy()
            )
        });
        return Err(NotServed::Absent);
    }
    let admitted = Admitted::Asked {
        policy: SymlinkPolicy::Never,
    };
    Ok(Sibling {
        path,
        info,
        admitted,
        opened: None,
    })
}

/// A sibling where `Options` follow every symlink (and sections decide):
/// opened as core opens a file, its `fstat` the lookup's answer; one in
/// an old in-tree store (reached through a link) is passed over.
fn open_followed<'r>(req: &Request<'r>, path: &'r CStr) -> Result<Sibling<'r>, NotServed> {
    let f = req.open(path).map_err(|st| {
        // Missing is the common case; anything else is worth a line.
        if st != libc::ENOENT && st != libc::ENOTDIR {
            let msg = format!(
                "cannot open sibling, trying next: {}",
                path.to_string_lossy()
            );
            req.log(Level::Debug, st, &msg);
        }
        NotServed::Absent
    })?;
    let info = *f.info();
    if info.kind() != FileKind::Regular {
        req.log_with(Level::Debug, 0, || {
            format!("ignoring {}: not a regular file", path.to_string_lossy())
        });
        return Err(NotServed::Absent);
    }
    if crate::store_guard::opened_refused(req, path, info.version()) {
        return Err(NotServed::Absent);
    }
    Ok(Sibling {
        path,
        info,
        admitted: Admitted::Short,
        opened: Some(f),
    })
}

/// The first sibling of `base` for one coding (`.zst`, then `.zstd`) that
/// exists and that `route`'s rules allow.
pub fn find_sibling<'r>(
    req: &Request<'r>,
    base: &CStr,
    c: Coding,
    route: Route,
) -> Option<Sibling<'r>> {
    c.suffixes().iter().find_map(|suffix| {
        let path = req.path_with_suffix(base, suffix);
        match stat_sibling(req, path, suffix.as_bytes(), route) {
            Ok(s) => Some(s),
            Err(NotServed::Refused) => {
                counters::passed_over(Reason::Refused, c);
                None
            }
            Err(NotServed::Absent) => None,
        }
    })
}

/// The delta of `base` against the dictionary with SHA-256 `hash`, if it
/// exists and `route`'s rules allow it: on `Route::Verified` it is sent
/// only once known to decode, against that dictionary, to the original's
/// current bytes (`verified_delta`); else its own name's rules decide.
pub fn find_delta<'r>(
    req: &Request<'r>,
    base: &CStr,
    d: DeltaCoding,
    hash: &[u8; 32],
    route: Route,
) -> Option<Sibling<'r>> {
    let suffix = dictionary::DeltaSuffix::new(hash, d);
    let path = req.path_with_suffix(base, suffix.as_bytes());
    stat_sibling(req, path, suffix.as_bytes(), route).ok()
}

/// Warns once per sibling version per process (`memo::stale`).
pub fn warn_stale(req: &Request<'_>, original: &CStr, s: &Sibling<'_>) {
    let level = match memo::stale::first_report(s.info.version()) {
        true => Level::Warn,
        false => Level::Debug,
    };
    req.log_with(level, 0, || {
        format!(
            "stale sibling not served (older than {}): {}",
            original.to_string_lossy(),
            s.path.to_string_lossy()
        )
    });
}

/// Why a file could not be opened as Apache would serve it.
pub enum NotOpened {
    /// The open failed (permissions, vanished): APR's status.
    Unreadable(gdn_httpd::apr_status_t),
    /// What was opened is not what `Options` allow under the name.
    Swapped,
}

/// Opens `path` for sending, as core does, and checks that what was
/// opened is what `Options` allow under that name: the one open every
/// responder uses for the request's own file.
pub fn open_as_allowed<'r>(req: &Request<'r>, path: &CStr) -> Result<File<'r>, NotOpened> {
    let f = req.open(path).map_err(NotOpened::Unreadable)?;
    if opened_as_allowed(req, path, f.info()) {
        Ok(f)
    } else {
        Err(NotOpened::Swapped)
    }
}

/// Opens a sibling for sending: judged by sections, what `Options` allow
/// under its name; asked of Apache, the very file Apache found, opened as
/// the sibling's own `Options` allow: without following a symlink where
/// they refuse links (Apache's walk stats the name, following links,
/// then checks it with an lstat, so a link swapped in and out between
/// the two is approved with its target's stat), through a link only to
/// a file of the link's owner under `SymLinksIfOwnerMatch`.
pub fn open_sibling<'r>(req: &Request<'r>, s: &Sibling<'r>) -> Result<File<'r>, NotOpened> {
    if let Some(f) = s.opened {
        return Ok(f);
    }
    let Admitted::Asked { policy } = s.admitted else {
        return open_as_allowed(req, s.path);
    };
    let f = match policy {
        SymlinkPolicy::Never => req.open_nofollow(s.path),
        _ => req.open(s.path),
    }
    .map_err(NotOpened::Unreadable)?;
    let link_allowed = || match req.stat(s.path, true) {
        Ok(now) if now.kind() == FileKind::Symlink => now.user() == f.info().user(),
        Ok(now) => now.same_file(f.info()),
        Err(_) => false,
    };
    let same =
        f.info().same_file(&s.info) && (policy != SymlinkPolicy::IfOwnerMatch || link_allowed());
    if same {
        Ok(f)
    } else {
        log_swapped(req, s.path);
        Err(NotOpened::Swapped)
    }
}

//! The index fixup: a DirectoryIndex candidate whose file is missing but
//! whose sibling exists gets the sibling's stat, so mod_dir accepts it.

use super::name::HANDLER;
use crate::config::DirConfig;
use crate::lookup;
use gdn_httpd::{FileKind, Request, Status};

/// Late fixup: when this module will handle an index subrequest whose file
/// is missing but a sibling exists, make the sibling's stat visible so
/// mod_dir accepts it as a DirectoryIndex candidate. Main requests need no
/// help (the handler copes with a missing file), so they pay nothing here.
pub fn fixup<'r>(req: &Request<'r>, dir: impl FnOnce() -> &'r DirConfig) -> Status {
    if !req.is_subrequest()
        || req.is_sibling_check()
        || !req.handler_is(HANDLER)
        || req.finfo().kind() != FileKind::Missing
        || req.rejects_path_info()
    {
        return Status::DECLINED;
    }
    let Some(filename) = req.filename() else {
        return Status::DECLINED;
    };
    let first = dir()
        .encodings()
        .iter()
        .find_map(|&c| lookup::find_sibling(req, filename, c, lookup::Route::OwnName));
    if let Some(s) = first {
        req.set_finfo(&s.info);
        // For the handler, on this request (run as a subrequest) and on
        // the one mod_dir's fast redirect copies it into, which keeps its
        // own request_config: the state names the file it is about.
        req.set_request_state(filename);
        if let Some(main) = req.main_request() {
            main.set_request_state(filename);
        }
    }
    Status::DECLINED
}

/// Whether the fixup put a sibling's stat in `r->finfo` for this request's
/// file (the original is then missing).
pub(super) fn put_sibling_finfo(req: &Request<'_>) -> bool {
    req.request_state()
        .is_some_and(|s| Some(s) == req.filename())
}

//! What every responder needs of the request: the request, the file's
//! name, its configuration, the dictionary the client announced and the
//! site dictionary's `Link`; and the one way a sibling is opened.

use crate::answer::Skip;
use crate::config::Settings;
use crate::lookup::{self, NotOpened, Sibling};
use gdn_core::coding::Coding;
use gdn_httpd::{File, FileVersion, Level, Request};
use std::ffi::CStr;

/// What every responder needs of the request.
pub struct Responder<'a, 'r> {
    pub(super) req: &'a Request<'r>,
    pub(super) filename: &'r CStr,
    pub(super) settings: Settings<'r>,
    /// The dictionary the client announced (SHA-256), which a delta's
    /// header must name.
    pub(super) dictionary: Option<[u8; 32]>,
    /// The `Link` to the host's site dictionary, on a page that joins it
    /// once it is trained.
    pub(super) link: Option<&'r CStr>,
    /// Whether the original exists: siblings are judged against its
    /// version (`judge`), read only where one is.
    has_original: bool,
}

impl<'a, 'r> Responder<'a, 'r> {
    /// The responder for a request's representations.
    pub fn new(req: &'a Request<'r>, filename: &'r CStr, settings: Settings<'r>) -> Self {
        Responder {
            req,
            filename,
            settings,
            dictionary: None,
            link: None,
            has_original: false,
        }
    }

    /// The responder for a resource whose original exists, or not.
    pub fn with_original(self, has_original: bool) -> Self {
        Responder {
            has_original,
            ..self
        }
    }

    /// The original's version, where it exists.
    pub(super) fn original(&self) -> Option<FileVersion> {
        self.has_original.then(|| self.req.finfo().version())
    }

    /// The responder with the dictionary the client announced and the
    /// site dictionary's `Link`, where the page has one.
    pub fn with(self, dictionary: Option<[u8; 32]>, link: Option<&'r CStr>) -> Self {
        Responder {
            dictionary,
            link,
            ..self
        }
    }

    /// Opens a sibling of coding `of` (`None`: a delta): one that cannot
    /// be opened (or is opened as something the symlink policy refuses)
    /// gives way, with a debug line, and the walk does not try it again.
    pub(super) fn open(&self, of: Option<Coding>, s: &Sibling<'r>) -> Result<File<'r>, Skip<'r>> {
        lookup::open_sibling(self.req, s).map_err(|why| {
            if let NotOpened::Unreadable(st) = why {
                let what = match of {
                    Some(_) => "cannot open sibling, trying next",
                    None => "cannot open delta",
                };
                let path = s.path.to_string_lossy();
                self.req.log(Level::Debug, st, &format!("{what}: {path}"));
            }
            Skip::Unopenable(of)
        })
    }
}

//! The responders: each sends one representation the walk resolved
//! (`Answer`), or gives way when its file turns out unopenable or
//! unusable (`Skip`, saying why), so the next candidate is tried. This
//! file dispatches; `plan` says which headers a representation goes out
//! with (pure, unit-tested), `body` sends a file as core would, and
//! `decompress`, `delta`, `judge` and `padding` serve their kinds. They
//! only send; what follows an answer (counting, the log note, copies
//! asked for) is `metrics::answered` and `ondemand::ask`.

mod body;
mod decompress;
pub(crate) mod delta;
mod inspect;
mod judge;
mod knobs;
mod padding;
mod plan;
mod responder;
pub(crate) mod streams;

pub(crate) use body::mark;
pub use body::send_static;
pub(crate) use padding::{plan_jitter, random_len};
pub use responder::Responder;

use crate::answer::{Answer, Skip};
use crate::facts::disk::OpenCopy;
use crate::lookup::Sibling;
use crate::outcome::Outcome;
use crate::walk::Resolved;
use gdn_core::coding::Coding;
use gdn_core::representation::Representation;
use gdn_httpd::{Level, Status};

/// A representation the walk resolved, as the request's facts found it.
pub type Sendable<'d, 'r> = Resolved<'r, &'d Sibling<'r>, OpenCopy<'r>>;

impl<'r> Responder<'_, 'r> {
    /// Sends one resolved representation.
    pub fn send(&self, r: Sendable<'_, 'r>) -> Result<Answer, Skip<'r>> {
        let req = self.req;
        // The one place `Vary: Accept-Encoding` is set. Error responses,
        // which keep only err_headers_out, get it from the
        // `insert_error_filter` hook.
        if plan::vary(&r) {
            req.vary(c"Accept-Encoding");
        }
        match r {
            Resolved::Delta(d, s) => delta::send_delta(self, d, s),
            Resolved::CachedDelta(d, OpenCopy { path, file, .. }) => {
                delta::send_checked(self, d, &file, path, Representation::CachedDelta)
            }
            Resolved::Sibling(c, s) => body::send_sibling(self, c, s),
            Resolved::Cached(c, OpenCopy { path, file, .. }) => Ok(body::send_coded(
                self,
                c,
                &file,
                path,
                Representation::Cached,
            )),
            Resolved::Original { .. } => body::send_original(self),
            Resolved::Decode(c, s, w) => decompress::decompress(self, c, s, w),
            Resolved::DecodedCopy(c, OpenCopy { file, .. }, s) => {
                Ok(decompress::send_decoded_copy(self, c, &file, s))
            }
            Resolved::NotAcceptable(avail) => Ok(not_acceptable(self, avail)),
            Resolved::NoneDecodable { too_large, logged } => {
                Ok(decompress::none_decodable(self, too_large, logged))
            }
            Resolved::Busy => Ok(busy(self)),
            Resolved::NotFound => Ok(not_found(self, false)),
            Resolved::PathInfo => Ok(not_found(self, true)),
            Resolved::Options => Ok(Answer::other(req.send_options())),
            Resolved::NotImplemented => Ok(Answer::other(Status::NOT_IMPLEMENTED)),
            Resolved::MethodNotAllowed => {
                req.log_with(Level::Info, 0, || {
                    format!("method not allowed for {}", self.filename.to_string_lossy())
                });
                Ok(Answer::other(Status::METHOD_NOT_ALLOWED))
            }
        }
    }
}

/// 503 with `Retry-After` when every decode that could answer gave way
/// to the bound on streamed decodes (`streams`).
fn busy(a: &Responder<'_, '_>) -> Answer {
    a.req.set_error_header_value(c"Retry-After", "1");
    a.req.log_with(Level::Info, 0, || {
        format!(
            "too many decodes streaming in this process: 503 for {}",
            a.filename.to_string_lossy()
        )
    });
    Answer::new(Status::SERVICE_UNAVAILABLE, Outcome::Error, 0)
}

/// 404 for a file that does not exist (or path info after one).
fn not_found(a: &Responder<'_, '_>, with_path_info: bool) -> Answer {
    a.req.log_with(Level::Info, 0, || {
        format!(
            "file does not exist: {}{}",
            a.filename.to_string_lossy(),
            if with_path_info {
                " (with path info)"
            } else {
                ""
            }
        )
    });
    match with_path_info {
        true => Answer::other(Status::NOT_FOUND),
        false => Answer::new(Status::NOT_FOUND, Outcome::NotFound, 0),
    }
}

/// 406 with the codings the resource has, when decompression is off.
fn not_acceptable(a: &Responder<'_, '_>, fresh: [bool; 3]) -> Answer {
    let (req, filename) = (a.req, a.filename);
    let avail: Vec<&str> = Coding::ALL
        .iter()
        .filter(|c| fresh[c.index()])
        .map(|c| c.token())
        .collect();
    req.custom_response(
        Status::NOT_ACCEPTABLE,
        &format!(
            "Not Acceptable: this resource is available only with Content-Encoding: {}\n",
            avail.join(", ")
        ),
    );
    req.log(
        Level::Info,
        0,
        &format!(
            "no acceptable coding and GzipDiskNgDecompress Off: {}",
            filename.to_string_lossy()
        ),
    );
    Answer::new(Status::NOT_ACCEPTABLE, Outcome::NotAcceptable, 0)
}

//! Core's sections (`gdn_httpd::sections`) as the short answer reads
//! them (`short`), and the configuration's facts kept between requests.

use super::short::{self, Compared, Server, Short};
use super::Verdicts;
use gdn_httpd::sections::{DirSections, Section, Sections, ServerSections};
use gdn_httpd::{Level, PostConfig, Request};
use std::ffi::CStr;
use std::sync::RwLock;

/// The facts of the configuration read last; before any, every sibling
/// is asked of Apache.
static SHORT: RwLock<Option<Short>> = RwLock::new(None);

impl<'c> short::Sect for Section<'c> {
    type List = Sections<'c>;

    fn regex(&self) -> Option<usize> {
        self.regex_id()
    }

    fn pattern(&self) -> Option<&[u8]> {
        Section::pattern(self).map(CStr::to_bytes)
    }

    fn wildcard(&self) -> bool {
        self.is_wildcard()
    }

    fn regex_matches(&self, name: &CStr) -> bool {
        Section::regex_matches(self, name)
    }

    fn wildcard_matches(&self, name: &CStr) -> bool {
        Section::wildcard_matches(self, name)
    }

    fn nested(&self) -> Option<Sections<'c>> {
        let n = Section::nested(self);
        (!n.is_empty()).then_some(n)
    }
}

impl<'c> short::List for Sections<'c> {
    type S = Section<'c>;

    fn id(&self) -> usize {
        Sections::id(self)
    }

    fn len(&self) -> usize {
        Sections::len(self)
    }

    fn at(&self, i: usize) -> Section<'c> {
        Sections::at(self, i)
    }
}

fn server(s: ServerSections<'_>, refused: bool) -> Server<Sections<'_>> {
    Server {
        id: s.id,
        refused,
        files: s.files,
        dirs: s.dirs,
        locations: s.locations,
    }
}

/// Learns the shapes of every server's sections, each server with its
/// verdict (a server refused takes no short answer), and says, once per
/// start, which servers ask Apache about every sibling and why.
pub fn learn(ctx: &PostConfig<'_>, verdicts: &Verdicts) {
    let say = !ctx.dry_run();
    let mut servers = Vec::new();
    for s in ctx.server_sections() {
        let at = s.defined_at();
        let why = verdicts.refusal_of(at.as_ref().map(|(file, line)| (&**file, *line)));
        // A refusal outside every <VirtualHost> is said once.
        let first = servers.is_empty() || verdicts.refusal.is_none();
        if let Some(why) = why.filter(|_| say && first) {
            s.log().log(
                Level::Info,
                &format!(
                    "siblings' names are asked of Apache (a request of their own each): {why}"
                ),
            );
        }
        servers.push(server(s, why.is_some()));
    }
    let short = Short::learn(&servers);
    if let Ok(mut s) = SHORT.write() {
        *s = Some(short);
    }
}

/// A request as the comparison reads it.
struct Live<'a, 'r> {
    req: &'a Request<'r>,
    dir: DirSections<'r>,
}

impl<'r> Compared for Live<'_, 'r> {
    type L = Sections<'r>;

    fn server(&self) -> usize {
        self.req.server_id()
    }

    fn lists(&self) -> Server<Sections<'r>> {
        // The server's verdict is in what `Short` learned, not read per request.
        server(self.req.server_sections(), false)
    }

    fn files(&self) -> Sections<'r> {
        self.dir.files
    }

    fn per_request_rules(&self) -> bool {
        let d = &self.dir;
        d.if_sections || d.authcfg_override || d.override_list
    }

    fn filename(&self) -> Option<&[u8]> {
        self.req.filename().map(CStr::to_bytes)
    }

    fn file_uri(&self) -> Option<&[u8]> {
        let info = self.req.path_info().unwrap_or(b"");
        short::file_uri(self.req.uri()?, info)
    }
}

/// Whether Apache's rules could treat the request's file plus `suffix`
/// otherwise than the file: true where the server's verdict rules the
/// short answer out, or a section could tell the names apart.
pub fn sibling_rules_may_differ(req: &Request<'_>, suffix: &[u8]) -> bool {
    let Ok(guard) = SHORT.read() else {
        return true;
    };
    let Some(short) = guard.as_ref() else {
        return true;
    };
    let live = Live {
        req,
        dir: req.dir_sections(),
    };
    short.may_differ(&live, suffix)
}

/// Whether the request's server takes the short answer, so that its
/// `Options` are where the directory walk reads them: then the request's
/// symlink policy is the one Apache's walk applied to its own directory.
pub fn options_are_the_walks(req: &Request<'_>) -> bool {
    let Ok(guard) = SHORT.read() else {
        return false;
    };
    guard
        .as_ref()
        .is_some_and(|short| short.takes_short_answer(req.server_id()))
}

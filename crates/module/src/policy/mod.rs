//! The access policy of the sibling checks, as pure functions over the
//! configuration httpd read (`gdn_httpd::conftree`): which configurations
//! take the short answer (sections compared per name, no twin), what a
//! twin may come to for its file to be sent, which filters leave bytes as
//! they are, where URLs map besides `DocumentRoot`, and the short
//! answer's comparison of sections (`short`). The configuration is read
//! once, at post_config; csrc/access.c holds the mechanism (the twin) and
//! is handed the verdicts.

mod clients;
mod filters;
mod hooks;
mod scan;
mod sections;
mod short;
#[cfg(test)]
mod short_tests;
#[cfg(test)]
mod tests;
mod twin;
mod words;

use gdn_httpd::conftree::Configuration;
use gdn_httpd::{Asked, Finfo, HarnessRule, PostConfig, SiblingRules, Status, SymlinkPolicy};
use std::sync::RwLock;

pub use sections::{options_are_the_walks, sibling_rules_may_differ};
pub use twin::{stepped_aside_for, stop_before_access, unaskable};

/// What each twin's judgement reads of the configuration, learned at
/// post_config: its module with a content handler outside those known
/// (`hooks::unknown_handler`), and its modules not known hooking a
/// request (then every page may tell clients apart).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnknownModules {
    pub unknown_handler: Option<String>,
    pub client_hooks: Option<String>,
}

/// `UnknownModules` of the configuration read last; before any, nothing is
/// known and every twin is refused.
static LEARNED: RwLock<Option<UnknownModules>> = RwLock::new(None);

/// Reads the configuration and hands the sibling checks their verdicts.
pub fn learn(ctx: &PostConfig<'_>) {
    let conf = ctx.configuration();
    let (verdicts, learned) = rules(&conf);
    if let Ok(mut l) = LEARNED.write() {
        *l = Some(learned);
    }
    ctx.set_sibling_rules(&verdicts.sibling);
    sections::learn(ctx, &verdicts);
}

/// The verdicts on a configuration: why no server takes the short answer
/// (a refusal outside every `<VirtualHost>`), else each
/// `<VirtualHost>`'s, and what the sibling checks of csrc/access.c are
/// handed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdicts {
    pub refusal: Option<String>,
    /// A `<VirtualHost>`'s refusal, by the file and line it starts at.
    pub vhosts: Vec<(String, u32, String)>,
    pub sibling: SiblingRules,
}

impl Verdicts {
    /// Why the server defined at `at` (a `<VirtualHost>`'s file and line;
    /// `None`: the main server) takes no short answer, if it does not.
    pub fn refusal_of(&self, at: Option<(&str, u32)>) -> Option<&str> {
        self.refusal.as_deref().or_else(|| {
            let (file, line) = at?;
            let v = self.vhosts.iter().find(|v| v.0 == file && v.1 == line)?;
            Some(v.2.as_str())
        })
    }
}

/// The verdicts on `conf`, and what twins' judgements read of it.
pub fn rules(conf: &Configuration) -> (Verdicts, UnknownModules) {
    let read = scan::scan(&conf.lines);
    let unknown_handler = hooks::unknown_handler(conf);
    let client_hooks = hooks::unknown_request_hooks(conf)
        .or_else(|| clients::server_wide(&conf.lines, hooks::loaded(conf, "mod_ssl.c")));
    let refusal = read
        .global
        .or_else(|| client_hooks.clone())
        .or_else(|| unknown_handler.clone());
    let verdicts = Verdicts {
        refusal,
        vhosts: read.vhosts,
        sibling: SiblingRules {
            // A module not known that hooks the request may edit its
            // headers before the handler reads them (mod_remoteip
            // removes the `X-Forwarded-For` it took the address from):
            // a twin starts from the headers as read.
            headers_edited: (read.edits_headers && hooks::loaded(conf, "mod_headers.c"))
                || hooks::unknown_request_hooks(conf).is_some(),
            filters: filters::PLAIN_FILTERS.to_vec(),
            harness: HarnessRule::of(filters::HARNESS_START, filters::harness),
            recorders: hooks::RECORDERS.to_vec(),
            twin_log: Some(hooks::TWIN_LOG),
        },
    };
    let learned = UnknownModules {
        unknown_handler,
        client_hooks,
    };
    (verdicts, learned)
}

fn learned() -> UnknownModules {
    let unread = "the configuration not read yet".to_owned();
    match LEARNED.read() {
        Ok(l) => l.clone().unwrap_or(UnknownModules {
            unknown_handler: Some(unread.clone()),
            client_hooks: Some(unread),
        }),
        Err(_) => UnknownModules {
            unknown_handler: Some(unread.clone()),
            client_hooks: Some(unread),
        },
    }
}

/// Why Apache would not answer a GET for a file with that very file:
/// the status its twin came to, and, where it found the file, what else
/// would answer (another handler, a content filter, rules that tell
/// clients apart).
#[derive(Debug, Clone)]
pub struct Refused {
    pub status: Status,
    pub why: Option<String>,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.why {
            Some(why) => f.write_str(why),
            None => write!(f, "status {}", self.status.code()),
        }
    }
}

/// A sibling's twin judged: its file and the symlink policy of its own
/// `Options` where Apache would send it as it is, else why not; beside
/// it, why the rules that gave it could answer another client otherwise
/// (which a shared cache must be told), if they could.
pub fn sibling(asked: &Asked<'_>) -> (Result<(Finfo, SymlinkPolicy), Refused>, Option<String>) {
    let l = learned();
    let client = clients::dependence(&asked.clients, l.client_hooks.as_deref());
    let why = asked
        .twin
        .as_ref()
        .and_then(|t| twin::refusal(t, l.unknown_handler.as_deref()));
    let answer = match (asked.found, why) {
        (Some(found), None) => Ok(found),
        (_, why) => Err(refused(asked, why)),
    };
    (answer, client)
}

/// A twin of a client no rule knows judged: whether it gets the file as
/// it is, and every other client alike.
pub fn public(asked: &Asked<'_>) -> Result<(), Refused> {
    let l = learned();
    let why = asked.twin.as_ref().and_then(|t| {
        twin::refusal(t, l.unknown_handler.as_deref())
            .or_else(|| clients::dependence(&asked.clients, l.client_hooks.as_deref()))
    });
    match (asked.found.is_some(), why) {
        (true, None) => Ok(()),
        (_, why) => Err(refused(asked, why)),
    }
}

fn refused(asked: &Asked<'_>, why: Option<String>) -> Refused {
    let status = if asked.found.is_some() {
        Status::FORBIDDEN
    } else {
        asked.status
    };
    let stopped = || asked.stopped.map(|s| s.to_string_lossy().into_owned());
    Refused {
        status,
        why: why.or_else(stopped),
    }
}

/// Where `Alias`, `AliasMatch`, `ScriptAlias`, `ScriptAliasMatch` and
/// `UserDir` map URLs, as written: (directive, target) pairs.
pub fn url_mappings(conf: &Configuration) -> Vec<(String, String)> {
    let is = |n: &str, w: &str| n.eq_ignore_ascii_case(w);
    conf.lines
        .iter()
        .filter_map(|l| {
            let w = words::words(&l.args);
            let n = l.name.as_str();
            let target = if ["Alias", "ScriptAlias", "AliasMatch", "ScriptAliasMatch"]
                .iter()
                .any(|a| is(n, a))
            {
                w.get(1).or(w.first())
            } else if is(n, "UserDir") {
                w.first()
                    .filter(|t| !is(t, "disabled") && !is(t, "enabled"))
            } else {
                None
            };
            target
                .filter(|t| !t.is_empty())
                .map(|t| (l.name.clone(), t.clone()))
        })
        .collect()
}

//! The access policy of the sibling checks, as pure functions over the
//! configuration httpd read (`gdn_httpd::conftree`): which configurations
//! take the short answer (sections compared per name, no twin), what a
//! twin may come to for its file to be sent, which filters leave bytes as
//! they are, where URLs map besides `DocumentRoot`. The configuration is
//! read once, at post_config; csrc/access.c holds the mechanism (the
//! twin, the per-request comparison of sections) and is handed the
//! verdicts.

mod filters;
mod hooks;
mod scan;
#[cfg(test)]
mod tests;
mod twin;
mod words;

use gdn_httpd::conftree::Configuration;
use gdn_httpd::{PostConfig, SiblingRules, Twin};
use std::sync::RwLock;

/// The configuration's module with a content handler outside those known
/// (`hooks::unknown_handler`), learned at post_config and read by each
/// twin's judgement; before any configuration, every handler is unknown.
static UNKNOWN_HANDLER: RwLock<Option<Option<String>>> = RwLock::new(None);

/// Reads the configuration and hands the sibling checks their verdicts.
pub fn learn(ctx: &PostConfig<'_>) {
    let conf = ctx.configuration();
    let (rules, unknown) = rules(&conf);
    if let Ok(mut u) = UNKNOWN_HANDLER.write() {
        *u = Some(unknown);
    }
    ctx.set_sibling_rules(&rules);
}

/// The verdicts on `conf`, and its unknown content handler.
pub fn rules(conf: &Configuration) -> (SiblingRules, Option<String>) {
    let read = scan::scan(&conf.lines);
    let unknown_handler = hooks::unknown_handler(conf);
    let request_hooks = hooks::unknown_request_hooks(conf);
    let refusal = read
        .global
        .or_else(|| request_hooks.clone())
        .or_else(|| unknown_handler.clone());
    let rules = SiblingRules {
        refusal,
        vhosts: read.vhosts,
        client_hooks: request_hooks,
        headers_edited: read.edits_headers && hooks::loaded(conf, "mod_headers.c"),
        filters: filters::PLAIN_FILTERS.to_vec(),
    };
    (rules, unknown_handler)
}

fn unknown_handler() -> Option<String> {
    match UNKNOWN_HANDLER.read() {
        Ok(u) => u
            .clone()
            .unwrap_or_else(|| Some("the configuration not read yet".to_owned())),
        Err(_) => Some("the configuration's reading lost".to_owned()),
    }
}

/// Why a sibling's twin would not get its file as it is, if so.
pub fn sibling_refusal(t: &Twin<'_>) -> Option<String> {
    twin::refusal(t, unknown_handler().as_deref())
}

/// Why a client no rule knows, or another client, would not get the
/// file as it is, if so: what every reader may GET.
pub fn public_refusal(t: &Twin<'_>) -> Option<String> {
    twin::public_refusal(t, unknown_handler().as_deref())
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

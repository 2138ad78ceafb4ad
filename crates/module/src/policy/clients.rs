//! Whether a twin's answer could differ for another client: what a page
//! every reader may GET (the site dictionary, a group's kept versions)
//! must not have, and what shared caches in front must be told of.

use gdn_httpd::conftree::Line;
use gdn_httpd::{AuthzNode, ClientRules};

/// Modules whose hooks are known (`hooks::KNOWN_MODULES`) but
/// whose per-directory directives may answer clients apart by what the
/// module reads of the connection, not of the records this policy reads:
/// mod_ssl's `SSLRequire`, `SSLRequireSSL` and `SSLVerifyClient` judge
/// the client's certificate and TLS, and a twin runs on the asking
/// client's connection. Where a section on a page's path (or an
/// .htaccess) configures one of them, the page's answer may depend on
/// the client.
const CONNECTION_RULES: &[(&str, &str)] = &[(
    "mod_ssl.c",
    "mod_ssl's rules in a section (SSLRequire, SSLRequireSSL, SSLVerifyClient)",
)];

/// mod_ssl's per-directory rules written for a whole server, outside
/// every section: each request's record starts from them, so with
/// mod_ssl loaded every page may tell clients apart by their TLS.
pub fn server_wide(lines: &[Line], ssl_loaded: bool) -> Option<String> {
    let rule = |l: &Line| {
        ["SSLRequire", "SSLRequireSSL"]
            .iter()
            .any(|d| l.name.eq_ignore_ascii_case(d))
    };
    // A <VirtualHost> is a whole server; <IfModule> and the like are
    // looked through.
    let in_a_section = |i: usize| {
        super::scan::enclosing(lines, i)
            .is_some_and(|u| !u.name.eq_ignore_ascii_case("<VirtualHost"))
    };
    let (_, l) = lines
        .iter()
        .enumerate()
        .find(|&(i, l)| rule(l) && !in_a_section(i))?;
    ssl_loaded.then(|| format!("{} for a whole server ({}:{})", l.name, l.file, l.line))
}

/// Why another client might be answered otherwise: modules not known
/// hooking the request (`client_hooks`), records not read, `<If>`
/// sections, authorization other than exactly `Require all granted` (or
/// none), `Allow`/`Deny` rules, rewrite rules, a module of
/// `CONNECTION_RULES` configured on the path; `None` when every client
/// would get the same. Whatever sets the environment from a request's
/// headers or address only matters through those rules.
pub fn dependence(c: &ClientRules<'_>, client_hooks: Option<&str>) -> Option<String> {
    if let Some(h) = client_hooks {
        return Some(h.to_owned());
    }
    if let Some(u) = c.unread {
        return Some(u.to_string_lossy().into_owned());
    }
    let configured = |m: &str| c.sectioned.iter().any(|s| s.to_bytes() == m.as_bytes());
    if let Some((_, why)) = CONNECTION_RULES.iter().find(|(m, _)| configured(m)) {
        return Some((*why).to_owned());
    }
    let why = if c.if_sections {
        "an <If> section applies"
    } else if !c.authz.is_empty() && !grants_everyone(&c.authz, 0).0 {
        "authorization other than Require all granted"
    } else if c.access_rules {
        "Allow or Deny rules"
    } else if c.rewrite_rules {
        "rewrite rules"
    } else {
        return None;
    };
    Some(why.to_owned())
}

/// Whether node `i` (and all it holds) is a plain `Require all granted`
/// for GET, and the index after it. Negation, any other provider (users,
/// groups, addresses, hosts, environment, expressions) and rules limited
/// to other methods are not.
fn grants_everyone(nodes: &[AuthzNode<'_>], i: usize) -> (bool, usize) {
    let Some(n) = nodes.get(i) else {
        return (false, i);
    };
    let mut all = !n.negate;
    let mut next = i + 1;
    if n.children == 0 {
        return (all && n.get && is_all_granted(n), next);
    }
    for _ in 0..n.children {
        let (ok, after) = grants_everyone(nodes, next);
        all &= ok;
        next = after;
    }
    (all, next)
}

fn is_all_granted(n: &AuthzNode<'_>) -> bool {
    let provider = n.provider.map(|p| p.to_bytes());
    let args = n.args.to_bytes();
    let args = args.trim_ascii_start();
    provider.is_some_and(|p| p.eq_ignore_ascii_case(b"all"))
        && args.len() >= 7
        && args[..7].eq_ignore_ascii_case(b"granted")
        && matches!(args.get(7), None | Some(b' ' | b'\t'))
}

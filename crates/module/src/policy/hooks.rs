//! Which modules hook a request in ways the policy knows: a module
//! outside these lists may treat two names of one directory, or two
//! clients, differently, so the short answer (and a page's being public)
//! is refused where one hooks the request.

use super::words::listed;
use gdn_httpd::conftree::{Configuration, HOOKS};
use gdn_httpd::Level;

/// Modules whose request hooks (translate, storage, environment, access,
/// authentication, types, fixups) treat two names of one directory alike
/// unless a directive `scan` refuses says otherwise. mod_proxy's act on
/// a request for a path only through `ProxyPass` and `ProxyPassMatch`
/// (directives the scan refuses; a twin they map is proxied, not sent
/// its file) and on a forward proxy's absolute URI for another host:
/// every PHP-FPM site loads it for mod_proxy_fcgi, which hooks none.
const KNOWN_MODULES: &[&str] = &[
    "core.c",
    "http_core.c",
    "mod_so.c",
    "mod_unixd.c",
    "mod_log_config.c",
    "mod_logio.c",
    "mod_version.c",
    "mod_watchdog.c",
    "mod_access_compat.c",
    "mod_alias.c",
    "mod_auth_basic.c",
    "mod_authn_core.c",
    "mod_authn_file.c",
    "mod_authz_core.c",
    "mod_authz_host.c",
    "mod_authz_user.c",
    "mod_authz_groupfile.c",
    "mod_autoindex.c",
    "mod_deflate.c",
    "mod_brotli.c",
    "mod_dir.c",
    "mod_env.c",
    "mod_filter.c",
    "mod_headers.c",
    "mod_expires.c",
    "mod_mime.c",
    "mod_negotiation.c",
    "mod_reqtimeout.c",
    "mod_setenvif.c",
    "mod_status.c",
    "mod_rewrite.c",
    "mod_proxy.c",
    "mod_ssl.c",
    "mod_http2.c",
    "event.c",
    "worker.c",
    "prefork.c",
    "mod_gzip_disk_ng.c",
];

/// Modules whose post_read_request hook only records the request it is
/// given (mod_log_forensic writes its "+" line there, and its "-" line
/// when the request is logged): it treats every name and client alike,
/// and a twin, which no client sent, does not run it, so the forensic
/// log holds the client's requests and no unfinished one of the module's.
pub const RECORDERS: &[&str] = &["mod_log_forensic.c"];

/// The least severe level a twin's hooks write to the error log. What
/// they log is of a request no client made, and would be read as the
/// client's, by an admin or by a tool that bans clients on such lines
/// (fail2ban's apache-auth filter on mod_authz_core's "client denied by
/// server configuration", or on an authentication failure): only what
/// says the server itself is in trouble is written. The module logs, on
/// the asking request, what the twin came to.
pub const TWIN_LOG: Level = Level::Crit;

/// Modules whose content handlers run only for the handler names they
/// own (a `SetHandler`/`AddHandler` name, or a type httpd passes as the
/// name when none is set, of the shapes `scan::magic_type` knows): a file
/// whose handler is unset and whose type is none of those goes to core's
/// default handler. Any other module's handler might claim any type.
const KNOWN_HANDLER_MODULES: &[&str] = &[
    "core.c",
    "mod_autoindex.c",
    "mod_status.c",
    "mod_negotiation.c",
    "mod_cgi.c",
    "mod_cgid.c",
    "mod_info.c",
    "mod_asis.c",
    "mod_proxy.c",
    "mod_proxy_balancer.c",
    "mod_ldap.c",
    "mod_md.c",
    "mod_http2.c",
    "mod_php.c",
    "mod_php7.c",
    "mod_php5.c",
    "mod_wsgi.c",
    "mod_rewrite.c",
    "mod_imagemap.c",
    "mod_cache.c",
    "mod_file_cache.c",
    "mod_auth_form.c",
    "mod_dav.c",
    "mod_reflector.c",
    "mod_heartmonitor.c",
    "util_ldap.c",
    "mod_gzip_disk_ng.c",
];

/// A module outside `KNOWN_MODULES` hooking a request's translation,
/// environment, access, authentication, types or fixups; `None` when none.
pub fn unknown_request_hooks(conf: &Configuration) -> Option<String> {
    // Every request hook read but the answer's own (judged per twin).
    let request = HOOKS
        .iter()
        .filter(|h| !matches!(**h, "insert_filter" | "handler"));
    request.into_iter().find_map(|hook| {
        conf.hooked(hook).iter().find_map(|m| match m {
            Some(m) if listed(KNOWN_MODULES, m) => None,
            Some(m) if *hook == "post_read_request" && listed(RECORDERS, m) => None,
            Some(m) => Some(format!("{m} hooks {hook}")),
            None => Some(format!("a module hooks {hook}")),
        })
    })
}

/// A module with a content handler outside `KNOWN_HANDLER_MODULES`, or
/// `None`: then such a module may answer any file whose handler is unset.
pub fn unknown_handler(conf: &Configuration) -> Option<String> {
    conf.hooked("handler").iter().find_map(|m| match m {
        Some(m) if listed(KNOWN_HANDLER_MODULES, m) => None,
        Some(m) => Some(format!("{m} has a content handler")),
        None => Some("a module has a content handler".to_owned()),
    })
}

/// Whether module `name` is loaded.
pub fn loaded(conf: &Configuration, name: &str) -> bool {
    conf.modules.iter().any(|m| m == name)
}

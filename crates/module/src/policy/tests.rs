//! The policy over configurations written here as httpd would read them:
//! each rule's case, and the shapes the trust tests met through Apache.

use super::clients::{dependence, server_wide};
use super::scan::{magic_type, refusal, scan, sibling_extension};
use super::{hooks, rules, twin, url_mappings, Verdicts};
use gdn_httpd::conftree::{Configuration, Line};
use gdn_httpd::{AuthzNode, ClientRules, Level, Twin};
use std::ffi::CStr;

/// A configuration from indented lines: `name args`, two spaces of
/// indent per section level, a section's name starting with `<`.
fn conf(text: &str) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    for (n, raw) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let depth = (raw.len() - raw.trim_start().len()) / 2;
        open.truncate(depth);
        let (name, args) = raw.trim().split_once(' ').unwrap_or((raw.trim(), ""));
        out.push(Line {
            name: name.to_owned(),
            args: args.to_owned(),
            file: "site.conf".to_owned(),
            line: n as u32 + 1,
            parent: open.last().copied(),
        });
        if name.starts_with('<') {
            open.push(out.len() - 1);
        }
    }
    out
}

fn refused(text: &str) -> Option<&'static str> {
    let lines = conf(text);
    (0..lines.len()).find_map(|i| refusal(&lines, i))
}

#[test]
fn debians_default_site_takes_the_short_answer() {
    let site = "
DocumentRoot /var/www/html
<Directory /var/www/>
  Options Indexes FollowSymLinks
  AllowOverride None
  Require all granted
<FilesMatch \"^\\.ht\">
  Require all denied
<IfModule mod_rewrite.c>
  RewriteEngine Off
SetEnvIf User-Agent EvilBot bad
AddType text/html .html
AddOutputFilterByType DEFLATE text/html
GzipDiskNgEncodings zstd br gzip
";
    assert_eq!(refused(site), None);
}

/// Rules that could tell a sibling's name from its page's, with the
/// refusal each gives.
const TELLING_RULES: &[(&str, &str)] = &[
    (
        "AddHandler cgi-script .gz",
        "a handler or filter chosen by a sibling's extension",
    ),
    (
        "AddOutputFilter INCLUDES .br",
        "a handler or filter chosen by a sibling's extension",
    ),
    (
        "AddType application/x-httpd-php .zst",
        "a handler's type given to a sibling's extension",
    ),
    (
        "ForceType application/x-httpd-php",
        "a handler's type forced",
    ),
    (
        "Require expr %{REQUEST_URI} =~ /x/",
        "a Require provider that may read the file",
    ),
    (
        "Require not file-owner",
        "a Require provider that may read the file",
    ),
    (
        "<Location /a>\n  Options -FollowSymLinks",
        "Options outside <Directory>",
    ),
    (
        "<Directory ~ ^/x>\n  Options None",
        "Options outside <Directory>",
    ),
    ("AllowOverride All", "an override beyond None"),
    ("AllowOverrideList Redirect", "an override beyond None"),
    ("MergeSlashes Off", "MergeSlashes Off"),
    ("RewriteEngine On", "RewriteEngine On"),
    (
        "Alias /favicon.ico /srv/icon.ico",
        "an Alias of a single name",
    ),
    (
        "SetEnvIf Request_URI \\.gz$ coded",
        "a SetEnvIf that tests the URI",
    ),
    (
        "SetEnvIfNoCase ^Req.*URI \\.gz$ coded",
        "a SetEnvIf that tests the URI",
    ),
    ("Redirect /a.gz /b", "a directive outside the list"),
    (
        "ProxyPass / http://127.0.0.1:9/",
        "a directive outside the list",
    ),
    (
        "ProxyPassMatch \\.gz$ http://127.0.0.1:9/",
        "a directive outside the list",
    ),
    (
        "<Location /a>\n  ProxyPass http://127.0.0.1:9/",
        "a directive outside the list",
    ),
    ("ProxyRequests On", "a directive outside the list"),
];

#[test]
fn each_rule_that_could_tell_names_apart_refuses() {
    for &(text, why) in TELLING_RULES {
        assert_eq!(refused(text), Some(why), "{text}");
    }
}

#[test]
fn the_same_rules_that_cannot_tell_names_apart_do_not() {
    for text in [
        "AddHandler cgi-script .cgi",
        "AddOutputFilter INCLUDES .shtml",
        "AddType application/x-httpd-php .php",
        "AddType text/plain .gz",
        "ForceType text/plain",
        "Require not ip 192.0.2.1",
        "Require valid-user",
        "<IfModule mod_alias.c>\n  <Directory /x>\n    <IfDefine X>\n      Options None",
        "<VirtualHost *:80>\n  Options None",
        "Options None",
        "AllowOverride None",
        "MergeSlashes On",
        "Alias /icons/ /usr/share/apache2/icons/",
        "SetEnvIf Remote_Addr ^192 near",
        "SetEnvIf X-Forwarded-For . proxied",
        "Allow from 192.0.2.1",
        "gzipdiskngjitter 16",
    ] {
        assert_eq!(refused(text), None, "{text}");
    }
}

#[test]
fn options_in_an_if_are_not_the_walks() {
    assert_eq!(
        refused("<Directory /x>\n  <If true>\n    Options None"),
        Some("Options outside <Directory>")
    );
}

#[test]
fn a_refusal_is_the_hosts_where_it_is_in_one() {
    let lines =
        conf("<VirtualHost *:80>\n  RewriteEngine On\n<VirtualHost *:81>\n  Options None\n");
    let read = scan(&lines);
    assert_eq!(read.global, None);
    assert_eq!(read.vhosts.len(), 1);
    assert_eq!(
        (read.vhosts[0].0.as_str(), read.vhosts[0].1),
        ("site.conf", 1)
    );
    assert!(read.vhosts[0]
        .2
        .starts_with("RewriteEngine On (RewriteEngine at site.conf:2)"));
    let global = scan(&conf(
        "Redirect /a /b\n<VirtualHost *:80>\n  Redirect /c /d",
    ));
    assert!(global.global.is_some_and(|g| g.contains("site.conf:1")));
    // The first of several is the one said (and where to look first).
    let two = scan(&conf("Redirect /a /b\nRewriteEngine On"));
    assert!(two.global.is_some_and(|g| g.contains("site.conf:1")));
    let two = scan(&conf(
        "<VirtualHost *:80>\n  Redirect /a /b\n  RewriteEngine On",
    ));
    assert!(two.vhosts.len() == 1 && two.vhosts[0].2.contains("site.conf:2"));
}

#[test]
fn each_server_gets_its_own_hosts_refusal_or_the_global_one() {
    let text = "<VirtualHost *:80>\n  RewriteEngine On\n<VirtualHost *:81>\n  Options None\n";
    let c = Configuration {
        lines: conf(text),
        ..Configuration::default()
    };
    let (v, _) = rules(&c);
    assert!(v
        .refusal_of(Some(("site.conf", 1)))
        .is_some_and(|why| why.starts_with("RewriteEngine On")));
    assert_eq!(v.refusal_of(Some(("site.conf", 3))), None);
    assert_eq!(v.refusal_of(Some(("other.conf", 1))), None);
    assert_eq!(v.refusal_of(None), None);
    let global = Verdicts {
        refusal: Some("Redirect".into()),
        ..v
    };
    for at in [None, Some(("site.conf", 1)), Some(("site.conf", 3))] {
        assert_eq!(global.refusal_of(at), Some("Redirect"));
    }
}

#[test]
fn request_headers_may_be_edited_only_where_mod_headers_can() {
    let with = |text: &str, modules: &[&str]| {
        let c = Configuration {
            lines: conf(text),
            modules: modules.iter().map(|m| (*m).to_owned()).collect(),
            hooks: Vec::new(),
        };
        rules(&c).0.sibling.headers_edited
    };
    assert!(with("RequestHeader set X 1", &["mod_headers.c"]));
    assert!(with("AllowOverride FileInfo", &["mod_headers.c"]));
    assert!(!with("RequestHeader set X 1", &["core.c"]));
    assert!(!with("AllowOverride None", &["mod_headers.c"]));
    let remoteip = hooked("post_read_request", &[Some("mod_remoteip.c")]);
    assert!(rules(&remoteip).0.sibling.headers_edited);
    let known = hooked("post_read_request", &[Some("mod_setenvif.c")]);
    assert!(!rules(&known).0.sibling.headers_edited);
}

fn hooked(hook: &'static str, modules: &[Option<&str>]) -> Configuration {
    Configuration {
        lines: Vec::new(),
        modules: Vec::new(),
        hooks: vec![(hook, modules.iter().map(|m| m.map(str::to_owned)).collect())],
    }
}

/// What a twin's hooks log is of no client's request: on every
/// configuration, a twin writes only what says the server is in trouble.
#[test]
fn a_twin_logs_only_what_says_the_server_is_in_trouble() {
    for conf in [
        hooked("post_read_request", &[Some("mod_setenvif.c")]),
        hooked("access_checker", &[Some("mod_evasive20.c")]),
    ] {
        assert_eq!(rules(&conf).0.sibling.twin_log, Some(Level::Crit));
    }
}

/// A module that only records the requests it is given (mod_log_forensic
/// at post_read_request) tells no names nor clients apart, and twins do
/// not run its hook; the same module on another hook is not known.
#[test]
fn a_recorder_of_requests_is_known_and_not_run_for_twins() {
    let forensic = hooked(
        "post_read_request",
        &[Some("mod_setenvif.c"), Some("mod_log_forensic.c")],
    );
    assert_eq!(hooks::unknown_request_hooks(&forensic), None);
    let (r, learned) = rules(&forensic);
    assert_eq!((r.refusal, learned.client_hooks), (None, None));
    assert_eq!(r.sibling.recorders, ["mod_log_forensic.c"]);
    let elsewhere = hooked("access_checker", &[Some("mod_log_forensic.c")]);
    assert_eq!(
        hooks::unknown_request_hooks(&elsewhere).as_deref(),
        Some("mod_log_forensic.c hooks access_checker")
    );
}

#[test]
fn modules_not_known_hooking_a_request_refuse_the_short_answer_and_publicness() {
    let known = hooked(
        "access_checker",
        &[Some("mod_authz_core.c"), Some("MOD_AUTHZ_HOST.C")],
    );
    assert_eq!(hooks::unknown_request_hooks(&known), None);
    assert_eq!(rules(&known).0.refusal, None);
    // mod_proxy, loaded for mod_proxy_fcgi: its hooks map only what
    // ProxyPass names (refused by the scan) or another host's URI.
    for hook in [
        "post_read_request",
        "translate_name",
        "map_to_storage",
        "fixups",
    ] {
        let proxy = hooked(hook, &[Some("mod_proxy.c")]);
        assert_eq!(hooks::unknown_request_hooks(&proxy), None, "{hook}");
    }
    let evasive = hooked(
        "access_checker",
        &[Some("mod_authz_core.c"), Some("mod_evasive24.c")],
    );
    let (r, _) = rules(&evasive);
    assert_eq!(
        r.refusal.as_deref(),
        Some("mod_evasive24.c hooks access_checker")
    );
    assert_eq!(rules(&evasive).1.client_hooks, r.refusal);
    let unnamed = hooked("fixups", &[None]);
    assert_eq!(
        hooks::unknown_request_hooks(&unnamed).as_deref(),
        Some("a module hooks fixups")
    );
    // A content handler decides nothing of access: not the client's.
    let handler = hooked("handler", &[Some("mod_security2.c")]);
    let (r, learned) = rules(&handler);
    let unknown = learned.unknown_handler;
    assert_eq!(
        unknown.as_deref(),
        Some("mod_security2.c has a content handler")
    );
    assert_eq!(r.refusal, unknown);
    assert_eq!(learned.client_hooks, None);
    assert_eq!(
        hooks::unknown_handler(&hooked("handler", &[Some("mod_php.c")])),
        None
    );
    // insert_filter is judged per answer (the twin's filters), not here.
    assert_eq!(
        rules(&hooked("insert_filter", &[Some("mod_x.c")]))
            .0
            .refusal,
        None
    );
}

#[test]
fn extensions_and_types() {
    for e in ["gz", ".br", "ZST", "zstd", "dcz", "dcb", &"a".repeat(64)] {
        assert!(sibling_extension(e), "{e}");
    }
    for e in ["html", "gzip", &"a".repeat(63), &"g".repeat(64)] {
        assert!(!sibling_extension(e), "{e}");
    }
    for t in [
        "application/x-httpd-php",
        "TEXT/X-SERVER-PARSED-HTML",
        "application/x-type-map",
        "httpd/unix-directory",
    ] {
        assert!(magic_type(t), "{t}");
    }
    for t in ["text/html", "application/x-http", "httpd", ""] {
        assert!(!magic_type(t), "{t}");
    }
}

fn twin_of<'a>(
    handler: Option<&'a CStr>,
    content_type: Option<&'a CStr>,
    filter: Option<&'a CStr>,
) -> Twin<'a> {
    Twin {
        handler,
        handler_before_override: None,
        content_type,
        filter,
    }
}

#[test]
fn a_twin_the_module_would_step_aside_for_is_refused() {
    let with = |handler, before| Twin {
        handler_before_override: before,
        ..twin_of(handler, None, None)
    };
    let cgi = with(Some(c"gzip-disk-ng"), Some(c"cgi-script"));
    assert_eq!(
        twin::refusal(&cgi, None).as_deref(),
        Some("handler cgi-script, which SetHandler replaced")
    );
    // Core's handler set over it sends the file, as Apache does.
    assert_eq!(
        twin::refusal(&with(Some(c"default-handler"), Some(c"cgi-script")), None),
        None
    );
    for before in [c"default-handler", c"gzip-disk-ng"] {
        let own = with(Some(c"gzip-disk-ng"), Some(before));
        assert_eq!(twin::refusal(&own, None), None, "{before:?}");
    }
    // A script's type (AddType application/x-httpd-php on the sibling's
    // name): the module's handler refuses it on its own request.
    let php = twin_of(
        Some(c"gzip-disk-ng"),
        Some(c"application/x-httpd-php"),
        None,
    );
    assert!(twin::refusal(&php, None).is_some());
    let html = twin_of(Some(c"gzip-disk-ng"), Some(c"text/html"), None);
    assert_eq!(twin::refusal(&html, None), None);
}

#[test]
fn a_twin_gets_its_file_only_from_core_or_the_module_through_no_content_filter() {
    let file = twin_of(None, Some(c"text/html"), None);
    assert_eq!(twin::refusal(&file, None), None);
    let set = twin_of(Some(c"Default-Handler"), None, None);
    assert_eq!(twin::refusal(&set, None), None);
    assert_eq!(
        twin::refusal(&twin_of(Some(c"gzip-disk-ng"), None, None), None),
        None
    );
    let php = twin_of(Some(c"application/x-httpd-php"), None, None);
    assert_eq!(
        twin::refusal(&php, None).as_deref(),
        Some("handler application/x-httpd-php")
    );
    let typed = twin_of(None, Some(c"application/x-httpd-php"), None);
    assert_eq!(
        twin::refusal(&typed, None).as_deref(),
        Some("a handler for type application/x-httpd-php")
    );
    let unknown = Some("mod_x.c has a content handler");
    assert_eq!(twin::refusal(&file, unknown).as_deref(), unknown);
    // A handler set by name is the known one: an unknown module's does not claim it.
    assert_eq!(twin::refusal(&set, unknown), None);
    let filtered = twin_of(None, Some(c"text/html"), Some(c"INCLUDES"));
    assert_eq!(
        twin::refusal(&filtered, None).as_deref(),
        Some("output filter INCLUDES")
    );
}

fn node<'a>(provider: Option<&'a CStr>, args: &'a CStr, children: usize) -> AuthzNode<'a> {
    AuthzNode {
        provider,
        args,
        negate: false,
        get: true,
        children,
    }
}

#[test]
fn only_require_all_granted_for_get_is_every_clients() {
    let granted = || node(Some(c"all"), c" granted", 0);
    let section = |children| node(None, c"", children);
    let judge = |authz: Vec<AuthzNode<'static>>| {
        let c = ClientRules {
            authz,
            ..ClientRules::default()
        };
        dependence(&c, None)
    };
    assert_eq!(judge(Vec::new()), None);
    assert_eq!(judge(vec![section(1), granted()]), None);
    assert_eq!(
        judge(vec![section(2), section(1), granted(), granted()]),
        None
    );
    let other = "authorization other than Require all granted";
    assert_eq!(
        judge(vec![section(1), node(Some(c"ip"), c"192.0.2.1", 0)]).as_deref(),
        Some(other)
    );
    assert_eq!(
        judge(vec![section(1), node(Some(c"all"), c"grantedx", 0)]).as_deref(),
        Some(other)
    );
    assert_eq!(
        judge(vec![section(1), node(Some(c"all"), c"denied", 0)]).as_deref(),
        Some(other)
    );
    let negated = AuthzNode {
        negate: true,
        ..granted()
    };
    assert_eq!(judge(vec![section(1), negated]).as_deref(), Some(other));
    let posts = AuthzNode {
        get: false,
        ..granted()
    };
    assert_eq!(judge(vec![section(1), posts]).as_deref(), Some(other));
    // A later leaf of a section counts as much as its first.
    let second = vec![section(2), granted(), node(Some(c"env"), c"x", 0)];
    assert_eq!(judge(second).as_deref(), Some(other));
    // A section read short (its children missing) is not every client's.
    assert_eq!(judge(vec![section(2), granted()]).as_deref(), Some(other));
    assert_eq!(judge(vec![section(0)]).as_deref(), Some(other));
}

#[test]
fn each_rule_that_tells_clients_apart_is_said() {
    let base = ClientRules::default;
    assert_eq!(dependence(&base(), None), None);
    assert_eq!(
        dependence(&base(), Some("mod_x.c hooks fixups")).as_deref(),
        Some("mod_x.c hooks fixups")
    );
    let cases = [
        (
            ClientRules {
                unread: Some(c"the twin not made"),
                ..base()
            },
            "the twin not made",
        ),
        (
            ClientRules {
                if_sections: true,
                ..base()
            },
            "an <If> section applies",
        ),
        (
            ClientRules {
                access_rules: true,
                ..base()
            },
            "Allow or Deny rules",
        ),
        (
            ClientRules {
                rewrite_rules: true,
                ..base()
            },
            "rewrite rules",
        ),
    ];
    for (c, why) in cases {
        assert_eq!(dependence(&c, None).as_deref(), Some(why));
    }
}

/// mod_ssl configured by a section on the path (its record is not the
/// server's default) tells clients apart by their certificate; other
/// modules configured there (mod_mime, mod_dir) do not.
#[test]
fn mod_ssl_in_a_section_on_the_path_tells_clients_apart() {
    let with = |sectioned: Vec<&'static CStr>| ClientRules {
        sectioned,
        ..ClientRules::default()
    };
    assert_eq!(
        dependence(&with(vec![c"mod_mime.c", c"mod_dir.c"]), None),
        None
    );
    let why = dependence(&with(vec![c"mod_mime.c", c"mod_ssl.c"]), None);
    assert!(why.is_some_and(|w| w.contains("mod_ssl")));
}

/// `SSLRequire` or `SSLRequireSSL` for a whole server (outside sections,
/// through `<IfModule>`, in a `<VirtualHost>`) makes every page's answer
/// the client's, with mod_ssl loaded; inside a section it is the path's
/// own (`sectioned`).
#[test]
fn server_wide_tls_rules_tell_every_page_apart() {
    let whole = "
<IfModule mod_ssl.c>
  <VirtualHost *:443>
    SSLRequire %{SSL_CLIENT_S_DN_O} eq \"Corp\"
";
    let why = server_wide(&conf(whole), true);
    assert!(why.is_some_and(|w| w.contains("SSLRequire") && w.contains("site.conf:4")));
    assert_eq!(server_wide(&conf(whole), false), None, "mod_ssl not loaded");
    assert!(server_wide(&conf("SSLRequireSSL"), true).is_some());
    let sectioned = "
<VirtualHost *:443>
  <Directory /srv/www/staff>
    SSLRequire %{SSL_CLIENT_S_DN_O} eq \"Corp\"
  <If \"-n %{HTTPS}\">
    SSLRequireSSL
";
    assert_eq!(server_wide(&conf(sectioned), true), None);
    assert_eq!(server_wide(&conf("SSLOptions +StdEnvVars"), true), None);
}

#[test]
fn url_mappings_are_every_alias_and_userdir() {
    let c = Configuration {
        lines: conf(
            "Alias /icons/ /usr/share/icons/\n<VirtualHost *:80>\n  ScriptAliasMatch ^/cgi/(.*) /srv/cgi/$1\nUserDir public_html\nUserDir disabled root\nAlias /only\nRedirect /a /b",
        ),
        ..Configuration::default()
    };
    let got = url_mappings(&c);
    let want = [
        ("Alias", "/usr/share/icons/"),
        ("ScriptAliasMatch", "/srv/cgi/$1"),
        ("UserDir", "public_html"),
        ("Alias", "/only"),
    ];
    assert_eq!(got.len(), want.len(), "{got:?}");
    for ((n, t), (wn, wt)) in got.iter().zip(want) {
        assert_eq!((n.as_str(), t.as_str()), (wn, wt));
    }
}

#[test]
fn a_twin_stops_before_its_access_hooks_only_on_tls_where_mod_ssl_is_configured_otherwise() {
    let ssl_differs = |m: &CStr| m == twin::MOD_SSL;
    let other_differs = |m: &CStr| m == c"mod_headers.c";
    assert!(twin::stop_before_access(true, ssl_differs).is_some());
    assert_eq!(twin::stop_before_access(false, ssl_differs), None);
    assert_eq!(twin::stop_before_access(true, other_differs), None);
    assert_eq!(twin::stop_before_access(true, |_| false), None);
}

#[test]
fn no_twin_is_made_for_a_body_or_for_digest_credentials() {
    use super::unaskable;
    assert_eq!(unaskable(false, None), None);
    assert!(unaskable(true, None).is_some_and(|w| w.contains("body")));
    let digest = b"Digest username=\"alice\", uri=\"/a/only.html\", response=\"x\"";
    assert!(unaskable(false, Some(digest)).is_some_and(|w| w.contains("Digest")));
    assert!(unaskable(false, Some(b" digest\tusername=\"a\"")).is_some());
    // Basic credentials name no URI: the twin carries them as they are.
    assert_eq!(unaskable(false, Some(b"Basic YWxpY2U6YXB3")), None);
    assert_eq!(unaskable(false, Some(b"Digestive x")), None);
    assert_eq!(unaskable(false, Some(b"")), None);
}

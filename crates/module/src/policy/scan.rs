//! Which configurations take the short answer for a sibling: a
//! configuration is read once, directive by directive, against what it
//! may contain for the sections alone (`<Files>`, `<FilesMatch>`,
//! `<Location>`, `<LocationMatch>`, compared per request) to tell a
//! sibling's name from its page's as Apache would. Anything not known to
//! treat both names alike refuses it, outside every `<VirtualHost>` for
//! the whole server, inside one for that host: the list fails closed.

use super::words::{first, listed, words};
use crate::names::DIRECTIVE_PREFIX;
use gdn_httpd::conftree::Line;

/// Directives that cannot make Apache judge one name of a directory
/// differently from another.
const BLIND_DIRECTIVES: &[&str] = &[
    "AcceptFilter",
    "AcceptPathInfo",
    "AccessFileName",
    "AddCharset",
    "AddDefaultCharset",
    "AddDescription",
    "AddEncoding",
    "AddIcon",
    "AddIconByEncoding",
    "AddIconByType",
    "AddInputFilter",
    "AddLanguage",
    "AddOutputFilterByType",
    "AllowEncodedSlashes",
    "AuthBasicAuthoritative",
    "AuthBasicProvider",
    "AuthGroupFile",
    "AuthMerging",
    "AuthName",
    "AuthType",
    "AuthUserFile",
    "AuthzSendForbiddenOnFailure",
    "BrowserMatch",
    "BrowserMatchNoCase",
    "BufferedLogs",
    "CacheNegotiatedDocs",
    "CustomLog",
    "DefaultIcon",
    "DefaultLanguage",
    "DefaultRuntimeDir",
    "DefaultType",
    "Define",
    "DirectoryIndex",
    "DirectoryIndexRedirect",
    "DirectorySlash",
    "DocumentRoot",
    "EnableMMAP",
    "EnableSendfile",
    "ErrorDocument",
    "ErrorLog",
    "ErrorLogFormat",
    "ExpiresActive",
    "ExpiresByType",
    "ExpiresDefault",
    "ExtendedStatus",
    "FallbackResource",
    "FileETag",
    "FilterChain",
    "FilterDeclare",
    "FilterProtocol",
    "FilterProvider",
    "FilterTrace",
    "ForceLanguagePriority",
    "ForensicLog",
    "GracefulShutdownTimeout",
    "Group",
    "Header",
    "HeaderName",
    "HostnameLookups",
    "HttpProtocolOptions",
    "Include",
    "IncludeOptional",
    "IndexHeadInsert",
    "IndexIgnore",
    "IndexIgnoreReset",
    "IndexOptions",
    "IndexOrderDefault",
    "IndexStyleSheet",
    "KeepAlive",
    "KeepAliveTimeout",
    "LanguagePriority",
    "LimitInternalRecursion",
    "LimitRequestBody",
    "LimitRequestFields",
    "LimitRequestFieldSize",
    "LimitRequestLine",
    "LimitXMLRequestBody",
    "Listen",
    "ListenBacklog",
    "LoadFile",
    "LoadModule",
    "LogFormat",
    "LogIOTrackTTFB",
    "LogLevel",
    "MaxConnectionsPerChild",
    "MaxKeepAliveRequests",
    "MaxRequestWorkers",
    "MaxRequestsPerChild",
    "MaxSpareServers",
    "MaxSpareThreads",
    "MimeMagicFile",
    "MinSpareServers",
    "MinSpareThreads",
    "MultiviewsMatch",
    "Mutex",
    "PassEnv",
    "PidFile",
    "Protocols",
    "ProtocolsHonorOrder",
    "ProxyStatus",
    "ReadBufferSize",
    "ReadmeName",
    "ReceiveBufferSize",
    "RegexDefaultOptions",
    "RemoveCharset",
    "RemoveEncoding",
    "RemoveHandler",
    "RemoveInputFilter",
    "RemoveLanguage",
    "RemoveOutputFilter",
    "RemoveType",
    "RequestHeader",
    "RequestReadTimeout",
    "Satisfy",
    "Order",
    "ScoreBoardFile",
    "SendBufferSize",
    "ServerAdmin",
    "ServerAlias",
    "ServerLimit",
    "ServerName",
    "ServerRoot",
    "ServerSignature",
    "ServerTokens",
    "SetEnv",
    "SetHandler",
    "SetInputFilter",
    "SetOutputFilter",
    "SSLCACertificateFile",
    "SSLCACertificatePath",
    "SSLCertificateChainFile",
    "SSLCertificateFile",
    "SSLCertificateKeyFile",
    "SSLCipherSuite",
    "SSLCompression",
    "SSLEngine",
    "SSLHonorCipherOrder",
    "SSLOptions",
    "SSLPassPhraseDialog",
    "SSLProtocol",
    "SSLRandomSeed",
    "SSLRequireSSL",
    "SSLSessionCache",
    "SSLSessionCacheTimeout",
    "SSLSessionTickets",
    "SSLStaplingCache",
    "SSLUseStapling",
    "StartServers",
    "StartThreads",
    "ThreadLimit",
    "ThreadsPerChild",
    "ThreadStackSize",
    "Timeout",
    "TraceEnable",
    "TransferLog",
    "TypesConfig",
    "UnDefine",
    "UnsetEnv",
    "UseCanonicalName",
    "UseCanonicalPhysicalPort",
    "User",
    "H2Direct",
    "H2Push",
    "H2Upgrade",
    "H2MaxSessionStreams",
    "H2WindowSize",
    "H2StreamMaxMemSize",
];

/// Sections whose contents are judged as if written around them: they
/// apply alike to both names, or the request compares them per name.
const SECTIONS: &[&str] = &[
    "<IfModule",
    "<IfDefine",
    "<IfVersion",
    "<IfFile",
    "<IfDirective",
    "<IfSection",
    "<VirtualHost",
    "<Directory",
    "<DirectoryMatch",
    "<Files",
    "<FilesMatch",
    "<Location",
    "<LocationMatch",
    "<Limit",
    "<LimitExcept",
    "<RequireAll",
    "<RequireAny",
    "<RequireNone",
    "<If",
    "<ElseIf",
    "<Else",
];

/// `Require` providers whose answer cannot depend on the file name.
/// `env` is one while no `SetEnvIf` tests the request's URI (refused).
const BLIND_PROVIDERS: &[&str] = &[
    "all",
    "env",
    "ip",
    "host",
    "forward-dns",
    "local",
    "method",
    "user",
    "group",
    "valid-user",
    "dbd-group",
    "dbd-login",
    "dbd-logout",
    "dbm-group",
    "ldap-user",
    "ldap-group",
    "ldap-dn",
    "ldap-attribute",
    "ldap-filter",
    "ldap-search",
];

/// `SetEnvIf` attributes that do not depend on the name asked for: the
/// request's headers, and these.
const BLIND_ATTRIBUTES: &[&str] = &[
    "Remote_Host",
    "Remote_Addr",
    "Server_Addr",
    "Request_Method",
    "Request_Protocol",
];

/// Extensions a sibling, copy or delta name carries and its page does
/// not: mod_mime acts on each of a name's extensions.
const CODING_EXTENSIONS: &[&str] = &["gz", "br", "zst", "zstd", "dcz", "dcb"];

/// Whether mod_mime's extension `ext` (with or without its dot) may be
/// one of a sibling's that its page lacks: a coding's, or a delta's hash.
pub fn sibling_extension(ext: &str) -> bool {
    let ext = ext.strip_prefix('.').unwrap_or(ext);
    listed(CODING_EXTENSIONS, ext)
        || (ext.len() == 64 && ext.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A type httpd hands a content handler as its name when no handler is
/// set: the magic types of mod_cgi, mod_include, mod_negotiation, PHP,
/// mod_imagemap and the like.
pub fn magic_type(t: &str) -> bool {
    const PREFIXES: [&str; 4] = [
        "application/x-httpd-",
        "text/x-server-parsed-html",
        "application/x-type-map",
        "httpd/",
    ];
    PREFIXES
        .iter()
        .any(|p| t.get(..p.len()).is_some_and(|h| h.eq_ignore_ascii_case(p)))
}

/// Whether a mod_mime directive (a handler, type or filter, then
/// extensions) names an extension only a sibling has.
fn names_sibling_extension(args: &[String]) -> bool {
    args.iter()
        .skip(1)
        .any(|e| !e.is_empty() && sibling_extension(e))
}

fn is(name: &str, what: &str) -> bool {
    name.eq_ignore_ascii_case(what)
}

/// The section line `i` is in, looking through `<IfModule>`, `<IfDefine>`
/// and the other conditional sections (which hold what applies, where
/// they apply, as if written around them; `<If>` is not one).
pub(super) fn enclosing(lines: &[Line], i: usize) -> Option<&Line> {
    let mut up = lines[i].parent.map(|p| &lines[p]);
    while let Some(u) = up {
        let conditional = u.name.len() > 3 && u.name.get(..3).is_some_and(|h| is(h, "<If"));
        if !conditional {
            break;
        }
        up = u.parent.map(|p| &lines[p]);
    }
    up
}

fn is_directory_section(d: &Line) -> bool {
    is(&d.name, "<Directory") && !d.args.is_empty() && !d.args.starts_with('~')
}

/// Why line `i` (outside the list, or on it with arguments that may tell
/// the names apart) rules the short answer out; `None` when it cannot.
pub fn refusal(lines: &[Line], i: usize) -> Option<&'static str> {
    let d = &lines[i];
    let name = d.name.as_str();
    let args = words(&d.args);
    let w = args.first().map_or("", String::as_str);
    if is(name, "AddHandler") || is(name, "AddOutputFilter") {
        return names_sibling_extension(&args)
            .then_some("a handler or filter chosen by a sibling's extension");
    }
    if is(name, "AddType") {
        return (magic_type(w) && names_sibling_extension(&args))
            .then_some("a handler's type given to a sibling's extension");
    }
    if is(name, "ForceType") {
        return magic_type(w).then_some("a handler's type forced");
    }
    let ours = name
        .get(..DIRECTIVE_PREFIX.len())
        .is_some_and(|h| is(h, DIRECTIVE_PREFIX));
    if ours || listed(BLIND_DIRECTIVES, name) || listed(SECTIONS, name) {
        return None;
    }
    refusal_of_rule(lines, i, name, &args)
}

/// `refusal` for the directives whose arguments decide.
fn refusal_of_rule(lines: &[Line], i: usize, name: &str, args: &[String]) -> Option<&'static str> {
    let w = args.first().map_or("", String::as_str);
    if is(name, "Require") {
        let p = if is(w, "not") {
            args.get(1).map_or("", String::as_str)
        } else {
            w
        };
        return (!listed(BLIND_PROVIDERS, p))
            .then_some("a Require provider that may read the file");
    }
    if is(name, "Allow") || is(name, "Deny") {
        return None;
    }
    if is(name, "Options") {
        let up = enclosing(lines, i);
        let ok = up.is_none_or(|u| is(&u.name, "<VirtualHost") || is_directory_section(u));
        return (!ok).then_some("Options outside <Directory>");
    }
    if is(name, "AllowOverride") || is(name, "AllowOverrideList") {
        return (!is(w, "None")).then_some("an override beyond None");
    }
    if is(name, "MergeSlashes") {
        return is(w, "Off").then_some("MergeSlashes Off");
    }
    if is(name, "RewriteEngine") {
        return (!is(w, "Off")).then_some("RewriteEngine On");
    }
    if is(name, "Alias") || is(name, "ScriptAlias") {
        // A directory's alias maps both names alike; a file's does not.
        return (!w.ends_with('/')).then_some("an Alias of a single name");
    }
    if is(name, "SetEnvIf") || is(name, "SetEnvIfNoCase") {
        // A header or one of these; a regex may name variables too.
        let plain = w
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        let uri = is(w, "Request_URI") || (!listed(BLIND_ATTRIBUTES, w) && !plain);
        return uri.then_some("a SetEnvIf that tests the URI");
    }
    Some("a directive outside the list")
}

/// What reading every line found: the first refusal outside every
/// `<VirtualHost>`, the first inside each (by the file and line the host
/// starts at), and whether any line may edit request headers after they
/// are read (`RequestHeader`, or an override that may add one).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Scan {
    pub global: Option<String>,
    pub vhosts: Vec<(String, u32, String)>,
    pub edits_headers: bool,
}

/// The `<VirtualHost>` line `i` is in (or is), if any.
fn vhost_of(lines: &[Line], i: usize) -> Option<usize> {
    let mut at = Some(i);
    while let Some(j) = at {
        if is(&lines[j].name, "<VirtualHost") {
            return Some(j);
        }
        at = lines[j].parent;
    }
    None
}

/// Reads every line of a configuration.
pub fn scan(lines: &[Line]) -> Scan {
    let mut out = Scan::default();
    for (i, d) in lines.iter().enumerate() {
        let override_ = (is(&d.name, "AllowOverride") || is(&d.name, "AllowOverrideList"))
            && !is(&first(&d.args), "None");
        if is(&d.name, "RequestHeader") || override_ {
            out.edits_headers = true;
        }
        let Some(why) = refusal(lines, i) else {
            continue;
        };
        let said = format!("{why} ({} at {}:{})", d.name, d.file, d.line);
        match vhost_of(lines, i) {
            None if out.global.is_none() => out.global = Some(said),
            None => {}
            Some(v) => {
                let (file, line) = (&lines[v].file, lines[v].line);
                if !out.vhosts.iter().any(|h| h.0 == *file && h.1 == line) {
                    out.vhosts.push((file.clone(), line, said));
                }
            }
        }
    }
    out
}

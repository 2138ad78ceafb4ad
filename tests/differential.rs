//! The differential tester: random configurations against a real Apache,
//! with Apache's own answer as the oracle.
//!
//! Each seed makes a configuration from a grammar (sections of every
//! shape in the main server, a virtual host and `.htaccess`; `Require` of
//! several providers, `not`, `RequireAll`/`RequireAny`, Order/Allow/Deny;
//! `SetEnvIf` on request attributes; mod_rewrite rules and flags;
//! Alias/Redirect/ProxyPass; handlers, filters and `Options`; a second virtual
//! host with the same ServerName, another, or none; on-demand copies) and
//! a site of pages with published siblings, every file's bytes naming the
//! file they are (so a body tells which file it came from). Two servers
//! run that configuration: one with the module, and the oracle, the same
//! configuration without it (its handler name read as core's). Clients
//! differ in address (127.0.0.1-3), protocol (HTTP/1.0, 1.1, h2c),
//! credentials and User-Agent. Some configurations serve TLS (HTTP/2 by
//! ALPN) and ask for client certificates (`SSLVerifyClient optional`),
//! with mod_ssl's rules (`SSLRequire`, `Require ssl-verify-client`, an
//! expression on the certificate) among the access rules; their clients
//! present alice's certificate, bob's or none, which a shared cache in
//! front cannot see.
//!
//! The invariant: every body the module sends for a URI decodes (with the
//! gzip, brotli and zstd command-line tools) to bytes the same client gets
//! from the oracle for a direct GET of that URI or of one of its
//! siblings' URIs (`.gz`, `.br`, `.zst`, and the published deltas against
//! the site's one dictionary, `.<hash>.dcz` and `.dcb`, which clients
//! announcing it may be sent, decoded against it). Nothing else, and so nothing of
//! the cache root or another host's files, may be sent; and never a
//! server-side script's bytes (`conf.php` and its old sibling in each
//! directory, some configurations typing `.php` or `.html` as PHP), even
//! where core would send them.
//!
//! Where mod_log_forensic records the requests both servers are given,
//! every one the module's server records must finish, as the oracle's
//! do: a request the module makes for its own checks is none of a
//! client's.
//!
//! And the module's server logs no kind of error (a message number) of
//! another module that the oracle does not: one a request the module
//! made for its own checks met (mod_auth_digest's "uri mismatch"), which
//! an admin or fail2ban would read as the client's.
//!
//! `DIFF_SEED=n` runs one seed; `DIFF_CONFIGS=n` runs n seeds from
//! `DIFF_FIRST` (default 0); `DIFF_MINUTES=m` runs random seeds for m
//! minutes (the long mode). Without them a bounded set runs (scripts/test).

mod common;

use common::*;
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

/// Seeds run by default: bounded to a few minutes under scripts/test.
const BOUNDED_CONFIGS: u64 = 24;

/// splitmix64: small, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
    fn word(&mut self, xs: &[&'static str]) -> &'static str {
        xs[self.below(xs.len())]
    }
}

// ---- The site ----

/// Directories of the site (under each document root).
const DIRS: &[&str] = &["a", "b", "b/deep", "c"];
/// Every file's length before coding: equal across hosts, so on-demand
/// copies of one path in two roots differ only in their bytes.
const LEN: usize = 3000;
/// One moment for every file of every root.
fn stamp() -> SystemTime {
    SystemTime::now() - Duration::from_secs(3600)
}

/// The bytes of `name` in root `root`: a tag naming them, repeated.
fn content(root: &str, name: &str) -> Vec<u8> {
    let tag = format!("[{root}:{name}]\n");
    tag.bytes().cycle().take(LEN).collect()
}

/// The tag of bytes made by `content`, for reports.
fn tag(bytes: &[u8]) -> String {
    let end = bytes
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end.min(120)]).into_owned()
}

fn coding_of(suffix: &str) -> gdn_core::coding::Coding {
    use gdn_core::coding::Coding;
    match suffix {
        ".gz" => Coding::Gzip,
        ".br" => Coding::Br,
        _ => Coding::Zstd,
    }
}

fn write(p: &Path, bytes: &[u8]) {
    fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    fs::write(p, bytes).expect("write");
    set_mtime(p, stamp());
}

/// A page `name` in `dir`: its original (if `original`) and siblings,
/// each sibling holding its own tagged bytes, coded.
fn page_files(docroot: &Path, root: &str, name: &str, original: bool, sibs: &[&str]) {
    if original {
        write(&docroot.join(name), &content(root, name));
    }
    for s in sibs {
        let own = format!("{name}{s}");
        write(
            &docroot.join(&own),
            &encoded(coding_of(s), &content(root, &own)),
        );
    }
}

/// The dictionary every published delta is made against, and clients
/// announcing it hold.
fn dictionary() -> Vec<u8> {
    content("dict", "dictionary")
}

/// The suffix of the `token` delta against `dictionary()`.
fn delta_suffix(token: &str) -> String {
    use sha2::{Digest, Sha256};
    let hex: String = Sha256::digest(dictionary())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!(".{hex}.{token}")
}

/// The published `tokens` deltas of `name` against `dictionary()`, as the
/// publish tool makes them: decoding to `name`'s own bytes (`same`), or
/// each to its own tagged bytes.
fn delta_files(docroot: &Path, root: &str, name: &str, same: bool, tokens: &[&str]) {
    use gdn_core::delta_codec::{encode, DeltaLevels};
    for t in tokens {
        let d = match *t {
            "dcb" => gdn_core::coding::DeltaCoding::Dcb,
            _ => gdn_core::coding::DeltaCoding::Dcz,
        };
        let own = format!("{name}{}", delta_suffix(t));
        let bytes = content(root, if same { name } else { &own });
        let delta = encode(d, &DeltaLevels::default(), &dictionary(), &bytes).expect("delta");
        write(&docroot.join(&own), &delta);
    }
}

/// `name` with siblings that decode to its own bytes: verified, they are
/// the page, sent whatever the rules for their own names.
fn same_files(docroot: &Path, root: &str, name: &str, sibs: &[&str]) {
    let bytes = content(root, name);
    write(&docroot.join(name), &bytes);
    for s in sibs {
        write(
            &docroot.join(format!("{name}{s}")),
            &encoded(coding_of(s), &bytes),
        );
    }
}

/// Fills one document root: in each directory a page with three
/// siblings of other content, one with siblings of its own content
/// (`same.html`), one with only siblings, a text file with a `.gz`; an index
/// in `a`; in `c`, siblings that are symlinks into `b` (one owned by
/// another user where the tests run as root).
fn fill_root(docroot: &Path, root: &str) {
    for d in DIRS {
        page_files(
            docroot,
            root,
            &format!("{d}/page.html"),
            true,
            &[".gz", ".br", ".zst"],
        );
        page_files(
            docroot,
            root,
            &format!("{d}/only.html"),
            false,
            &[".gz", ".br"],
        );
        page_files(docroot, root, &format!("{d}/text.txt"), true, &[".gz"]);
        page_files(docroot, root, &format!("{d}/plain.html"), true, &[]);
        same_files(
            docroot,
            root,
            &format!("{d}/same.html"),
            &[".gz", ".br", ".zst"],
        );
        delta_files(docroot, root, &format!("{d}/page.html"), false, &["dcz"]);
        delta_files(
            docroot,
            root,
            &format!("{d}/same.html"),
            true,
            &["dcz", "dcb"],
        );
        delta_files(docroot, root, &format!("{d}/only.html"), false, &["dcb"]);
        // A script with the sibling an older publish tool wrote of it:
        // its bytes are its source, never sent whatever core would do.
        page_files(docroot, root, &format!("{d}/{SCRIPT}"), true, &[".gz"]);
    }
    page_files(docroot, root, "a/index.html", true, &[".gz", ".br"]);
    page_files(docroot, root, "c/link.html", true, &[]);
    std::os::unix::fs::symlink("../b/page.html.gz", docroot.join("c/link.html.gz")).expect("ln");
    std::os::unix::fs::symlink("../b/page.html.br", docroot.join("c/link.html.br")).expect("ln");
    if is_root() {
        std::os::unix::fs::lchown(docroot.join("c/link.html.br"), Some(server_uid()), None)
            .expect("lchown");
    }
    for d in walkdir::WalkDir::new(docroot).into_iter().flatten() {
        if d.file_type().is_dir() {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(d.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
        }
    }
}

/// The publish store of the main host's tree, as the publish tool lays
/// one out: every page with deltas has `dictionary()` as an earlier
/// version (`versions/<path>/<hex>.zst`). Read only where the
/// configuration names it (`Config::store`).
fn fill_store(store: &Path) {
    let hex = delta_suffix("");
    let hex = hex.trim_matches('.');
    for d in DIRS {
        for f in ["page.html", "same.html", "only.html"] {
            let dir = store.join("versions").join(d).join(f);
            fs::create_dir_all(&dir).expect("mkdir");
            let mut out = fs::File::create(dir.join(format!("{hex}.zst"))).expect("version");
            gdn_publish::store::write_version(&mut out, &dictionary(), 3).expect("zstd");
        }
    }
}

/// A server-side script in each directory.
const SCRIPT: &str = "conf.php";
/// The URI a drawn `ScriptAlias` maps to the programs of `c`.
const SCRIPT_ALIAS: &str = "/cgi/";

/// The URIs asked of the module (each also the base of siblings' URIs).
fn uris(cfg: &Config) -> Vec<String> {
    let mut u = vec![];
    for d in DIRS {
        for f in [
            "page.html",
            "same.html",
            "only.html",
            "text.txt",
            "plain.html",
            SCRIPT,
        ] {
            u.push(format!("/{d}/{f}"));
        }
    }
    u.push("/a/".into());
    u.push("/a/page.html.gz".into());
    u.push("/a/same.html.gz".into());
    u.push(format!("/b/page.html{}", delta_suffix("dcz")));
    u.push("/c/link.html".into());
    if cfg.alias {
        u.push("/al/page.html".into());
        u.push("/al/only.html".into());
    }
    u.extend(REQUEST_SHAPES.iter().map(|s| s.to_string()));
    u.extend(cfg.extra.iter().map(|s| s.to_string()));
    u
}

/// Requests of other shapes: a directory of another index, a name no
/// file has, queries, a `.` encoded, a `/./` segment (sent as written).
/// A sibling's URI keeps the query after its suffix.
const REQUEST_SHAPES: &[&str] = &[
    "/b/",
    "/b/missing.html",
    "/a/page.html?x=1",
    "/a/only.html?x=1",
    "/c/same.html?x=2",
    "/a/page%2ehtml",
    "/a/only%2ehtml",
    "/b/./only.html",
    "/b/./page.html",
];

// ---- The configuration grammar ----

struct Config {
    /// Lines at server level (`{docroot}`, `{root}`, `{port2}` to fill).
    server: String,
    /// Lines inside `<Directory docroot>` after `Require all granted`.
    dir: String,
    /// `.htaccess` files: directory (below a root) and text.
    htaccess: Vec<(String, String)>,
    modules: Vec<&'static str>,
    /// Only what the module may judge by sections alone (no rewrites,
    /// redirects, expressions, overrides): its short answer is tested.
    short: bool,
    /// Whether the second port has a virtual host of its own root.
    vhost: bool,
    alias: bool,
    ondemand: bool,
    /// TLS with client certificates asked for (mod_ssl's rules drawn).
    tls: bool,
    /// The main host's tree has a publish store holding every delta's
    /// dictionary (`GzipDiskNgDeltaStore`): a delta beside its original
    /// is verified against it, the page or nothing.
    store: bool,
    /// The names `DirectoryIndex` may give a directory, in some directory.
    index: Vec<&'static str>,
    /// The URIs the drawn mechanisms make (an `AliasMatch`'s, a
    /// `ScriptAlias`'s), asked besides `uris()`.
    extra: Vec<&'static str>,
    /// mod_log_forensic records every request the servers are given:
    /// each must finish (`check_forensic`), so the module's server
    /// records no request of its own making that no client sent.
    forensic: bool,
    /// Every `AuthType Basic` drawn is `AuthType Digest` (mod_auth_digest),
    /// whose credentials sign the request's own URI.
    digest: bool,
}

impl Config {
    /// Whether Apache, without the module's `SetHandler`, would run the
    /// files of `c` as the `ScriptAlias` says: not where `MultiViews`
    /// stands in, whose variant's request keeps no `ScriptAlias` handler.
    fn programs(&self) -> bool {
        let all = format!("{}{}", self.server, self.dir);
        let htaccess = self.htaccess.iter().any(|h| h.1.contains("MultiViews"));
        all.contains("ScriptAlias") && !all.contains("MultiViews") && !htaccess
    }
}

const AUTH: &str = "AuthType Basic\nAuthName diff\nAuthUserFile {root}/htpasswd\n";

/// mod_ssl's rules, which judge the connection's certificate: the client
/// sent alice's, bob's or none (`SSLVerifyClient optional`).
const TLS_RULES: &[&str] = &[
    "SSLRequire %{SSL_CLIENT_S_DN_CN} eq \"alice\"",
    "Require ssl-verify-client",
    "SSLRequireSSL",
    "<RequireAny>\nRequire ssl-verify-client\nRequire ip 127.0.0.3\n</RequireAny>",
    "Require expr \"%{SSL_CLIENT_S_DN_CN} != 'bob'\"",
    "SSLOptions +StrictRequire\nSSLRequire %{SSL_CLIENT_VERIFY} eq \"SUCCESS\"",
];

/// mod_ssl's rules that ask the client for a certificate again (TLS 1.3
/// post-handshake authentication, a TLS 1.2 renegotiation): on the
/// request's connection, from its access hook, answered by what the
/// client sends then.
const RENEGOTIATIONS: &[&str] = &[
    "<Files \"*.gz\">\nSSLVerifyClient require\n</Files>",
    "<FilesMatch \"\\.(br|zst)$\">\nSSLVerifyClient require\nSSLVerifyDepth 0\n</FilesMatch>",
    "<Location \"/a/\">\nSSLVerifyClient require\n</Location>",
    "<Files \"*.br\">\nSSLVerifyDepth 0\n</Files>",
    "<Directory {docroot}/b>\nSSLVerifyClient require\n</Directory>",
];

/// Access rules of every kind a direct request meets; mod_ssl's too
/// where the configuration serves TLS.
fn access(rng: &mut Rng, short: bool, tls: bool) -> String {
    let plain = [
        "Require all denied",
        "Require all granted",
        "Require ip 127.0.0.1",
        "Require ip 127.0.0.2 127.0.0.3",
        "<RequireAll>\nRequire all granted\nRequire not ip 127.0.0.2\n</RequireAll>",
        "Require env ok",
        "<RequireAll>\nRequire all granted\nRequire not env bad\n</RequireAll>",
        "<RequireAny>\nRequire env ok\nRequire ip 127.0.0.3\n</RequireAny>",
        "Require expr \"%{HTTP_USER_AGENT} !~ /Bot/\"",
        "Require expr \"%{REQUEST_URI} !~ /\\.br$/\"",
        "Require expr \"%{THE_REQUEST} !~ m#HTTP/1\\.0#\"",
        "Require expr \"%{SERVER_PROTOCOL} != 'HTTP/2.0'\"",
        "Require expr \"-z %{ENV:bad}\"",
        "Order deny,allow\nDeny from 127.0.0.2",
        "Order allow,deny\nAllow from all\nDeny from env=bad",
        "Order deny,allow\nDeny from all\nAllow from 127.0.0.3",
        "Order deny,allow\nDeny from all\nAllow from env=ok",
    ];
    let authed = [
        "Require user alice",
        "Require valid-user",
        "<RequireAny>\nRequire ip 127.0.0.3\nRequire user bob\n</RequireAny>",
        "<RequireAll>\nRequire valid-user\nRequire not env bad\n</RequireAll>",
    ];
    if rng.chance(25) {
        return format!("{AUTH}{}", rng.pick(&authed));
    }
    let mut rules = plain.to_vec();
    if tls {
        rules.extend_from_slice(TLS_RULES);
    }
    loop {
        let a = rng.pick(&rules);
        if !short || !a.contains("expr") {
            return a.to_string();
        }
    }
}

/// Environment set from the request, per directory or server.
fn env(rng: &mut Rng, short: bool) -> String {
    let all = [
        "SetEnvIf User-Agent Bot bad",
        "SetEnvIf Remote_Addr ^127\\.0\\.0\\.2$ bad",
        "SetEnvIf Request_URI \\.gz$ bad",
        "SetEnvIf Request_URI \\.html$ ok",
        "SetEnvIf Request_URI \\.(br|zst)$ ok",
        "SetEnvIf Remote_Addr . ok",
        "SetEnvIfNoCase User-Agent mozilla ok",
        "BrowserMatch Bot bad",
        "SetEnvIfExpr \"%{REQUEST_URI} =~ /zst$/\" bad",
        "SetEnvIf Request_Protocol ^HTTP/1\\.0$ bad",
        "SetEnvIf Remote_Addr ^127\\.0\\.0\\.[13]$ ok",
    ];
    loop {
        let e = rng.pick(&all);
        if !short || !(e.contains("Request_URI") || e.contains("Expr")) {
            return e.to_string();
        }
    }
}

/// A mod_rewrite rule set, for directory (`server` false) or server context.
fn rewrite(rng: &mut Rng, server: bool) -> String {
    let common = [
        "RewriteRule \\.gz$ - [F]",
        "RewriteCond %{HTTP_USER_AGENT} Bot\nRewriteRule \\.br$ - [F]",
        "RewriteCond %{REMOTE_ADDR} =127.0.0.2\nRewriteRule \\.zst$ - [F]",
        "RewriteRule \\.html$ - [E=ok:1]",
        "RewriteRule \\.(gz|br)$ - [E=bad:1]",
        "RewriteRule \\.gz$ /a/text.txt [R,L]",
        "RewriteCond %{THE_REQUEST} HTTP/1\\.0\nRewriteRule \\.br$ - [F]",
        "RewriteRule \\.html$ - [H=gzip-disk-ng]",
        "RewriteRule \\.zst$ - [H=default-handler]",
        "RewriteRule \\.gz$ - [F,NS]",
        "RewriteRule \\.(br|zst)$ /a/ [R=301]",
    ];
    let only_server = [
        "RewriteRule ^/b/(.*)\\.br$ /a/$1.br [PT]",
        "RewriteRule ^/c/link\\.html\\.gz$ - [F]",
        "RewriteRule ^/a/(page|only)\\.html\\.zst$ /c/text.txt.gz [PT]",
    ];
    let rule = if server && rng.chance(30) {
        rng.pick(&only_server)
    } else {
        rng.pick(&common)
    };
    format!("RewriteEngine On\n{rule}")
}

fn handler_or_filter(rng: &mut Rng, cfg: &mut Config) -> String {
    let opts = [
        "AddHandler cgi-script .br",
        "RemoveHandler .gz",
        "SetHandler none",
        "AddType application/x-httpd-php .zst",
        "AddType application/x-httpd-php .html",
        "AddType text/html .php",
        "ForceType text/plain",
        "AddOutputFilter INCLUDES .gz",
        "SetOutputFilter DEFLATE",
        "AddOutputFilterByType DEFLATE text/html",
        "<FilesMatch \"\\.gz$\">\nSetHandler server-status\n</FilesMatch>",
        "AddEncoding x-gzip .gz",
        "Header set X-Diff 1",
        // A filter is what it runs, not its name: a mod_filter chain
        // named as one of mod_cache's runs mod_substitute.
        "FilterDeclare cache_save\nFilterProvider cache_save SUBSTITUTE \"%{CONTENT_TYPE} =~ m|^text/|\"\n\
         FilterChain cache_save\nSubstitute \"s/d1/S1/\"",
        "AddOutputFilterByType SUBSTITUTE text/html\nSubstitute \"s/d1/S1/\"",
    ];
    let o = rng.pick(&opts).to_string();
    if o.contains("INCLUDES") && !cfg.modules.contains(&"include") {
        cfg.modules.push("include");
    }
    for (word, module) in [("Substitute", "substitute"), ("Filter", "filter")] {
        if o.contains(word) && !cfg.modules.contains(&module) {
            cfg.modules.push(module);
        }
    }
    o
}

fn options(rng: &mut Rng, cfg: &mut Config) -> String {
    let o = rng
        .pick(&[
            "Options -FollowSymLinks",
            "Options +SymLinksIfOwnerMatch -FollowSymLinks",
            "Options FollowSymLinks",
            "Options -Indexes",
            "Options +MultiViews",
            "Options +Includes",
        ])
        .to_string();
    if o.contains("MultiViews") && !cfg.modules.contains(&"negotiation") {
        cfg.modules.push("negotiation");
    }
    o
}

/// One group of directives for a directory-like context.
fn group(rng: &mut Rng, cfg: &mut Config, server: bool, in_files: bool) -> String {
    let (short, tls) = (cfg.short, cfg.tls);
    match rng.below(11) {
        0..=3 => access(rng, short, tls),
        4 => format!("{}\n{}", env(rng, short), access(rng, short, tls)),
        5 | 10 => env(rng, short),
        6 if !in_files && !short => rewrite(rng, server),
        6 | 9 if short => access(rng, short, tls),
        7 => handler_or_filter(rng, cfg),
        8 if !in_files => options(rng, cfg),
        _ if short => access(rng, short, tls),
        _ => rng
            .pick(&[
                "Redirect /a/page.html.gz /a/text.txt",
                "RedirectMatch \\.zst$ /a/text.txt",
                "RedirectMatch ^/b/.*\\.br$ /a/",
            ])
            .to_string(),
    }
}

/// A file-name or request section around `body`.
fn file_section(rng: &mut Rng, body: &str) -> String {
    let heads = [
        ("<Files \"page.html.gz\">", "</Files>"),
        ("<Files \"*.br\">", "</Files>"),
        ("<Files \"page.html\">", "</Files>"),
        ("<Files \"*.html\">", "</Files>"),
        ("<FilesMatch \"\\.(gz|zst)$\">", "</FilesMatch>"),
        ("<FilesMatch \"^only\">", "</FilesMatch>"),
        ("<FilesMatch \"\\.dc[zb]$\">", "</FilesMatch>"),
        ("<FilesMatch \"\\.html$\">", "</FilesMatch>"),
        ("<If \"%{REQUEST_URI} =~ /\\.zst$/\">", "</If>"),
        ("<If \"%{HTTP_USER_AGENT} =~ /Mozilla/\">", "</If>"),
        ("<If \"%{REQUEST_URI} =~ /\\.html$/\">", "</If>"),
    ];
    let (h, t) = rng.pick(&heads);
    format!("{h}\n{body}\n{t}")
}

fn location_section(rng: &mut Rng, body: &str) -> String {
    // httpd allows no <FilesMatch> inside <Location>: the handler there.
    let body = body.replace(
        "<FilesMatch \"\\.gz$\">\nSetHandler server-status\n</FilesMatch>",
        "SetHandler server-status",
    );
    let heads = [
        ("<Location \"/b/\">", "</Location>"),
        ("<Location \"/a/page.html.br\">", "</Location>"),
        ("<Location \"/a/page.html\">", "</Location>"),
        ("<LocationMatch \"\\.gz$\">", "</LocationMatch>"),
        ("<LocationMatch \"^/c/.*\\.br$\">", "</LocationMatch>"),
        ("<Location \"/*/only.html.*\">", "</Location>"),
        ("<LocationMatch \"\\.dcz$\">", "</LocationMatch>"),
        ("<LocationMatch \"\\.html$\">", "</LocationMatch>"),
    ];
    let (h, t) = rng.pick(&heads);
    format!("{h}\n{body}\n{t}")
}

fn directory_section(rng: &mut Rng, body: &str) -> String {
    match rng.below(4) {
        0 => format!("<DirectoryMatch \"^{{docroot}}/b\">\n{body}\n</DirectoryMatch>"),
        1 => format!("<Directory \"{{docroot}}/*/deep\">\n{body}\n</Directory>"),
        2 => format!("<DirectoryMatch \"/(a|c)$\">\n{body}\n</DirectoryMatch>"),
        _ => format!(
            "<Directory {{docroot}}/{}>\n{body}\n</Directory>",
            rng.pick(DIRS)
        ),
    }
}

/// `block` where it may stand at server or virtual host level: access
/// rules, which httpd allows only in directory context, in `<Location />`.
fn at_server_level(block: String) -> String {
    let access = ["Require", "Order", "Allow", "Deny", "Auth", "<Require"];
    let sectioned = block.starts_with("<Files") || block.starts_with("<If");
    if !sectioned
        && block
            .lines()
            .any(|l| access.iter().any(|a| l.starts_with(a)))
    {
        format!("<Location \"/\">\n{block}\n</Location>")
    } else {
        block
    }
}

/// A directory-context block: a group, maybe in a file section.
fn dir_block(rng: &mut Rng, cfg: &mut Config, server: bool) -> String {
    if rng.chance(50) {
        let g = group(rng, cfg, server, true);
        file_section(rng, &g)
    } else {
        group(rng, cfg, server, false)
    }
}

fn generate(seed: u64) -> Config {
    let mut rng = Rng(seed);
    let mut cfg = Config {
        server: String::new(),
        dir: String::new(),
        htaccess: vec![],
        modules: vec![
            "authz_host",
            "authz_user",
            "authn_core",
            "authn_file",
            "auth_basic",
            "access_compat",
            "setenvif",
            "rewrite",
            "alias",
            "dir",
            "status",
            "deflate",
            "filter",
            "headers",
            // Loaded by every PHP-FPM site (mod_proxy_fcgi): its hooks
            // are in every request.
            "proxy",
            "proxy_http",
        ],
        short: rng.chance(40),
        vhost: rng.chance(60),
        alias: rng.chance(30),
        ondemand: rng.chance(30),
        tls: false,
        store: false,
        index: vec!["index.html"],
        extra: vec![],
        forensic: false,
        digest: false,
    };
    // Drawn apart, so the other seeds' configurations stay as they were.
    let mut tls_rng = Rng(seed ^ 0x7157);
    cfg.tls = tls_rng.chance(30);
    cfg.store = Rng(seed ^ 0x5703).chance(40);
    let mut server = String::from("DirectoryIndex index.html\n");
    if cfg.store {
        server += "<IfModule gzip_disk_ng_module>\n\
                   GzipDiskNgDeltaStore {docroot} {root}/store\n</IfModule>\n";
    }
    if cfg.tls {
        // A rule on the certificate in a section of file names, which
        // can tell a sibling from its page.
        cfg.modules.push("ssl");
        server += TLS_SERVER;
        let rule = tls_rng.word(TLS_RULES);
        server += &file_section(&mut tls_rng, rule);
        server += "\n";
        let mut reneg = Rng(seed ^ 0x5E9C);
        if reneg.chance(50) {
            server += reneg.word(RENEGOTIATIONS);
            server += "\n";
        }
    }
    if cfg.ondemand {
        server += "<IfModule gzip_disk_ng_module>\nGzipDiskNgCacheRoot {root}/cache\n\
                   GzipDiskNgOnDemand On\n</IfModule>\n";
    }
    if cfg.alias {
        server += "Alias /al/ {docroot}/b/\n";
    }
    if rng.chance(15) {
        server += "Alias /a/only.html.br {docroot}/b/page.html.br\n";
    }
    if rng.chance(20) {
        // A sibling's or a page's name proxied (to a closed port).
        server += rng.word(&[
            "ProxyPass /a/page.html.gz http://127.0.0.1:9/\n",
            "ProxyPassMatch \\.zst$ http://127.0.0.1:9/\n",
            "ProxyPass /b/ http://127.0.0.1:9/\n",
            "<Location /a/only.html.br>\nProxyPass http://127.0.0.1:9/\n</Location>\n",
        ]);
    }
    for _ in 0..2 + rng.below(5) {
        let body = dir_block(&mut rng, &mut cfg, false);
        server += &match rng.below(4) {
            0 => at_server_level(body),
            1 | 2 => directory_section(&mut rng, &body),
            _ => {
                let g = group(&mut rng, &mut cfg, false, true);
                location_section(&mut rng, &g)
            }
        };
        server += "\n";
    }
    if !cfg.short && rng.chance(40) {
        server += &format!("{}\n", rewrite(&mut rng, true));
    }
    if rng.chance(30) {
        server += &format!("{}\n", env(&mut rng, cfg.short));
    }
    if !cfg.short && rng.chance(35) {
        cfg.dir += "AllowOverride All\n";
        for _ in 0..1 + rng.below(2) {
            let d = rng.pick(DIRS).to_string();
            let text = dir_block(&mut rng, &mut cfg, false);
            cfg.htaccess.push((d, text));
        }
    }
    if cfg.vhost {
        let name = rng.pick(&["ServerName localhost\n", "", "ServerName other.test\n"]);
        let mut v = format!("<VirtualHost *:{{port2}}>\n{name}DocumentRoot {{root}}/docs2\n");
        v += "<Directory {root}/docs2>\nRequire all granted\n{sethandler}\n";
        if !cfg.htaccess.is_empty() {
            v += "AllowOverride All\n";
        }
        v += "</Directory>\n";
        for _ in 0..rng.below(3) {
            let body = dir_block(&mut rng, &mut cfg, true);
            v += &if rng.chance(50) {
                at_server_level(body)
            } else {
                let g = group(&mut rng, &mut cfg, true, true);
                location_section(&mut rng, &g)
            };
            v += "\n";
        }
        if cfg.alias {
            v += "Alias /al/ {root}/docs2/b/\n";
        }
        v += "</VirtualHost>\n";
        server += &v;
    }
    let all = format!(
        "{server}{}",
        cfg.htaccess
            .iter()
            .map(|h| h.1.as_str())
            .collect::<String>()
    );
    if !all.contains("SetEnvIf") && !all.contains("BrowserMatch") && rng.chance(60) {
        // mod_setenvif absent: the environment comes from other modules.
        cfg.modules.retain(|m| *m != "setenvif");
    }
    mechanisms(&mut Rng(seed ^ 0xE7A5), &mut cfg, &mut server);
    client_mechanisms(&mut Rng(seed ^ 0xC11E), &mut cfg, &mut server);
    header_edits(&mut Rng(seed ^ 0x4EAD), &mut server);
    cfg.forensic = Rng(seed ^ 0xF025).chance(30);
    if cfg.forensic {
        server += "ForensicLog forensic.log\n";
        cfg.modules.push("log_forensic");
    }
    cfg.digest = Rng(seed ^ 0xD16E).chance(25);
    if cfg.digest {
        let digest = |t: &str| {
            t.replace("AuthType Basic", "AuthType Digest")
                .replace("{root}/htpasswd", "{root}/htdigest")
        };
        server = digest(&server);
        cfg.dir = digest(&cfg.dir);
        for h in &mut cfg.htaccess {
            h.1 = digest(&h.1);
        }
        cfg.modules.push("auth_digest");
    }
    cfg.server = server;
    cfg
}

/// Rules in `<Directory docroot>` of the mechanisms a sibling's check
/// reads: a regex `<Files>`, `<If>`/`<ElseIf>`/`<Else>` on the request
/// (its query, its raw line, a file's existence), `<Limit>`, `Require
/// method`, `<RequireNone>`, `Satisfy Any`, `AuthMerging Or`, `Require
/// group`, rewrites in WordPress's manner and on the query, the request
/// line and the method, `FallbackResource`. Each a sibling's own URI
/// meets differently from its page's.
const DIR_MECHANISMS: &[&str] = &[
    "<Files ~ \"\\.(br|zst)$\">\nRequire all denied\n</Files>",
    "<Files ~ \"^(page|only)\">\nRequire ip 127.0.0.1\n</Files>",
    "<If \"%{QUERY_STRING} =~ /x=1/\">\nRequire all denied\n</If>\n\
     <ElseIf \"%{HTTP_USER_AGENT} =~ /Bot/\">\nRequire ip 127.0.0.1\n</ElseIf>\n\
     <Else>\nRequire all granted\n</Else>",
    "<If \"-f '%{REQUEST_FILENAME}.gz'\">\nRequire all denied\n</If>",
    "<If \"-f %{REQUEST_FILENAME}\">\nRequire ip 127.0.0.1 127.0.0.2\n</If>",
    "<If \"%{THE_REQUEST} =~ m#(%2e|/\\./)#i\">\nRequire all denied\n</If>",
    "<Files \"*.gz\">\n<Limit GET>\nRequire ip 127.0.0.2\n</Limit>\n</Files>",
    "<Files \"page.*\">\n<LimitExcept POST>\nRequire all denied\n</LimitExcept>\n</Files>",
    "<Files \"*.zst\">\nRequire method POST\n</Files>",
    "<Files \"*.br\">\n<RequireAll>\nRequire all granted\n<RequireNone>\n\
     Require ip 127.0.0.2\nRequire env bad\n</RequireNone>\n</RequireAll>\n</Files>",
    "<Files \"*.br\">\nAuthType Basic\nAuthName diff\nAuthUserFile {root}/htpasswd\n\
     Require valid-user\nOrder deny,allow\nDeny from all\nAllow from 127.0.0.3\n\
     Satisfy Any\n</Files>",
    "<Files \"page.*\">\nRequire ip 127.0.0.1\n</Files>\n\
     <Files \"*.gz\">\nAuthMerging Or\nRequire ip 127.0.0.3\n</Files>",
    "<Files \"*.gz\">\nAuthType Basic\nAuthName diff\nAuthUserFile {root}/htpasswd\n\
     AuthGroupFile {root}/groups\nRequire group staff\n</Files>",
    "RewriteEngine On\nRewriteCond %{REQUEST_FILENAME} !-f\n\
     RewriteCond %{REQUEST_FILENAME} !-d\nRewriteRule . /a/text.txt [L]",
    "RewriteEngine On\nRewriteCond %{REQUEST_FILENAME} -f\nRewriteRule \\.(gz|br|zst)$ - [F]",
    "RewriteEngine On\nRewriteCond %{QUERY_STRING} x=1\nRewriteRule \\.gz$ - [F]",
    "RewriteEngine On\nRewriteCond %{THE_REQUEST} \\.br[\\s?]\nRewriteRule ^ - [F]",
    "RewriteEngine On\nRewriteCond %{REQUEST_METHOD} =GET\nRewriteRule \\.zst$ - [F]",
    "FallbackResource /a/text.txt",
];

/// Draws the mechanisms (from their own generator, so the grammar's
/// other draws stay as they were): rules in `<Directory docroot>`, and
/// at server level an `AliasMatch`, a `ScriptAlias` (mod_cgid), another
/// `DirectoryIndex` for one directory, `AllowOverride AuthConfig` with an
/// `.htaccess` holding a directive it does not allow.
fn mechanisms(rng: &mut Rng, cfg: &mut Config, server: &mut String) {
    for _ in 0..1 + rng.below(2) {
        let m = rng.word(DIR_MECHANISMS);
        if m.contains("group") && !cfg.modules.contains(&"authz_groupfile") {
            cfg.modules.push("authz_groupfile");
        }
        cfg.dir += &format!("{m}\n");
    }
    if rng.chance(30) {
        *server += "AliasMatch \"^/am/(.*)$\" \"{docroot}/b/$1\"\n";
        cfg.extra.extend(["/am/page.html", "/am/only.html"]);
    }
    if rng.chance(25) {
        *server += &format!("ScriptAlias {SCRIPT_ALIAS} {{docroot}}/c/\n");
        cfg.modules.push("cgid");
        cfg.extra.extend(["/cgi/page.html", "/cgi/only.html"]);
    }
    if rng.chance(35) {
        let name = rng.word(&["only.html", "page.html"]);
        *server += &format!("<Directory {{docroot}}/b>\nDirectoryIndex {name}\n</Directory>\n");
        cfg.index.push(name);
    }
    if cfg.htaccess.is_empty() && rng.chance(20) {
        cfg.dir += "AllowOverride AuthConfig\n";
        let body = rng.word(&["Options -Indexes", "RewriteEngine On", "SetHandler none"]);
        let d = rng.word(DIRS);
        cfg.htaccess
            .push((d.to_string(), format!("{AUTH}Require valid-user\n{body}")));
    }
}

/// Rules on who the client is beyond the address it connects from:
/// `Require local`, `Require forward-dns` (a name's addresses, from
/// /etc/hosts: no lookup leaves the machine), and for mod_remoteip the
/// address a trusted proxy (127.0.0.2) forwards, which the module
/// rewrites, with the request's headers, before every other hook.
const CLIENT_MECHANISMS: &[&str] = &[
    "<Files \"*.gz\">\nRequire local\n</Files>",
    "<FilesMatch \"\\.(br|zst)$\">\nRequire forward-dns localhost\n</FilesMatch>",
    "<Files \"page.*\">\n<RequireAll>\nRequire all granted\nRequire not local\n</RequireAll>\n</Files>",
];

/// Request headers mod_headers edits (`RequestHeader`): `early` ones, at
/// post_read_request, on what access rules read (the User-Agent, the
/// credentials, a forwarded address); late ones, at fixups after the
/// access rules, in sections of siblings' or pages' names, on what the
/// handler reads after them (Accept-Encoding, the User-Agent, the
/// credentials). A sibling's own request must be judged on its headers
/// as a client's GET of its URI would have them: those marked `true`
/// come with `NO_BOT_SIBLINGS`, a rule on the User-Agent for siblings'
/// names, which an edit the module's twin missed (an early one) or
/// took from the page's request (a late one) would judge otherwise.
const HEADER_EDITS: &[(&str, bool)] = &[
    ("RequestHeader edit User-Agent ^EvilBot Mozilla early\n", false),
    ("RequestHeader edit User-Agent ^Mozilla EvilBot early\n", true),
    ("RequestHeader unset Authorization early\n", false),
    ("RequestHeader set X-Forwarded-For 10.9.8.7 early\n", false),
    (
        "<FilesMatch \"\\.(gz|br|zst)$\">\nRequestHeader set User-Agent EvilBot/1.0\n</FilesMatch>\n",
        true,
    ),
    (
        "<Location \"/b\">\nRequestHeader unset Authorization\n\
         RequestHeader set Accept-Encoding identity\n</Location>\n",
        false,
    ),
    (
        "<LocationMatch \"\\.html$\">\nRequestHeader edit User-Agent ^EvilBot Mozilla\n\
         RequestHeader unset Accept-Encoding\n</LocationMatch>\n",
        true,
    ),
];

/// Siblings' names refused to a User-Agent starting `EvilBot`, on top of
/// every rule before (`AuthMerging And`).
const NO_BOT_SIBLINGS: &str = "<LocationMatch \"\\.(gz|br|zst|dc[zb])$\">\nAuthMerging And\n\
    Require expr \"%{HTTP_USER_AGENT} !~ /^EvilBot/\"\n</LocationMatch>\n";

/// Draws a request-header edit of `HEADER_EDITS` for some seeds, at
/// server level (mod_headers is loaded in every seed).
fn header_edits(rng: &mut Rng, server: &mut String) {
    if rng.chance(35) {
        let (edit, rule) = *rng.pick(HEADER_EDITS);
        *server += edit;
        if rule {
            *server += NO_BOT_SIBLINGS;
        }
    }
}

/// The address every client may forward (`X-Forwarded-For`).
const FORWARDED: &str = "10.9.8.7";

/// Draws the client mechanisms: a `Require` of `CLIENT_MECHANISMS` in
/// `<Directory docroot>`, and mod_remoteip trusting 127.0.0.2's
/// `X-Forwarded-For`, with rules on the forwarded address in the last
/// `<LocationMatch>` of a sibling's name.
fn client_mechanisms(rng: &mut Rng, cfg: &mut Config, server: &mut String) {
    if rng.chance(35) {
        cfg.dir += &format!("{}\n", rng.word(CLIENT_MECHANISMS));
    }
    if rng.chance(35) {
        *server += "RemoteIPHeader X-Forwarded-For\nRemoteIPInternalProxy 127.0.0.2\n";
        cfg.modules.push("remoteip");
        let rule = rng.word(&[
            "<LocationMatch \"\\.gz$\">\n<RequireAll>\nRequire all granted\n\
             Require not ip {forwarded}\n</RequireAll>\n</LocationMatch>\n",
            "<LocationMatch \"\\.(br|zst)$\">\nRequire ip 127.0.0.0/8\n</LocationMatch>\n",
            "<LocationMatch \"\\.gz$\">\nSetEnvIf Remote_Addr ^{forwarded}$ bad\n<RequireAll>\n\
             Require all granted\nRequire not env bad\n</RequireAll>\n</LocationMatch>\n",
        ]);
        // Last of the server's sections, merged last: they decide a
        // sibling's name, whatever the rules drawn before say.
        *server += &rule.replace("{forwarded}", FORWARDED);
        if rule.contains("SetEnvIf") && !cfg.modules.contains(&"setenvif") {
            cfg.modules.push("setenvif");
        }
    }
    if rng.chance(20) {
        // A hook that reads the request's body (ap_parse_form_data, for
        // any method), for every name or for siblings' only: what a twin
        // reads there is what its input gives it.
        let hook = format!("LuaHookAccessChecker {} check\n", lua_check().display());
        *server += &match rng.chance(50) {
            true => hook,
            false => format!("<FilesMatch \"\\.(gz|br|zst)$\">\n{hook}</FilesMatch>\n"),
        };
        cfg.modules.push("lua");
    }
}

/// The form a client may send with its GETs (`Client::body`); the Lua
/// hook refuses the first.
const BODIES: [&str; 2] = ["x=attack", "x=hello"];

/// A Lua access hook, written once per run: it reads the request's form
/// body and refuses one whose `x` is "attack".
fn lua_check() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let d = DIR.get_or_init(|| {
        let d = world_readable_tempdir();
        let script = "require 'apache2'\nfunction check(r)\n\
            local form = r:parsebody()\n\
            if form and form['x'] == 'attack' then return 403 end\n\
            return apache2.DECLINED\nend\n";
        let f = d.path().join("check.lua");
        fs::write(&f, script).expect("check.lua");
        fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o644))
            .expect("chmod");
        d
    });
    Box::leak(d.path().join("check.lua").into_boxed_path())
}

// ---- TLS ----

/// The server lines of a TLS configuration (`{tls}`: the certificates'
/// directory): both ports serve TLS, HTTP/2 by ALPN, and ask every
/// client for a certificate that alice's and bob's satisfy.
const TLS_SERVER: &str = "SSLEngine on\nSSLCertificateFile {tls}/cert.pem\n\
    SSLCertificateKeyFile {tls}/key.pem\nSSLCACertificateFile {tls}/clients.pem\n\
    SSLVerifyClient optional\nSSLVerifyDepth 1\nProtocols h2 http/1.1\n";

/// The certificates, made once per run: the server's (127.0.0.1), and
/// alice's and bob's, self-signed, trusted by the server for clients.
fn tls_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let d = world_readable_tempdir();
        make_cert(d.path());
        let mut trusted = vec![];
        for cn in ["alice", "bob"] {
            let st = std::process::Command::new("openssl")
                .args([
                    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                ])
                .args(["-subj", &format!("/CN={cn}")])
                .arg("-keyout")
                .arg(d.path().join(format!("{cn}.key")))
                .arg("-out")
                .arg(d.path().join(format!("{cn}.pem")))
                .output()
                .expect("openssl");
            assert!(st.status.success(), "openssl: {st:?}");
            trusted.extend(fs::read(d.path().join(format!("{cn}.pem"))).expect("cert"));
        }
        fs::write(d.path().join("clients.pem"), trusted).expect("clients.pem");
        for f in fs::read_dir(d.path()).expect("dir") {
            let f = f.expect("entry").path();
            fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o644))
                .expect("chmod");
        }
        d
    })
    .path()
}

// ---- Clients ----

#[derive(Clone, Debug)]
struct Client {
    addr: &'static str,
    proto: &'static str,
    user: Option<&'static str>,
    agent: &'static str,
    /// The second port (its virtual host) rather than the first.
    second: bool,
    /// Over TLS: the client certificate presented (alice's, bob's, none).
    tls: Option<Option<&'static str>>,
    /// Over TLS 1.2 at most, where mod_ssl renegotiates (TLS 1.3 has
    /// post-handshake authentication, which curl does not offer).
    tls12: bool,
    /// Sends `X-Forwarded-For: FORWARDED`, as a proxy in front would.
    forwards: bool,
    /// A form body sent with every GET, of `BODIES` (HTTP/1.x only).
    body: Option<&'static str>,
    /// That body sent chunked (`Transfer-Encoding`, HTTP/1.1 only), not
    /// with a `Content-Length`.
    chunked: bool,
    /// Its credentials sent as HTTP Digest asks (`Config::digest`).
    digest: bool,
}

fn clients(rng: &mut Rng, vhost: bool, tls: bool) -> Vec<Client> {
    let mut out = vec![];
    for _ in 0..6 {
        let addr = rng.word(&["127.0.0.1", "127.0.0.2", "127.0.0.3"]);
        let proto = rng.word(&["--http1.0", "--http1.1", "--http2-prior-knowledge"]);
        out.push(Client {
            addr,
            // HTTP/2 over TLS is negotiated by ALPN.
            proto: match proto {
                "--http2-prior-knowledge" if tls => "--http2",
                p => p,
            },
            user: *rng.pick(&[
                None,
                None,
                Some("alice:apw"),
                Some("bob:bpw"),
                Some("alice:bad"),
            ]),
            agent: rng.word(&["curl/diff", "EvilBot/1.0", "Mozilla/5.0"]),
            second: vhost && rng.chance(40),
            tls: tls.then(|| *rng.pick(&[None, Some("alice"), Some("bob")])),
            tls12: false,
            forwards: false,
            body: None,
            chunked: false,
            digest: false,
        });
    }
    out
}

/// What a response showed: status, Content-Encoding, body.
#[derive(Clone, Debug)]
struct Got {
    status: u16,
    coding: Option<String>,
    body: Vec<u8>,
    /// The handler that answered (`X-Diff-Handler`, the module's server).
    handler: Option<String>,
    /// Whether a shared cache may store it (RFC 9111 §3): no `private`
    /// or `no-store`, and a request without credentials.
    storable: bool,
}

/// The client's requests for `asks` (URI, Accept-Encoding), in order: one
/// curl run (`--next` between them), or one per request over HTTP/2: curl
/// 7.88 fails a second stream on a prior-knowledge connection it reuses,
/// and over TLS a stream refused as needing HTTP/1.1 (mod_ssl's
/// renegotiation on a name) moves curl's later requests to an HTTP/1.1
/// connection, so what a URI is answered over would depend on the
/// requests before it.
fn fetch_all(port: u16, c: &Client, asks: &[(String, Option<&str>)]) -> Vec<Got> {
    if c.proto.starts_with("--http2") {
        asks.chunks(1)
            .flat_map(|a| fetch_batch(port, c, a))
            .collect()
    } else {
        fetch_batch(port, c, asks)
    }
}

fn fetch_batch(port: u16, c: &Client, asks: &[(String, Option<&str>)]) -> Vec<Got> {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut args: Vec<String> = vec![];
    for (i, (uri, ae)) in asks.iter().enumerate() {
        if i > 0 {
            args.push("--next".into());
        }
        args.extend(
            [
                "-sS",
                "--max-time",
                "20",
                "--path-as-is",
                "--interface",
                c.addr,
                c.proto,
            ]
            .map(String::from),
        );
        args.extend(["-A".into(), c.agent.into()]);
        if c.forwards {
            args.extend(["-H".into(), format!("X-Forwarded-For: {FORWARDED}")]);
        }
        if let Some(b) = c.body {
            args.extend(["-X".into(), "GET".into(), "--data".into(), b.into()]);
            if c.chunked {
                args.extend(["-H".into(), "Transfer-Encoding: chunked".into()]);
            }
        }
        if let Some(u) = c.user {
            args.extend(["-u".into(), u.into()]);
            if c.digest {
                args.push("--digest".into());
            }
        }
        if let Some(ae) = ae {
            args.extend(["-H".into(), format!("Accept-Encoding: {ae}")]);
            if ae.contains("dc") {
                let held = announce(&dictionary());
                args.extend(["-H".into(), format!("Available-Dictionary: {held}")]);
            }
        }
        let d = dir.path();
        args.extend(["-D".into(), d.join(format!("h{i}")).display().to_string()]);
        args.extend(["-o".into(), d.join(format!("b{i}")).display().to_string()]);
        let scheme = match c.tls {
            Some(cert) => {
                args.extend(tls_args(cert));
                if c.tls12 {
                    args.extend(["--tls-max".into(), "1.2".into()]);
                }
                // ALPN has no HTTP/1.0: Apache answers curl's `http/1.0`
                // with a protocol it did not offer.
                if c.proto == "--http1.0" {
                    args.push("--no-alpn".into());
                }
                "https"
            }
            None => "http",
        };
        args.push(format!("{scheme}://127.0.0.1:{port}{uri}"));
    }
    let out = std::process::Command::new("curl")
        .args(&args)
        .output()
        .expect("curl");
    if std::env::var_os("DIFF_DEBUG").is_some() {
        eprintln!(
            "curl {:?}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    (0..asks.len())
        .map(|i| {
            let head = fs::read_to_string(dir.path().join(format!("h{i}"))).unwrap_or_default();
            let body = fs::read(dir.path().join(format!("b{i}"))).unwrap_or_default();
            let status = head
                .lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            let header = |name: &str| {
                head.lines().skip(1).find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
                })
            };
            let cc = header("cache-control")
                .unwrap_or_default()
                .to_ascii_lowercase();
            Got {
                status,
                coding: header("content-encoding"),
                body,
                handler: header("x-diff-handler"),
                storable: c.user.is_none() && !cc.contains("private") && !cc.contains("no-store"),
            }
        })
        .collect()
}

/// curl's arguments over TLS: the server's certificate trusted, and the
/// client's own presented. No session resumed (what is judged is the
/// certificate, not resumption, which fails here with "bad extension"
/// once the server asks for a certificate).
fn tls_args(cert: Option<&str>) -> Vec<String> {
    let t = tls_dir();
    let mut a = vec![
        "--no-sessionid".into(),
        "--cacert".into(),
        t.join("cert.pem").display().to_string(),
    ];
    if let Some(cn) = cert {
        a.push("--cert".into());
        a.push(t.join(format!("{cn}.pem")).display().to_string());
        a.push("--key".into());
        a.push(t.join(format!("{cn}.key")).display().to_string());
    }
    a
}

/// Decodes `body` by a coding token with the command-line tools, never
/// the module's own decoders.
fn cli_decode(coding: &str, body: &[u8]) -> Option<Vec<u8>> {
    let (prog, args): (&str, &[&str]) = match coding {
        "gzip" | "x-gzip" => ("gzip", &["-dc"]),
        "br" => ("brotli", &["-dc"]),
        "zstd" => ("zstd", &["-dcq"]),
        "dcz" | "dcb" => return oracle_decode_delta(coding, &dictionary(), body).ok(),
        _ => return None,
    };
    let out = pipe(prog, args, body)?;
    out.status.success().then_some(out.stdout)
}

/// The names whose direct GET may give what the module sends for `uri`:
/// itself and its pages' siblings' (each with `uri`'s query).
fn candidates(uri: &str, index: &[&str]) -> Vec<String> {
    let mut names = vec![uri.to_owned()];
    for (page, query) in pages_of(uri, index) {
        names.extend(siblings(&page, &query));
    }
    let mut seen = BTreeSet::new();
    names.retain(|n| seen.insert(n.clone()));
    names
}

/// A page's URI and its siblings', `query` after each suffix.
fn siblings(page: &str, query: &str) -> Vec<String> {
    let mut names = vec![];
    for s in ["", ".gz", ".br", ".zst"] {
        names.push(format!("{page}{s}{query}"));
    }
    for t in ["dcz", "dcb"] {
        names.push(format!("{page}{}{query}", delta_suffix(t)));
    }
    names
}

/// The pages `uri` names (path, and the query with its `?` or empty):
/// itself, or for a directory each name `DirectoryIndex` may give it.
fn pages_of(uri: &str, index: &[&str]) -> Vec<(String, String)> {
    let (path, query) = match uri.split_once('?') {
        Some((p, q)) => (p, format!("?{q}")),
        None => (uri, String::new()),
    };
    if path.ends_with('/') {
        index
            .iter()
            .map(|i| (format!("{path}{i}"), query.clone()))
            .collect()
    } else {
        vec![(path.to_owned(), query)]
    }
}

/// A URI's path as the file it names: no query, `%2e` decoded, no `/./`.
fn file_path(uri: &str) -> String {
    let path = uri.split('?').next().unwrap_or(uri);
    path.replace("%2e", ".")
        .replace("%2E", ".")
        .replace("/./", "/")
}

/// Bytes a client may GET for `uri`: the oracle's 200 answers for the
/// candidates, each as sent and, for a sibling, decoded by its suffix.
/// A sibling's own URI counts only where the page's file is not what
/// answers the page: a sibling of an existing original is sent only
/// verified to decode to the original's bytes, allowed by the page's
/// own answer, never for its own name's sake. A delta's own URI counts
/// where the module cannot decode it against its dictionary (`stored`
/// false: no publish store holds it): it is then sent as its own name's
/// rules decide. Where the store holds it, a delta beside its original
/// is verified, the page or nothing, as any other sibling.
fn allowed(uri: &str, index: &[&str], oracle: &Memo, stored: bool) -> Vec<Vec<u8>> {
    let mut out = vec![];
    if let Some(r) = oracle.get(uri) {
        out.extend(bodies(uri, r));
    }
    for (page, query) in pages_of(uri, index) {
        let page_uri = format!("{page}{query}");
        let original = original_answers(&page_uri, oracle);
        for n in siblings(&page, &query) {
            let path = n.split('?').next().unwrap_or(&n);
            let delta = path.ends_with(".dcz") || path.ends_with(".dcb");
            if original && n != page_uri && (!delta || stored) {
                continue;
            }
            if let Some(r) = oracle.get(&n) {
                out.extend(bodies(&n, r));
            }
        }
    }
    out
}

/// What the oracle's answer `r` to `name` gives a client: nothing unless
/// a 200; its body as sent and, for a sibling, decoded by its suffix.
fn bodies(name: &str, r: &Got) -> Vec<Vec<u8>> {
    if r.status != 200 {
        return vec![];
    }
    let body = match &r.coding {
        Some(ce) => cli_decode(ce, &r.body).unwrap_or_else(|| r.body.clone()),
        None => r.body.clone(),
    };
    let path = name.split('?').next().unwrap_or(name);
    let codings = [
        (".gz", "gzip"),
        (".br", "br"),
        (".zst", "zstd"),
        (".dcz", "dcz"),
        (".dcb", "dcb"),
    ];
    let mut out: Vec<Vec<u8>> = codings
        .iter()
        .filter(|(s, _)| path.ends_with(s))
        .filter_map(|(_, coding)| cli_decode(coding, &body))
        .collect();
    out.push(body);
    out
}

/// Whether the oracle answered `page` (a page's URI) with that page's
/// own file, as it is: then its original exists.
fn original_answers(page: &str, oracle: &Memo) -> bool {
    let own = format!(":{}]", file_path(page).trim_start_matches('/'));
    oracle
        .get(page)
        .is_some_and(|r| r.status == 200 && r.coding.is_none() && tag(&r.body).ends_with(&own))
}

/// A coded sibling's own URI counts only where the module's server, too,
/// answers it with a 200 (its own handler's rules, such as stepping aside
/// for a handler `SetHandler` replaced, apply to that name's request):
/// what the server refuses a name directly it never sends through the
/// page. The oracle's answer to such a name takes the module server's
/// status.
fn refused_by_the_module_server(oracle: &mut Memo, port: u16, c: &Client) {
    let coded = |n: &str| {
        let path = n.split('?').next().unwrap_or(n);
        [".gz", ".br", ".zst"].iter().any(|s| path.ends_with(s))
    };
    let asks: Vec<(String, Option<&str>)> = oracle
        .iter()
        .filter(|(n, r)| r.status == 200 && coded(n))
        .map(|(n, _)| (n.clone(), None))
        .collect();
    for ((n, _), own) in asks.iter().zip(fetch_all(port, c, &asks)) {
        if own.status != 200 {
            if let Some(r) = oracle.get_mut(n) {
                r.status = own.status;
            }
        }
    }
}

/// The oracle answers to one client, by URI.
type Memo = HashMap<String, Got>;

/// A body the module sent that the client could not GET.
struct Violation {
    client: Client,
    uri: String,
    ae: Option<&'static str>,
    coding: Option<String>,
    sent: String,
    oracle: String,
}

// ---- Running one configuration ----

struct Servers {
    module: Apache,
    _oracle: Apache,
    ports: [u16; 2],
    oracle_ports: [u16; 2],
}

fn start_one(cfg: &Config, with_module: bool) -> Result<(Apache, u16), String> {
    let port2 = free_port();
    let sethandler = if with_module {
        "SetHandler gzip-disk-ng"
    } else {
        "SetHandler default-handler"
    };
    let mut server = cfg.server.clone();
    if !with_module {
        server = server.replace("gzip-disk-ng", "default-handler");
    }
    server = format!("Listen 127.0.0.1:{port2}\n{server}")
        .replace("{tls}", &tls_dir().display().to_string())
        .replace("{port2}", &port2.to_string())
        .replace("{sethandler}", sethandler);
    let mut modules = cfg.modules.clone();
    if with_module {
        // Which handler answered, so a script's bytes are laid at the
        // module's door only where it did.
        server += "\nHeader always set X-Diff-Handler \"expr=%{HANDLER}\"";
        if !modules.contains(&"headers") {
            modules.push("headers");
        }
    }
    let opts = Options {
        dir: format!("{sethandler}\n{}", cfg.dir),
        server,
        modules,
        log_level: if with_module {
            "warn gzip_disk_ng:debug"
        } else {
            "warn"
        },
        load: (!with_module).then(String::new),
        ..Default::default()
    };
    let htaccess = cfg.htaccess.clone();
    let ondemand = cfg.ondemand;
    let fill = move |docroot: &Path| {
        let root = docroot.parent().expect("root").to_owned();
        // Labels of one length: files of one path have one size in both.
        fill_root(docroot, "d1");
        fill_root(&root.join("docs2"), "d2");
        fill_store(&root.join("store"));
        for (d, text) in &htaccess {
            for r in ["docs", "docs2"] {
                let t = text
                    .replace("{docroot}", &root.join(r).display().to_string())
                    .replace("{root}", &root.display().to_string());
                fs::write(root.join(r).join(d).join(".htaccess"), t).expect(".htaccess");
            }
        }
        fs::write(root.join("groups"), "staff: alice\n").expect("groups");
        let pw = root.join("htpasswd");
        for (i, (u, p)) in [("alice", "apw"), ("bob", "bpw")].iter().enumerate() {
            let flag = if i == 0 { "-bcm" } else { "-bm" };
            let st = std::process::Command::new("htpasswd")
                .args([flag, pw.to_str().expect("utf-8"), u, p])
                .stderr(std::process::Stdio::null())
                .status()
                .expect("htpasswd");
            assert!(st.success());
        }
        fs::write(root.join("htdigest"), htdigest()).expect("htdigest");
        if ondemand {
            make_cache_root(&root.join("cache"));
        }
    };
    let opts = fill_root_placeholder(opts);
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Apache::start(opts, fill)))
        .map(|a| (a, port2))
        .map_err(|e| {
            e.downcast_ref::<String>()
                .cloned()
                .unwrap_or_else(|| "apache did not start".into())
        })
}

/// The users of `htpasswd` as mod_auth_digest's file holds them, in the
/// realm `diff`: `user:realm:` and the MD5 of `user:realm:password`.
fn htdigest() -> String {
    let mut out = String::new();
    for (u, p) in [("alice", "apw"), ("bob", "bpw")] {
        let md5 = std::process::Command::new("sh")
            .args(["-c", &format!("printf %s {u}:diff:{p} | md5sum")])
            .output()
            .expect("md5sum");
        let hex = String::from_utf8_lossy(&md5.stdout);
        let hex = hex.split(' ').next().unwrap_or_default();
        assert_eq!(hex.len(), 32, "md5sum");
        out += &format!("{u}:diff:{hex}\n");
    }
    out
}

/// `{root}` is the docroot's parent: written as `{docroot}/..`.
fn fill_root_placeholder(mut o: Options) -> Options {
    o.server = o.server.replace("{root}", "{docroot}/..");
    o.dir = o.dir.replace("{root}", "{docroot}/..");
    o
}

fn start(cfg: &Config) -> Result<Servers, String> {
    let (oracle, op2) = start_one(cfg, false).map_err(|e| format!("oracle: {e}"))?;
    let (module, mp2) = start_one(cfg, true).map_err(|e| format!("MODULE ONLY: {e}"))?;
    Ok(Servers {
        ports: [module.port, mp2],
        oracle_ports: [oracle.port, op2],
        module,
        _oracle: oracle,
    })
}

const ENCODINGS: &[Option<&str>] = &[
    Some("gzip, deflate, br, zstd"),
    Some("gzip"),
    Some("br"),
    Some("zstd"),
    Some("dcz, dcb, br, gzip"),
    Some("dcb, gzip"),
    None,
];

/// Deltas the module sent, over every seed: the run must have met some.
static DELTAS_SENT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The violations of one seed; `None` where Apache itself refuses the
/// configuration (the grammar made something httpd does not accept) or
/// crashes on it (the oracle's child died).
fn run_seed(seed: u64) -> Result<Option<Vec<Violation>>, String> {
    let cfg = generate(seed);
    let s = match start(&cfg) {
        Ok(s) => s,
        Err(e) if e.starts_with("oracle") => {
            eprintln!("seed {seed}: Apache refuses the configuration; not counted\n{e}");
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let mut rng = Rng(seed ^ 0x5eed);
    let mut cs = clients(&mut rng, cfg.vhost, cfg.tls);
    if cfg.vhost {
        // Both hosts asked, so what one host made can meet the other.
        cs[0].second = false;
        cs[1].second = true;
    }
    if cfg.tls {
        // Of one host, a certificate holder and a client with none, both
        // without credentials: what a shared cache stores of one's
        // answers meets the other.
        for (c, cert) in cs[2..4].iter_mut().zip([Some("alice"), None]) {
            (c.tls, c.user, c.second) = (Some(cert), None, false);
        }
        // Drawn apart, so the other draws stay as they were.
        let mut versions = Rng(seed ^ 0x7112);
        for c in &mut cs {
            c.tls12 = versions.chance(40);
        }
    }
    let mut proxies = Rng(seed ^ 0xF0D5);
    for c in &mut cs {
        c.forwards = proxies.chance(50);
        c.digest = cfg.digest;
    }
    // Over HTTP/1.x only: curl 7.88 fails an HTTP/2 stream answered
    // before its body was read (error 92) from either server, as timing
    // has it.
    let mut bodies = Rng(seed ^ 0xB0D7);
    for c in &mut cs {
        let body = bodies.chance(30).then(|| *bodies.pick(&BODIES));
        // Nor with Digest credentials: curl sends such a request without
        // its body first, then again with it.
        c.body = body.filter(|_| !c.proto.starts_with("--http2") && !cfg.digest);
        c.chunked = bodies.chance(50) && c.proto == "--http1.1";
    }
    // Whose page requests meet the main host's publish store.
    let stored: Vec<bool> = cs
        .iter()
        .map(|c| cfg.store && !(cfg.vhost && c.second))
        .collect();
    let all = uris(&cfg);
    let found = std::sync::Mutex::new(vec![]);
    let seen = std::sync::Mutex::new(vec![]);
    let rounds = if cfg.ondemand { 2 } else { 1 };
    let asks: Vec<Vec<(String, Option<&str>)>> = (0..cs.len() * rounds)
        .map(|_| {
            all.iter()
                .map(|u| (u.clone(), *rng.pick(ENCODINGS)))
                .collect()
        })
        .collect();
    std::thread::scope(|scope| {
        for (ci, c) in cs.iter().enumerate() {
            let (s, found, seen, asks, all) = (&s, &found, &seen, &asks, &all);
            let index = &cfg.index[..];
            let programs = cfg.programs();
            let stored = stored[ci];
            scope.spawn(move || {
                let i = usize::from(c.second);
                let names: BTreeSet<String> =
                    all.iter().flat_map(|u| candidates(u, index)).collect();
                let names: Vec<_> = names.into_iter().map(|n| (n, None)).collect();
                let got = fetch_all(s.oracle_ports[i], c, &names);
                let mut oracle: Memo = names.into_iter().map(|(n, _)| n).zip(got).collect();
                refused_by_the_module_server(&mut oracle, s.ports[i], c);
                for round in 0..rounds {
                    if round > 0 {
                        std::thread::sleep(Duration::from_millis(1500));
                    }
                    let ask = &asks[ci * rounds + round];
                    let mut answers = vec![];
                    for ((uri, ae), r) in ask.iter().zip(fetch_all(s.ports[i], c, ask)) {
                        if r.status == 200 && matches!(r.coding.as_deref(), Some("dcz" | "dcb")) {
                            DELTAS_SENT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        if std::env::var_os("DIFF_DEBUG").is_some() {
                            let body = r
                                .coding
                                .as_deref()
                                .map_or(Some(r.body.clone()), |ce| cli_decode(ce, &r.body));
                            eprintln!(
                                "answer {ci} {uri} {ae:?}: {} {:?} {:?}",
                                r.status,
                                r.coding,
                                body.as_deref().map(tag)
                            );
                        }
                        let site = (index, stored, programs);
                        if let Some(v) = check(c, uri, *ae, &r, &oracle, site) {
                            found.lock().expect("lock").push(v);
                        }
                        answers.push((uri.clone(), *ae, r));
                    }
                    seen.lock()
                        .expect("lock")
                        .push((ci, oracle.clone(), answers));
                }
            });
        }
    });
    let mut found = found.into_inner().expect("lock");
    found.extend(shared_cache_violations(
        &cs,
        &cfg.index,
        &stored,
        &seen.into_inner().expect("lock"),
    ));
    if std::env::var_os("DIFF_DEBUG").is_some() {
        eprintln!("oracle log:\n{}", s._oracle.error_log());
        eprintln!("module log:\n{}", s.module.error_log());
        eprintln!(
            "oracle conf:\n{}",
            fs::read_to_string(s._oracle.root.path().join("httpd.conf")).unwrap_or_default()
        );
    }
    if let Some(secs) = std::env::var("DIFF_HOLD").ok().and_then(|v| v.parse().ok()) {
        eprintln!(
            "holding {secs} s: module {:?} at {:?}, oracle {:?} at {:?}",
            s.ports,
            s.module.root.path(),
            s.oracle_ports,
            s._oracle.root.path()
        );
        std::thread::sleep(Duration::from_secs(secs));
    }
    if let Some(how) = s._oracle.crash() {
        // httpd's own defect (mod_auth_digest under MultiViews, when a
        // variant mod_negotiation passes over needs Digest credentials):
        // the module's server, which runs the same modules, would crash
        // alike, so nothing of it is told from this seed.
        eprintln!("seed {seed}: Apache itself crashes on this configuration ({how}); not counted");
        return Ok(None);
    }
    if let Some(how) = s.module.crash() {
        return Err(format!(
            "a child of the module's server died ({how}), the oracle's none:\n{}",
            s.module.error_log()
        ));
    }
    let (me, oe) = (errors(&s.module), errors(&s._oracle));
    let extra: Vec<_> = me.difference(&oe).collect();
    if !extra.is_empty() {
        return Err(format!(
            "the module's server logged errors the oracle did not: {extra:?}\n{}",
            s.module.error_log()
        ));
    }
    if cfg.forensic {
        let (m, o) = (unfinished(&s.module), unfinished(&s._oracle));
        if !m.is_empty() && o.is_empty() {
            return Err(format!(
                "the module's forensic log holds requests that did not finish \
                 (the oracle's none): {m}"
            ));
        }
    }
    Ok(Some(found))
}

/// The kinds of error `a` logged, by message number (`AH01630`), but the
/// module's own and mod_cgid's: the module's server runs the programs a
/// `ScriptAlias` maps, which the oracle's `SetHandler default-handler`
/// sends as files. Another module's error only the module's server
/// logged is what a request the module made for its own checks did, and
/// an admin (or fail2ban) would read it as the client's.
fn errors(a: &Apache) -> BTreeSet<String> {
    a.error_log()
        .lines()
        .filter(|l| l.contains(":error]") && !l.contains("[gzip_disk_ng:"))
        .filter(|l| !l.contains("[cgid:"))
        .filter_map(|l| l.split(" AH").nth(1).map(|c| c.chars().take(5).collect()))
        .collect()
}

/// The requests the forensic log of `a` holds no end of, as
/// `check_forensic` reports them, once those in flight had time to end.
fn unfinished(a: &Apache) -> String {
    let log = a.root.path().join("forensic.log");
    let mut out = String::new();
    for _ in 0..20 {
        let o = std::process::Command::new("check_forensic")
            .arg(&log)
            .output()
            .expect("check_forensic (apache2)");
        out = String::from_utf8_lossy(&o.stdout).into_owned();
        if out.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    out
}

/// A violation, if the module's answer `r` to `uri` is not allowed
/// (`stored`: the client's page requests meet the publish store).
fn check(
    c: &Client,
    uri: &str,
    ae: Option<&'static str>,
    r: &Got,
    oracle: &Memo,
    (index, stored, programs): (&[&str], bool, bool),
) -> Option<Violation> {
    // No answer at all (a connection closed, a request timed out) where
    // Apache answers: something the module did to the client's
    // connection that Apache alone does not.
    let answered = |g: &Got| g.status != 0;
    if !answered(r) && oracle.get(uri).is_some_and(answered) {
        return Some(violation(c, uri, ae, r, "no answer".into(), oracle, index));
    }
    if r.status != 200 {
        return None;
    }
    let body = match &r.coding {
        None => Some(r.body.clone()),
        Some(ce) => cli_decode(ce, &r.body),
    };
    // A script's bytes are its source: never sent by the module, even
    // where core, the oracle, would send them (its handler set above the
    // script's own, or no handler for it at all).
    let module = r.handler.as_deref() == Some("gzip-disk-ng");
    // Under a `ScriptAlias` the files of `c` are CGI programs.
    let script = body.as_deref().is_some_and(|b| {
        let t = tag(b);
        t.contains(SCRIPT) || (programs && uri.starts_with(SCRIPT_ALIAS) && t.contains(":c/"))
    });
    let script = module && script;
    if !script
        && body
            .as_ref()
            .is_some_and(|b| allowed(uri, index, oracle, stored).contains(b))
    {
        return None;
    }
    // server-status makes its page per request, so the two servers' pages
    // differ: one is the other's answer where the oracle sent one too.
    let oracle_status = oracle
        .get(uri)
        .is_some_and(|g| g.status == 200 && is_status_page(&g.body));
    if oracle_status && body.as_deref().is_some_and(is_status_page) {
        return None;
    }
    let sent = body
        .as_deref()
        .map_or("a body that does not decode".into(), tag);
    Some(violation(c, uri, ae, r, sent, oracle, index))
}

/// The module's answer `r` (`sent`, as it reads) to `uri`, beside the
/// oracle's statuses for every candidate name.
fn violation(
    c: &Client,
    uri: &str,
    ae: Option<&'static str>,
    r: &Got,
    sent: String,
    oracle: &Memo,
    index: &[&str],
) -> Violation {
    let mut said = String::new();
    for n in candidates(uri, index) {
        if let Some(g) = oracle.get(&n) {
            let _ = write!(said, "{n}={} ", g.status);
        }
    }
    Violation {
        client: c.clone(),
        uri: uri.to_owned(),
        ae,
        coding: r.coding.clone(),
        sent,
        oracle: said,
    }
}

/// What one client was answered: its index, the oracle's answers to it,
/// and the module's (URI, Accept-Encoding, answer).
type Seen = (usize, Memo, Vec<(String, Option<&'static str>, Got)>);

/// Answers a shared cache in front would give the wrong client: a body
/// the module sent one client, storable, that another client of the same
/// host may not GET, where Apache itself answers both clients alike for
/// that URI (where it tells them apart, the cache's trouble is Apache's
/// own). An answer that depended on the client must say so (`private`).
/// A page mod_status made differs per request, and is judged by `check`.
fn shared_cache_violations(
    cs: &[Client],
    index: &[&str],
    stored: &[bool],
    seen: &[Seen],
) -> Vec<Violation> {
    let mut out = vec![];
    for (a, oracle_a, answers) in seen {
        for (uri, ae, r) in answers {
            if r.status != 200 || !r.storable {
                continue;
            }
            let Some(body) = r
                .coding
                .as_deref()
                .map_or(Some(r.body.clone()), |ce| cli_decode(ce, &r.body))
            else {
                continue;
            };
            // mod_status makes its page per request: `check` judges it.
            if is_status_page(&body) {
                continue;
            }
            for (b, oracle_b, _) in seen {
                let same = |x: Option<&Got>, y: Option<&Got>| match (x, y) {
                    (Some(x), Some(y)) => x.status == y.status && x.body == y.body,
                    _ => false,
                };
                // The client itself is `check`'s.
                if b == a
                    || cs[*b].second != cs[*a].second
                    || !same(oracle_a.get(uri), oracle_b.get(uri))
                    || allowed(uri, index, oracle_b, stored[*b]).contains(&body)
                {
                    continue;
                }
                out.push(Violation {
                    client: cs[*b].clone(),
                    uri: uri.clone(),
                    ae: *ae,
                    coding: r.coding.clone(),
                    sent: format!("{} (stored from {:?})", tag(&body), cs[*a]),
                    oracle: "a shared cache's answer".into(),
                });
            }
        }
    }
    out
}

/// A page mod_status made.
fn is_status_page(body: &[u8]) -> bool {
    const TITLE: &[u8] = b"<h1>Apache Server Status for ";
    body.windows(TITLE.len()).any(|w| w == TITLE)
}

fn describe(seed: u64, v: &[Violation]) -> String {
    let cfg = generate(seed);
    let mut out = format!("seed {seed}: {} bodies the client may not GET\n", v.len());
    let _ = writeln!(out, "--- server config ---\n{}", cfg.server);
    let _ = writeln!(out, "--- <Directory docroot> ---\n{}", cfg.dir);
    for (d, t) in &cfg.htaccess {
        let _ = writeln!(out, "--- {d}/.htaccess ---\n{t}");
    }
    for x in v.iter().take(8) {
        let _ = writeln!(
            out,
            "  {:?} GET {} AE {:?}: sent {:?} {} ; oracle: {}",
            x.client, x.uri, x.ae, x.coding, x.sent, x.oracle
        );
    }
    out
}

fn seeds() -> Vec<u64> {
    let var = |n: &str| std::env::var(n).ok().and_then(|v| v.parse::<u64>().ok());
    if let Some(s) = var("DIFF_SEED") {
        return vec![s];
    }
    let first = var("DIFF_FIRST").unwrap_or(0);
    let n = var("DIFF_CONFIGS").unwrap_or(BOUNDED_CONFIGS);
    (first..first + n).collect()
}

#[test]
fn module_sends_only_what_the_client_may_get() {
    for tool in ["gzip", "brotli", "zstd", "htpasswd"] {
        if !have(tool) && tool != "htpasswd" {
            return skip(&format!("{tool} not installed"));
        }
    }
    let minutes = std::env::var("DIFF_MINUTES")
        .ok()
        .and_then(|v| v.parse::<u64>().ok());
    let until = minutes.map(|m| Instant::now() + Duration::from_secs(m * 60));
    let mut list = seeds().into_iter();
    let mut clock_seed = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    let mut failed = vec![];
    let mut ran = 0;
    let mut refused = 0;
    loop {
        let seed = match until {
            Some(t) if Instant::now() < t => {
                clock_seed = Rng(clock_seed).next();
                clock_seed % 1_000_000_000
            }
            Some(_) => break,
            None => match list.next() {
                Some(s) => s,
                None => break,
            },
        };
        eprintln!("differential: seed {seed} (DIFF_SEED={seed} reproduces it)");
        ran += 1;
        match run_seed(seed) {
            Ok(None) => refused += 1,
            Ok(Some(v)) if v.is_empty() => {}
            Ok(Some(v)) => {
                let d = describe(seed, &v);
                eprintln!("{d}");
                failed.push(seed);
            }
            Err(e) => {
                eprintln!("seed {seed}: {e}\n{}", describe(seed, &[]));
                failed.push(seed);
            }
        }
    }
    assert!(
        ran < 8 || refused * 4 <= ran,
        "Apache refused or crashed on {refused} of {ran} generated configurations: \
         the grammar is broken"
    );
    let deltas = DELTAS_SENT.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("differential: {deltas} deltas sent over {ran} configurations");
    assert!(
        ran < 8 || deltas > 0,
        "no delta was sent in {ran} configurations: the site's deltas are not met"
    );
    assert!(
        failed.is_empty(),
        "{} of {ran} configurations let the module send what Apache refuses; \
         reproduce with DIFF_SEED=n: {failed:?}",
        failed.len()
    );
}

//! Which files are static bytes worth compressing, by the type Apache
//! gives them: a MIME map in the format of `mime.types` (what the server's
//! `TypesConfig` reads), read as mod_mime reads a name (every extension
//! after the first dot, the last one the map knows giving the type).
//!
//! A file is compressed only when its type is one that compresses (text,
//! scripts for the browser, JSON, XML, SVG, fonts without their own
//! compression) and no extension of its name is one a server-side handler
//! runs (PHP, CGI, server-side includes): Apache does not send those as
//! their bytes, so a sibling of one would publish its source. A file the
//! map gives no type (`lib.inc`, `config.php.bak`, `page.html~`) is not
//! a page either. The publish tool and the on-demand compressor ask the
//! same rule; the admin can add types to it.

use std::collections::HashMap;
use std::fmt;

/// Extensions a server-side handler runs rather than sends (PHP in all its
/// spellings, CGI and FastCGI, Perl, Python, Ruby and shell scripts, ASP,
/// JSP, ColdFusion), in any position of a name: with `AddHandler`, Apache
/// runs `page.php.html` too.
pub const SCRIPT_EXTENSIONS: &[&str] = &[
    "asp", "aspx", "ashx", "asmx", "cfm", "cfml", "cgi", "fcgi", "jsp", "jspx", "phar", "php",
    "php3", "php4", "php5", "php7", "php8", "phps", "pht", "phtml", "pl", "py", "rb", "sh",
];

/// Extensions of pages server-side includes parse (mod_include's
/// `INCLUDES` filter): sent as bytes where no filter parses them, so the
/// handler serves them as core does, but never compressed, as a sibling
/// would hold the directives rather than what they include.
pub const SSI_EXTENSIONS: &[&str] = &["shtm", "shtml", "stm"];

/// What the rule makes of a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeKind {
    /// A type that compresses: worth a sibling.
    Compressible,
    /// An extension a server-side handler runs, or a type one claims
    /// (`application/x-httpd-php`), or a page server-side includes parse:
    /// never compressed (and, but for the last, never sent as bytes).
    Script,
    /// No extension the map knows: not a page Apache types.
    Untyped,
    /// A type that does not compress (images, archives, binaries).
    Other,
}

impl fmt::Display for TypeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TypeKind::Compressible => "compressible type",
            TypeKind::Script => "server-side script",
            TypeKind::Untyped => "no MIME type",
            TypeKind::Other => "type that does not compress",
        })
    }
}

/// True for a type a handler claims rather than a file's bytes:
/// `application/x-httpd-php`, `application/x-httpd-cgi` and the like,
/// and the other spellings of PHP. Bytes, as Apache keeps a type.
pub fn is_handler_type(t: &[u8]) -> bool {
    let t = essence(t);
    starts_with_ignore_case(t, b"application/x-httpd-")
        || [&b"application/x-php"[..], b"text/x-php", b"application/php"]
            .iter()
            .any(|p| t.eq_ignore_ascii_case(p))
}

/// True for a media type whose bytes compress: text (but for scripts a
/// handler runs), scripts for the browser, JSON and XML of any kind, SVG,
/// WebAssembly and the fonts that are not compressed inside.
pub fn is_compressible_type(t: &[u8]) -> bool {
    const TYPES: &[&str] = &[
        "application/ecmascript",
        "application/javascript",
        "application/json",
        "application/postscript",
        "application/rtf",
        "application/sql",
        "application/vnd.ms-fontobject",
        "application/wasm",
        "application/x-font-otf",
        "application/x-font-ttf",
        "application/x-javascript",
        "application/x-tar",
        "application/xml",
        "application/xml-dtd",
        "font/collection",
        "font/otf",
        "font/sfnt",
        "font/ttf",
        "image/bmp",
    ];
    let t = essence(t);
    if starts_with_ignore_case(t, b"text/") {
        return !t.eq_ignore_ascii_case(b"text/x-php");
    }
    let suffixed = [b"+xml", &b"+json"[..]]
        .iter()
        .any(|s| ends_with_ignore_case(t, s));
    !is_handler_type(t) && (suffixed || TYPES.iter().any(|k| t.eq_ignore_ascii_case(k.as_bytes())))
}

/// True when an extension of `name` (its last path component, read as
/// mod_mime does) is one a server-side handler runs.
pub fn is_script_name(name: &[u8]) -> bool {
    extensions(name).any(is_script_ext)
}

/// True when `ext` (without its dot, in any case) is one a server-side
/// handler runs.
pub fn is_script_ext(ext: &[u8]) -> bool {
    // Numbers, not strings, are searched: the handler asks this of every
    // request it takes (bench/budget.sh).
    ext_key(ext).is_some_and(|k| SCRIPT_KEYS.binary_search(&k).is_ok())
}

/// Longest extension `ext_key` packs.
pub(crate) const EXT_KEY_MAX: usize = 7;

/// An extension of at most `EXT_KEY_MAX` bytes in one number: its bytes
/// in ASCII lower case, then its length, so two extensions share a key
/// only when they are equal but for case. `None` for a longer one.
pub(crate) const fn ext_key(ext: &[u8]) -> Option<u64> {
    if ext.len() > EXT_KEY_MAX {
        return None;
    }
    let mut k = 0u64;
    let mut i = 0;
    while i < EXT_KEY_MAX {
        let b = if i < ext.len() {
            ext[i].to_ascii_lowercase()
        } else {
            0
        };
        k = k << 8 | b as u64;
        i += 1;
    }
    Some(k << 8 | ext.len() as u64)
}

/// The keys of `list` (of `N` extensions), sorted for a binary search.
pub(crate) const fn sorted_keys<const N: usize>(list: &[&str]) -> [u64; N] {
    assert!(list.len() == N);
    let mut keys = [0u64; N];
    let mut i = 0;
    while i < N {
        keys[i] = match ext_key(list[i].as_bytes()) {
            Some(k) => k,
            None => panic!("an extension longer than EXT_KEY_MAX"),
        };
        i += 1;
    }
    // Insertion sort: a const context has no `sort`.
    let mut i = 1;
    while i < N {
        let mut j = i;
        while j > 0 && keys[j - 1] > keys[j] {
            let t = keys[j];
            keys[j] = keys[j - 1];
            keys[j - 1] = t;
            j -= 1;
        }
        i += 1;
    }
    keys
}

/// `SCRIPT_EXTENSIONS`' keys.
const SCRIPT_KEYS: [u64; SCRIPT_EXTENSIONS.len()] = sorted_keys(SCRIPT_EXTENSIONS);

/// `SSI_EXTENSIONS`' keys.
const SSI_KEYS: [u64; SSI_EXTENSIONS.len()] = sorted_keys(SSI_EXTENSIONS);

/// The extensions mod_mime reads in a name: its last path component split
/// at dots, the part before the first dot left out (`index.html.en` has
/// `html` and `en`; `.htaccess` has `htaccess`).
fn extensions(name: &[u8]) -> impl Iterator<Item = &[u8]> {
    let base = memchr::memrchr(b'/', name).map_or(name, |i| &name[i + 1..]);
    base.split(|&b| b == b'.').skip(1).filter(|e| !e.is_empty())
}

/// A type without its parameters (`text/html; charset=utf-8`).
pub fn essence(t: &[u8]) -> &[u8] {
    // A type is a few dozen bytes: a plain loop beats memchr's set-up.
    let t = t.iter().position(|&b| b == b';').map_or(t, |i| &t[..i]);
    t.trim_ascii()
}

fn starts_with_ignore_case(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

fn ends_with_ignore_case(s: &[u8], suffix: &[u8]) -> bool {
    s.len() >= suffix.len() && s[s.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
}

/// Extension to type, as `mime.types` lists them, with the admin's types
/// added to those that compress.
#[derive(Clone, Debug)]
pub struct Types {
    /// Each extension of at most `EXT_KEY_MAX` bytes (all but a few) by
    /// its key, sorted, with its type's kind, decided once.
    short: Vec<(u64, TypeKind)>,
    /// The longer ones, in lower case.
    long: HashMap<Box<[u8]>, TypeKind>,
}

/// The system's MIME map, where Apache's `TypesConfig` reads it on Debian
/// and RHEL: what the publish tool and the on-demand compressor read.
pub const SYSTEM_MIME_TYPES: &str = "/etc/mime.types";

/// The common web types, for a system without a `mime.types`.
pub const BUILTIN: &str = "text/html html htm shtml\ntext/css css\ntext/javascript js mjs\n\
text/plain txt\ntext/csv csv\ntext/markdown md\ntext/xml\napplication/json json\n\
application/manifest+json webmanifest\napplication/ld+json jsonld\napplication/xml xml\n\
application/xhtml+xml xhtml\napplication/rss+xml rss\napplication/atom+xml atom\n\
image/svg+xml svg\napplication/wasm wasm\nfont/ttf ttf\nfont/otf otf\n\
application/vnd.ms-fontobject eot\napplication/octet-stream bin\n";

impl Default for Types {
    /// A map that knows no type but the scripts'.
    fn default() -> Types {
        Types::parse("", &[])
    }
}

impl Types {
    /// The map a `mime.types` text gives (`type ext ext…` a line, `#`
    /// comments), each type that compresses, and each of `extra` (the
    /// admin's), as one that does.
    pub fn parse(text: &str, extra: &[String]) -> Types {
        let mut by_key = HashMap::new();
        let mut long = HashMap::new();
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("");
            let mut words = line.split_whitespace();
            let Some(t) = words.next() else { continue };
            let kind = if is_handler_type(t.as_bytes()) {
                TypeKind::Script
            } else if is_compressible_type(t.as_bytes())
                || extra.iter().any(|x| x.eq_ignore_ascii_case(t))
            {
                TypeKind::Compressible
            } else {
                TypeKind::Other
            };
            for ext in words {
                match ext_key(ext.as_bytes()) {
                    Some(k) => by_key.insert(k, kind),
                    None => long.insert(ext.to_ascii_lowercase().into_bytes().into(), kind),
                };
            }
        }
        // Scripts are scripts whatever the map says of them.
        for k in SCRIPT_KEYS.into_iter().chain(SSI_KEYS) {
            by_key.insert(k, TypeKind::Script);
        }
        let mut short: Vec<(u64, TypeKind)> = by_key.into_iter().collect();
        short.sort_unstable_by_key(|e| e.0);
        Types { short, long }
    }

    /// What the rule makes of `name`: a script where any extension is one
    /// a handler runs or the map gives a handler's type; else the kind of
    /// the type mod_mime would give it (the last extension the map knows).
    pub fn kind(&self, name: &[u8]) -> TypeKind {
        let mut kind = TypeKind::Untyped;
        for ext in extensions(name) {
            match self.lookup(ext) {
                Some(TypeKind::Script) => return TypeKind::Script,
                Some(k) => kind = k,
                None => {}
            }
        }
        kind
    }

    /// The kind of the type the map gives `ext`, if it gives one.
    fn lookup(&self, ext: &[u8]) -> Option<TypeKind> {
        match ext_key(ext) {
            Some(k) => self
                .short
                .binary_search_by_key(&k, |e| e.0)
                .ok()
                .map(|i| self.short[i].1),
            None => self.long.get(&*ext.to_ascii_lowercase()).copied(),
        }
    }

    /// How many extensions the map knows (the scripts' included).
    pub fn len(&self) -> usize {
        self.short.len() + self.long.len()
    }

    /// True when the map knows no extension.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn debian() -> Types {
        Types::parse(
            "# comment\napplication/x-trash ~ % bak old sik\ntext/html html htm shtml\n\
             text/x-perl pl pm\napplication/x-httpd-php phtml pht php\nimage/png png\n\
             application/json json\nimage/svg+xml svg svgz\ntext/x-scss\n",
            &[],
        )
        .with(BUILTIN)
    }

    impl Types {
        /// This map with the extensions of `more` it does not know.
        fn with(self, more: &str) -> Types {
            let more = Types::parse(more, &[]);
            let mut short = self.short.clone();
            for e in more.short {
                if self.short.binary_search_by_key(&e.0, |x| x.0).is_err() {
                    short.push(e);
                }
            }
            short.sort_unstable_by_key(|e| e.0);
            let mut long = self.long;
            for (k, v) in more.long {
                long.entry(k).or_insert(v);
            }
            Types { short, long }
        }
    }

    #[test]
    fn pages_styles_and_data_compress() {
        let t = debian();
        for n in [
            "index.html",
            "/srv/www/INDEX.HTM",
            "style.css",
            "app.js",
            "data.json",
            "logo.svg",
            "index.html.en",
            "f.webmanifest",
            "notes.txt",
        ] {
            assert_eq!(t.kind(n.as_bytes()), TypeKind::Compressible, "{n}");
        }
    }

    #[test]
    fn scripts_backups_and_untyped_names_do_not() {
        let t = debian();
        for (n, k) in [
            ("wp-config.php", TypeKind::Script),
            ("/var/www/WP-CONFIG.PHP", TypeKind::Script),
            ("page.php.html", TypeKind::Script),
            ("page.phtml", TypeKind::Script),
            ("index.shtml", TypeKind::Script),
            ("index.stm", TypeKind::Script),
            ("run.cgi", TypeKind::Script),
            ("tool.pl", TypeKind::Script),
            ("config.php.bak", TypeKind::Script),
            ("lib.inc", TypeKind::Untyped),
            ("config.bak", TypeKind::Other),
            ("page.html~", TypeKind::Untyped),
            ("README", TypeKind::Untyped),
            (".htaccess", TypeKind::Untyped),
            ("photo.png", TypeKind::Other),
            ("blob.bin", TypeKind::Other),
        ] {
            assert_eq!(t.kind(n.as_bytes()), k, "{n}");
        }
    }

    #[test]
    fn the_last_known_extension_gives_the_type() {
        let t = debian();
        assert_eq!(t.kind("a.png.html".as_bytes()), TypeKind::Compressible);
        assert_eq!(t.kind("a.html.png".as_bytes()), TypeKind::Other);
        assert_eq!(t.kind("a.html.unknown".as_bytes()), TypeKind::Compressible);
    }

    #[test]
    fn a_handler_type_in_the_map_is_a_script() {
        let t = Types::parse("application/x-httpd-php5 p5\ntext/html html\n", &[]);
        assert_eq!(t.kind("x.p5".as_bytes()), TypeKind::Script);
        assert_eq!(t.kind("x.p5.html".as_bytes()), TypeKind::Script);
    }

    #[test]
    fn the_admin_adds_types() {
        let map = "text/html html\napplication/x-thing thing\n";
        assert_eq!(
            Types::parse(map, &[]).kind("a.thing".as_bytes()),
            TypeKind::Other
        );
        let extra = ["Application/X-Thing".to_string()];
        assert_eq!(
            Types::parse(map, &extra).kind("a.thing".as_bytes()),
            TypeKind::Compressible
        );
        let php = ["application/x-httpd-php".to_string()];
        let t = Types::parse("application/x-httpd-php php\n", &php);
        assert_eq!(
            t.kind("a.php".as_bytes()),
            TypeKind::Script,
            "a handler's type stays one"
        );
    }

    #[test]
    fn types() {
        for t in [
            "text/html",
            "TEXT/CSS; charset=utf-8",
            "application/javascript",
            "image/svg+xml",
            "application/ld+json",
            "font/ttf",
        ] {
            assert!(is_compressible_type(t.as_bytes()), "{t}");
        }
        for t in [
            "image/png",
            "application/octet-stream",
            "application/x-httpd-php",
            "application/zip",
            "",
        ] {
            assert!(!is_compressible_type(t.as_bytes()), "{t}");
        }
        assert!(is_handler_type(b"application/x-httpd-php-source"));
        assert!(is_handler_type(b"text/x-php"));
        assert!(!is_handler_type(b"text/html"));
    }

    #[test]
    fn long_extensions_and_the_packed_search() {
        let t = Types::parse("text/x-long longextension\ntext/html html\n", &[]);
        assert_eq!(t.kind("a.LongExtension".as_bytes()), TypeKind::Compressible);
        assert_eq!(t.kind("a.longextensio".as_bytes()), TypeKind::Untyped);
        for e in SCRIPT_EXTENSIONS {
            assert!(is_script_ext(e.as_bytes()));
            assert!(is_script_ext(e.to_ascii_uppercase().as_bytes()));
            let longer = format!("{e}x");
            assert_eq!(
                is_script_ext(longer.as_bytes()),
                SCRIPT_EXTENSIONS.contains(&longer.as_str()),
                "{longer}"
            );
            assert!(!is_script_ext(&e.as_bytes()[1..]) || SCRIPT_EXTENSIONS.contains(&&e[1..]));
        }
        assert!(!is_script_ext(b"php\0"));
        assert!(
            !is_script_name(b"/var/www/index.shtml"),
            "a filter's, not a handler's"
        );
        assert!(is_script_name(b"/var/www/index.php.html"));
        assert!(!is_script_ext(b""));
        assert!(SCRIPT_KEYS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn the_builtin_map_types_the_web() {
        let t = Types::parse(BUILTIN, &[]);
        assert_eq!(t.kind("a.html".as_bytes()), TypeKind::Compressible);
        assert_eq!(t.kind("a.bin".as_bytes()), TypeKind::Other);
        assert_eq!(t.kind("a.inc".as_bytes()), TypeKind::Untyped);
        assert!(!t.is_empty());
    }
}

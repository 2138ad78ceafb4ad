//! The module's directives, in one table whose rows carry their setters:
//! httpd's command table (`module.rs`) dispatches each directive to its
//! row, and the directive table of docs/configuration.md and the
//! `mod_gzip_disk_ng(8)` manual page (written by `gzip-disk-ng-docs`) are
//! made from it too, so they cannot disagree; a test holds
//! docs/configuration.md to it. A new directive is one row.

use crate::config::{self, DirConfig, ServerConfig};
use gdn_httpd::{Args, Context, Directive, Parms, Set, Takes};
use std::fmt::Write;
use std::path::PathBuf;

/// One directive: what httpd is told, what its manual says, and its setter.
pub type DirectiveDoc = Directive<DirConfig, ServerConfig>;

/// Every directive, in the manual's order. httpd's command table
/// dispatches each to its own setter, whose error the dispatch prefixes
/// with the directive's name.
pub static DIRECTIVES: [DirectiveDoc; 17] = [
    Directive {
        name: c"GzipDiskNgEncodings",
        takes: Takes::List,
        context: Context::DirectoryFileInfo,
        help: c"Codings served from siblings, in this fixed order (default: zstd br gzip, smallest first)",
        syntax: "GzipDiskNgEncodings coding [coding] [coding]",
        default: "all three, smallest first",
        main_server: false,
        set: Set::Dir(|d, a, _| {
            d.encodings = Some(config::parse_encodings(a.list()?)?);
            Ok(())
        }),
    },
    Directive {
        name: c"GzipDiskNgDecompress",
        takes: Takes::Flag,
        context: Context::DirectoryFileInfo,
        help: c"On|Off: decompress for clients that accept no sibling (default On)",
        syntax: "GzipDiskNgDecompress On|Off",
        default: "`On`",
        main_server: false,
        set: Set::Dir(|d, a, _| {
            d.decompress = Some(a.flag()?);
            Ok(())
        }),
    },
    Directive {
        name: c"GzipDiskNgStatusHeader",
        takes: Takes::One,
        context: Context::DirectoryFileInfo,
        help: c"On|Off|<header-name>: the marker response header (default On)",
        syntax: "GzipDiskNgStatusHeader On|Off|header-name",
        default: "`On`",
        main_server: false,
        set: Set::Dir(|d, a, _| {
            d.status_header = Some(config::parse_status_header(a.one()?)?);
            Ok(())
        }),
    },
    Directive {
        name: c"GzipDiskNgFilterLevels",
        takes: Takes::List,
        context: Context::DirectoryFileInfo,
        help: c"zstd=<1-19> dcz=<1-19> br=<0-11> dcb=<0-11> gzip=<1-9>: the GZIP_DISK_NG output filter's levels (default zstd=6 dcz=10 br=5 dcb=5 gzip=6)",
        syntax: "GzipDiskNgFilterLevels coding=level [coding=level] ...",
        default: "`zstd=6 dcz=10 br=5 dcb=5 gzip=6`",
        main_server: false,
        set: Set::Dir(|d, a, _| {
            d.filter_levels = Some(config::parse_filter_levels(a.list()?)?);
            Ok(())
        }),
    },
    Directive {
        name: c"GzipDiskNgFilterMinSize",
        takes: Takes::One,
        context: Context::DirectoryFileInfo,
        help: c"<bytes>: the smallest body the GZIP_DISK_NG output filter codes (default 256)",
        syntax: "GzipDiskNgFilterMinSize bytes",
        default: "`256`",
        main_server: false,
        set: Set::Dir(|d, a, _| {
            d.filter_min_size = Some(config::parse_filter_min_size(a.one()?)?);
            Ok(())
        }),
    },
    Directive {
        name: c"GzipDiskNgFilterLoadLimit",
        takes: Takes::One,
        context: Context::DirectoryFileInfo,
        help: c"Off|<load>: from this one-minute load average the GZIP_DISK_NG filter codes at cheaper levels (default Off)",
        syntax: "GzipDiskNgFilterLoadLimit Off|load",
        default: "`Off`",
        main_server: false,
        set: Set::Dir(|d, a, _| {
            d.filter_load_limit = Some(config::parse_filter_load_limit(a.one()?)?);
            Ok(())
        }),
    },
    Directive {
        name: c"GzipDiskNgJitter",
        takes: Takes::List,
        context: Context::DirectoryFileInfo,
        help: c"Off | <max-bytes> [<buffer-bytes>] [paranoid]: BREACH padding of precompressed responses",
        syntax: "GzipDiskNgJitter Off|max [buffer] [paranoid]",
        default: "`Off`",
        main_server: false,
        set: Set::Dir(|d, a, _| {
            d.jitter = Some(config::parse_jitter(a.list()?)?);
            Ok(())
        }),
    },
    Directive {
        name: c"GzipDiskNgJitterKey",
        takes: Takes::One,
        context: Context::Server,
        help: c"<file>: the secret keying jitter lengths (server config, virtual host)",
        syntax: "GzipDiskNgJitterKey file",
        default: "none: a random key per start",
        main_server: false,
        // Read now, at configuration time, so a bad file fails
        // `apache2 -t` rather than a request.
        set: Set::Server(|s, a, p| {
            s.jitter_key = Some(config::load_jitter_key(&server_relative(p, a)?)?);
            Ok(())
        }),
    },
    Directive {
        name: c"GzipDiskNgUseAsDictionary",
        takes: Takes::List,
        context: Context::DirectoryFileInfo,
        help: c"Off | <match pattern>|self [<id>]: offer responses as compression dictionaries",
        syntax: "GzipDiskNgUseAsDictionary Off|pattern|self [id]",
        default: "`Off`",
        main_server: false,
        set: Set::Dir(|d, a, _| {
            d.use_as_dictionary = Some(config::parse_use_as_dictionary(a.list()?)?);
            Ok(())
        }),
    },
    Directive {
        name: c"GzipDiskNgOnDemand",
        takes: Takes::Flag,
        context: Context::DirectoryFileInfo,
        help: c"On|Off: compress files without siblings into the cache, in the background (default Off)",
        syntax: "GzipDiskNgOnDemand On|Off",
        default: "`Off`",
        main_server: false,
        set: Set::Dir(|d, a, _| {
            d.on_demand = Some(a.flag()?);
            Ok(())
        }),
    },
    Directive {
        name: c"GzipDiskNgDeltaVersions",
        takes: Takes::One,
        context: Context::DirectoryFileInfo,
        help: c"<n>: earlier versions kept per file or group for deltas on demand, 0 to 16 (default 3)",
        syntax: "GzipDiskNgDeltaVersions n",
        default: "`3`",
        main_server: false,
        set: Set::Dir(|d, a, _| {
            d.delta_versions = Some(config::parse_delta_versions(a.one()?)?);
            Ok(())
        }),
    },
    Directive {
        name: c"GzipDiskNgSiteDictionary",
        takes: Takes::One,
        context: Context::Server,
        help: c"<url-path>: where a dictionary trained on the host's pages is served, for deltas on demand",
        syntax: "GzipDiskNgSiteDictionary url-path",
        default: "none",
        main_server: false,
        set: Set::Server(|s, a, _| {
            s.site_dictionary = Some(config::parse_site_dictionary(a.one()?)?);
            Ok(())
        }),
    },
    Directive {
        name: c"GzipDiskNgSiteDictionaryPeriod",
        takes: Takes::One,
        context: Context::Server,
        help: c"<seconds>: how often the pages the site dictionary learns are judged and chosen again (default 300)",
        syntax: "GzipDiskNgSiteDictionaryPeriod seconds",
        default: "`300`",
        main_server: false,
        set: Set::Server(|s, a, _| {
            s.site_dictionary_period = Some(config::parse_site_dictionary_period(a.one()?)?);
            Ok(())
        }),
    },
    Directive {
        name: c"GzipDiskNgDeltaStore",
        takes: Takes::List,
        context: Context::Server,
        help: c"<tree> <store>: a published tree and its dictionary store (gzip-disk-ng compress --store), read to verify the tree's published deltas",
        syntax: "GzipDiskNgDeltaStore tree store",
        default: "none",
        main_server: false,
        set: Set::Server(|s, a, p| {
            let paths = a
                .list()?
                .iter()
                .map(|w| p.server_relative(w).ok_or_else(|| format!("invalid path {w}")))
                .collect::<Result<Vec<_>, _>>()?;
            let store = config::parse_delta_store(&paths)?;
            s.delta_stores.get_or_insert_with(Vec::new).push(store);
            Ok(())
        }),
    },
    Directive {
        name: c"GzipDiskNgCacheRoot",
        takes: Takes::One,
        context: Context::Server,
        help: c"<directory>: where on-demand copies live (outside every DocumentRoot)",
        syntax: "GzipDiskNgCacheRoot directory",
        default: "none (no on-demand cache)",
        main_server: true,
        set: Set::Server(|s, a, p| {
            s.cache_root = Some(config::check_cache_root(&server_relative(p, a)?)?);
            Ok(())
        }),
    },
    Directive {
        name: c"GzipDiskNgCacheMaxSize",
        takes: Takes::One,
        context: Context::Server,
        help: c"<size>[K|M|G]: total size of on-demand copies kept (default 1G)",
        syntax: "GzipDiskNgCacheMaxSize size[K|M|G]",
        default: "`1G`",
        main_server: true,
        set: Set::Server(|s, a, _| {
            s.cache_max_size = Some(config::parse_size(a.one()?)?);
            Ok(())
        }),
    },
    Directive {
        name: c"GzipDiskNgCompressorWorkers",
        takes: Takes::One,
        context: Context::Server,
        help: c"<n>: compression threads of the on-demand compressor (default 1)",
        syntax: "GzipDiskNgCompressorWorkers n",
        default: "`1`",
        main_server: true,
        set: Set::Server(|s, a, _| {
            s.compressor_workers = Some(config::parse_workers(a.one()?)?);
            Ok(())
        }),
    },
];

/// A file argument, relative to ServerRoot as httpd resolves them.
fn server_relative(p: &dyn Parms, a: Args<'_>) -> Result<PathBuf, String> {
    let path = a.one()?;
    p.server_relative(path)
        .ok_or_else(|| format!("invalid path {path}"))
}

/// The directive table of docs/configuration.md, header included.
pub fn markdown_table() -> String {
    let mut t = String::from(
        "| directive | syntax | default | context | override |\n|---|---|---|---|---|\n",
    );
    for d in &DIRECTIVES {
        let _ = writeln!(
            t,
            "| [{name}](#{anchor}) | `{syntax}` | {default} | {context} | {over} |",
            name = d.name(),
            anchor = d.name().to_lowercase(),
            syntax = d.syntax.replace('|', "\\|"),
            default = d.default.replace('|', "\\|"),
            context = d.context(),
            over = d.allow_override().unwrap_or("—"),
        );
    }
    t
}

/// `s` as roff text (backslashes and hyphens escaped).
fn roff(s: &str) -> String {
    s.replace('\\', "\\e").replace('-', "\\-")
}

/// The `mod_gzip_disk_ng(8)` manual page: how the module is enabled, then
/// every directive with its syntax, default, context, override and help.
pub fn man_page(version: &str) -> String {
    let mut p = format!(
        ".TH MOD_GZIP_DISK_NG 8 \"\" \"mod_gzip_disk_ng {v}\" \"mod_gzip_disk_ng manual\"\n\
         .SH NAME\nmod_gzip_disk_ng \\- Apache httpd module serving precompressed zstd, brotli and gzip siblings\n\
         .SH SYNOPSIS\n.nf\n\\fBa2enmod gzip_disk_ng\\fR\n\
         \\fBLoadModule gzip_disk_ng_module /usr/lib/apache2/modules/mod_gzip_disk_ng.so\\fR\n.fi\n\
         .SH DESCRIPTION\n\
         Serves the precompressed .zst, .br and .gz siblings of files (made by \\fBgzip\\-disk\\-ng\\fR(1)) \
         to the clients that accept them, and decompresses for those that accept none. \
         It answers requests whose handler is \\fBgzip\\-disk\\-ng\\fR (\\fBSetHandler gzip\\-disk\\-ng\\fR). \
         Its directives follow; each may be given where its context says, \
         and in .htaccess where \\fBAllowOverride\\fR allows its override.\n\
         .SH DIRECTIVES\n",
        v = roff(version)
    );
    for d in &DIRECTIVES {
        let default = d.default.replace('`', "");
        let _ = write!(
            p,
            ".SS {name}\n.TP 10\nSyntax:\n\\fB{syntax}\\fR\n.TP\nDefault:\n{default}\n\
             .TP\nContext:\n{context}\n.TP\nOverride:\n{over}\n.PP\n{help}.\n",
            name = d.name(),
            syntax = roff(d.syntax),
            default = roff(&default),
            context = d.context(),
            over = d.allow_override().unwrap_or("none"),
            help = roff(&d.description()),
        );
    }
    p.push_str(
        ".SH FILES\n.TP\n/etc/apache2/mods\\-available/gzip_disk_ng.conf\n\
         The module's configuration, enabled with it.\n\
         .TP\n/usr/share/doc/libapache2\\-mod\\-gzip\\-disk\\-ng/docs/configuration.md\n\
         Each directive at length, how scopes combine and what the module logs.\n\
         .SH \"SEE ALSO\"\n\\fBgzip\\-disk\\-ng\\fR(1), \\fBapache2\\fR(8), \\fBapache2ctl\\fR(8), \\fBa2enmod\\fR(8)\n",
    );
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/configuration.md carries the table this module makes, and a
    /// section for every directive it names.
    #[test]
    fn configuration_md_has_the_table() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/configuration.md");
        let doc = std::fs::read_to_string(path).unwrap();
        assert!(
            doc.contains(&markdown_table()),
            "docs/configuration.md's directive table differs from crates/module/src/directives.rs; \
             replace it with the output of `target/release/gzip-disk-ng-docs --directive-table`:\n{}",
            markdown_table()
        );
        let sections: Vec<&str> = doc
            .lines()
            .filter_map(|l| l.strip_prefix("### GzipDiskNg"))
            .collect();
        let names: Vec<&str> = DIRECTIVES
            .iter()
            .map(|d| &d.name()["GzipDiskNg".len()..])
            .collect();
        assert_eq!(sections, names);
    }

    /// Every directive's description in the manual page is whole: its
    /// parentheses close, and none is cut at a "(default: …)".
    #[test]
    fn descriptions_are_whole() {
        for d in &DIRECTIVES {
            let text = d.description();
            assert_eq!(
                text.matches('(').count(),
                text.matches(')').count(),
                "{}: {text}",
                d.name()
            );
            assert!(d.help().ends_with(&text[1..]), "{}: {text}", d.name());
        }
        let page = man_page("0");
        assert!(page.contains("Codings served from siblings, in this fixed order"));
    }

    /// Resolves file arguments against a directory, as httpd does
    /// against ServerRoot.
    struct Root(PathBuf);

    impl Parms for Root {
        fn server_relative(&self, path: &str) -> Option<PathBuf> {
            Some(self.0.join(path))
        }
    }

    fn row(name: &str) -> &'static DirectiveDoc {
        DIRECTIVES.iter().find(|d| d.name() == name).unwrap()
    }

    /// Each row's setter sets its own setting, and only where its scope
    /// says: a server-only directive sets the server's configuration.
    #[test]
    fn each_row_sets_its_own_setting() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("k"), b"key").unwrap();
        let root = Root(dir.path().to_path_buf());
        let mut d = DirConfig::default();
        let mut s = ServerConfig::default();
        let mut apply = |name: &str, args: Args<'_>| match row(name).set {
            Set::Dir(set) => set(&mut d, args, &root),
            Set::Server(set) => set(&mut s, args, &root),
        };
        apply("GzipDiskNgEncodings", Args::List(&["br"])).unwrap();
        apply("GzipDiskNgDecompress", Args::Flag(false)).unwrap();
        apply("GzipDiskNgCacheMaxSize", Args::One("2M")).unwrap();
        apply("GzipDiskNgJitterKey", Args::One("k")).unwrap();
        let e = apply("GzipDiskNgJitterKey", Args::One("missing")).unwrap_err();
        assert!(e.starts_with("cannot use") && e.contains("missing"), "{e}");
        assert!(apply("GzipDiskNgCompressorWorkers", Args::One("0")).is_err());
        apply("GzipDiskNgDeltaStore", Args::List(&["tree", "store"])).unwrap();
        apply("GzipDiskNgDeltaStore", Args::List(&["/t2", "/s2"])).unwrap();
        let e = apply("GzipDiskNgDeltaStore", Args::List(&["tree", "tree/store"])).unwrap_err();
        assert!(e.contains("inside the tree"), "{e}");
        assert!(apply("GzipDiskNgDeltaStore", Args::List(&["tree"])).is_err());
        let stores = s.delta_stores.as_deref().unwrap_or_default();
        assert_eq!(stores.len(), 2, "{stores:?}");
        assert_eq!(stores[0].tree(), dir.path().join("tree"));
        assert_eq!(stores[1].dir(), std::path::Path::new("/s2"));
        assert_eq!(d.encodings(), &[gdn_core::coding::Coding::Br]);
        assert!(!d.decompress());
        assert_eq!(s.cache_max_size(), 2 << 20);
        assert!(s.jitter_key.is_some());
        for r in &DIRECTIVES {
            let server = matches!(r.set, Set::Server(_));
            assert_eq!(server, matches!(r.context, Context::Server), "{}", r.name());
        }
    }

    #[test]
    fn the_page_names_every_directive() {
        let page = man_page("1.2.3");
        for d in &DIRECTIVES {
            assert!(
                page.contains(&format!(".SS {}\n", d.name())),
                "{}",
                d.name()
            );
        }
        assert!(!page.contains('`'));
    }
}

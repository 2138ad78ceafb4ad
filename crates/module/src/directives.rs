//! The module's directives, in one table: httpd's command table
//! (`module.rs`), the directive table of docs/configuration.md and the
//! `mod_gzip_disk_ng(8)` manual page (written by `gzip-disk-ng-docs`) are
//! all made from it, so they cannot disagree; a test holds
//! docs/configuration.md to it.

use crate::httpd::{Scope, Takes};
use std::ffi::CStr;
use std::fmt::Write;

/// One directive: what httpd is told, and what its manual says.
pub struct DirectiveDoc {
    pub name: &'static CStr,
    pub takes: Takes,
    pub scope: Scope,
    /// What `apache2 -t` shows after a wrong use: its arguments and a word.
    pub help: &'static CStr,
    /// Its syntax, in the Apache manual's style (`|` between choices).
    pub syntax: &'static str,
    /// Its default, in Markdown (code in backquotes).
    pub default: &'static str,
    /// Only the main server's value counts (one cache and one compressor
    /// serve the whole instance): its context is "server config", though
    /// a virtual host accepts it.
    pub main_server: bool,
}

/// Every directive, in the manual's order.
pub const DIRECTIVES: [DirectiveDoc; 10] = [
    DirectiveDoc {
        name: c"GzipDiskNgEncodings",
        takes: Takes::List,
        scope: Scope::DirectoryFileInfo,
        help: c"Codings served from siblings, in server preference order: zstd br gzip",
        syntax: "GzipDiskNgEncodings coding [coding] [coding]",
        default: "`zstd br gzip`",
        main_server: false,
    },
    DirectiveDoc {
        name: c"GzipDiskNgDecompress",
        takes: Takes::Flag,
        scope: Scope::DirectoryFileInfo,
        help: c"On|Off: decompress for clients that accept no sibling (default On)",
        syntax: "GzipDiskNgDecompress On|Off",
        default: "`On`",
        main_server: false,
    },
    DirectiveDoc {
        name: c"GzipDiskNgStatusHeader",
        takes: Takes::One,
        scope: Scope::DirectoryFileInfo,
        help: c"On|Off|<header-name>: the marker response header (default On)",
        syntax: "GzipDiskNgStatusHeader On|Off|header-name",
        default: "`On`",
        main_server: false,
    },
    DirectiveDoc {
        name: c"GzipDiskNgJitter",
        takes: Takes::List,
        scope: Scope::DirectoryFileInfo,
        help: c"Off | <max-bytes> [<buffer-bytes>] [paranoid]: BREACH padding of precompressed responses",
        syntax: "GzipDiskNgJitter Off|max [buffer] [paranoid]",
        default: "`Off`",
        main_server: false,
    },
    DirectiveDoc {
        name: c"GzipDiskNgJitterKey",
        takes: Takes::One,
        scope: Scope::Server,
        help: c"<file>: the secret keying jitter lengths (server config, virtual host)",
        syntax: "GzipDiskNgJitterKey file",
        default: "none: a random key per start",
        main_server: false,
    },
    DirectiveDoc {
        name: c"GzipDiskNgUseAsDictionary",
        takes: Takes::List,
        scope: Scope::DirectoryFileInfo,
        help: c"Off | <match pattern>|self [<id>]: offer responses as compression dictionaries",
        syntax: "GzipDiskNgUseAsDictionary Off|pattern|self [id]",
        default: "`Off`",
        main_server: false,
    },
    DirectiveDoc {
        name: c"GzipDiskNgOnDemand",
        takes: Takes::Flag,
        scope: Scope::DirectoryFileInfo,
        help: c"On|Off: compress files without siblings into the cache, in the background (default Off)",
        syntax: "GzipDiskNgOnDemand On|Off",
        default: "`Off`",
        main_server: false,
    },
    DirectiveDoc {
        name: c"GzipDiskNgCacheRoot",
        takes: Takes::One,
        scope: Scope::Server,
        help: c"<directory>: where on-demand copies live (outside every DocumentRoot)",
        syntax: "GzipDiskNgCacheRoot directory",
        default: "none (no on-demand cache)",
        main_server: true,
    },
    DirectiveDoc {
        name: c"GzipDiskNgCacheMaxSize",
        takes: Takes::One,
        scope: Scope::Server,
        help: c"<size>[K|M|G]: total size of on-demand copies kept (default 1G)",
        syntax: "GzipDiskNgCacheMaxSize size[K|M|G]",
        default: "`1G`",
        main_server: true,
    },
    DirectiveDoc {
        name: c"GzipDiskNgCompressorWorkers",
        takes: Takes::One,
        scope: Scope::Server,
        help: c"<n>: compression threads of the on-demand compressor (default 1)",
        syntax: "GzipDiskNgCompressorWorkers n",
        default: "`1`",
        main_server: true,
    },
];

impl DirectiveDoc {
    /// The directive's name.
    pub fn name(&self) -> &'static str {
        self.name.to_str().unwrap_or("")
    }

    /// Where it may appear, as the Apache manual says it.
    pub fn context(&self) -> &'static str {
        match self.scope {
            Scope::Server if self.main_server => "server config",
            Scope::Server => "server config, virtual host",
            Scope::DirectoryFileInfo => "server config, virtual host, directory, .htaccess",
        }
    }

    /// The `AllowOverride` class it needs in .htaccess, if it may be there.
    pub fn allow_override(&self) -> Option<&'static str> {
        match self.scope {
            Scope::Server => None,
            Scope::DirectoryFileInfo => Some("FileInfo"),
        }
    }

    /// `help` as text.
    pub fn help(&self) -> &'static str {
        self.help.to_str().unwrap_or("")
    }

    /// What it is for: `help` without the arguments it starts with, which
    /// the page shows as the syntax; capitalised.
    pub fn description(&self) -> String {
        let h = self.help();
        let words = h.split_once(": ").map_or(h, |(_, w)| w);
        let mut c = words.chars();
        c.next()
            .map(|f| f.to_uppercase().chain(c).collect())
            .unwrap_or_default()
    }
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

//! The output filters that leave a response's content as the file holds
//! it: compression (which the module accounts for: mod_deflate's,
//! mod_brotli's, and the module's own coder, which its handler gives way
//! to), caching, and header edits, each with the module that registers
//! it. Any other filter before
//! the protocol's may change the bytes. The sibling checks know a filter
//! by its record and by its function lying in that module's object, never
//! by its name alone: mod_ext_filter's `ExtFilterDefine` may take a name of
//! this list and put its own function in the record.

use gdn_httpd::{FilterKind, PlainFilter};

const fn known(name: &'static str, module: &'static str, kind: FilterKind) -> PlainFilter {
    PlainFilter { name, module, kind }
}

const fn plain(name: &'static str, module: &'static str) -> PlainFilter {
    known(name, module, FilterKind::Plain)
}

const fn compressor(name: &'static str, module: &'static str) -> PlainFilter {
    known(name, module, FilterKind::Compressor)
}

pub const PLAIN_FILTERS: [PlainFilter; 15] = [
    compressor("deflate", "mod_deflate.c"),
    compressor("brotli_compress", "mod_brotli.c"),
    // GZIP_DISK_NG (httpd keeps filter names in lower case).
    known("gzip_disk_ng", "mod_gzip_disk_ng.c", FilterKind::Coder),
    plain("subreq_core", "core.c"),
    plain("cache", "mod_cache.c"),
    plain("cache_save", "mod_cache.c"),
    plain("cache_save_subreq", "mod_cache.c"),
    plain("cache_out", "mod_cache.c"),
    plain("cache_out_subreq", "mod_cache.c"),
    plain("cache_remove_url", "mod_cache.c"),
    plain("cache_invalidate", "mod_cache.c"),
    plain("fixup_headers_out", "mod_headers.c"),
    plain("fixup_headers_err", "mod_headers.c"),
    plain("mod_expires", "mod_expires.c"),
    plain("logio_ttfb_out", "mod_logio.c"),
];

#[cfg(test)]
mod tests {
    use super::PLAIN_FILTERS;
    use crate::filter::NAME;
    use crate::module::GzipDiskNg;
    use gdn_httpd::{FilterKind, Module};

    /// The module's own coder is known by the name and the module it is
    /// registered with, as a coder its handler gives way to.
    #[test]
    fn the_modules_coder_is_known_as_registered() {
        let name = NAME.to_string_lossy().to_ascii_lowercase();
        let module = GzipDiskNg::NAME.to_string_lossy();
        assert!(PLAIN_FILTERS
            .iter()
            .any(|f| f.name == name && f.module == module && f.kind == FilterKind::Coder));
    }
}

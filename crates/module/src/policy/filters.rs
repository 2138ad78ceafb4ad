//! The output filters that leave a response's content as the file holds
//! it: compression (which the module accounts for), caching, and header
//! edits, each with the module that registers it. Any other filter before
//! the protocol's may change the bytes. The sibling checks know a filter
//! by its record and by its function lying in that module's object, never
//! by its name alone: mod_ext_filter's `ExtFilterDefine` may take a name of
//! this list and put its own function in the record.

use gdn_httpd::PlainFilter;

const fn plain(name: &'static str, module: &'static str) -> PlainFilter {
    PlainFilter {
        name,
        module,
        compressor: false,
    }
}

const fn compressor(name: &'static str, module: &'static str) -> PlainFilter {
    PlainFilter {
        name,
        module,
        compressor: true,
    }
}

pub const PLAIN_FILTERS: [PlainFilter; 14] = [
    compressor("deflate", "mod_deflate.c"),
    compressor("brotli_compress", "mod_brotli.c"),
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

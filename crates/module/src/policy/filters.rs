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

/// What a mod_filter harness is, its providers' kinds folded one after
/// another from `HARNESS_START`: mod_filter runs the first provider whose
/// condition holds, so the harness is unknown where one of them is, a
/// coder (which the handler gives way to) where one of them is, and a
/// compressor (which a coded response may take out of the chain) only
/// where every one is: a harness that may run a filter passing the bytes
/// is kept, as that filter would be.
pub fn harness(so_far: Option<FilterKind>, next: Option<FilterKind>) -> Option<FilterKind> {
    use FilterKind::{Coder, Compressor, Plain};
    match (so_far?, next?) {
        (Coder, _) | (_, Coder) => Some(Coder),
        (Compressor, Compressor) => Some(Compressor),
        (Plain | Compressor, Plain | Compressor) => Some(Plain),
    }
}

/// The kind a harness's fold starts from: no provider yet changes
/// nothing (`harness(HARNESS_START, k)` is `k`).
pub const HARNESS_START: Option<FilterKind> = Some(FilterKind::Compressor);

#[cfg(test)]
mod tests {
    use super::{harness, HARNESS_START, PLAIN_FILTERS};
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

    fn fold(providers: &[Option<FilterKind>]) -> Option<FilterKind> {
        providers.iter().fold(HARNESS_START, |k, &p| harness(k, p))
    }

    /// A harness is what its providers together may do: one unknown
    /// provider makes it unknown, a coder a coder, and it is a
    /// compressor only where every provider is one.
    #[test]
    fn a_harness_is_what_its_providers_may_do() {
        use FilterKind::{Coder, Compressor, Plain};
        for k in [None, Some(Plain), Some(Compressor), Some(Coder)] {
            assert_eq!(fold(&[k]), k, "one provider: the harness is it");
        }
        assert_eq!(
            fold(&[Some(Compressor), Some(Compressor)]),
            Some(Compressor)
        );
        assert_eq!(fold(&[Some(Compressor), Some(Plain)]), Some(Plain));
        assert_eq!(fold(&[Some(Plain), Some(Compressor)]), Some(Plain));
        assert_eq!(fold(&[Some(Compressor), Some(Coder)]), Some(Coder));
        assert_eq!(
            fold(&[Some(Plain), Some(Coder), Some(Compressor)]),
            Some(Coder)
        );
        assert_eq!(fold(&[Some(Coder), None]), None);
        assert_eq!(fold(&[None, Some(Compressor)]), None);
        assert_eq!(fold(&[Some(Plain), Some(Plain)]), Some(Plain));
    }
}

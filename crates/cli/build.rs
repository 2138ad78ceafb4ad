//! Codec versions for `gzip-disk-ng --version`, from Cargo.lock.
use std::path::Path;

/// The version of `krate` in Cargo.lock's text `lock` (the first, should
/// it be there twice).
fn locked_version<'a>(lock: &'a str, krate: &str) -> Option<&'a str> {
    let name = format!("name = \"{krate}\"\n");
    let rest = &lock[lock.find(&name)? + name.len()..];
    rest.lines()
        .next()?
        .strip_prefix("version = \"")?
        .strip_suffix('"')
}

/// Codec versions for `gzip-disk-ng --version` (publish::cli::long_version)
/// that the crates have no call for, from Cargo.lock: brotli's and
/// zlib-rs's crate versions, and libdeflate's, the major.minor of
/// libdeflate-sys, which bundles that libdeflate release. "unknown" where
/// there is no Cargo.lock (built as a dependency).
fn codec_versions() {
    // The workspace's Cargo.lock, two folders up.
    let lock_path = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("../../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock_path.display());
    let lock = std::fs::read_to_string(&lock_path).unwrap_or_default();
    for (krate, var, parts) in [
        ("brotli", "GDN_BROTLI_VERSION", 3),
        ("zlib-rs", "GDN_ZLIB_RS_VERSION", 3),
        ("libdeflate-sys", "GDN_LIBDEFLATE_VERSION", 2),
    ] {
        let version = locked_version(&lock, krate).map_or("unknown".to_owned(), |v| {
            v.split('.').take(parts).collect::<Vec<_>>().join(".")
        });
        println!("cargo:rustc-env={var}={version}");
    }
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    codec_versions();
}

//! The command line of `gzip-disk-ng`, the publish tool.
//!
//! It lives in the library, not in the binary, so that one definition
//! serves both the tool (`src/bin/gzip-disk-ng.rs`, which runs it) and
//! `src/bin/gzip-disk-ng-docs.rs`, which writes its manual pages and bash
//! completion from it: what the manual says is what the tool parses.

use clap::{Args, CommandFactory, Parser, Subcommand};
use gdn_publish::options::DEFAULT_MIN_SIZE;
use std::path::PathBuf;

/// The tool's name, as installed.
pub const NAME: &str = "gzip-disk-ng";

#[derive(Parser)]
#[command(
    name = NAME,
    version,
    about = "Make and check precompressed .zst, .br and .gz siblings for mod_gzip_disk_ng",
    long_about = "Makes and checks the precompressed siblings that mod_gzip_disk_ng serves: \
page.html.zst, page.html.br and page.html.gz beside page.html, each written atomically \
with its original's modification time, so that a later run, and the module, can tell \
whether it was made from the current original. Optionally also makes deltas \
(RFC 9842 dictionary transport) against earlier versions or a site dictionary.",
    after_help = "Run gzip-disk-ng COMMAND --help for a command's options."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// The commands.
#[derive(Subcommand)]
pub enum Cmd {
    /// Write .zst, .br and .gz siblings next to files (atomically, in parallel).
    #[command(long_about = "Writes .zst, .br and .gz siblings next to every file \
under the given paths that is worth compressing, in parallel over files and codings. \
Each sibling is written to a temporary name, synced and renamed, with the original's \
modification time, permissions and (as root) owner. Siblings that are up to date are \
left alone; a variant that saves less than --min-saving is not kept, and an older \
sibling of it is removed. Only files whose MIME type (from /etc/mime.types, as Apache's TypesConfig) \
compresses are taken: text, JavaScript, JSON, XML, SVG, uncompressed fonts, and the \
types given with --type. Server-side scripts (.php, .phtml, .cgi, .shtml and the like, \
in any position of the name), files of no type (.inc, .bak, editor backups) and \
already-compressed types (images, fonts, archives, media) are passed over and \
counted by reason, as are existing siblings.")]
    Compress(CompressArgs),
    /// Check that every sibling decodes to its original, and every delta
    /// against its dictionary.
    #[command(long_about = "Checks every sibling and delta under the given paths: \
it must decode, decode to its original byte for byte, not be stale, and be one \
browsers accept (no zstd window over 8 MiB, no large-window brotli). Deltas must \
decode against their dictionary. Problems are reported with their path and make \
the exit status 1.")]
    Verify(VerifyArgs),
    /// Remove what compress wrote: siblings and deltas that decode to their
    /// original, and the dictionary store.
    #[command(long_about = "Removes what compress wrote under the given paths, and \
nothing else: each .zst, .br and .gz sibling and each dcz and dcb delta whose original \
exists and which decodes to it byte for byte (or to an earlier version of it that the \
dictionary store keeps), the temporaries of interrupted runs, then the tree's \
dictionary store. A .gz with no original, one that decodes to something else, a \
symlink, stay; so does a dictionary written by train. Run it with --dry-run first: \
it lists what would go.")]
    Clean(CleanArgs),
    /// Build a site dictionary (raw content, for dcz/dcb deltas) from pages.
    #[command(long_about = "Builds a site dictionary from the pages under DIR: raw \
content shared by many pages, for compress --dictionary to make dcz (zstd) and \
dcb (brotli) deltas against. Publish the dictionary and announce it with a \
Use-As-Dictionary header (GzipDiskNgUseAsDictionary).")]
    Train(TrainArgs),
}

/// Options every command that walks trees takes.
#[derive(Args)]
pub struct Common {
    /// Worker threads (default: all cores).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Follow symlinks below the given paths.
    #[arg(long)]
    pub follow_symlinks: bool,
    /// Print only problems and the summary.
    #[arg(short, long)]
    pub quiet: bool,
    /// One line per file even on a terminal (no progress bar).
    #[arg(long)]
    pub plain: bool,
}

/// `compress`'s arguments.
#[derive(Args)]
pub struct CompressArgs {
    /// Files and directories to compress.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Make gzip siblings (naming any coding makes only those named).
    #[arg(long)]
    pub gzip: bool,
    /// Make brotli siblings.
    #[arg(long)]
    pub brotli: bool,
    /// Make zstd siblings.
    #[arg(long)]
    pub zstd: bool,
    /// Do not make gzip siblings.
    #[arg(long)]
    pub no_gzip: bool,
    /// Do not make brotli siblings.
    #[arg(long)]
    pub no_brotli: bool,
    /// Do not make zstd siblings.
    #[arg(long)]
    pub no_zstd: bool,
    /// gzip level: 1-12 (libdeflate; 10-12 beat gzip -9, 12 is smallest);
    /// files over 32 MiB are streamed with zlib at min(level, 9).
    #[arg(long, value_name = "LEVEL", default_value_t = 10,
        value_parser = clap::value_parser!(u32).range(1..=12))]
    pub gzip_level: u32,
    /// Brotli quality.
    #[arg(long, value_name = "QUALITY", default_value_t = 11,
        value_parser = clap::value_parser!(u32).range(0..=11))]
    pub brotli_quality: u32,
    /// Largest brotli window, in bits (smaller for small files); 23 (8 MiB)
    /// is what the module decodes for clients without brotli.
    #[arg(long, value_name = "BITS", default_value_t = 23,
        value_parser = clap::value_parser!(u32).range(10..=23))]
    pub brotli_window: u32,
    /// Deprecated, does nothing: brotli streams no longer carry a jitter
    /// trailer (they end in the byte-aligned empty last meta-block, which
    /// the module pads before). Accepted so existing scripts keep working.
    #[arg(long, hide = true)]
    pub no_jitter_trailer: bool,
    /// zstd level.
    #[arg(long, value_name = "LEVEL", default_value_t = 19,
        value_parser = clap::value_parser!(i32).range(1..=22))]
    pub zstd_level: i32,
    /// Largest zstd window log; 23 (8 MiB) is what browsers accept.
    #[arg(long, value_name = "LOG", default_value_t = 23,
        value_parser = clap::value_parser!(u32).range(10..=23))]
    pub zstd_window_log: u32,
    /// Files smaller than this many bytes are left alone.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MIN_SIZE)]
    pub min_size: u64,
    /// Keep a variant only if it saves at least this percentage.
    #[arg(long, value_name = "PERCENT", default_value_t = 5.0)]
    pub min_saving: f64,
    /// Only files matching this glob (repeatable; path relative to the
    /// argument, or file name).
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Skip files and directories matching this glob (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Compress files of this MIME type too (repeatable), besides text,
    /// JavaScript, JSON, XML, SVG and uncompressed fonts. A type a
    /// handler claims (application/x-httpd-php) is never compressed.
    #[arg(long = "type", value_name = "TYPE")]
    pub types: Vec<String>,
    /// The MIME map that gives files their type, as Apache's TypesConfig
    /// (default: /etc/mime.types, else the common web types).
    #[arg(long, value_name = "FILE")]
    pub mime_types: Option<PathBuf>,
    /// Redo siblings even when up to date.
    #[arg(short, long)]
    pub force: bool,
    /// Show what would be done without writing anything.
    #[arg(short = 'n', long)]
    pub dry_run: bool,
    /// Delete each original once every sibling decodes back to it byte for byte.
    #[arg(long)]
    pub remove_originals: bool,
    /// Keep the last K versions of each file (in the dictionary store, see
    /// --store) and write a delta (RFC 9842) of the current version
    /// against each.
    #[arg(long, value_name = "K")]
    pub delta_versions: Option<usize>,
    /// Versioned names (assets/app.*.js, repeatable): a member gets
    /// deltas against the K (--delta-versions, else 3) newest older members.
    #[arg(long, value_name = "GLOB")]
    pub delta_group: Vec<String>,
    /// Write a delta of every file against this site dictionary (see train).
    #[arg(long, value_name = "FILE")]
    pub dictionary: Option<PathBuf>,
    /// Write only dcz (zstd) deltas, no dcb (brotli) ones.
    #[arg(long)]
    pub no_dcb: bool,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub common: Common,
}

/// Where the dictionary store lies, for the commands that use it.
#[derive(Args)]
pub struct StoreArg {
    /// The dictionary store (earlier versions kept for deltas) of the one
    /// tree given; it must lie outside the tree. Default: one store per
    /// tree under $GZIP_DISK_NG_STATE, else /var/lib/gzip-disk-ng for
    /// root, else $XDG_STATE_HOME/gzip-disk-ng or
    /// ~/.local/state/gzip-disk-ng. A store an older release kept in
    /// TREE/.gzip-disk-ng is moved there.
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
}

/// `verify`'s arguments.
#[derive(Args)]
pub struct VerifyArgs {
    /// Files and directories to check.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub dicts: DeltaDictionaries,
    #[command(flatten)]
    pub common: Common,
}

/// Where the dictionaries of deltas are found, for the commands that
/// decode them.
#[derive(Args)]
pub struct DeltaDictionaries {
    /// A dictionary outside the trees that deltas may use (compress
    /// --dictionary; repeatable).
    #[arg(long, value_name = "FILE")]
    pub dictionary: Vec<PathBuf>,
    #[command(flatten)]
    pub store: StoreArg,
}

/// `clean`'s arguments.
#[derive(Args)]
pub struct CleanArgs {
    /// Trees (or files) to clean.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// List what would be removed without removing anything.
    #[arg(short = 'n', long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub dicts: DeltaDictionaries,
    #[command(flatten)]
    pub common: Common,
}

/// `train`'s arguments.
#[derive(Args)]
pub struct TrainArgs {
    /// The site to learn from.
    pub dir: PathBuf,
    /// Where to write the dictionary.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Largest dictionary size (bytes, or with K or M).
    #[arg(long, value_name = "SIZE", default_value = "64K", value_parser = parse_size)]
    pub size: usize,
    /// Pages to learn from (repeatable; default *.html and *.htm).
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Files and directories to leave out (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
}

/// `64K`, `1M` or a number of bytes.
fn parse_size(s: &str) -> Result<usize, String> {
    let (num, unit) = match s.char_indices().last() {
        Some((i, 'K' | 'k')) => (&s[..i], 1 << 10),
        Some((i, 'M' | 'm')) => (&s[..i], 1 << 20),
        _ => (s, 1),
    };
    let n: usize = num.parse().map_err(|_| format!("bad size {s:?}"))?;
    n.checked_mul(unit)
        .filter(|&b| b >= 256)
        .ok_or_else(|| format!("size {s:?} must be at least 256 bytes"))
}

/// The tool's version and those of the codec libraries it was built with,
/// as `--version` prints it after the name: `0.1.0 (zstd 1.5.7, brotli
/// 8.0.4, zlib-rs 0.6.8, libdeflate 1.26)`. zstd says its own version; the
/// others have no call for it, so build.rs takes theirs from Cargo.lock
/// (libdeflate's from libdeflate-sys, whose major.minor is the bundled
/// libdeflate's).
pub fn long_version() -> String {
    format!(
        "{} (zstd {}, brotli {}, zlib-rs {}, libdeflate {})",
        env!("CARGO_PKG_VERSION"),
        zstd::zstd_safe::version_string(),
        env!("GDN_BROTLI_VERSION"),
        env!("GDN_ZLIB_RS_VERSION"),
        env!("GDN_LIBDEFLATE_VERSION"),
    )
}

/// The command line, with the codec versions in `--version` (`-V` prints
/// the tool's alone).
pub fn command() -> clap::Command {
    Cli::command().long_version(long_version())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definition_is_consistent() {
        command().debug_assert();
    }

    #[test]
    fn version_names_the_codecs() {
        let v = long_version();
        for codec in ["zstd 1.", "brotli ", "zlib-rs ", "libdeflate 1."] {
            assert!(v.contains(codec), "{v}");
        }
        assert!(!v.contains("unknown"), "{v}");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("300"), Ok(300));
        assert!(parse_size("255").is_err());
        assert!(parse_size("x").is_err());
    }
}

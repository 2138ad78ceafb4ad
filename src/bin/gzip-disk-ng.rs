//! `gzip-disk-ng`: the publish tool that makes and checks siblings.
//!
//! A thin command line over `mod_gzip_disk_ng::publish`; exit status 0 when
//! everything went well, 1 when any file had a problem, 2 on bad usage.

use clap::{Args, Parser, Subcommand};
use mod_gzip_disk_ng::coding::Coding;
use mod_gzip_disk_ng::dictionary::DeltaCoding;
use mod_gzip_disk_ng::publish::{
    self, encode::Levels, CompressOptions, DeltaLevels, DeltaOptions, Report,
};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "gzip-disk-ng",
    version,
    about = "Make and check precompressed .zst/.br/.gz siblings for mod_gzip_disk_ng"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Write .zst, .br and .gz siblings next to files (atomically, in parallel).
    Compress(CompressArgs),
    /// Check that every sibling decodes and matches its original, and
    /// every delta decodes against its dictionary.
    Verify(VerifyArgs),
    /// Build a site dictionary (raw content, for dcz/dcb deltas) from pages.
    Train(TrainArgs),
}

#[derive(Args)]
struct Common {
    /// Worker threads (default: all cores).
    #[arg(short = 'j', long)]
    jobs: Option<usize>,
    /// Follow symlinks below the given paths.
    #[arg(long)]
    follow_symlinks: bool,
    /// Print only problems and the summary.
    #[arg(short, long)]
    quiet: bool,
    /// One line per file even on a terminal (no progress bar).
    #[arg(long)]
    plain: bool,
}

#[derive(Args)]
struct CompressArgs {
    /// Files and directories to compress.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Make gzip siblings (naming any coding makes only those named).
    #[arg(long)]
    gzip: bool,
    /// Make brotli siblings.
    #[arg(long)]
    brotli: bool,
    /// Make zstd siblings.
    #[arg(long)]
    zstd: bool,
    /// Do not make gzip siblings.
    #[arg(long)]
    no_gzip: bool,
    /// Do not make brotli siblings.
    #[arg(long)]
    no_brotli: bool,
    /// Do not make zstd siblings.
    #[arg(long)]
    no_zstd: bool,
    /// gzip level: 1-12 (libdeflate; 10-12 beat `gzip -9`, 12 is smallest),
    /// files over 32 MiB are streamed with zlib at min(level, 9).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=12))]
    gzip_level: u32,
    /// Brotli quality.
    #[arg(long, default_value_t = 11, value_parser = clap::value_parser!(u32).range(0..=11))]
    brotli_quality: u32,
    /// Largest brotli window, in bits (smaller for small files); 23 (8 MiB)
    /// is what the module decodes for clients without brotli.
    #[arg(long, default_value_t = 23, value_parser = clap::value_parser!(u32).range(10..=23))]
    brotli_window: u32,
    /// Deprecated, does nothing: brotli streams no longer carry a jitter
    /// trailer (they end in the byte-aligned empty last meta-block, which
    /// the module pads before). Accepted so existing scripts keep working.
    #[arg(long, hide = true)]
    no_jitter_trailer: bool,
    /// zstd level.
    #[arg(long, default_value_t = 19, value_parser = clap::value_parser!(i32).range(1..=22))]
    zstd_level: i32,
    /// Largest zstd window log; 23 (8 MiB) is what browsers accept.
    #[arg(long, default_value_t = 23, value_parser = clap::value_parser!(u32).range(10..=23))]
    zstd_window_log: u32,
    /// Files smaller than this many bytes are left alone.
    #[arg(long, default_value_t = publish::DEFAULT_MIN_SIZE)]
    min_size: u64,
    /// Keep a variant only if it saves at least this percentage.
    #[arg(long, default_value_t = 5.0)]
    min_saving: f64,
    /// Only files matching this glob (repeatable; path relative to the
    /// argument, or file name).
    #[arg(long)]
    include: Vec<String>,
    /// Skip files and directories matching this glob (repeatable).
    #[arg(long)]
    exclude: Vec<String>,
    /// Redo siblings even when up to date.
    #[arg(short, long)]
    force: bool,
    /// Show what would be done without writing anything.
    #[arg(short = 'n', long)]
    dry_run: bool,
    /// Delete each original once every sibling decodes back to it byte for byte.
    #[arg(long)]
    remove_originals: bool,
    /// Keep the last K versions of each file (in DIR/.gzip-disk-ng) and
    /// write a delta (RFC 9842) of the current version against each.
    #[arg(long, value_name = "K")]
    delta_versions: Option<usize>,
    /// Versioned names (`assets/app.*.js`, repeatable): a member gets
    /// deltas against the K (--delta-versions, else 3) newest older members.
    #[arg(long, value_name = "GLOB")]
    delta_group: Vec<String>,
    /// Write a delta of every file against this site dictionary (see `train`).
    #[arg(long, value_name = "FILE")]
    dictionary: Option<PathBuf>,
    /// Write only dcz (zstd) deltas, no dcb (brotli) ones.
    #[arg(long)]
    no_dcb: bool,
    #[command(flatten)]
    common: Common,
}

#[derive(Args)]
struct VerifyArgs {
    /// Files and directories to check.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// A dictionary outside the checked trees that deltas may use.
    #[arg(long, value_name = "FILE")]
    dictionary: Vec<PathBuf>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args)]
struct TrainArgs {
    /// The site to learn from.
    dir: PathBuf,
    /// Where to write the dictionary.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Largest dictionary size (bytes, or with K or M).
    #[arg(long, default_value = "64K", value_parser = parse_size)]
    size: usize,
    /// Pages to learn from (repeatable; default *.html and *.htm).
    #[arg(long)]
    include: Vec<String>,
    /// Files and directories to leave out (repeatable).
    #[arg(long)]
    exclude: Vec<String>,
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

fn report(c: &Common) -> Report {
    if c.quiet {
        Report::Quiet
    } else if c.plain {
        Report::Plain
    } else {
        Report::Auto
    }
}

fn threads(jobs: Option<usize>) -> Result<(), String> {
    if let Some(n) = jobs {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build_global()
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn codings(a: &CompressArgs) -> Vec<Coding> {
    let named = a.gzip || a.brotli || a.zstd;
    [
        (Coding::Zstd, a.zstd, a.no_zstd),
        (Coding::Br, a.brotli, a.no_brotli),
        (Coding::Gzip, a.gzip, a.no_gzip),
    ]
    .into_iter()
    .filter(|(_, yes, no)| (!named || *yes) && !*no)
    .map(|(c, _, _)| c)
    .collect()
}

fn delta_options(a: &CompressArgs) -> DeltaOptions {
    let mut codings = vec![DeltaCoding::Dcz];
    if !a.no_dcb {
        codings.push(DeltaCoding::Dcb);
    }
    DeltaOptions {
        versions: a.delta_versions.unwrap_or(0),
        groups: a.delta_group.clone(),
        group_depth: a.delta_versions.unwrap_or(3),
        dictionary: a.dictionary.clone(),
        codings,
        levels: DeltaLevels {
            zstd: a.zstd_level,
            brotli_quality: a.brotli_quality,
        },
    }
}

fn compress(a: CompressArgs) -> Result<bool, String> {
    threads(a.common.jobs)?;
    if a.no_jitter_trailer {
        eprintln!("gzip-disk-ng: --no-jitter-trailer is deprecated and does nothing");
    }
    if !(0.0..=100.0).contains(&a.min_saving) {
        return Err("--min-saving must be between 0 and 100".into());
    }
    if a.delta_versions == Some(0) {
        return Err("--delta-versions must be at least 1".into());
    }
    let o = CompressOptions {
        codings: codings(&a),
        levels: Levels {
            gzip: a.gzip_level,
            brotli_quality: a.brotli_quality,
            brotli_lgwin: a.brotli_window,
            zstd: a.zstd_level,
            zstd_window_log: a.zstd_window_log,
        },
        min_size: a.min_size,
        min_saving: a.min_saving,
        include: a.include.clone(),
        exclude: a.exclude.clone(),
        follow_symlinks: a.common.follow_symlinks,
        force: a.force,
        dry_run: a.dry_run,
        remove_originals: a.remove_originals,
        report: report(&a.common),
        deltas: delta_options(&a),
    };
    if o.codings.is_empty() {
        return Err("no coding selected".into());
    }
    let s = publish::compress(&a.paths, &o)?;
    println!("{s}");
    Ok(s.errors == 0)
}

fn run(cli: Cli) -> Result<bool, String> {
    match cli.cmd {
        Cmd::Compress(a) => compress(a),
        Cmd::Verify(a) => {
            threads(a.common.jobs)?;
            let s = publish::verify_with_dictionaries(
                &a.paths,
                a.common.follow_symlinks,
                report(&a.common),
                &a.dictionary,
            );
            println!("{s}");
            Ok(s.clean())
        }
        Cmd::Train(a) => {
            let t = publish::train::train(&a.dir, &a.out, a.size, &a.include, &a.exclude)?;
            println!("{t}");
            Ok(true)
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("gzip-disk-ng: {e}");
            ExitCode::from(2)
        }
    }
}

//! `gzip-disk-ng`: the publish tool that makes and checks siblings.
//!
//! Runs the command line `publish::cli` defines over `publish`; exit status 0 when everything went well, 1
//! when any file had a problem, 2 on bad usage.

use crate::publish::cli::{self, Cli, Cmd, Common, CompressArgs};
use crate::publish::{self, CleanOptions, DeltaLevels};
use clap::FromArgMatches;
use gdn_core::coding::Coding;
use gdn_core::dictionary::DeltaCoding;
use gdn_core::encode::Levels;
use gdn_publish::options::{CompressOptions, DeltaOptions, Report};
use std::process::ExitCode;

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
        types: a.types.clone(),
        mime_types: a.mime_types.clone(),
        exclude: a.exclude.clone(),
        follow_symlinks: a.common.follow_symlinks,
        force: a.force,
        dry_run: a.dry_run,
        remove_originals: a.remove_originals,
        report: report(&a.common),
        deltas: delta_options(&a),
        store: a.store.store.clone(),
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
                &a.dicts.dictionary,
                a.dicts.store.store.as_deref(),
            );
            println!("{s}");
            Ok(s.clean())
        }
        Cmd::Clean(a) => {
            threads(a.common.jobs)?;
            let o = CleanOptions {
                follow_symlinks: a.common.follow_symlinks,
                dry_run: a.dry_run,
                report: report(&a.common),
                dictionaries: a.dicts.dictionary,
                store: a.dicts.store.store,
            };
            let s = publish::clean(&a.paths, &o)?;
            println!("{s}");
            Ok(s.errors == 0)
        }
        Cmd::Train(a) => {
            let t = publish::train::train(&a.dir, &a.out, a.size, &a.include, &a.exclude)?;
            println!("{t}");
            Ok(true)
        }
    }
}

/// The tool: parses the command line and runs it.
pub fn main() -> ExitCode {
    let matches = cli::command().get_matches();
    let parsed = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match run(parsed) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("gzip-disk-ng: {e}");
            ExitCode::from(2)
        }
    }
}

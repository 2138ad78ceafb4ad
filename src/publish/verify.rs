//! `verify`: every sibling under the given paths must decode completely,
//! match its original when that exists, not be older than it, and be
//! decodable by browsers (zstd window, no large-window brotli).

use super::check;
use super::freshness::mtime;
use super::progress::{Progress, Report};
use super::summary::VerifySummary;
use super::walk::{Filter, Found};
use crate::coding::Coding;
use rayon::prelude::*;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

enum Verdict {
    Ok,
    Stale,
    Bad(String),
}

/// A sibling found by the walk: its path, coding and original's path.
struct Sibling {
    path: PathBuf,
    coding: Coding,
    original: PathBuf,
}

/// Runs `verify` over `paths`.
pub fn verify(paths: &[PathBuf], follow_symlinks: bool, report: Report) -> VerifySummary {
    let start = Instant::now();
    let mut summary = VerifySummary::default();
    let sibs = siblings_under(paths, follow_symlinks, &mut summary);
    let progress = Progress::new(report, sibs.len() as u64);
    let verdicts: Vec<Verdict> = sibs
        .par_iter()
        .map(|s| {
            let v = verify_sibling(s.coding, &s.path, &s.original);
            match &v {
                Verdict::Ok => progress.file_line(&format!("{}: ok", s.path.display())),
                Verdict::Stale => progress.problem(&s.path, "stale: older than its original"),
                Verdict::Bad(why) => progress.problem(&s.path, why),
            }
            progress.file_done(&s.path);
            v
        })
        .collect();
    progress.finish();
    summary.checked = verdicts.len() as u64;
    for v in verdicts {
        match v {
            Verdict::Ok => summary.ok += 1,
            Verdict::Stale => summary.stale += 1,
            Verdict::Bad(_) => summary.bad += 1,
        }
    }
    summary.elapsed = start.elapsed();
    summary
}

/// Every sibling below `paths`; what cannot be walked is told and counted
/// in `summary`.
fn siblings_under(
    paths: &[PathBuf],
    follow_symlinks: bool,
    summary: &mut VerifySummary,
) -> Vec<Sibling> {
    let mut filter = Filter::default();
    filter.follow_symlinks = follow_symlinks;
    let problems = Progress::errors_only();
    let mut sibs = Vec::new();
    for found in filter.walk(paths) {
        match found {
            Found::File(path, _) => {
                if let Some((coding, original)) = check::sibling_of(&path) {
                    sibs.push(Sibling {
                        path,
                        coding,
                        original,
                    });
                }
            }
            Found::Skipped(..) => {}
            Found::Error(path, why) => {
                problems.problem(&path, &why);
                summary.errors += 1;
            }
        }
    }
    sibs
}

fn verify_sibling(coding: Coding, sib: &Path, orig: &Path) -> Verdict {
    let sib_meta = match fs::metadata(sib) {
        Ok(m) => m,
        Err(e) => return Verdict::Bad(format!("cannot stat: {e}")),
    };
    if let Err(why) = check::browsers_accept(coding, sib) {
        return Verdict::Bad(why);
    }
    match fs::metadata(orig) {
        Ok(orig_meta) if orig_meta.is_file() => {
            if mtime(&sib_meta) < mtime(&orig_meta) {
                // Decoding still has to succeed; comparing is pointless.
                return match check::decodes(coding, sib) {
                    Ok(_) => Verdict::Stale,
                    Err(e) => Verdict::Bad(format!("stale, and {e}")),
                };
            }
            match check::matches(coding, sib, orig) {
                Ok(()) => Verdict::Ok,
                Err(e) => Verdict::Bad(e),
            }
        }
        _ => match check::decodes(coding, sib) {
            Ok(_) => Verdict::Ok,
            Err(e) => Verdict::Bad(e),
        },
    }
}

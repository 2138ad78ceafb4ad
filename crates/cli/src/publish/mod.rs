//! The publish tool behind `gzip-disk-ng`: makes `.zst`, `.br` and `.gz`
//! siblings next to originals (`compress`), checks them (`verify`) and
//! removes them again (`clean`).
//!
//! Files are processed in parallel (rayon) and every coding of a file is a
//! task of its own, so one big file does not hold a core per coding back.
//! Siblings and deltas go through one lifecycle (`lifecycle`): each is
//! written atomically with its original's mtime, which, with the decoded
//! size zstd and gzip declare, is how a rerun knows it was made from the
//! current original.

mod clean;
pub mod cli;
mod delta;
mod progress;
mod summary;
pub mod train;
mod verify;
pub mod walk;
mod worker;

pub use clean::{clean, CleanOptions};
pub use delta::{DeltaLevels, DeltaResult};
pub use summary::{CleanSummary, CodingTotals, CompressSummary, DeltaTotals, Kept, VerifySummary};
pub use verify::{verify, verify_with_dictionaries};

use gdn_publish::freshness::is_abandoned;
use gdn_publish::options::CompressOptions;
use gdn_publish::state;
use progress::Progress;
use rayon::prelude::*;
use std::collections::HashSet;
use std::fs;
use std::path::PathBuf;
use std::time::Instant;
use walk::{FoundFile, SkipReason, WalkFilter};
use worker::{compress_file, FileResult};

/// Runs `compress` over `paths`.
pub fn compress(paths: &[PathBuf], opts: &CompressOptions) -> Result<CompressSummary, String> {
    let start = Instant::now();
    let stores = if opts.deltas.active() || state::any_old_store(paths) {
        state::stores(paths, opts.store.as_deref(), opts.dry_run)?
    } else {
        Vec::new()
    };
    let (files, mut summary) = files_to_compress(paths, opts)?;
    let plan = delta::DeltaPlan::new(stores, &files, &opts.deltas)?;
    let progress = Progress::new(opts.report, files.len() as u64);
    let results: Vec<FileResult> = files
        .par_iter()
        .map(|(path, _)| compress_file(path, opts, plan.as_ref(), &progress))
        .collect();
    progress.finish();
    for r in results {
        summary.count_file(r);
    }
    summary.elapsed = start.elapsed();
    Ok(summary)
}

/// Walks `paths` for the files to compress (path and size), largest first,
/// with a summary that already counts the files skipped, the walk's errors
/// and the leftover temporaries of killed runs, which it removes; siblings
/// and deltas beside their originals are not files to it.
fn files_to_compress(
    paths: &[PathBuf],
    opts: &CompressOptions,
) -> Result<(Vec<(PathBuf, u64)>, CompressSummary), String> {
    let mut filter = WalkFilter::new(&opts.include, &opts.exclude)?;
    filter.follow_symlinks = opts.follow_symlinks;
    filter.min_size = opts.min_size;
    filter.compress_rules = true;
    filter.types = walk::load_types(opts.mime_types.as_deref(), &opts.types)?;
    let found = filter.walk(paths);
    let seen: HashSet<PathBuf> = found.iter().map(|f| f.path().to_path_buf()).collect();
    let mut files = Vec::new();
    let problems = Progress::errors_only();
    let mut summary = CompressSummary {
        dry_run: opts.dry_run,
        ..Default::default()
    };
    for f in found {
        // Siblings and deltas beside their originals are this tool's
        // output, not files: the summary counts originals only.
        if verify::original_named(f.path()).is_some_and(|o| seen.contains(&o)) {
            continue;
        }
        summary.files_seen += 1;
        match f {
            FoundFile::File(path, len) => files.push((path, len)),
            FoundFile::Skipped(tmp, SkipReason::Temporary)
                if !opts.dry_run && is_abandoned(&tmp) =>
            {
                match fs::remove_file(&tmp) {
                    Ok(()) => summary.temporaries_removed += 1,
                    Err(e) => {
                        problems.problem(&tmp, &format!("cannot remove leftover temporary: {e}"));
                        summary.errors += 1;
                    }
                }
            }
            FoundFile::Skipped(_, why) => *summary.skipped.entry(why).or_default() += 1,
            FoundFile::Error(path, why) => {
                problems.problem(&path, &why);
                summary.errors += 1;
            }
        }
    }
    // Largest first, so the long brotli jobs start early and the cores stay
    // busy to the end.
    files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok((files, summary))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gdn_core::coding::Coding;
    use gdn_core::test_util::{noise, page};
    use gdn_publish::freshness::ABANDONED_AFTER;
    use gdn_publish::options::Report;
    use gdn_publish::sibling_path;
    use std::fs::File;
    use std::time::{Duration, SystemTime};

    fn opts() -> CompressOptions {
        CompressOptions {
            report: Report::Quiet,
            ..Default::default()
        }
    }

    #[test]
    fn compress_then_rerun_is_up_to_date() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.html");
        fs::write(&p, page(5000, 1)).unwrap();
        let s = compress(&[d.path().to_path_buf()], &opts()).unwrap();
        assert_eq!((s.compressed, s.errors), (1, 0));
        for c in Coding::ALL {
            let m = fs::metadata(sibling_path(&p, c)).unwrap();
            assert_eq!(
                m.modified().unwrap(),
                fs::metadata(&p).unwrap().modified().unwrap()
            );
        }
        let s = compress(&[d.path().to_path_buf()], &opts()).unwrap();
        assert_eq!((s.compressed, s.up_to_date), (0, 1));
        assert!(verify(&[d.path().to_path_buf()], false, Report::Quiet).clean());
    }

    #[test]
    fn rewrite_keeping_mtime_is_noticed_by_declared_size() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.html");
        fs::write(&p, page(5000, 1)).unwrap();
        compress(&[d.path().to_path_buf()], &opts()).unwrap();
        let t = fs::metadata(&p).unwrap().modified().unwrap();
        fs::write(&p, page(6000, 1)).unwrap();
        File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(t)
            .unwrap();
        let s = compress(&[d.path().to_path_buf()], &opts()).unwrap();
        // zstd and gzip state the size; brotli cannot tell.
        assert_eq!(s.per_coding[Coding::Zstd.index()].written, 1, "{s}");
        assert_eq!(s.per_coding[Coding::Gzip.index()].written, 1, "{s}");
        assert_eq!(s.per_coding[Coding::Br.index()].up_to_date, 1, "{s}");
    }

    #[test]
    fn incompressible_variant_is_dropped_and_old_sibling_removed() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("noise.txt");
        fs::write(&p, noise(20_000, 7)).unwrap();
        let old = sibling_path(&p, Coding::Gzip);
        fs::write(&old, b"old").unwrap();
        File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1000))
            .unwrap();
        let s = compress(std::slice::from_ref(&p), &opts()).unwrap();
        assert_eq!(s.compressed, 0, "{s}");
        assert_eq!(s.per_coding[Coding::Gzip.index()].removed, 1, "{s}");
        for c in Coding::ALL {
            assert!(!sibling_path(&p, c).exists());
        }
        let names: Vec<_> = fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "temporaries left: {names:?}");
    }

    #[test]
    fn file_changed_while_compressing_is_reported_and_nothing_written() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("growing.txt");
        // Varied text, so level 19 takes far longer than the writer's delay.
        let mut x = 1u32;
        let text: Vec<u8> = (0..2 << 20)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                b"abcdefghij klmnop\n"[(x >> 16) as usize % 18]
            })
            .collect();
        fs::write(&p, text).unwrap();
        let o = CompressOptions {
            codings: vec![Coding::Zstd],
            ..opts()
        };
        // Keeps appending until the run is over, so whenever the run took
        // its snapshot, the file changes while it is being encoded.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let (p, stop) = (p.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20));
                    let mut f = File::options().append(true).open(&p).unwrap();
                    std::io::Write::write_all(&mut f, b"one more line\n").unwrap();
                }
            })
        };
        let s = compress(std::slice::from_ref(&p), &o).unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        writer.join().unwrap();
        assert_eq!((s.errors, s.compressed), (1, 0), "{s}");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn old_leftover_temporaries_are_removed_fresh_ones_kept() {
        let d = tempfile::tempdir().unwrap();
        let old = d.path().join(".a.html.br.tmp1a2b3c");
        let fresh = d.path().join(".b.html.gz.tmp4d5e6f");
        fs::write(&old, b"partial").unwrap();
        fs::write(&fresh, b"partial").unwrap();
        File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(SystemTime::now() - ABANDONED_AFTER * 2)
            .unwrap();
        let s = compress(&[d.path().to_path_buf()], &opts()).unwrap();
        assert_eq!(s.temporaries_removed, 1, "{s}");
        assert_eq!(s.skipped.get(&SkipReason::Temporary), Some(&1));
        assert!(!old.exists());
        assert!(fresh.exists());
    }

    #[test]
    fn dry_run_writes_nothing() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.css");
        fs::write(&p, page(5000, 1)).unwrap();
        let o = CompressOptions {
            dry_run: true,
            remove_originals: true,
            ..opts()
        };
        let s = compress(&[d.path().to_path_buf()], &o).unwrap();
        assert_eq!(s.compressed, 1);
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }
}

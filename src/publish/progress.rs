//! What the tool tells while it works: a progress bar on a terminal or one
//! line per file, and every problem on stderr.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;

/// How much to tell while working.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    /// A progress bar on a terminal, one line per file otherwise.
    Auto,
    /// One line per file, even on a terminal.
    Plain,
    /// Only errors and the summary.
    Quiet,
}

/// Where progress and problems go.
pub(super) struct Progress {
    bar: Option<ProgressBar>,
    /// One line per file on stdout.
    per_file_lines: bool,
}

impl Progress {
    /// Output for `total` files as `report` asks.
    pub(super) fn new(report: Report, total: u64) -> Progress {
        let tty = std::io::stderr().is_terminal();
        match report {
            Report::Auto if tty => {
                let bar = ProgressBar::new(total);
                if let Ok(style) = ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:40}] {pos}/{len} files {wide_msg}",
                ) {
                    bar.set_style(style.progress_chars("=> "));
                }
                Progress {
                    bar: Some(bar),
                    per_file_lines: false,
                }
            }
            Report::Quiet => Progress::errors_only(),
            _ => Progress {
                bar: None,
                per_file_lines: true,
            },
        }
    }

    /// Output for problems met before the files are counted (the walk).
    pub(super) fn errors_only() -> Progress {
        Progress {
            bar: None,
            per_file_lines: false,
        }
    }

    /// What was done to one file, when lines are wanted.
    pub(super) fn file_line(&self, s: &str) {
        if self.per_file_lines {
            println!("{s}");
        }
    }

    /// A problem with `path`, always told, above the bar if there is one.
    pub(super) fn problem(&self, path: &Path, why: &str) {
        let msg = format!("gzip-disk-ng: {}: {why}", path.display());
        match &self.bar {
            Some(b) => b.suspend(|| eprintln!("{msg}")),
            None => eprintln!("{msg}"),
        }
    }

    /// Advances the bar past `path`.
    pub(super) fn file_done(&self, path: &Path) {
        if let Some(b) = &self.bar {
            b.set_message(path.display().to_string());
            b.inc(1);
        }
    }

    /// Removes the bar once every file is done.
    pub(super) fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

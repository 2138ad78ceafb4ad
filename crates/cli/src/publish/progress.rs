//! What the tool tells while it works: a progress bar on a terminal or one
//! line per file, and every problem on stderr.

use gdn_publish::options::Report;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;

/// Characters of a path the bar shows: what is left of 100 columns after
/// its time, bar and counts.
const MESSAGE_ROOM: usize = 40;

/// The last `room` characters of `s`, `…` first when it was cut.
fn tail(s: &str, room: usize) -> String {
    let n = s.chars().count();
    if n <= room {
        return s.to_owned();
    }
    let kept: String = s.chars().skip(n - room + 1).collect();
    format!("…{kept}")
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

    /// Shows `path` on the bar as the file being worked on: its tail, the
    /// file's name and its nearest directories (the bar's room cuts a
    /// message's end, which would leave the tree's top, the same for all).
    pub(super) fn file_started(&self, path: &Path) {
        if let Some(b) = &self.bar {
            b.set_message(tail(&path.display().to_string(), MESSAGE_ROOM));
        }
    }

    /// Advances the bar past a file.
    pub(super) fn file_done(&self) {
        if let Some(b) = &self.bar {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_shows_a_path_s_tail() {
        assert_eq!(tail("/srv/a.html", 40), "/srv/a.html");
        let t = tail("/usr/share/doc/apache2-doc/manual/mod/mod_deflate.html", 20);
        assert_eq!(t, "…od/mod_deflate.html");
        assert_eq!(t.chars().count(), 20);
    }
}

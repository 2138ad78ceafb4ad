//! One original being worked on: its metadata, read once when its work
//! begins, and what lies beside it, looked at once then and kept up to
//! date as siblings are written or removed, so that later steps (the
//! previous version's recovery, a delta's rival size, `--remove-originals`)
//! pass on what is known instead of looking again.

use crate::check;
use crate::error::PublishError;
use crate::freshness::mtime;
use gdn_core::coding::Coding;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

/// One sibling name as far as this run knows it.
enum OnDisk {
    /// As found when the file's work began (`None`: nothing there).
    Found(Option<fs::Metadata>),
    /// Written by this run, this long, with the original's mtime.
    Written(u64),
    /// Removed by this run.
    Removed,
}

/// An original and its siblings.
pub struct Original<'a> {
    pub path: &'a Path,
    /// As it was when its work began.
    pub meta: fs::Metadata,
    /// Every sibling name it can have (`check::sibling_paths`).
    siblings: Vec<(Coding, PathBuf, OnDisk)>,
}

impl<'a> Original<'a> {
    /// The original at `path`, once it is known to open (an unreadable
    /// file is reported once, not once per coding), and its siblings.
    pub fn open(path: &'a Path) -> Result<Original<'a>, PublishError> {
        let meta = fs::metadata(path).map_err(PublishError::Stat)?;
        File::open(path).map_err(PublishError::Read)?;
        let siblings = check::sibling_paths(path)
            .into_iter()
            .map(|(c, p)| {
                let found = fs::symlink_metadata(&p).ok();
                (c, p, OnDisk::Found(found))
            })
            .collect();
        Ok(Original {
            path,
            meta,
            siblings,
        })
    }

    /// The original at `path`, as `meta` describes it, with no sibling
    /// looked for: what it makes goes elsewhere (the module's cache).
    pub fn known(path: &'a Path, meta: fs::Metadata) -> Original<'a> {
        Original {
            path,
            meta,
            siblings: Vec::new(),
        }
    }

    /// Where the state of the name the tool writes for `coding` (its
    /// first suffix) is kept.
    fn slot(&self, coding: Coding) -> Option<usize> {
        self.siblings.iter().position(|(c, _, _)| *c == coding)
    }

    /// What was at the `coding` sibling's name when the work began.
    pub fn found(&self, coding: Coding) -> Option<&fs::Metadata> {
        match &self.siblings[self.slot(coding)?].2 {
            OnDisk::Found(m) => m.as_ref(),
            _ => None,
        }
    }

    /// Takes in what a run did to the `coding` sibling: written, this
    /// long (`Some`), or removed (`None`).
    pub fn record(&mut self, coding: Coding, written: Option<u64>) {
        let state = match written {
            Some(len) => OnDisk::Written(len),
            None => OnDisk::Removed,
        };
        if let Some(i) = self.slot(coding) {
            self.siblings[i].2 = state;
        }
    }

    /// The size of the `coding` sibling when it was made from this
    /// original (it has the original's mtime).
    pub fn current_len(&self, coding: Coding) -> Option<u64> {
        match &self.siblings[self.slot(coding)?].2 {
            OnDisk::Found(Some(m)) if m.is_file() && mtime(m) == mtime(&self.meta) => Some(m.len()),
            OnDisk::Written(len) => Some(*len),
            _ => None,
        }
    }

    /// Every sibling that is a file now.
    pub fn sibling_files(&self) -> impl Iterator<Item = (Coding, &Path)> {
        self.siblings
            .iter()
            .filter_map(|(c, p, state)| match state {
                OnDisk::Found(Some(m)) if m.is_file() => Some((*c, p.as_path())),
                OnDisk::Written(_) => Some((*c, p.as_path())),
                _ => None,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siblings_are_known_without_looking_again() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.html");
        fs::write(&p, b"original").unwrap();
        fs::write(d.path().join("a.html.gz"), b"stale gz").unwrap();
        fs::write(d.path().join("a.html.zstd"), b"other name").unwrap();
        let mut o = Original::open(&p).unwrap();
        assert!(o.found(Coding::Gzip).is_some() && o.found(Coding::Br).is_none());
        o.record(Coding::Br, Some(5));
        o.record(Coding::Gzip, None);
        assert_eq!(o.current_len(Coding::Br), Some(5));
        assert_eq!(o.current_len(Coding::Gzip), None);
        let files: Vec<_> = o.sibling_files().map(|(c, _)| c).collect();
        assert_eq!(files, [Coding::Zstd, Coding::Br]);
    }
}

//! Finding the files to work on: directory walks, globs and symlink
//! policy, with the compress rules of `gdn_core::rules`.

pub use gdn_core::rules::{compress_rule, SkipReason};
use gdn_core::types::{self, Types};
use gdn_publish::atomic::is_temp_name;
use globset::{Glob, GlobSet, GlobSetBuilder};
use std::path::{Path, PathBuf};

/// The types that give files their kind: the map at `path` (an error
/// when it cannot be read), else the system's, else the common web types
/// (a system without `mime.types`), with the admin's `extra` types
/// compressed too.
pub fn load_types(path: Option<&Path>, extra: &[String]) -> Result<Types, String> {
    let text = match path {
        Some(p) => std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?,
        None => std::fs::read_to_string(types::SYSTEM_MIME_TYPES)
            .unwrap_or_else(|_| types::BUILTIN.to_string()),
    };
    Ok(Types::parse(&text, extra))
}

/// One file the walk found.
#[derive(Debug)]
pub enum FoundFile {
    /// A regular file to work on, with its size.
    File(PathBuf, u64),
    /// A file left alone, and why.
    Skipped(PathBuf, SkipReason),
    /// A file or directory that could not be examined.
    Error(PathBuf, String),
}

impl FoundFile {
    /// The path found.
    pub fn path(&self) -> &Path {
        match self {
            FoundFile::File(p, _) | FoundFile::Skipped(p, _) | FoundFile::Error(p, _) => p,
        }
    }
}

/// What to walk and what to leave out.
#[derive(Debug, Default)]
pub struct WalkFilter {
    include: Option<GlobSet>,
    exclude: Option<GlobSet>,
    /// Follow symlinks below the given paths.
    pub follow_symlinks: bool,
    /// Files smaller than this are skipped (compress only).
    pub min_size: u64,
    /// Apply the compress skip rules (extensions, types, size); verify
    /// wants all.
    pub compress_rules: bool,
    /// The types the compress rules read.
    pub types: Types,
}

/// One set of `globs`; `None` when there are none.
fn glob_set(globs: &[String]) -> Result<Option<GlobSet>, String> {
    if globs.is_empty() {
        return Ok(None);
    }
    let mut b = GlobSetBuilder::new();
    for g in globs {
        b.add(Glob::new(g).map_err(|e| format!("bad glob {g:?}: {e}"))?);
    }
    b.build().map(Some).map_err(|e| e.to_string())
}

impl WalkFilter {
    /// A filter with the given include and exclude globs, and the
    /// system's types.
    pub fn new(include: &[String], exclude: &[String]) -> Result<WalkFilter, String> {
        Ok(WalkFilter {
            include: glob_set(include)?,
            exclude: glob_set(exclude)?,
            types: load_types(None, &[])?,
            ..WalkFilter::default()
        })
    }

    /// Globs match the path relative to the walked argument, or the bare
    /// file name, so both `docs/**/*.html` and `*.html` do what users mean.
    fn matches(set: &GlobSet, rel: &Path) -> bool {
        set.is_match(rel) || rel.file_name().is_some_and(|n| set.is_match(n))
    }

    fn excluded(&self, rel: &Path) -> bool {
        self.exclude.as_ref().is_some_and(|s| Self::matches(s, rel))
    }

    fn included(&self, rel: &Path) -> bool {
        self.include.as_ref().is_none_or(|s| Self::matches(s, rel))
    }

    /// Classifies one regular file.
    fn classify(&self, path: PathBuf, rel: &Path, len: u64) -> FoundFile {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            return FoundFile::Error(path, "file name is not valid UTF-8".into());
        };
        if path.to_str().is_none() {
            return FoundFile::Error(path, "path is not valid UTF-8".into());
        }
        if is_temp_name(name) {
            return FoundFile::Skipped(path, SkipReason::Temporary);
        }
        if self.excluded(rel) || !self.included(rel) {
            return FoundFile::Skipped(path, SkipReason::Filtered);
        }
        if self.compress_rules {
            if let Some(why) = compress_rule(name, len, self.min_size, &self.types) {
                return FoundFile::Skipped(path, why);
            }
        }
        FoundFile::File(path, len)
    }

    /// Walks every root (file or directory) and classifies what it finds.
    pub fn walk(&self, roots: &[PathBuf]) -> Vec<FoundFile> {
        let mut out = Vec::new();
        for root in roots {
            let walker = walkdir::WalkDir::new(root)
                .follow_links(self.follow_symlinks)
                .sort_by_file_name()
                .into_iter()
                .filter_entry(|e| {
                    // Prune excluded directories, and an in-tree store
                    // an older release left (a dry run leaves it),
                    // without entering them.
                    e.depth() == 0
                        || !e.file_type().is_dir()
                        || !(e.file_name() == gdn_core::dictionary::STORE_DIR
                            || self.excluded(e.path().strip_prefix(root).unwrap_or(e.path())))
                });
            for entry in walker {
                let entry = match entry {
                    Ok(e) => e,
                    Err(e) => {
                        let p = e.path().unwrap_or(root).to_path_buf();
                        let msg = match e.io_error() {
                            Some(io) => io.to_string(),
                            None => e.to_string(),
                        };
                        out.push(FoundFile::Error(p, msg));
                        continue;
                    }
                };
                let ft = entry.file_type();
                if ft.is_dir() {
                    continue;
                }
                let path = entry.path().to_path_buf();
                if ft.is_symlink() {
                    out.push(FoundFile::Skipped(path, SkipReason::Symlink));
                    continue;
                }
                if !ft.is_file() {
                    out.push(FoundFile::Skipped(path, SkipReason::NotRegular));
                    continue;
                }
                let len = match entry.metadata() {
                    Ok(m) => m.len(),
                    Err(e) => {
                        out.push(FoundFile::Error(path, e.to_string()));
                        continue;
                    }
                };
                let rel = if entry.depth() == 0 {
                    PathBuf::from(path.file_name().unwrap_or(path.as_os_str()))
                } else {
                    path.strip_prefix(root).unwrap_or(&path).to_path_buf()
                };
                out.push(self.classify(path, &rel, len));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn walk_applies_rules() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        fs::create_dir_all(r.join("sub/skipme")).unwrap();
        fs::write(r.join("a.html"), vec![b'a'; 1000]).unwrap();
        fs::write(r.join("small.css"), b"x").unwrap();
        fs::write(r.join("pic.png"), vec![0; 1000]).unwrap();
        fs::write(r.join("sub/b.js"), vec![b'b'; 1000]).unwrap();
        fs::write(r.join("sub/skipme/c.js"), vec![b'c'; 1000]).unwrap();
        fs::write(r.join("sub/.b.js.gz.tmp12ab"), vec![b'c'; 1000]).unwrap();
        std::os::unix::fs::symlink(r.join("a.html"), r.join("link.html")).unwrap();
        let mut f = WalkFilter::new(&[], &["skipme".into()]).unwrap();
        f.min_size = 256;
        f.compress_rules = true;
        let found = f.walk(&[r.to_path_buf()]);
        let mut files = Vec::new();
        let mut skipped = Vec::new();
        for x in found {
            match x {
                FoundFile::File(p, _) => files.push(p.strip_prefix(r).unwrap().to_path_buf()),
                FoundFile::Skipped(p, why) => {
                    skipped.push((p.strip_prefix(r).unwrap().to_path_buf(), why))
                }
                FoundFile::Error(p, e) => panic!("{p:?}: {e}"),
            }
        }
        assert_eq!(files, [PathBuf::from("a.html"), PathBuf::from("sub/b.js")]);
        assert!(skipped.contains(&("small.css".into(), SkipReason::TooSmall)));
        assert!(skipped.contains(&("pic.png".into(), SkipReason::Compressed)));
        assert!(skipped.contains(&("link.html".into(), SkipReason::Symlink)));
        assert!(skipped.contains(&("sub/.b.js.gz.tmp12ab".into(), SkipReason::Temporary)));
        assert!(!skipped.iter().any(|(p, _)| p.starts_with("sub/skipme")));

        let f = WalkFilter::new(&["*.js".into()], &[]).unwrap();
        let n = f
            .walk(&[r.to_path_buf()])
            .into_iter()
            .filter(|x| matches!(x, FoundFile::File(..)))
            .count();
        assert_eq!(n, 2);
    }
}

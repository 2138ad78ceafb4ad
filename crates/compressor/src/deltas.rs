//! Deltas on demand: what the publish tool's `--delta-versions` and
//! `--delta-group` do, done by the compressor for the files the server
//! serves, with no publish step.
//!
//! Each scope (a file's own path, or a versioned group: a virtual host
//! and a `GzipDiskNgUseAsDictionary` pattern), on each host, has a
//! history in the cache root, `histories/<2 hex>/<64 hex SHA-256 of the
//! host and the scope>`: the versions the server served in it, newest
//! last, each with its content's SHA-256. A history says where a file
//! was; what is served is bound to bytes: a delta is named by the digest
//! of the content it encodes and of its dictionary, and is served only
//! for a file that has that digest now, to a client that offers the
//! dictionary's hash. Keyed by host too, so servers sharing a root never
//! make deltas against each other's versions of a path. When a new version arrives, the earlier ones' content is
//! kept (`Kind::Kept`), recovered from their copies (or, in a group,
//! from the member's file while it is unchanged) and checked against
//! their hash, so keeping costs nothing while a file is unchanged; the
//! new version then gets a `dcz` and a `dcb` against each, made by the
//! publish tool's codec. Only content this server served in that scope
//! is ever a dictionary, and only after its hash is checked.

use super::disk::dirs_for;
use super::index::CopyId;
use super::make::{
    current, decode_into, make_dir, pin, read_pinned, write_record, Ctx, Loaded, Problem,
};
use super::state::{copy_path, kept_key};
use crate::job::OwnedDeltas;
use crate::key::{parse_version_stem, version_stem, Kind, NameBuf, SourceHash, Version};
use crate::settings::Severity;
use crate::tally::CopyFate;
use gdn_core::coding::{Coding, DeltaCoding};
use gdn_core::delta_codec;
use gdn_core::dictionary::{self, Hash};
use gdn_publish::atomic::TempFile;
use gdn_publish::store;
use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The directory of histories under the cache root.
pub const HISTORY_DIR: &str = "histories";

/// zstd level of kept versions: one is written on the way from a change
/// to its first delta, so it is fast; the store's level would cost that
/// way most of its time on a large script.
const KEPT_LEVEL: i32 = 3;

/// One version in a history.
#[derive(Clone, Debug, PartialEq, Eq)]
struct HistoryEntry {
    hash: Hash,
    version: Version,
    /// Where it was served (a group's members differ).
    path: PathBuf,
}

/// A scope's history: the versions served, newest last.
#[derive(Debug, Default, PartialEq, Eq)]
struct History {
    entries: Vec<HistoryEntry>,
}

/// The history's file for a scope on the host `machine`: same path, or
/// a group's key.
fn history_path(root: &Path, machine: &str, path: &Path, d: &OwnedDeltas) -> PathBuf {
    let host = machine.as_bytes();
    let scope = match d.group.is_empty() {
        true => [b"path\0", host, b"\0", path.as_os_str().as_bytes()].concat(),
        false => [b"group\0", host, b"\0", &d.group[..]].concat(),
    };
    let hex = dictionary::to_hex(&dictionary::hash(&scope));
    root.join(HISTORY_DIR).join(&hex[..2]).join(hex)
}

impl History {
    /// The history at `file`; empty when there is none (or it is not
    /// one: a line it cannot read is left out).
    fn load(file: &Path) -> History {
        let text = fs::read(file).unwrap_or_default();
        let entries = text
            .split(|&b| b == b'\n')
            .filter_map(|line| {
                let mut parts = line.splitn(3, |&b| b == b' ');
                let hash = dictionary::from_hex(std::str::from_utf8(parts.next()?).ok()?)?;
                let version = parse_version_stem(std::str::from_utf8(parts.next()?).ok()?)?;
                let path = PathBuf::from(std::ffi::OsStr::from_bytes(parts.next()?));
                Some(HistoryEntry {
                    hash,
                    version,
                    path,
                })
            })
            .collect();
        History { entries }
    }

    /// Writes the history to `file`, through a temporary.
    fn save(&self, file: &Path) -> io::Result<()> {
        let mut text = Vec::new();
        let mut name = NameBuf::new();
        for e in &self.entries {
            let stem = version_stem(&e.version, &mut name);
            let hex = dictionary::to_hex(&e.hash);
            let line = [
                hex.as_bytes(),
                b" ",
                stem.as_bytes(),
                b" ",
                e.path.as_os_str().as_bytes(),
                b"\n",
            ];
            text.extend(line.concat());
        }
        write_record(file, &text)
    }

    /// Records `e` as the newest version and keeps `versions` earlier
    /// ones (of other content); returns those, newest first. Whether the
    /// history changed is the second value.
    fn record(&mut self, e: HistoryEntry, versions: usize) -> (Vec<HistoryEntry>, bool) {
        let before = self.entries.clone();
        self.entries.retain(|x| x.hash != e.hash);
        self.entries.push(e);
        let excess = self.entries.len().saturating_sub(versions + 1);
        self.entries.drain(..excess);
        let mut earlier = self.entries.clone();
        earlier.pop();
        earlier.reverse();
        let changed = before != self.entries;
        (earlier, changed)
    }
}

impl Ctx<'_> {
    /// Records the version at `path` in its scope's history and makes its
    /// deltas against the earlier versions kept; `read` is the file,
    /// read while it had `version`.
    pub(super) fn deltas(
        &self,
        path: &Path,
        version: Version,
        read: &Loaded,
        d: &OwnedDeltas,
    ) -> Result<(), Problem> {
        if path.as_os_str().as_bytes().contains(&b'\n') {
            return Ok(());
        }
        let machine = &self.settings.host.machine;
        let file = history_path(&self.settings.root, machine, path, d);
        let entry = HistoryEntry {
            hash: read.source,
            version,
            path: path.to_path_buf(),
        };
        let earlier = {
            // Held while the history is read and written, so two workers
            // never lose each other's versions.
            let _state = self.state();
            let mut history = History::load(&file);
            let (earlier, changed) = history.record(entry, usize::from(d.versions));
            if changed {
                history.save(&file).map_err(Problem::Cache)?;
            }
            earlier
        };
        let mut dictionaries = Vec::new();
        for e in &earlier {
            if let Some(dict) = self.kept(e) {
                dictionaries.push((e.hash, dict));
            }
        }
        let (meta, content) = (&read.meta, &read.content[..]);
        self.deltas_of(path, meta, (version, read.source), content, &dictionaries);
        Ok(())
    }

    /// Makes the `dcz`, then the `dcb`, of `content` (read from the file
    /// at `path` while it had `version`) against each of `dictionaries`
    /// that the cache does not hold yet.
    pub(super) fn deltas_against(
        &self,
        path: &Path,
        meta: &fs::Metadata,
        version: Version,
        content: &[u8],
        dictionaries: &[(Hash, Vec<u8>)],
    ) {
        let source = dictionary::hash(content);
        self.deltas_of(path, meta, (version, source), content, dictionaries);
    }

    /// `deltas_against`, the digest of `content` worked out: each delta
    /// is named by it.
    fn deltas_of(
        &self,
        path: &Path,
        meta: &fs::Metadata,
        (version, source): (Version, SourceHash),
        content: &[u8],
        dictionaries: &[(Hash, Vec<u8>)],
    ) {
        for d in DeltaCoding::ALL {
            for (h, dict) in dictionaries {
                let task = (version, Kind::Delta(d, *h));
                let key = (source, Kind::Delta(d, *h));
                if !self.state().claim(self.settings, task) {
                    continue;
                }
                let Some(_claim) = self.claim_copy(&key) else {
                    self.state().release(&task);
                    continue;
                };
                let made = self.delta(meta, key, d, dict, content);
                let mut state = self.state();
                state.release(&task);
                match made {
                    Ok(size) => {
                        let kept = state.made(self.settings, key, size, self.log);
                        drop(state);
                        self.copies(
                            if size > 0 && kept {
                                CopyFate::Done
                            } else {
                                CopyFate::NotWorth
                            },
                            1,
                        );
                        (self.log)(
                            Severity::Debug,
                            &format!(
                                "{}: {} of {size} bytes against {}",
                                path.display(),
                                d.token(),
                                dictionary::to_hex(h)
                            ),
                        );
                    }
                    Err(e) => {
                        drop(state);
                        self.copies(CopyFate::Failed, 1);
                        self.report(std::iter::once(task), e);
                    }
                }
            }
        }
    }

    /// Writes one delta (or, when it would not be smaller than the
    /// content, or a `dcb` would need too large a window, the empty
    /// stand-in); its size.
    fn delta(
        &self,
        meta: &fs::Metadata,
        key: CopyId,
        d: DeltaCoding,
        dict: &[u8],
        content: &[u8],
    ) -> Result<u64, Problem> {
        let target = copy_path(&self.settings.root, &key);
        make_dir(&target)?;
        let fits =
            d == DeltaCoding::Dcz || delta_codec::dcb_fits(dict.len() as u64, content.len() as u64);
        let bytes = match fits {
            true => delta_codec::encode(d, &self.settings.delta_levels, dict, content)
                .map_err(|e| Problem::Failed(format!("cannot make a {}: {e}", d.token())))?,
            false => Vec::new(),
        };
        let worth = !bytes.is_empty() && (bytes.len() as u64) < content.len() as u64;
        let mut tmp = TempFile::new(&target).map_err(Problem::Cache)?;
        if worth {
            tmp.write_all(&bytes).map_err(Problem::Cache)?;
        }
        tmp.commit_private(&target, meta).map_err(Problem::Cache)?;
        Ok(if worth { bytes.len() as u64 } else { 0 })
    }

    /// The content of the earlier version `e`, kept in the cache: read
    /// back, or recovered and kept now. `None` when it cannot be had (its
    /// copies are gone) or the cache cannot be written.
    fn kept(&self, e: &HistoryEntry) -> Option<Vec<u8>> {
        let key = kept_key(e.hash);
        let target = copy_path(&self.settings.root, &key);
        if let Some(content) = read_kept(&target).filter(|c| dictionary::hash(c) == e.hash) {
            self.state().touch(self.settings, &key);
            return Some(content);
        }
        let content = self.recover(e)?;
        match keep(&target, &content) {
            Ok(size) => {
                self.state().made(self.settings, key, size, self.log);
                Some(content)
            }
            Err(err) => {
                self.state().cache_failed(self.settings, &err, self.log);
                None
            }
        }
    }

    /// The content of `e` from the file it was served from, while that
    /// still has its version, else from one of its copies (named by that
    /// content's hash); only content whose hash is `e`'s.
    fn recover(&self, e: &HistoryEntry) -> Option<Vec<u8>> {
        let fits = |c: &Vec<u8>| dictionary::hash(c) == e.hash;
        if let Ok(pinned) = pin(&e.path, &e.version) {
            let read = read_pinned(&e.path, &pinned).ok().filter(fits);
            if read.is_some() && current(&e.path, &e.version).is_ok() {
                return read;
            }
        }
        for c in [Coding::Zstd, Coding::Gzip, Coding::Br] {
            let copy = copy_path(&self.settings.root, &(e.hash, Kind::Coded(c)));
            let Ok(coded) = fs::read(&copy) else {
                continue;
            };
            let mut out = Vec::new();
            if !coded.is_empty() && decode_into(c, &coded, &mut out).is_ok() && fits(&out) {
                return Some(out);
            }
        }
        (self.log)(
            Severity::Debug,
            &format!(
                "{}: the version {} is no longer in the cache: no deltas against it",
                e.path.display(),
                dictionary::to_hex(&e.hash)
            ),
        );
        None
    }
}

/// A kept version's content, if it is there and decodes.
pub(super) fn read_kept(target: &Path) -> Option<Vec<u8>> {
    store::load_version(target).ok()
}

/// Keeps `content` at `target` as the publish tool's store keeps a
/// version; its size there.
pub(super) fn keep(target: &Path, content: &[u8]) -> io::Result<u64> {
    dirs_for(target)?;
    let mut tmp = TempFile::new(target)?;
    store::write_version(&mut tmp, content, KEPT_LEVEL)?;
    tmp.persist(target)?;
    Ok(fs::metadata(target)?.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: u8) -> HistoryEntry {
        HistoryEntry {
            hash: [n; 32],
            version: Version {
                size: u64::from(n),
                mtime_us: -1,
                ..Version::NONE
            },
            path: PathBuf::from(format!("/srv/a b/{n}.js")),
        }
    }

    #[test]
    fn a_history_keeps_the_newest_versions_of_other_content() {
        let mut h = History::default();
        assert_eq!(h.record(entry(1), 2), (vec![], true));
        assert_eq!(h.record(entry(1), 2), (vec![], false));
        assert_eq!(h.record(entry(2), 2), (vec![entry(1)], true));
        assert_eq!(h.record(entry(3), 2), (vec![entry(2), entry(1)], true));
        assert_eq!(h.record(entry(4), 2), (vec![entry(3), entry(2)], true));
        // Content served again moves up; it is not its own dictionary.
        assert_eq!(h.record(entry(2), 2), (vec![entry(4), entry(3)], true));
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("history/ab/abcd");
        h.save(&file).unwrap();
        assert_eq!(History::load(&file), h);
        fs::write(&file, b"junk\nzz 1-2-3-4-5 /x\n1-2-3 /y\n").unwrap();
        assert_eq!(History::load(&file), History::default());
    }

    #[test]
    fn scopes_have_histories_of_their_own() {
        let root = Path::new("/cache");
        let same = |p: &str, g: &[u8]| {
            let d = OwnedDeltas {
                versions: 3,
                group: g.to_vec(),
                site: Vec::new(),
            };
            history_path(root, "m", Path::new(p), &d)
        };
        assert_eq!(same("/a.js", b""), same("/a.js", b""));
        assert_ne!(same("/a.js", b""), same("/b.js", b""));
        assert_eq!(same("/a.js", b"h /x*"), same("/b.js", b"h /x*"));
        assert_ne!(same("/a.js", b"h /x*"), same("/a.js", b"g /x*"));
        assert!(same("/a.js", b"").starts_with("/cache/histories/"));
        // Another host sharing the root: histories of its own.
        let d = OwnedDeltas {
            versions: 3,
            group: Vec::new(),
            site: Vec::new(),
        };
        let other = history_path(root, "n", Path::new("/a.js"), &d);
        assert_ne!(same("/a.js", b""), other);
    }

    #[test]
    fn kept_versions_round_trip_and_are_bounded() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("kept/ab/x.zst");
        let content = b"let a = 1;\n".repeat(1000);
        let size = keep(&t, &content).unwrap();
        assert!(size > 0 && size < content.len() as u64);
        assert_eq!(read_kept(&t).unwrap(), content);
        fs::write(&t, b"not zstd").unwrap();
        assert_eq!(read_kept(&t), None);
    }
}

//! The compressor's side of this host's digest records
//! (`digests`): this boot's table, opened or made, records read
//! and written in it, and the table grown (twice the slots, up to what
//! the limit gives) once the window written is more than half taken.
//! Only a regular file owned by the cache root's owner (the server's
//! `User`) that no one else may write is used; any other file at its
//! name is replaced, as the children would not trust it either.

use crate::digests::{self, SLOT, TABLE, WINDOW, WINDOW_BYTES};
use crate::key::{SourceHash, Version};
use crate::settings::CompressorSettings;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// This boot's table of digest records, open for reading and writing.
pub(super) struct Records {
    file: File,
    path: PathBuf,
    len: u64,
    /// The length it grows to at most (`digests::table_len`).
    most: u64,
}

/// Where this host's table is for this boot.
pub(super) fn table_path(settings: &CompressorSettings) -> PathBuf {
    settings.root.join(settings.host.records_dir()).join(TABLE)
}

impl Records {
    /// This boot's table under `settings.root`: the one there if it is
    /// one the children trust, else a new one, sparse, of the length the
    /// limit gives (`digests::table_len`).
    pub(super) fn open(settings: &CompressorSettings) -> io::Result<Records> {
        let path = table_path(settings);
        super::disk::dirs_for(&path)?;
        let owner = fs::metadata(&settings.root)?.uid();
        let most = digests::table_len(settings.max_size);
        for _ in 0..3 {
            let file = match existing(&path, owner)? {
                Some(file) => file,
                None => match create(&path, digests::table_len(0)) {
                    Ok(file) => file,
                    // Made by another compressor meanwhile: opened again.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(e),
                },
            };
            let len = file.metadata()?.len();
            return Ok(Records {
                file,
                path,
                len,
                most,
            });
        }
        Err(io::Error::other(format!(
            "{}: cannot be made or opened",
            path.display()
        )))
    }

    /// Twice as many slots (up to `most`) once a window is more than half
    /// taken (a window is a sample of the whole table, whoever wrote it:
    /// compressors sharing the root grow it alike): a table of few
    /// records takes few blocks, and a window is rarely full.
    /// Written whole beside the table and renamed over it, so a child
    /// reads the one or the other.
    fn grow(&mut self) -> io::Result<()> {
        let len = (self.len * 2).min(self.most);
        let mut old = vec![0u8; self.len as usize];
        self.file.read_exact_at(&mut old, 0)?;
        let mut table = vec![0u8; len as usize];
        for slot in old.chunks_exact(SLOT) {
            let Some((v, _)) = digests::decode(slot) else {
                continue;
            };
            let Some(at) = digests::window_of(&v, len) else {
                continue;
            };
            let window = &mut table[at as usize..at as usize + WINDOW_BYTES];
            let i = digests::slot_for(window, &v) * SLOT;
            window[i..i + SLOT].copy_from_slice(slot);
        }
        let name = format!(".{TABLE}.tmp{:x}", std::process::id());
        let tmp = self.path.with_file_name(name);
        let _ = fs::remove_file(&tmp);
        let file = create(&tmp, 0)?;
        file.write_all_at(&table, 0)?;
        fs::rename(&tmp, &self.path)?;
        (self.file, self.len) = (file, len);
        Ok(())
    }

    /// Opens the table again where another compressor of this host
    /// replaced it (grown): records written to the one replaced would
    /// be lost.
    fn follow(&mut self) -> io::Result<()> {
        let there = fs::symlink_metadata(&self.path).map(|m| (m.dev(), m.ino()));
        let mine = self.file.metadata().map(|m| (m.dev(), m.ino()))?;
        if there.is_ok_and(|t| t == mine) {
            return Ok(());
        }
        let owner = self.file.metadata()?.uid();
        if let Some(file) = existing(&self.path, owner)? {
            self.len = file.metadata()?.len();
            self.file = file;
        }
        Ok(())
    }

    /// The window of `v`'s record, and where it starts.
    fn window(&self, v: &Version) -> io::Result<([u8; WINDOW_BYTES], u64)> {
        let at = digests::window_of(v, self.len)
            .ok_or_else(|| io::Error::other("digest table too short"))?;
        let mut w = [0u8; WINDOW_BYTES];
        self.file.read_exact_at(&mut w, at)?;
        Ok((w, at))
    }

    /// The digest recorded for `v`, if any, in the table as it is now.
    pub(super) fn get(&mut self, v: &Version) -> Option<SourceHash> {
        self.follow().ok()?;
        let (w, _) = self.window(v).ok()?;
        digests::find(&w, v)
    }

    /// Records that `v` has the digest `source` (unless it is recorded
    /// already), growing the table once its window is more than half
    /// taken.
    pub(super) fn put(&mut self, v: &Version, source: &SourceHash) -> io::Result<()> {
        self.follow()?;
        let (w, at) = self.window(v)?;
        if digests::find(&w, v) == Some(*source) {
            return Ok(());
        }
        let i = digests::slot_for(&w, v);
        self.file
            .write_all_at(&digests::encode(v, source), at + (i * SLOT) as u64)?;
        let taken = w
            .chunks_exact(SLOT)
            .enumerate()
            .filter(|&(j, s)| j == i || digests::decode(s).is_some())
            .count();
        if taken * 2 > WINDOW && self.len < self.most {
            self.grow()?;
        }
        Ok(())
    }

    /// What the table takes on disk: its allocated blocks.
    pub(super) fn allocated(&self) -> u64 {
        self.file
            .metadata()
            .map_or(0, |m| super::disk::allocated(&m))
    }
}

/// The table at `path`, if one is there that the children trust
/// (regular, owned by `owner`, written by no one else, whole slots);
/// anything else there is removed.
fn existing(path: &Path, owner: u32) -> io::Result<Option<File>> {
    let opened = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path);
    let file = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        // A symlink (ELOOP), a directory, a fifo: not a table.
        Err(_) => return remove(path).map(|()| None),
    };
    let meta = file.metadata()?;
    let trusted = meta.is_file() && meta.uid() == owner && meta.mode() & 0o022 == 0;
    let len = meta.len();
    if !trusted || len < WINDOW_BYTES as u64 || len % SLOT as u64 != 0 {
        return remove(path).map(|()| None);
    }
    Ok(Some(file))
}

/// A new table of `len` bytes (sparse) at `path`, made exclusively,
/// readable by all and writable by its owner only.
fn create(path: &Path, len: u64) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(0o644)
        .open(path)?;
    file.set_len(len)?;
    Ok(file)
}

/// Removes what is at `path`: no table.
fn remove(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Local;

    fn v(n: u64) -> Version {
        Version {
            size: n,
            mtime_us: 7,
            local: Local {
                device: 1,
                inode: n,
                ctime_us: 9,
            },
        }
    }

    fn settings(d: &Path) -> CompressorSettings {
        CompressorSettings {
            root: d.to_path_buf(),
            max_size: 1 << 30,
            workers: 1,
            worker_nice: 0,
            levels: gdn_core::encode::Levels::default(),
            fast_levels: None,
            min_saving: 5.0,
            delta_levels: gdn_core::delta_codec::DeltaLevels::default(),
            host: crate::host::Host::this(),
        }
    }

    #[test]
    fn compressors_sharing_a_table_follow_it_when_one_grows_it() {
        let d = tempfile::tempdir().unwrap();
        let s = settings(d.path());
        let (mut one, mut two) = (Records::open(&s).unwrap(), Records::open(&s).unwrap());
        two.put(&v(0), &[1; 32]).unwrap();
        for n in 1..200 {
            one.put(&v(n), &[2; 32]).unwrap();
        }
        assert!(one.len > digests::table_len(0), "grown, and renamed over");
        // The other writes to the table there now, and reads it.
        assert_eq!(two.get(&v(0)), Some([1; 32]));
        assert_eq!(two.get(&v(150)), Some([2; 32]));
        two.put(&v(500), &[3; 32]).unwrap();
        assert_eq!(one.get(&v(500)), Some([3; 32]));
        // Writing by turns, neither alone fills half of it: it grows all
        // the same, and both find every record.
        let d = tempfile::tempdir().unwrap();
        let s = settings(d.path());
        let (mut one, mut two) = (Records::open(&s).unwrap(), Records::open(&s).unwrap());
        for n in 0..64 {
            let r = if n % 2 == 0 { &mut one } else { &mut two };
            r.put(&v(n), &[n as u8; 32]).unwrap();
        }
        for n in 0..64 {
            assert_eq!(one.get(&v(n)), Some([n as u8; 32]), "{n}");
            assert_eq!(two.get(&v(n)), Some([n as u8; 32]), "{n}");
        }
    }

    #[test]
    fn the_table_grows_with_its_records_and_keeps_them() {
        let d = tempfile::tempdir().unwrap();
        let settings = settings(d.path());
        let mut r = Records::open(&settings).unwrap();
        assert_eq!(r.len, digests::table_len(0), "small at first");
        const N: u64 = 3000;
        for n in 0..N {
            r.put(&v(n), &[n as u8; 32]).unwrap();
        }
        let kept = (0..N)
            .filter(|&n| r.get(&v(n)) == Some([n as u8; 32]))
            .count();
        // Grown as it filled: a window is seldom full.
        assert!(kept as u64 >= N * 99 / 100, "{kept} of {N} kept");
        assert!(r.len >= 2 * N * SLOT as u64 && r.len <= 8 * N * SLOT as u64);
        assert!(r.len < digests::table_len(settings.max_size));
        // Read back as the next compressor reads it.
        let mut again = Records::open(&settings).unwrap();
        assert_eq!(again.len, r.len);
        assert_eq!(again.get(&v(5)), r.get(&v(5)));
        // A table another user could write is not used.
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&r.path, fs::Permissions::from_mode(0o666)).unwrap();
        let mut fresh = Records::open(&settings).unwrap();
        assert_eq!(fresh.len, digests::table_len(0));
        assert_eq!(fresh.get(&v(5)), None);
    }
}

//! The compressor's side of this host's digest records
//! (`ondemand::digests`): this boot's table, opened or made, and records
//! read and written in it. Only a regular file owned by the cache root's
//! owner (the server's `User`) that no one else may write is used; any
//! other file at its name is replaced, as the children would not trust
//! it either.

use super::Settings;
use crate::ondemand::digests::{self, SLOT, TABLE, WINDOW_BYTES};
use crate::ondemand::key::{Source, Version};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// This boot's table of digest records, open for reading and writing.
pub(super) struct Records {
    file: File,
    len: u64,
}

/// Where this host's table is for this boot.
pub(super) fn table_path(settings: &Settings) -> PathBuf {
    settings.root.join(settings.host.records_dir()).join(TABLE)
}

impl Records {
    /// This boot's table under `settings.root`: the one there if it is
    /// one the children trust, else a new one, sparse, of the length the
    /// limit gives (`digests::table_len`).
    pub(super) fn open(settings: &Settings) -> io::Result<Records> {
        let path = table_path(settings);
        super::make::dirs_for(&path)?;
        let owner = fs::metadata(&settings.root)?.uid();
        for _ in 0..3 {
            if let Some(r) = Records::existing(&path, owner)? {
                return Ok(r);
            }
            let made = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .mode(0o644)
                .open(&path);
            match made {
                Ok(file) => {
                    let len = digests::table_len(settings.max_size);
                    file.set_len(len)?;
                    return Ok(Records { file, len });
                }
                // Made by another compressor meanwhile: opened again.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other(format!(
            "{}: cannot be made or opened",
            path.display()
        )))
    }

    /// The table at `path`, if one is there that the children trust;
    /// anything else there is removed.
    fn existing(path: &Path, owner: u32) -> io::Result<Option<Records>> {
        let opened = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
            .open(path);
        let file = match opened {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            // A symlink (ELOOP), a directory, a fifo: not a table.
            Err(_) => return remove(path),
        };
        let meta = file.metadata()?;
        let trusted = meta.is_file() && meta.uid() == owner && meta.mode() & 0o022 == 0;
        let len = meta.len();
        if !trusted || len < WINDOW_BYTES as u64 || len % SLOT as u64 != 0 {
            return remove(path);
        }
        Ok(Some(Records { file, len }))
    }

    /// The window of `v`'s record, and where it starts.
    fn window(&self, v: &Version) -> io::Result<([u8; WINDOW_BYTES], u64)> {
        let at = digests::window_of(v, self.len)
            .ok_or_else(|| io::Error::other("digest table too short"))?;
        let mut w = [0u8; WINDOW_BYTES];
        self.file.read_exact_at(&mut w, at)?;
        Ok((w, at))
    }

    /// The digest recorded for `v`, if any.
    pub(super) fn get(&self, v: &Version) -> Option<Source> {
        let (w, _) = self.window(v).ok()?;
        digests::find(&w, v)
    }

    /// Records that `v` has the digest `source` (unless it is recorded
    /// already).
    pub(super) fn put(&self, v: &Version, source: &Source) -> io::Result<()> {
        let (w, at) = self.window(v)?;
        if digests::find(&w, v) == Some(*source) {
            return Ok(());
        }
        let i = digests::slot_for(&w, v);
        self.file
            .write_all_at(&digests::encode(v, source), at + (i * SLOT) as u64)
    }

    /// What the table takes on disk: its allocated blocks.
    pub(super) fn allocated(&self) -> u64 {
        self.file
            .metadata()
            .map_or(0, |m| super::state::allocated(&m))
    }
}

/// Removes what is at `path`: no table.
fn remove(path: &Path) -> io::Result<Option<Records>> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(None),
    }
}

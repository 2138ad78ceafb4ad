//! Atomic writes (siblings, deltas, stored versions, a trained dictionary):
//! a temporary file in the target's directory that is fsynced and renamed
//! over the final name, or removed on any failure.
//!
//! A run killed at any moment leaves at worst a `.name.tmpXXXX` file, never a
//! truncated sibling under the name the server looks up.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Marker between the sibling name and the random tail of a temp name.
pub const TMP_MARK: &str = ".tmp";

/// True for names this module creates as temporaries (`.x.gz.tmp1a2b`:
/// a dot, a sibling's or a delta's name, `.tmp`, hex digits), so walks
/// never compress a leftover of a killed run and reruns may delete old
/// ones safely.
pub fn is_temp_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('.') else {
        return false;
    };
    let Some((sibling, tail)) = rest.rsplit_once(TMP_MARK) else {
        return false;
    };
    !tail.is_empty()
        && tail.chars().all(|c| c.is_ascii_hexdigit())
        && (gdn_core::coding::Coding::ALL.iter().any(|c| {
            c.suffixes()
                .iter()
                .any(|s| sibling.len() > s.len() && sibling.ends_with(s))
        }) || gdn_core::dictionary::parse_delta_name(sibling).is_some())
}

/// A file being written; removed on drop unless `commit` or `persist`
/// succeeded.
pub struct TempFile {
    path: PathBuf,
    file: Option<BufWriter<File>>,
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Hex digits that make a temporary's name unlikely to be taken: process
/// id, clock and a per-process counter mixed.
fn random_tail() -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mix = (u64::from(std::process::id()) << 32) ^ u64::from(t) ^ n.wrapping_mul(0x9e37_79b9);
    format!("{:x}", mix & 0xff_ffff_ffff)
}

impl TempFile {
    /// Creates a fresh temporary next to `final_path`, private until commit.
    pub fn new(final_path: &Path) -> io::Result<TempFile> {
        TempFile::with_mode(final_path, 0o600)
    }

    /// A temporary for a file that copies no original (`persist`): created
    /// with the mode `File::create` gives, 0o666 less the umask.
    pub fn for_new_file(final_path: &Path) -> io::Result<TempFile> {
        TempFile::with_mode(final_path, 0o666)
    }

    fn with_mode(final_path: &Path, mode: u32) -> io::Result<TempFile> {
        let dir = final_path.parent().unwrap_or(Path::new("."));
        let name = final_path
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
        for _ in 0..16 {
            let mut tmp_name = std::ffi::OsString::from(".");
            tmp_name.push(name);
            tmp_name.push(TMP_MARK);
            tmp_name.push(random_tail());
            let path = dir.join(tmp_name);
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .open(&path)
            {
                Ok(f) => {
                    // Held while written: a start's cleanup of orphaned
                    // temporaries (the on-demand cache's) leaves it alone,
                    // and the kernel drops the lock if the writer dies.
                    let _ = f.try_lock();
                    return Ok(TempFile {
                        path,
                        file: Some(BufWriter::with_capacity(64 * 1024, f)),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "cannot create a unique temporary file",
        ))
    }

    /// The temporary's own path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes, gives the file `meta`'s permissions, owner (when allowed)
    /// and mtime, fsyncs and renames it to `final_path`.
    pub fn commit(self, final_path: &Path, meta: &fs::Metadata) -> io::Result<()> {
        self.rename(final_path, |f| finish_file(f, meta))
    }

    /// Flushes, gives the file `meta`'s mtime and mode 0600 (whatever the
    /// source's mode and owner: a copy in the on-demand cache is the
    /// server user's alone, so no other local user can rewrite what is
    /// served), fsyncs and renames it to `final_path`.
    pub fn commit_private(self, final_path: &Path, meta: &fs::Metadata) -> io::Result<()> {
        self.rename(final_path, |f| {
            f.set_permissions(fs::Permissions::from_mode(0o600))?;
            f.set_times(fs::FileTimes::new().set_modified(meta.modified()?))?;
            f.sync_all()
        })
    }

    /// Flushes, fsyncs and renames the file to `final_path`, keeping the
    /// mode it was created with.
    pub fn persist(self, final_path: &Path) -> io::Result<()> {
        self.rename(final_path, File::sync_all)
    }

    /// Flushes, runs `finish` on the file and renames it to `final_path`.
    fn rename(
        mut self,
        final_path: &Path,
        finish: impl FnOnce(&File) -> io::Result<()>,
    ) -> io::Result<()> {
        let w = self
            .file
            .take()
            .ok_or_else(|| io::Error::other("temporary already closed"))?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        finish(&f)?;
        drop(f);
        fs::rename(&self.path, final_path)?;
        // Renamed: nothing left to clean up.
        self.path = PathBuf::new();
        Ok(())
    }
}

fn finish_file(f: &File, meta: &fs::Metadata) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    // Keep the original's owner so the server reads siblings as it reads
    // originals; only root may do this, and failing is harmless.
    let _ = std::os::unix::fs::fchown(f, Some(meta.uid()), Some(meta.gid()));
    f.set_permissions(fs::Permissions::from_mode(
        meta.permissions().mode() & 0o7777,
    ))?;
    let mut times = fs::FileTimes::new().set_modified(meta.modified()?);
    if let Ok(a) = meta.accessed() {
        times = times.set_accessed(a);
    }
    f.set_times(times)?;
    f.sync_all()
}

impl Write for TempFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.file {
            Some(f) => f.write(buf),
            None => Err(io::Error::other("temporary closed")),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        self.file = None;
        if !self.path.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn temp_names_are_recognised() {
        assert!(is_temp_name(".a.html.gz.tmp1f2e"));
        assert!(!is_temp_name("a.html.gz.tmp1f2e"));
        assert!(!is_temp_name(".a.tmp"));
        assert!(!is_temp_name(".profile"));
        assert!(!is_temp_name(".a.tmp-x"));
        assert!(!is_temp_name(".notes.tmp1"));
        assert!(!is_temp_name(".a.gz.tmpxyz"));
        assert!(!is_temp_name("..gz.tmp1"));
        assert!(is_temp_name(".a.zst.tmp0"));
    }

    #[test]
    fn commit_renames_with_mode_and_mtime() {
        let d = tempfile::tempdir().unwrap();
        let orig = d.path().join("a.txt");
        fs::write(&orig, b"hello").unwrap();
        fs::set_permissions(&orig, fs::Permissions::from_mode(0o640)).unwrap();
        let old = SystemTime::UNIX_EPOCH + std::time::Duration::new(1_000_000, 123_456_789);
        File::options()
            .write(true)
            .open(&orig)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let meta = fs::metadata(&orig).unwrap();
        let fin = d.path().join("a.txt.gz");
        let mut t = TempFile::new(&fin).unwrap();
        let tmp = t.path().to_owned();
        assert!(is_temp_name(tmp.file_name().unwrap().to_str().unwrap()));
        t.write_all(b"data").unwrap();
        t.commit(&fin, &meta).unwrap();
        assert!(!tmp.exists());
        let m = fs::metadata(&fin).unwrap();
        assert_eq!(m.mode() & 0o777, 0o640);
        assert_eq!(m.modified().unwrap(), old);
        assert_eq!(fs::read(&fin).unwrap(), b"data");
    }

    #[test]
    fn persist_renames_a_new_file() {
        let d = tempfile::tempdir().unwrap();
        let fin = d.path().join("dictionary.dat");
        fs::write(&fin, b"old").unwrap();
        let mut t = TempFile::for_new_file(&fin).unwrap();
        t.write_all(b"new").unwrap();
        t.persist(&fin).unwrap();
        assert_eq!(fs::read(&fin).unwrap(), b"new");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn dropped_temp_is_removed() {
        let d = tempfile::tempdir().unwrap();
        let fin = d.path().join("b.gz");
        let mut t = TempFile::new(&fin).unwrap();
        t.write_all(b"partial").unwrap();
        let tmp = t.path().to_owned();
        assert!(tmp.exists());
        drop(t);
        assert!(!tmp.exists());
        assert!(!fin.exists());
    }
}

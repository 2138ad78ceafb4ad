//! The copies made at the fast levels, kept across restarts: a stop
//! writes them to `fast-<pid>@<host>` in the cache root beside the
//! wanted set (`backlog`), each with its original's path and whether it
//! was served since, and the next compressor of the host reads them
//! back (and removes the file) once the writer is gone. So a copy made
//! fast before a restart is still made again at the best levels once
//! served after it; one served before is made again when the new
//! compressor is idle. A remake checks that the original still has the
//! copy's source bytes (`make::remake`), so an entry read back never
//! makes a copy of other bytes.

use super::index::CopyId;
use crate::key::Kind;
use gdn_core::coding::Coding;
use gdn_publish::atomic::TempFile;
use std::ffi::OsStr;
use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What an upgrades file starts with.
const MAGIC: &[u8] = b"gdn-fast 1\n";

/// Where a fast copy stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fast {
    /// Made at the fast levels, not served since.
    Made,
    /// Served since: to be made again at the best levels.
    Served,
}

/// A fast copy, its original's path, and where it stands.
pub(super) type Upgrade = (CopyId, PathBuf, Fast);

/// Writes `upgrades` at `path`, or removes the file when there are none.
pub(super) fn save(path: &Path, upgrades: &[Upgrade]) -> io::Result<()> {
    if upgrades.is_empty() {
        return match fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
    }
    let mut out = MAGIC.to_vec();
    for ((source, kind), original, fast) in upgrades {
        let (Kind::Coded(c), Ok(len)) = (kind, u16::try_from(original.as_os_str().len())) else {
            continue;
        };
        out.push(u8::from(*fast == Fast::Served));
        out.push(c.index() as u8);
        out.extend_from_slice(source);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(original.as_os_str().as_bytes());
    }
    let mut tmp = TempFile::new(path)?;
    tmp.write_all(&out)?;
    tmp.persist(path)
}

/// What the upgrades file at `path` holds, removing it; what cannot be
/// read ends it.
pub(super) fn load(path: &Path) -> io::Result<Vec<Upgrade>> {
    let bytes = fs::read(path)?;
    fs::remove_file(path)?;
    Ok(parse(&bytes))
}

/// The entries of an upgrades file.
fn parse(bytes: &[u8]) -> Vec<Upgrade> {
    let mut out = Vec::new();
    let Some(mut rest) = bytes.strip_prefix(MAGIC) else {
        return out;
    };
    while let Some((head, tail)) = rest.split_at_checked(36) {
        let fast = match head[0] {
            0 => Fast::Made,
            1 => Fast::Served,
            _ => break,
        };
        let Some(&c) = Coding::ALL.get(usize::from(head[1])) else {
            break;
        };
        let mut source = [0u8; 32];
        source.copy_from_slice(&head[2..34]);
        let len = usize::from(u16::from_le_bytes([head[34], head[35]]));
        let Some((original, tail)) = tail.split_at_checked(len) else {
            break;
        };
        let original = PathBuf::from(OsStr::from_bytes(original));
        out.push(((source, Kind::Coded(c)), original, fast));
        rest = tail;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upgrades_are_written_down_and_read_back_once() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("fast-1@here");
        let ups = vec![
            (
                ([1; 32], Kind::Coded(Coding::Br)),
                PathBuf::from("/www/a.html"),
                Fast::Made,
            ),
            (
                ([2; 32], Kind::Coded(Coding::Zstd)),
                PathBuf::from("/www/b c.css"),
                Fast::Served,
            ),
        ];
        save(&file, &ups).unwrap();
        assert_eq!(load(&file).unwrap(), ups);
        assert!(!file.exists(), "read once");
        save(&file, &[]).unwrap();
        assert!(!file.exists(), "nothing to keep, no file");
        // A file cut short keeps what is whole.
        save(&file, &ups).unwrap();
        let mut bytes = fs::read(&file).unwrap();
        bytes.truncate(bytes.len() - 3);
        assert_eq!(parse(&bytes), ups[..1]);
        assert_eq!(parse(b"not an upgrades file"), []);
    }
}

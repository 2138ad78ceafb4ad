//! Where an on-demand copy of a file version lives in the cache, and which
//! files are compressed on demand. Used on the request path: no heap.
//!
//! A copy is named by the version of the file it was made from (device,
//! inode, size, mtime, ctime: ctime moves whenever the content is
//! rewritten, even when the old mtime is put back), so a changed file is
//! simply a new name and a copy is never served for a version it was not
//! made from. The names fan out over 256 directories by inode.

use crate::coding::Coding;
use std::fmt::Write as _;

/// A file version as the cache keys it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Version {
    pub device: u64,
    pub inode: u64,
    pub size: u64,
    pub mtime_us: i64,
    pub ctime_us: i64,
}

/// What a copy holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The original in this coding.
    Coded(Coding),
    /// The identity content of a sibling (keyed by the sibling's version).
    Decoded,
}

impl Kind {
    /// The copy name's extension.
    pub fn ext(self) -> &'static str {
        match self {
            Kind::Coded(Coding::Zstd) => "zst",
            Kind::Coded(Coding::Br) => "br",
            Kind::Coded(Coding::Gzip) => "gz",
            Kind::Decoded => "id",
        }
    }

    /// The kind a copy name's extension says.
    pub fn from_ext(ext: &str) -> Option<Kind> {
        Some(match ext {
            "zst" => Kind::Coded(Coding::Zstd),
            "br" => Kind::Coded(Coding::Br),
            "gz" => Kind::Coded(Coding::Gzip),
            "id" => Kind::Decoded,
            _ => return None,
        })
    }
}

/// A copy's name, built on the stack.
pub struct NameBuf {
    buf: [u8; 96],
    len: usize,
}

impl Default for NameBuf {
    fn default() -> Self {
        NameBuf::new()
    }
}

impl NameBuf {
    pub fn new() -> Self {
        NameBuf {
            buf: [0; 96],
            len: 0,
        }
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII is ever written.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default()
    }
}

impl std::fmt::Write for NameBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let dst = self.buf.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// A copy's name relative to the cache root:
/// `<inode & 0xff>/<device>-<inode>-<size>-<mtime>-<ctime>.<ext>`, in hex.
pub fn copy_name<'b>(v: &Version, kind: Kind, buf: &'b mut NameBuf) -> &'b str {
    buf.len = 0;
    // 96 bytes hold the longest name (2 + 1 + 4 × 16 + 16 + 4 + 4).
    let _ = write!(
        buf,
        "{:02x}/{:x}-{:x}-{:x}-{:x}-{:x}.{}",
        v.inode & 0xff,
        v.device,
        v.inode,
        v.size,
        v.mtime_us,
        v.ctime_us,
        kind.ext()
    );
    buf.as_str()
}

/// The version and kind a copy's file name (without its directory) says.
pub fn parse_name(name: &str) -> Option<(Version, Kind)> {
    let (stem, ext) = name.rsplit_once('.')?;
    let kind = Kind::from_ext(ext)?;
    let mut f = stem.split('-').map(|p| u64::from_str_radix(p, 16));
    let mut next = || f.next()?.ok();
    let v = Version {
        device: next()?,
        inode: next()?,
        size: next()?,
        mtime_us: next()? as i64,
        ctime_us: next()? as i64,
    };
    Some((v, kind))
}

/// Files above this size are not compressed on demand: the compressor
/// holds one worker's work in memory at most this large, and such files
/// are better published with `gzip-disk-ng compress`.
pub const MAX_SIZE: u64 = 64 << 20;

/// Files below this size are not compressed: the publish tool's default
/// `--min-size`, under which the headers eat the saving.
pub const MIN_SIZE: u64 = 256;

/// Whether a file of this name and size is compressed on demand: the
/// publish tool's rules (no already-compressed formats, its minimum
/// size) and `MAX_SIZE`.
pub fn compressible(name: &[u8], size: u64) -> bool {
    if !(MIN_SIZE..=MAX_SIZE).contains(&size) {
        return false;
    }
    let base = name.rsplit(|&b| b == b'/').next().unwrap_or(name);
    std::str::from_utf8(base).is_ok_and(|n| !crate::publish::walk::is_compressed_name(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_fit() {
        let v = Version {
            device: u64::MAX,
            inode: u64::MAX,
            size: u64::MAX,
            mtime_us: -1,
            ctime_us: i64::MAX,
        };
        for kind in [
            Kind::Coded(Coding::Zstd),
            Kind::Coded(Coding::Br),
            Kind::Coded(Coding::Gzip),
            Kind::Decoded,
        ] {
            let mut b = NameBuf::new();
            let name = copy_name(&v, kind, &mut b).to_owned();
            assert!(name.starts_with("ff/"), "{name}");
            assert_eq!(parse_name(&name[3..]), Some((v, kind)), "{name}");
        }
        let small = Version {
            device: 8,
            inode: 0x1234,
            size: 300,
            mtime_us: 5,
            ctime_us: 6,
        };
        let mut b = NameBuf::new();
        assert_eq!(
            copy_name(&small, Kind::Coded(Coding::Br), &mut b),
            "34/8-1234-12c-5-6.br"
        );
        assert_eq!(parse_name("8-1234-12c-5.br"), None);
        assert_eq!(parse_name("8-1234-12c-5-6.tmp"), None);
    }

    #[test]
    fn the_publish_tools_rules_decide_what_is_compressed() {
        assert!(compressible(b"/srv/www/page.html", 1000));
        assert!(!compressible(b"/srv/www/page.html", 100));
        assert!(!compressible(b"/srv/www/page.html", MAX_SIZE + 1));
        assert!(!compressible(b"/srv/www/photo.JPG", 100_000));
        assert!(!compressible(b"/srv/www/a.tar.gz", 100_000));
        assert!(compressible(b"/srv/www.png/readme", 1000));
    }
}

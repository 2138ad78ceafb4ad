//! What names a copy in the cache: the version of the file it was made
//! from and what it holds, spelled as a file name with no allocation (the
//! request path computes one per request), and which files are compressed
//! on demand at all.
//!
//! A copy's name is `<fan-out>/<device>-<inode>-<size>-<mtime>-<ctime>.<ext>`
//! in lower-case hex, the fan-out being the inode's low byte (two digits),
//! so no directory holds more than a 256th of the cache. `ext` is `zst`,
//! `br` or `gz` for a compressed copy of an original, `id` for the decoded
//! (identity) content of a sibling, keyed by the sibling's version. A
//! zero-length file at a copy's name marks a version not worth
//! compressing: no valid stream of any coding is empty.

use crate::coding::{Coding, DeltaCoding};
use crate::publish::rules::is_compressed_ext;
use crate::publish::DEFAULT_MIN_SIZE;
use std::fs;
use std::os::unix::fs::MetadataExt;

/// One version of a file: a copy made from it is served only while the
/// file still has all of these. The ctime catches a rewrite that kept the
/// size and put the mtime back (`rsync -t`, `touch -r`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Version {
    pub device: u64,
    pub inode: u64,
    pub size: u64,
    /// Modification time, microseconds since the epoch (as APR keeps it).
    pub mtime_us: i64,
    /// Inode change time, microseconds since the epoch.
    pub ctime_us: i64,
}

impl Version {
    /// The version `meta` describes, as the request path's `apr_finfo_t`
    /// gives it (APR truncates nanoseconds to microseconds).
    pub fn of(meta: &fs::Metadata) -> Version {
        let us = |s: i64, ns: i64| s.saturating_mul(1_000_000).saturating_add(ns / 1000);
        Version {
            device: meta.dev(),
            inode: meta.ino(),
            size: meta.size(),
            mtime_us: us(meta.mtime(), meta.mtime_nsec()),
            ctime_us: us(meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// What a copy holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The original in this coding.
    Coded(Coding),
    /// A sibling's decoded content.
    Decoded,
}

impl Kind {
    /// The copy name's extension.
    pub const fn ext(self) -> &'static str {
        match self {
            Kind::Coded(Coding::Zstd) => "zst",
            Kind::Coded(Coding::Br) => "br",
            Kind::Coded(Coding::Gzip) => "gz",
            Kind::Decoded => "id",
        }
    }

    /// `ext` in four bytes (NUL-padded) and its length: a name ends with
    /// one store, made at compile time from `ext`.
    fn ext4(self) -> ([u8; 4], usize) {
        const fn pad(k: Kind) -> ([u8; 4], usize) {
            let e = k.ext().as_bytes();
            let mut four = [0; 4];
            let mut i = 0;
            while i < e.len() {
                four[i] = e[i];
                i += 1;
            }
            (four, e.len())
        }
        match self {
            Kind::Coded(Coding::Zstd) => const { pad(Kind::Coded(Coding::Zstd)) },
            Kind::Coded(Coding::Br) => const { pad(Kind::Coded(Coding::Br)) },
            Kind::Coded(Coding::Gzip) => const { pad(Kind::Coded(Coding::Gzip)) },
            Kind::Decoded => const { pad(Kind::Decoded) },
        }
    }

    /// The kind whose extension is `ext`.
    pub fn from_ext(ext: &str) -> Option<Kind> {
        [
            Kind::Coded(Coding::Zstd),
            Kind::Coded(Coding::Br),
            Kind::Coded(Coding::Gzip),
            Kind::Decoded,
        ]
        .into_iter()
        .find(|k| k.ext() == ext)
    }
}

/// Longest name: two fan-out digits, a slash, five 16-digit numbers, four
/// dashes, a dot and a three-letter extension make 91 bytes.
const NAME_MAX: usize = 96;

/// A copy's name, written on the stack.
pub struct NameBuf {
    bytes: [u8; NAME_MAX],
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
            bytes: [0; NAME_MAX],
            len: 0,
        }
    }

    /// The name written last (empty before any).
    pub fn as_str(&self) -> &str {
        // Only ASCII is ever pushed; the fallback cannot happen.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }

    /// The name written last, as bytes (ASCII).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// `n` as sixteen lower-case hex digits, most significant first.
#[inline(always)]
fn hex16(n: u64) -> [u8; 16] {
    let mut out = [0; 16];
    out[..8].copy_from_slice(&hex8((n >> 32) as u32).to_be_bytes());
    out[8..].copy_from_slice(&hex8(n as u32).to_be_bytes());
    out
}

/// `h` as eight hex digits in the bytes of a `u64`, most significant in
/// the highest byte: each nibble spread into its own byte, then turned
/// into its digit, all bytes at once.
#[inline(always)]
fn hex8(h: u32) -> u64 {
    const fn bytes(b: u8) -> u64 {
        u64::from_ne_bytes([b; 8])
    }
    let mut x = u64::from(h);
    x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
    x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
    x = (x | (x << 4)) & bytes(0x0f);
    // 1 in each byte holding 10..=15, which become 'a'..='f'.
    let letters = ((x + bytes(0x06)) >> 4) & bytes(0x01);
    x + bytes(b'0') + letters * u64::from(b'a' - b'0' - 10)
}

/// The fan-out directory of a copy of the file with this inode.
pub fn fan_out(inode: u64) -> u8 {
    (inode & 0xff) as u8
}

/// Writes the name of the `kind` copy of version `v` (relative to the
/// cache root) into `buf` and returns it. Times are written as their
/// 64-bit two's complement, so a time before 1970 still has one name.
pub fn copy_name<'b>(v: &Version, kind: Kind, buf: &'b mut NameBuf) -> &'b str {
    write_copy_name(v, kind, buf);
    buf.as_str()
}

/// `copy_name` as bytes, without checking them again.
pub fn write_copy_name<'b>(v: &Version, kind: Kind, buf: &'b mut NameBuf) -> &'b [u8] {
    // Written in place, each number as a block of digits of which the
    // significant ones are kept: this runs on every on-demand request.
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let fan = usize::from(fan_out(v.inode));
    let b = &mut buf.bytes;
    b[..3].copy_from_slice(&[HEX[fan >> 4], HEX[fan & 0xf], b'/']);
    let mut at = put_hex(b, 3, v.device, b'-');
    at = put_hex(b, at, v.inode, b'-');
    at = put_hex(b, at, v.size, b'-');
    at = put_hex(b, at, v.mtime_us as u64, b'-');
    at = put_hex(b, at, v.ctime_us as u64, b'.');
    let (four, len) = kind.ext4();
    if let Some(dst) = b.get_mut(at..).and_then(|d| d.first_chunk_mut::<4>()) {
        *dst = four;
        at += len;
    }
    buf.len = at;
    buf.as_bytes()
}

/// Writes `n`'s significant hex digits and `sep` at `at` in `b`; where
/// the next part goes. Five parts take at most 3 + 5 * 17 bytes, well
/// within `NAME_MAX`.
#[inline(always)]
fn put_hex(b: &mut [u8; NAME_MAX], at: usize, n: u64, sep: u8) -> usize {
    let count = (16 - n.leading_zeros() as usize / 4).max(1);
    let Some(dst) = b.get_mut(at..).and_then(|d| d.first_chunk_mut::<17>()) else {
        return at;
    };
    if count <= 8 {
        // Most devices, inodes and sizes: half the digits to make.
        dst[..8].copy_from_slice(&hex8((n as u32) << (4 * (8 - count))).to_be_bytes());
    } else {
        dst[..16].copy_from_slice(&hex16(n << (4 * (16 - count))));
    }
    dst[count] = sep;
    at + count + 1
}

/// The version and kind a copy's file name (without its fan-out
/// directory) stands for; `None` for any other name.
pub fn parse_copy_name(name: &str) -> Option<(Version, Kind)> {
    let (stem, ext) = name.rsplit_once('.')?;
    let kind = Kind::from_ext(ext)?;
    let mut parts = stem.split('-');
    let mut next = || -> Option<u64> {
        let p = parts.next()?;
        let canonical = !p.is_empty()
            && p.len() <= 16
            && p.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            && (p == "0" || !p.starts_with('0'));
        canonical.then(|| u64::from_str_radix(p, 16).ok())?
    };
    let v = Version {
        device: next()?,
        inode: next()?,
        size: next()?,
        mtime_us: next()? as i64,
        ctime_us: next()? as i64,
    };
    parts.next().is_none().then_some((v, kind))
}

/// Largest original compressed on demand: 64 MiB. Brotli at quality 11
/// takes under 1 MB of input a second on one core (0.8 MB/s over the
/// Apache manual), so a file this size already holds the (by default
/// single) compressor worker for over a minute while every other miss
/// waits; pages, scripts and styles are far smaller, and what is larger
/// (logs, data dumps) is better published with the tool.
pub const MAX_SIZE: u64 = 64 << 20;

/// Whether a file with this name (or path: only its last component
/// counts) and size is compressed on demand: the publish tool's rules
/// (not a temporary of its own, not a delta, not an already-compressed
/// format, at least its default `--min-size`) and at most `MAX_SIZE`.
pub fn compressible(name: &[u8], size: u64) -> bool {
    if !(DEFAULT_MIN_SIZE..=MAX_SIZE).contains(&size) {
        return false;
    }
    // One pass back from the end finds the base name, its last dot and
    // whether it is all ASCII: this runs on every on-demand request.
    let (mut start, mut dot, mut bits) = (0, None, 0u8);
    for (i, &b) in name.iter().enumerate().rev() {
        if b == b'/' {
            start = i + 1;
            break;
        }
        if b == b'.' && dot.is_none() {
            dot = Some(i);
        }
        bits |= b;
    }
    let base = &name[start..];
    let ext = dot.filter(|&i| i > start).map(|i| &name[i + 1..]);
    if ext.is_some_and(is_compressed_ext) {
        return false;
    }
    // The tool refuses names that are not UTF-8 too.
    if base.is_empty() || bits >= 0x80 && std::str::from_utf8(base).is_err() {
        return false;
    }
    let text = || std::str::from_utf8(base).unwrap_or_default();
    let temp = base.first() == Some(&b'.') && crate::publish::atomic::is_temp_name(text());
    let delta = ext.is_some_and(|e| DeltaCoding::ALL.iter().any(|d| d.token().as_bytes() == e))
        && crate::dictionary::parse_delta_name(text()).is_some();
    !temp && !delta
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v() -> Version {
        Version {
            device: 0x803,
            inode: 0x1_2345,
            size: 5000,
            mtime_us: 1_700_000_000_123_456,
            ctime_us: 1_700_000_001_000_000,
        }
    }

    #[test]
    fn names_round_trip() {
        let mut buf = NameBuf::new();
        assert_eq!(buf.as_str(), "");
        let kinds = [
            Kind::Coded(Coding::Zstd),
            Kind::Coded(Coding::Br),
            Kind::Coded(Coding::Gzip),
            Kind::Decoded,
        ];
        for k in kinds {
            let name = copy_name(&v(), k, &mut buf).to_owned();
            assert!(name.starts_with("45/803-12345-1388-"), "{name}");
            assert!(name.ends_with(&format!(".{}", k.ext())));
            let (dir, file) = name.split_once('/').unwrap();
            assert_eq!(dir, "45");
            assert_eq!(parse_copy_name(file), Some((v(), k)));
        }
        let extreme = Version {
            device: u64::MAX,
            inode: u64::MAX,
            size: u64::MAX,
            mtime_us: -1,
            ctime_us: i64::MIN,
        };
        let name = copy_name(&extreme, Kind::Decoded, &mut buf).to_owned();
        assert_eq!(name.len(), 90);
        assert!(name.starts_with("ff/ffffffffffffffff-"));
        let file = name.split_once('/').unwrap().1;
        assert_eq!(parse_copy_name(file), Some((extreme, Kind::Decoded)));
        let zero = Version {
            device: 0,
            inode: 0,
            size: 0,
            mtime_us: 0,
            ctime_us: 0,
        };
        assert_eq!(copy_name(&zero, Kind::Decoded, &mut buf), "00/0-0-0-0-0.id");
    }

    #[test]
    fn other_names_are_not_copies() {
        for bad in [
            "803-12345-1388-1-2",
            "803-12345-1388-1.zst",
            "803-12345-1388-1-2-3.zst",
            "803-12345-1388-1-2.txt",
            "803-012345-1388-1-2.zst",
            "803-12345-1388-1-2X.zst",
            "803-12345--1-2.zst",
            ".803-12345-1388-1-2.zst.tmp1a2b",
            "10000000000000000-1-1-1-1.gz",
        ] {
            assert_eq!(parse_copy_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn version_comes_from_metadata_in_microseconds() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a");
        fs::write(&p, b"12345").unwrap();
        let t = std::time::UNIX_EPOCH + std::time::Duration::new(1_000_000, 123_456_789);
        fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(t)
            .unwrap();
        let m = fs::metadata(&p).unwrap();
        let v = Version::of(&m);
        assert_eq!((v.inode, v.size), (m.ino(), 5));
        assert_eq!(v.mtime_us, 1_000_000_123_456);
        assert!(v.ctime_us > v.mtime_us);
    }

    #[test]
    fn compressible_is_the_publish_tools_rule() {
        use crate::publish::rules::compress_rule;
        let delta = format!("page.html.{}.dcz", "ab".repeat(32));
        let names: [&[u8]; 14] = [
            b"a.html",
            b"/x/.hidden",
            b".html",
            b"/x/a.PNG",
            b"a.tar.GZ",
            b"noext",
            b"/d.ir/noext",
            b"a.",
            b"/x/.a.html.br.tmp0f",
            b"/x/.a.html.tmpzz",
            delta.as_bytes(),
            b"x.dcz",
            b"a.verylongext",
            b"caf\xe9.png",
        ];
        for n in names {
            for size in [
                0,
                DEFAULT_MIN_SIZE - 1,
                DEFAULT_MIN_SIZE,
                MAX_SIZE,
                MAX_SIZE + 1,
            ] {
                let base = n.rsplit(|&b| b == b'/').next().unwrap_or(n);
                let rule = std::str::from_utf8(base).is_ok_and(|b| {
                    size <= MAX_SIZE
                        && !b.is_empty()
                        && !crate::publish::atomic::is_temp_name(b)
                        && compress_rule(b, size, DEFAULT_MIN_SIZE).is_none()
                });
                assert_eq!(compressible(n, size), rule, "{n:?} {size}");
            }
        }
    }

    #[test]
    fn hex_digits_match_the_formatter() {
        for n in [
            0,
            1,
            9,
            10,
            15,
            16,
            0xabc,
            0x803,
            u64::MAX,
            1 << 63,
            0x0123_4567_89ab_cdef,
        ] {
            assert_eq!(hex16(n), *format!("{n:016x}").as_bytes());
        }
        for digits in 0..=16 {
            let n = if digits == 0 {
                0
            } else {
                u64::MAX >> (64 - 4 * digits)
            };
            let v = Version {
                device: n,
                inode: n ^ 0x5a,
                size: n / 3,
                mtime_us: n as i64,
                ctime_us: (n >> 1) as i64,
            };
            let mut buf = NameBuf::new();
            let want = format!(
                "{:02x}/{:x}-{:x}-{:x}-{:x}-{:x}.gz",
                v.inode & 0xff,
                v.device,
                v.inode,
                v.size,
                v.mtime_us as u64,
                v.ctime_us as u64
            );
            assert_eq!(copy_name(&v, Kind::Coded(Coding::Gzip), &mut buf), want);
        }
    }

    #[test]
    fn compressible_follows_the_publish_rules() {
        assert!(compressible(b"/var/www/index.html", 5000));
        assert!(compressible(b"style.css", DEFAULT_MIN_SIZE));
        assert!(compressible(b"/srv/big.json", MAX_SIZE));
        assert!(!compressible(b"/srv/big.json", MAX_SIZE + 1));
        assert!(!compressible(b"tiny.html", DEFAULT_MIN_SIZE - 1));
        assert!(!compressible(b"/var/www/photo.JPG", 5000));
        assert!(!compressible(b"/var/www/page.html.gz", 5000));
        assert!(!compressible(b"/var/www/.page.html.gz.tmp1a2b", 5000));
        let delta = format!("/d/app.js.{}.dcz", "ab".repeat(32));
        assert!(!compressible(delta.as_bytes(), 5000));
        assert!(!compressible(b"/var/www/caf\xe9.html", 5000));
        assert!(!compressible(b"/var/www/", 5000));
    }
}

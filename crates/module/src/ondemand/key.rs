//! What names a copy in the cache: the version of the file it was made
//! from and what it holds, spelled as a file name written on the stack,
//! and which files are compressed on demand at all.
//!
//! A copy's name is `<fan-out>/<path>-<size>-<mtime>.<ext>` in lower-case
//! hex, `path` being a 64-bit hash of where the file is as every server of
//! a fleet sees it (`path_key`) and the fan-out its low byte (two digits),
//! so no directory holds more than a 256th of the cache. Nothing in a
//! name is local to one host (no device, inode or ctime): servers that
//! hold rsync'd copies of one docroot find each other's copies in a
//! shared cache root. `ext` is `zst`,
//! `br` or `gz` for a compressed copy of an original, `id` for the decoded
//! (identity) content of a sibling, keyed by the sibling's version, and
//! `<64 hex SHA-256 of a dictionary>.dcz` or `.dcb` for a delta of the
//! version against that dictionary (deltas on demand). A zero-length file
//! at a copy's name marks a version not worth compressing (or a delta not
//! worth sending): no valid stream of any coding is empty.

use gdn_core::coding::{Coding, DeltaCoding};
use gdn_core::dictionary::{self, DeltaSuffix, Hash};
use gdn_core::publish::atomic::is_temp_name;
use gdn_core::publish::rules::compress_rule;
use gdn_core::publish::DEFAULT_MIN_SIZE;
use std::fs;
use std::os::unix::fs::MetadataExt;

/// One version of a file, as every server holding a copy of it sees it:
/// where it is (`path_key`), its size and its mtime. `rsync -t` and
/// `cp -a` keep all three, so a fleet's servers name one version alike;
/// device, inode and ctime differ between hosts and are left out. A copy
/// made from a version is served only while the file still has these.
/// What this cannot tell apart, a rewrite keeping size and mtime, rsync
/// itself skips too (without `--checksum`); on one host the compressor
/// still reads only the very file a request judged (`local`).
///
/// Two versions are equal when their names are: `local` is left out of
/// equality and hashing.
#[derive(Clone, Copy, Debug)]
pub struct Version {
    /// `path_key` of the file (or, for a decoded copy, of the original
    /// the sibling stands for).
    pub path: u64,
    pub size: u64,
    /// Modification time, microseconds since the epoch (as APR keeps it).
    pub mtime_us: i64,
    /// Which file this is on the host that judged it; not in the name.
    pub local: Local,
}

/// A file's identity on one host: device, inode and ctime (which moves
/// even when an in-place rewrite keeps the old size and mtime). Carried
/// by a job from the child that judged the file to the compressor on the
/// same host, so a name swapped for a symlink, a hard link or another
/// file after Apache's checks is never read (`make::pin`). Unknown
/// (zero) for versions read back from names and records: they are then
/// checked by size and mtime only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Local {
    pub device: u64,
    pub inode: u64,
    pub ctime_us: i64,
}

impl Local {
    pub const UNKNOWN: Local = Local {
        device: 0,
        inode: 0,
        ctime_us: 0,
    };

    /// The identity `meta` describes, in APR's microseconds.
    pub fn of(meta: &fs::Metadata) -> Local {
        let (s, ns) = (meta.ctime(), meta.ctime_nsec());
        Local {
            device: meta.dev(),
            inode: meta.ino(),
            ctime_us: s.saturating_mul(1_000_000).saturating_add(ns / 1000),
        }
    }
}

impl PartialEq for Version {
    fn eq(&self, o: &Version) -> bool {
        (self.path, self.size, self.mtime_us) == (o.path, o.size, o.mtime_us)
    }
}

impl Eq for Version {}

impl std::hash::Hash for Version {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (self.path, self.size, self.mtime_us).hash(h);
    }
}

impl Version {
    /// The version of what is named by content alone (`Kind::Kept`).
    pub const NONE: Version = Version {
        path: 0,
        size: 0,
        mtime_us: 0,
        local: Local::UNKNOWN,
    };

    /// The version at `path` (its `path_key`) that `meta` describes, as
    /// the request path's `apr_finfo_t` gives it (APR truncates
    /// nanoseconds to microseconds).
    pub fn of(path: u64, meta: &fs::Metadata) -> Version {
        Version {
            path,
            size: meta.size(),
            mtime_us: mtime_us(meta),
            local: Local::of(meta),
        }
    }

    /// Whether `meta` still has this version's size and mtime, and, when
    /// this version knows it, its device, inode and ctime.
    pub fn matches(&self, meta: &fs::Metadata) -> bool {
        let known = self.local != Local::UNKNOWN;
        meta.size() == self.size
            && mtime_us(meta) == self.mtime_us
            && (!known || Local::of(meta) == self.local)
    }
}

/// A file's mtime in microseconds, as APR keeps it.
fn mtime_us(meta: &fs::Metadata) -> i64 {
    let (s, ns) = (meta.mtime(), meta.mtime_nsec());
    s.saturating_mul(1_000_000).saturating_add(ns / 1000)
}

/// Where a file is, as every server of a fleet names it, hashed (FNV-1a,
/// 64 bits: no allocation, a few ns per request): the virtual host's
/// `ServerName`, then the path below its `DocumentRoot` when the file is
/// there (else the whole path). Servers whose docroots lie at different
/// places still agree; two virtual hosts never share a key, so one
/// site's file can never be served for another's.
pub fn path_key(server: &[u8], docroot: &[u8], path: &[u8]) -> u64 {
    let docroot = docroot.strip_suffix(b"/").unwrap_or(docroot);
    let below = (!docroot.is_empty())
        .then(|| path.strip_prefix(docroot))
        .flatten()
        .filter(|rest| rest.first() == Some(&b'/'));
    let (tag, rest): (&[u8], &[u8]) = match below {
        Some(rest) => (b"\0r", rest),
        None => (b"\0a", path),
    };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in server.iter().chain(tag).chain(rest) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// What a copy holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The original in this coding.
    Coded(Coding),
    /// A sibling's decoded content.
    Decoded,
    /// A delta of the original against the dictionary with this SHA-256.
    Delta(DeltaCoding, Hash),
    /// An earlier version's content, by its SHA-256, zstd-compressed: a
    /// dictionary for deltas on demand. Named by its hash alone
    /// (`kept/<2 hex>/<64 hex>.zst`); its version is `Version::NONE`.
    Kept(Hash),
}

impl Kind {
    /// The copy name's extension.
    pub const fn ext(self) -> &'static str {
        match self {
            Kind::Coded(Coding::Zstd) | Kind::Kept(_) => "zst",
            Kind::Coded(Coding::Br) => "br",
            Kind::Coded(Coding::Gzip) => "gz",
            Kind::Decoded => "id",
            Kind::Delta(DeltaCoding::Dcz, _) => "dcz",
            Kind::Delta(DeltaCoding::Dcb, _) => "dcb",
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

/// Longest name: two fan-out digits, a slash, three 16-digit numbers, two
/// dashes, a dot and a three-letter extension make 57 bytes; a delta's
/// 64 hex digits and their dot 65 more.
const NAME_MAX: usize = 160;

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

    /// Appends a byte; at most 122 are ever written (see `NAME_MAX`).
    fn push(&mut self, b: u8) {
        if let Some(slot) = self.bytes.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        }
    }

    /// Appends `h` in 64 lower-case hex digits.
    fn push_hash(&mut self, h: &Hash) {
        for &b in h {
            self.push(b"0123456789abcdef"[usize::from(b >> 4)]);
            self.push(b"0123456789abcdef"[usize::from(b & 0xf)]);
        }
    }

    /// Appends an ASCII string (cut at `NAME_MAX`, which no name reaches).
    fn push_str(&mut self, s: &str) {
        let end = (self.len + s.len()).min(NAME_MAX);
        self.bytes[self.len..end].copy_from_slice(&s.as_bytes()[..end - self.len]);
        self.len = end;
    }

    /// Appends `v` as `version_stem` spells it.
    fn push_version(&mut self, v: &Version) {
        self.push_hex(v.path);
        self.push(b'-');
        self.push_hex(v.size);
        self.push(b'-');
        self.push_hex(v.mtime_us as u64);
    }

    /// Appends `n` in lower-case hex, without leading zeros.
    fn push_hex(&mut self, n: u64) {
        let digits = (64 - n.leading_zeros()).div_ceil(4).max(1);
        for i in (0..digits).rev() {
            self.push(b"0123456789abcdef"[(n >> (4 * i)) as usize & 0xf]);
        }
    }
}

/// The directory of kept versions (`Kind::Kept`) under the cache root.
pub const KEPT_DIR: &str = "kept";

/// The directory of site dictionaries under the cache root.
pub const SITE_DIR: &str = "sites";

/// Where site dictionaries were kept while a page joined one unless
/// served to an authenticated user: pages some clients only may read
/// could be listed there, so the compressor removes it at start-up.
pub const RETIRED_SITE_DIR: &str = "site";

/// The name, under the cache root, of a site's directory: its host key
/// (`host:port`) hashed, so any host name makes one safe name.
pub fn site_dir_name(host_key: &[u8]) -> String {
    let hex = dictionary::to_hex(&dictionary::hash(host_key));
    format!("{SITE_DIR}/{hex}")
}

/// The current site dictionary's file in a site's directory: what the
/// module serves at `GzipDiskNgSiteDictionary`.
pub const SITE_CURRENT: &str = "current.dat";

/// The current site dictionary of the host `host_key`, under the cache
/// root: as it is (`None`), or in a coding.
pub fn site_current_name(host_key: &[u8], coding: Option<Coding>) -> String {
    match coding {
        None => format!("{}/{SITE_CURRENT}", site_dir_name(host_key)),
        Some(c) => format!("{}/{}", site_dir_name(host_key), site_current_coded(c)),
    }
}

/// The current site dictionary's file in a coding, in a site's
/// directory: `current.dat.zst`, `.br`, `.gz`.
pub fn site_current_coded(c: Coding) -> String {
    format!("{SITE_CURRENT}{}", c.suffixes()[0])
}

/// Hex digits of a dictionary's SHA-256 its URL carries (`?h=`): 64
/// bits, so no two dictionaries of a site meet.
pub const SITE_NAME_HEX: usize = 16;

/// A site dictionary's file under the name its URL gives it, in a site's
/// directory: `v-<16 hex>.dat`, then `.<ext>` (a coding's suffix without
/// its dot, or `pages`: the pages it learned).
pub fn site_named(h: &Hash, ext: Option<&str>) -> String {
    site_named_hex(&dictionary::to_hex(h)[..SITE_NAME_HEX], ext)
}

/// `site_named` of the hex its URL carries.
pub fn site_named_hex(hex: &str, ext: Option<&str>) -> String {
    match ext {
        None => format!("v-{hex}.dat"),
        Some(e) => format!("v-{hex}.dat.{e}"),
    }
}

/// The site dictionary of the host `host_key` whose URL carries `hex`,
/// under the cache root: as it is (`None`), or in a coding.
pub fn site_named_name(host_key: &[u8], hex: &str, coding: Option<Coding>) -> String {
    let ext = coding.map(|c| &c.suffixes()[0][1..]);
    format!("{}/{}", site_dir_name(host_key), site_named_hex(hex, ext))
}

/// The kept version a file name in `kept/<2 hex>/` stands for.
pub fn parse_kept_name(name: &str) -> Option<Hash> {
    let hex = name.strip_suffix(".zst")?;
    dictionary::from_hex(hex).filter(|h| dictionary::to_hex(h) == hex)
}

/// The fan-out directory of a copy of the file with this `path_key`.
pub fn fan_out(path: u64) -> u8 {
    (path & 0xff) as u8
}

/// Writes the name of the `kind` copy of version `v` (relative to the
/// cache root) into `buf` and returns it. Times are written as their
/// 64-bit two's complement, so a time before 1970 still has one name.
pub fn copy_name<'b>(v: &Version, kind: Kind, buf: &'b mut NameBuf) -> &'b str {
    write_copy_name(v, kind, buf);
    buf.as_str()
}

/// `copy_name` as bytes.
pub fn write_copy_name<'b>(v: &Version, kind: Kind, buf: &'b mut NameBuf) -> &'b [u8] {
    // Digits by hand, not `write!`: formatting cost over 1 % of an
    // on-demand hit (bench/ondemand_callgrind.sh).
    buf.len = 0;
    if let Kind::Kept(h) = &kind {
        buf.push_str(KEPT_DIR);
        buf.push(b'/');
        buf.push_hex(u64::from(h[0] >> 4));
        buf.push_hex(u64::from(h[0] & 0xf));
        buf.push(b'/');
        buf.push_hash(h);
        buf.push_str(".zst");
        return buf.as_bytes();
    }
    let fan = fan_out(v.path);
    buf.push_hex(u64::from(fan >> 4));
    buf.push_hex(u64::from(fan & 0xf));
    buf.push(b'/');
    buf.push_version(v);
    match kind {
        // A delta's name ends as a published delta's does.
        Kind::Delta(d, h) => buf.push_str(DeltaSuffix::new(&h, d).as_str()),
        _ => {
            buf.push(b'.');
            buf.push_str(kind.ext());
        }
    }
    buf.as_bytes()
}

/// A version as copy names spell it, `<path>-<size>-<mtime>`
/// in lower-case hex: how the compressor's histories name versions too.
pub fn version_stem<'b>(v: &Version, buf: &'b mut NameBuf) -> &'b str {
    buf.len = 0;
    buf.push_version(v);
    buf.as_str()
}

/// The version `version_stem` spelled; `None` for anything else.
pub fn parse_version_stem(stem: &str) -> Option<Version> {
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
        path: next()?,
        size: next()?,
        mtime_us: next()? as i64,
        local: Local::UNKNOWN,
    };
    parts.next().is_none().then_some(v)
}

/// Whether `name` is a copy as the cache named them before names left
/// out device, inode and ctime (`<device>-<inode>-<size>-<mtime>-<ctime>`):
/// never served under the current names, removed at start.
pub fn is_old_copy_name(name: &str) -> bool {
    let stem = match dictionary::parse_delta_name(name) {
        Some((stem, ..)) => Some(stem),
        None => name
            .rsplit_once('.')
            .filter(|(_, ext)| Kind::from_ext(ext).is_some())
            .map(|(stem, _)| stem),
    };
    stem.is_some_and(|stem| {
        let parts: Vec<&str> = stem.split('-').collect();
        parts.len() == 5
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.len() <= 16 && p.bytes().all(|b| b.is_ascii_hexdigit()))
    })
}

/// The version and kind a copy's file name (without its fan-out
/// directory) stands for; `None` for any other name.
pub fn parse_copy_name(name: &str) -> Option<(Version, Kind)> {
    let (stem, kind) = match dictionary::parse_delta_name(name) {
        Some((stem, h, d)) => (stem, Kind::Delta(d, h)),
        None => {
            let (stem, ext) = name.rsplit_once('.')?;
            (stem, Kind::from_ext(ext)?)
        }
    };
    Some((parse_version_stem(stem)?, kind))
}

/// Largest original compressed on demand: 64 MiB. Brotli at quality 11
/// is slow, so a file this size already holds the (by default single)
/// compressor worker for a long while, and every other miss waits; pages,
/// scripts and styles are far smaller, and what is larger (logs, data
/// dumps) is better published with the tool.
pub const MAX_SIZE: u64 = 64 << 20;

/// Whether a file with this name (or path: only its last component
/// counts) and size is compressed on demand: the publish tool's rules
/// (not a temporary of its own, not a delta, not an already-compressed
/// format, at least its default `--min-size`) and at most `MAX_SIZE`.
pub fn compressible(name: &[u8], size: u64) -> bool {
    let base = name.rsplit(|&b| b == b'/').next().unwrap_or_default();
    // The tool refuses names that are not UTF-8 too.
    let Ok(base) = std::str::from_utf8(base) else {
        return false;
    };
    size <= MAX_SIZE
        && !base.is_empty()
        && !is_temp_name(base)
        && compress_rule(base, size, DEFAULT_MIN_SIZE).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v() -> Version {
        Version {
            path: 0x803_0001_2345,
            size: 5000,
            mtime_us: 1_700_000_000_123_456,
            local: Local::UNKNOWN,
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
            assert!(name.starts_with("45/80300012345-1388-"), "{name}");
            assert!(name.ends_with(&format!(".{}", k.ext())));
            let (dir, file) = name.split_once('/').unwrap();
            assert_eq!(dir, "45");
            assert_eq!(parse_copy_name(file), Some((v(), k)));
        }
        let extreme = Version {
            path: u64::MAX,
            size: u64::MAX,
            mtime_us: i64::MIN,
            local: Local::UNKNOWN,
        };
        let name = copy_name(&extreme, Kind::Decoded, &mut buf).to_owned();
        assert_eq!(name.len(), 56);
        assert!(name.starts_with("ff/ffffffffffffffff-"));
        let file = name.split_once('/').unwrap().1;
        assert_eq!(parse_copy_name(file), Some((extreme, Kind::Decoded)));
        assert_eq!(
            copy_name(&Version::NONE, Kind::Decoded, &mut buf),
            "00/0-0-0.id"
        );
        let delta = Kind::Delta(DeltaCoding::Dcb, [0xab; 32]);
        let name = copy_name(&extreme, delta, &mut buf).to_owned();
        assert_eq!(name.len(), 122);
        assert!(
            name.ends_with(&format!(".{}.dcb", "ab".repeat(32))),
            "{name}"
        );
        let file = name.split_once('/').unwrap().1;
        assert_eq!(parse_copy_name(file), Some((extreme, delta)));
        let kept = copy_name(&Version::NONE, Kind::Kept([0xc3; 32]), &mut buf).to_owned();
        assert_eq!(kept, format!("kept/c3/{}.zst", "c3".repeat(32)));
        let file = kept.rsplit_once('/').unwrap().1;
        assert_eq!(parse_kept_name(file), Some([0xc3; 32]));
        assert_eq!(parse_kept_name(&file.to_uppercase()), None);
        let dcz = format!("1-2-3.{}.dcz", "0f".repeat(32));
        let want = Kind::Delta(DeltaCoding::Dcz, [0x0f; 32]);
        assert_eq!(parse_copy_name(&dcz).map(|p| p.1), Some(want));
    }

    #[test]
    fn other_names_are_not_copies() {
        for bad in [
            "12345-1388-1",
            "12345-1388.zst",
            "803-12345-1388-1-2.zst",
            "12345-1388-1.txt",
            "012345-1388-1.zst",
            "12345-1388-1X.zst",
            "12345--1.zst",
            ".12345-1388-1.zst.tmp1a2b",
            "10000000000000000-1-1.gz",
            "1-2-3.dcz",
            "1-2-3.abcd.dcz",
            "1-2-3.id.dcz",
        ] {
            assert_eq!(parse_copy_name(bad), None, "{bad}");
        }
        let old_delta = format!("1-2-3-4-5.{}.dcb", "0f".repeat(32));
        for old in ["803-12345-1388-1-2.zst", "1-2-3-4-5.id", &old_delta] {
            assert!(is_old_copy_name(old), "{old}");
        }
        for new in ["12345-1388-1.zst", "803-12345-1388-1-2.txt", "kept"] {
            assert!(!is_old_copy_name(new), "{new}");
        }
    }

    /// Sets the mtime of `p` to one with microseconds and nanoseconds.
    fn set_mtime(p: &std::path::Path) {
        let t = std::time::UNIX_EPOCH + std::time::Duration::new(1_000_000, 123_456_789);
        let f = fs::File::options().write(true).open(p).unwrap();
        f.set_modified(t).unwrap();
    }

    #[test]
    fn version_comes_from_metadata_in_microseconds() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a");
        fs::write(&p, b"12345").unwrap();
        set_mtime(&p);
        let m = fs::metadata(&p).unwrap();
        let v = Version::of(7, &m);
        assert_eq!((v.path, v.size), (7, 5));
        assert_eq!(v.mtime_us, 1_000_000_123_456);
        assert!(v.matches(&m));
        assert_eq!((v.local.inode, v.local.device), (m.ino(), m.dev()));
        assert!(v.local.ctime_us > v.mtime_us);
        fs::write(&p, b"123456").unwrap();
        assert!(!v.matches(&fs::metadata(&p).unwrap()));
        // Another file of the same size and mtime: not the one judged,
        // unless the version does not know which file it was.
        let q = d.path().join("b");
        fs::write(&q, b"12345").unwrap();
        set_mtime(&q);
        let other = fs::metadata(&q).unwrap();
        let judged = Version::of(7, &m);
        assert!(!judged.matches(&other));
        let named = Version {
            local: Local::UNKNOWN,
            ..judged
        };
        assert!(named.matches(&other) && named == judged);
    }

    #[test]
    fn path_keys_are_where_the_file_is_below_its_docroot() {
        let a = path_key(b"www.example", b"/srv/a/", b"/srv/a/x/page.html");
        assert_eq!(
            a,
            path_key(b"www.example", b"/var/www", b"/var/www/x/page.html")
        );
        assert_ne!(
            a,
            path_key(b"other.example", b"/srv/a", b"/srv/a/x/page.html")
        );
        assert_ne!(
            a,
            path_key(b"www.example", b"/srv/a", b"/srv/a/x/other.html")
        );
        // Outside the docroot (an Alias): the whole path.
        let out = path_key(b"www.example", b"/srv/a", b"/srv/ab/x/page.html");
        assert_eq!(
            out,
            path_key(b"www.example", b"/srv/b", b"/srv/ab/x/page.html")
        );
        assert_ne!(
            out,
            path_key(b"www.example", b"/srv", b"/srv/ab/x/page.html")
        );
        assert_ne!(a, path_key(b"www.example", b"", b"/x/page.html"));
    }

    #[test]
    fn compressible_is_the_publish_tools_rule() {
        use gdn_core::publish::rules::compress_rule;
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
                        && !gdn_core::publish::atomic::is_temp_name(b)
                        && compress_rule(b, size, DEFAULT_MIN_SIZE).is_none()
                });
                assert_eq!(compressible(n, size), rule, "{n:?} {size}");
            }
        }
    }

    #[test]
    fn names_of_every_length() {
        for digits in 0..=16 {
            let n = if digits == 0 {
                0
            } else {
                u64::MAX >> (64 - 4 * digits)
            };
            let v = Version {
                path: n ^ 0x5a,
                size: n / 3,
                mtime_us: n as i64,
                local: Local::UNKNOWN,
            };
            let mut buf = NameBuf::new();
            let want = format!(
                "{:02x}/{:x}-{:x}-{:x}.gz",
                v.path & 0xff,
                v.path,
                v.size,
                v.mtime_us as u64
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

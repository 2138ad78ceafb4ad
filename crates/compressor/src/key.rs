//! What names a copy in the cache: the SHA-256 of the bytes it was made
//! from and what it holds, spelled as a file name written on the stack;
//! what names a file version on this host (`Version`, and the record of
//! its digest); and which files are compressed on demand at all.
//!
//! A copy's name is `<fan-out>/<source>.<ext>`, `source` being the 64
//! lower-case hex digits of the SHA-256 of its source bytes and the
//! fan-out their first two, so no directory holds more than a 256th of
//! the cache. The source of a compressed copy (`ext` `zst`, `br` or
//! `gz`) and of a delta (`<64 hex SHA-256 of the dictionary>.dcz` or
//! `.dcb`) is the original's content; the source of a decoded copy
//! (`zst.id`, `br.id`, `gz.id`: the coding it was decoded from) is the
//! sibling's own bytes. A name thus says nothing of where a file is: a
//! copy is served for a file only while that very file has the source's
//! digest (`memo::source`), so no copy crosses from one file, virtual
//! host or upload folder to another, and identical files share their
//! copies, on one server or across a fleet sharing the cache root. A
//! zero-length file at a copy's name marks a source not worth
//! compressing (or a delta not worth sending): no valid stream of any
//! coding is empty.
//!
//! What digest a file version has is recorded by the compressor, which
//! learns it while it reads the file, in a table of this host's own
//! (`digests`).

use gdn_core::coding::{Coding, DeltaCoding};
use gdn_core::dictionary::{self, DeltaSuffix, Hash};
use gdn_core::rules::compress_rule;
use gdn_core::types::Types;
use gdn_publish::atomic::is_temp_name;
use gdn_publish::DEFAULT_MIN_SIZE;
use std::fs;
use std::os::unix::fs::MetadataExt;

/// The SHA-256 of a copy's source bytes: what names it.
pub type SourceHash = Hash;

/// One version of a file on this host: its size, its mtime, and which
/// file it is (device, inode, ctime). A job names it, the compressor
/// reads only a file that still is it (`make::pin`), and the digest of
/// its bytes is recorded under it. An in-place rewrite that keeps size
/// and mtime moves the ctime: another version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Version {
    pub size: u64,
    /// Modification time, microseconds since the epoch (as APR keeps it).
    pub mtime_us: i64,
    /// Which file this is on this host.
    pub local: Local,
}

/// A file's identity on one host: device, inode and ctime (which moves
/// even when an in-place rewrite keeps the old size and mtime), so a name
/// swapped for a symlink, a hard link or another file after Apache's
/// checks is never read (`make::pin`). Unknown (zero) for versions read
/// back from the site's page lists: they are then checked by size and
/// mtime only, and what is read from them is named by its own digest.
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

impl Version {
    /// No version: what site page lists fill in before their fields.
    pub const NONE: Version = Version {
        size: 0,
        mtime_us: 0,
        local: Local::UNKNOWN,
    };

    /// The version `meta` describes, as the request path's `apr_finfo_t`
    /// gives it (APR truncates nanoseconds to microseconds).
    pub fn of(meta: &fs::Metadata) -> Version {
        Version {
            size: meta.size(),
            mtime_us: mtime_us(meta),
            local: Local::of(meta),
        }
    }

    /// Size, mtime, device, inode and ctime, in this order (a negative
    /// time as its two's complement).
    fn fields(&self) -> [u64; 5] {
        [
            self.size,
            self.mtime_us as u64,
            self.local.device,
            self.local.inode,
            self.local.ctime_us as u64,
        ]
    }

    /// Bytes of `to_le_bytes`: five 64-bit numbers.
    pub const BYTES: usize = 40;

    /// The version as jobs and digest records carry it: size, mtime,
    /// device, inode and ctime, each 8 bytes little-endian.
    pub fn to_le_bytes(&self) -> [u8; Version::BYTES] {
        let mut b = [0u8; Version::BYTES];
        for (chunk, f) in b.chunks_exact_mut(8).zip(self.fields()) {
            chunk.copy_from_slice(&f.to_le_bytes());
        }
        b
    }

    /// The version `to_le_bytes` wrote.
    pub fn from_le_bytes(b: &[u8; Version::BYTES]) -> Version {
        let f = |i: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[i * 8..i * 8 + 8]);
            u64::from_le_bytes(x)
        };
        Version {
            size: f(0),
            mtime_us: f(1) as i64,
            local: Local {
                device: f(2),
                inode: f(3),
                ctime_us: f(4) as i64,
            },
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

/// What a copy holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The original in this coding.
    Coded(Coding),
    /// A sibling's decoded content; the sibling is in this coding.
    Decoded(Coding),
    /// A delta of the original against the dictionary with this SHA-256.
    Delta(DeltaCoding, Hash),
    /// An earlier version's content, by its SHA-256, zstd-compressed: a
    /// dictionary for deltas on demand. Named by its hash alone
    /// (`kept/<2 hex>/<64 hex>.zst`), which is its source too.
    Kept(Hash),
}

/// A coding's extension in copy names.
const fn coding_ext(c: Coding) -> &'static str {
    match c {
        Coding::Zstd => "zst",
        Coding::Br => "br",
        Coding::Gzip => "gz",
    }
}

/// The coding whose extension is `ext`.
fn coding_of_ext(ext: &str) -> Option<Coding> {
    Coding::ALL.into_iter().find(|&c| coding_ext(c) == ext)
}

/// A decoded copy's last extension.
const DECODED_EXT: &str = "id";

/// Longest name: a kept version's `kept/`, fan-out, slash, 64 digits and
/// `.zst` make 76 bytes; a delta's two fan-out digits, slash, 64 digits,
/// dot, 64 digits and `.dcz` 136; a version's five 16-digit numbers and four
/// dashes 84.
const NAME_MAX: usize = 160;

/// Lower-case hex digits, by value.
const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

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

    /// Appends a byte; at most `NAME_MAX` are ever written.
    fn push(&mut self, b: u8) {
        if let Some(slot) = self.bytes.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        }
    }

    /// Appends `h` in 64 lower-case hex digits.
    fn push_hash(&mut self, h: &Hash) {
        let Some(out) = self.bytes.get_mut(self.len..self.len + 2 * h.len()) else {
            // Never: no name is that long. Cut at `NAME_MAX` as `push` is.
            for &b in h {
                self.push_byte(b);
            }
            return;
        };
        for (pair, &b) in out.chunks_exact_mut(2).zip(h) {
            pair[0] = HEX_DIGITS[usize::from(b >> 4)];
            pair[1] = HEX_DIGITS[usize::from(b & 0xf)];
        }
        self.len += 2 * h.len();
    }

    /// Appends `b` in two lower-case hex digits.
    fn push_byte(&mut self, b: u8) {
        self.push(HEX_DIGITS[usize::from(b >> 4)]);
        self.push(HEX_DIGITS[usize::from(b & 0xf)]);
    }

    /// Appends an ASCII string (cut at `NAME_MAX`, which no name reaches).
    fn push_str(&mut self, s: &str) {
        self.extend(s.as_bytes());
    }

    /// Appends ASCII bytes (cut at `NAME_MAX`, which no name reaches).
    fn extend(&mut self, s: &[u8]) {
        let end = (self.len + s.len()).min(NAME_MAX);
        self.bytes[self.len..end].copy_from_slice(&s[..end - self.len]);
        self.len = end;
    }

    /// Appends `v` as `version_stem` spells it.
    fn push_version(&mut self, v: &Version) {
        for (i, n) in v.fields().into_iter().enumerate() {
            if i > 0 {
                self.push(b'-');
            }
            self.push_hex(n);
        }
    }

    /// Appends `n` in lower-case hex, without leading zeros.
    fn push_hex(&mut self, n: u64) {
        let digits = (64 - n.leading_zeros()).div_ceil(4).max(1);
        for i in (0..digits).rev() {
            self.push(HEX_DIGITS[(n >> (4 * i)) as usize & 0xf]);
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
    parse_source(name.strip_suffix(".zst")?)
}

/// The fan-out directory of the copies of `source`: its first byte.
pub fn fan_out(source: &SourceHash) -> u8 {
    source[0]
}

/// Writes the name of the `kind` copy of the bytes whose SHA-256 is
/// `source` (relative to the cache root) into `buf` and returns it. A
/// kept version is named by its own hash (`source` is not read).
pub fn copy_name<'b>(source: &SourceHash, kind: Kind, buf: &'b mut NameBuf) -> &'b str {
    write_copy_name(source, kind, buf);
    buf.as_str()
}

/// `copy_name` as bytes.
pub fn write_copy_name<'b>(source: &SourceHash, kind: Kind, buf: &'b mut NameBuf) -> &'b [u8] {
    // Digits by hand, not `write!`: formatting cost over 1 % of an
    // on-demand hit (bench/ondemand_callgrind.sh).
    buf.len = 0;
    let source = match &kind {
        Kind::Kept(h) => {
            buf.push_str(KEPT_DIR);
            buf.push(b'/');
            h
        }
        _ => source,
    };
    buf.push_byte(fan_out(source));
    buf.push(b'/');
    buf.push_hash(source);
    push_kind(kind, buf)
}

/// Appends what ends the name of a `kind` copy (its extensions) and
/// returns the whole name.
fn push_kind(kind: Kind, buf: &mut NameBuf) -> &[u8] {
    match kind {
        Kind::Coded(c) => {
            buf.push(b'.');
            buf.push_str(coding_ext(c));
        }
        Kind::Decoded(c) => {
            buf.push(b'.');
            buf.push_str(coding_ext(c));
            buf.push(b'.');
            buf.push_str(DECODED_EXT);
        }
        // A delta's name ends as a published delta's does.
        Kind::Delta(d, h) => buf.push_str(DeltaSuffix::new(&h, d).as_str()),
        Kind::Kept(_) => buf.push_str(".zst"),
    }
    buf.as_bytes()
}

/// A source's digest with its 64 hex digits spelled once: what the
/// module remembers per file version, so a request writes the name of a
/// copy of it by copying, not by spelling 32 bytes (that cost about 2 %
/// of an on-demand hit, bench/budget.sh). The digest still names the
/// copy: only the spelling is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Named {
    source: SourceHash,
    hex: [u8; 64],
}

impl Named {
    /// `source`, spelled.
    pub fn new(source: SourceHash) -> Self {
        let mut buf = NameBuf::new();
        buf.push_hash(&source);
        let mut hex = [0u8; 64];
        hex.copy_from_slice(&buf.as_bytes()[..64]);
        Named { source, hex }
    }

    /// The digest.
    pub fn source(&self) -> &SourceHash {
        &self.source
    }

    /// `write_copy_name` of this source: the same name, its digits
    /// copied.
    pub fn write_copy_name<'b>(&self, kind: Kind, buf: &'b mut NameBuf) -> &'b [u8] {
        if let Kind::Kept(_) = kind {
            // Named by the kept version's own hash, not this source.
            return write_copy_name(&self.source, kind, buf);
        }
        buf.len = 0;
        buf.extend(&self.hex[..2]);
        buf.push(b'/');
        buf.extend(&self.hex);
        push_kind(kind, buf)
    }
}

/// The source 64 lower-case hex digits spell; `None` for anything else.
fn parse_source(hex: &str) -> Option<SourceHash> {
    (hex.len() == 64).then(|| dictionary::from_hex(hex))?
}

/// The source and kind a copy's file name (without its fan-out
/// directory) stands for; `None` for any other name.
pub fn parse_copy_name(name: &str) -> Option<(SourceHash, Kind)> {
    if let Some((stem, h, d)) = dictionary::parse_delta_name(name) {
        return Some((parse_source(stem)?, Kind::Delta(d, h)));
    }
    let (stem, kind) = match name
        .strip_suffix(DECODED_EXT)
        .and_then(|n| n.strip_suffix('.'))
    {
        Some(rest) => {
            let (stem, ext) = rest.rsplit_once('.')?;
            (stem, Kind::Decoded(coding_of_ext(ext)?))
        }
        None => {
            let (stem, ext) = name.rsplit_once('.')?;
            (stem, Kind::Coded(coding_of_ext(ext)?))
        }
    };
    Some((parse_source(stem)?, kind))
}

/// Whether `name` is a copy as the cache named them by where a file was
/// (`<path>-<size>-<mtime>`) or by device and inode
/// (`<device>-<inode>-<size>-<mtime>-<ctime>`), in hex, with the
/// extensions of the time: never served under the current names, removed
/// at start.
pub fn is_old_copy_name(name: &str) -> bool {
    let stem = match dictionary::parse_delta_name(name) {
        Some((stem, ..)) => Some(stem),
        None => name
            .rsplit_once('.')
            .filter(|(_, ext)| coding_of_ext(ext).is_some() || *ext == DECODED_EXT)
            .map(|(stem, _)| stem),
    };
    stem.is_some_and(|stem| {
        let parts: Vec<&str> = stem.split('-').collect();
        matches!(parts.len(), 3 | 5)
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.len() <= 16 && p.bytes().all(|b| b.is_ascii_hexdigit()))
    })
}

/// A version as histories spell it,
/// `<size>-<mtime>-<device>-<inode>-<ctime>` in lower-case hex.
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
        size: next()?,
        mtime_us: next()? as i64,
        local: Local {
            device: next()?,
            inode: next()?,
            ctime_us: next()? as i64,
        },
    };
    parts.next().is_none().then_some(v)
}

/// Largest original compressed on demand: 64 MiB. Brotli at quality 11
/// is slow, so a file this size already holds the (by default single)
/// compressor worker for a long while, and every other miss waits; pages,
/// scripts and styles are far smaller, and what is larger (logs, data
/// dumps) is better published with the tool.
pub const MAX_SIZE: u64 = 64 << 20;

/// The types on-demand compression takes (`gdn_core::types`): the
/// system's `mime.types`, else the common web types. Read once per
/// process; the module reads it at start-up, before its children fork.
pub fn types() -> &'static Types {
    static TYPES: std::sync::LazyLock<Types> = std::sync::LazyLock::new(|| {
        let text = fs::read_to_string(gdn_core::types::SYSTEM_MIME_TYPES);
        Types::parse(text.as_deref().unwrap_or(gdn_core::types::BUILTIN), &[])
    });
    &TYPES
}

/// Whether a file with this name (or path: only its last component
/// counts) and size is compressed on demand: the publish tool's rules
/// (not a temporary of its own, not a delta, not an already-compressed
/// format, not a script, of a type that compresses, at least its
/// default `--min-size`) and at most `MAX_SIZE`.
pub fn compressible(name: &[u8], size: u64) -> bool {
    // The module asks this of every request its cache serves: sizes
    // first, and the last component found by a vectorised search.
    if !(DEFAULT_MIN_SIZE..=MAX_SIZE).contains(&size) {
        return false;
    }
    let base = memchr::memrchr(b'/', name).map_or(name, |i| &name[i + 1..]);
    // The tool refuses names that are not UTF-8 too.
    let Ok(base) = std::str::from_utf8(base) else {
        return false;
    };
    !base.is_empty()
        && !is_temp_name(base)
        && compress_rule(base, size, DEFAULT_MIN_SIZE, types()).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v() -> Version {
        Version {
            size: 5000,
            mtime_us: 1_700_000_000_123_456,
            local: Local {
                device: 0x803,
                inode: 0x1_2345,
                ctime_us: 1_700_000_001_000_000,
            },
        }
    }

    #[test]
    fn names_round_trip() {
        let mut buf = NameBuf::new();
        assert_eq!(buf.as_str(), "");
        let src: SourceHash = dictionary::hash(b"page");
        let hex = dictionary::to_hex(&src);
        let mut kinds = vec![];
        for c in Coding::ALL {
            kinds.push((Kind::Coded(c), format!(".{}", coding_ext(c))));
            kinds.push((Kind::Decoded(c), format!(".{}.id", coding_ext(c))));
        }
        let h = [0xab; 32];
        for d in DeltaCoding::ALL {
            kinds.push((
                Kind::Delta(d, h),
                format!(".{}.{}", "ab".repeat(32), d.token()),
            ));
        }
        for (k, ext) in kinds {
            let name = copy_name(&src, k, &mut buf).to_owned();
            assert_eq!(name, format!("{}/{hex}{ext}", &hex[..2]));
            let file = name.split_once('/').unwrap().1;
            assert_eq!(parse_copy_name(file), Some((src, k)), "{name}");
            assert!(!is_old_copy_name(file), "{name}");
        }
        let kept = copy_name(&[0; 32], Kind::Kept([0xc3; 32]), &mut buf).to_owned();
        assert_eq!(kept, format!("kept/c3/{}.zst", "c3".repeat(32)));
        let file = kept.rsplit_once('/').unwrap().1;
        assert_eq!(parse_kept_name(file), Some([0xc3; 32]));
        assert_eq!(parse_kept_name(&file.to_uppercase()), None);
        let longest = copy_name(&[0xff; 32], Kind::Delta(DeltaCoding::Dcb, h), &mut buf);
        assert_eq!(longest.len(), 136);
    }

    #[test]
    fn a_named_source_writes_the_names_copy_name_writes() {
        let h = dictionary::hash(b"dictionary");
        for src in [[0u8; 32], [0xff; 32], dictionary::hash(b"page")] {
            let named = Named::new(src);
            assert_eq!(named.source(), &src);
            let mut kinds = vec![Kind::Kept(h)];
            for c in Coding::ALL {
                kinds.extend([Kind::Coded(c), Kind::Decoded(c)]);
            }
            kinds.extend(DeltaCoding::ALL.map(|d| Kind::Delta(d, h)));
            for k in kinds {
                let (mut a, mut b) = (NameBuf::new(), NameBuf::new());
                let want = copy_name(&src, k, &mut a).to_owned();
                assert_eq!(named.write_copy_name(k, &mut b), want.as_bytes(), "{k:?}");
            }
        }
    }

    #[test]
    fn a_decoded_copy_names_the_coding_it_was_decoded_from() {
        let src = dictionary::hash(b"sibling bytes");
        let mut names = std::collections::HashSet::new();
        for c in Coding::ALL {
            let mut buf = NameBuf::new();
            names.insert(copy_name(&src, Kind::Decoded(c), &mut buf).to_owned());
            names.insert(copy_name(&src, Kind::Coded(c), &mut buf).to_owned());
        }
        assert_eq!(names.len(), 2 * Coding::ALL.len());
    }

    #[test]
    fn other_names_are_not_copies() {
        let hex = "0f".repeat(32);
        for bad in [
            "12345-1388-1".to_owned(),
            hex.clone(),
            format!("{hex}.txt"),
            format!("{hex}.id"),
            format!("{hex}.zstd.id"),
            format!("{}.gz", &hex[1..]),
            format!("{}.gz", hex.to_uppercase()),
            format!("{hex}0.gz"),
            format!(".{hex}.gz.tmp1a2b"),
            format!("{hex}.dcz"),
            format!("{hex}.abcd.dcz"),
            format!("{hex}.id.dcz"),
            format!("1-2-3.{hex}.dcz"),
        ] {
            assert_eq!(parse_copy_name(&bad), None, "{bad}");
        }
        let old_delta = format!("1-2-3-4-5.{hex}.dcb");
        let path_delta = format!("803-1388-1.{hex}.dcz");
        for old in [
            "803-12345-1388-1-2.zst",
            "1-2-3-4-5.id",
            "80300012345-1388-5f.gz",
            "ff-0-0.id",
            &old_delta,
            &path_delta,
        ] {
            assert!(is_old_copy_name(old), "{old}");
        }
        for new in [
            "12345-1388.zst",
            "803-12345-1388-1.zst",
            "803-12345-1388-1-2.txt",
            "kept",
            &format!("{hex}.gz"),
        ] {
            assert!(!is_old_copy_name(new), "{new}");
        }
    }

    #[test]
    fn versions_are_spelled_whole() {
        let mut buf = NameBuf::new();
        let name = version_stem(&v(), &mut buf).to_owned();
        assert_eq!(name, "1388-60a2418202240-803-12345-60a24182d8240");
        assert_eq!(parse_version_stem(&name), Some(v()));
        // A rewrite in place keeping inode, size and mtime: another stem.
        let mut rewritten = v();
        rewritten.local.ctime_us += 1;
        assert_ne!(name, version_stem(&rewritten, &mut buf));
        let extreme = Version {
            size: u64::MAX,
            mtime_us: i64::MIN,
            local: Local {
                device: u64::MAX,
                inode: u64::MAX,
                ctime_us: -1,
            },
        };
        let name = version_stem(&extreme, &mut buf).to_owned();
        assert_eq!(name.len(), 84);
        assert_eq!(parse_version_stem(&name), Some(extreme));
        for bad in ["1-2-3", "1-2-3-4-5-6", "01-2-3-4-5", "1-2-3-4-X"] {
            assert_eq!(parse_version_stem(bad), None, "{bad}");
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
        let v = Version::of(&m);
        assert_eq!(v.size, 5);
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
        let judged = Version::of(&m);
        assert!(!judged.matches(&other));
        let listed = Version {
            local: Local::UNKNOWN,
            ..judged
        };
        assert!(listed.matches(&other) && listed != judged);
    }

    #[test]
    fn compressible_is_the_publish_tools_rule() {
        use gdn_core::rules::compress_rule;
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
                        && !gdn_publish::atomic::is_temp_name(b)
                        && compress_rule(b, size, DEFAULT_MIN_SIZE, types()).is_none()
                });
                assert_eq!(compressible(n, size), rule, "{n:?} {size}");
            }
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
        assert!(!compressible(b"/var/www/wp-config.php", 5000));
        assert!(!compressible(b"/var/www/lib.inc", 5000));
        assert!(!compressible(b"/var/www/config.php.bak", 5000));
        assert!(!compressible(b"/var/www/index.shtml", 5000));
    }
}

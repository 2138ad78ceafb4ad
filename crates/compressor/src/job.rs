//! The jobs Apache's children hand the compressor, and their wire format.
//!
//! A child sends one message per job on the helper's `SOCK_SEQPACKET`
//! socket, which delivers each message whole or not at all. A message is a
//! fixed header and up to three byte strings:
//!
//! ```text
//! tag | argument byte | size u64 LE | mtime i64 LE (µs) | device, inode u64 LE
//! | ctime i64 LE (µs) | delta versions u8 | group length u16 LE
//! | site length u16 LE
//! | path (Compress, Decode; a Touch: the source's SHA-256, then a delta's
//!   or a kept version's hash)
//! | group | site (Compress with deltas)
//! ```
//!
//! The tag is 1 Compress (argument: coding bits), 2 Decode (the coding),
//! 3 Touch (the kind: a coding, 3 plus the coding for a decoded copy, 6
//! and 7 for a dcz and a dcb delta, 8 for a kept version; its version is
//! zero), 4 Train (a host's pages judged: the path is its document root,
//! the group the list's SHA-256 and a bit per page, the site its host,
//! the mtime field when they were judged). The reader drops a message it
//! cannot read (unknown tag or
//! argument, a relative path, lengths that do not add up, too short or
//! too long) and goes on with the next.

use super::key::{Kind, SourceHash, Version};
use gdn_core::coding::{Coding, DeltaCoding};
use gdn_core::dictionary::Hash;
use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// Longest message. A path longer than the room left (`MAX_PATH`)
/// cannot be queued; such a file is simply never cached.
pub const MAX_JOB: usize = 4096;

const TAG_COMPRESS: u8 = 1;
const TAG_DECODE: u8 = 2;
const TAG_TOUCH: u8 = 3;
const TAG_TRAIN: u8 = 4;
/// Bytes before the path: tag, argument, version, delta versions and the
/// two lengths.
const HEAD: usize = 2 + 40 + 5;
/// Longest path a message carries.
pub const MAX_PATH: usize = MAX_JOB - HEAD;

/// A set of codings, one bit each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodingSet(u8);

impl CodingSet {
    pub fn empty() -> CodingSet {
        CodingSet(0)
    }

    /// The set with `c` added.
    #[must_use]
    pub fn with(self, c: Coding) -> CodingSet {
        CodingSet(self.0 | 1 << c.index())
    }

    /// The set with `c` taken out.
    #[must_use]
    pub fn without(self, c: Coding) -> CodingSet {
        CodingSet(self.0 & !(1 << c.index()))
    }

    pub fn contains(self, c: Coding) -> bool {
        self.0 & 1 << c.index() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// One bit per member, at the coding's index.
    pub fn bits(self) -> u8 {
        self.0
    }

    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// The members, in `Coding::ALL` order.
    pub fn iter(self) -> impl Iterator<Item = Coding> {
        Coding::ALL.into_iter().filter(move |&c| self.contains(c))
    }

    fn from_bits(b: u8) -> Option<CodingSet> {
        (b < 1 << Coding::ALL.len()).then_some(CodingSet(b))
    }
}

/// Deltas on demand for a compress job: which history the version joins
/// and how much of it is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobDeltas<'a> {
    /// Earlier versions kept (`GzipDiskNgDeltaVersions`); 0 with a site:
    /// no history of the file's own.
    pub versions: u8,
    /// The versioned group the file is a member of (its virtual host and
    /// `GzipDiskNgUseAsDictionary` pattern); empty: the file's own path.
    pub group: &'a [u8],
    /// The virtual host whose site dictionary the page joins (an HTML
    /// page where `GzipDiskNgSiteDictionary` is set); empty: none.
    pub site: &'a [u8],
}

/// `JobDeltas`, as the compressor reads them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedDeltas {
    pub versions: u8,
    pub group: Vec<u8>,
    pub site: Vec<u8>,
}

/// A job as a child sends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Job<'a> {
    /// Make the copies of these codings of the original at `path`, whose
    /// version was `version` when the request saw it, and its deltas.
    Compress {
        path: &'a [u8],
        version: Version,
        codings: CodingSet,
        deltas: Option<JobDeltas<'a>>,
    },
    /// Keep the decoded (identity) content of the sibling at `path`
    /// (coding `coding`, version `version`).
    Decode {
        path: &'a [u8],
        coding: Coding,
        version: Version,
    },
    /// A copy was served: for least-recently-used eviction.
    Touch { source: SourceHash, kind: Kind },
    /// The pages under `root` that a site dictionary of `site` may learn
    /// (`pages`): the list's digest, and a bit per page set
    /// where Apache judged it public.
    Train {
        root: &'a [u8],
        site: &'a [u8],
        digest: &'a Hash,
        bits: &'a [u8],
        /// When they were judged, µs since the epoch: verdicts older than
        /// those acted on are dropped.
        at: i64,
    },
}

/// A job as the compressor reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnedJob {
    Compress {
        path: PathBuf,
        version: Version,
        codings: CodingSet,
        deltas: Option<OwnedDeltas>,
    },
    Decode {
        path: PathBuf,
        coding: Coding,
        version: Version,
    },
    Touch {
        source: SourceHash,
        kind: Kind,
    },
    Train {
        root: PathBuf,
        site: Vec<u8>,
        digest: Hash,
        bits: Vec<u8>,
        at: i64,
    },
}

impl OwnedJob {
    /// The job as a child sends it, borrowing this one's strings.
    pub fn as_job(&self) -> Job<'_> {
        match self {
            OwnedJob::Compress {
                path,
                version,
                codings,
                deltas,
            } => Job::Compress {
                path: path.as_os_str().as_bytes(),
                version: *version,
                codings: *codings,
                deltas: deltas.as_ref().map(|d| JobDeltas {
                    versions: d.versions,
                    group: &d.group,
                    site: &d.site,
                }),
            },
            OwnedJob::Decode {
                path,
                coding,
                version,
            } => Job::Decode {
                path: path.as_os_str().as_bytes(),
                coding: *coding,
                version: *version,
            },
            OwnedJob::Touch { source, kind } => Job::Touch {
                source: *source,
                kind: *kind,
            },
            OwnedJob::Train {
                root,
                site,
                digest,
                bits,
                at,
            } => Job::Train {
                root: root.as_os_str().as_bytes(),
                site,
                digest,
                bits,
                at: *at,
            },
        }
    }
}

/// The kind byte of a touch, and the hash its delta carries.
fn kind_byte(k: &Kind) -> (u8, &[u8]) {
    let n = Coding::ALL.len() as u8;
    match k {
        Kind::Coded(c) => (c.index() as u8, &[]),
        Kind::Decoded(c) => (n + c.index() as u8, &[]),
        Kind::Delta(d, h) => (2 * n + d.index() as u8, h),
        Kind::Kept(h) => (2 * n + 2, h),
    }
}

fn kind_of(b: u8, rest: &[u8]) -> Option<Kind> {
    let n = Coding::ALL.len();
    match usize::from(b) {
        i if i < n && rest.is_empty() => Some(Kind::Coded(Coding::ALL[i])),
        i if i < 2 * n && rest.is_empty() => Some(Kind::Decoded(Coding::ALL[i - n])),
        i if i == 2 * n + 2 => Some(Kind::Kept(Hash::try_from(rest).ok()?)),
        i => {
            let d = *DeltaCoding::ALL.get(i.checked_sub(2 * n)?)?;
            Some(Kind::Delta(d, Hash::try_from(rest).ok()?))
        }
    }
}

/// Serializes `job` into `buf`; `None` when its strings do not fit
/// (`MAX_PATH`).
pub fn encode<'b>(job: &Job<'_>, buf: &'b mut [u8; MAX_JOB]) -> Option<&'b [u8]> {
    let none = JobDeltas {
        versions: 0,
        group: &[],
        site: &[],
    };
    let mut judged = Vec::new();
    let mut when = Version::NONE;
    let mut touched = [0u8; 64];
    let (tag, version, arg, path, deltas): (u8, &Version, u8, &[u8], JobDeltas<'_>) = match job {
        Job::Compress {
            path,
            version,
            codings,
            deltas,
        } => (
            TAG_COMPRESS,
            version,
            codings.0,
            path,
            deltas.unwrap_or(none),
        ),
        Job::Decode {
            path,
            coding,
            version,
        } => (TAG_DECODE, version, coding.index() as u8, path, none),
        Job::Touch { source, kind } => {
            let (b, hash) = kind_byte(kind);
            touched[..32].copy_from_slice(source);
            touched[32..32 + hash.len()].copy_from_slice(hash);
            let n = 32 + hash.len();
            (TAG_TOUCH, &Version::NONE, b, &touched[..n], none)
        }
        Job::Train {
            root,
            site,
            digest,
            bits,
            at,
        } => {
            when.mtime_us = *at;
            judged.extend_from_slice(&digest[..]);
            judged.extend_from_slice(bits);
            let d = JobDeltas {
                versions: 0,
                group: &judged,
                site,
            };
            (TAG_TRAIN, &when, 0, root, d)
        }
    };
    write_message(buf, (tag, arg), version, path, &deltas)
}

/// Writes a message's head (tag, argument, version, delta lengths) and
/// strings into `buf`; `None` when the strings do not fit.
fn write_message<'b>(
    buf: &'b mut [u8; MAX_JOB],
    (tag, arg): (u8, u8),
    version: &Version,
    path: &[u8],
    deltas: &JobDeltas<'_>,
) -> Option<&'b [u8]> {
    let strings = [path, deltas.group, deltas.site];
    if strings.iter().map(|s| s.len()).sum::<usize>() > MAX_PATH {
        return None;
    }
    buf[0] = tag;
    buf[1] = arg;
    buf[2..2 + Version::BYTES].copy_from_slice(&version.to_le_bytes());
    buf[42] = deltas.versions;
    buf[43..45].copy_from_slice(&(deltas.group.len() as u16).to_le_bytes());
    buf[45..47].copy_from_slice(&(deltas.site.len() as u16).to_le_bytes());
    let mut at = HEAD;
    for s in strings {
        buf[at..at + s.len()].copy_from_slice(s);
        at += s.len();
    }
    Some(&buf[..at])
}

/// The job a message holds; `None` when anything in it is wrong.
pub fn decode(msg: &[u8]) -> Option<OwnedJob> {
    let (head, rest) = msg.split_at_checked(HEAD)?;
    let version = Version::from_le_bytes(head[2..2 + Version::BYTES].try_into().ok()?);
    let arg = head[1];
    let versions = head[42];
    let group_len = usize::from(u16::from_le_bytes([head[43], head[44]]));
    let site_len = usize::from(u16::from_le_bytes([head[45], head[46]]));
    let path_len = rest.len().checked_sub(group_len + site_len)?;
    let (path, tail) = rest.split_at(path_len);
    let (group, site) = tail.split_at(group_len);
    // Jobs name files by absolute paths, which hold no NUL.
    let path_ok = path.first() == Some(&b'/') && !path.contains(&0);
    let owned = || PathBuf::from(OsStr::from_bytes(path));
    let plain = versions == 0 && tail.is_empty();
    match head[0] {
        TAG_COMPRESS if path_ok => Some(OwnedJob::Compress {
            path: owned(),
            version,
            codings: CodingSet::from_bits(arg)?,
            deltas: (!plain).then(|| OwnedDeltas {
                versions,
                group: group.to_vec(),
                site: site.to_vec(),
            }),
        }),
        TAG_DECODE if path_ok && plain => Some(OwnedJob::Decode {
            path: owned(),
            coding: *Coding::ALL.get(usize::from(arg))?,
            version,
        }),
        TAG_TOUCH if plain && version == Version::NONE => {
            let (source, hash) = path.split_at_checked(32)?;
            Some(OwnedJob::Touch {
                source: SourceHash::try_from(source).ok()?,
                kind: kind_of(arg, hash)?,
            })
        }
        TAG_TRAIN if path_ok && versions == 0 && !site.is_empty() => {
            let (digest, bits) = group.split_at_checked(32)?;
            Some(OwnedJob::Train {
                root: owned(),
                site: site.to_vec(),
                digest: digest.try_into().ok()?,
                bits: bits.to_vec(),
                at: version.mtime_us,
            })
        }
        _ => None,
    }
}

/// Reads jobs from a source whose every read returns one whole message,
/// as a `SOCK_SEQPACKET` socket's do.
pub struct Reader<R: Read> {
    src: R,
    /// One byte more than the longest message, to tell one that is
    /// longer (and cut to the buffer by the read).
    buf: Box<[u8; MAX_JOB + 1]>,
}

impl<R: Read> Reader<R> {
    pub fn new(r: R) -> Self {
        Reader {
            src: r,
            buf: Box::new([0; MAX_JOB + 1]),
        }
    }

    /// The next well-formed job; `Ok(None)` once every sender is gone.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> io::Result<Option<OwnedJob>> {
        loop {
            let n = match self.src.read(&mut self.buf[..]) {
                Ok(0) => return Ok(None),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if let Some(job) = self
                .buf
                .get(..n)
                .filter(|m| m.len() <= MAX_JOB)
                .and_then(decode)
            {
                return Ok(Some(job));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Local;
    use gdn_core::test_util::Messages;
    use std::io::Write;

    fn v(n: u64) -> Version {
        Version {
            size: 4096 + n,
            mtime_us: -5,
            local: Local {
                device: 0x803,
                inode: n,
                ctime_us: 1_700_000_000_000_000,
            },
        }
    }

    fn jobs() -> Vec<OwnedJob> {
        vec![
            OwnedJob::Compress {
                path: "/var/www/a.html".into(),
                version: v(1),
                codings: CodingSet::empty().with(Coding::Zstd).with(Coding::Gzip),
                deltas: None,
            },
            OwnedJob::Compress {
                path: "/var/www/app.2.js".into(),
                version: v(5),
                codings: CodingSet::empty(),
                deltas: Some(OwnedDeltas {
                    versions: 3,
                    group: b"localhost:80 /app.*.js".to_vec(),
                    site: b"localhost:80".to_vec(),
                }),
            },
            OwnedJob::Touch {
                source: [6; 32],
                kind: Kind::Delta(DeltaCoding::Dcb, [7; 32]),
            },
            OwnedJob::Decode {
                path: "/var/www/b.css.br".into(),
                coding: Coding::Br,
                version: v(2),
            },
            OwnedJob::Touch {
                source: [3; 32],
                kind: Kind::Decoded(Coding::Gzip),
            },
            OwnedJob::Touch {
                source: [4; 32],
                kind: Kind::Coded(Coding::Br),
            },
            OwnedJob::Touch {
                source: [5; 32],
                kind: Kind::Kept([5; 32]),
            },
            OwnedJob::Train {
                root: "/var/www/html".into(),
                site: b"localhost:80@main".to_vec(),
                digest: [9; 32],
                bits: vec![0xff, 0x01],
                at: 1_700_000_000_000_000,
            },
        ]
    }

    fn message(j: &OwnedJob) -> Vec<u8> {
        let mut buf = [0u8; MAX_JOB];
        encode(&j.as_job(), &mut buf).unwrap().to_vec()
    }

    fn read_all(r: impl Read) -> Vec<OwnedJob> {
        let mut reader = Reader::new(r);
        let mut out = Vec::new();
        while let Some(j) = reader.next().unwrap() {
            out.push(j);
        }
        out
    }

    #[test]
    fn coding_sets() {
        let s = CodingSet::empty().with(Coding::Gzip).with(Coding::Zstd);
        assert!(s.contains(Coding::Gzip) && !s.contains(Coding::Br));
        assert_eq!(s.iter().collect::<Vec<_>>(), [Coding::Zstd, Coding::Gzip]);
        assert!(s.without(Coding::Gzip).without(Coding::Zstd).is_empty());
        assert_eq!(CodingSet::from_bits(8), None);
    }

    #[test]
    fn every_kind_round_trips() {
        assert_eq!(read_all(Messages::new(jobs().iter().map(message))), jobs());
    }

    #[test]
    fn bad_messages_are_dropped() {
        let good = jobs();
        let mut relative = message(&good[0]);
        relative[HEAD] = b'v';
        let mut unknown = message(&good[4]);
        unknown[0] = 9;
        let mut too_long = message(&good[3]);
        too_long.resize(MAX_JOB + 1, b'a');
        let mut lengths_too_long = message(&good[1]);
        lengths_too_long[44] = 0x10;
        let mut short_hash = message(&good[2]);
        short_hash.pop();
        let stream = vec![
            b"junk".to_vec(),
            message(&good[0]),
            message(&good[3])[..HEAD - 1].to_vec(),
            unknown,
            message(&good[4]),
            relative,
            too_long,
            lengths_too_long,
            short_hash,
            message(&good[5]),
        ];
        let want = vec![good[0].clone(), good[4].clone(), good[5].clone()];
        assert_eq!(read_all(Messages::new(stream)), want);
    }

    #[test]
    fn long_paths_are_refused() {
        let mut buf = [0u8; MAX_JOB];
        fn job(p: &[u8]) -> Job<'_> {
            Job::Decode {
                path: p,
                coding: Coding::Gzip,
                version: v(1),
            }
        }
        let mut path = vec![b'/'; MAX_PATH];
        assert_eq!(
            encode(&job(&path), &mut buf).map(<[u8]>::len),
            Some(MAX_JOB)
        );
        path.push(b'a');
        assert_eq!(encode(&job(&path), &mut buf), None);
    }

    #[test]
    fn messages_are_read_whole_from_a_socket() {
        let (mut tx, rx) = gdn_core::test_util::seqpacket_pair();
        for j in jobs() {
            tx.write_all(&message(&j)).unwrap();
        }
        drop(tx);
        assert_eq!(read_all(rx), jobs());
    }
}

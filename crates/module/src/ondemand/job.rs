//! The jobs Apache's children hand the compressor, and their wire format.
//!
//! A child sends one message per job on the helper's `SOCK_SEQPACKET`
//! socket, which delivers each message whole or not at all. A message is a
//! fixed header and the path:
//!
//! ```text
//! tag | argument byte | device, inode, size u64 LE | mtime, ctime i64 LE (µs)
//! | path (Compress, Decode)
//! ```
//!
//! The tag is 1 Compress (argument: coding bits), 2 Decode (the coding),
//! 3 Touch (the kind: a coding, or 3 for decoded). The reader drops a
//! message it cannot read (unknown tag or argument, a relative path, too
//! short or too long) and goes on with the next.

use super::key::{Kind, Version};
use crate::coding::Coding;
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
/// Bytes before the path: tag, argument, version.
const HEAD: usize = 2 + 40;
/// Longest path a message carries.
pub const MAX_PATH: usize = MAX_JOB - HEAD;

/// A set of codings, one bit each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// A job as a child sends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Job<'a> {
    /// Make the copies of these codings of the original at `path`, whose
    /// version was `version` when the request saw it.
    Compress {
        path: &'a [u8],
        version: Version,
        codings: CodingSet,
    },
    /// Keep the decoded (identity) content of the sibling at `path`
    /// (coding `coding`, version `version`).
    Decode {
        path: &'a [u8],
        coding: Coding,
        version: Version,
    },
    /// A copy was served: for least-recently-used eviction.
    Touch { version: Version, kind: Kind },
}

/// A job as the compressor reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnedJob {
    Compress {
        path: PathBuf,
        version: Version,
        codings: CodingSet,
    },
    Decode {
        path: PathBuf,
        coding: Coding,
        version: Version,
    },
    Touch {
        version: Version,
        kind: Kind,
    },
}

fn kind_byte(k: Kind) -> u8 {
    match k {
        Kind::Coded(c) => c.index() as u8,
        Kind::Decoded => Coding::ALL.len() as u8,
    }
}

fn kind_of(b: u8) -> Option<Kind> {
    match Coding::ALL.get(usize::from(b)) {
        Some(&c) => Some(Kind::Coded(c)),
        None => (usize::from(b) == Coding::ALL.len()).then_some(Kind::Decoded),
    }
}

/// Serializes `job` into `buf`; `None` when its path does not fit
/// (`MAX_PATH`).
pub fn encode<'b>(job: &Job<'_>, buf: &'b mut [u8; MAX_JOB]) -> Option<&'b [u8]> {
    let (tag, version, arg, path): (u8, &Version, u8, &[u8]) = match job {
        Job::Compress {
            path,
            version,
            codings,
        } => (TAG_COMPRESS, version, codings.0, path),
        Job::Decode {
            path,
            coding,
            version,
        } => (TAG_DECODE, version, coding.index() as u8, path),
        Job::Touch { version, kind } => (TAG_TOUCH, version, kind_byte(*kind), &[]),
    };
    if path.len() > MAX_PATH {
        return None;
    }
    let fields = [
        version.device,
        version.inode,
        version.size,
        version.mtime_us as u64,
        version.ctime_us as u64,
    ];
    buf[0] = tag;
    buf[1] = arg;
    for (i, f) in fields.into_iter().enumerate() {
        buf[2 + 8 * i..10 + 8 * i].copy_from_slice(&f.to_le_bytes());
    }
    buf[HEAD..HEAD + path.len()].copy_from_slice(path);
    Some(&buf[..HEAD + path.len()])
}

/// The job a message holds; `None` when anything in it is wrong.
fn decode(msg: &[u8]) -> Option<OwnedJob> {
    let (head, path) = msg.split_at_checked(HEAD)?;
    let field = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&head[2 + 8 * i..10 + 8 * i]);
        u64::from_le_bytes(b)
    };
    let version = Version {
        device: field(0),
        inode: field(1),
        size: field(2),
        mtime_us: field(3) as i64,
        ctime_us: field(4) as i64,
    };
    let arg = head[1];
    // Jobs name files by absolute paths, which hold no NUL.
    let path_ok = path.first() == Some(&b'/') && !path.contains(&0);
    let owned = || PathBuf::from(OsStr::from_bytes(path));
    match head[0] {
        TAG_COMPRESS if path_ok => Some(OwnedJob::Compress {
            path: owned(),
            version,
            codings: CodingSet::from_bits(arg)?,
        }),
        TAG_DECODE if path_ok => Some(OwnedJob::Decode {
            path: owned(),
            coding: *Coding::ALL.get(usize::from(arg))?,
            version,
        }),
        TAG_TOUCH if path.is_empty() => Some(OwnedJob::Touch {
            version,
            kind: kind_of(arg)?,
        }),
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
    use crate::test_util::Messages;
    use std::io::Write;

    fn v(n: u64) -> Version {
        Version {
            device: 0x803,
            inode: n,
            size: 4096 + n,
            mtime_us: -5,
            ctime_us: 1_700_000_000_000_000,
        }
    }

    fn jobs() -> Vec<OwnedJob> {
        vec![
            OwnedJob::Compress {
                path: "/var/www/a.html".into(),
                version: v(1),
                codings: CodingSet::empty().with(Coding::Zstd).with(Coding::Gzip),
            },
            OwnedJob::Decode {
                path: "/var/www/b.css.br".into(),
                coding: Coding::Br,
                version: v(2),
            },
            OwnedJob::Touch {
                version: v(3),
                kind: Kind::Decoded,
            },
            OwnedJob::Touch {
                version: v(4),
                kind: Kind::Coded(Coding::Br),
            },
        ]
    }

    fn message(j: &OwnedJob) -> Vec<u8> {
        let job = match j {
            OwnedJob::Compress {
                path,
                version,
                codings,
            } => Job::Compress {
                path: path.as_os_str().as_bytes(),
                version: *version,
                codings: *codings,
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
            OwnedJob::Touch { version, kind } => Job::Touch {
                version: *version,
                kind: *kind,
            },
        };
        let mut buf = [0u8; MAX_JOB];
        encode(&job, &mut buf).unwrap().to_vec()
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
        let mut unknown = message(&good[2]);
        unknown[0] = 9;
        let mut too_long = message(&good[1]);
        too_long.resize(MAX_JOB + 1, b'a');
        let stream = vec![
            b"junk".to_vec(),
            message(&good[0]),
            message(&good[1])[..HEAD - 1].to_vec(),
            unknown,
            message(&good[2]),
            relative,
            too_long,
            message(&good[3]),
        ];
        let want = vec![good[0].clone(), good[2].clone(), good[3].clone()];
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
        let (mut tx, rx) = crate::test_util::seqpacket_pair();
        for j in jobs() {
            tx.write_all(&message(&j)).unwrap();
        }
        drop(tx);
        assert_eq!(read_all(rx), jobs());
    }
}

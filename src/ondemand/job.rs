//! What children ask of the compressor: one job per message on the
//! compressor's channel (a socket that keeps message boundaries), each at
//! most `MAX_JOB` bytes, so a send is whole or not at all.
//!
//! A message is a fixed 44-byte head (magic, job type, codings or kind,
//! the file version as five little-endian u64) and, for jobs about a
//! file, its path.

use super::key::{Kind, Version};
use crate::coding::Coding;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// Largest message: the pipe-atomic size, also what a send may carry.
pub const MAX_JOB: usize = 4096;

const MAGIC: u8 = 0xd5;
const HEAD: usize = 44;

/// A set of codings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CodingSet(u8);

impl CodingSet {
    pub const fn empty() -> CodingSet {
        CodingSet(0)
    }

    pub fn with(self, c: Coding) -> CodingSet {
        CodingSet(self.0 | 1 << c.index())
    }

    pub fn contains(self, c: Coding) -> bool {
        self.0 & 1 << c.index() != 0
    }

    pub fn iter(self) -> impl Iterator<Item = Coding> {
        Coding::ALL.into_iter().filter(move |&c| self.contains(c))
    }
}

/// A job, as a child writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Job<'a> {
    /// Make the copies of `codings` of the original at `path`, whose
    /// version was `version` when the request saw it.
    Compress {
        path: &'a [u8],
        version: Version,
        codings: CodingSet,
    },
    /// Keep the decoded content of the sibling at `path`.
    Decode {
        path: &'a [u8],
        coding: Coding,
        version: Version,
    },
    /// A copy was served: for least-recently-used eviction.
    Touch { version: Version, kind: Kind },
}

/// A job, as the compressor reads it.
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

fn kind_code(k: Kind) -> u8 {
    match k {
        Kind::Coded(c) => c.index() as u8,
        Kind::Decoded => 3,
    }
}

fn coding_of(code: u8) -> Option<Coding> {
    Coding::ALL
        .into_iter()
        .find(|c| c.index() == usize::from(code))
}

/// Serializes `job` into `buf`; `None` if its path does not fit.
pub fn encode<'b>(job: &Job<'_>, buf: &'b mut [u8; MAX_JOB]) -> Option<&'b [u8]> {
    let (typ, arg, v, path): (u8, u8, &Version, &[u8]) = match job {
        Job::Compress {
            path,
            version,
            codings,
        } => (1, codings.0, version, path),
        Job::Decode {
            path,
            coding,
            version,
        } => (2, coding.index() as u8, version, path),
        Job::Touch { version, kind } => (3, kind_code(*kind), version, &[][..]),
    };
    let end = HEAD.checked_add(path.len()).filter(|&e| e <= MAX_JOB)?;
    buf[..4].copy_from_slice(&[MAGIC, typ, arg, 0]);
    let fields = [
        v.device,
        v.inode,
        v.size,
        v.mtime_us as u64,
        v.ctime_us as u64,
    ];
    for (i, f) in fields.iter().enumerate() {
        buf[4 + 8 * i..12 + 8 * i].copy_from_slice(&f.to_le_bytes());
    }
    buf[HEAD..end].copy_from_slice(path);
    Some(&buf[..end])
}

/// Parses one message; `None` for anything malformed.
pub fn decode(m: &[u8]) -> Option<OwnedJob> {
    if m.len() < HEAD || m[0] != MAGIC {
        return None;
    }
    let field = |i: usize| {
        let b: [u8; 8] = m[4 + 8 * i..12 + 8 * i].try_into().unwrap_or_default();
        u64::from_le_bytes(b)
    };
    let version = Version {
        device: field(0),
        inode: field(1),
        size: field(2),
        mtime_us: field(3) as i64,
        ctime_us: field(4) as i64,
    };
    let path = || {
        let p = &m[HEAD..];
        (!p.is_empty() && !p.contains(&0)).then(|| PathBuf::from(std::ffi::OsStr::from_bytes(p)))
    };
    match (m[1], m[2]) {
        (1, set) if set != 0 && set < 8 => Some(OwnedJob::Compress {
            path: path()?,
            version,
            codings: CodingSet(set),
        }),
        (2, c) => Some(OwnedJob::Decode {
            path: path()?,
            coding: coding_of(c)?,
            version,
        }),
        (3, 3) if m.len() == HEAD => Some(OwnedJob::Touch {
            version,
            kind: Kind::Decoded,
        }),
        (3, c) if m.len() == HEAD => Some(OwnedJob::Touch {
            version,
            kind: Kind::Coded(coding_of(c)?),
        }),
        _ => None,
    }
}

/// Reads jobs from a channel whose every read returns one message.
pub struct Reader<R: Read> {
    inner: R,
    buf: Box<[u8; MAX_JOB]>,
}

impl<R: Read> Reader<R> {
    pub fn new(inner: R) -> Self {
        Reader {
            inner,
            buf: Box::new([0; MAX_JOB]),
        }
    }

    /// The next well-formed job; `Ok(None)` once every sender is gone.
    /// Malformed messages are skipped.
    pub fn next(&mut self) -> io::Result<Option<OwnedJob>> {
        loop {
            let n = match self.inner.read(&mut self.buf[..]) {
                Ok(0) => return Ok(None),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if let Some(j) = decode(&self.buf[..n]) {
                return Ok(Some(j));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixDatagram;

    /// A datagram socket read one message at a time, as the channel is.
    struct Messages(UnixDatagram);

    impl Read for Messages {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.0.recv(buf)
        }
    }

    fn v(n: u64) -> Version {
        Version {
            device: n,
            inode: n + 1,
            size: n + 2,
            mtime_us: -3,
            ctime_us: n as i64 + 4,
        }
    }

    #[test]
    fn jobs_round_trip_one_per_message() {
        let (a, b) = UnixDatagram::pair().unwrap();
        let set = CodingSet::empty().with(Coding::Br).with(Coding::Gzip);
        let jobs = [
            Job::Compress {
                path: b"/srv/www/a b.html",
                version: v(1),
                codings: set,
            },
            Job::Decode {
                path: b"/srv/www/x.js.zst",
                coding: Coding::Zstd,
                version: v(2),
            },
            Job::Touch {
                version: v(3),
                kind: Kind::Decoded,
            },
            Job::Touch {
                version: v(4),
                kind: Kind::Coded(Coding::Gzip),
            },
        ];
        let mut buf = [0u8; MAX_JOB];
        for j in &jobs {
            a.send(encode(j, &mut buf).unwrap()).unwrap();
        }
        a.send(b"garbage that is no job at all, long enough to pass the head check")
            .unwrap();
        a.send(&[MAGIC, 9, 0, 0]).unwrap();
        a.send(encode(&jobs[0], &mut buf).unwrap()).unwrap();
        drop(a);
        b.set_read_timeout(Some(std::time::Duration::from_millis(200)))
            .unwrap();
        let mut r = Reader::new(Messages(b));
        let got: Vec<OwnedJob> = std::iter::from_fn(|| r.next().ok().flatten()).collect();
        assert_eq!(got.len(), 5, "{got:?}");
        assert_eq!(
            got[0],
            OwnedJob::Compress {
                path: "/srv/www/a b.html".into(),
                version: v(1),
                codings: set
            }
        );
        assert!(got[0] == got[4]);
        assert!(matches!(
            got[2],
            OwnedJob::Touch {
                kind: Kind::Decoded,
                ..
            }
        ));
        assert_eq!(set.iter().collect::<Vec<_>>(), [Coding::Br, Coding::Gzip]);
    }

    #[test]
    fn long_paths_and_bad_fields_are_refused() {
        let mut buf = [0u8; MAX_JOB];
        let long = vec![b'a'; MAX_JOB];
        let j = Job::Compress {
            path: &long,
            version: v(1),
            codings: CodingSet::empty().with(Coding::Zstd),
        };
        assert!(encode(&j, &mut buf).is_none());
        let j = Job::Compress {
            path: b"/a\0b",
            version: v(1),
            codings: CodingSet::empty().with(Coding::Zstd),
        };
        let m = encode(&j, &mut buf).unwrap().to_vec();
        assert_eq!(decode(&m), None);
        let j = Job::Compress {
            path: b"/a",
            version: v(1),
            codings: CodingSet::empty(),
        };
        let m = encode(&j, &mut buf).unwrap().to_vec();
        assert_eq!(decode(&m), None, "no codings");
        assert_eq!(decode(&m[..10]), None);
    }
}

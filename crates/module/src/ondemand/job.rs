//! The jobs Apache's children hand the compressor, and their wire format.
//!
//! A child writes one record per job with one non-blocking write, so a
//! record is never longer than `MAX_JOB` (at most `PIPE_BUF`: writes that
//! size are atomic on a pipe, and one datagram on a `SOCK_SEQPACKET`
//! socket). A record is
//!
//! ```text
//! magic 0xC7 | format 1 | length u16 LE (whole record) | tag
//! | device, inode, size u64 LE | mtime, ctime i64 LE (µs)
//! | argument byte | path (Compress, Decode) | CRC-32C of all before it
//! ```
//!
//! The tag is 1 Compress (argument: coding bits), 2 Decode (the coding),
//! 3 Touch (the kind: a coding, or 3 for decoded). The reader checks every
//! field and the checksum and, on anything else, steps one byte forward
//! and looks for the next magic byte, so a stray write cannot wedge it.

use super::key::{Kind, Version};
use crate::coding::Coding;
use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// Longest record: Linux's `PIPE_BUF`. A path longer than the room left
/// (`MAX_PATH`) cannot be queued; such a file is simply never cached.
pub const MAX_JOB: usize = 4096;

const MAGIC: u8 = 0xc7;
const FORMAT: u8 = 1;
const TAG_COMPRESS: u8 = 1;
const TAG_DECODE: u8 = 2;
const TAG_TOUCH: u8 = 3;
/// Bytes before the path: magic, format, length, tag, version, argument.
const HEAD: usize = 4 + 1 + 40 + 1;
/// The checksum's bytes.
const CRC: usize = 4;
/// Longest path a record carries.
pub const MAX_PATH: usize = MAX_JOB - HEAD - CRC;

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
    let len = HEAD + path.len() + CRC;
    buf[0] = MAGIC;
    buf[1] = FORMAT;
    buf[2..4].copy_from_slice(&(len as u16).to_le_bytes());
    buf[4] = tag;
    let fields = [
        version.device,
        version.inode,
        version.size,
        version.mtime_us as u64,
        version.ctime_us as u64,
    ];
    for (i, f) in fields.into_iter().enumerate() {
        buf[5 + 8 * i..13 + 8 * i].copy_from_slice(&f.to_le_bytes());
    }
    buf[HEAD - 1] = arg;
    buf[HEAD..HEAD + path.len()].copy_from_slice(path);
    let crc = crc32c::crc32c(&buf[..len - CRC]);
    buf[len - CRC..len].copy_from_slice(&crc.to_le_bytes());
    Some(&buf[..len])
}

/// The job in a whole record whose length field was checked; `None` when
/// anything in it is wrong.
fn decode(rec: &[u8]) -> Option<OwnedJob> {
    let body = rec.len().checked_sub(CRC)?;
    if crc32c::crc32c(&rec[..body]).to_le_bytes() != rec[body..] {
        return None;
    }
    let field = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&rec[5 + 8 * i..13 + 8 * i]);
        u64::from_le_bytes(b)
    };
    let version = Version {
        device: field(0),
        inode: field(1),
        size: field(2),
        mtime_us: field(3) as i64,
        ctime_us: field(4) as i64,
    };
    let arg = rec[HEAD - 1];
    let path = &rec[HEAD..body];
    // Jobs name files by absolute paths, which hold no NUL.
    let path_ok = path.first() == Some(&b'/') && !path.contains(&0);
    let owned = || PathBuf::from(OsStr::from_bytes(path));
    match rec[4] {
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

/// Reads records from a byte stream or a datagram socket.
pub struct Reader<R: Read> {
    src: R,
    /// Room for a record being completed plus a whole read: a datagram
    /// socket discards what does not fit the buffer of the read.
    buf: Box<[u8; 2 * MAX_JOB]>,
    start: usize,
    end: usize,
    eof: bool,
}

/// What the bytes at the front of the buffer are.
enum Front {
    Job(OwnedJob),
    /// Too few bytes to tell.
    Partial,
    /// Not a record: step over a byte.
    Garbage,
}

impl<R: Read> Reader<R> {
    pub fn new(r: R) -> Self {
        Reader {
            src: r,
            buf: Box::new([0; 2 * MAX_JOB]),
            start: 0,
            end: 0,
            eof: false,
        }
    }

    /// The next well-formed job; `Ok(None)` at the end of the stream
    /// (what is left of a cut record is dropped).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> io::Result<Option<OwnedJob>> {
        loop {
            match self.front() {
                Front::Job(j) => return Ok(Some(j)),
                Front::Garbage => self.start += 1,
                Front::Partial if self.eof && self.start < self.end => self.start += 1,
                Front::Partial if self.eof => return Ok(None),
                Front::Partial => self.fill()?,
            }
        }
    }

    /// Looks at the bytes from the next magic byte on.
    fn front(&mut self) -> Front {
        let pending = &self.buf[self.start..self.end];
        let Some(at) = memchr::memchr(MAGIC, pending) else {
            self.start = self.end;
            return Front::Partial;
        };
        self.start += at;
        let pending = &self.buf[self.start..self.end];
        if pending.len() < 4 {
            return Front::Partial;
        }
        let len = usize::from(u16::from_le_bytes([pending[2], pending[3]]));
        if pending[1] != FORMAT || !(HEAD + CRC..=MAX_JOB).contains(&len) {
            return Front::Garbage;
        }
        if pending.len() < len {
            return Front::Partial;
        }
        match decode(&pending[..len]) {
            Some(j) => {
                self.start += len;
                Front::Job(j)
            }
            None => Front::Garbage,
        }
    }

    /// Reads more, after moving what is pending to the front (less than a
    /// record, so at least `MAX_JOB` bytes are free).
    fn fill(&mut self) -> io::Result<()> {
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        loop {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

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

    fn record(j: &OwnedJob) -> Vec<u8> {
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
        let stream: Vec<u8> = jobs().iter().flat_map(record).collect();
        assert_eq!(read_all(Cursor::new(stream)), jobs());
    }

    /// Hands out one byte per read, then a few at a time.
    struct Dribble(Vec<u8>, usize);

    impl Read for Dribble {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = (self.1 % 7 + 1).min(self.0.len()).min(out.len());
            self.1 += 1;
            out[..n].copy_from_slice(&self.0[..n]);
            self.0.drain(..n);
            Ok(n)
        }
    }

    #[test]
    fn records_split_across_reads() {
        let stream: Vec<u8> = jobs().iter().flat_map(record).collect();
        assert_eq!(read_all(Dribble(stream, 0)), jobs());
    }

    #[test]
    fn garbage_is_skipped() {
        let good = jobs();
        let mut stream = b"\xc7\x01\xff\xffjunk\xc7".to_vec();
        stream.extend(record(&good[0]));
        let mut bad = record(&good[1]);
        bad[20] ^= 1; // checksum fails
        stream.extend(bad);
        stream.extend([MAGIC, FORMAT, 60, 0, 9]); // unknown tag, cut short
        stream.extend(record(&good[2]));
        let mut relative = record(&good[0]);
        relative[HEAD] = b'v';
        let crc_at = relative.len() - CRC;
        let crc = crc32c::crc32c(&relative[..crc_at]).to_le_bytes();
        relative[crc_at..].copy_from_slice(&crc);
        stream.extend(relative); // well formed but a relative path
        stream.extend(record(&good[3]));
        stream.extend(&record(&good[0])[..30]); // cut by the end
        let want = vec![good[0].clone(), good[2].clone(), good[3].clone()];
        assert_eq!(read_all(Cursor::new(stream.clone())), want);
        assert_eq!(read_all(Dribble(stream, 3)), want);
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
    fn datagrams_are_read_whole() {
        use std::os::unix::net::UnixDatagram;
        let (a, b) = UnixDatagram::pair().unwrap();
        for j in jobs() {
            a.send(&record(&j)).unwrap();
        }
        drop(a);
        let mut reader = Reader::new(DatagramReader(b));
        for j in jobs() {
            assert_eq!(reader.next().unwrap(), Some(j));
        }
    }

    struct DatagramReader(std::os::unix::net::UnixDatagram);

    impl Read for DatagramReader {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            self.0.recv(out)
        }
    }
}

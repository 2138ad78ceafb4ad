//! The RFC 9530 digest of each file the module sends as it is (a
//! sibling, a cached copy, a delta, an original, a site dictionary),
//! remembered per file version and algorithm: worked out from the file
//! once per process, so a response costs a lookup and one header, and
//! keeps its file bucket and sendfile. A sibling's decoded content has
//! its digest learned from the first decode that runs to its end.

use crate::memo::version::VersionMemo;
use gdn_core::digest::{self, Algorithm, FieldValue};
use gdn_httpd::{File, FileVersion};

/// Entries kept.
const MAX_ENTRIES: usize = 16_384;

/// Largest file digested: reading a larger one in a request would cost
/// more than its digest is worth; such a response carries none.
pub const MAX_SIZE: u64 = 64 << 20;

static MEMO: VersionMemo<(FileVersion, Algorithm), FieldValue> = VersionMemo::new(MAX_ENTRIES);

/// The digests of siblings' decoded content, by the sibling's version:
/// learned from a decode that ran to its end, so the responses after it
/// carry the field.
static DECODED: VersionMemo<(FileVersion, Algorithm), FieldValue> = VersionMemo::new(MAX_ENTRIES);

/// The digest of the content a sibling of version `v` decodes to, where a
/// decode of it ran to its end in this process.
pub fn of_decoded(v: FileVersion, a: Algorithm) -> Option<FieldValue> {
    DECODED.get(&(v, a))
}

/// Remembers the digest of a sibling's whole decoded content.
pub fn learn_decoded(v: FileVersion, value: FieldValue, a: Algorithm) {
    DECODED.put((v, a), value);
}

/// Where a file's bytes can change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// A site's file: rewritten in place, its change time tells.
    InPlace,
    /// One of the cache's: written whole and renamed into place, so an
    /// inode holds one content; its change time moves each time a use
    /// is recorded on it (its access time), which is no new content.
    Whole,
}

/// The field value of `file`'s bytes with `a`: remembered, or read now.
/// `None` for a file over `MAX_SIZE`, or one that cannot be read whole.
pub fn of_file(file: &File<'_>, a: Algorithm, written: Written) -> Option<FieldValue> {
    let info = file.info();
    let mut version = info.version();
    if written == Written::Whole {
        version.ctime = 0;
    }
    let key = (version, a);
    if let Some(v) = MEMO.get(&key) {
        return Some(v);
    }
    if info.size() > MAX_SIZE {
        return None;
    }
    let mut read = 0u64;
    let counted = CountingReader {
        inner: file.reader(0),
        read: &mut read,
    };
    let v = digest::field_value(a, counted).ok()?;
    // A file that changed size under the read is another version.
    (read == info.size()).then(|| {
        MEMO.put(key, v);
        v
    })
}

/// Counts what a reader gave.
struct CountingReader<'a, R> {
    inner: R,
    read: &'a mut u64,
}

impl<R: std::io::Read> std::io::Read for CountingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        *self.read += n as u64;
        Ok(n)
    }
}

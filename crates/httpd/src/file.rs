//! Files: stat results (`Finfo`, `FileVersion`, `FileKind`), the symlink
//! policy, and open APR files in the request pool with readers over them.

use super::{ffi, Request};
use std::ffi::{c_int, c_void};
use std::io;
use std::marker::PhantomData;

/// A file version: device, inode, mtime, ctime (microseconds) and size.
/// Two equal versions are the same bytes as far as a static server can
/// tell; the ctime tells apart an in-place rewrite that kept the size
/// and put the mtime back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileVersion {
    pub device: u64,
    pub inode: u64,
    pub mtime: i64,
    pub ctime: i64,
    pub size: u64,
}

/// What is at a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    Missing,
    Regular,
    Directory,
    Symlink,
    Other,
}

/// What `Options` say about symlinks in the request's directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymlinkPolicy {
    Always,
    IfOwnerMatch,
    Never,
}

/// A stat result kept in the request pool, for ETags.
#[derive(Clone, Copy)]
pub struct Finfo {
    pub(crate) raw: ffi::apr_finfo_t,
}

impl Finfo {
    pub fn kind(&self) -> FileKind {
        kind_of(self.raw.filetype)
    }
    /// Size in bytes.
    pub fn size(&self) -> u64 {
        u64::try_from(self.raw.size).unwrap_or(0)
    }
    /// Modification time, microseconds since the epoch.
    pub fn mtime(&self) -> i64 {
        self.raw.mtime
    }
    /// Inode change time, microseconds since the epoch: moves whenever
    /// the content is rewritten, even with the old mtime put back.
    pub fn ctime(&self) -> i64 {
        self.raw.ctime
    }
    pub fn device(&self) -> u64 {
        self.version().device
    }
    pub fn inode(&self) -> u64 {
        self.version().inode
    }
    /// Identity of this file version.
    // APR's dev/ino types are u64 here but narrower on other platforms.
    #[allow(clippy::useless_conversion)]
    pub fn version(&self) -> FileVersion {
        FileVersion {
            device: u64::from(self.raw.device),
            inode: u64::from(self.raw.inode),
            mtime: self.raw.mtime,
            ctime: self.raw.ctime,
            size: self.size(),
        }
    }

    /// Whether both describe the same file (device and inode).
    pub fn same_file(&self, other: &Finfo) -> bool {
        self.raw.device == other.raw.device && self.raw.inode == other.raw.inode
    }

    /// Owner uid, for `SymLinksIfOwnerMatch`.
    pub fn user(&self) -> u32 {
        self.raw.user
    }

    /// Whether its group or others may write it.
    pub fn writable_by_others(&self) -> bool {
        let w = (ffi::APR_FPROT_GWRITE | ffi::APR_FPROT_WWRITE) as ffi::apr_fileperms_t;
        self.raw.protection & w != 0
    }
}

fn kind_of(t: ffi::apr_filetype_e) -> FileKind {
    match t {
        ffi::apr_filetype_e_APR_NOFILE => FileKind::Missing,
        ffi::apr_filetype_e_APR_REG => FileKind::Regular,
        ffi::apr_filetype_e_APR_DIR => FileKind::Directory,
        ffi::apr_filetype_e_APR_LNK => FileKind::Symlink,
        _ => FileKind::Other,
    }
}

/// An open APR file in the request pool, which closes it: copies are the
/// same descriptor.
#[derive(Clone, Copy)]
pub struct File<'r> {
    pub(crate) fd: *mut ffi::apr_file_t,
    pub(crate) info: Finfo,
    pub(crate) _life: PhantomData<&'r ()>,
}

impl File<'_> {
    /// What `fstat` says of the open file.
    pub fn info(&self) -> &Finfo {
        &self.info
    }

    /// Reads up to `buf.len()` bytes at `offset`, without moving the
    /// stream position for later reads.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let mut os: c_int = -1;
        // SAFETY: out-parameter; fd is open.
        unsafe { ffi::apr_os_file_get(&mut os, self.fd) };
        // SAFETY: valid fd and buffer.
        let n = unsafe {
            libc::pread(
                os,
                buf.as_mut_ptr() as *mut c_void,
                buf.len(),
                offset as libc::off_t,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// Reads up to `len` bytes at `offset` into request-pool memory (no
    /// heap, no zeroing: only the bytes read are exposed).
    pub fn read_pool<'p>(
        &self,
        req: &Request<'p>,
        offset: u64,
        len: usize,
    ) -> io::Result<PoolBytes<'p>> {
        let mut os: c_int = -1;
        // SAFETY: out-parameter; fd is open.
        unsafe { ffi::apr_os_file_get(&mut os, self.fd) };
        // SAFETY: palloc gives len writable bytes living with the request
        // pool; pread writes at most len of them and we expose only those.
        unsafe {
            let p = ffi::apr_palloc(req.raw().pool, len.max(1)) as *mut u8;
            let n = libc::pread(os, p as *mut c_void, len, offset as libc::off_t);
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(PoolBytes(std::slice::from_raw_parts(p, n as usize)))
        }
    }

    /// Sequential reader from `offset` on.
    pub fn reader(&self, offset: u64) -> FileReader<'_, '_> {
        FileReader {
            file: self,
            pos: offset,
        }
    }
}

/// Bytes in the request pool, which a bucket may reference without a copy
/// for as long as the request (httpd copies them if the bucket outlives it).
#[derive(Clone, Copy)]
pub struct PoolBytes<'p>(pub(crate) &'p [u8]);

impl<'p> PoolBytes<'p> {
    /// The bytes, for as long as the pool.
    pub fn bytes(self) -> &'p [u8] {
        self.0
    }
}

impl std::ops::Deref for PoolBytes<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.0
    }
}

/// `Read` over an APR file with pread, so a decoder can pull from it.
pub struct FileReader<'f, 'r> {
    file: &'f File<'r>,
    pos: u64,
}

impl io::Read for FileReader<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(self.pos, buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

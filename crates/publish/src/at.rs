//! A file read in place by gdn-core's decoders, which take any
//! `ReadAt` and open nothing themselves.

use gdn_core::decode::ReadAt;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// An open file as a `ReadAt`: reads at an offset (pread), so one open
/// file serves every check of it.
pub struct FileAt<'f>(pub &'f File);

impl ReadAt for FileAt<'_> {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read_at(buf, offset)
    }
}

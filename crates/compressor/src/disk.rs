//! The filesystem steps the compressor's parts share: directories made as
//! the start-up check of the root wants them, and what a file takes
//! against the size limit.

use std::fs;
use std::io;
use std::path::Path;

/// Creates the directories `target` goes in, if needed: 0755 at most,
/// whatever the umask, as the start-up check of the root wants.
pub(super) fn dirs_for(target: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = target.parent().unwrap_or(Path::new("."));
    match fs::DirBuilder::new()
        .mode(0o755)
        .recursive(true)
        .create(dir)
    {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

/// What a file takes on disk: its allocated blocks (`st_blocks`, in
/// 512-byte units), what the size limit counts: a 1 KB copy takes a
/// whole block of the filesystem.
pub(super) fn allocated(meta: &fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.blocks() * 512
}

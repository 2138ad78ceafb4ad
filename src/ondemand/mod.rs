//! On-demand compression: for sites without a publish step, each
//! compressible file is compressed once, in the background, into a cache
//! (`GzipDiskNgCacheRoot`), and served from there as a sibling would be.
//! `key` names copies by the file version they were made from, `job` is
//! what children ask of the compressor, `compressor` is the process that
//! makes the copies with the publish tool's own lifecycle.

pub mod compressor;
pub mod job;
pub mod key;

//! On-demand compression: the module compresses each version of a file
//! once, in the background, with no publish step.
//!
//! In an `On` scope, a request for a compressible original whose coding
//! has no fresh sibling is served from a copy in the cache root when one
//! exists for the original's current version; otherwise it is answered as
//! without the cache and the file is queued. A separate compressor
//! process makes the copies with exactly what `gzip-disk-ng compress`
//! would write, checks the file's version before and after, and evicts the
//! least recently used copies beyond the size limit. Decoded copies do the
//! same for sibling-only pages served to clients accepting no coding.
//!
//! The compressor and the formats both sides share are the crate
//! gdn-compressor: `gdn_compressor::key` (what names a copy, and which
//! files are compressed on demand), `job` (the jobs children send),
//! `host` (which host and boot this is), `digests` (the records only it
//! trusts: which digest each file version has, in one table per boot) and
//! `pages` (the pages a site dictionary may learn). This folder is the request's side: it only
//! asks the compressor for work and reads what it wrote.
//!
//! - `ask`: what follows an answer: the copy sent marked used, the
//!   missing ones asked for;
//! - `cache`: where a copy would be, the jobs that ask for one, and the
//!   compressor process started with the configuration;
//! - `root`: whether a cache root only the server's user can write.

pub(crate) mod ask;
pub(crate) mod cache;
pub(crate) mod root;

//! What BREACH jitter works out per file version: the keyed padding
//! length (a hash of the file's head and tail) and the proof that a
//! brotli sibling ends where padding may go (two decodes).

use crate::memo::version::VersionMemo;
use gdn_core::jitter::NoJitter;
use gdn_httpd::FileVersion;

/// Entries kept, each memo.
const MAX_ENTRIES: usize = 16_384;

/// Keyed padding lengths per file version, max, bytes hashed and key id.
pub type PadInputs = (FileVersion, u32, u64, u64);

static LENGTHS: VersionMemo<PadInputs, u32> = VersionMemo::new(MAX_ENTRIES);

/// Brotli proofs (`jitter::prove_brotli`) per file version.
static BROTLI_PROOFS: VersionMemo<FileVersion, Result<(), NoJitter>> =
    VersionMemo::new(MAX_ENTRIES);

/// The keyed padding length remembered for `key`.
#[inline]
pub fn len(key: &PadInputs) -> Option<u32> {
    LENGTHS.get(key)
}

/// Remembers the keyed padding length for `key`.
#[inline]
pub fn put_len(key: PadInputs, pad: u32) {
    LENGTHS.put(key, pad);
}

/// The brotli proof remembered for version `v`.
#[inline]
pub fn brotli_proof(v: &FileVersion) -> Option<Result<(), NoJitter>> {
    BROTLI_PROOFS.get(v)
}

/// Remembers the brotli proof for version `v`.
#[inline]
pub fn put_brotli_proof(v: FileVersion, r: Result<(), NoJitter>) {
    BROTLI_PROOFS.put(v, r);
}

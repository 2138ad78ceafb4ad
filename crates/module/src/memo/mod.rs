//! What the module remembers per version of a file, in process memory,
//! bounded, on the one per-version memory (`version`): what a sibling's
//! header said (`header`), the sizes that order equal-q codings (`size`),
//! RFC 9530 digests (`digest`), the digests that name on-demand copies
//! (`source`), sibling verdicts (`verdict`, the verified ones also shared
//! by every process: `verified`), delta headers (`delta`),
//! jitter's padding lengths and brotli proofs (`padding`), the site
//! dictionary's hash (`dictionary`), stale siblings reported (`stale`),
//! files found in a store (`store`) and the validators core made for a
//! file (`validators`); and, by its bytes, what an `Accept-Encoding`
//! says (`accepted`). Not to be confused with the
//! on-disk on-demand cache (`ondemand::cache`).

/// A sibling version: its file's version and the coding it is read as.
/// What its header said, what was judged of it and what a full check
/// found are each remembered under it (the last two beside the original's
/// version they were judged against).
pub type SiblingVersion = (gdn_httpd::FileVersion, gdn_core::coding::Coding);

pub(crate) mod accepted;
pub(crate) mod delta;
pub(crate) mod dictionary;
pub(crate) mod digest;
pub(crate) mod header;
pub(crate) mod padding;
pub(crate) mod size;
pub(crate) mod source;
pub(crate) mod stale;
pub(crate) mod store;
pub(crate) mod validators;
pub(crate) mod verdict;
pub(crate) mod verified;
pub(crate) mod version;

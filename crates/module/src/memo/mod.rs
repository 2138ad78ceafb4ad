//! What the module remembers per version of a file, in process memory,
//! bounded: sibling facts (`facts`), the sizes that order equal-q codings
//! (`size`), RFC 9530 digests (`digest`), the digests that name on-demand copies
//! (`source`), on the one per-version memory
//! (`version`). Not to be confused with the on-disk on-demand cache
//! (`ondemand::cache`).

pub(crate) mod digest;
pub(crate) mod facts;
pub(crate) mod size;
pub(crate) mod source;
pub(crate) mod verdict;
pub(crate) mod version;

//! Site dictionaries on demand (filled in below).

use super::make::Ctx;
use crate::ondemand::key::Version;
use std::fs;
use std::path::Path;

impl Ctx<'_> {
    /// Records the HTML page at `path` for its host's site dictionary.
    pub(super) fn site_page(
        &self,
        _path: &Path,
        _meta: &fs::Metadata,
        _version: Version,
        _content: &[u8],
        _site: &[u8],
    ) {
    }
}

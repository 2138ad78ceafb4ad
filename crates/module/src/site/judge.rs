//! The judging of a host's pages for its site dictionary, once a training
//! period per process: the pages the files choose (`gdn_compressor::pages`),
//! each asked of Apache as its own direct request from a client no rule
//! knows, and kept only where no rule tells clients apart
//! (`Request::ask_public_at`). The verdicts go to the compressor, which
//! trains from the public pages and withdraws any dictionary that learned
//! a page judged not public now.

use crate::ondemand::cache;
use gdn_compressor::pages::{self, ChosenPage};
use gdn_httpd::{Level, Request};
use std::ffi::{CString, OsStr};
use std::hash::BuildHasher;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Judges the pages of the request's host when this process has not in
/// the current training period (`period` seconds), and sends the
/// verdicts. Runs after the response was handed to the network.
pub fn judge(req: &Request<'_>, cache: &cache::Active, period: u32) {
    let host = req.host_key();
    let tick = req.request_time_secs() / i64::from(period.max(1));
    if !JUDGED.take(host, tick) {
        return;
    }
    let (_, root) = req.server_name_and_root();
    if root.first() != Some(&b'/') {
        return;
    }
    let root_path = Path::new(OsStr::from_bytes(root));
    let list = pages::candidates(root_path);
    let mut bits = Vec::new();
    let mut public = 0;
    for (i, c) in list.iter().enumerate() {
        if is_public(req, root_path, c) {
            pages::set_bit(&mut bits, i);
            public += 1;
        }
    }
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
    let sent = cache.queue_train(root, host, &pages::digest(&list), &bits, at);
    req.log_with(Level::Debug, 0, || {
        format!(
            "site dictionary pages under {}: {public} of {} public{}",
            root_path.display(),
            list.len(),
            if sent { "" } else { " (not sent)" }
        )
    });
}

/// Whether every client may GET the page `c` under `root`, as Apache
/// answers for its URI.
fn is_public(req: &Request<'_>, root: &Path, c: &ChosenPage) -> bool {
    let (Ok(uri), Ok(path)) = (
        CString::new(c.uri()),
        CString::new(c.path(root).into_os_string().into_vec()),
    ) else {
        return false;
    };
    match crate::policy::public(&req.ask_public_at(&uri, &path)) {
        Ok(()) => true,
        Err(refusal) => {
            req.log_with(Level::Debug, 0, || {
                format!(
                    "{} not learned by the site dictionary: not every client may GET it ({refusal})",
                    c.rel.display()
                )
            });
            false
        }
    }
}

/// The training period each host's pages were last judged in by this
/// process: a slot per host by its key's hash, holding the hash's high
/// 32 bits and the period's low 32, read and written without a lock.
/// Two hosts of a slot take turns (each is judged more often).
static JUDGED: Periods = Periods::new();

struct Periods {
    slots: [AtomicU64; SLOTS],
}

const SLOTS: usize = 16;

impl Periods {
    const fn new() -> Self {
        Periods {
            slots: [const { AtomicU64::new(0) }; SLOTS],
        }
    }

    /// Whether the host `host_key` is to be judged in `tick`: true once
    /// per tick (and per process), for the caller that swapped it in.
    fn take(&self, host_key: &[u8], tick: i64) -> bool {
        let h = rustc_hash::FxBuildHasher.hash_one(host_key);
        let slot = &self.slots[(h as usize) % SLOTS];
        let entry = (h >> 32) << 32 | u64::from(tick as u32);
        slot.swap(entry, Ordering::Relaxed) != entry
    }
}

#[cfg(test)]
mod tests {
    use super::Periods;

    #[test]
    fn a_host_is_judged_once_a_period() {
        let j = Periods::new();
        assert!(j.take(b"a:80@main", 7));
        assert!(!j.take(b"a:80@main", 7));
        assert!(j.take(b"b:80@x:3", 7), "another host");
        assert!(j.take(b"a:80@main", 8), "the next period");
        assert!(!j.take(b"a:80@main", 8));
    }
}

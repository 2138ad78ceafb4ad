//! The copies asked for and not made yet: a bounded set, ordered by how
//! often and how recently each was asked for, that the workers work
//! through, most asked first and, among equals, first asked first. Asking
//! again for a wanted copy counts it once more (and adds the codings it
//! lacked); a full set drops its coldest entry, the least asked and least
//! recently asked, never the one just asked for. No I/O: `backlog` keeps
//! it on disk across restarts.

use crate::job::OwnedJob;
use crate::key::Version;
use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};

/// Most entries wanted at once: one per file version (its codings and
/// deltas merged) or decoded sibling. A site of this many pages asked
/// for in one pass loses none.
pub(super) const MAX_WANTED: usize = 1 << 18;

/// An entry's identity: the version, and 0 for its compress job or 1 +
/// the coding for the decoded copy of that sibling.
pub(super) type WantKey = (Version, u8);

/// The work order: most asked first, then first asked first.
type WorkRank = (Reverse<u32>, u64);
/// The drop order: least asked, then least recently asked, first.
type ColdRank = (u32, u64);

struct Want {
    job: OwnedJob,
    hits: u32,
    /// Sequence numbers of the first and the last ask.
    first: u64,
    last: u64,
    /// When it was first asked for, seconds since the epoch.
    since: u64,
    /// A worker has it.
    taken: bool,
}

/// What asking for a job did.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Added {
    /// Copies the job asked for that were wanted already.
    pub(super) merged: usize,
    /// Copies dropped with the coldest entry to make room.
    pub(super) dropped: usize,
}

/// The wanted set.
pub(super) struct WantedSet {
    entries: HashMap<WantKey, Want>,
    work: BTreeMap<WorkRank, WantKey>,
    cold: BTreeMap<ColdRank, WantKey>,
    seq: u64,
    max: usize,
}

/// The key of a compress or decode job (`None` for a touch or training).
pub(super) fn key_of(job: &OwnedJob) -> Option<WantKey> {
    match job {
        OwnedJob::Compress { version, .. } => Some((*version, 0)),
        OwnedJob::Decode {
            version, coding, ..
        } => Some((*version, 1 + coding.index() as u8)),
        OwnedJob::Touch { .. } | OwnedJob::Train { .. } => None,
    }
}

/// The copies `job` asks for, counted as the counters count them.
pub(super) fn copies_of(job: &OwnedJob) -> usize {
    match job {
        OwnedJob::Compress { codings, .. } => codings.len(),
        OwnedJob::Decode { .. } => 1,
        OwnedJob::Touch { .. } | OwnedJob::Train { .. } => 0,
    }
}

/// `job` with what `more` asks for added (the same key's).
fn merge(job: &mut OwnedJob, more: OwnedJob) -> usize {
    match (job, more) {
        (
            OwnedJob::Compress {
                codings, deltas, ..
            },
            OwnedJob::Compress {
                codings: c,
                deltas: d,
                ..
            },
        ) => {
            let known = c.iter().filter(|&x| codings.contains(x)).count();
            *codings = c.iter().fold(*codings, |set, x| set.with(x));
            if deltas.is_none() {
                *deltas = d;
            }
            known
        }
        _ => 1,
    }
}

impl WantedSet {
    pub(super) fn new(max: usize) -> WantedSet {
        WantedSet {
            entries: HashMap::new(),
            work: BTreeMap::new(),
            cold: BTreeMap::new(),
            seq: 0,
            max: max.max(1),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry waits for a worker.
    pub(super) fn idle(&self) -> bool {
        self.work.is_empty()
    }

    /// When the longest wanted entry was first asked for (seconds since
    /// the epoch), if any.
    pub(super) fn oldest(&self) -> Option<u64> {
        self.entries.values().map(|w| w.since).min()
    }

    /// Asks for `job` (`hits` times, first at `since`).
    pub(super) fn add(&mut self, job: OwnedJob, hits: u32, since: u64) -> Added {
        let Some(key) = key_of(&job) else {
            return Added::default();
        };
        self.seq += 1;
        let seq = self.seq;
        if let Some(w) = self.entries.get_mut(&key) {
            let merged = merge(&mut w.job, job);
            if !w.taken {
                self.work.remove(&(Reverse(w.hits), w.first));
            }
            self.cold.remove(&(w.hits, w.last));
            w.hits = w.hits.saturating_add(hits);
            w.last = seq;
            w.since = w.since.min(since);
            if !w.taken {
                self.work.insert((Reverse(w.hits), w.first), key);
            }
            self.cold.insert((w.hits, w.last), key);
            return Added { merged, dropped: 0 };
        }
        let dropped = if self.entries.len() >= self.max {
            self.drop_coldest()
        } else {
            0
        };
        let hits = hits.max(1);
        self.work.insert((Reverse(hits), seq), key);
        self.cold.insert((hits, seq), key);
        let w = Want {
            job,
            hits,
            first: seq,
            last: seq,
            since,
            taken: false,
        };
        self.entries.insert(key, w);
        Added { merged: 0, dropped }
    }

    /// Forgets the coldest entry; the copies it asked for.
    fn drop_coldest(&mut self) -> usize {
        let Some((_, key)) = self.cold.pop_first() else {
            return 0;
        };
        let Some(w) = self.entries.remove(&key) else {
            return 0;
        };
        if !w.taken {
            self.work.remove(&(Reverse(w.hits), w.first));
        }
        copies_of(&w.job)
    }

    /// The most wanted entry no worker has, now taken.
    pub(super) fn take(&mut self) -> Option<(WantKey, OwnedJob)> {
        let (_, key) = self.work.pop_first()?;
        let w = self.entries.get_mut(&key)?;
        w.taken = true;
        Some((key, w.job.clone()))
    }

    /// A worker finished `key`, having done what `job` asked: the entry
    /// goes, unless it was asked for more meanwhile (another coding,
    /// deltas), which waits again.
    pub(super) fn done(&mut self, key: &WantKey, job: &OwnedJob) {
        let Some(w) = self.entries.get_mut(key) else {
            return;
        };
        let rest = match (&mut w.job, job) {
            (
                OwnedJob::Compress {
                    codings, deltas, ..
                },
                OwnedJob::Compress {
                    codings: did,
                    deltas: d,
                    ..
                },
            ) => {
                *codings = did.iter().fold(*codings, |set, c| set.without(c));
                if d.is_some() {
                    *deltas = None;
                }
                !codings.is_empty() || deltas.is_some()
            }
            _ => false,
        };
        if rest {
            w.taken = false;
            self.work.insert((Reverse(w.hits), w.first), *key);
            return;
        }
        if let Some(w) = self.entries.remove(key) {
            self.cold.remove(&(w.hits, w.last));
        }
    }

    /// Every entry, taken ones too, most wanted first: what is written
    /// down at stop. (job, hits, since).
    pub(super) fn entries(&self) -> Vec<(&OwnedJob, u32, u64)> {
        let mut all: Vec<_> = self.entries.values().collect();
        all.sort_by_key(|w| (Reverse(w.hits), w.first));
        all.into_iter().map(|w| (&w.job, w.hits, w.since)).collect()
    }

    /// Gives back the memory of entries gone, once most have.
    pub(super) fn shrink(&mut self) {
        if self.entries.capacity() > 4 * self.entries.len().max(1024) {
            self.entries.shrink_to_fit();
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::job::CodingSet;
    use gdn_core::coding::Coding;

    /// A job for the copy in `c` of the `n`th file (its path, size and
    /// inode `n`): the wanted set's and the backlog's tests' fixture.
    pub(crate) fn job(n: u64, c: Coding) -> OwnedJob {
        OwnedJob::Compress {
            path: format!("/p/{n}").into(),
            version: Version {
                local: crate::key::Local {
                    device: 1,
                    inode: n,
                    ctime_us: 0,
                },
                size: n,
                mtime_us: 0,
            },
            codings: CodingSet::empty().with(c),
            deltas: None,
        }
    }

    fn path(j: &OwnedJob) -> String {
        match j {
            OwnedJob::Compress { path, .. } => path.display().to_string(),
            _ => String::new(),
        }
    }

    #[test]
    fn most_asked_first_then_first_asked() {
        let mut w = WantedSet::new(10);
        for n in 1..=3 {
            w.add(job(n, Coding::Br), 1, n);
        }
        let again = w.add(job(3, Coding::Br), 1, 9);
        assert_eq!(again.merged, 1);
        assert_eq!(w.len(), 3);
        assert_eq!(w.oldest(), Some(1));
        let order: Vec<_> = std::iter::from_fn(|| w.take())
            .map(|t| path(&t.1))
            .collect();
        assert_eq!(order, ["/p/3", "/p/1", "/p/2"]);
        assert!(w.idle());
    }

    #[test]
    fn a_full_set_drops_the_coldest_never_the_newest() {
        let mut w = WantedSet::new(3);
        for n in 1..=3 {
            w.add(job(n, Coding::Br), 1, 0);
        }
        w.add(job(1, Coding::Br), 1, 0);
        // 2 is the least asked and least recently asked.
        assert_eq!(w.add(job(4, Coding::Br), 1, 0).dropped, 1);
        let left: Vec<_> = std::iter::from_fn(|| w.take())
            .map(|t| path(&t.1))
            .collect();
        assert_eq!(left, ["/p/1", "/p/3", "/p/4"]);
    }

    #[test]
    fn codings_asked_while_taken_wait_again() {
        let mut w = WantedSet::new(3);
        w.add(job(1, Coding::Br), 1, 0);
        let (key, taken) = w.take().unwrap();
        w.add(job(1, Coding::Zstd), 1, 0);
        assert!(w.take().is_none(), "taken");
        w.done(&key, &taken);
        let (key, again) = w.take().unwrap();
        let OwnedJob::Compress { codings, .. } = &again else {
            panic!()
        };
        assert_eq!(codings.iter().collect::<Vec<_>>(), [Coding::Zstd]);
        w.done(&key, &again);
        assert_eq!(w.len(), 0);
    }
}

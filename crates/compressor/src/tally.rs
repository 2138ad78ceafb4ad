//! What became of the copies asked for: the word the compressor's events
//! and the module's counters share.

/// What became of an on-demand copy asked for, counted per copy (one
/// job for two codings is two).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Job {
    /// Sent to the compressor.
    Queued,
    /// Not sent (the channel was full) or dropped by the compressor (its
    /// queue was full): a later request asks again.
    Dropped,
    /// Already pending, made, or failed before: nothing more to do.
    Merged,
    /// The copy was written.
    Done,
    /// Compressing it was not worth it; a marker says so.
    NotWorth,
    /// The file changed or vanished, or it could not be done.
    Failed,
}

impl Job {
    pub const ALL: [Job; 6] = [
        Job::Queued,
        Job::Dropped,
        Job::Merged,
        Job::Done,
        Job::NotWorth,
        Job::Failed,
    ];

    pub fn index(self) -> usize {
        match self {
            Job::Queued => 0,
            Job::Dropped => 1,
            Job::Merged => 2,
            Job::Done => 3,
            Job::NotWorth => 4,
            Job::Failed => 5,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Job::Queued => "queued",
            Job::Dropped => "dropped",
            Job::Merged => "merged",
            Job::Done => "done",
            Job::NotWorth => "not_worth",
            Job::Failed => "failed",
        }
    }
}

//! What became of the copies asked for: the word the compressor's events
//! and the module's counters share.

/// What became of an on-demand copy asked for, counted per copy (one
/// job for two codings is two).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyFate {
    /// Sent to the compressor.
    Queued,
    /// Not sent (the channel was full) or dropped by the compressor (its
    /// queue was full): a later request asks again.
    Dropped,
    /// Already pending, made, or failed before: nothing more to do.
    Merged,
    /// The copy was written.
    Done,
    /// Compressing it was not worth it; a stand-in says so.
    NotWorth,
    /// The file changed or vanished, or it could not be done.
    Failed,
}

impl CopyFate {
    pub const ALL: [CopyFate; 6] = [
        CopyFate::Queued,
        CopyFate::Dropped,
        CopyFate::Merged,
        CopyFate::Done,
        CopyFate::NotWorth,
        CopyFate::Failed,
    ];

    pub fn index(self) -> usize {
        match self {
            CopyFate::Queued => 0,
            CopyFate::Dropped => 1,
            CopyFate::Merged => 2,
            CopyFate::Done => 3,
            CopyFate::NotWorth => 4,
            CopyFate::Failed => 5,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            CopyFate::Queued => "queued",
            CopyFate::Dropped => "dropped",
            CopyFate::Merged => "merged",
            CopyFate::Done => "done",
            CopyFate::NotWorth => "not_worth",
            CopyFate::Failed => "failed",
        }
    }
}

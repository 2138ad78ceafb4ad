//! What can go wrong while `compress` works on one file, as one type, so
//! the lifecycle and the steps around it pass errors on without turning
//! them into text until they are told.

use std::error::Error;
use std::fmt;
use std::io;
use std::path::PathBuf;

/// Why something made earlier is being removed; its error names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Removal {
    /// A sibling that saves too little now.
    NoLongerPays,
    /// A delta that is no longer made (not smaller, or too large).
    NotMade,
    /// A delta whose dictionary is no longer one of the file's.
    Stale,
}

/// A problem with one file, one of its siblings or one of its deltas.
#[derive(Debug)]
pub enum PublishError {
    /// The original cannot be stat'ed.
    Stat(io::Error),
    /// The original cannot be read.
    Read(io::Error),
    /// The original cannot be stat'ed again to see whether it changed.
    StatAgain(io::Error),
    /// The original changed while it was being compressed.
    Changed,
    /// A sibling or delta cannot be written.
    Write(PathBuf, io::Error),
    /// A sibling or delta cannot be removed.
    Remove(Removal, PathBuf, io::Error),
    /// A delta cannot be encoded.
    Encode(io::Error),
    /// The original's name cannot carry a delta's suffix.
    NameNotUtf8,
    /// A stored earlier version cannot be read.
    LoadVersion(PathBuf, io::Error),
    /// A stale sibling does not give back the version it was made from.
    Recover(PathBuf, Box<dyn Error + Send + Sync>),
    /// The recovered earlier version cannot be stored.
    Store(io::Error),
    /// The stored versions cannot be pruned.
    Prune(io::Error),
    /// `--remove-originals`: a sibling does not decode back to the original.
    SiblingDiffers(String, String),
    /// `--remove-originals`: the original changed after its siblings were
    /// checked.
    ChangedBeforeRemoval,
    /// `--remove-originals`: the original cannot be removed.
    RemoveOriginal(io::Error),
}

/// The words of `PublishError::Changed`, also part of another message.
const CHANGED: &str = "file changed while being compressed; left as it was";

impl fmt::Display for PublishError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use PublishError::*;
        match self {
            Stat(e) => write!(f, "cannot stat: {e}"),
            Read(e) => write!(f, "cannot read: {e}"),
            StatAgain(e) => write!(f, "cannot stat again: {e}"),
            Changed => f.write_str(CHANGED),
            Write(p, e) => write!(f, "cannot write {}: {e}", p.display()),
            Remove(Removal::NoLongerPays, p, e) => {
                write!(f, "cannot remove {} that no longer pays: {e}", p.display())
            }
            Remove(Removal::NotMade, p, e) => write!(f, "cannot remove {}: {e}", p.display()),
            Remove(Removal::Stale, p, e) => write!(f, "cannot remove stale {}: {e}", p.display()),
            Encode(e) => write!(f, "cannot encode: {e}"),
            NameNotUtf8 => f.write_str("file name is not valid UTF-8"),
            LoadVersion(p, e) => write!(f, "cannot read stored version {}: {e}", p.display()),
            Recover(p, e) => write!(
                f,
                "cannot recover the previous version from {}: {e}",
                p.display()
            ),
            Store(e) => write!(f, "cannot store the previous version: {e}"),
            Prune(e) => write!(f, "cannot prune stored versions: {e}"),
            SiblingDiffers(name, why) => write!(f, "original kept: sibling {name} {why}"),
            ChangedBeforeRemoval => write!(f, "original kept: {CHANGED}"),
            RemoveOriginal(e) => write!(f, "cannot remove original: {e}"),
        }
    }
}

impl Error for PublishError {}

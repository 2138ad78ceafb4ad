//! Whether a sibling may be sent (or decoded): judged once per sibling
//! version (`memo::verdict`), by the core's one judgement of what is
//! broken (`gdn_core::decode::verdict`).
//!
//! The first request that meets a sibling version runs the checks that
//! cost nothing (not empty, its header decodes, the size it states is the
//! original's). A sibling of at most `IN_REQUEST_MAX` bytes, whose
//! original is at most `ORIGINAL_MAX`, is then decoded to its end in that
//! request and compared with the original's SHA-256: a few milliseconds,
//! once per version, so no client ever gets a small broken sibling. A
//! check's finding (whole, broken, or past the bound of a decode without
//! an original) holds for every process of the server (`memo::verified`):
//! the check runs once per version of both files for the whole server,
//! not once per child. A larger one (up to `BACKGROUND_MAX`) is checked
//! the same way by the checker thread of the process that claimed its
//! check first, off the request path: one with an
//! original is not sent until its check ends (the original, or another
//! representation, answers meanwhile); one without, the only file, is
//! sent on the cheap checks' word. One found broken, by
//! either check or by a decode that failed, is never sent nor decoded
//! again in its version: the next representation answers, and one
//! warning names the file and the fix.

use super::inspect::Readable;
use super::responder::Responder;
use crate::memo::verdict::{self, Judged, Why};
use crate::memo::verified::{self, Found};
use crate::memo::SiblingVersion;
use crate::metrics::counters;
use crate::metrics::tally::Reason;
use gdn_core::coding::Coding;
use gdn_core::decode::verdict::{cheap, full_within, Broken, OriginalDigest};
use gdn_core::decode::{self as decode, HeaderFacts};
use gdn_httpd::{File, FileVersion, Level, Request};
use std::ffi::CStr;
use std::fs;
use std::io::BufReader;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, SyncSender};
use std::sync::Mutex;

/// Largest sibling decoded to its end in the request that first meets it.
const IN_REQUEST_MAX: u64 = 512 << 10;

/// Largest original whose digest that request works out.
const ORIGINAL_MAX: u64 = 16 << 20;

/// Largest sibling (and original) the checker thread decodes; larger ones
/// are judged by the cheap checks and by the decodes that read them whole.
const BACKGROUND_MAX: u64 = 64 << 20;

/// Most bytes the full check of a sibling without an original decodes
/// (one with an original decodes at most its length and a byte): a bomb
/// costs this much once per version for the server, not its whole
/// content in every child.
/// A sibling past it is judged by the cheap checks.
const DECODED_MAX: u64 = 64 << 20;

/// Checks waiting for the checker thread at most; one that finds it full
/// is asked again by a later request.
const QUEUE: usize = 64;

/// The judgement of coding `c`'s sibling `file` (at `path`): from the
/// memo, or made now. A broken sibling found by another request or by
/// the checker thread is told here, once.
pub(super) fn judged(a: &Responder<'_, '_>, c: Coding, file: &File<'_>, path: &CStr) -> Judged {
    let key = (file.info().version(), c);
    let memo = verdict::get(&key, a.original());
    let shared = match memo {
        None | Some(Judged::Cheap) => verified::found(&key, a.original()),
        Some(_) => None,
    };
    let j = match (memo, shared) {
        (_, Some(f)) => found_elsewhere(a, key, path, memo.is_some(), f),
        (Some(Judged::Cheap), None) if waits_for_a_check(file) => ask_again(a, c, file, path, key),
        (Some(j), None) => j,
        (None, None) => judge(a, c, file, path, key, false),
    };
    if let Judged::Broken { why, told: false } = j {
        tell(a.req, c, path, &key, why.text());
    }
    j
}

/// What another process's check (or this one's checker thread) found of
/// a sibling version: remembered here too, never decoded again. A broken
/// one was told by the process that found it.
fn found_elsewhere(
    a: &Responder<'_, '_>,
    key: SiblingVersion,
    path: &CStr,
    known: bool,
    f: Found,
) -> Judged {
    let j = match f {
        Found::Whole => Judged::Whole,
        Found::PastBound => Judged::Cheap,
        Found::Broken(why) => Judged::Broken { why, told: true },
    };
    match known {
        false => verdict::put(key, a.original(), j),
        true => verdict::checked(key, a.original(), j),
    }
    a.req.log_with(Level::Trace1, 0, || {
        format!(
            "sibling judged by another check ({f:?}): {}",
            path.to_string_lossy()
        )
    });
    j
}

/// Whether a sibling is decoded to its end in the request that meets it.
fn in_request(a: &Responder<'_, '_>, size: u64) -> bool {
    size <= IN_REQUEST_MAX && a.original().is_none_or(|o| o.size <= ORIGINAL_MAX)
}

/// Whether a sibling judged by the cheap checks alone still waits for a
/// full check that may be asked for again: one is made, and its finding
/// shared (else this process's one check was all).
fn waits_for_a_check(file: &File<'_>) -> bool {
    file.info().size() <= BACKGROUND_MAX && verified::shared()
}

/// A sibling whose check has found nothing yet: judged again where no
/// process holds a claim of its check (the one that did ended without a
/// finding, its finding's slot was taken by another, or it was killed).
fn ask_again(
    a: &Responder<'_, '_>,
    c: Coding,
    file: &File<'_>,
    path: &CStr,
    key: SiblingVersion,
) -> Judged {
    match verified::claim(&key, a.original()) {
        true => judge(a, c, file, path, key, true),
        false => Judged::Cheap,
    }
}

/// Judges a sibling version met for the first time (or asked again,
/// `claimed`).
fn judge(
    a: &Responder<'_, '_>,
    c: Coding,
    file: &File<'_>,
    path: &CStr,
    key: SiblingVersion,
    claimed: bool,
) -> Judged {
    let size = file.info().size();
    let facts = match cheap(c, &Readable(*file), size, a.original().map(|o| o.size)) {
        Ok(f) => f,
        Err(b) => {
            verdict::put(key, a.original(), broken(&b, false));
            tell(a.req, c, path, &key, &b.to_string());
            return broken(&b, true);
        }
    };
    if facts.browser_refusal(c).is_some() {
        verdict::put(key, a.original(), Judged::Refused);
        return Judged::Refused;
    }
    // One process checks for all; a sibling with no original is the only
    // file, and is checked here whatever another does.
    let claimed = claimed || verified::claim(&key, a.original());
    let j = match in_request(a, size) {
        true if claimed || a.original().is_none() => {
            let j = checked_here(a, c, path, key, full_check(a, c, file, &facts));
            if claimed {
                verified::release(&key, a.original());
            }
            j
        }
        true => Judged::Cheap,
        false => {
            let checkable =
                size <= BACKGROUND_MAX && a.original().is_none_or(|o| o.size <= BACKGROUND_MAX);
            if claimed && checkable && !queue_check(a, c, path, key, facts) {
                // Its queue was full: a later request asks again.
                verified::release(&key, a.original());
            }
            Judged::Cheap
        }
    };
    if !matches!(j, Judged::Broken { .. }) {
        verdict::put(key, a.original(), j);
    }
    j
}

fn broken(b: &Broken, told: bool) -> Judged {
    Judged::Broken {
        why: Why::of(b),
        told,
    }
}

/// What the full check in the request found, shared with every process
/// (a broken sibling also remembered and told here).
fn checked_here(
    a: &Responder<'_, '_>,
    c: Coding,
    path: &CStr,
    key: SiblingVersion,
    check: Result<(), Broken>,
) -> Judged {
    let found = match check {
        Ok(()) => Found::Whole,
        Err(Broken::Undecodable(decode::DecodeError::TooLarge(_))) => Found::PastBound,
        // A read that failed: not judged.
        Err(Broken::Undecodable(decode::DecodeError::Io(_))) => return Judged::Cheap,
        Err(b) => {
            verified::put(&key, a.original(), Found::Broken(Why::of(&b)));
            verdict::put(key, a.original(), broken(&b, false));
            tell(a.req, c, path, &key, &b.to_string());
            return broken(&b, true);
        }
    };
    verified::put(&key, a.original(), found);
    a.req.log_with(Level::Trace1, 0, || match found {
        Found::PastBound => format!(
            "sibling decodes past {} MiB, judged by its cheap checks: {}",
            DECODED_MAX >> 20,
            path.to_string_lossy()
        ),
        _ => format!("sibling decoded to its end: {}", path.to_string_lossy()),
    });
    match found {
        Found::Whole => Judged::Whole,
        _ => Judged::Cheap,
    }
}

/// Decodes `file` to its end in this request and compares it with the
/// original, where there is one.
fn full_check(
    a: &Responder<'_, '_>,
    c: Coding,
    file: &File<'_>,
    facts: &HeaderFacts,
) -> Result<(), Broken> {
    let original = match a.original() {
        None => None,
        Some(_) => {
            let Ok(o) = crate::lookup::open_as_allowed(a.req, a.filename) else {
                // The original unreadable now: the sibling is judged by
                // its decode alone.
                return full_within(c, file.reader(0), Some(facts), None, DECODED_MAX).map(|_| ());
            };
            OriginalDigest::of(o.reader(0)).ok()
        }
    };
    full_within(
        c,
        file.reader(0),
        Some(facts),
        original.as_ref(),
        DECODED_MAX,
    )
    .map(|_| ())
}

/// Says once, per process and version, that a sibling is broken, and
/// counts it.
pub(super) fn tell(req: &Request<'_>, c: Coding, path: &CStr, key: &SiblingVersion, why: &str) {
    if !verdict::tell(key) {
        return;
    }
    counters::passed_over(Reason::Broken, c);
    let shown = path.to_string_lossy();
    let dir = Path::new(&*shown)
        .parent()
        .map_or_else(|| ".".into(), |p| p.display().to_string());
    req.log(
        Level::Warn,
        0,
        &format!(
            "broken sibling {shown}: {why}; not sent in this version, another representation \
             is; `gzip-disk-ng compress {dir}` makes it again from its original \
             (`gzip-disk-ng verify` lists such siblings)"
        ),
    );
}

/// A sibling found broken while it was decoded for a client: remembered
/// and told like one the checks found.
pub(super) fn found_broken(
    a: &Responder<'_, '_>,
    c: Coding,
    path: &CStr,
    version: FileVersion,
    e: &decode::DecodeError,
) {
    let key = (version, c);
    verdict::put(
        key,
        a.original(),
        Judged::Broken {
            why: Why::Undecodable,
            told: false,
        },
    );
    tell(a.req, c, path, &key, &format!("it does not decode: {e}"));
}

/// A full check for the checker thread.
struct Check {
    sibling: PathBuf,
    coding: Coding,
    key: SiblingVersion,
    facts: HeaderFacts,
    original: Option<(PathBuf, FileVersion)>,
}

/// The checker thread's queue, started by the first check asked for.
static CHECKER: Mutex<Option<SyncSender<Check>>> = Mutex::new(None);

/// Asks the checker thread for the full check of a sibling too large to
/// decode in the request; whether it took it (its queue was not full).
fn queue_check(
    a: &Responder<'_, '_>,
    c: Coding,
    path: &CStr,
    key: SiblingVersion,
    facts: HeaderFacts,
) -> bool {
    let os = |p: &CStr| PathBuf::from(std::ffi::OsStr::from_bytes(p.to_bytes()));
    let check = Check {
        sibling: os(path),
        coding: c,
        key,
        facts,
        original: a.original().map(|v| (os(a.filename), v)),
    };
    let Ok(mut guard) = CHECKER.lock() else {
        return false;
    };
    if guard.is_none() {
        let (tx, rx) = mpsc::sync_channel::<Check>(QUEUE);
        let spawned = std::thread::Builder::new()
            .name("gdn-check".into())
            .spawn(move || rx.into_iter().for_each(run_ended));
        if spawned.is_err() {
            return false;
        }
        *guard = Some(tx);
    }
    guard.as_ref().is_some_and(|tx| tx.try_send(check).is_ok())
}

/// Runs one full check, then ends its claim whatever it found.
fn run_ended(ch: Check) {
    let (key, original) = (ch.key, ch.original.as_ref().map(|(_, v)| *v));
    run_check(ch);
    verified::release(&key, original);
}

/// Opens `path` if it is still the very version `v` (device, inode,
/// size, and mtime and ctime as APR has them, in microseconds): the
/// verdict is recorded under `v`, so it must be of `v`'s bytes.
fn open_version(path: &Path, v: &FileVersion) -> Option<fs::File> {
    let f = fs::File::open(path).ok()?;
    let m = f.metadata().ok()?;
    let usec = |s: i64, ns: i64| s.saturating_mul(1_000_000).saturating_add(ns / 1_000);
    let now = FileVersion {
        device: m.dev(),
        inode: m.ino(),
        mtime: usec(m.mtime(), m.mtime_nsec()),
        ctime: usec(m.ctime(), m.ctime_nsec()),
        size: m.size(),
    };
    (m.is_file() && now == *v).then_some(f)
}

/// Runs one full check and records its verdict; a file changed since is
/// another version, judged when a request meets it.
fn run_check(ch: Check) {
    let Some(sib) = open_version(&ch.sibling, &ch.key.0) else {
        return;
    };
    let original = match &ch.original {
        None => None,
        Some((p, v)) => {
            let Some(f) = open_version(p, v) else { return };
            match OriginalDigest::of(BufReader::with_capacity(64 << 10, f)) {
                Ok(o) => Some(o),
                Err(_) => return,
            }
        }
    };
    let j = match full_within(
        ch.coding,
        BufReader::new(sib),
        Some(&ch.facts),
        original.as_ref(),
        DECODED_MAX,
    ) {
        Ok(_) => Found::Whole,
        Err(Broken::Undecodable(decode::DecodeError::Io(_))) => return,
        Err(Broken::Undecodable(decode::DecodeError::TooLarge(_))) => Found::PastBound,
        Err(b) => Found::Broken(Why::of(&b)),
    };
    let original_version = ch.original.as_ref().map(|(_, v)| *v);
    verified::put(&ch.key, original_version, j);
    let j = match j {
        Found::Whole => Judged::Whole,
        Found::PastBound => return,
        Found::Broken(why) => Judged::Broken { why, told: false },
    };
    verdict::checked(ch.key, ch.original.map(|(_, v)| v), j);
}

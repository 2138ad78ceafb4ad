//! The module's side of on-demand compression: the compressor started
//! with the configuration, and, on the request path, where a copy of a
//! file version would be in the cache, and the jobs that ask for one.
//!
//! One cache and one compressor serve the Apache instance (the main
//! server's `GzipDiskNgCacheRoot`). Children send jobs on the compressor's
//! channel without blocking; the compressor keeps what they ask for in
//! its wanted set (a job the channel has no room for is dropped, and a
//! later request sends it again).
//!
//! A copy is found by the digest of the bytes of the very file the
//! request resolved to (`source`): learned once per process and file
//! version from the record this host's compressor wrote while it read
//! that file, so what another file, host or folder holds never answers
//! for it.

use crate::config::ServerConfig;
use gdn_core::coding::Coding;
use gdn_httpd::helper::{self, Channel};
use gdn_httpd::ServerLog;
use gdn_httpd::{FileKind, Finfo, Level, PostConfig, Request};

use crate::memo;
use crate::metrics::counters;
use gdn_compressor::digests;
use gdn_compressor::host::Host;
use gdn_compressor::job::{self, CodingSet, Job, JobDeltas};
use gdn_compressor::key::{self, Kind, NameBuf, Named, SourceHash, Version};
use gdn_compressor::settings::{CompressorSettings, Event, Stop, FAST_LEVELS};
use gdn_compressor::tally;
use std::ffi::{CStr, CString};
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io::Read;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};

/// Copies evicted between two of the compressor's reports after which
/// the allocator gives the memory their entries took back to the system
/// (glibc's keeps it otherwise, and the compressor's RSS stays at its
/// peak).
const TRIM_AFTER: u64 = 4096;

/// What the children know of this generation's cache.
pub struct Active {
    /// The cache root, ending in `/`.
    root: CString,
    /// This host's table of file versions' digests (`digests`).
    records: CString,
    channel: Channel,
    /// The uid copies are made as (the compressor runs as `User`): a
    /// copy owned by anyone else was planted, not made.
    uid: u32,
}

/// Set in the parent by `start`, before the children fork; a restart
/// starts a new generation. Records are leaked (a few dozen bytes per
/// restart) so children hold plain references.
static ACTIVE: RwLock<Option<&'static Active>> = RwLock::new(None);

/// The cache of this Apache instance, if one is configured and its
/// compressor started.
pub fn active() -> Option<&'static Active> {
    *ACTIVE.read().unwrap_or_else(PoisonError::into_inner)
}

/// What the compressor process runs with, set before it is forked.
static SETTINGS: Mutex<Option<CompressorSettings>> = Mutex::new(None);

/// What the compressor is told: the cache root and limit, its workers
/// and their priority, the levels of its first and best copies.
fn settings_of(sc: &ServerConfig, root: &Path, host: &Host) -> CompressorSettings {
    CompressorSettings {
        root: root.to_path_buf(),
        host: host.clone(),
        max_size: sc.cache_max_size(),
        workers: sc.compressor_workers(),
        worker_nice: COMPRESSOR_NICE,
        levels: gdn_core::encode::Levels::default(),
        fast_levels: Some(FAST_LEVELS),
        min_saving: gdn_publish::CompressOptions::default().min_saving,
        delta_levels: gdn_core::delta_codec::DeltaLevels::default(),
    }
}

/// Room for `CHANNEL_BYTES` of jobs in the children's end of `channel`,
/// with an info line when the kernel gives less.
fn reserve_room(ctx: &PostConfig<'_>, channel: &Channel) {
    let room = channel.reserve(CHANNEL_BYTES);
    if room < CHANNEL_BYTES {
        ctx.log().log(
            Level::Info,
            &format!(
                "gdn-compressor: its channel holds {} KiB of jobs (net.core.wmem_max): \
                 jobs beyond it are dropped while the compressor is busy",
                room >> 10
            ),
        );
    }
}

/// Starts the compressor for the main server's `GzipDiskNgCacheRoot`, if
/// any (post_config, in the parent).
pub fn start(ctx: &PostConfig<'_>, server: Option<&ServerConfig>) {
    // The last generation's channel was closed with its configuration:
    // its descriptor may be another file's by now.
    *ACTIVE.write().unwrap_or_else(PoisonError::into_inner) = None;
    let Some(sc) = server else { return };
    let Some(root) = sc.cache_root.clone() else {
        return;
    };
    let uid = gdn_httpd::server_uid();
    if let Some(why) = unusable(&root) {
        // The first pass said it already (check_config), on the console.
        if !ctx.dry_run() {
            ctx.log().log(Level::Warn, &why);
        }
        return;
    }
    let host = Host::this();
    let settings = settings_of(sc, &root, &host);
    *SETTINGS.lock().unwrap_or_else(PoisonError::into_inner) = Some(settings);
    // Started at the parent's priority: its compression threads lower
    // their own (`CompressorSettings::worker_nice`), its job reader does not.
    let Some((channel, _pid)) = helper::start(ctx, c"gdn-compressor", own_nice(), compressor_main)
    else {
        return;
    };
    reserve_room(ctx, &channel);
    let records = root
        .join(host.records_dir())
        .join(digests::TABLE)
        .into_os_string()
        .into_vec();
    let mut r = root.into_os_string().into_vec();
    r.push(b'/');
    let (Ok(root), Ok(records)) = (CString::new(r), CString::new(records)) else {
        return;
    };
    let record: &'static Active = Box::leak(Box::new(Active {
        root,
        records,
        channel,
        uid,
    }));
    *ACTIVE.write().unwrap_or_else(PoisonError::into_inner) = Some(record);
}

/// Why on-demand compression cannot use the cache root `root` for the
/// server's user, naming the directive and the remedy; `None` if it can.
pub fn unusable(root: &std::path::Path) -> Option<String> {
    let (uid, name) = (gdn_httpd::server_uid(), gdn_httpd::server_user_name());
    crate::ondemand::root::unusable(root, uid, &name)
}

/// The CPU priority of the compressor's compression threads: below the
/// server's, so compressing yields to requests. Its job reader keeps the
/// server's priority: at nice 10 it got a tenth of a busy core's share
/// where the children it drains get all of theirs, and under load the
/// channel filled and jobs were dropped (163 of a 2,000-page pass in
/// `tests/ondemand_scale.rs` beside two busy loops).
const COMPRESSOR_NICE: i32 = 10;

/// Room for the jobs the compressor has not read yet (send buffer; the
/// kernel counts about a KiB a job): the default 208 KiB held about 280,
/// a fifth of a second of a browser pass's first requests, so a reader
/// held up that long dropped jobs. 4 MiB holds thousands: kernel memory
/// taken only while jobs wait.
const CHANNEL_BYTES: usize = 4 << 20;

/// This process's CPU priority (nice), from `/proc/self/stat` (field
/// 19); 0 where it does not say.
fn own_nice() -> i32 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(16)?.parse().ok())
        .unwrap_or(0)
}

/// The compressor process: jobs from the channel until every sender is
/// gone.
fn compressor_main(jobs: File, log: ServerLog) {
    let settings = SETTINGS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    let Some(settings) = settings else { return };
    let say = |level: gdn_compressor::settings::Severity, msg: &str| {
        let l = match level {
            gdn_compressor::settings::Severity::Error => Level::Err,
            gdn_compressor::settings::Severity::Warn => Level::Warn,
            gdn_compressor::settings::Severity::Notice => Level::Notice,
            gdn_compressor::settings::Severity::Info => Level::Info,
            gdn_compressor::settings::Severity::Debug => Level::Debug,
        };
        log.log(l, &format!("gdn-compressor: {msg}"));
    };
    counters::compressor_started();
    // Told to end (a stop or a restart): the wanted set is written down
    // first, for the next compressor.
    static STOP: Stop = Stop::new();
    if let Some(term) = gdn_httpd::helper::Term::block() {
        let waiter = std::thread::Builder::new()
            .name("gdn-stop".into())
            .spawn(move || {
                term.wait();
                STOP.request();
            });
        if let Err(e) = waiter {
            say(
                gdn_compressor::settings::Severity::Warn,
                &format!("cannot wait for a stop: {e}"),
            );
        }
    }
    let tally = |e: Event| {
        match e {
            Event::Copies(j, n) => counters::copies(j, n),
            Event::Holding {
                entries,
                bytes,
                evicted,
            } => {
                counters::cache_holds(entries, bytes, evicted);
                if evicted >= TRIM_AFTER {
                    gdn_httpd::shm::trim_heap();
                }
            }
            Event::Backlog {
                wanted,
                oldest_since,
            } => counters::backlog(wanted, oldest_since),
        }
        counters::compressor_cpu();
    };
    gdn_compressor::run(&settings, jobs, &say, &tally, &STOP);
}

/// The version `f` describes: its size and mtime, and which file it is
/// on this host.
pub fn version_of(f: &Finfo) -> Version {
    Version {
        size: f.size(),
        mtime_us: f.mtime(),
        local: key::Local {
            device: f.device(),
            inode: f.inode(),
            ctime_us: f.ctime(),
        },
    }
}

/// A copy found in the cache.
pub enum CachedCopy<'r> {
    /// The copy, where it is, opened.
    Ready(&'r CStr, gdn_httpd::File<'r>),
    /// Compressing this version was not worth it, or the copy cannot be
    /// opened: nothing to send, nothing to ask for.
    NotWorth,
    Missing,
}

impl Active {
    /// Whether a file in the cache is one the compressor made: a regular
    /// file its user owns that no one else may write (anything else at a
    /// cache name was planted, or could have been rewritten).
    fn made_here(&self, f: &Finfo) -> bool {
        f.kind() == FileKind::Regular && f.user() == self.uid && !f.writable_by_others()
    }

    /// The digest of the bytes of the file `f` describes, as this host's
    /// compressor recorded it when it read that very version: remembered
    /// per process, else read from its window of the table (`digests`),
    /// which is trusted only as a regular file the compressor's user owns
    /// and no one else may write. `None` while the compressor has not
    /// read it (the file is then served as if it had no copy, and the
    /// compressor asked for them). Remembered spelled, as copies' names
    /// spell it.
    pub fn source(&self, req: &Request<'_>, f: &Finfo) -> Option<Named> {
        let fv = f.version();
        if let Some(s) = memo::source::get(&fv) {
            return Some(s);
        }
        let v = version_of(f);
        let file = req.open_nofollow(&self.records).ok()?;
        let info = file.info();
        self.made_here(info).then_some(())?;
        let at = digests::window_of(&v, info.size())?;
        let mut window = [0u8; digests::WINDOW_BYTES];
        file.reader(at).read_exact(&mut window).ok()?;
        let s = Named::new(digests::find(&window, &v)?);
        memo::source::put(fv, s);
        Some(s)
    }

    /// The `kind` copy of the bytes whose digest is `source`, as the
    /// cache holds it, opened: one open finds it, where a stat and an
    /// open would cost two calls per hit. Only a regular file the
    /// compressor's user owns, opened without following a symlink, is a
    /// copy: anything else at its name was planted, and counts as not
    /// worth compressing (the original or a sibling is served, and no
    /// job asked for).
    pub fn find<'r>(&self, req: &Request<'r>, source: &Named, kind: Kind) -> CachedCopy<'r> {
        let mut name = NameBuf::new();
        let path = req.path_with_suffix(&self.root, source.write_copy_name(kind, &mut name));
        let st = match req.open_nofollow(path) {
            // Not served, and asked for again: the compressor removes it
            // and makes it anew, the server user's alone.
            Ok(f) if f.info().writable_by_others() => return CachedCopy::Missing,
            Ok(f) if !self.made_here(f.info()) => return CachedCopy::NotWorth,
            Ok(f) if f.info().size() == 0 => return CachedCopy::NotWorth,
            Ok(f) => return CachedCopy::Ready(path, f),
            Err(st) => st,
        };
        if st == libc::ENOENT || st == libc::ENOTDIR {
            return CachedCopy::Missing;
        }
        // Not opened for another reason (a symlink: ELOOP): missing unless
        // something is there.
        match req.stat(path, true) {
            Ok(f) if f.kind() != FileKind::Missing => CachedCopy::NotWorth,
            _ => CachedCopy::Missing,
        }
    }

    /// Whether the cache keeps the version whose content has SHA-256 `h`
    /// (a dictionary deltas on demand are made against): a delta missing
    /// against it is worth asking for, one against any other hash is not.
    pub fn keeps(&self, req: &Request<'_>, h: &gdn_core::dictionary::Hash) -> bool {
        let mut name = NameBuf::new();
        let kind = Kind::Kept(*h);
        let path = req.path_with_suffix(&self.root, key::write_copy_name(h, kind, &mut name));
        req.stat(path, true).is_ok_and(|f| self.made_here(&f))
    }

    /// The kept version whose content has SHA-256 `h`, opened (zstd, as
    /// the compressor keeps it): only a regular, non-empty file the
    /// compressor's user owns, opened without following a symlink. What
    /// it decodes to is checked against `h` by whoever reads it.
    pub fn kept_version<'r>(
        &self,
        req: &Request<'r>,
        h: &gdn_core::dictionary::Hash,
    ) -> Option<gdn_httpd::File<'r>> {
        let mut name = NameBuf::new();
        let kind = Kind::Kept(*h);
        let path = req.path_with_suffix(&self.root, key::write_copy_name(h, kind, &mut name));
        let f = req.open_nofollow(path).ok()?;
        (self.made_here(f.info()) && f.info().size() > 0).then_some(f)
    }

    /// The current site dictionary of the host `host_key`, as it is or in
    /// `coding`, opened, if the compressor trained one: only a regular
    /// file the compressor's user owns, opened without following a
    /// symlink.
    pub fn site_dictionary<'r>(
        &self,
        req: &Request<'r>,
        host_key: &[u8],
        coding: Option<Coding>,
    ) -> Option<gdn_httpd::File<'r>> {
        self.site_file(req, key::site_current_name(host_key, coding))
    }

    /// The site dictionary's file `name` under the cache root: only a
    /// regular, non-empty file the compressor's user owns, opened
    /// without following a symlink.
    fn site_file<'r>(&self, req: &Request<'r>, name: String) -> Option<gdn_httpd::File<'r>> {
        let f = req
            .open_nofollow(req.path_with_suffix(&self.root, name))
            .ok()?;
        let info = f.info();
        (self.made_here(info) && info.size() > 0).then_some(f)
    }

    /// The site dictionary of the host `host_key` whose URL carries
    /// `hex` (`?h=`), as it is or in `coding`, if this server keeps it:
    /// opened as `site_dictionary` opens the current one.
    pub fn named_site_dictionary<'r>(
        &self,
        req: &Request<'r>,
        host_key: &[u8],
        hex: &str,
        coding: Option<Coding>,
    ) -> Option<gdn_httpd::File<'r>> {
        self.site_file(req, key::site_named_name(host_key, hex, coding))
    }

    /// Asks the compressor to act on the host's pages judged
    /// (`site::judge`); whether the job was sent.
    pub fn queue_train(
        &self,
        root: &[u8],
        site: &[u8],
        digest: &gdn_core::dictionary::Hash,
        bits: &[u8],
        at: i64,
    ) -> bool {
        self.send(&Job::Train {
            root,
            site,
            digest,
            bits,
            at,
        })
    }

    /// Whether the host `host_key` has a site dictionary, looked at once
    /// a second per process and host.
    pub fn has_site_dictionary(&self, req: &Request<'_>, host_key: &[u8], now: i64) -> bool {
        static SEEN: Lately = Lately::new();
        const THERE: u8 = 1;
        const NOT: u8 = 2;
        if SEEN.done(&host_key, THERE, now) {
            return true;
        }
        if SEEN.done(&host_key, NOT, now) {
            return false;
        }
        let path = req.path_with_suffix(&self.root, key::site_current_name(host_key, None));
        let there = req.stat(path, true).is_ok_and(|f| self.made_here(&f));
        SEEN.remember(&host_key, if there { THERE } else { NOT }, now);
        there
    }

    /// Whether this process asked for the copy of `v` in coding `c` in
    /// the tick of `now_us` (see `ASK_TICK`): the copy is then still being
    /// made (or its job was dropped), so a request need not look for it.
    /// A copy is seen at most a tick after it is made, and a cache the
    /// compressor cannot write costs a failed open a tick, not a request.
    pub fn asked_lately(&self, v: &Version, c: Coding, now_us: i64) -> bool {
        ASKED.done(v, CodingSet::empty().with(c).bits(), now_us >> ASK_TICK)
    }

    /// Asks for the copies of `codings` of the original at `path`, and
    /// its `deltas`, unless this process asked for them in the tick of
    /// `now_us` (the compressor is then at work on them, or dropped them
    /// and a later request asks again); whether a job was sent.
    pub fn queue_compress(
        &self,
        path: &CStr,
        v: Version,
        codings: CodingSet,
        deltas: Option<JobDeltas<'_>>,
        now_us: i64,
    ) -> bool {
        let bits = codings.bits() | if deltas.is_some() { DELTAS_ASKED } else { 0 };
        let now = now_us >> ASK_TICK;
        if ASKED.done(&v, bits, now) {
            return false;
        }
        let sent = self.send(&Job::Compress {
            path: path.to_bytes(),
            version: v,
            codings,
            deltas,
        });
        queued(sent, codings.len());
        if sent {
            ASKED.remember(&v, bits, now);
        }
        sent
    }

    /// Asks for the decoded copy of the sibling at `path`, unless this
    /// process did within the last second.
    pub fn queue_decode(&self, path: &CStr, coding: Coding, v: Version, now: i64) -> bool {
        static ASKED: Lately = Lately::new();
        if ASKED.done(&v, 1, now) {
            return false;
        }
        let sent = self.send(&Job::Decode {
            path: path.to_bytes(),
            coding,
            version: v,
        });
        queued(sent, 1);
        if sent {
            ASKED.remember(&v, 1, now);
        }
        sent
    }

    /// Tells the compressor a copy was served, at most once a second per
    /// copy and process, for its least-recently-used eviction.
    pub fn touch(&self, source: SourceHash, kind: Kind, now: i64) {
        static SENT: Lately = Lately::new();
        if SENT.done(&(source, kind), 1, now) {
            return;
        }
        SENT.remember(&(source, kind), 1, now);
        self.send(&Job::Touch { source, kind });
    }

    fn send(&self, j: &Job<'_>) -> bool {
        let mut buf = [0; job::MAX_JOB];
        job::encode(j, &mut buf).is_some_and(|m| self.channel.send(m))
    }
}

/// The copies this process asked the compressor for, by tick.
static ASKED: Lately = Lately::new();

/// `ASKED`'s bit for a version's deltas (the codings take the low three).
const DELTAS_ASKED: u8 = 0x80;

/// A tick of `ASKED`: 2^17 µs, about an eighth of a second. A copy is
/// found that much after it is made at most; a job is asked for at most
/// that often per process (the compressor merges repeats).
const ASK_TICK: u32 = 17;

/// What each process did lately, by key (a copy, a file version): a slot
/// per key's hash holding that hash's high 24 bits, what was done (8
/// bits) and the second or tick (32 bits), read and written without a
/// lock. A key replaces another of its slot; two keys alike in slot and
/// those bits are taken for each other within a second (or tick), which
/// costs a touch, a job or a look for a copy at most that much late.
/// Kept lock-free and packed: it saves a syscall per request (a touch
/// sent, or an open while a copy is made), bench/ondemand_callgrind.sh.
struct Lately {
    slots: [AtomicU64; LATELY_SLOTS],
}

const LATELY_SLOTS: usize = 1024;

impl Lately {
    const fn new() -> Self {
        Lately {
            slots: [const { AtomicU64::new(0) }; LATELY_SLOTS],
        }
    }

    /// The key's slot, and the tag its entry carries.
    fn slot(&self, k: &impl Hash) -> (&AtomicU64, u64) {
        let mut h = rustc_hash::FxHasher::default();
        k.hash(&mut h);
        let h = h.finish();
        (&self.slots[(h as usize) % LATELY_SLOTS], h >> 40)
    }

    /// Whether all of `bits` were done for `k` in the second `now`.
    fn done(&self, k: &impl Hash, bits: u8, now: i64) -> bool {
        let (slot, tag) = self.slot(k);
        let e = slot.load(Ordering::Relaxed);
        e >> 40 == tag && (e >> 32) as u8 & bits == bits && e as u32 == now as u32
    }

    /// Remembers that `bits` were done for `k` in the second `now`, with
    /// what was done for it earlier in that second.
    fn remember(&self, k: &impl Hash, bits: u8, now: i64) {
        let (slot, tag) = self.slot(k);
        let e = slot.load(Ordering::Relaxed);
        let earlier = if e >> 40 == tag && e as u32 == now as u32 {
            (e >> 32) as u8
        } else {
            0
        };
        let b = u64::from(earlier | bits);
        slot.store(
            tag << 40 | b << 32 | u64::from(now as u32),
            Ordering::Relaxed,
        );
    }
}

/// Counts `n` copies asked for: queued, or dropped when the channel was
/// full.
fn queued(sent: bool, n: usize) {
    let state = if sent {
        tally::CopyFate::Queued
    } else {
        tally::CopyFate::Dropped
    };
    counters::copies(state, n as u64);
}

/// Whether a file of this name and size is compressed on demand.
pub fn compressible(name: &CStr, size: u64) -> bool {
    key::compressible(name.to_bytes(), size)
}

#[cfg(test)]
mod tests {
    use super::Lately;

    #[test]
    fn lately_remembers_for_the_second_and_what_was_done() {
        let l = Lately::new();
        assert!(!l.done(&7u64, 1, 100));
        l.remember(&7u64, 0b001, 100);
        assert!(l.done(&7u64, 0b001, 100));
        assert!(!l.done(&7u64, 0b010, 100), "another coding");
        assert!(!l.done(&8u64, 0b001, 100), "another key");
        l.remember(&7u64, 0b010, 100);
        assert!(l.done(&7u64, 0b011, 100), "both, this second");
        assert!(!l.done(&7u64, 0b001, 101), "a second later");
        l.remember(&7u64, 0b100, 101);
        assert!(
            !l.done(&7u64, 0b001, 101),
            "the older second's bits are gone"
        );
    }
}

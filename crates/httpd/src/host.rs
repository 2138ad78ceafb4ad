//! Each virtual host's key (`Request::host_key`), spelled once per
//! configuration: a server's name, port and place in the configuration
//! do not change while it serves, so a request looks its server's key up
//! instead of formatting it.

use crate::ffi;
use std::ffi::CStr;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

/// One configuration's keys, by the address of their server's record,
/// sorted by it.
pub(crate) struct Keys(Vec<(usize, Box<[u8]>)>);

/// Set at post_config, in the parent, before the children fork: each
/// configuration (a restart makes a new one) replaces it, before any
/// request of its servers. The keys live in the configuration's pool,
/// which outlives every request of it; clearing the pool drops them and
/// empties this (`Drop for Keys`), so a server is then spelled per
/// request until the next configuration's are set.
static KEYS: AtomicPtr<Keys> = AtomicPtr::new(ptr::null_mut());

impl Drop for Keys {
    fn drop(&mut self) {
        // Only if these are still the current keys: a newer
        // configuration's are not touched.
        let _ = KEYS.compare_exchange(
            self as *mut Keys,
            ptr::null_mut(),
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }
}

/// The parts of server `s`'s key, one after another:
/// `host:port@file:line`, or `host:port@main` for the main server.
///
/// # Safety
/// `s` is a live server record of the current configuration.
unsafe fn parts<'s>(
    s: &'s ffi::server_rec,
    port: &'s mut itoa::Buffer,
    line: &'s mut itoa::Buffer,
) -> [&'s [u8]; 7] {
    let host: &[u8] = if s.server_hostname.is_null() {
        b""
    } else {
        // SAFETY: a NUL-terminated configuration-pool string.
        unsafe { CStr::from_ptr(s.server_hostname) }.to_bytes()
    };
    let port = port.format(s.port).as_bytes();
    // Where the host was defined: two hosts of one name and port are two
    // sites.
    if s.defn_name.is_null() {
        [host, b":", port, b"@main", b"", b"", b""]
    } else {
        // SAFETY: a NUL-terminated configuration-pool string.
        let defn = unsafe { CStr::from_ptr(s.defn_name) }.to_bytes();
        let line = line.format(s.defn_line_number).as_bytes();
        [host, b":", port, b"@", defn, b":", line]
    }
}

/// Spells the key of every server from `first` on (post_config), for
/// `keep` once they are in the configuration's pool.
///
/// # Safety
/// `first` is the main server of a configuration complete but for its
/// post_config hooks, or NULL.
pub(crate) unsafe fn spelled(first: *mut ffi::server_rec) -> Keys {
    let mut keys = Vec::new();
    let mut s = first;
    // SAFETY: the server list is configuration, complete here.
    while let Some(server) = unsafe { s.as_ref() } {
        let (mut port, mut line) = (itoa::Buffer::new(), itoa::Buffer::new());
        // SAFETY: as above.
        let key = unsafe { parts(server, &mut port, &mut line) }.concat();
        keys.push((s as usize, key.into_boxed_slice()));
        s = server.next;
    }
    keys.sort_unstable_by_key(|(at, _)| *at);
    Keys(keys)
}

/// Makes `keys`, moved into the configuration's pool, the current ones.
///
/// # Safety
/// `keys` points to `spelled`'s keys in the pool of the configuration
/// whose requests will ask, dropped (`Drop for Keys`) when it is cleared.
pub(crate) unsafe fn keep(keys: *mut Keys) {
    KEYS.store(keys, Ordering::Release);
}

/// The key spelled for server `s` at post_config, if it was.
pub(crate) fn of(s: *const ffi::server_rec) -> Option<&'static [u8]> {
    // SAFETY: set from keys in the current configuration's pool, which
    // lives as long as any request of it; emptied when they are dropped.
    let keys = unsafe { KEYS.load(Ordering::Acquire).as_ref() }?;
    let i = keys
        .0
        .binary_search_by_key(&(s as usize), |(at, _)| *at)
        .ok()?;
    Some(&keys.0[i].1)
}

/// Server `s`'s key, in `pool`: for a server not seen at post_config.
///
/// # Safety
/// As `parts`; `join` copies the parts into memory that outlives `'r`.
pub(crate) unsafe fn spell<'r>(
    s: &ffi::server_rec,
    join: impl FnOnce(&[&[u8]]) -> &'r CStr,
) -> &'r [u8] {
    let (mut port, mut line) = (itoa::Buffer::new(), itoa::Buffer::new());
    // SAFETY: as the caller promises.
    join(&unsafe { parts(s, &mut port, &mut line) }).to_bytes()
}

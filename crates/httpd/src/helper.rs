//! A helper process that Apache's parent starts after reading the
//! configuration, supervises (restarted when it dies, as mod_cgid keeps
//! its daemon) and ends with the configuration (stop, graceful or full
//! restart), with a private channel from the children to it: a socket
//! pair nobody outside this Apache can reach, on which a send never
//! blocks. The C side is `gdn_helper_*` in csrc/shim.c.

use super::log::ServerLog;
use super::module::PostConfig;
use super::{ffi, Level};
use std::ffi::{c_int, c_void, CStr};
use std::fs::File;
use std::os::fd::FromRawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The children's end of a helper's channel.
#[derive(Clone, Copy, Debug)]
pub struct Channel(c_int);

impl Channel {
    /// Sends one message whole, without blocking: false when it was not
    /// sent (the queue is full, the helper is gone, or it is too long).
    pub fn send(&self, msg: &[u8]) -> bool {
        // SAFETY: a socket this process inherited; send only reads `msg`.
        let n = unsafe {
            libc::send(
                self.0,
                msg.as_ptr().cast(),
                msg.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        usize::try_from(n).is_ok_and(|n| n == msg.len())
    }

    /// Lets the channel hold about `bytes` of messages not read yet (the
    /// kernel counts each message's buffer: about a KiB for a short one),
    /// past `net.core.wmem_max` where the process may (the parent, as
    /// root); the room the kernel gave, in its own count.
    pub fn reserve(&self, bytes: usize) -> usize {
        let want = c_int::try_from(bytes).unwrap_or(c_int::MAX);
        if !self.set_option(libc::SO_SNDBUFFORCE, want) {
            self.set_option(libc::SO_SNDBUF, want);
        }
        let mut got: c_int = 0;
        let mut len = std::mem::size_of::<c_int>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes to `got`.
        let rc = unsafe {
            libc::getsockopt(
                self.0,
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                (&raw mut got).cast(),
                &mut len,
            )
        };
        if rc == 0 {
            usize::try_from(got).unwrap_or(0)
        } else {
            0
        }
    }

    fn set_option(&self, option: c_int, value: c_int) -> bool {
        // SAFETY: setsockopt reads `value`, a c_int, as its length says.
        unsafe {
            libc::setsockopt(
                self.0,
                libc::SOL_SOCKET,
                option,
                (&raw const value).cast(),
                std::mem::size_of::<c_int>() as libc::socklen_t,
            ) == 0
        }
    }

    /// The raw descriptor, to keep in a static the children read.
    pub fn raw(&self) -> c_int {
        self.0
    }

    /// A channel from a descriptor `raw` returned.
    pub fn from_raw(fd: c_int) -> Option<Channel> {
        (fd >= 0).then_some(Channel(fd))
    }
}

/// What a helper process runs: its end of the channel (reads return one
/// message each, and end when every sender is gone) and the server's log.
pub type Main = fn(File, ServerLog);

unsafe extern "C" fn trampoline(fd: c_int, s: *mut ffi::server_rec, arg: *mut c_void) {
    // SAFETY: `arg` is the `Main` that `start` passed, as a pointer.
    let main: Main = unsafe { std::mem::transmute::<*mut c_void, Main>(arg) };
    // SAFETY: the helper's end of the socket pair, owned from here on.
    let file = unsafe { File::from_raw_fd(fd) };
    let log = ServerLog::new(s);
    // A panic's message would go to stderr, the error log, untagged: in
    // this process (forked, so the parent keeps its hook) it is logged.
    std::panic::set_hook(Box::new(move |info| {
        log.log(Level::Err, &format!("helper process: {info}"));
    }));
    if catch_unwind(AssertUnwindSafe(|| main(file, log))).is_err() {
        log.log(Level::Err, "helper process: internal error (panic)");
    }
}

/// Starts `main` in a helper process named `name` (its `comm`, at most
/// 15 bytes, and in its command line, as `ps -ef` shows it, after the
/// program's name) at CPU priority `nice`, as Apache's `User`; its pid and
/// the channel the children send on. Nothing is started in the first of
/// the two configuration passes at start-up.
pub fn start(ctx: &PostConfig<'_>, name: &CStr, nice: i32, main: Main) -> Option<(Channel, i32)> {
    if ctx.dry_run() {
        return None;
    }
    // SAFETY: pconf and the server outlive the helper's registration; the
    // C side copies the name into pconf.
    let h = unsafe {
        ffi::gdn_helper_start(
            ctx.conf_pool(),
            ctx.server(),
            super::index::get(),
            name.as_ptr(),
            nice,
            Some(trampoline),
            main as *mut c_void,
        )
    };
    if h.is_null() {
        return None;
    }
    // SAFETY: a live helper record in pconf.
    let (fd, pid) = unsafe { (ffi::gdn_helper_channel(h), ffi::gdn_helper_pid(h)) };
    Some((Channel(fd), pid))
}

/// Lowers the calling thread's CPU priority to `nice` (Linux keeps one
/// per thread, and threads it starts inherit it), leaving the rest of the
/// process as it is: a helper's heavy threads yield to the server while
/// the thread that drains the children's channel keeps their priority.
/// Whether it was set.
pub fn nice_this_thread(nice: i32) -> bool {
    // SAFETY: gettid takes nothing; setpriority takes plain integers.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) == 0
    }
}

/// Whether process `pid` still exists: a shared slot an ended process
/// held is free again (a child killed while it held one never gave it
/// back).
pub fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// SIGTERM held back from every thread of a helper, for one to wait on:
/// a helper that writes something down before it ends (Apache's parent
/// ends a helper with SIGTERM at a stop or restart, and SIGKILL three
/// seconds later).
#[derive(Clone, Copy)]
pub struct Term(libc::sigset_t);

impl Term {
    /// Blocks SIGTERM in the calling thread and in the threads it starts
    /// after this; `None` when it cannot (SIGTERM then ends the process
    /// at once, as by default).
    pub fn block() -> Option<Term> {
        // SAFETY: an all-zero sigset_t is a valid value for sigemptyset
        // to initialize; the calls only write `set`.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a live sigset_t; pthread_sigmask reads it.
        let blocked = unsafe {
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGTERM);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut())
        };
        (blocked == 0).then_some(Term(set))
    }

    /// Waits until the process is sent SIGTERM.
    pub fn wait(&self) {
        loop {
            let mut sig: c_int = 0;
            // SAFETY: reads the set, writes `sig`.
            let rc = unsafe { libc::sigwait(&self.0, &mut sig) };
            if rc == 0 && sig == libc::SIGTERM {
                return;
            }
        }
    }
}

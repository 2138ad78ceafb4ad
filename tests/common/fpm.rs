//! A PHP-FPM of the test's own (Debian's `php-fpm`), for the tests that
//! run PHP through mod_proxy_fcgi.

use super::{is_root, skip};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A PHP-FPM of its own, listening on a socket in `dir`; stopped on drop.
pub struct Fpm {
    child: Child,
    pub socket: PathBuf,
}

impl Fpm {
    pub fn start(dir: &Path) -> Option<Fpm> {
        let Some(bin) = fpm_binary() else {
            skip("PHP-FPM (php-fpm) is not installed");
            return None;
        };
        let socket = dir.join("fpm.sock");
        let user = if is_root() {
            "user = nobody\ngroup = nogroup\n"
        } else {
            ""
        };
        let conf = dir.join("fpm.conf");
        let d = dir.display();
        fs::write(
            &conf,
            format!(
                "[global]\npid = {d}/fpm.pid\nerror_log = {d}/fpm.log\ndaemonize = no\n\
                 [www]\nlisten = {}\nlisten.mode = 0666\n{user}pm = static\npm.max_children = 2\n",
                socket.display()
            ),
        )
        .expect("fpm conf");
        let child = Command::new(bin)
            .arg("-n")
            .arg("-y")
            .arg(&conf)
            .arg("-F")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("php-fpm");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !socket.exists() {
            assert!(Instant::now() < deadline, "php-fpm did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(Fpm { child, socket })
    }

    /// The handler that hands a script to it.
    pub fn handler(&self) -> String {
        format!("proxy:unix:{}|fcgi://localhost", self.socket.display())
    }
}

impl Drop for Fpm {
    /// SIGTERM, so that the master ends its workers (killed, it leaves
    /// them running, orphaned); SIGKILL only if it has not ended in 10 s.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fpm_binary() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir("/usr/sbin")
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("php-fpm"))
        })
        .collect();
    found.sort();
    found.pop()
}

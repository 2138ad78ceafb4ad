//! Which host this is, for what only this host may trust in a cache
//! root a fleet may share: the records of which file version has which
//! digest (device and inode numbers mean nothing elsewhere, and not
//! after a reboot either), and the histories of where a file is.
//!
//! A host is its machine id (`/etc/machine-id`, else its host name) and
//! a boot its kernel's boot id, each hashed (SHA-256) into a directory
//! name: records live in `hosts/<machine>/<boot>/`, so no server reads
//! another's, and a boot's are removed at a later boot's start.

use gdn_core::dictionary;
use std::fs;
use std::path::PathBuf;

/// The directory of hosts' records under the cache root.
pub const HOSTS_DIR: &str = "hosts";

/// This host and boot, as directory names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    /// 32 hex digits of the SHA-256 of the machine id.
    pub machine: String,
    /// 32 hex digits of the SHA-256 of the boot id.
    pub boot: String,
}

impl Host {
    /// The host this runs on.
    pub fn this() -> Host {
        let machine = ["/etc/machine-id", "/var/lib/dbus/machine-id"]
            .iter()
            .find_map(|p| fs::read(p).ok().filter(|id| !id.trim_ascii().is_empty()))
            .unwrap_or_else(host_name);
        let boot = fs::read("/proc/sys/kernel/random/boot_id").unwrap_or_default();
        Host {
            machine: short_hash(b"machine\0", &machine),
            boot: short_hash(b"boot\0", &boot),
        }
    }

    /// This host's directory, relative to the cache root.
    pub fn machine_dir(&self) -> PathBuf {
        PathBuf::from(HOSTS_DIR).join(&self.machine)
    }

    /// This boot's records directory, relative to the cache root.
    pub fn records_dir(&self) -> PathBuf {
        self.machine_dir().join(&self.boot)
    }
}

/// The host name, where no machine id is kept.
fn host_name() -> Vec<u8> {
    fs::read("/proc/sys/kernel/hostname").unwrap_or_default()
}

/// The first 32 hex digits of the SHA-256 of `tag` and `id`.
fn short_hash(tag: &[u8], id: &[u8]) -> String {
    let mut hex = dictionary::to_hex(&dictionary::hash(&[tag, id.trim_ascii()].concat()));
    hex.truncate(32);
    hex
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_named_alike_each_time_and_apart_from_its_boot() {
        let h = Host::this();
        assert_eq!(h, Host::this());
        assert_eq!(h.machine.len(), 32);
        assert_ne!(h.machine, h.boot);
        assert!(h.records_dir().starts_with(h.machine_dir()));
        assert!(h.machine_dir().starts_with(HOSTS_DIR));
    }
}

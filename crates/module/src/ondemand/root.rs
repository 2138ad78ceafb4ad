//! Whether a cache root is safe to serve copies from: nobody but the
//! server's user (or root) may be able to put a file, or a symlink, where
//! a copy's name is, or it would be served as the page.

use std::fs::{self, Metadata};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

/// Why on-demand compression cannot use the cache root `root` for the
/// server's user (`uid`, named `user` as `User` names it), as a whole
/// message naming the directive and the remedy, or `None` when it can:
/// the root exists, only `uid` and root can write it (`refusal`), and
/// `uid` can.
pub fn unusable(root: &Path, uid: u32, user: &str) -> Option<String> {
    let shown = root.display();
    let off = "on-demand compression is off (siblings and originals are still served)";
    if fs::metadata(root).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
        return Some(format!(
            "GzipDiskNgCacheRoot {shown} does not exist: {off}; \
             create it for User {user}: install -d -o {user} -m 0750 {shown}"
        ));
    }
    if let Some(why) = refusal(root, uid) {
        return Some(format!(
            "GzipDiskNgCacheRoot {shown} {why}: another user could plant copies there; {off}; \
             let only User {user} write it: chown {user} {shown} && chmod 0750 {shown}"
        ));
    }
    let m = fs::metadata(root).ok()?;
    let writable = uid == 0 || (m.uid() == uid && m.mode() & 0o300 == 0o300);
    (!writable).then(|| {
        format!(
            "GzipDiskNgCacheRoot {shown} cannot be written by User {user} (owner uid {}, \
             mode {:04o}): {off}; run: chown {user} {shown} && chmod 0750 {shown}",
            m.uid(),
            m.mode() & 0o7777
        )
    })
}

/// Why `root` is refused for the server user `uid`, or `None` when only
/// `uid` and root can write it and its fan-out directories: each owned by
/// one of them, neither group- nor other-writable, and no symlink owned
/// by anyone else on the way in.
pub fn refusal(root: &Path, uid: u32) -> Option<String> {
    let link = match fs::symlink_metadata(root) {
        Ok(m) => m,
        Err(e) => return Some(format!("cannot be read: {e}")),
    };
    if link.file_type().is_symlink() && !trusted(&link, uid) {
        return Some(format!("is a symlink owned by uid {}", link.uid()));
    }
    let meta = match fs::metadata(root) {
        Ok(m) => m,
        Err(e) => return Some(format!("cannot be read: {e}")),
    };
    if let Some(why) = writable_by_others(&meta, uid) {
        return Some(why);
    }
    (0..=u8::MAX).find_map(|n| {
        let dir = root.join(format!("{n:02x}"));
        let m = fs::symlink_metadata(&dir).ok()?;
        let why = if m.file_type().is_symlink() || m.file_type().is_fifo() {
            Some("is not a directory".to_string())
        } else {
            writable_by_others(&m, uid)
        };
        why.map(|w| format!("has {} that {w}", dir.display()))
    })
}

/// Owned by the server's user or by root.
fn trusted(m: &Metadata, uid: u32) -> bool {
    m.uid() == uid || m.uid() == 0
}

/// Why someone other than `uid` and root could write in `m`'s directory.
fn writable_by_others(m: &Metadata, uid: u32) -> Option<String> {
    if !trusted(m, uid) {
        return Some(format!(
            "is owned by uid {}, not the server's {uid}",
            m.uid()
        ));
    }
    let mode = m.mode() & 0o7777;
    (mode & 0o022 != 0).then(|| format!("is group- or other-writable (mode {mode:04o})"))
}

#[cfg(test)]
mod tests {
    use super::{refusal, unusable};
    use std::fs;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[test]
    fn only_a_root_none_but_its_user_can_write_is_taken() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("cache");
        fs::create_dir(&root).unwrap();
        let me = fs::metadata(&root).unwrap().uid();
        let mode = |p: &std::path::Path, m: u32| {
            fs::set_permissions(p, fs::Permissions::from_mode(m)).unwrap()
        };
        mode(&root, 0o755);
        assert_eq!(refusal(&root, me), None);
        for m in [0o775, 0o757, 0o1777] {
            mode(&root, m);
            let why = refusal(&root, me).expect("refused");
            assert!(why.contains("writable"), "{m:o}: {why}");
        }
        mode(&root, 0o755);
        if me != 0 {
            // Owned by someone who is neither root nor the server's user.
            assert!(refusal(&root, me + 1).unwrap().contains("owned by uid"));
        }
        // A fan-out directory another could write, or a symlink there.
        let fan = root.join("2a");
        fs::create_dir(&fan).unwrap();
        mode(&fan, 0o777);
        assert!(refusal(&root, me).unwrap().contains("2a"));
        fs::remove_dir(&fan).unwrap();
        std::os::unix::fs::symlink(d.path(), &fan).unwrap();
        let why = refusal(&root, me).unwrap();
        assert!(
            why.contains("2a") && why.contains("not a directory"),
            "{why}"
        );
        fs::remove_file(&fan).unwrap();
        // The root itself a symlink: followed when its owner is trusted.
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&root, &link).unwrap();
        assert_eq!(refusal(&link, me), None);
        assert!(refusal(&d.path().join("missing"), me).is_some());
    }

    #[test]
    fn an_unusable_root_is_named_with_its_remedy() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("cache");
        let shown = root.display().to_string();
        let why = unusable(&root, 33, "www-data").expect("missing");
        assert!(why.starts_with(&format!("GzipDiskNgCacheRoot {shown} does not exist")));
        assert!(
            why.contains(&format!("install -d -o www-data -m 0750 {shown}")),
            "{why}"
        );
        fs::create_dir(&root).unwrap();
        fs::set_permissions(&root, fs::Permissions::from_mode(0o755)).unwrap();
        let me = fs::metadata(&root).unwrap().uid();
        assert_eq!(unusable(&root, me, "me"), None);
        // Owned by the server's user but read-only to it; or owned by
        // root (when these tests run as root) and another User.
        fs::set_permissions(&root, fs::Permissions::from_mode(0o555)).unwrap();
        if me != 0 {
            let why = unusable(&root, me, "me").expect("read-only");
            assert!(
                why.contains("cannot be written by User me") && why.contains("mode 0555"),
                "{why}"
            );
            assert!(why.contains(&format!("chown me {shown}")), "{why}");
        } else {
            let why = unusable(&root, 33, "www-data").expect("root's");
            assert!(why.contains("cannot be written by User www-data"), "{why}");
            assert!(why.contains(&format!("chown www-data {shown}")), "{why}");
        }
        fs::set_permissions(&root, fs::Permissions::from_mode(0o777)).unwrap();
        let why = unusable(&root, me, "me").expect("writable by all");
        assert!(
            why.contains("another user could plant") && why.contains("GzipDiskNgCacheRoot"),
            "{why}"
        );
    }
}

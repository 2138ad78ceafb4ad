//! A real Apache (Debian's `/usr/sbin/apache2`, or `GDN_HTTPD`) with a generated
//! configuration in a temp dir, on a free 127.0.0.1 port, with the built
//! module loaded; requests go through the real `curl` (HTTP/1.1 and h2c)
//! or a raw socket. Also `apache2 -t` runs and the publish tool's binary.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::oracle::{oracle_decoded, oracle_decoded_delta};

pub const APACHE: &str = "/usr/sbin/apache2";
pub const MODULES: &str = "/usr/lib/apache2/modules";

/// The server binary the harness starts: `GDN_HTTPD` (another httpd 2.4,
/// such as one built from its release source: tests/upstream-httpd.sh),
/// else Debian's [`APACHE`].
pub fn httpd_binary() -> String {
    std::env::var("GDN_HTTPD").unwrap_or_else(|_| APACHE.to_owned())
}

/// Where that server's modules are: `GDN_HTTPD_MODULES`, else Debian's
/// [`MODULES`].
pub fn httpd_modules() -> String {
    std::env::var("GDN_HTTPD_MODULES").unwrap_or_else(|_| MODULES.to_owned())
}

/// The LoadModule lines of the modules Debian's apache2 has compiled in
/// (`apache2 -l`: `User`, `LogFormat`) and an httpd built with shared
/// modules has as files in `modules`: none for Debian's.
fn built_in_on_debian(modules: &str) -> String {
    ["unixd", "log_config", "logio", "version"]
        .iter()
        .filter(|m| Path::new(&format!("{modules}/mod_{m}.so")).exists())
        .map(|m| format!("LoadModule {m}_module {modules}/mod_{m}.so\n"))
        .collect()
}

/// The module built alongside this test binary.
pub fn module_path() -> PathBuf {
    if let Ok(p) = std::env::var("GZIP_DISK_NG_MODULE") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("test exe");
    // target/<profile>/deps/test-xxxx → target/<profile>/
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let so = dir.join("libmod_gzip_disk_ng.so");
    assert!(so.exists(), "module not built at {}", so.display());
    so
}

/// Records a check skipped for want of a tool: printed, appended to the
/// file named by `GDN_SKIP_LOG` (scripts/test counts them in its summary),
/// and a failure where `GDN_NO_SKIPS` is set: scripts/test installs every
/// tool the tests use, so a skip there means something is broken.
pub fn skip(why: &str) {
    eprintln!("SKIPPED: {why}");
    if let Ok(p) = std::env::var("GDN_SKIP_LOG") {
        if let Ok(mut f) = fs::OpenOptions::new().append(true).create(true).open(p) {
            let _ = writeln!(f, "{why}");
        }
    }
    assert!(
        std::env::var_os("GDN_NO_SKIPS").is_none(),
        "skipped although scripts/test installs what it needs: {why}"
    );
}

pub fn is_root() -> bool {
    // The uid of this process's files: a file we create is owned by us.
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("probe");
    fs::write(&p, b"").expect("write");
    use std::os::unix::fs::MetadataExt;
    fs::metadata(&p).expect("meta").uid() == 0
}

/// The uid Apache's children run as in these tests: `nobody` (`User
/// nobody`) as root, else this user.
pub fn server_uid() -> u32 {
    // SAFETY: plain libc calls; getpwnam's record is read at once.
    unsafe {
        if libc::geteuid() != 0 {
            return libc::geteuid();
        }
        let pw = libc::getpwnam(c"nobody".as_ptr());
        assert!(!pw.is_null(), "no user nobody");
        (*pw).pw_uid
    }
}

/// Makes an on-demand cache root only the server's user can write (mode
/// 0755, owned by it), as the module requires.
pub fn make_cache_root(p: &Path) {
    fs::create_dir(p).expect("cache root");
    fs::set_permissions(p, fs::Permissions::from_mode(0o755)).expect("chmod");
    std::os::unix::fs::chown(p, Some(server_uid()), None).expect("chown");
}

/// A directory the server's user can read, removed on drop.
pub fn world_readable_tempdir() -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix("gdn-test-")
        .tempdir_in("/tmp")
        .expect("tempdir");
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
    d
}

/// Files holding `keys`, one each, in a directory the server's user can
/// read (removed when the returned guard drops).
pub fn key_files(keys: &[&[u8]]) -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = world_readable_tempdir();
    let paths = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let p = dir.path().join(format!("{i}.key"));
            fs::write(&p, k).expect("write key");
            p
        })
        .collect();
    (dir, paths)
}

/// A port on 127.0.0.1 nothing listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// MPM choice.
#[derive(Clone, Copy, Debug)]
pub enum Mpm {
    Event,
    Worker,
    Prefork,
}

/// A running Apache; stopped by its PID on drop.
pub struct Apache {
    /// Declared before `root` so that, dropped after the server stops, it
    /// unmounts before the temp dir is removed.
    mounted: Option<Mounted>,
    pub root: tempfile::TempDir,
    pub port: u16,
    pub docroot: PathBuf,
    pid: Option<i32>,
}

pub struct Options {
    pub mpm: Mpm,
    /// Lines inside `<Directory docroot>`.
    pub dir: String,
    /// Lines at server level; `{docroot}` stands for the docroot's path.
    pub server: String,
    /// Extra modules (file stems under MODULES, e.g. "rewrite").
    pub modules: Vec<&'static str>,
    /// The LogLevel line's value.
    pub log_level: &'static str,
    /// Replaces the line loading the built module (e.g. an `Include` of an
    /// installed `.load` file).
    pub load: Option<String>,
    /// A small tmpfs on a directory of the ServerRoot, made by `fill`
    /// (e.g. a cache root that fills up), seen by Apache from its start.
    pub tmpfs: Option<Tmpfs>,
}

/// A tmpfs of `size` (as mount's `size=` takes it, e.g. "96k"), open to
/// all, on `dir` (relative to the ServerRoot).
#[derive(Clone, Copy, Debug)]
pub struct Tmpfs {
    pub dir: &'static str,
    pub size: &'static str,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            mpm: Mpm::Event,
            dir: "SetHandler gzip-disk-ng".into(),
            server: String::new(),
            modules: vec![],
            log_level: "info gzip_disk_ng:debug",
            load: None,
            tmpfs: None,
        }
    }
}

/// One child process (event MPM): what the module remembers per file
/// version (a learned length, a logged verdict, a padding length) is per
/// process.
pub fn one_child() -> Options {
    Options {
        server: "ServerLimit 1\nMaxRequestWorkers 16\nMinSpareThreads 1\nMaxSpareThreads 16".into(),
        ..Default::default()
    }
}

/// The URL pages link a site dictionary of these bytes under: its
/// configured `path`, `?h=` and 16 hex digits of its SHA-256.
pub fn site_dictionary_url(path: &str, dictionary: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let hex: String = Sha256::digest(dictionary)[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{path}?h={hex}")
}

/// The `Available-Dictionary` value naming `dictionary` (RFC 9842): its
/// SHA-256 as a structured-field byte sequence.
pub fn announce(dictionary: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let hash = Sha256::digest(dictionary);
    sfv::ItemSerializer::new().bare_item(&hash[..]).finish()
}

/// One sample of `a`'s metrics handler's text (served at `/metrics`),
/// 0 when it is not there.
pub fn metric(a: &Apache, sample: &str) -> u64 {
    let r = a.get("/metrics", None);
    assert_eq!(r.status, 200, "metrics");
    String::from_utf8_lossy(&r.body)
        .lines()
        .find_map(|l| l.strip_prefix(sample)?.trim().parse().ok())
        .unwrap_or(0)
}

impl Apache {
    /// Starts Apache serving a fresh docroot filled by `fill`.
    pub fn start(opts: Options, fill: impl FnOnce(&Path)) -> Apache {
        let root = world_readable_tempdir();
        let docroot = root.path().join("docs");
        fs::create_dir(&docroot).expect("docroot");
        fs::set_permissions(&docroot, fs::Permissions::from_mode(0o755)).expect("chmod");
        fill(&docroot);
        let (mounted, launcher) = Self::launcher(root.path(), opts.tmpfs);
        let mut last_err = String::new();
        for _ in 0..5 {
            let port = free_port();
            let conf = Self::config(root.path(), &docroot, port, &opts);
            let conf_path = root.path().join("httpd.conf");
            fs::write(&conf_path, conf).expect("conf");
            let _ = fs::remove_file(root.path().join("error.log"));
            let out = launcher()
                .arg("-d")
                .arg(root.path())
                .arg("-f")
                .arg(&conf_path)
                .arg("-k")
                .arg("start")
                .output()
                .expect("run apache2");
            if !out.status.success() {
                last_err = format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
                continue;
            }
            let mut a = Apache {
                mounted,
                root,
                port,
                docroot,
                pid: None,
            };
            if a.wait_ready() {
                return a;
            }
            last_err = a.error_log();
            a.stop();
            return Self::start_failed(&last_err);
        }
        Self::start_failed(&last_err)
    }

    /// What runs `apache2` (its arguments follow), and the tmpfs mounted
    /// for it, if any. As root the tmpfs is mounted here, for all to see,
    /// until the server has stopped. A normal user may not mount, so then
    /// Apache runs in a user and mount namespace of its own holding the
    /// mount, which goes when Apache's processes have all exited.
    fn launcher(root: &Path, tmpfs: Option<Tmpfs>) -> (Option<Mounted>, impl Fn() -> Command) {
        let dir = tmpfs.map(|t| (root.join(t.dir), t.size));
        let as_root = is_root();
        let mounted = match &dir {
            Some((dir, size)) if as_root => Some(Mounted::tmpfs(dir, size)),
            Some((dir, _)) => {
                assert_user_namespaces(dir);
                None
            }
            None => None,
        };
        // The user's own ids, as the namespace maps them back for Apache.
        let meta = fs::metadata(root).expect("server root");
        use std::os::unix::fs::MetadataExt;
        let ids = (meta.uid(), meta.gid());
        let launcher = move || match &dir {
            Some((dir, size)) if !as_root => in_namespace_with_tmpfs(dir, size, ids),
            _ => Command::new(httpd_binary()),
        };
        (mounted, launcher)
    }

    fn start_failed(err: &str) -> Apache {
        panic!("apache did not start: {err}")
    }

    fn config(root: &Path, docroot: &Path, port: u16, o: &Options) -> String {
        let mpm = match o.mpm {
            Mpm::Event => "event",
            Mpm::Worker => "worker",
            Mpm::Prefork => "prefork",
        };
        let mut s = String::new();
        let r = root.display();
        s += &format!("ServerRoot {r}\nDefaultRuntimeDir {r}\nPidFile {r}/httpd.pid\n");
        s += &format!("ErrorLog {r}/error.log\nLogLevel {}\n", o.log_level);
        s += &format!("Listen 127.0.0.1:{port}\nServerName localhost\n");
        if is_root() {
            s += "User nobody\nGroup nogroup\n";
        }
        let modules = httpd_modules();
        s += &format!("LoadModule mpm_{mpm}_module {modules}/mod_mpm_{mpm}.so\n");
        s += &built_in_on_debian(&modules);
        match o.mpm {
            Mpm::Prefork => s += "StartServers 2\nMinSpareServers 2\nMaxSpareServers 4\n",
            _ => s += "StartServers 1\nServerLimit 2\nThreadsPerChild 16\nMaxRequestWorkers 32\n",
        }
        for m in ["authz_core", "mime", "http2"]
            .iter()
            .chain(o.modules.iter())
        {
            s += &format!("LoadModule {m}_module {modules}/mod_{m}.so\n");
        }
        match &o.load {
            Some(l) => s += &format!("{l}\n"),
            None => {
                s += &format!(
                    "LoadModule gzip_disk_ng_module {}\n",
                    module_path().display()
                )
            }
        }
        s += "TypesConfig /etc/mime.types\n";
        if !o.server.contains("Protocols ") {
            s += "Protocols h2c http/1.1\n";
        }
        s +=
            &format!("LogFormat \"%r %>s %{{gzip-disk-ng}}n\" gdn\nCustomLog {r}/access.log gdn\n");
        s += &format!("DocumentRoot {}\n", docroot.display());
        s += &o
            .server
            .replace("{docroot}", &docroot.display().to_string());
        s += "\n";
        s += &format!(
            "<Directory {}>\nRequire all granted\n{}\n</Directory>\n",
            docroot.display(),
            o.dir
        );
        s
    }

    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(pid) = fs::read_to_string(self.root.path().join("httpd.pid")) {
                if let Ok(pid) = pid.trim().parse() {
                    self.pid = Some(pid);
                    if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                        return true;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{}", self.port, path)
    }

    pub fn error_log(&self) -> String {
        fs::read_to_string(self.root.path().join("error.log")).unwrap_or_default()
    }

    pub fn access_log(&self) -> String {
        fs::read_to_string(self.root.path().join("access.log")).unwrap_or_default()
    }

    /// Whether the access log's last line ends with `what`, waiting a
    /// little: Apache logs after the response has gone out.
    pub fn last_access_ends_with(&self, what: &str) -> bool {
        for _ in 0..40 {
            if self.access_log().ends_with(&format!("{what}\n")) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// The PIDs of the parent's child processes (the servers).
    pub fn child_pids(&self) -> Vec<i32> {
        let Some(parent) = self.pid else {
            return vec![];
        };
        let mut out = vec![];
        for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(stat) = fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            // pid (comm) state ppid ...: comm may hold spaces, not ')'.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<i32>().ok());
            if ppid == Some(parent) {
                out.push(pid);
            }
        }
        out
    }

    /// Lines of the error log written by this module.
    pub fn module_log(&self) -> Vec<String> {
        self.error_log()
            .lines()
            .filter(|l| l.contains("[gzip_disk_ng:"))
            .map(str::to_owned)
            .collect()
    }

    /// Lines of the error log written by this module that mention `what`.
    pub fn module_log_about(&self, what: &str) -> Vec<String> {
        let mut l = self.module_log();
        l.retain(|l| l.contains(what));
        l
    }

    /// No child died (segfault, abort) during the test.
    pub fn assert_no_crash(&self) {
        if let Some(bad) = self.crash() {
            panic!("child crashed ({bad}):\n{}", self.error_log());
        }
    }

    /// How a child of this server died, if one did (a signal, a panic).
    pub fn crash(&self) -> Option<&'static str> {
        let log = self.error_log();
        ["Segmentation fault", "exit signal", "panicked", "Aborted"]
            .into_iter()
            .find(|bad| log.contains(bad))
    }

    pub fn stop(&mut self) {
        if let Some(pid) = self.pid.take() {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(pid.to_string())
                .status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                let alive = Command::new("kill")
                    .arg("-0")
                    .arg(pid.to_string())
                    .stderr(std::process::Stdio::null())
                    .status()
                    .map(|s| s.success())
                    .unwrap_or(false);
                if !alive {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(pid.to_string())
                .status();
        }
    }

    /// GET with the given Accept-Encoding (`None`: no header).
    pub fn get(&self, path: &str, ae: Option<&str>) -> Response {
        let mut args: Vec<String> = vec![];
        if let Some(ae) = ae {
            args.push("-H".into());
            args.push(format!("Accept-Encoding: {ae}"));
        }
        curl(&self.url(path), &args)
    }

    /// `If-Range` naming the representation a request for `path` with
    /// `extra` gets: a coded representation's range is honoured only
    /// under it (tests/ranges.rs).
    pub fn if_range(&self, path: &str, extra: &[&str]) -> String {
        let r = self.request(path, extra);
        format!("If-Range: {}", r.header("ETag").expect("an ETag"))
    }

    pub fn request(&self, path: &str, extra: &[&str]) -> Response {
        let args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        curl(&self.url(path), &args)
    }
}

impl Drop for Apache {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A tmpfs mounted (as root) by `mount`, unmounted on drop.
struct Mounted(PathBuf);

impl Mounted {
    fn tmpfs(dir: &Path, size: &str) -> Mounted {
        let st = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755,uid={}", server_uid()),
                "tmpfs",
            ])
            .arg(dir)
            .status()
            .expect("run mount");
        assert!(st.success(), "mount a tmpfs on {}", dir.display());
        Mounted(dir.to_owned())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// `apache2` (its arguments to follow) under `unshare`, in a user and
/// mount namespace where a tmpfs of `size` is on `dir`. The mount needs
/// root in the first namespace; Apache itself runs in a nested one as the
/// user's own `ids` again, since as root it would switch to a `User`,
/// which a normal user cannot, and refuses to serve as root. The mount
/// made in the first namespace is the one the nested one sees.
fn in_namespace_with_tmpfs(dir: &Path, size: &str, (uid, gid): (u32, u32)) -> Command {
    // The paths and ids go as arguments, never spliced into the script.
    let script = r#"dir=$1 size=$2 uid=$3 gid=$4; shift 4
mount -t tmpfs -o "size=$size,mode=0755" tmpfs "$dir" &&
exec unshare --user --map-user="$uid" --map-group="$gid" "$@""#;
    let mut c = Command::new("unshare");
    c.args([
        "--user",
        "--map-root-user",
        "--mount",
        "sh",
        "-c",
        script,
        "sh",
    ])
    .arg(dir)
    .arg(size)
    .arg(uid.to_string())
    .arg(gid.to_string())
    .arg(httpd_binary());
    c
}

/// Panics, saying why, unless this user may mount a tmpfs on `dir` in a
/// user and mount namespace of its own (the probe's mount goes with it).
fn assert_user_namespaces(dir: &Path) {
    let out = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount"])
        .args(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs"])
        .arg(dir)
        .output();
    let why = match out {
        Ok(o) if o.status.success() => return,
        Ok(o) => stderr(&o),
        Err(e) => e.to_string(),
    };
    panic!(
        "a tmpfs on {} needs root, or, for a normal user, unprivileged user \
         namespaces (`unshare -Urm`), which failed here: {why}",
        dir.display()
    );
}

/// A response as curl saw it.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: BTreeMap<String, Vec<String>>,
    pub body: Vec<u8>,
    /// curl's exit code: 0 ok, 18 partial transfer, 92 HTTP/2 stream error.
    pub exit: i32,
    pub http_version: String,
}

impl Response {
    /// The body decoded by its Content-Encoding with an independent
    /// decoder (tests/common/oracle.rs); panics if it does not decode.
    pub fn decoded(&self) -> Vec<u8> {
        oracle_decoded(self.header("Content-Encoding"), &self.body)
    }

    /// The body of a `dcb` or `dcz` response, decoded against
    /// `dictionary` by an independent decoder.
    pub fn decoded_delta(&self, dictionary: &[u8]) -> Vec<u8> {
        let ce = self.header("Content-Encoding").expect("a Content-Encoding");
        oracle_decoded_delta(ce, dictionary, &self.body)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        first_value(&self.headers, name)
    }

    /// The Content-Encoding (`None`: identity).
    pub fn coding(&self) -> Option<&str> {
        self.header("Content-Encoding")
    }

    /// All values of a header, comma-joined, as a list of tokens.
    pub fn tokens(&self, name: &str) -> Vec<String> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .into_iter()
            .flatten()
            .flat_map(|v| v.split(','))
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .collect()
    }
}

/// Runs curl and parses the final response's head.
pub fn curl(url: &str, args: &[String]) -> Response {
    let dir = tempfile::tempdir().expect("tempdir");
    let head = dir.path().join("head");
    let body = dir.path().join("body");
    let out = Command::new("curl")
        .args(["-s", "--max-time", "30", "-D"])
        .arg(&head)
        .arg("-o")
        .arg(&body)
        .args(args)
        .arg(url)
        .output()
        .expect("run curl");
    let exit = out.status.code().unwrap_or(-1);
    let head = fs::read_to_string(&head).unwrap_or_default();
    let body = fs::read(&body).unwrap_or_default();
    // With redirects or 100-continue several heads may appear: keep the last.
    let last = head
        .split("\r\n\r\n")
        .filter(|b| b.starts_with("HTTP/"))
        .last()
        .unwrap_or("");
    let mut lines = last.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.split_whitespace();
    let http_version = parts.next().unwrap_or("").to_owned();
    let status = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let headers = header_map(lines);
    Response {
        status,
        headers,
        body,
        exit,
        http_version,
    }
}

/// Sends raw bytes on a fresh connection and returns everything the server
/// writes until it closes it (bounded by a timeout). With
/// `Connection: close` in the request that is the whole response, body
/// included, byte for byte: what a client would read.
pub fn raw(a: &Apache, request: impl AsRef<[u8]>) -> Vec<u8> {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", a.port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s.write_all(request.as_ref()).expect("send");
    let mut out = vec![];
    let _ = s.read_to_end(&mut out);
    out
}

/// An HTTP/1.1 response read off the socket: the status line's code (a
/// missing or garbled one panics: no response is never a status), the
/// header fields (names lowercased), and the bytes after the blank line,
/// as sent (still chunked, if so).
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: BTreeMap<String, Vec<String>>,
    pub after_head: Vec<u8>,
}

impl RawResponse {
    pub fn parse(bytes: &[u8]) -> RawResponse {
        let end = bytes
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| {
                panic!(
                    "no complete response head: {:?}",
                    String::from_utf8_lossy(bytes)
                )
            });
        let head = String::from_utf8_lossy(&bytes[..end]).to_string();
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or("");
        let status = status_line
            .strip_prefix("HTTP/1.1 ")
            .and_then(|s| s.get(..3))
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no HTTP/1.1 status line: {head:?}"));
        let headers = header_map(lines);
        RawResponse {
            status,
            headers,
            after_head: bytes[end + 4..].to_vec(),
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        first_value(&self.headers, name)
    }

    /// The body: de-chunked when sent chunked (the last chunk must be
    /// there), else the bytes after the head, which must match any
    /// Content-Length.
    pub fn body(&self) -> Vec<u8> {
        if self.header("Transfer-Encoding") != Some("chunked") {
            if let Some(l) = self.header("Content-Length") {
                assert_eq!(l.parse::<usize>().ok(), Some(self.after_head.len()));
            }
            return self.after_head.clone();
        }
        let mut out = vec![];
        let mut rest = &self.after_head[..];
        loop {
            let eol = rest
                .windows(2)
                .position(|w| w == b"\r\n")
                .expect("chunk size line");
            let size_field = String::from_utf8_lossy(&rest[..eol]).to_string();
            let size = usize::from_str_radix(size_field.split(';').next().unwrap().trim(), 16)
                .expect("chunk size");
            rest = &rest[eol + 2..];
            if size == 0 {
                return out;
            }
            assert!(rest.len() >= size + 2, "chunk cut short");
            out.extend_from_slice(&rest[..size]);
            rest = &rest[size + 2..];
        }
    }
}

/// A GET or HEAD over HTTP/1.1 on its own connection, `Connection: close`,
/// read to EOF.
pub fn raw_request(a: &Apache, method: &str, path: &str, headers: &[(&str, &[u8])]) -> RawResponse {
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n")
        .into_bytes();
    for (k, v) in headers {
        req.extend_from_slice(k.as_bytes());
        req.extend_from_slice(b": ");
        req.extend_from_slice(v);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"\r\n");
    RawResponse::parse(&raw(a, req))
}

/// The first value of header `name` in a map made by `header_map`.
fn first_value<'a>(headers: &'a BTreeMap<String, Vec<String>>, name: &str) -> Option<&'a str> {
    headers
        .get(&name.to_ascii_lowercase())
        .and_then(|v| v.first())
        .map(String::as_str)
}

/// Header lines into a map by lower-cased name (repeats kept in order).
fn header_map<'a>(lines: impl Iterator<Item = &'a str>) -> BTreeMap<String, Vec<String>> {
    let mut headers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            headers
                .entry(k.trim().to_ascii_lowercase())
                .or_default()
                .push(v.trim().to_owned());
        }
    }
    headers
}

/// The line that loads the module built alongside this test binary.
pub fn load_built_module() -> String {
    format!("LoadModule gzip_disk_ng_module {}", module_path().display())
}

/// `apache2 -t` on a minimal config loading the built module, plus `lines`.
pub fn configtest(lines: &str) -> (bool, String) {
    configtest_with(&load_built_module(), lines, &[])
}

/// `apache2 -t` on a minimal config loading the module by `load`, plus
/// `lines`, with `files` (name, bytes) in its ServerRoot: whether it passed,
/// and what it said.
pub fn configtest_with(load: &str, lines: &str, files: &[(&str, &[u8])]) -> (bool, String) {
    let dir = world_readable_tempdir();
    let r = dir.path().display();
    let modules = httpd_modules();
    let conf = dir.path().join("t.conf");
    fs::write(
        &conf,
        format!(
            "ServerRoot {r}\nDefaultRuntimeDir {r}\nPidFile {r}/pid\nErrorLog {r}/err\n\
             Listen 127.0.0.1:1\nServerName localhost\n\
             LoadModule mpm_event_module {modules}/mod_mpm_event.so\n\
             LoadModule authz_core_module {modules}/mod_authz_core.so\n\
             {}{load}\n{lines}\n",
            built_in_on_debian(&modules)
        ),
    )
    .expect("conf");
    for (name, bytes) in files {
        fs::write(dir.path().join(name), bytes).expect("write");
    }
    let out = Command::new(httpd_binary())
        .arg("-t")
        .arg("-d")
        .arg(dir.path())
        .arg("-f")
        .arg(&conf)
        .output()
        .expect("run apache2 -t");
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text.into_owned())
}

/// Each of `refused` (lines, what the refusal must say) fails
/// `apache2 -t` and each of `accepted` passes, with `files` in the
/// ServerRoot.
pub fn assert_configtests(files: &[(&str, &[u8])], refused: &[(&str, &str)], accepted: &[&str]) {
    let load = load_built_module();
    for (lines, want) in refused {
        let (ok, out) = configtest_with(&load, lines, files);
        assert!(!ok, "{lines}: accepted\n{out}");
        assert!(out.contains(want), "{lines}: wanted '{want}' in\n{out}");
    }
    for lines in accepted {
        let (ok, out) = configtest_with(&load, lines, files);
        assert!(ok, "{lines}: refused\n{out}");
    }
}

/// A `kB` field of `/proc/<pid>/status` (`pid` may be `self`), in kB.
pub fn proc_status_kb(pid: &str, field: &str) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The publish tool built alongside this test binary.
pub const PUBLISH_TOOL: &str = env!("CARGO_BIN_EXE_gzip-disk-ng");

/// The state directory every publish run of this test process uses, so
/// none writes to the real one; each tree gets a store of its own there.
pub fn test_state_dir() -> &'static Path {
    static DIR: std::sync::LazyLock<tempfile::TempDir> = std::sync::LazyLock::new(|| {
        tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("state dir")
    });
    DIR.path()
}

/// The store the publish tool keeps for `tree` under `test_state_dir`.
pub fn store_of(tree: &Path) -> PathBuf {
    let canonical = fs::canonicalize(tree).expect("tree");
    test_state_dir().join(gdn_publish::state::store_name(&canonical))
}

/// Runs the publish tool with `args`, its state under `test_state_dir`.
pub fn publish_tool<I: IntoIterator<Item = S>, S: AsRef<std::ffi::OsStr>>(
    args: I,
) -> std::process::Output {
    Command::new(PUBLISH_TOOL)
        .env(gdn_publish::state::STATE_ENV, test_state_dir())
        .args(args)
        .output()
        .expect("run gzip-disk-ng")
}

/// What a process printed on stdout, as text.
pub fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Panics unless `o` printed `want` on stdout.
pub fn assert_prints(o: &std::process::Output, want: &str) {
    let out = stdout(o);
    assert!(out.contains(want), "no {want:?} in:\n{out}");
}

/// What a process printed on stderr, as text.
pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The pids of processes named `gdn-compressor` whose parent is `ppid`.
pub fn compressors(ppid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let comm = fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        let stat = fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let parent = stat
            .rsplit(')')
            .next()
            .and_then(|s| s.split_whitespace().nth(1))
            .and_then(|p| p.parse::<i32>().ok());
        if comm.trim() == "gdn-compressor" && parent == Some(ppid) {
            out.push(pid);
        }
    }
    out
}

/// Copies in the cache (name, bytes), markers included.
pub fn copies(root: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let fan_out = |n: &str| n.len() == 2 && n.bytes().all(|b| b.is_ascii_hexdigit());
    for sub in fs::read_dir(root).into_iter().flatten().flatten() {
        // The copies' fan-out directories, not the records, histories,
        // kept versions or site dictionaries beside them.
        if !fan_out(&sub.file_name().to_string_lossy()) {
            continue;
        }
        for f in fs::read_dir(sub.path()).into_iter().flatten().flatten() {
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            out.push((f.file_name().to_string_lossy().into_owned(), len));
        }
    }
    out
}

/// A users file holding alice (password `secret`) for Basic auth, in a
/// directory the server's user can read.
pub fn users_file() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = world_readable_tempdir();
    let users = dir.path().join("users");
    let out = std::process::Command::new("htpasswd")
        .args(["-nbB", "alice", "secret"])
        .output()
        .expect("run htpasswd");
    assert!(out.status.success(), "htpasswd: {}", stderr(&out));
    fs::write(&users, &out.stdout).expect("users file");
    (dir, users)
}

/// Waits (up to 20 s) until `done` holds.
pub fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends SIGUSR1 (what `apache2 -k graceful` sends) to the parent and
/// waits until the new generation's children answer.
pub fn graceful(a: &Apache) {
    let resumed = || a.error_log().matches("resuming normal operations").count();
    let (before, old) = (resumed(), a.child_pids());
    let pid = apache_pid(a);
    // SAFETY: a plain signal to the Apache this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGUSR1) }, 0);
    wait_for("the graceful restart", || resumed() > before);
    wait_for("the new generation's children", || {
        let now = a.child_pids();
        !now.is_empty() && now.iter().all(|p| !old.contains(p))
    });
}

/// The pid of Apache's parent, from its pid file.
pub fn apache_pid(a: &Apache) -> i32 {
    fs::read_to_string(a.root.path().join("httpd.pid"))
        .expect("pid file")
        .trim()
        .parse()
        .expect("pid")
}

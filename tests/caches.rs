//! Caches in front of the module: a real `varnishd` with the shipped VCL
//! (apache-conf/varnish/gzip-disk-ng.vcl), and Apache's own mod_cache_disk
//! with the shipped snippet (apache-conf/cache/gzip-disk-ng-cache.conf) on
//! the same server and in a reverse proxy. Whatever sits in front, each
//! client gets the coding the module gives it when asked directly, bodies
//! decode to the original, repeated requests reach the module once per
//! representation, 304 and Range work, and a delta goes only to a client
//! holding its dictionary.

mod common;

use common::*;
use mod_gzip_disk_ng::coding::{Coding, DeltaCoding};
use mod_gzip_disk_ng::negotiate::Accepted;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

const VARNISHD: &str = "/usr/sbin/varnishd";
const VCL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/apache-conf/varnish/gzip-disk-ng.vcl"
);
const CACHE_CONF: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/apache-conf/cache/gzip-disk-ng-cache.conf"
);

/// Accept-Encoding as real clients send it, and the edge cases of the
/// module's negotiation (q values, `*`, identity, malformed members).
const CLIENTS: &[Option<&str>] = &[
    Some("gzip, deflate, br, zstd"),           // Chrome, Edge, Firefox
    Some("gzip, deflate, br, zstd, dcb, dcz"), // Chrome with RFC 9842
    Some("gzip, deflate, br"),                 // Safari, older Firefox
    Some("deflate, gzip, br, zstd"),           // curl --compressed
    Some("gzip"),                              // crawlers
    Some("gzip, deflate"),                     // Python requests
    Some("br, gzip"),                          // Safari's, reordered
    None,                                      // no header
    Some("identity"),
    Some("*"),
    Some("br;q=0.5, gzip;q=1.0"),
    Some("zstd;q=0, gzip, deflate, br"),
    Some("gzip;q=0.5, identity"),
    Some("*;q=0.5, gzip"),
    Some("GZIP;Q=0.8 ,\tBr"),
    Some("x-gzip"),
    Some("gzip;q=2, br"),
    Some("gzip;q=0, gzip;q=0.5"),
    Some("*;q=0, br"),
    Some("br;q=0.001, gzip;q=0.0001, zstd;q=0.0005"),
    Some("gzip;level=1, br;foo"),
];

/// The page every client asks for: an original with its three siblings.
const PAGE: &str = "/page.html";

/// Sends `sig` to `pid` with kill(1); whether it was delivered.
fn signal(pid: u32, sig: &str) -> bool {
    Command::new("kill")
        .args([sig, &pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A cache in front of the module's Apache, as the checks see it.
trait Front {
    fn url(&self, path: &str) -> String;
    /// How many requests for `path` reached the module.
    fn backend_hits(&self, path: &str) -> usize;
    /// Whether every Accept-Encoding is reduced to the module's choice;
    /// else only lists of names without q values or `*` are, and the
    /// others are cached under their own string.
    fn normalizes_all(&self) -> bool;
}

/// A GET through `front` with the given Accept-Encoding and more headers.
fn via(front: &dyn Front, path: &str, ae: Option<&str>, extra: &[String]) -> Response {
    let mut args = vec![];
    if let Some(ae) = ae {
        args.push("-H".to_string());
        args.push(format!("Accept-Encoding: {ae}"));
    }
    args.extend(extra.iter().cloned());
    curl(&front.url(path), &args)
}

/// The same request straight to the module, under a URL no cache has seen
/// (the query string changes nothing for a static file).
fn direct(a: &Apache, path: &str, ae: Option<&str>, extra: &[String]) -> Response {
    let mut args = vec![];
    if let Some(ae) = ae {
        args.push("-H".to_string());
        args.push(format!("Accept-Encoding: {ae}"));
    }
    args.extend(extra.iter().cloned());
    curl(&a.url(&format!("{path}?direct")), &args)
}

/// Lines of an access log (`%r %>s note`) for a GET of exactly `path`
/// whose note satisfies `counts`.
fn log_hits(log: &str, path: &str, counts: impl Fn(&str) -> bool) -> usize {
    let prefix = format!("GET {path} HTTP/");
    log.lines()
        .filter(|l| l.starts_with(&prefix))
        .filter(|l| counts(l.rsplit(' ').next().unwrap_or("")))
        .count()
}

/// The access log once Apache has written the lines of the requests
/// answered so far (it logs after the response has gone out).
fn settled_log(a: &Apache) -> String {
    let mut last = a.access_log();
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(50));
        let now = a.access_log();
        if now == last {
            return now;
        }
        last = now;
    }
    last
}

/// The site: a page with an original and three siblings, and three
/// versions of a script published with deltas by the publish tool
/// (`--delta-group`: app.3.js against app.1.js and app.2.js).
fn fill(docroot: &Path) {
    publish(
        docroot,
        "page.html",
        &page(60_000, 7),
        true,
        &[".zst", ".br", ".gz"],
    );
    let now = SystemTime::now();
    for (i, v) in script_versions().iter().enumerate() {
        let p = docroot.join(format!("app.{}.js", i + 1));
        fs::write(&p, v).expect("write");
        set_mtime(&p, now - Duration::from_secs(300 - 100 * i as u64));
    }
    let o = publish_tool([
        "compress".as_ref(),
        "--delta-group".as_ref(),
        "app.*.js".as_ref(),
        "--delta-versions".as_ref(),
        "2".as_ref(),
        docroot.as_os_str(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Three versions of a script, each a small edit of the last.
fn script_versions() -> Vec<Vec<u8>> {
    let v1 = page(80_000, 3);
    let mut v2 = v1.clone();
    v2.splice(20_000..20_010, b"version 2!".iter().copied());
    let mut v3 = v2.clone();
    v3.splice(50_000..50_010, b"version 3!".iter().copied());
    v3.extend_from_slice(b"/* appended in version 3 */\n");
    vec![v1, v2, v3]
}

/// The `Available-Dictionary` value announcing `dictionary`.
fn announce(dictionary: &[u8]) -> String {
    let hash = Sha256::digest(dictionary);
    sfv::ItemSerializer::new().bare_item(&hash[..]).finish()
}

/// Every client gets, through `front`, what the module gives it directly:
/// the same status, coding, ETag and Vary, and a body that decodes to the
/// original. Twice: the second answer comes from the cache.
fn check_clients(front: &dyn Front, a: &Apache) {
    let original = fs::read(a.docroot.join("page.html")).expect("read");
    for round in 0..2 {
        for &ae in CLIENTS {
            let want = direct(a, PAGE, ae, &[]);
            let got = via(front, PAGE, ae, &[]);
            let what = format!("{ae:?}, round {round}");
            assert_eq!((got.status, want.status), (200, 200), "{what}");
            assert_eq!(got.coding(), want.coding(), "{what}");
            assert_eq!(got.header("ETag"), want.header("ETag"), "{what}");
            assert_eq!(vary(&got), vary(&want), "{what}");
            assert_eq!(got.body, want.body, "{what}");
            assert!(
                got.decoded() == original,
                "{what}: does not decode to the page"
            );
        }
    }
}

/// Vary's members, without Available-Dictionary: the module names it
/// for every request naming dcz or dcb, and a cache in front drops those
/// codings from requests announcing no dictionary (deltas cannot answer
/// them), so only that member may differ.
fn vary(r: &Response) -> BTreeSet<String> {
    let mut v: BTreeSet<String> = r
        .tokens("Vary")
        .iter()
        .map(|t| t.to_ascii_lowercase())
        .collect();
    assert!(v.remove("accept-encoding"), "Vary: {v:?}");
    v.remove("available-dictionary");
    v
}

/// The codings a front keeps of a header, as the module chooses among
/// them: those at the best q (none when identity is preferred).
fn tied(ae: Option<&str>) -> Vec<&'static str> {
    let acc = Accepted::parse(ae);
    let ranked = acc.ranked(&Coding::ALL);
    let top = ranked.iter_q().next().map(|(_, q)| q);
    ranked
        .iter_q()
        .filter(|&(_, q)| Some(q) == top && q >= acc.identity_preference())
        .map(|(c, _)| c.token())
        .collect()
}

/// What a front keeps apart: the representation the module sends, the
/// codings it chose among (the front's normalized header), or, for a
/// header the front leaves alone, the header string.
type Kept<'h> = (Option<String>, Vec<&'static str>, Option<&'h str>);

/// 100 requests spread over the clients reach the module at most once
/// per representation and normalized header, or, for a header the front
/// leaves alone, once per header string.
fn check_one_fetch_per_representation(front: &dyn Front, a: &Apache) {
    let representations: BTreeSet<Kept<'_>> = CLIENTS
        .iter()
        .map(|&ae| {
            let coding = direct(a, PAGE, ae, &[]).coding().map(str::to_owned);
            let simple = ae.is_none_or(|h| !h.contains([';', '*']));
            (
                coding,
                tied(ae),
                (!front.normalizes_all() && !simple).then_some(ae).flatten(),
            )
        })
        .collect();
    for i in 0..100 {
        let ae = CLIENTS[i % CLIENTS.len()];
        assert_eq!(via(front, PAGE, ae, &[]).status, 200, "{ae:?}");
    }
    let hits = front.backend_hits(PAGE);
    eprintln!(
        "{} requests from {} clients: {hits} reached the module, for {} representations or kept header strings",
        100 + 2 * CLIENTS.len(),
        CLIENTS.len(),
        representations.len()
    );
    assert!(
        (1..=representations.len()).contains(&hits),
        "{hits} backend requests for {} representations {representations:?}",
        representations.len()
    );
}

/// If-None-Match with each representation's ETag gives 304 through the
/// cache, a stale ETag 200; a range is the range of the coded bytes.
fn check_conditional_and_range(front: &dyn Front, a: &Apache) {
    let mut seen = BTreeSet::new();
    for &ae in CLIENTS {
        let want = direct(a, PAGE, ae, &[]);
        if !seen.insert(want.coding().map(str::to_owned)) {
            continue;
        }
        let etag = want.header("ETag").expect("etag").to_owned();
        let inm = |tag: &str| vec!["-H".to_string(), format!("If-None-Match: {tag}")];
        via(front, PAGE, ae, &[]);
        let r = via(front, PAGE, ae, &inm(&etag));
        assert_eq!(r.status, 304, "{ae:?} {etag}");
        assert!(r.body.is_empty());
        let r = via(front, PAGE, ae, &inm("\"other\""));
        assert_eq!(r.status, 200, "{ae:?}");
        let range = ["-H".to_string(), "Range: bytes=100-1099".to_string()];
        let r = via(front, PAGE, ae, &range);
        assert_eq!(r.status, 206, "{ae:?}");
        assert_eq!(r.coding(), want.coding(), "{ae:?}");
        assert_eq!(r.body, want.body[100..1100], "{ae:?}");
    }
    assert!(seen.len() > 2, "too few representations to test: {seen:?}");
}

/// A request for a script: its Accept-Encoding, more curl arguments, and
/// the dictionary a delta answering it must be made against (`None`: no
/// delta).
type DeltaCase<'a> = (&'a str, Vec<String>, Option<&'a [u8]>);

/// Deltas through `front`: each client holding a dictionary gets the
/// delta against its own (decoding to the newest version), clients
/// without one never get a delta, and neither do clients announcing a
/// dictionary without naming dcz or dcb. Rounds after the first reach
/// the module no more.
fn check_deltas(front: &dyn Front, a: &Apache) {
    const CHROME: &str = "gzip, deflate, br, zstd, dcb, dcz";
    const JS: &str = "/app.3.js";
    let v = script_versions();
    let ad = |d: &[u8]| {
        vec![
            "-H".to_string(),
            format!("Available-Dictionary: {}", announce(d)),
        ]
    };
    let unknown = ad(b"a dictionary the server never saw");
    let cases: Vec<DeltaCase> = vec![
        (CHROME, ad(&v[0]), Some(&v[0])),
        (CHROME, ad(&v[1]), Some(&v[1])),
        ("gzip, br, dcb", ad(&v[0]), Some(&v[0])),
        (CHROME, vec![], None),
        ("gzip, deflate, br, zstd", ad(&v[0]), None),
        ("gzip, br, zstd, dcz;q=0", ad(&v[1]), None),
        (CHROME, unknown, None),
    ];
    let mut first_round = 0;
    for round in 0..6 {
        for (ae, extra, dictionary) in &cases {
            let want = direct(a, JS, Some(ae), extra);
            let got = via(front, JS, Some(ae), extra);
            let what = format!("{ae} {extra:?}, round {round}");
            assert_eq!((got.status, want.status), (200, 200), "{what}");
            assert_eq!(got.coding(), want.coding(), "{what}");
            assert_eq!(got.body, want.body, "{what}");
            assert_eq!(vary(&got), vary(&want), "{what}");
            let keyed = got
                .tokens("Vary")
                .iter()
                .any(|t| t == "Available-Dictionary");
            assert!(keyed || extra.is_empty() || !names_delta(ae), "{what}");
            check_delta_body(&got, *dictionary, &v[2], &what);
        }
        if round == 0 {
            first_round = front.backend_hits(JS);
        }
    }
    assert!((1..=cases.len()).contains(&first_round), "{first_round}");
    assert_eq!(
        front.backend_hits(JS),
        first_round,
        "later rounds were cached"
    );
}

/// Whether the module's parser finds a dictionary coding with q > 0.
fn names_delta(ae: &str) -> bool {
    let acc = Accepted::parse(Some(ae));
    DeltaCoding::ALL.iter().any(|&d| acc.delta_q(d) > 0)
}

/// A delta exactly when a dictionary is expected, made against it.
fn check_delta_body(r: &Response, dictionary: Option<&[u8]>, newest: &[u8], what: &str) {
    let coding = r.coding().unwrap_or("identity");
    let Some(d) = dictionary else {
        assert!(
            !coding.starts_with("dc"),
            "{what}: a delta without the dictionary"
        );
        assert_eq!(r.decoded(), newest, "{what}");
        return;
    };
    assert!(["dcz", "dcb"].contains(&coding), "{what}: {coding}");
    assert_eq!(
        &r.body[4 + 4 * usize::from(coding == "dcz")..][..32],
        &Sha256::digest(d)[..]
    );
    if coding == "dcz" {
        assert_eq!(zstd_cli_decode_with(d, &r.body[40..]), newest, "{what}");
    }
}

// ---------------------------------------------------------------- Varnish

/// A `varnishd` in the foreground on a free loopback port with the shipped
/// VCL, its backend pointed at `backend`; stopped by its PID on drop.
struct Varnish {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Varnish {
    /// Starts varnishd with extra `-p` parameters; `as_user` runs it with
    /// runuser (as root) under that user, unjailed.
    fn start(backend_port: u16, params: &[&str], as_user: Option<&str>) -> Varnish {
        Self::start_with(
            &fs::read_to_string(VCL).expect("shipped VCL"),
            backend_port,
            params,
            as_user,
        )
    }

    /// `start` with another VCL, whose backend block is the shipped one's.
    fn start_with(vcl: &str, backend_port: u16, params: &[&str], as_user: Option<&str>) -> Varnish {
        let dir = world_readable_tempdir();
        assert!(
            vcl.contains(".port = \"8080\";"),
            "the backend block admins edit"
        );
        let vcl = vcl.replace(".port = \"8080\";", &format!(".port = \"{backend_port}\";"));
        let vcl_path = dir.path().join("gzip-disk-ng.vcl");
        fs::write(&vcl_path, vcl).expect("write vcl");
        fs::set_permissions(&vcl_path, fs::Permissions::from_mode(0o644)).expect("chmod");
        let work = dir.path().join("work");
        fs::create_dir(&work).expect("workdir");
        if let Some(u) = as_user {
            let st = Command::new("chown")
                .args([u, &work.to_string_lossy()])
                .status();
            assert!(st.is_ok_and(|s| s.success()), "chown {u}");
        }
        let port = free_port();
        let mut cmd = match as_user {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.args(["-u", u, "--", VARNISHD]);
                c
            }
            None => Command::new(VARNISHD),
        };
        cmd.arg("-F")
            .args(["-a", &format!("127.0.0.1:{port}")])
            .arg("-n")
            .arg(&work)
            .arg("-f")
            .arg(&vcl_path)
            .args(["-s", "malloc,32m", "-T", "none"]);
        if as_user.is_some() || !is_root() {
            cmd.args(["-j", "none"]);
        }
        for p in params {
            cmd.args(["-p", p]);
        }
        let log = fs::File::create(dir.path().join("varnishd.log")).expect("log");
        cmd.stdout(log.try_clone().expect("dup")).stderr(log);
        let child = cmd.spawn().expect("run varnishd");
        let mut v = Varnish { child, port, dir };
        v.wait_ready();
        v
    }

    /// Until varnishd answers a request (any status), or panics with its
    /// output.
    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!("varnishd exited ({st}):\n{}", self.log());
            }
            let r = curl(&format!("http://127.0.0.1:{}/-ready", self.port), &[]);
            if r.status != 0 {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("varnishd did not answer:\n{}", self.log());
    }

    fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("varnishd.log")).unwrap_or_default()
    }
}

impl Drop for Varnish {
    fn drop(&mut self) {
        let pid = self.child.id();
        signal(pid, "-TERM");
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        signal(pid, "-KILL");
        let _ = self.child.wait();
    }
}

/// Varnish in front of `a`: the module's requests counted in `a`'s log.
struct VarnishFront<'a> {
    varnish: Varnish,
    apache: &'a Apache,
}

impl Front for VarnishFront<'_> {
    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.varnish.port)
    }

    fn backend_hits(&self, path: &str) -> usize {
        log_hits(&settled_log(self.apache), path, |_| true)
    }

    fn normalizes_all(&self) -> bool {
        true
    }
}

/// Varnish with the shipped VCL in front of `a`.
fn varnish_front<'a>(a: &'a Apache, params: &[&str], as_user: Option<&str>) -> VarnishFront<'a> {
    VarnishFront {
        varnish: Varnish::start(a.port, params, as_user),
        apache: a,
    }
}

/// varnishd is installed, else the check is skipped (a failure under
/// scripts/test, which installs it).
fn have_varnish() -> bool {
    let ok = Path::new(VARNISHD).exists();
    if !ok {
        skip("varnishd not installed (apt-get install varnish)");
    }
    ok
}

/// Every property, with Varnish's gzip support at its default (on) and
/// off: the VCL must not depend on the parameter.
#[test]
fn varnish_passes_each_clients_coding() {
    if !have_varnish() {
        return;
    }
    for params in [&[][..], &["http_gzip_support=off"][..]] {
        let a = Apache::start(Options::default(), fill);
        let front = varnish_front(&a, params, None);
        check_clients(&front, &a);
        check_one_fetch_per_representation(&front, &a);
        check_conditional_and_range(&front, &a);
        a.assert_no_crash();
    }
}

#[test]
fn varnish_keys_deltas_by_dictionary() {
    if !have_varnish() {
        return;
    }
    let a = Apache::start(Options::default(), fill);
    let front = varnish_front(&a, &[], None);
    check_deltas(&front, &a);
}

/// As an unprivileged user (here `nobody`, when the tests run as root;
/// otherwise the other tests already run so) varnishd needs `-j none`
/// and a workdir it owns.
#[test]
fn varnish_runs_unprivileged() {
    if !have_varnish() {
        return;
    }
    if !is_root() {
        eprintln!("not root: the other tests ran varnishd unprivileged");
        return;
    }
    let a = Apache::start(Options::default(), fill);
    let front = varnish_front(&a, &[], Some("nobody"));
    check_clients(&front, &a);
}

/// The control: Varnish's own handling (the shipped backend block alone)
/// gives a zstd client gzip, and the checks above see it.
#[test]
fn varnish_without_the_vcl_fails_the_checks() {
    if !have_varnish() {
        return;
    }
    let shipped = fs::read_to_string(VCL).expect("shipped VCL");
    let backend = &shipped[shipped.find("backend default").expect("backend")..];
    let backend = &backend[..=backend.find("\n}").expect("end of backend") + 1];
    let a = Apache::start(Options::default(), fill);
    let front = VarnishFront {
        varnish: Varnish::start_with(&format!("vcl 4.1;\n{backend}\n"), a.port, &[], None),
        apache: &a,
    };
    let chrome = Some("gzip, deflate, br, zstd");
    let (smallest, _) = smallest_sibling(&a.docroot.join("page.html"));
    assert_ne!(smallest, "gzip");
    assert_eq!(direct(&a, PAGE, chrome, &[]).coding(), Some(smallest));
    assert_eq!(via(&front, PAGE, chrome, &[]).coding(), Some("gzip"));
    let caught = std::panic::catch_unwind(|| check_clients(&front, &a));
    assert!(
        caught.is_err(),
        "check_clients passed Varnish's default handling"
    );
}

// ------------------------------------------------------- mod_cache_disk

/// The shipped cache snippet with its CacheRoot beside the docroot (the
/// harness replaces `{docroot}`), made by `cache_root`.
fn cache_config() -> String {
    let conf = fs::read_to_string(CACHE_CONF).expect("shipped cache conf");
    let shipped = "CacheRoot /var/cache/apache2/mod_cache_disk";
    assert!(conf.contains(shipped), "{conf}");
    conf.replace(shipped, "CacheRoot {docroot}/../cache")
}

/// A fresh cache root beside `docroot`, which Apache's user can write.
fn cache_root(docroot: &Path) {
    let root = docroot.parent().expect("server root").join("cache");
    fs::create_dir(&root).expect("cache root");
    fs::set_permissions(&root, fs::Permissions::from_mode(0o777)).expect("chmod");
}

/// Options for an Apache with the cache snippet and `extra` server
/// lines, `dir` in the docroot's section, and the modules it needs.
fn cached(extra: &str, dir: &str, proxy: bool) -> Options {
    let mut modules = vec!["cache", "cache_disk", "headers"];
    if proxy {
        modules.extend(["proxy", "proxy_http"]);
    }
    Options {
        server: format!("{}\n{extra}", cache_config()),
        dir: dir.into(),
        modules,
        ..Default::default()
    }
}

/// A freshness lifetime for the module's responses: mod_cache stores
/// nothing it cannot tell fresh.
const FRESH: &str = "Header set Cache-Control \"max-age=300\"";

/// mod_cache_disk on the server running the module: a request served
/// from the cache leaves the module's note empty in the access log.
struct SameServer(Apache);

impl Front for SameServer {
    fn url(&self, path: &str) -> String {
        self.0.url(path)
    }

    fn backend_hits(&self, path: &str) -> usize {
        log_hits(&settled_log(&self.0), path, |note| note != "-")
    }

    fn normalizes_all(&self) -> bool {
        false
    }
}

/// mod_cache_disk in a reverse proxy (mod_proxy_http) in front of the
/// module's Apache, whose log counts what reached it.
struct Proxy<'a> {
    front: Apache,
    backend: &'a Apache,
}

impl Front for Proxy<'_> {
    fn url(&self, path: &str) -> String {
        self.front.url(path)
    }

    fn backend_hits(&self, path: &str) -> usize {
        log_hits(&settled_log(self.backend), path, |_| true)
    }

    fn normalizes_all(&self) -> bool {
        false
    }
}

fn module_with_fresh_responses() -> Apache {
    Apache::start(
        Options {
            dir: format!("SetHandler gzip-disk-ng\n{FRESH}"),
            modules: vec!["headers"],
            ..Default::default()
        },
        fill,
    )
}

fn proxy_in_front(backend: &Apache) -> Proxy<'_> {
    let pass = format!("ProxyPass / http://127.0.0.1:{}/\n", backend.port);
    let front = Apache::start(cached(&pass, "", true), cache_root);
    Proxy { front, backend }
}

#[test]
fn mod_cache_same_server() {
    let a = Apache::start(
        cached("", &format!("SetHandler gzip-disk-ng\n{FRESH}"), false),
        |d| {
            fill(d);
            cache_root(d);
        },
    );
    let front = SameServer(a);
    check_clients(&front, &front.0);
    check_one_fetch_per_representation(&front, &front.0);
    check_conditional_and_range(&front, &front.0);
    check_deltas(&front, &front.0);
    front.0.assert_no_crash();
}

#[test]
fn mod_cache_reverse_proxy() {
    let backend = module_with_fresh_responses();
    let front = proxy_in_front(&backend);
    check_clients(&front, &backend);
    check_one_fetch_per_representation(&front, &backend);
    check_conditional_and_range(&front, &backend);
    check_deltas(&front, &backend);
    backend.assert_no_crash();
    front.front.assert_no_crash();
}

/// Accept-Encoding headers drawn from names (with `x-gzip`, `*`,
/// identity, an unknown coding, duplicates) and q values (none, 0,
/// between, 1, malformed), with and without whitespace.
fn generated_headers(n: usize, seed: u64) -> Vec<String> {
    const NAMES: [&str; 8] = [
        "zstd", "br", "gzip", "x-gzip", "identity", "*", "deflate", "Br",
    ];
    const QS: [&str; 8] = [
        "", ";q=0", ";q=0.5", ";q=1", ";q=0.001", ";q=0.9", " ; q=0.5", ";q=2",
    ];
    let mut next = xorshift(seed);
    (0..n)
        .map(|_| {
            let members = 1 + next() as usize % 4;
            (0..members)
                .map(|_| {
                    let name = NAMES[next() as usize % NAMES.len()];
                    format!("{name}{}", QS[next() as usize % QS.len()])
                })
                .collect::<Vec<_>>()
                .join(if next().is_multiple_of(2) { ", " } else { "," })
        })
        .collect()
}

/// Many generated headers: through the VCL each gets the coding the
/// module gives it directly.
#[test]
fn varnish_matches_the_modules_negotiation() {
    if !have_varnish() {
        return;
    }
    let a = Apache::start(Options::default(), fill);
    let front = varnish_front(&a, &[], None);
    let (mut codings, mut kept) = (BTreeSet::new(), BTreeSet::new());
    for ae in generated_headers(150, 19) {
        let want = direct(&a, PAGE, Some(&ae), &[]);
        let got = via(&front, PAGE, Some(&ae), &[]);
        assert_eq!(got.coding(), want.coding(), "{ae}");
        assert_eq!(got.body, want.body, "{ae}");
        codings.insert(want.coding().map(str::to_owned));
        kept.insert((want.coding().map(str::to_owned), tied(Some(&ae))));
    }
    assert_eq!(codings.len(), 4, "every representation drawn: {codings:?}");
    assert!(front.backend_hits(PAGE) <= kept.len());
}

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
use gdn_core::coding::Coding;
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
    /// Which Accept-Encoding headers the front reduces to the codings the
    /// module chooses among; the others it caches under their own string.
    fn normalizes(&self) -> Normalizes;
}

/// The headers a front reduces to the codings the module chooses among.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Normalizes {
    /// Every header, q values and `*` included.
    All,
    /// Lists of names without q values or `*`.
    Plain,
    /// None: each header string is its own key.
    Nothing,
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

/// Every client gets, through `front`, what the module gives it directly:
/// the same status, coding, ETag and Vary, and a body that decodes to the
/// original. Twice: the second answer comes from the cache.
fn check_clients(front: &dyn Front, a: &Apache) {
    let differences = clients_differ(front, a);
    assert!(differences.is_empty(), "{differences:#?}");
}

/// Where clients' answers through `front` differ from the module's own:
/// "coding", "ETag", "Vary" or "body", then the client and round. A
/// status other than 200 or a body that does not decode to the page
/// fails at once: no front may cause those.
fn clients_differ(front: &dyn Front, a: &Apache) -> Vec<String> {
    let original = fs::read(a.docroot.join("page.html")).expect("read");
    let mut out = Vec::new();
    for round in 0..2 {
        for &ae in CLIENTS {
            let want = direct(a, PAGE, ae, &[]);
            let got = via(front, PAGE, ae, &[]);
            let what = format!("{ae:?}, round {round}");
            assert_eq!((got.status, want.status), (200, 200), "{what}");
            if got.coding() != want.coding() {
                out.push(format!(
                    "coding {what}: {:?}, the module's {:?}",
                    got.coding(),
                    want.coding()
                ));
            }
            if got.header("ETag") != want.header("ETag") {
                out.push(format!("ETag {what}"));
            }
            if vary(&got) != vary(&want) {
                out.push(format!("Vary {what}"));
            }
            if got.body != want.body {
                out.push(format!("body {what}"));
            }
            assert!(
                got.decoded() == original,
                "{what}: does not decode to the page"
            );
        }
    }
    out
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
/// them: those at the best q (none when identity is preferred), read as
/// RFC 9110 reads the header (`AcceptModel`, not the module's parser).
fn tied(ae: Option<&str>) -> Vec<&'static str> {
    let m = AcceptModel::parse(ae.unwrap_or(""));
    let top = Coding::ALL
        .iter()
        .map(|c| m.q(c.token()))
        .max()
        .unwrap_or(0);
    let identity = m.identity_stated().unwrap_or(0);
    Coding::ALL
        .iter()
        .map(|c| c.token())
        .filter(|&c| top > 0 && m.q(c) == top && top >= identity)
        .collect()
}

/// What a front keeps apart: the representation the module sends, the
/// codings it chose among (the front's normalized header), or, for a
/// header the front leaves alone, the header string.
type Kept<'h> = (Option<String>, Vec<&'static str>, Option<&'h str>);

/// 100 requests spread over the clients reach the module at most once
/// per representation and normalized header, or, for a header the front
/// leaves alone, once per header string. Returns how many requests for
/// the page reached the module in all (those of earlier checks included).
fn check_one_fetch_per_representation(front: &dyn Front, a: &Apache) -> usize {
    let representations: BTreeSet<Kept<'_>> = CLIENTS
        .iter()
        .map(|&ae| {
            let coding = direct(a, PAGE, ae, &[]).coding().map(str::to_owned);
            let simple = ae.is_none_or(|h| !h.contains([';', '*']));
            let kept = match front.normalizes() {
                Normalizes::All => false,
                Normalizes::Plain => !simple,
                Normalizes::Nothing => true,
            };
            (coding, tied(ae), kept.then_some(ae).flatten())
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
    hits
}

/// If-None-Match with each representation's ETag gives 304 through the
/// cache, a stale ETag 200; a range is the range of the coded bytes.
fn check_conditional_and_range(front: &dyn Front, a: &Apache) {
    check_conditional_and_range_by(front, a, false);
}

/// `check_conditional_and_range`; with `range_by_module` the front passes
/// Range requests to the module, and the answer is the module's own (as
/// its range policy has it), not necessarily a 206.
fn check_conditional_and_range_by(front: &dyn Front, a: &Apache, range_by_module: bool) {
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
        if range_by_module {
            let d = direct(a, PAGE, ae, &range);
            assert_eq!((r.status, r.coding()), (d.status, d.coding()), "{ae:?}");
            assert_eq!(r.body, d.body, "{ae:?}");
            continue;
        }
        range_through_the_cache(front, ae, &range, &want);
    }
    assert!(seen.len() > 2, "too few representations to test: {seen:?}");
}

/// A Range request through the cache gets the range of `want`'s coded
/// bytes. Until mod_cache has committed the entry an earlier request
/// stored, the request may reach the module through mod_cache's save
/// filter, which passes the body on in pieces; the byterange filter then
/// answers the whole body with a 200, as HTTP allows. That 200 must be
/// `want` whole, and a 206 must follow within a few seconds. The cache
/// may hold another representation of the page than the module sends
/// now (one sent while `want`'s sibling was still being verified by
/// another child): the range is then that one's, and it must decode to
/// the same page.
fn range_through_the_cache(front: &dyn Front, ae: Option<&str>, range: &[String], want: &Response) {
    let kept = via(front, PAGE, ae, &[]);
    assert_eq!(kept.decoded(), want.decoded(), "{ae:?}: the cache's page");
    let want = if kept.coding() == want.coding() {
        want
    } else {
        &kept
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = via(front, PAGE, ae, range);
        assert_eq!(r.coding(), want.coding(), "{ae:?}");
        if r.status == 206 {
            assert_eq!(r.body, want.body[100..1100], "{ae:?}");
            return;
        }
        assert_eq!(r.status, 200, "{ae:?}");
        assert_eq!(
            r.body, want.body,
            "{ae:?}: a 200 to a Range is the whole body"
        );
        assert!(
            Instant::now() < deadline,
            "{ae:?}: no 206 through the cache"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
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
    check_deltas_uncached(front, a, 0);
}

/// `check_deltas` through a front that passes `uncached` of the requests
/// of each round to the module every time (HAProxy: deltas and headers
/// with q values); the others reach it in the first round only.
fn check_deltas_uncached(front: &dyn Front, a: &Apache, uncached: usize) {
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
        first_round + 5 * uncached,
        "later rounds were cached"
    );
}

/// Whether the header names a dictionary coding with q > 0 (RFC 9842:
/// only by name), read as RFC 9110 reads it.
fn names_delta(ae: &str) -> bool {
    let m = AcceptModel::parse(ae);
    ["dcb", "dcz"].iter().any(|d| m.q(d) > 0)
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
    assert_eq!(oracle_decoded_delta(coding, d, &r.body), newest, "{what}");
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

/// Ends `child` by its PID: TERM, then KILL after ten seconds.
fn stop(child: &mut Child) {
    let pid = child.id();
    signal(pid, "-TERM");
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    signal(pid, "-KILL");
    let _ = child.wait();
}

impl Drop for Varnish {
    fn drop(&mut self) {
        stop(&mut self.child);
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

    fn normalizes(&self) -> Normalizes {
        Normalizes::All
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
    // Not root, varnishd runs as this user: unprivileged already.
    let user = is_root().then_some("nobody");
    let a = Apache::start(Options::default(), fill);
    let front = varnish_front(&a, &[], user);
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
    // The failure expected: a browser gets Varnish's own gzip where the
    // module sends a smaller coding.
    let differences = clients_differ(&front, &a);
    let expected =
        format!("coding {chrome:?}, round 0: Some(\"gzip\"), the module's Some({smallest:?})");
    assert!(
        differences.contains(&expected),
        "check_clients does not fail Varnish's default handling as expected ({expected}): {differences:#?}"
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

    fn normalizes(&self) -> Normalizes {
        Normalizes::Plain
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

    fn normalizes(&self) -> Normalizes {
        Normalizes::Plain
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

/// A page answered from a sibling whose own name's rules tell clients
/// apart (here `Require ip` on the `.gz`, the page having no original):
/// the answer says `Cache-Control: private`, so mod_cache on the same
/// server keeps what one client was allowed from another it refuses.
#[test]
fn mod_cache_keeps_an_answer_that_depended_on_the_client_to_it() {
    let data = b"<p>for one address only</p>\n".repeat(300);
    let rules = "<Files \"only.html.gz\">\nRequire ip 127.0.0.1\n</Files>\n\
                 <Files \"open.html.gz\">\nRequire all granted\n</Files>";
    let gz = gzip(&data);
    let mut opts = cached(
        "",
        &format!("SetHandler gzip-disk-ng\n{FRESH}\n{rules}"),
        false,
    );
    opts.modules.push("authz_host");
    let a = Apache::start(opts, move |d| {
        cache_root(d);
        fs::write(d.join("only.html.gz"), &gz).expect("sibling");
        fs::write(d.join("open.html.gz"), &gz).expect("sibling");
    });
    let other = |path: &str| {
        let args = ["--interface", "127.0.0.2", "-H", "Accept-Encoding: gzip"];
        a.request(path, &args)
    };
    assert_ne!(other("/only.html.gz").status, 200, "the rule holds");
    for _ in 0..3 {
        let r = a.get("/only.html", Some("gzip"));
        assert_eq!((r.status, r.coding()), (200, Some("gzip")));
        assert_eq!(r.decoded(), data);
        assert!(
            r.tokens("Cache-Control").contains(&"private".into()),
            "{r:?}"
        );
    }
    for _ in 0..3 {
        let r = other("/only.html");
        assert_ne!(r.status, 200, "another client got the cached answer: {r:?}");
    }
    // A sibling asked of Apache whose rules grant every client stays
    // storable: the modules' records were read (the start-up read-back
    // held), not taken as telling every client apart.
    let r = a.get("/open.html", Some("gzip"));
    assert_eq!((r.status, r.coding()), (200, Some("gzip")));
    assert!(
        !r.tokens("Cache-Control").contains(&"private".into()),
        "{r:?}"
    );
    assert!(!a.error_log().contains("taken as telling clients apart"));
    a.assert_no_crash();
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

// ------------------------------------ nginx, Squid, Traffic Server, HAProxy

const NGINX: &str = "/usr/sbin/nginx";
const SQUID: &str = "/usr/sbin/squid";
const TRAFFIC_SERVER: &str = "/usr/bin/traffic_server";
const HAPROXY: &str = "/usr/sbin/haproxy";
/// The shipped snippets, which the tests load as admins would.
const CONF_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/apache-conf");

/// A shipped snippet with `from` (the backend address admins edit, which
/// must be there) replaced by `to`.
fn shipped(file: &str, from: &str, to: &str) -> String {
    let text = fs::read_to_string(Path::new(CONF_DIR).join(file)).expect("shipped snippet");
    assert!(text.contains(from), "{file}: no {from:?} to edit");
    text.replace(from, to)
}

/// A cache in the foreground on a free loopback port, its configuration
/// and state in a temp dir; stopped by its PID on drop. As root it runs
/// as `nobody` (setpriv), like the Apache children of these tests, so the
/// same configuration is tested as root and as a normal user, and never
/// the system's service.
struct Daemon {
    name: &'static str,
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

/// The user the daemons run as: `nobody` as root, else this user.
fn daemon_user() -> String {
    if is_root() {
        return "nobody".into();
    }
    // SAFETY: plain libc calls; getpwuid's record is read at once.
    unsafe {
        let pw = libc::getpwuid(libc::geteuid());
        assert!(!pw.is_null(), "no passwd entry for this user");
        std::ffi::CStr::from_ptr((*pw).pw_name)
            .to_string_lossy()
            .into_owned()
    }
}

/// A temp dir for a daemon's files, readable by Apache's user.
fn daemon_dir() -> tempfile::TempDir {
    world_readable_tempdir()
}

impl Daemon {
    /// Runs `program args` from `dir` (made by `daemon_dir`, its files
    /// written) for the daemon on `port`, and waits until it answers.
    fn start(
        name: &'static str,
        dir: tempfile::TempDir,
        port: u16,
        program: &str,
        args: &[String],
    ) -> Daemon {
        let mut cmd = if is_root() {
            let st = Command::new("chown")
                .args(["-R", "nobody:nogroup"])
                .arg(dir.path())
                .status();
            assert!(st.is_ok_and(|s| s.success()), "chown {:?}", dir.path());
            let mut c = Command::new("setpriv");
            c.args([
                "--reuid=nobody",
                "--regid=nogroup",
                "--clear-groups",
                "--",
                program,
            ]);
            c
        } else {
            Command::new(program)
        };
        cmd.args(args).current_dir(dir.path());
        let out = fs::File::create(dir.path().join("daemon.out")).expect("log");
        cmd.stdin(Stdio::null())
            .stdout(out.try_clone().expect("dup"))
            .stderr(out);
        let child = cmd.spawn().unwrap_or_else(|e| panic!("run {program}: {e}"));
        let mut d = Daemon {
            name,
            child,
            port,
            dir,
        };
        d.wait_ready();
        d
    }

    /// Until the daemon answers a request (any status), or panics with
    /// its logs.
    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!("{} exited ({st}):\n{}", self.name, self.logs());
            }
            let r = curl(&format!("http://127.0.0.1:{}/-ready", self.port), &[]);
            if r.status != 0 {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{} did not answer:\n{}", self.name, self.logs());
    }

    /// Its output and the logs in its directory.
    fn logs(&self) -> String {
        let mut all = String::new();
        let mut dirs = vec![self.dir.path().to_path_buf()];
        while let Some(d) = dirs.pop() {
            for e in fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                let name = p.file_name().unwrap_or_default().to_string_lossy();
                if p.is_dir() {
                    dirs.push(p);
                } else if name.ends_with(".log") || name.ends_with(".out") {
                    let text = fs::read_to_string(&p).unwrap_or_default();
                    let tail: Vec<&str> = text.lines().rev().take(40).collect();
                    all += &format!("--- {}\n", p.display());
                    for l in tail.iter().rev() {
                        all += l;
                        all += "\n";
                    }
                }
            }
        }
        all
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// A cache daemon in front of `apache`, whose log counts what reached the
/// module.
struct Engine<'a> {
    daemon: Daemon,
    apache: &'a Apache,
    normalizes: Normalizes,
}

impl Front for Engine<'_> {
    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.daemon.port)
    }

    fn backend_hits(&self, path: &str) -> usize {
        log_hits(&settled_log(self.apache), path, |_| true)
    }

    fn normalizes(&self) -> Normalizes {
        self.normalizes
    }
}

/// `program` is installed, else the check is skipped (a failure under
/// scripts/test, which installs `package`).
fn have_engine(program: &str, package: &str) -> bool {
    let ok = Path::new(program).exists();
    if !ok {
        skip(&format!(
            "{program} not installed (apt-get install {package})"
        ));
    }
    ok
}

/// The module's Apache with `Cache-Control: max-age=300` on its answers
/// and the shipped Apache lines for Squid (one Vary list, in one order,
/// for every answer of a URL).
fn module_with_one_vary_list() -> Apache {
    let lines = Path::new(CONF_DIR).join("squid/gzip-disk-ng-apache.conf");
    Apache::start(
        Options {
            dir: format!(
                "SetHandler gzip-disk-ng\n{FRESH}\nInclude {}",
                lines.display()
            ),
            modules: vec!["headers"],
            ..Default::default()
        },
        fill,
    )
}

// ------------------------------------------------------------------ nginx

/// nginx with the shipped maps (http level) and proxy lines (in the
/// location) in front of `backend`.
fn nginx_front(backend: &Apache) -> Engine<'_> {
    let dir = daemon_dir();
    let d = dir.path().display().to_string();
    for f in ["gzip-disk-ng-maps.conf", "gzip-disk-ng-proxy.conf"] {
        fs::copy(
            Path::new(CONF_DIR).join("nginx").join(f),
            dir.path().join(f),
        )
        .expect("copy");
    }
    fs::create_dir(dir.path().join("cache")).expect("cache dir");
    fs::create_dir(dir.path().join("tmp")).expect("temp dir");
    let port = free_port();
    let conf = format!(
        "daemon off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log info;\n\
         events {{ worker_connections 256; }}\n\
         http {{\n\
         access_log off;\n\
         client_body_temp_path {d}/tmp/body;\nproxy_temp_path {d}/tmp/proxy;\n\
         fastcgi_temp_path {d}/tmp/fastcgi;\nuwsgi_temp_path {d}/tmp/uwsgi;\n\
         scgi_temp_path {d}/tmp/scgi;\n\
         include {d}/gzip-disk-ng-maps.conf;\n\
         proxy_cache_path {d}/cache keys_zone=gdn:10m max_size=64m;\n\
         server {{\n\
         listen 127.0.0.1:{port};\n\
         location / {{\n\
         proxy_pass http://127.0.0.1:{};\n\
         proxy_cache gdn;\n\
         include {d}/gzip-disk-ng-proxy.conf;\n\
         }}\n}}\n}}\n",
        backend.port
    );
    fs::write(dir.path().join("nginx.conf"), conf).expect("write conf");
    let args = [
        "-e".to_string(),
        format!("{d}/error.log"),
        "-p".to_string(),
        d.clone(),
        "-c".to_string(),
        format!("{d}/nginx.conf"),
    ];
    Engine {
        daemon: Daemon::start("nginx", dir, port, NGINX, &args),
        apache: backend,
        normalizes: Normalizes::Plain,
    }
}

/// nginx's proxy_cache with the shipped snippet: each client gets the
/// module's own answer, one fetch per set of codings (headers with q
/// values or `*`: per string), 304 and Range from the cache, deltas
/// keyed by dictionary.
#[test]
fn nginx_proxy_cache_keys_by_the_codings() {
    if !have_engine(NGINX, "nginx-light") {
        return;
    }
    let a = module_with_fresh_responses();
    let front = nginx_front(&a);
    check_clients(&front, &a);
    let hits = check_one_fetch_per_representation(&front, &a);
    // 4 sets of codings (zstd+br+gzip, br+gzip, gzip, none: no header
    // and `identity` share one) and 11 strings with q values or `*`.
    assert_eq!(hits, 15, "fetches of the page through nginx");
    check_conditional_and_range(&front, &a);
    check_deltas(&front, &a);
    a.assert_no_crash();
}

// ------------------------------------------------------------------ Squid

/// Squid (accelerator, memory cache) with the shipped snippet in front of
/// `backend`.
fn squid_front(backend: &Apache) -> Engine<'_> {
    let dir = daemon_dir();
    let d = dir.path().display().to_string();
    let port = free_port();
    let snippet = shipped(
        "squid/gzip-disk-ng.conf",
        "http_port 80 ",
        &format!("http_port 127.0.0.1:{port} "),
    )
    .replace(
        "127.0.0.1 parent 8080 ",
        &format!("127.0.0.1 parent {} ", backend.port),
    );
    fs::write(dir.path().join("gzip-disk-ng.conf"), snippet).expect("write snippet");
    let conf = format!(
        "include {d}/gzip-disk-ng.conf\n\
         http_access deny all\n\
         cache_mem 32 MB\n\
         pid_filename {d}/squid.pid\n\
         cache_log {d}/cache.log\n\
         access_log stdio:{d}/access.log\n\
         cache_store_log none\n\
         netdb_filename none\n\
         coredump_dir {d}\n\
         pinger_enable off\n\
         shutdown_lifetime 0 seconds\n"
    );
    fs::write(dir.path().join("squid.conf"), conf).expect("write conf");
    let args = [
        "-N".to_string(),
        "-f".to_string(),
        format!("{d}/squid.conf"),
    ];
    Engine {
        daemon: Daemon::start("squid", dir, port, SQUID, &args),
        apache: backend,
        normalizes: Normalizes::Nothing,
    }
}

/// Squid with the shipped snippet: each client gets the module's own
/// answer; Squid cannot normalize the header before its lookup, so the
/// page is fetched once per distinct header string; 304 and Range from
/// the cache; deltas keyed by dictionary (Squid honours the module's
/// Vary).
#[test]
fn squid_keys_by_the_header_string() {
    if !have_engine(SQUID, "squid") {
        return;
    }
    let a = module_with_one_vary_list();
    let front = squid_front(&a);
    check_clients(&front, &a);
    let hits = check_one_fetch_per_representation(&front, &a);
    // 21 clients, 21 distinct headers (no header is one).
    assert_eq!(hits, CLIENTS.len(), "fetches of the page through Squid");
    check_conditional_and_range(&front, &a);
    check_deltas(&front, &a);
    a.assert_no_crash();
}

// --------------------------------------------------------- Traffic Server

/// Traffic Server with the shipped records.config lines, remap rule and
/// header_rewrite rules in front of `backend`; `records` are appended to
/// the records.config lines (a later line wins).
fn traffic_server_front<'a>(backend: &'a Apache, records: &str) -> Engine<'a> {
    let dir = daemon_dir();
    let d = dir.path().display().to_string();
    let etc = dir.path().join("etc");
    for sub in ["etc", "var", "run", "log", "cache"] {
        fs::create_dir(dir.path().join(sub)).expect("mkdir");
    }
    // Debian's files for what the snippets do not set (ip_allow.yaml,
    // logging.yaml, body_factory/...).
    let st = Command::new("cp")
        .args(["-r", "/etc/trafficserver/."])
        .arg(&etc)
        .status();
    assert!(st.is_ok_and(|s| s.success()), "copy /etc/trafficserver");
    let port = free_port();
    let user = daemon_user();
    // As shipped; the line that must be there checked.
    let shipped_records = shipped(
        "trafficserver/records.config",
        "proxy.config.http.normalize_ae INT 0",
        "proxy.config.http.normalize_ae INT 0",
    );
    fs::write(
        etc.join("records.config"),
        format!(
            "{shipped_records}\n\
             CONFIG proxy.config.http.server_ports STRING {port}:ipv4:ip-in=127.0.0.1\n\
             CONFIG proxy.config.admin.user_id STRING {user}\n\
             CONFIG proxy.config.cache.ram_cache.size INT 16777216\n\
             CONFIG proxy.config.http.cache.http INT 1\n\
             {records}\n"
        ),
    )
    .expect("records.config");
    fs::write(
        etc.join("remap.config"),
        shipped(
            "trafficserver/remap.config",
            "http://127.0.0.1:8080/",
            &format!("http://127.0.0.1:{}/", backend.port),
        ),
    )
    .expect("remap.config");
    fs::copy(
        Path::new(CONF_DIR).join("trafficserver/gzip-disk-ng.hrw"),
        etc.join("gzip-disk-ng.hrw"),
    )
    .expect("copy rules");
    fs::write(etc.join("storage.config"), format!("{d}/cache 64M\n")).expect("storage");
    fs::write(etc.join("plugin.config"), "").expect("plugin.config");
    fs::write(
        dir.path().join("runroot.yaml"),
        format!(
            "prefix: /usr\nexec_prefix: /usr\nbindir: /usr/bin\nsbindir: /usr/sbin\n\
             sysconfdir: {d}/etc\ndatadir: /usr/share/trafficserver\nincludedir: /usr/include\n\
             libdir: /usr/lib/trafficserver\nlibexecdir: /usr/lib/trafficserver/modules\n\
             localstatedir: {d}/var\nruntimedir: {d}/run\nlogdir: {d}/log\ncachedir: {d}/cache\n"
        ),
    )
    .expect("runroot");
    let args = [format!("--run-root={d}/runroot.yaml")];
    Engine {
        daemon: Daemon::start("traffic_server", dir, port, TRAFFIC_SERVER, &args),
        apache: backend,
        normalizes: Normalizes::Plain,
    }
}

/// Traffic Server with the shipped snippets: each client gets the
/// module's own answer, one fetch per set of codings (headers with q
/// values or `*`: per string), 304 and Range from the cache, deltas keyed
/// by dictionary.
#[test]
fn traffic_server_keys_by_the_codings() {
    if !have_engine(TRAFFIC_SERVER, "trafficserver") {
        return;
    }
    let a = module_with_fresh_responses();
    let front = traffic_server_front(&a, "");
    check_clients(&front, &a);
    let hits = check_one_fetch_per_representation(&front, &a);
    // 4 sets of codings and 11 strings with q values or `*`.
    assert_eq!(hits, 15, "fetches of the page through Traffic Server");
    check_conditional_and_range(&front, &a);
    check_deltas(&front, &a);
    a.assert_no_crash();
}

/// Traffic Server's own normalization, `proxy.config.http.normalize_ae`
/// 1 (its default) and 2, even with the shipped rules: every answer
/// decodes to the page, but zstd never reaches a client, 1 leaves gzip
/// alone and 2 br and gzip.
#[test]
fn traffic_server_normalize_ae_drops_zstd() {
    if !have_engine(TRAFFIC_SERVER, "trafficserver") {
        return;
    }
    let a = module_with_fresh_responses();
    let original = fs::read(a.docroot.join("page.html")).expect("read");
    for (value, allowed, chrome) in [(1, &["gzip"][..], "gzip"), (2, &["br", "gzip"][..], "br")] {
        let records = format!("CONFIG proxy.config.http.normalize_ae INT {value}");
        let front = traffic_server_front(&a, &records);
        for &ae in CLIENTS {
            let got = via(&front, PAGE, ae, &[]);
            assert_eq!(got.status, 200, "{ae:?}");
            assert!(got.decoded() == original, "{ae:?}: not the page");
            if let Some(c) = got.coding() {
                assert!(allowed.contains(&c), "normalize_ae {value}, {ae:?}: {c}");
            }
        }
        let got = via(&front, PAGE, Some("gzip, deflate, br, zstd"), &[]);
        assert_eq!(got.coding(), Some(chrome), "normalize_ae {value}");
    }
}

// ---------------------------------------------------------------- HAProxy

/// HAProxy with `backend` (the shipped cache and backend sections, or
/// other `sections` naming a backend `gzip_disk_ng` whose server is
/// 127.0.0.1:8080) behind a plain frontend.
fn haproxy_front<'a>(backend: &'a Apache, sections: &str) -> Engine<'a> {
    let dir = daemon_dir();
    let d = dir.path().display().to_string();
    let port = free_port();
    let main = format!(
        "global\n    log stderr format short local0 notice\n\
         defaults\n    mode http\n    log global\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n\
         frontend site\n    bind 127.0.0.1:{port}\n    default_backend gzip_disk_ng\n"
    );
    fs::write(dir.path().join("haproxy.cfg"), main).expect("write conf");
    assert!(sections.contains("127.0.0.1:8080"), "the server line");
    let sections = sections.replace("127.0.0.1:8080", &format!("127.0.0.1:{}", backend.port));
    fs::write(dir.path().join("gzip-disk-ng.cfg"), sections).expect("write sections");
    let args = [
        "-db".to_string(),
        "-f".to_string(),
        format!("{d}/haproxy.cfg"),
        "-f".to_string(),
        format!("{d}/gzip-disk-ng.cfg"),
    ];
    Engine {
        daemon: Daemon::start("haproxy", dir, port, HAPROXY, &args),
        apache: backend,
        normalizes: Normalizes::Plain,
    }
}

fn shipped_haproxy() -> String {
    fs::read_to_string(Path::new(CONF_DIR).join("haproxy/gzip-disk-ng.cfg")).expect("shipped cfg")
}

/// Whether HAProxy's rules keep `ae` out of its cache: q values or `*`.
fn has_q_or_star(ae: Option<&str>) -> bool {
    ae.is_some_and(|h| h.contains([';', '*']))
}

/// Every client through HAProxy, twice: a body decoding to the page, with
/// the module's own coding where the module sends identity (no coded
/// body for a client without Accept-Encoding), else one of the codings
/// the module chooses among for the header.
fn check_clients_accept(front: &dyn Front, a: &Apache) {
    let original = fs::read(a.docroot.join("page.html")).expect("read");
    for round in 0..2 {
        for &ae in CLIENTS {
            let want = direct(a, PAGE, ae, &[]);
            let got = via(front, PAGE, ae, &[]);
            let what = format!("{ae:?}, round {round}");
            assert_eq!((got.status, want.status), (200, 200), "{what}");
            assert!(got.decoded() == original, "{what}: not the page");
            match (got.coding(), want.coding()) {
                (got, None) => assert_eq!(got, None, "{what}: the module sends identity"),
                (Some(c), Some(_)) => assert!(tied(ae).contains(&c), "{what}: {c}"),
                (None, Some(w)) => panic!("{what}: identity, the module sends {w}"),
            }
            assert_eq!(vary(&got), vary(&want), "{what}");
        }
    }
}

/// HAProxy's cache with the shipped sections: no coded body for a client
/// without Accept-Encoding even with every coding stored, each answer
/// one the module could give, the page fetched once per set of codings
/// (headers with q values or `*` bypass the cache: every time), 304 and
/// Range from the cache, deltas never cached and never to a client
/// without the dictionary.
#[test]
fn haproxy_cache_never_codes_for_identity_clients() {
    if !have_engine(HAPROXY, "haproxy") {
        return;
    }
    let a = module_with_fresh_responses();
    let front = haproxy_front(&a, &shipped_haproxy());
    check_clients_accept(&front, &a);
    // Every coding is stored now: still identity without the header.
    for ae in [None, Some("identity")] {
        let r = via(&front, PAGE, ae, &[]);
        assert_eq!((r.status, r.coding()), (200, None), "{ae:?}");
    }
    let before = front.backend_hits(PAGE);
    // zstd+br+gzip, gzip and none (br+gzip takes the copy of zstd+br+gzip
    // when that is br, the page's smallest), and the 11 headers with q
    // values or `*` of both rounds.
    let plain = CLIENTS.iter().filter(|&&ae| !has_q_or_star(ae)).count();
    assert_eq!(plain, 10);
    let (smallest, _) = smallest_sibling(&a.docroot.join("page.html"));
    let sets = if smallest == "br" { 3 } else { 4 };
    eprintln!("two rounds of {} clients through HAProxy: {before} reached the module ({sets} copies, smallest sibling {smallest})", CLIENTS.len());
    assert_eq!(before, sets + 2 * (CLIENTS.len() - plain), "{before}");
    let mut bypass = 0;
    for i in 0..100 {
        let ae = CLIENTS[i % CLIENTS.len()];
        assert_eq!(via(&front, PAGE, ae, &[]).status, 200, "{ae:?}");
        bypass += usize::from(has_q_or_star(ae));
    }
    let hits = front.backend_hits(PAGE) - before;
    eprintln!(
        "100 requests through HAProxy: {hits} reached the module, {bypass} with q values or `*`"
    );
    assert_eq!(hits, bypass, "plain headers were all served from the cache");
    check_conditional_and_range_by(&front, &a, true);
    // (CHROME, v1), (CHROME, v2), (dcb, v1), (CHROME, unknown): deltas
    // asked for; "dcz;q=0": q values.
    check_deltas_uncached(&front, &a, 5);
    a.assert_no_crash();
}

/// The control: HAProxy's cache without the rules gives a request
/// without Accept-Encoding the br copy a browser's request stored.
#[test]
fn haproxy_cache_without_the_rules_codes_for_identity_clients() {
    if !have_engine(HAPROXY, "haproxy") {
        return;
    }
    let a = module_with_fresh_responses();
    let shipped = shipped_haproxy();
    let cache = &shipped[shipped.find("cache gzip_disk_ng").expect("cache")..];
    let cache = &cache[..cache.find("\n\n").expect("end of cache section") + 1];
    let plain = format!(
        "{cache}\nbackend gzip_disk_ng\n    http-request cache-use gzip_disk_ng\n    \
         http-response cache-store gzip_disk_ng\n    server apache 127.0.0.1:8080\n"
    );
    let front = haproxy_front(&a, &plain);
    let browser = via(&front, PAGE, Some("br, gzip"), &[]);
    assert_eq!(browser.coding(), Some("br"));
    let r = via(&front, PAGE, None, &[]);
    assert_eq!(r.coding(), Some("br"), "no Accept-Encoding, yet br");
    assert_eq!(direct(&a, PAGE, None, &[]).coding(), None);
}

//! The short answer over sections written here as core holds them: each
//! shape's bound, what outgrows it, and what must go to Apache.

use super::short::{file_uri, literal_of, Compared, List, Sect, Server, Short};
use std::cell::Cell;
use std::ffi::CStr;
use std::rc::Rc;

thread_local! {
    /// Regex runs, to tell a learned literal from a run per request.
    static RUNS: Cell<usize> = const { Cell::new(0) };
}

/// A regex's identity and what it matches.
type Regex = (usize, fn(&[u8]) -> bool);

/// A section of a fake configuration.
#[derive(Clone)]
struct FakeSection {
    regex: Option<Regex>,
    pattern: Vec<u8>,
    wildcard: bool,
    nested: Option<FakeSections>,
}

/// A list of fake sections.
#[derive(Clone)]
struct FakeSections {
    id: usize,
    secs: Rc<Vec<FakeSection>>,
}

impl Sect for FakeSection {
    type List = FakeSections;
    fn regex(&self) -> Option<usize> {
        self.regex.map(|r| r.0)
    }
    fn pattern(&self) -> Option<&[u8]> {
        Some(&self.pattern)
    }
    fn wildcard(&self) -> bool {
        self.wildcard
    }
    fn regex_matches(&self, name: &CStr) -> bool {
        RUNS.with(|r| r.set(r.get() + 1));
        self.regex.is_some_and(|r| (r.1)(name.to_bytes()))
    }
    fn wildcard_matches(&self, name: &CStr) -> bool {
        // `*` then a literal: enough for the cases here.
        let p = self.pattern.strip_prefix(b"*").expect("a `*` pattern");
        name.to_bytes().ends_with(p)
    }
    fn nested(&self) -> Option<FakeSections> {
        self.nested.clone()
    }
}

impl List for FakeSections {
    type S = FakeSection;
    fn id(&self) -> usize {
        self.id
    }
    fn len(&self) -> usize {
        self.secs.len()
    }
    fn at(&self, i: usize) -> FakeSection {
        self.secs[i].clone()
    }
}

fn name(p: &str) -> FakeSection {
    FakeSection {
        regex: None,
        pattern: p.as_bytes().to_vec(),
        wildcard: p.contains('*'),
        nested: None,
    }
}

fn regex(id: usize, p: &str, m: fn(&[u8]) -> bool) -> FakeSection {
    FakeSection {
        regex: Some((id, m)),
        ..name(p)
    }
}

fn list(id: usize, secs: Vec<FakeSection>) -> FakeSections {
    FakeSections {
        id,
        secs: Rc::new(secs),
    }
}

/// Server 1 with these `<Files>` and `<Location>` lists, no regex
/// `<Directory>`.
fn server(files: Vec<FakeSection>, locations: Vec<FakeSection>) -> Server<FakeSections> {
    Server {
        id: 1,
        refused: false,
        files: list(10, files),
        dirs: list(11, vec![name("/srv")]),
        locations: list(12, locations),
    }
}

fn copy(s: &Server<FakeSections>) -> Server<FakeSections> {
    Server {
        id: s.id,
        refused: s.refused,
        files: s.files.clone(),
        dirs: s.dirs.clone(),
        locations: s.locations.clone(),
    }
}

/// A request on a fake server.
struct FakeRequest<'a> {
    server: &'a Server<FakeSections>,
    files: FakeSections,
    per_request_rules: bool,
    filename: &'a str,
    uri: Option<&'a str>,
}

impl Compared for FakeRequest<'_> {
    type L = FakeSections;
    fn server(&self) -> usize {
        self.server.id
    }
    fn lists(&self) -> Server<FakeSections> {
        copy(self.server)
    }
    fn files(&self) -> FakeSections {
        self.files.clone()
    }
    fn per_request_rules(&self) -> bool {
        self.per_request_rules
    }
    fn filename(&self) -> Option<&[u8]> {
        Some(self.filename.as_bytes())
    }
    fn file_uri(&self) -> Option<&[u8]> {
        self.uri.map(str::as_bytes)
    }
}

fn learned(s: &Server<FakeSections>) -> Short {
    Short::learn(&[copy(s)])
}

/// Whether the file at `path` (URI `uri`) and its `.gz` could be told
/// apart on server `s`, its own `<Files>` list merged as it is.
fn differ(s: &Server<FakeSections>, path: &str, uri: &str) -> bool {
    differ_learned(&learned(s), s, path, uri)
}

/// As `differ`, with what `short` learned before.
fn differ_learned(short: &Short, s: &Server<FakeSections>, path: &str, uri: &str) -> bool {
    differ_with(short, s, s.files.clone(), path, Some(uri), false)
}

fn differ_with(
    short: &Short,
    s: &Server<FakeSections>,
    files: FakeSections,
    path: &str,
    uri: Option<&str>,
    per_request_rules: bool,
) -> bool {
    let a = FakeRequest {
        server: s,
        files,
        per_request_rules,
        filename: path,
        uri,
    };
    short.may_differ(&a, b".gz")
}

#[test]
fn a_files_name_tells_its_own_file_from_the_sibling_and_no_longer_name() {
    let s = server(vec![name("index.html")], vec![]);
    assert!(differ(&s, "/srv/index.html", "/index.html"));
    assert!(!differ(&s, "/srv/about.html", "/about.html"));
    assert!(!differ(
        &s,
        "/srv/a-longer-name.html",
        "/a-longer-name.html"
    ));
    // The sibling's own name is the one the section names.
    let s = server(vec![name("index.html.gz")], vec![]);
    assert!(differ(&s, "/srv/index.html", "/index.html"));
}

#[test]
fn a_literal_prefix_regex_is_learned_and_not_run_per_request() {
    let s = server(vec![regex(7, "^\\.ht", |n| n.starts_with(b".ht"))], vec![]);
    let short = learned(&s);
    let before = RUNS.with(Cell::get);
    assert!(!differ_learned(&short, &s, "/srv/.htaccess", "/.htaccess"));
    assert!(!differ_learned(&short, &s, "/srv/.h", "/.h"));
    assert_eq!(RUNS.with(Cell::get), before, "the literal answers");
}

#[test]
fn a_regex_that_does_not_behave_as_its_literal_is_run() {
    // Caseless: `^\.HT` matches too, so the literal is not the regex.
    let caseless: fn(&[u8]) -> bool = |n| n.to_ascii_lowercase().starts_with(b".ht");
    let s = server(vec![regex(7, "^\\.ht", caseless)], vec![]);
    let short = learned(&s);
    let before = RUNS.with(Cell::get);
    assert!(!differ_learned(&short, &s, "/srv/.htaccess", "/.htaccess"));
    assert!(RUNS.with(Cell::get) > before, "a caseless regex is run");
    // A regex on the end of a name tells every file from its sibling.
    let s = server(vec![regex(8, "\\.gz$", |n| n.ends_with(b".gz"))], vec![]);
    assert!(differ(
        &s,
        "/srv/a-rather-long-page-name.html",
        "/a-rather-long-page-name.html"
    ));
}

#[test]
fn a_wildcard_is_compared_whatever_the_length() {
    let s = server(vec![name("*.html")], vec![]);
    assert!(differ(
        &s,
        "/srv/a-rather-long-page-name.html",
        "/a-rather-long-page-name.html"
    ));
    assert!(!differ(&s, "/srv/style.css", "/style.css"));
}

#[test]
fn a_location_is_a_path_prefix_ending_at_a_segment() {
    let s = server(vec![], vec![name("/private")]);
    assert!(differ(&s, "/srv/private", "/private"));
    assert!(!differ(&s, "/srv/private/a.html", "/private/a.html"));
    assert!(!differ(&s, "/srv/privatex.html", "/privatex.html"));
    assert!(!differ(&s, "/srv/priv", "/priv"));
    let s = server(vec![], vec![name("/a.html")]);
    assert!(differ(&s, "/srv/a.html", "/a.html"));
    let s = server(vec![], vec![name("/docs/")]);
    assert!(!differ(&s, "/srv/docs/a", "/docs/a"));
}

#[test]
fn sections_added_per_directory_are_each_compared() {
    let s = server(vec![name("other.html")], vec![]);
    let short = learned(&s);
    let cases = [
        (vec![name("other.html"), name("a.html")], true),
        (vec![name("b.html")], false),
    ];
    for (sections, told_apart) in cases {
        let merged = list(99, sections);
        let got = differ_with(&short, &s, merged, "/srv/a.html", Some("/a.html"), false);
        assert_eq!(got, told_apart);
    }
}

#[test]
fn what_only_apache_can_say_goes_to_apache() {
    let s = server(vec![], vec![name("/x")]);
    let short = learned(&s);
    let f = s.files.clone();
    assert!(!differ_with(
        &short,
        &s,
        f.clone(),
        "/srv/a.html",
        Some("/a.html"),
        false
    ));
    // <If>, or .htaccess allowed to add rules.
    assert!(differ_with(
        &short,
        &s,
        f.clone(),
        "/srv/a.html",
        Some("/a.html"),
        true
    ));
    // A URI that does not end with its path info, where <Location>s are.
    assert!(differ_with(
        &short,
        &s,
        f.clone(),
        "/srv/a.html",
        None,
        false
    ));
    // A server not learned.
    let other = Short::learn::<FakeSections>(&[]);
    assert!(differ_with(
        &other,
        &s,
        f,
        "/srv/a.html",
        Some("/a.html"),
        false
    ));
}

#[test]
fn nested_regexes_are_learned_too() {
    let inner = list(20, vec![regex(9, "^secret", |n| n.starts_with(b"secret"))]);
    let dir = FakeSection {
        nested: Some(inner.clone()),
        ..name("/srv")
    };
    let s = Server {
        dirs: list(11, vec![dir]),
        ..server(vec![], vec![])
    };
    let short = learned(&s);
    let before = RUNS.with(Cell::get);
    assert!(!differ_with(
        &short,
        &s,
        inner,
        "/srv/secret.html",
        Some("/secret.html"),
        false
    ));
    assert_eq!(RUNS.with(Cell::get), before);
}

#[test]
fn literals_are_caret_and_characters_that_match_themselves() {
    assert_eq!(literal_of(b"^\\.ht").as_deref(), Some(&b".ht"[..]));
    assert_eq!(
        literal_of(b"^wp-config").as_deref(),
        Some(&b"wp-config"[..])
    );
    for p in ["\\.ht", "^", "^a.b", "^a$", "^a\\d", "^a b", "^(a)", "^a*"] {
        assert_eq!(literal_of(p.as_bytes()), None, "{p}");
    }
    assert_eq!(literal_of(format!("^{}", "a".repeat(64)).as_bytes()), None);
    assert!(literal_of(format!("^{}", "a".repeat(63)).as_bytes()).is_some());
}

#[test]
fn a_files_uri_is_its_uri_without_the_path_info() {
    assert_eq!(file_uri(b"/a.php/x/y", b"/x/y"), Some(&b"/a.php"[..]));
    assert_eq!(file_uri(b"/a.html", b""), Some(&b"/a.html"[..]));
    assert_eq!(file_uri(b"/a.html", b"/z"), None);
    assert_eq!(file_uri(b"a.html", b""), None);
}

#[test]
fn lists_other_than_those_learned_are_not_judged_by_them() {
    let s = server(vec![], vec![name("/docs/")]);
    let short = learned(&s);
    assert!(!differ_learned(&short, &s, "/srv/a.html", "/a.html"));
    // The same server record, its lists not those learned.
    let renewed = Server {
        locations: list(13, vec![name("/a.html")]),
        ..copy(&s)
    };
    assert!(differ_learned(&short, &renewed, "/srv/a.html", "/a.html"));
    let renewed = Server {
        dirs: list(14, vec![]),
        ..copy(&s)
    };
    assert!(differ_learned(&short, &renewed, "/srv/a.html", "/a.html"));
}

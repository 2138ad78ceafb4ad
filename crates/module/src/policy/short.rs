//! The short answer to a sibling's check: on a server whose configuration
//! was judged one where sections alone tell names apart (`scan`), whether
//! a `<Files>`, `<FilesMatch>`, regex `<Directory>` or `<Location>` could
//! treat a file's name and its sibling's (the name and a coding's suffix)
//! differently. Then the sibling is asked of Apache (its twin).
//!
//! A section of bounded shape reads at most `bound` bytes of a name, plus
//! whether the name ends there: a plain `<Files>` name (neither name
//! matches when both are longer), a `<Location>` path prefix (the prefix
//! and the byte after it), and a regex of the shape `^literal`. Both names
//! get the same answer whenever the shorter is longer than `bound`, so a
//! request compares only the sections its names do not outgrow. Shapes
//! are learned once per configuration; a section of another shape (a
//! wildcard, another regex, one of .htaccess) is run per request as core
//! runs it.

use std::collections::HashMap;
use std::ffi::CStr;
use std::hash::{BuildHasherDefault, Hasher};

/// One section as core matches it.
pub trait Sect {
    /// The compiled regex's identity, for a regex section.
    fn regex(&self) -> Option<usize>;
    /// The name, path or pattern as written.
    fn pattern(&self) -> Option<&[u8]>;
    /// A name with wildcards (`apr_fnmatch`).
    fn wildcard(&self) -> bool;
    fn regex_matches(&self, name: &CStr) -> bool;
    fn wildcard_matches(&self, name: &CStr) -> bool;
    /// The `<Files>` it holds (a `<Directory>`'s), if any.
    fn nested(&self) -> Option<Self::List>
    where
        Self: Sized;
    type List: List<S = Self>;
}

/// A list of sections, with its identity (core's merge makes a new list
/// where sections are added, and keeps a server's own otherwise).
pub trait List {
    type S: Sect;
    fn id(&self) -> usize;
    fn len(&self) -> usize;
    fn at(&self, i: usize) -> Self::S;
}

/// A server's lists: the `<Files>` of its defaults, its `<Directory>`
/// sections, its `<Location>` sections.
pub struct Server<L> {
    pub id: usize,
    /// The module's verdict rules the short answer out here.
    pub refused: bool,
    pub files: L,
    pub dirs: L,
    pub locations: L,
}

/// What a request brings to the comparison, each read when it is needed.
pub trait Compared {
    type L: List;
    /// Its server's identity.
    fn server(&self) -> usize;
    /// Its server's lists.
    fn lists(&self) -> Server<Self::L>;
    /// Its merged `<Files>` list.
    fn files(&self) -> Self::L;
    /// `<If>`, or .htaccess allowed to add rules: only Apache can say.
    fn per_request_rules(&self) -> bool;
    fn filename(&self) -> Option<&[u8]>;
    /// Its URI without its path info (`None` where they disagree).
    fn file_uri(&self) -> Option<&[u8]>;
}

/// The longest literal learned: longer ones are run as regexes.
const LITERAL_MAX: usize = 64;

/// A hasher for the addresses of records: a multiply of their bits is
/// all a table needs.
#[derive(Default)]
struct Addr(u64);

impl Hasher for Addr {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = ((n as u64) >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A table by a record's address.
type ByAddr<V> = HashMap<usize, V, BuildHasherDefault<Addr>>;

/// One section of a list, as learned.
#[derive(Debug, PartialEq, Eq)]
struct Fact {
    /// Its index in the list.
    i: usize,
    /// How far into a name it reads, `None` for no bounded shape.
    bound: Option<usize>,
    /// A regex's literal, where it behaves as "starts with" it.
    literal: Option<Box<[u8]>>,
}

/// A list's sections (only regexes, for `<Directory>`), worked out once.
#[derive(Debug, Default, PartialEq, Eq)]
struct ListFacts {
    id: usize,
    at: Vec<Fact>,
    /// Sections of no bounded shape.
    others: bool,
    /// The largest bound.
    bound: usize,
}

impl ListFacts {
    /// Whether names longer than `len` outgrow every section: then none
    /// can tell them apart.
    fn outgrown(&self, len: usize) -> bool {
        !self.others && len > self.bound
    }
}

#[derive(Debug, Default, PartialEq, Eq)]
struct ServerFacts {
    refused: bool,
    files: ListFacts,
    /// Regex `<Directory>` sections only (matched against the whole file
    /// name; usually none).
    dirs: ListFacts,
    locations: ListFacts,
}

/// What a configuration's sections are, learned at post_config.
#[derive(Debug, Default)]
pub struct Short {
    servers: ByAddr<ServerFacts>,
    /// Per regex, its literal where it behaves as "starts with".
    literals: ByAddr<Box<[u8]>>,
}

/// The literal of a pattern of `^` then characters that match
/// themselves (none of PCRE's metacharacters, or a backslash before
/// punctuation), if it is one.
pub fn literal_of(pattern: &[u8]) -> Option<Vec<u8>> {
    const META: &[u8] = b"\\^$.[]|()?*+{}# \t\r\n\x0c\x0b";
    let rest = pattern.strip_prefix(b"^")?;
    let mut out = Vec::new();
    let mut it = rest.iter();
    while let Some(&c) = it.next() {
        let c = if c == b'\\' {
            let &n = it.next()?;
            if !n.is_ascii_punctuation() {
                return None;
            }
            n
        } else if !(0x21..0x7f).contains(&c) || META.contains(&c) {
            return None;
        } else {
            c
        };
        if out.len() + 1 >= LITERAL_MAX {
            return None;
        }
        out.push(c);
    }
    (!out.is_empty()).then_some(out)
}

/// Whether the compiled regex of `s` matches as "starts with `lit`": the
/// literal matches, with more after it too, but not without its last
/// character; and neither a newline before it (multi-line) nor its
/// letters in the other case (caseless) match.
fn behaves_as_prefix(s: &impl Sect, lit: &[u8]) -> bool {
    let run =
        |parts: &[&[u8]]| std::ffi::CString::new(parts.concat()).is_ok_and(|n| s.regex_matches(&n));
    let other: Vec<u8> = lit
        .iter()
        .map(|c| {
            if c.is_ascii_alphabetic() {
                c ^ 0x20
            } else {
                *c
            }
        })
        .collect();
    run(&[lit])
        && run(&[lit, b"x"])
        && !run(&[&lit[..lit.len() - 1]])
        && !run(&[b"\n", lit])
        && (other == lit || !run(&[&other]))
}

impl Short {
    /// The facts of every server's lists.
    pub fn learn<L: List>(servers: &[Server<L>]) -> Short {
        let mut short = Short::default();
        for s in servers {
            for l in [&s.dirs, &s.locations, &s.files] {
                short.learn_literals(l);
            }
        }
        for s in servers {
            let facts = ServerFacts {
                refused: s.refused,
                files: short.learn_list(&s.files, false),
                dirs: short.learn_list(&s.dirs, true),
                locations: short.learn_list(&s.locations, false),
            };
            short.servers.insert(s.id, facts);
        }
        short
    }

    /// The literals of the regex sections of `l` and of those nested in
    /// its sections.
    fn learn_literals<L: List>(&mut self, l: &L) {
        for i in 0..l.len() {
            let s = l.at(i);
            if let (Some(id), Some(p)) = (s.regex(), s.pattern()) {
                if let Some(lit) = literal_of(p).filter(|lit| behaves_as_prefix(&s, lit)) {
                    self.literals.insert(id, lit.into());
                }
            }
            if let Some(n) = s.nested() {
                self.learn_literals(&n);
            }
        }
    }

    /// How far into a name `s` reads, `None` for no bounded shape.
    fn bound(&self, s: &impl Sect) -> Option<usize> {
        match s.regex() {
            Some(id) => self.literals.get(&id).map(|l| l.len()),
            None if s.wildcard() => None,
            None => s.pattern().map(<[u8]>::len),
        }
    }

    fn learn_list<L: List>(&self, l: &L, regex_only: bool) -> ListFacts {
        let mut f = ListFacts {
            id: l.id(),
            ..ListFacts::default()
        };
        for i in 0..l.len() {
            let s = l.at(i);
            if regex_only && s.regex().is_none() {
                continue;
            }
            let b = self.bound(&s);
            f.others |= b.is_none();
            f.bound = f.bound.max(b.unwrap_or(0));
            let literal = s.regex().and_then(|id| self.literals.get(&id)).cloned();
            f.at.push(Fact {
                i,
                bound: b,
                literal,
            });
        }
        f
    }

    /// Whether server `server` was learned and its verdict leaves it the
    /// short answer.
    pub fn takes_short_answer(&self, server: usize) -> bool {
        self.servers.get(&server).is_some_and(|f| !f.refused)
    }

    /// Whether the request's file and the one with `suffix` after its
    /// name could be judged differently by the sections (then the
    /// sibling is asked of Apache). A server not learned could.
    pub fn may_differ(&self, a: &impl Compared, suffix: &[u8]) -> bool {
        let Some(sf) = self.servers.get(&a.server()) else {
            return true;
        };
        if sf.refused || a.per_request_rules() {
            return true;
        }
        let Some(filename) = a.filename() else {
            return true;
        };
        // The server's lists, read where one of them has sections to
        // compare; lists other than those learned (a server record reused
        // by a configuration not learned) are not judged by what was.
        let lists = (!sf.dirs.at.is_empty() || !sf.locations.at.is_empty()).then(|| a.lists());
        if lists
            .as_ref()
            .is_some_and(|l| l.dirs.id() != sf.dirs.id || l.locations.id() != sf.locations.id)
        {
            return true;
        }
        if let Some(l) = lists.as_ref().filter(|_| !sf.dirs.at.is_empty()) {
            if !sf.dirs.outgrown(filename.len())
                && list_differs(&sf.dirs, &l.dirs, filename, suffix, false)
            {
                return true;
            }
        }
        if self.files_differ(sf, &a.files(), filename, suffix) {
            return true;
        }
        let Some(l) = lists.as_ref().filter(|_| !sf.locations.at.is_empty()) else {
            return false;
        };
        let Some(uri) = a.file_uri() else {
            return true;
        };
        !sf.locations.outgrown(uri.len())
            && list_differs(&sf.locations, &l.locations, uri, suffix, true)
    }

    /// Whether the request's `<Files>` and `<FilesMatch>` could tell its
    /// file's base name from the sibling's.
    fn files_differ<L: List>(
        &self,
        sf: &ServerFacts,
        files: &L,
        filename: &[u8],
        suffix: &[u8],
    ) -> bool {
        if files.len() == 0 {
            return false;
        }
        let base = match memchr::memrchr(b'/', filename) {
            Some(i) => &filename[i + 1..],
            None => filename,
        };
        if files.id() != sf.files.id {
            // A <Directory> or .htaccess added sections: each compared.
            return (0..files.len()).any(|i| {
                let sec = files.at(i);
                let lit = sec.regex().and_then(|id| self.literals.get(&id));
                differs(&sec, lit.map(|l| &l[..]), base, suffix, false)
            });
        }
        !sf.files.outgrown(base.len()) && list_differs(&sf.files, files, base, suffix, false)
    }
}

/// Whether a section of `live` (the list whose facts are `f`) could tell
/// `name` from `name + suffix`: only those whose bound the name does not
/// exceed are compared.
fn list_differs<L: List>(
    f: &ListFacts,
    live: &L,
    name: &[u8],
    suffix: &[u8],
    prefix: bool,
) -> bool {
    f.at.iter().any(|fact| {
        fact.bound.is_none_or(|b| name.len() <= b)
            && (fact.i >= live.len()
                || differs(
                    &live.at(fact.i),
                    fact.literal.as_deref(),
                    name,
                    suffix,
                    prefix,
                ))
    })
}

/// Whether `s` (with its literal, if it has one) answers `name` and
/// `name + suffix` differently.
fn differs(s: &impl Sect, lit: Option<&[u8]>, name: &[u8], suffix: &[u8], prefix: bool) -> bool {
    match (
        matches(s, lit, name, b"", prefix),
        matches(s, lit, name, suffix, prefix),
    ) {
        (Some(a), Some(b)) => a != b,
        _ => true,
    }
}

/// Whether `s` matches the name `a + b` as core matches it (`prefix`: as
/// a `<Location>`, a path prefix ending at a segment's end); `None` for a
/// name core could not be given (one holding a NUL).
fn matches(s: &impl Sect, lit: Option<&[u8]>, a: &[u8], b: &[u8], prefix: bool) -> Option<bool> {
    let n = Joined(a, b);
    if s.regex().is_some() {
        if let Some(lit) = lit {
            return Some(n.starts_with(lit));
        }
        return Name::new(a, b).c().map(|c| s.regex_matches(c));
    }
    if s.wildcard() {
        return Name::new(a, b).c().map(|c| s.wildcard_matches(c));
    }
    let Some(p) = s.pattern() else {
        return Some(false);
    };
    if !prefix {
        return Some(n.len() == p.len() && n.starts_with(p));
    }
    Some(
        n.starts_with(p)
            && (p.is_empty() || p.ends_with(b"/") || matches!(n.at(p.len()), None | Some(b'/'))),
    )
}

/// Two byte strings read as one.
struct Joined<'a>(&'a [u8], &'a [u8]);

impl Joined<'_> {
    fn len(&self) -> usize {
        self.0.len() + self.1.len()
    }

    fn at(&self, i: usize) -> Option<u8> {
        match i.checked_sub(self.0.len()) {
            None => Some(self.0[i]),
            Some(j) => self.1.get(j).copied(),
        }
    }

    fn starts_with(&self, p: &[u8]) -> bool {
        let (a, b) = (self.0, self.1);
        if p.len() <= a.len() {
            return a.starts_with(p);
        }
        p.len() <= self.len() && p.starts_with(a) && b.starts_with(&p[a.len()..])
    }
}

/// The request's URI without its path info, where it ends with it.
pub fn file_uri<'a>(uri: &'a [u8], path_info: &[u8]) -> Option<&'a [u8]> {
    if !uri.starts_with(b"/") {
        return None;
    }
    uri.strip_suffix(path_info)
}

/// A name as a C string, on the stack where it fits.
struct Name {
    stack: [u8; 512],
    heap: Vec<u8>,
    len: usize,
}

impl Name {
    fn new(a: &[u8], b: &[u8]) -> Name {
        let len = a.len() + b.len();
        let mut n = Name {
            stack: [0; 512],
            heap: Vec::new(),
            len,
        };
        let buf: &mut [u8] = if len < n.stack.len() {
            &mut n.stack[..=len]
        } else {
            n.heap.resize(len + 1, 0);
            &mut n.heap
        };
        buf[..a.len()].copy_from_slice(a);
        buf[a.len()..len].copy_from_slice(b);
        n
    }

    /// The name, `None` where it holds a NUL.
    fn c(&self) -> Option<&CStr> {
        let buf = if self.heap.is_empty() {
            &self.stack[..=self.len]
        } else {
            &self.heap[..]
        };
        CStr::from_bytes_with_nul(buf).ok()
    }
}

//! The source's shape where the compiler does not see it. Crate
//! boundaries it does enforce (gdn-httpd depends on nothing of the
//! application; Cargo refuses a cycle between crates); this checks the
//! rest: the module Apache loads links none of the tool's crates, the
//! on-demand compressor is a crate below the module (it links neither the
//! module nor the tool, and the module holds none of its code), only
//! gdn-httpd may hold `unsafe`, and within each crate imports between its
//! modules (a folder's modules one by one; `crate::` and `super::` paths)
//! point one way (no module reaches, directly or through others, back to
//! itself), and so do imports between the module crate's top-level
//! modules taken whole (a folder and everything in it one node).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's crates, by folder name.
const CRATES: [&str; 6] = ["httpd", "core", "publish", "compressor", "module", "cli"];

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).expect("read src").flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module a path of module names stands for in the graph: a top-level
/// module, or for a folder (`metrics/`) the module of the folder it names
/// (`metrics::status`), so a folder's modules count one by one.
fn node(src: &Path, path: &[String]) -> String {
    let first = &path[0];
    match path.get(1) {
        Some(second)
            if second != "mod"
                && src.join(first).is_dir()
                && (src.join(first).join(format!("{second}.rs")).is_file()
                    || src.join(first).join(second).is_dir()) =>
        {
            format!("{first}::{second}")
        }
        _ => first.clone(),
    }
}

/// The module a file belongs to (`respond/mod.rs` → respond,
/// `metrics/tally/html.rs` → metrics::tally).
fn top(src: &Path, file: &Path) -> String {
    node(src, &components(src, file))
}

/// A file's path under `src` as names, `.rs` dropped.
fn components(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    rel.components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_owned()
        })
        .collect()
}

/// The module path of `file` (`publish/lifecycle.rs` → publish,
/// lifecycle; `respond/mod.rs` → respond).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let mut path = components(src, file);
    if path.last().is_some_and(|l| l == "mod" || l == "lib") {
        path.pop();
    }
    path
}

/// The names after a path's start: `x::y` of `crate::x::y::z`, or each
/// member of a `{a, b::c}` group after it (two names at most each).
fn names_after(rest: &str) -> Vec<Vec<String>> {
    let word = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    if let Some(group) = rest.strip_prefix('{') {
        let group = &group[..group.find('}').unwrap_or(group.len())];
        return group
            .split(',')
            .map(|m| {
                m.trim()
                    .split("::")
                    .map(word)
                    .take_while(|s| !s.is_empty())
                    .take(2)
                    .collect()
            })
            .filter(|p: &Vec<String>| !p.is_empty())
            .collect();
    }
    let path: Vec<String> = rest
        .split("::")
        .map(word)
        .take_while(|s| !s.is_empty())
        .take(2)
        .collect();
    vec![path]
}

/// The child modules a file declares (`mod x;`, `pub(crate) mod x;`).
fn children(code: &str) -> Vec<String> {
    code.lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l.strip_prefix("pub ").or_else(|| {
                l.strip_prefix("pub(")
                    .and_then(|r| r.split_once(") ").map(|(_, r)| r))
            });
            let name = rest.unwrap_or(l).strip_prefix("mod ")?.strip_suffix(';')?;
            Some(name.trim().to_owned())
        })
        .collect()
}

/// The modules a file's code (not its tests) names as `crate::x::y`,
/// relative to its own module as `super::x` (`super::super::x`), or as
/// a child module it declares (`mod x;` then `x::y`).
fn named(src: &Path, file: &Path, text: &str, by_child: bool) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let mut out = BTreeSet::new();
    let here = module_path(src, file);
    // Comments name modules without importing them.
    let code_only: String = code
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let children = if by_child { children(code) } else { Vec::new() };
    let code = code_only.as_str();
    for child in children {
        let prefix = format!("{child}::");
        for (i, _) in code.match_indices(&prefix) {
            let before = code[..i].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            for tail in names_after(&code[i..]) {
                let path: Vec<String> = here.iter().cloned().chain(tail).collect();
                out.insert(node(src, &path));
            }
        }
    }
    for (i, m) in code.match_indices("crate::") {
        for path in names_after(&code[i + m.len()..]) {
            if !path.is_empty() {
                out.insert(node(src, &path));
            }
        }
    }
    for (i, _) in code.match_indices("super::") {
        // Counted once, from the first `super::` of a chain.
        if code[..i].ends_with("super::") {
            continue;
        }
        let mut rest = &code[i..];
        let mut base = here.clone();
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        for tail in names_after(rest) {
            let path: Vec<String> = base.iter().cloned().chain(tail).collect();
            if !path.is_empty() {
                out.insert(node(src, &path));
            }
        }
    }
    out
}

/// The `src` folder of the workspace crate `name`.
fn crate_src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates")
        .join(name)
        .join("src")
}

/// Module of crate `name` → the modules it imports. In the module crate
/// a folder's parent (`mod.rs`) naming its children counts too, so its
/// files import one way among themselves as well.
fn graph(name: &str) -> BTreeMap<String, BTreeSet<String>> {
    let src = crate_src(name);
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let from = top(&src, &f);
        if ["lib", "bin", "test_util"].contains(&from.as_str()) {
            continue;
        }
        let text = fs::read_to_string(&f).expect("read");
        let to: Vec<String> = named(&src, &f, &text, name == "module")
            .into_iter()
            .filter(|t| *t != from)
            .collect();
        g.entry(from).or_default().extend(to);
    }
    // Only modules count (a `crate::` path may name an exported macro).
    let modules: BTreeSet<String> = g.keys().cloned().collect();
    for to in g.values_mut() {
        to.retain(|t| modules.contains(t));
    }
    g
}

/// The graph with each node taken as its top-level module (`metrics`
/// for `metrics::tally`): imports between folders.
fn folders(g: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    let top = |m: &str| m.split("::").next().unwrap_or(m).to_owned();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, to) in g {
        let from = top(from);
        let to: Vec<String> = to.iter().map(|t| top(t)).filter(|t| *t != from).collect();
        out.entry(from).or_default().extend(to);
    }
    out
}

/// Every circle of `g`, each as the path that closes it.
fn circles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    g.keys()
        .filter_map(|m| circle(g, m))
        .map(|c| c.join(" → "))
        .collect()
}

/// A path from `start` back to itself, if there is one.
fn circle(g: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![vec![start.to_owned()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = stack.pop() {
        let last = path.last().expect("non-empty");
        for next in g.get(last).into_iter().flatten() {
            if next == start {
                let mut c = path.clone();
                c.push(next.clone());
                return Some(c);
            }
            if seen.insert(next.clone()) {
                let mut p = path.clone();
                p.push(next.clone());
                stack.push(p);
            }
        }
    }
    None
}

#[test]
fn imports_between_modules_point_one_way() {
    let mut modules = 0;
    let mut circles = Vec::new();
    for name in CRATES {
        let g = graph(name);
        modules += g.len();
        circles.extend(self::circles(&g));
    }
    assert!(modules > 20, "the crates' modules: {modules}");
    assert!(circles.is_empty(), "import circles: {circles:#?}");
}

#[test]
fn the_module_crates_folders_import_one_way() {
    let g = folders(&graph("module"));
    assert!(
        g.contains_key("metrics") && g.contains_key("ondemand"),
        "{g:?}"
    );
    let circles = circles(&g);
    assert!(
        circles.is_empty(),
        "import circles between folders: {circles:#?}"
    );
}

/// The packages `package` links, as `cargo tree -e normal` lists them.
fn linked(package: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args([
            "tree", "--frozen", "-e", "normal", "--prefix", "none", "--format", "{p}",
        ])
        .args(["-p", package])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_module_links_none_of_the_tools_crates() {
    let module = linked("mod_gzip_disk_ng");
    assert!(
        module.contains("gdn-core") && module.contains("zstd"),
        "{module:?}"
    );
    // walkdir is linked too (through gdn-compressor): the site dictionary chooses its pages
    // by walking the document root.
    let tool: Vec<&str> = ["clap", "indicatif", "rayon", "gdn-cli"]
        .into_iter()
        .filter(|c| module.contains(*c))
        .collect();
    assert!(tool.is_empty(), "the module links {tool:?}");
    // The check sees them where they are.
    assert!(linked("gdn-cli").contains("clap"));
}

#[test]
fn the_compressor_is_a_crate_below_the_module() {
    let module = linked("mod_gzip_disk_ng");
    assert!(module.contains("gdn-compressor"), "{module:?}");
    let compressor = linked("gdn-compressor");
    assert!(compressor.contains("gdn-core"), "{compressor:?}");
    // Nor Apache's crate: it is a process of its own, and what it asks
    // of the system it asks through safe calls.
    let above: Vec<&str> = [
        "mod_gzip_disk_ng",
        "gdn-httpd",
        "gdn-cli",
        "clap",
        "rayon",
        "indicatif",
    ]
    .into_iter()
    .filter(|c| compressor.contains(*c))
    .collect();
    assert!(above.is_empty(), "the compressor links {above:?}");
    // The module holds none of the compressor's code: no file of its
    // names the process's parts or the formats it shares.
    let mut files = Vec::new();
    sources(&crate_src("module"), &mut files);
    let held: Vec<String> = files
        .iter()
        .filter(|f| {
            let name = f.file_stem().and_then(|n| n.to_str()).unwrap_or("");
            let dir = f
                .parent()
                .and_then(|d| d.file_name())
                .and_then(|d| d.to_str());
            dir == Some("compressor")
                || (dir == Some("ondemand")
                    && ["compressor", "job", "key", "host", "pages"].contains(&name))
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        held.is_empty(),
        "the module holds the compressor's {held:?}"
    );
    assert!(files.len() > 20, "the module's files: {}", files.len());
}

/// The compressor's parts import what it runs with from `settings`, never
/// from the crate root: the root only starts them, so no import reaches
/// back up to it.
#[test]
fn the_compressors_parts_import_nothing_of_its_root() {
    let src = crate_src("compressor");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| top(&src, f)).collect();
    assert!(
        modules.contains("settings") && modules.contains("make"),
        "{modules:?}"
    );
    let mut up = Vec::new();
    for f in &files {
        let from = top(&src, f);
        if ["lib", "tests"].contains(&from.as_str()) {
            continue;
        }
        let text = fs::read_to_string(f).expect("read");
        for to in named(&src, f, &text, false) {
            if !modules.contains(&to) {
                up.push(format!("{from} → {to}"));
            }
        }
    }
    assert!(up.is_empty(), "imports of the compressor's root: {up:#?}");
}

#[test]
fn only_the_ffi_crate_may_hold_unsafe() {
    for name in CRATES.iter().filter(|n| **n != "httpd") {
        let lib = fs::read_to_string(crate_src(name).join("lib.rs")).expect("lib.rs");
        assert!(
            lib.contains("#![deny(unsafe_code") || lib.contains("#![forbid(unsafe_code"),
            "crates/{name}/src/lib.rs allows unsafe code"
        );
    }
}

/// The lines of `text` before its unit tests that name a way to reach
/// files, the environment or the process: what gdn-core leaves to its
/// callers.
fn outside_reaches(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
    let reaches = [
        "std::fs",
        "fs::",
        "File::",
        "OpenOptions",
        "std::env",
        "std::process",
    ];
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .filter(|l| reaches.iter().any(|r| l.contains(r)))
        .map(str::to_owned)
        .collect()
}

/// gdn-core is what both sides compute: it opens, reads and writes no
/// file itself (the publish engine, gdn-publish, does), so every fact it
/// works on is handed in.
#[test]
fn the_core_reaches_no_file() {
    let mut files = Vec::new();
    sources(&crate_src("core"), &mut files);
    let mut found = Vec::new();
    for f in files.iter().filter(|f| !f.ends_with("test_util.rs")) {
        let text = fs::read_to_string(f).expect("read");
        for l in outside_reaches(&text) {
            found.push(format!("{}: {}", f.display(), l.trim()));
        }
    }
    assert!(found.is_empty(), "gdn-core reaches out: {found:#?}");
    assert!(files.len() > 15, "gdn-core's files: {}", files.len());
    let caught = outside_reaches("use std::fs::File;\nfn f() {}\n#[cfg(test)]\nmod tests {}\n");
    assert_eq!(caught.len(), 1);
    assert!(outside_reaches("fn f() {}\n#[cfg(test)]\nmod tests { use std::fs; }\n").is_empty());
}

#[test]
fn a_child_module_named_by_its_parent_is_an_import() {
    let src = crate_src("module");
    let text = "mod body;\npub(crate) mod plan;\nuse body::send;\nfn f() { plan::vary(); }\n";
    let named = named(&src, &src.join("respond").join("mod.rs"), text, true);
    assert!(named.contains("respond::body"), "{named:?}");
    assert!(named.contains("respond::plan"), "{named:?}");
}

#[test]
fn a_circle_is_found_where_there_is_one() {
    let mut g = BTreeMap::new();
    g.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
    g.insert("b".to_owned(), BTreeSet::from(["c".to_owned()]));
    g.insert("c".to_owned(), BTreeSet::from(["a".to_owned()]));
    assert_eq!(circle(&g, "a").map(|c| c.join(" ")), Some("a b c a".into()));
    g.get_mut("c").expect("c").clear();
    assert_eq!(circle(&g, "a"), None);
    // Two folders reaching into each other's files are a circle of folders.
    let mut g = BTreeMap::new();
    g.insert("a::x".to_owned(), BTreeSet::from(["b::y".to_owned()]));
    g.insert("b::z".to_owned(), BTreeSet::from(["a::w".to_owned()]));
    assert!(circles(&g).is_empty());
    assert_eq!(circles(&folders(&g)).len(), 2);
}

//! The source's shape: imports between the crate's top-level modules point
//! one way (no module reaches, directly or through others, back to
//! itself), and `src/httpd/`, the FFI layer, names no application module.
// Tests may unwrap: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

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

/// The top-level module a file belongs to (`respond/mod.rs` → respond).
fn top(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let first = rel.components().next().expect("a component");
    first
        .as_os_str()
        .to_string_lossy()
        .trim_end_matches(".rs")
        .to_owned()
}

/// The modules a file's code (not its tests) names as `crate::x`.
fn named(text: &str) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    code.match_indices("crate::")
        .map(|(i, m)| {
            code[i + m.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|n| !n.is_empty())
        .collect()
}

/// Top-level module → the modules it imports.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let from = top(&src, &f);
        if ["lib", "bin", "test_util"].contains(&from.as_str()) {
            continue;
        }
        let text = fs::read_to_string(&f).expect("read");
        let to: Vec<String> = named(&text).into_iter().filter(|t| *t != from).collect();
        g.entry(from).or_default().extend(to);
    }
    // Only modules count (a `crate::` path may name an exported macro).
    let modules: BTreeSet<String> = g.keys().cloned().collect();
    for to in g.values_mut() {
        to.retain(|t| modules.contains(t));
    }
    g
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
    let g = graph();
    assert!(g.len() > 15, "the crate's modules: {:?}", g.keys());
    let circles: Vec<String> = g
        .keys()
        .filter_map(|m| circle(&g, m))
        .map(|c| c.join(" → "))
        .collect();
    assert!(circles.is_empty(), "import circles: {circles:#?}");
}

#[test]
fn the_ffi_layer_names_no_application_module() {
    let g = graph();
    let httpd = g.get("httpd").expect("src/httpd");
    assert!(httpd.is_empty(), "src/httpd imports {httpd:?}");
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
}

//! End-to-end tests of the `gzip-disk-ng` binary's dictionary transport
//! (RFC 9842) features: deltas against earlier versions, group members and
//! a trained site dictionary; the store; `verify` of deltas.

mod common;

use common::{oracle_decode, page, set_mtime, store_of, test_state_dir, zstd_cli_decode_with};
use gdn_core::dictionary::{self, DeltaCoding, Hash, STORE_DIR};
use gdn_publish::state::STATE_ENV;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

const BIN: &str = env!("CARGO_BIN_EXE_gzip-disk-ng");

fn run(args: &[&str], paths: &[&Path]) -> Output {
    run_with_state(test_state_dir(), args, paths)
}

/// `run` with the state directory `state`.
fn run_with_state(state: &Path, args: &[&str], paths: &[&Path]) -> Output {
    let out = Command::new(BIN)
        .env(STATE_ENV, state)
        .args(args)
        .arg("--plain")
        .args(paths)
        .output()
        .unwrap();
    eprintln!(
        "$ gzip-disk-ng {args:?}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Version `n` of a script: the same text with a few edits per version.
fn version(n: u64) -> Vec<u8> {
    let mut v = page(80_000, 42);
    for i in 0..n {
        let at = 5_000 + 9_000 * i as usize;
        v.splice(at..at, format!("/* change {i} */").bytes());
    }
    v.extend_from_slice(format!("\nversion {n}\n").as_bytes());
    v
}

/// Writes `data` at `path` with an mtime `age_s` seconds ago.
fn put(path: &Path, data: &[u8], age_s: u64) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, data).unwrap();
    set_mtime(path, SystemTime::now() - Duration::from_secs(age_s));
}

fn delta(original: &Path, dict: &[u8], c: DeltaCoding) -> PathBuf {
    dictionary::delta_path(original, &dictionary::hash(dict), c).unwrap()
}

/// Every dcz delta beside `original`, by dictionary hash, after checking
/// that each has its dcb twin.
fn deltas_of(original: &Path) -> Vec<Hash> {
    let name = original.file_name().unwrap().to_str().unwrap();
    let mut v: Vec<Hash> = fs::read_dir(original.parent().unwrap())
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().into_string().unwrap();
            let (orig, h, c) = dictionary::parse_delta_name(&n)?;
            (orig == name && c == DeltaCoding::Dcz).then_some(h)
        })
        .collect();
    v.sort();
    for h in &v {
        assert!(dictionary::delta_path(original, h, DeltaCoding::Dcb)
            .unwrap()
            .is_file());
    }
    v
}

fn stored_versions(tree: &Path, rel: &str) -> usize {
    fs::read_dir(store_of(tree).join("versions").join(rel))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// The `zstd` CLI decodes a dcz body (after its 40-byte header) with the
/// dictionary as `-D`.
fn zstd_cli_decodes(dcz: &Path, dict: &[u8], expect: &[u8]) {
    let bytes = fs::read(dcz).unwrap();
    assert_eq!(bytes[..8], dictionary::DCZ_MAGIC);
    assert_eq!(bytes[8..40], dictionary::hash(dict));
    assert!(
        zstd_cli_decode_with(dict, &bytes[40..]) == expect,
        "zstd -D decodes to other bytes"
    );
}

#[test]
fn same_path_versions_are_kept_delta_encoded_and_pruned() {
    let d = tempfile::tempdir().unwrap();
    let site = d.path();
    let app = site.join("js/app.js");
    let k2 = ["compress", "--delta-versions", "2"];
    put(&app, &version(1), 4000);
    assert!(run(&k2, &[site]).status.success());
    assert!(deltas_of(&app).is_empty(), "no earlier version yet");

    put(&app, &version(2), 3000);
    let o = run(&k2, &[site]);
    assert!(o.status.success());
    assert!(
        stdout(&o).contains("1 earlier versions kept"),
        "{}",
        stdout(&o)
    );
    let dcz = delta(&app, &version(1), DeltaCoding::Dcz);
    assert_eq!(deltas_of(&app), [dictionary::hash(&version(1))]);
    let (m, orig) = (fs::metadata(&dcz).unwrap(), fs::metadata(&app).unwrap());
    assert_eq!(m.modified().unwrap(), orig.modified().unwrap());
    let br = fs::metadata(site.join("js/app.js.br")).unwrap().len();
    assert!(m.len() * 10 < br, "delta {} vs br {br}", m.len());
    zstd_cli_decodes(&dcz, &version(1), &version(2));
    assert_eq!(stored_versions(site, "js/app.js"), 1);

    // Incremental: nothing to do on a rerun.
    let o = run(&k2, &[site]);
    assert!(stdout(&o).contains("deltas: 0 written"), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("2 up to date, 0 not smaller"),
        "{}",
        stdout(&o)
    );

    put(&app, &version(3), 2000);
    assert!(run(&k2, &[site]).status.success());
    let mut want = vec![dictionary::hash(&version(1)), dictionary::hash(&version(2))];
    want.sort();
    assert_eq!(deltas_of(&app), want);

    // A fourth version: the store keeps 2 (v3, v2), the v1 delta goes.
    put(&app, &version(4), 1000);
    let o = run(&k2, &[site]);
    assert!(stdout(&o).contains("2 stale removed"), "{}", stdout(&o));
    assert_eq!(stored_versions(site, "js/app.js"), 2);
    let mut want = vec![dictionary::hash(&version(2)), dictionary::hash(&version(3))];
    want.sort();
    assert_eq!(deltas_of(&app), want);
    zstd_cli_decodes(
        &delta(&app, &version(3), DeltaCoding::Dcz),
        &version(3),
        &version(4),
    );
    let v = run(&["verify"], &[site]);
    assert!(v.status.success(), "{}", stdout(&v));
    assert!(
        stdout(&v).contains("ok: 7"),
        "3 siblings and 4 deltas: {}",
        stdout(&v)
    );
}

#[test]
fn previous_version_is_recovered_from_a_sibling_made_without_deltas() {
    let d = tempfile::tempdir().unwrap();
    let site = d.path();
    let p = site.join("index.html");
    put(&p, &version(1), 2000);
    assert!(run(&["compress", "--no-zstd"], &[site]).status.success());
    put(&p, &version(2), 1000);
    let o = run(&["compress", "--delta-versions", "1", "--no-zstd"], &[site]);
    assert!(o.status.success());
    assert!(
        stdout(&o).contains("previous version kept"),
        "{}",
        stdout(&o)
    );
    // Recovered from the .gz sibling, stored with that version's mtime.
    let stored = store_of(site).join("versions/index.html").join(format!(
        "{}.zst",
        dictionary::to_hex(&dictionary::hash(&version(1)))
    ));
    let content = zstd::decode_all(fs::File::open(&stored).unwrap()).unwrap();
    assert!(content == version(1));
    let gz_mtime = fs::metadata(site.join("index.html.gz"))
        .unwrap()
        .modified()
        .unwrap();
    assert!(fs::metadata(&stored).unwrap().modified().unwrap() < gz_mtime);
    zstd_cli_decodes(
        &delta(&p, &version(1), DeltaCoding::Dcz),
        &version(1),
        &version(2),
    );
}

#[test]
fn the_store_is_never_compressed_and_deltas_get_no_siblings() {
    let d = tempfile::tempdir().unwrap();
    let site = d.path();
    let p = site.join("a.html");
    put(&p, &version(1), 2000);
    run(&["compress", "--delta-versions", "3"], &[site]);
    put(&p, &version(2), 1000);
    run(&["compress", "--delta-versions", "3"], &[site]);
    let o = run(&["compress", "--delta-versions", "3"], &[site]);
    // The summary counts originals only: not the deltas, siblings and
    // temporaries beside a.html.
    let out = stdout(&o);
    assert!(
        out.contains("files seen: 1,") && out.contains("skipped: 0,"),
        "{out}"
    );
    for e in walkdir::WalkDir::new(site) {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            !(name.contains(".dcz.") || name.ends_with(".zst.gz") || name.ends_with(".zst.br")),
            "{name}"
        );
    }
}

#[test]
fn group_members_get_deltas_against_older_members() {
    let d = tempfile::tempdir().unwrap();
    let site = d.path();
    let (a, b, c) = (
        site.join("assets/app.3f2a.js"),
        site.join("assets/app.9c1b.js"),
        site.join("assets/app.77aa.js"),
    );
    put(&a, &version(1), 3000);
    put(&b, &version(2), 2000);
    put(&c, &version(3), 1000);
    let args = [
        "compress",
        "--delta-group",
        "assets/app.*.js",
        "--delta-versions",
        "1",
    ];
    let o = run(&args, &[site]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert!(deltas_of(&a).is_empty(), "the oldest has nothing older");
    assert_eq!(deltas_of(&b), [dictionary::hash(&version(1))]);
    assert_eq!(
        deltas_of(&c),
        [dictionary::hash(&version(2))],
        "K = 1: newest older only"
    );
    zstd_cli_decodes(
        &delta(&c, &version(2), DeltaCoding::Dcz),
        &version(2),
        &version(3),
    );
    // verify finds group dictionaries through the store's catalogue.
    let v = run(&["verify"], &[site]);
    assert!(v.status.success());
    assert!(stdout(&v).contains("bad: 0"));
    // A member that left the disk takes its deltas' reason with it.
    fs::remove_file(&b).unwrap();
    run(&args, &[site]);
    assert_eq!(deltas_of(&c), [dictionary::hash(&version(1))]);
}

/// Pages sharing a template, as a site's are.
fn site_pages(dir: &Path, n: usize) {
    for i in 0..n {
        let mut p = b"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>Manual</title><link rel=stylesheet href=/style/manual.css></head><body><div id=page-header><p class=menu><a href=/mod/>Modules</a> | <a href=/mod/directives.html>Directives</a> | <a href=/faq/>FAQ</a> | <a href=/glossary.html>Glossary</a> | <a href=/sitemap.html>Sitemap</a></p></div>".to_vec();
        p.extend_from_slice(&page(3000 + 97 * i, i as u64));
        p.extend_from_slice(b"<div id=footer><p class=apache>Copyright 2026 The Apache Software Foundation.<br />Licensed under the Apache License, Version 2.0.</p><p class=menu><a href=/mod/>Modules</a> | <a href=/mod/directives.html>Directives</a></p></div></body></html>");
        put(&dir.join(format!("docs/p{i}.html")), &p, 500);
    }
}

#[test]
fn site_dictionary_is_trained_and_every_page_gets_a_delta() {
    let d = tempfile::tempdir().unwrap();
    let site = d.path();
    site_pages(site, 60);
    let dict_path = site.join("dictionary.dat");
    let o = Command::new(BIN)
        .args(["train"])
        .arg(site)
        .arg("--out")
        .arg(&dict_path)
        .args(["--size", "4K"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dict = fs::read(&dict_path).unwrap();
    assert!(!dict.is_empty() && dict.len() <= 4096);
    let dict_arg = dict_path.to_str().unwrap();

    let dry = run(
        &["compress", "--dry-run", "--dictionary", dict_arg],
        &[site],
    );
    assert!(stdout(&dry).contains("would be"), "{}", stdout(&dry));
    assert!(
        stdout(&dry).contains("deltas: 120 to write"),
        "{}",
        stdout(&dry)
    );
    assert_eq!(
        fs::read_dir(site.join("docs")).unwrap().count(),
        60,
        "dry run wrote"
    );

    let o = run(&["compress", "--dictionary", dict_arg], &[site]);
    assert!(o.status.success());
    for i in 0..60 {
        let p = site.join(format!("docs/p{i}.html"));
        assert_eq!(deltas_of(&p), [dictionary::hash(&dict)], "p{i}");
        let br = fs::metadata(site.join(format!("docs/p{i}.html.br")))
            .unwrap()
            .len();
        let dcz = fs::metadata(delta(&p, &dict, DeltaCoding::Dcz))
            .unwrap()
            .len();
        assert!(dcz < br, "p{i}: dcz {dcz} br {br}");
    }
    assert!(
        deltas_of(&dict_path).is_empty(),
        "no delta of the dictionary itself"
    );
    zstd_cli_decodes(
        &delta(&site.join("docs/p3.html"), &dict, DeltaCoding::Dcz),
        &dict,
        &fs::read(site.join("docs/p3.html")).unwrap(),
    );
    let v = run(&["verify"], &[site]);
    assert!(v.status.success(), "{}", stdout(&v));

    // A corrupt delta and one whose header names another dictionary.
    let bad = delta(&site.join("docs/p5.html"), &dict, DeltaCoding::Dcz);
    let mut bytes = fs::read(&bad).unwrap();
    let n = bytes.len();
    bytes[n - 6] ^= 0x40;
    fs::write(&bad, &bytes).unwrap();
    let other = delta(&site.join("docs/p6.html"), &dict, DeltaCoding::Dcz);
    let mut bytes = fs::read(&other).unwrap();
    bytes[20] ^= 1;
    fs::write(&other, &bytes).unwrap();
    let v = run(&["verify"], &[site]);
    assert!(!v.status.success());
    assert!(stdout(&v).contains("bad: 2"), "{}", stdout(&v));
}

#[test]
fn a_delta_not_smaller_than_br_is_not_kept() {
    let d = tempfile::tempdir().unwrap();
    let site = d.path();
    let dict_path = site.join("unrelated.dat");
    fs::write(
        &dict_path,
        b"completely unrelated dictionary words 0123456789",
    )
    .unwrap();
    put(&site.join("page.html"), &page(50_000, 9), 100);
    let o = run(
        &["compress", "--dictionary", dict_path.to_str().unwrap()],
        &[site],
    );
    assert!(o.status.success());
    assert!(
        stdout(&o).contains("2 not smaller than br"),
        "{}",
        stdout(&o)
    );
    assert!(deltas_of(&site.join("page.html")).is_empty());
}

#[test]
fn dcb_deltas_decode_with_the_dictionary() {
    let d = tempfile::tempdir().unwrap();
    let site = d.path();
    let app = site.join("app.js");
    put(&app, &version(1), 2000);
    run(&["compress", "--delta-versions", "1"], &[site]);
    put(&app, &version(2), 1000);
    let o = run(&["compress", "--delta-versions", "1"], &[site]);
    assert!(o.status.success());
    let dcb = fs::read(delta(&app, &version(1), DeltaCoding::Dcb)).unwrap();
    assert_eq!(dcb[..4], dictionary::DCB_MAGIC);
    let mut out = Vec::new();
    std::io::Read::read_to_end(
        &mut brotli::Decompressor::new_with_custom_dict(&dcb[36..], 4096, version(1).into()),
        &mut out,
    )
    .unwrap();
    assert!(out == version(2));
    assert!(run(&["verify"], &[site]).status.success());
}

#[test]
fn no_dcb_past_brotlis_window() {
    let d = tempfile::tempdir().unwrap();
    let site = d.path();
    let dict_path = d.path().join("big.dat");
    fs::write(&dict_path, page(16 << 20, 3)).unwrap();
    put(&site.join("page.html"), &page(50_000, 4), 100);
    let o = run(
        &[
            "compress",
            "--zstd-level",
            "3",
            "--dictionary",
            dict_path.to_str().unwrap(),
            "--exclude",
            "big.dat",
        ],
        &[site],
    );
    assert!(o.status.success());
    assert!(
        stdout(&o).contains("1 dcb over the 16 MiB window not made"),
        "{}",
        stdout(&o)
    );
    let dcb = delta(
        &site.join("page.html"),
        &page(16 << 20, 3),
        DeltaCoding::Dcb,
    );
    assert!(!dcb.exists());
}

/// Files under `tree` (links not followed) whose content, raw or decoded
/// as zstd, gzip or brotli, is one of `earlier`.
fn holding_earlier_versions(tree: &Path, earlier: &[Vec<u8>]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(tree) {
        let e = e.unwrap();
        if !e.file_type().is_file() {
            continue;
        }
        let raw = fs::read(e.path()).unwrap();
        let decoded = ["zstd", "gzip", "br"]
            .into_iter()
            .filter_map(|c| oracle_decode(Some(c), &raw).ok());
        if std::iter::once(raw.clone())
            .chain(decoded)
            .any(|c| earlier.contains(&c))
        {
            out.push(e.path().to_path_buf());
        }
    }
    out
}

fn hashes(versions: &[u64]) -> Vec<Hash> {
    let mut v: Vec<Hash> = versions
        .iter()
        .map(|&n| dictionary::hash(&version(n)))
        .collect();
    v.sort();
    v
}

#[test]
fn the_store_lies_outside_the_tree_in_the_state_directory() {
    let d = tempfile::tempdir().unwrap();
    let (site, state) = (d.path().join("site"), d.path().join("state"));
    let app = site.join("app.js");
    let k2 = ["compress", "--delta-versions", "2"];
    for (n, age) in [(1, 3000), (2, 2000)] {
        put(&app, &version(n), age);
        assert!(run_with_state(&state, &k2, &[&site]).status.success());
    }
    assert_eq!(deltas_of(&app), hashes(&[1]));
    assert!(!site.join(STORE_DIR).exists());
    assert!(holding_earlier_versions(&site, &[version(1)]).is_empty());
    let stores: Vec<PathBuf> = fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(stores.len(), 1, "one store for one tree: {stores:?}");
    let name = stores[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(name.contains("site-"), "named after the tree: {name}");
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(&stores[0]).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{mode:o}");
    assert_eq!(
        holding_earlier_versions(&stores[0], &[version(1)]).len(),
        1,
        "the earlier version is kept in the state directory"
    );
    let v = run_with_state(&state, &["verify"], &[&site]);
    assert!(v.status.success(), "{}", stdout(&v));
}

#[test]
fn without_a_state_variable_a_user_store_is_under_xdg_state_home() {
    // As root, the tool runs as `nobody` (root's default is
    // /var/lib/gzip-disk-ng, which tests never write).
    let root = common::is_root();
    let d = tempfile::tempdir().unwrap();
    let (site, xdg) = (d.path().join("site"), d.path().join("xdg"));
    let app = site.join("app.js");
    if root {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(d.path(), fs::Permissions::from_mode(0o755)).unwrap();
        for dir in [&site, &xdg] {
            fs::create_dir_all(dir).unwrap();
            std::os::unix::fs::chown(dir, Some(65534), Some(65534)).unwrap();
        }
    }
    for (n, age) in [(1, 3000), (2, 2000)] {
        put(&app, &version(n), age);
        let mut cmd = if root {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN]);
            c
        } else {
            Command::new(BIN)
        };
        let o = cmd
            .env_remove(STATE_ENV)
            .env("XDG_STATE_HOME", &xdg)
            .args(["compress", "-q", "--delta-versions", "1"])
            .arg(&site)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    assert_eq!(deltas_of(&app), hashes(&[1]));
    let found = holding_earlier_versions(&xdg.join("gzip-disk-ng"), &[version(1)]);
    assert_eq!(found.len(), 1, "{found:?}");
}

#[test]
fn store_option_names_the_store() {
    let d = tempfile::tempdir().unwrap();
    let (site, state, mine) = (
        d.path().join("site"),
        d.path().join("state"),
        d.path().join("mine"),
    );
    let app = site.join("app.js");
    let mine_s = mine.to_str().unwrap();
    let args = ["compress", "--delta-versions", "2", "--store", mine_s];
    for (n, age) in [(1, 3000), (2, 2000)] {
        put(&app, &version(n), age);
        assert!(run_with_state(&state, &args, &[&site]).status.success());
    }
    assert_eq!(deltas_of(&app), hashes(&[1]));
    assert!(!state.exists(), "the state directory is not used");
    assert_eq!(
        fs::read_dir(mine.join("versions/app.js")).unwrap().count(),
        1
    );
    let v = run_with_state(&state, &["verify", "--store", mine_s], &[&site]);
    assert!(v.status.success(), "{}", stdout(&v));
    let v = run_with_state(&state, &["verify"], &[&site]);
    assert!(
        !v.status.success(),
        "without --store the dictionary is not found"
    );
    assert!(
        stdout(&v).contains("not found")
            || String::from_utf8_lossy(&v.stderr).contains("not found")
    );
    let inside = site.join("store");
    let o = run_with_state(
        &state,
        &[
            "compress",
            "--delta-versions",
            "2",
            "--store",
            inside.to_str().unwrap(),
        ],
        &[&site],
    );
    assert_eq!(
        o.status.code(),
        Some(2),
        "a store inside the tree is refused"
    );
    assert!(!inside.exists());
}

#[test]
fn an_in_tree_store_is_moved_out_and_its_versions_still_used() {
    let d = tempfile::tempdir().unwrap();
    let (site, state, old) = (
        d.path().join("site"),
        d.path().join("state"),
        d.path().join("old"),
    );
    let app = site.join("js/app.js");
    // What an older release left: the store of v1 and v2 inside the tree.
    let args = [
        "compress",
        "--delta-versions",
        "2",
        "--store",
        old.to_str().unwrap(),
    ];
    for (n, age) in [(1, 3000), (2, 2000)] {
        put(&app, &version(n), age);
        assert!(run_with_state(&state, &args, &[&site]).status.success());
    }
    fs::rename(&old, site.join(STORE_DIR)).unwrap();
    assert_eq!(holding_earlier_versions(&site, &[version(1)]).len(), 1);

    put(&app, &version(3), 1000);
    let o = run_with_state(&state, &["compress", "--delta-versions", "2"], &[&site]);
    assert!(o.status.success(), "{}", stdout(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let moved: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("moved the dictionary store"))
        .collect();
    assert_eq!(moved.len(), 1, "{err}");
    assert!(!site.join(STORE_DIR).exists());
    // v1 was only in the moved store; v2 came from the stale siblings.
    assert_eq!(deltas_of(&app), hashes(&[1, 2]));
    zstd_cli_decodes(
        &delta(&app, &version(1), DeltaCoding::Dcz),
        &version(1),
        &version(3),
    );
    let earlier = [version(1), version(2)];
    let left = holding_earlier_versions(&site, &earlier);
    assert!(
        left.is_empty(),
        "earlier versions left in the tree: {left:?}"
    );
    let store = fs::read_dir(&state)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert_eq!(holding_earlier_versions(&store, &earlier).len(), 2);
    let v = run_with_state(&state, &["verify"], &[&site]);
    assert!(v.status.success(), "{}", stdout(&v));
    let again = run_with_state(&state, &["compress", "--delta-versions", "2"], &[&site]);
    assert!(!String::from_utf8_lossy(&again.stderr).contains("moved"));
}

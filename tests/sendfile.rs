//! `EnableSendfile On` (Apache's default is Off) through a real Apache,
//! with and without `GzipDiskNgJitter`: bodies are correct, and the sibling
//! goes out by sendfile, which the child's read-syscall count in
//! `/proc/<pid>/io` shows (a sendfile call counts as one read; without
//! sendfile and mmap, Apache reads the file 8 000 bytes at a time).

mod common;

use common::*;
use gdn_core::coding::Coding;
use std::fs;
use std::path::Path;

const SIZE: usize = 6 << 20;

/// The read syscalls of all of Apache's children so far.
fn syscr(a: &Apache) -> u64 {
    a.child_pids()
        .iter()
        .filter_map(|p| fs::read_to_string(format!("/proc/{p}/io")).ok())
        .flat_map(|io| {
            io.lines()
                .filter_map(|l| l.strip_prefix("syscr: "))
                .filter_map(|n| n.trim().parse::<u64>().ok())
                .collect::<Vec<_>>()
        })
        .sum()
}

fn site(d: &Path) {
    let data = noise(SIZE, 5);
    for dir in ["sf", "sfj", "nosf", "nosfj"] {
        fs::create_dir(d.join(dir)).unwrap();
        let base = d.join(dir).join("n.html");
        // Incompressible: the siblings are as large as the content.
        for (c, suffix) in [(Coding::Gzip, ".gz"), (Coding::Zstd, ".zst")] {
            fs::write(sibling(&base, suffix), encoded_with(c, &fast(), &data)).unwrap();
        }
    }
}

#[test]
fn enable_sendfile_on_sends_siblings_by_sendfile_with_and_without_jitter() {
    let data = noise(SIZE, 5);
    let mut o = one_child();
    o.server += "\nEnableMMAP Off\nEnableSendfile Off\n\
        <Location /sf>\nEnableSendfile On\n</Location>\n\
        <Location /sfj>\nEnableSendfile On\nGzipDiskNgJitter 32\n</Location>\n\
        <Location /nosfj>\nGzipDiskNgJitter 32\n</Location>\n";
    let a = Apache::start(o, site);
    assert_eq!(a.child_pids().len(), 1, "one child to watch");
    // Warm up: the sibling facts and padding lengths are read once.
    for dir in ["sf", "sfj", "nosf", "nosfj"] {
        for ae in ["gzip", "zstd"] {
            assert_eq!(a.get(&format!("/{dir}/n.html"), Some(ae)).status, 200);
        }
    }
    let mut reads = std::collections::BTreeMap::new();
    for dir in ["sf", "sfj", "nosf", "nosfj"] {
        for (ae, c, suffix) in [("gzip", Coding::Gzip, "gz"), ("zstd", Coding::Zstd, "zst")] {
            let sib = fs::read(a.docroot.join(format!("{dir}/n.html.{suffix}"))).unwrap();
            let before = syscr(&a);
            let r = a.get(&format!("/{dir}/n.html"), Some(ae));
            let after = syscr(&a);
            assert_eq!((r.status, r.exit), (200, 0), "{dir} {ae}");
            assert_eq!(r.header("Content-Encoding"), Some(ae));
            if dir.ends_with('j') {
                let pad = r.body.len() - sib.len();
                assert!((2..=40).contains(&pad), "{dir} {ae}: padded by {pad}");
                assert!(r.header("ETag").unwrap().contains(&format!("{ae}-j")));
            } else {
                assert!(r.body == sib, "{dir} {ae}: the sibling's bytes");
            }
            assert!(
                oracle_decoded(Some(c.token()), &r.body) == data,
                "{dir} {ae}"
            );
            reads.insert((dir, ae), after - before);
        }
    }
    eprintln!("read syscalls per response: {reads:?}");
    // Without sendfile (and mmap) a 6 MiB body takes ~790 reads of 8 000
    // bytes; by sendfile far fewer calls move it.
    for ae in ["gzip", "zstd"] {
        for (on, off) in [("sf", "nosf"), ("sfj", "nosfj")] {
            let (r_on, r_off) = (reads[&(on, ae)], reads[&(off, ae)]);
            assert!(r_off >= 700, "{off} {ae}: {r_off} reads: {reads:?}");
            assert!(
                r_on * 10 < r_off,
                "{on} {ae}: {r_on} reads against {r_off}: {reads:?}"
            );
        }
    }
    a.assert_no_crash();
}

//! Siblings as the standard command-line tools write them, served by a
//! real Apache: `gzip`, `pigz` and `zopfli`; `zstd` and `pzstd`; `brotli`;
//! at several levels and windows, from a file (the tool knows the size)
//! and through a pipe (it does not). Each is alone beside a missing
//! original, on a small and a large page. A client accepting the coding
//! gets the sibling byte for byte, unless browsers refuse it (a zstd window
//! over 8 MiB): then it is not sent as zstd. A client accepting no coding
//! gets the original with 200, on GET and on HEAD. Some also over HTTP/2
//! (h2c). One assertion lists every failing combination.

mod common;

use common::*;
use gdn_core::coding::Coding;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The largest zstd window browsers decode (RFC 9659: 8 MiB).
const BROWSER_ZSTD_WINDOW: u64 = 8 << 20;

#[derive(Clone, Copy, Debug)]
enum Input {
    File,
    Pipe,
}
use Input::{File, Pipe};

/// One way of writing a sibling: `prog args -c`, on a file or a pipe.
struct Tool {
    prog: &'static str,
    args: &'static [&'static str],
    input: Input,
    suffix: &'static str,
    /// Also requested over HTTP/2.
    h2: bool,
}

const fn tool(
    prog: &'static str,
    args: &'static [&'static str],
    input: Input,
    suffix: &'static str,
) -> Tool {
    Tool {
        prog,
        args,
        input,
        suffix,
        h2: false,
    }
}

const fn h2(t: Tool) -> Tool {
    Tool { h2: true, ..t }
}

const TOOLS: &[Tool] = &[
    tool("gzip", &["-1"], File, ".gz"),
    h2(tool("gzip", &["-9"], File, ".gz")),
    tool("gzip", &["-9"], Pipe, ".gz"),
    tool("pigz", &["-11"], File, ".gz"),
    // 32 KiB blocks: the large page in ten deflate streams, each flushed.
    h2(tool("pigz", &["-b", "32"], File, ".gz")),
    tool("zopfli", &["--gzip"], File, ".gz"),
    tool("zstd", &["-3"], File, ".zst"),
    tool("zstd", &["-3"], Pipe, ".zst"),
    h2(tool("zstd", &["-19"], File, ".zst")),
    tool("zstd", &["-19"], Pipe, ".zst"),
    tool("zstd", &["--ultra", "-22"], File, ".zst"),
    h2(tool("zstd", &["--ultra", "-22"], Pipe, ".zst")),
    tool("zstd", &["-19"], File, ".zstd"),
    tool("pzstd", &["-p", "2"], File, ".zst"),
    tool("brotli", &["-q", "0"], File, ".br"),
    tool("brotli", &["-q", "0"], Pipe, ".br"),
    tool("brotli", &["-q", "1"], File, ".br"),
    tool("brotli", &["-q", "1"], Pipe, ".br"),
    tool("brotli", &["-q", "5"], File, ".br"),
    h2(tool("brotli", &["-q", "5"], Pipe, ".br")),
    tool("brotli", &["-q", "9"], File, ".br"),
    tool("brotli", &["-q", "9"], Pipe, ".br"),
    h2(tool("brotli", &["-q", "11"], File, ".br")),
    tool("brotli", &["-q", "11"], Pipe, ".br"),
    tool("brotli", &["-w", "10"], File, ".br"),
    tool("brotli", &["-w", "10"], Pipe, ".br"),
    tool("brotli", &["-w", "24"], File, ".br"),
    tool("brotli", &["-w", "24"], Pipe, ".br"),
];

impl Tool {
    fn label(&self) -> String {
        let input = match self.input {
            File => "from a file",
            Pipe => "through a pipe",
        };
        format!(
            "{} {} {input} ({})",
            self.prog,
            self.args.join(" "),
            self.suffix
        )
    }

    /// Its siblings' names: the label's words.
    fn stem(&self) -> String {
        let words = format!(
            "{} {} {:?} {}",
            self.prog,
            self.args.join(" "),
            self.input,
            self.suffix
        );
        let words: Vec<&str> = words
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        words.join("-").to_ascii_lowercase()
    }

    fn coding(&self) -> Coding {
        Coding::ALL
            .into_iter()
            .find(|c| c.suffixes().contains(&self.suffix))
            .expect("a sibling suffix")
    }

    fn write(&self, data: &[u8]) -> Vec<u8> {
        let mut args = self.args.to_vec();
        args.push("-c");
        match self.input {
            File => tool_on_file(self.prog, &args, data),
            Pipe => filter_through(self.prog, &args, data),
        }
    }
}

/// The original the siblings hold.
struct Page {
    name: &'static str,
    data: Vec<u8>,
}

/// A sibling of `page` written by `tool`, requested as `path`.
struct Sibling<'a> {
    tool: &'a Tool,
    page: &'a Page,
    path: String,
    bytes: Vec<u8>,
}

impl Sibling<'_> {
    fn file(&self) -> String {
        format!("{}{}", &self.path[1..], self.tool.suffix)
    }

    /// The window the sibling declares, in bytes (zstd: its first data
    /// frame's; pzstd's frames share theirs).
    fn window(&self) -> u64 {
        match self.tool.coding() {
            Coding::Zstd => zstd_first_window(&self.bytes),
            Coding::Br => brotli_window(&self.bytes),
            Coding::Gzip => 32 << 10,
        }
    }

    fn browsers_refuse(&self) -> bool {
        self.tool.coding() == Coding::Zstd && self.window() > BROWSER_ZSTD_WINDOW
    }
}

/// The window of the first zstd data frame in `z`, past skippable frames
/// (pzstd starts with one).
fn zstd_first_window(mut z: &[u8]) -> u64 {
    while z[0] & 0xf0 == 0x50 && z[1..4] == [0x2a, 0x4d, 0x18] {
        let n = u32::from_le_bytes(z[4..8].try_into().expect("4 bytes"));
        z = &z[8 + n as usize..];
    }
    zstd_window(z)
}

/// The window a brotli stream declares in its WBITS (RFC 7932 9.1).
fn brotli_window(b: &[u8]) -> u64 {
    let bits = match (b[0] & 1, (b[0] >> 1) & 7, (b[0] >> 4) & 7) {
        (0, _, _) => 16,
        (_, n @ 1..=7, _) => 17 + u32::from(n),
        (_, _, 0) => 17,
        (_, _, 1) => panic!("large-window brotli"),
        (_, _, n) => 8 + u32::from(n),
    };
    (1 << bits) - 16
}

/// The tools on PATH (a missing one is a skip).
fn available() -> Vec<&'static Tool> {
    let mut out = vec![];
    for t in TOOLS {
        if have(t.prog) {
            out.push(t);
        } else {
            skip(&format!("{} not on PATH: {}", t.prog, t.label()));
        }
    }
    out
}

/// Every tool's sibling of every page, written by as many tools at once
/// as there are cores, in table order.
fn write_siblings<'a>(tools: &[&'a Tool], pages: &'a [Page]) -> Vec<Sibling<'a>> {
    let jobs: Vec<(&Tool, &Page)> = tools
        .iter()
        .flat_map(|t| pages.iter().map(move |p| (*t, p)))
        .collect();
    let next = AtomicUsize::new(0);
    let done = Mutex::new(vec![]);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(tool, page)) = jobs.get(i) else {
                    return;
                };
                let bytes = tool.write(&page.data);
                let path = format!("/{}-{}.html", tool.stem(), page.name);
                let sib = Sibling {
                    tool,
                    page,
                    path,
                    bytes,
                };
                done.lock().expect("lock").push((i, sib));
            });
        }
    });
    let mut done = done.into_inner().expect("lock");
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, s)| s).collect()
}

fn describe(r: &Response) -> String {
    format!(
        "{} {}, Content-Encoding {:?}, Content-Length {:?}, {} body bytes, curl exit {}",
        r.http_version,
        r.status,
        r.coding(),
        r.header("Content-Length"),
        r.body.len(),
        r.exit
    )
}

/// What a response should be.
#[derive(Clone, Copy)]
enum Want {
    /// The original, not encoded, with 200 (HEAD: without its body).
    Original { head: bool },
    /// The sibling as it is, or, if browsers refuse it, anything but it
    /// sent as its coding: the original.
    Sibling,
}

/// What is wrong with `r` for `want`, if anything.
fn wrong(r: &Response, s: &Sibling, want: Want) -> Option<String> {
    let original = &s.page.data;
    let token = s.tool.coding().token();
    let length = r.header("Content-Length");
    let ok = match want {
        Want::Original { head } => {
            let body_ok = if head {
                r.body.is_empty()
            } else {
                r.body == *original
            };
            let length_ok = length.is_none_or(|l| l == original.len().to_string());
            r.status == 200 && r.exit == 0 && r.coding().is_none() && body_ok && length_ok
        }
        Want::Sibling if s.browsers_refuse() => {
            let decoded = oracle_decode(r.coding(), &r.body);
            r.coding() != Some(token)
                && r.status == 200
                && r.exit == 0
                && decoded.as_ref() == Ok(original)
        }
        Want::Sibling => {
            r.status == 200 && r.exit == 0 && r.coding() == Some(token) && r.body == s.bytes
        }
    };
    (!ok).then(|| describe(r))
}

/// What is asked for.
#[derive(Clone, Copy)]
enum Ask {
    /// HEAD, accepting no coding.
    Head,
    /// GET, accepting no coding.
    Get,
    /// GET with an Accept-Encoding naming the sibling's coding.
    GetAccepting,
}

/// A request for `s` over HTTP/2 (h2c) or HTTP/1.1. HEAD over HTTP/1.1
/// goes on a raw socket, read to the end: curl's `-I` writes the head where
/// the body goes, and `-X HEAD` waits for Content-Length bytes.
fn fetch(a: &Apache, s: &Sibling, h2: bool, ask: Ask) -> Response {
    let ae = format!("Accept-Encoding: {}", s.tool.coding().token());
    let mut args = vec![];
    if h2 {
        args.push("--http2-prior-knowledge");
    }
    match ask {
        Ask::Head if !h2 => {
            let r = raw_request(a, "HEAD", &s.path, &[]);
            return Response {
                status: r.status,
                headers: r.headers,
                body: r.after_head,
                exit: 0,
                http_version: "HTTP/1.1".into(),
            };
        }
        // The stream's end, not Content-Length, ends the body read.
        Ask::Head => args.extend(["-X", "HEAD", "--ignore-content-length"]),
        Ask::Get => {}
        Ask::GetAccepting => args.extend(["-H", &ae]),
    }
    a.request(&s.path, &args)
}

/// Every failing request for `s`, with the module's log lines about it.
fn check(a: &Apache, s: &Sibling) -> Option<String> {
    let requests = [
        (
            "HEAD accepting no coding",
            Ask::Head,
            Want::Original { head: true },
        ),
        (
            "GET accepting no coding",
            Ask::Get,
            Want::Original { head: false },
        ),
        (
            "HEAD accepting no coding, after a GET",
            Ask::Head,
            Want::Original { head: true },
        ),
        ("GET accepting the coding", Ask::GetAccepting, Want::Sibling),
    ];
    let versions: &[bool] = if s.tool.h2 { &[false, true] } else { &[false] };
    let mut failed = vec![];
    for &h2 in versions {
        let version = if h2 { "HTTP/2" } else { "HTTP/1.1" };
        for (what, ask, want) in requests {
            let r = fetch(a, s, h2, ask);
            let problem =
                wrong(&r, s, want).or_else(|| (r.http_version != version).then(|| describe(&r)));
            if let Some(p) = problem {
                failed.push(format!("    {version} {what}: {p}"));
            }
        }
    }
    if failed.is_empty() {
        return None;
    }
    Some(format!(
        "{}, {} page ({}):\n{}\n{}",
        s.tool.label(),
        s.page.name,
        s.file(),
        failed.join("\n"),
        log_about(a, s)
    ))
}

/// The module's distinct log messages about `s`, each with its level,
/// without the time, process and client, files named relative to the
/// docroot.
fn log_about(a: &Apache, s: &Sibling) -> String {
    let docroot = format!("{}/", a.docroot.display());
    let mut said: Vec<String> = vec![];
    for line in a.module_log_about(&s.path) {
        let level = line.split("] ").nth(1).unwrap_or("?");
        let message = line.rsplit("] ").next().unwrap_or("").replace(&docroot, "");
        let l = format!("    log {level}] {message}");
        if !said.contains(&l) {
            said.push(l);
        }
    }
    said.join("\n")
}

#[test]
fn siblings_from_the_standard_tools_are_served_or_decoded() {
    let pages = [
        Page {
            name: "small",
            data: page(26_000, 16),
        },
        Page {
            name: "large",
            data: page(314_000, 17),
        },
    ];
    let sibs = write_siblings(&available(), &pages);
    for p in &pages {
        eprintln!("{} page: {} bytes", p.name, p.data.len());
    }
    for s in &sibs {
        eprintln!(
            "{:<36} {:>7} bytes, window {:>9}",
            s.file(),
            s.bytes.len(),
            s.window()
        );
    }
    if have("zstd") {
        assert!(
            sibs.iter().any(Sibling::browsers_refuse),
            "no zstd window over 8 MiB: the case browsers refuse is not covered"
        );
    }
    let a = Apache::start(one_child(), |d| {
        for s in &sibs {
            put(d, &s.file(), &s.bytes);
        }
    });
    let failures: Vec<String> = sibs.iter().filter_map(|s| check(&a, s)).collect();
    a.assert_no_crash();
    assert!(
        failures.is_empty(),
        "{} of {} siblings served wrong:\n{}",
        failures.len(),
        sibs.len(),
        failures.join("\n")
    );
}

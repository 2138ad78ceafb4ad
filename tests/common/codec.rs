//! Encoding and decoding test data. Siblings are made by the publish tool's
//! own encoder (`publish::encode`), as they are in use; the few streams
//! that tool never writes (one-shot brotli, zstd frames with a chosen
//! window or no content size, gzip with a file name) have their own
//! functions, named for what is unusual about them. Also: a body decoded
//! by its Content-Encoding, a zstd frame header read independently of the
//! crate, and command-line codecs run over bytes.
//!
//! Also compiled into the crate's unit tests (src/test_util.rs), so it
//! names the crate only as `super::gdn`.

use super::gdn::coding::Coding;
use super::gdn::decode::decode_all;
use super::gdn::encode::{self, Levels};
use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};

/// The publish tool's encoders at their fastest, for tests that encode
/// much or often and do not care about size.
pub fn fast() -> Levels {
    Levels {
        gzip: 1,
        brotli_quality: 1,
        zstd: 1,
        ..Levels::default()
    }
}

/// `data` as the publish tool writes it by default.
pub fn encoded(c: Coding, data: &[u8]) -> Vec<u8> {
    encoded_with(c, &Levels::default(), data)
}

/// `data` as the publish tool writes it with `levels`.
pub fn encoded_with(c: Coding, levels: &Levels, data: &[u8]) -> Vec<u8> {
    encode::encode_vec(c, levels, data).expect("encode")
}

/// The `len` bytes `src` yields, encoded by the publish tool without
/// holding them: for inputs too large to keep.
pub fn encoded_stream(c: Coding, levels: &Levels, len: u64, src: impl Read) -> Vec<u8> {
    encode::encode(c, levels, len, src, Vec::new())
        .expect("encode")
        .1
}

pub fn gzip(data: &[u8]) -> Vec<u8> {
    encoded(Coding::Gzip, data)
}

pub fn zstd(data: &[u8]) -> Vec<u8> {
    encoded(Coding::Zstd, data)
}

pub fn brotli(data: &[u8]) -> Vec<u8> {
    encoded(Coding::Br, data)
}

/// Brotli as most encoders write it, in one shot (no flush before the
/// end): unlike the tool's streams, it does not necessarily end in an
/// empty last meta-block the module can pad before.
pub fn brotli_one_shot(data: &[u8], quality: u32, lgwin: u32) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut w = brotli::CompressorWriter::new(&mut out, 4096, quality, lgwin);
        w.write_all(data).expect("brotli");
    }
    out
}

/// Brotli of what `src` yields, in one shot, with any window up to 24
/// bits (the tool stops at 23).
pub fn brotli_one_shot_stream(mut src: impl Read, quality: u32, lgwin: u32) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut w = brotli::CompressorWriter::new(&mut out, 4096, quality, lgwin);
        std::io::copy(&mut src, &mut w).expect("brotli");
    }
    out
}

/// Brotli flushed, then finished, with the tool's parameters but without
/// its rewrite of the ending: it ends in a byte-aligned empty last
/// meta-block (`0x03`).
pub fn brotli_flushed(data: &[u8], quality: u32, lgwin: u32) -> Vec<u8> {
    let params = brotli::enc::BrotliEncoderParams {
        quality: quality as i32,
        lgwin: lgwin as i32,
        size_hint: data.len(),
        ..Default::default()
    };
    let mut out = Vec::new();
    {
        let mut w = brotli::CompressorWriter::with_params(&mut out, 4096, &params);
        w.write_all(data).expect("brotli");
        w.flush().expect("brotli");
    }
    out
}

/// A zstd frame of what `src` yields, from a streaming encoder with the
/// window `1 << window_log` whatever the content (the tool caps it at
/// 8 MiB). With `len` the size is pledged and declared, as the tool does;
/// without, the frame declares none, as `zstd -c` writes from a pipe.
pub fn zstd_framed(
    mut src: impl Read,
    len: Option<u64>,
    level: i32,
    window_log: u32,
    checksum: bool,
) -> Vec<u8> {
    let mut e = zstd::stream::Encoder::new(Vec::new(), level).expect("zstd");
    e.include_checksum(checksum).expect("checksum");
    match len {
        Some(n) => e.set_pledged_src_size(Some(n)).expect("pledge"),
        None => e.include_contentsize(false).expect("no size"),
    }
    e.window_log(window_log).expect("window");
    std::io::copy(&mut src, &mut e).expect("zstd");
    let z = e.finish().expect("zstd");
    if len.is_none() {
        assert_eq!(z[4] & 0xc0, 0, "no Frame_Content_Size field");
    }
    z
}

/// gzip whose header names the file (FNAME), as `gzip` writes it; the
/// tool writes no name.
pub fn gzip_named(name: &str, data: &[u8]) -> Vec<u8> {
    let mut g = flate2::GzBuilder::new()
        .filename(name)
        .write(Vec::new(), flate2::Compression::best());
    g.write_all(data).expect("gzip");
    g.finish().expect("gzip")
}

/// A body decoded by its Content-Encoding (`None`: the body as is).
pub fn decode_body(content_encoding: Option<&str>, body: &[u8]) -> Result<Vec<u8>, String> {
    let Some(ce) = content_encoding else {
        return Ok(body.to_vec());
    };
    let c = Coding::from_token(ce).ok_or_else(|| format!("unexpected coding {ce}"))?;
    decode_all(c, body).map_err(|e| format!("{ce} body does not decode: {e}"))
}

/// The window and the content size of the zstd frame starting `f`, read
/// from its header as RFC 8878 3.1.1.1 lays it out (independently of the
/// crate's parser): a single-segment frame's window is its content size.
pub fn zstd_header(f: &[u8]) -> (u64, Option<u64>) {
    assert_eq!(f[..4], [0x28, 0xb5, 0x2f, 0xfd]);
    let fhd = f[4];
    let single = fhd & 0x20 != 0;
    let mut pos = 5;
    let mut window = None;
    if !single {
        let wd = f[5];
        let base = 1u64 << (10 + (wd >> 3));
        window = Some(base + base / 8 * u64::from(wd & 7));
        pos += 1;
    }
    pos += [0, 1, 2, 4][usize::from(fhd & 3)];
    let fcs_len = match (fhd >> 6, single) {
        (0, false) => 0,
        (0, true) => 1,
        (1, _) => 2,
        (2, _) => 4,
        _ => 8,
    };
    let mut fcs = None;
    if fcs_len > 0 {
        let mut le = [0u8; 8];
        le[..fcs_len].copy_from_slice(&f[pos..pos + fcs_len]);
        fcs = Some(u64::from_le_bytes(le) + if fcs_len == 2 { 256 } else { 0 });
    }
    (window.or(fcs).expect("a window"), fcs)
}

/// The window of the zstd frame starting `f`.
pub fn zstd_window(f: &[u8]) -> u64 {
    zstd_header(f).0
}

/// Runs `prog args` with `input` on its stdin; `None` if it cannot start.
pub fn pipe(prog: &str, args: &[&str], input: &[u8]) -> Option<Output> {
    let mut child = Command::new(prog)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let input = input.to_vec();
    // Written from a thread: a filter may fill its stdout before reading
    // all of its stdin.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().ok()?;
    let _ = writer.join();
    Some(out)
}

/// The stdout of `prog args` over `input`, which must succeed.
pub fn filter_through(prog: &str, args: &[&str], input: &[u8]) -> Vec<u8> {
    let out = pipe(prog, args, input).unwrap_or_else(|| panic!("{prog} does not start"));
    assert!(
        out.status.success(),
        "{prog} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The stdout of `prog args FILE`, FILE holding `input` (so the tool
/// knows the size, as when compressing a published file), which must
/// succeed.
pub fn tool_on_file(prog: &str, args: &[&str], input: &[u8]) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("page.html");
    std::fs::write(&p, input).expect("write");
    let mut all = args.to_vec();
    all.push(p.to_str().expect("utf-8 path"));
    filter_through(prog, &all, b"")
}

/// What the `zstd` CLI decodes from a zstd frame made against
/// `dictionary` as raw content (a dcz body after its 40-byte header), as an
/// independent check of the crate's and the publish tool's deltas.
pub fn zstd_cli_decode_with(dictionary: &[u8], frame: &[u8]) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("tempdir");
    let dict = dir.path().join("dictionary");
    std::fs::write(&dict, dictionary).expect("write dictionary");
    let dict = dict.to_string_lossy().into_owned();
    filter_through("zstd", &["-q", "-d", "-c", "--long=31", "-D", &dict], frame)
}

/// A dcz body (RFC 9842 §4) of `data` against `dictionary`, made with
/// the `zstd` CLI at `level` (`-19`): magic, the dictionary's SHA-256,
/// then `zstd --patch-from` output.
pub fn dcz_cli(dictionary: &[u8], data: &[u8], level: &str) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let dir = tempfile::tempdir().expect("tempdir");
    let (d, v) = (dir.path().join("dictionary"), dir.path().join("new"));
    std::fs::write(&d, dictionary).expect("write dictionary");
    std::fs::write(&v, data).expect("write data");
    let out = Command::new("zstd")
        .args(["-q", level, "-c", "--patch-from"])
        .arg(&d)
        .arg(&v)
        .output()
        .expect("zstd CLI");
    assert!(out.status.success());
    let mut body = vec![0x5e, 0x2a, 0x4d, 0x18, 0x20, 0, 0, 0];
    body.extend_from_slice(&Sha256::digest(dictionary));
    body.extend_from_slice(&out.stdout);
    body
}

/// Whether `prog --version` runs and succeeds.
pub fn have(prog: &str) -> bool {
    Command::new(prog)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

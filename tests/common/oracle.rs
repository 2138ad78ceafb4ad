//! Independent oracles: every coded body the integration tests check is
//! decoded by a decoder that is not the product's, with the limits a
//! browser applies written here as numbers (not taken from the product,
//! whose limits are what is under test):
//! - gzip, br and zstd by the command-line tools (`gzip`, `brotli`,
//!   `zstd`; scripts/lib.sh installs them), zstd within the 8 MiB window
//!   browsers accept;
//! - dcz (RFC 9842 §4) by the `zstd` CLI with `-D`, within the window of
//!   RFC 9842 §5.2;
//! - dcb (RFC 9842 §4) by mbrotli, an implementation of RFC 7932 of its
//!   own (the product decodes with brotli-decompressor), with the
//!   dictionary attached raw and the standard 16 MiB window at most.
//!
//! A tool that does not start fails the test: it is never a pass.

use sha2::{Digest, Sha256};

/// The zstd window Chromium and Firefox accept for `zstd`
/// (windowLogMax 23): 8 MiB.
pub const BROWSER_ZSTD_WINDOW: u64 = 8 << 20;

/// RFC 9842 §5.2: a `dcz` window is at most 8 MiB or 1.25 times the
/// dictionary, whichever is larger, and never over 128 MiB.
pub fn dcz_window_limit(dictionary_len: u64) -> u64 {
    (dictionary_len + dictionary_len / 4).clamp(8 << 20, 128 << 20)
}

/// RFC 9842 §4: the 4-byte magic a `dcb` body starts with.
pub const DCB_MAGIC: [u8; 4] = [0xff, 0x44, 0x43, 0x42];
/// RFC 9842 §4: the 8-byte magic (a zstd skippable frame's header) a
/// `dcz` body starts with.
pub const DCZ_MAGIC: [u8; 8] = [0x5e, 0x2a, 0x4d, 0x18, 0x20, 0, 0, 0];

/// `body` decoded by an independent decoder for its Content-Encoding
/// (`None`: the body as is). `dcb`/`dcz` need a dictionary: see
/// [`oracle_decode_delta`].
pub fn oracle_decode(content_encoding: Option<&str>, body: &[u8]) -> Result<Vec<u8>, String> {
    let Some(ce) = content_encoding else {
        return Ok(body.to_vec());
    };
    let memory = format!("--memory={BROWSER_ZSTD_WINDOW}");
    match ce {
        "gzip" | "x-gzip" => cli("gzip", &["-d", "-c"], body),
        "br" => cli("brotli", &["-d", "-c"], body),
        "zstd" => cli("zstd", &["-q", "-d", "-c", &memory], body),
        _ => Err(format!(
            "no independent decoder for Content-Encoding {ce:?}"
        )),
    }
}

/// `body` decoded by an independent decoder, which must succeed.
pub fn oracle_decoded(content_encoding: Option<&str>, body: &[u8]) -> Vec<u8> {
    oracle_decode(content_encoding, body).unwrap_or_else(|e| panic!("{e}"))
}

/// A `dcb` or `dcz` body (`coding`) decoded against `dictionary`: its
/// header checked (the magic, then the dictionary's SHA-256), the rest by
/// an independent decoder.
pub fn oracle_decode_delta(
    coding: &str,
    dictionary: &[u8],
    body: &[u8],
) -> Result<Vec<u8>, String> {
    let (magic, decode): (&[u8], DeltaDecoder) = match coding {
        "dcb" => (&DCB_MAGIC, dcb_decode),
        "dcz" => (&DCZ_MAGIC, dcz_decode),
        _ => return Err(format!("{coding:?} is not a dictionary coding")),
    };
    let header = magic.len() + 32;
    if body.len() < header || &body[..magic.len()] != magic {
        return Err(format!("{coding} body without its magic"));
    }
    if body[magic.len()..header] != Sha256::digest(dictionary)[..] {
        return Err(format!("{coding} body names another dictionary"));
    }
    decode(dictionary, &body[header..])
}

/// A delta's stream decoded against its dictionary.
type DeltaDecoder = fn(&[u8], &[u8]) -> Result<Vec<u8>, String>;

/// As [`oracle_decode_delta`], which must succeed.
pub fn oracle_decoded_delta(coding: &str, dictionary: &[u8], body: &[u8]) -> Vec<u8> {
    oracle_decode_delta(coding, dictionary, body).unwrap_or_else(|e| panic!("{e}"))
}

/// A brotli stream made against `dictionary` (raw, an LZ77 prefix),
/// decoded by mbrotli within RFC 9842 §5.1's 16 MiB window, no
/// large-window streams.
fn dcb_decode(dictionary: &[u8], stream: &[u8]) -> Result<Vec<u8>, String> {
    use mbrotli::dictionary::{DecodeDictionary, DictionaryAttachment};
    let window = mbrotli::WindowLimit::standard(24).map_err(|e| e.to_string())?;
    let dict = DecodeDictionary::new(&[DictionaryAttachment::Raw(dictionary)], Default::default())
        .map_err(|e| format!("dictionary: {e}"))?;
    let mut d = mbrotli::Decompressor::new(mbrotli::DecoderConfig::new().with_window_limit(window))
        .map_err(|e| e.to_string())?;
    d.decompress_with_dictionary(&dict, stream)
        .map_err(|e| format!("dcb body does not decode (mbrotli): {e}"))
}

/// A zstd frame made against `dictionary` as raw content, decoded by the
/// `zstd` CLI within RFC 9842 §5.2's window.
fn dcz_decode(dictionary: &[u8], frame: &[u8]) -> Result<Vec<u8>, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dict = dir.path().join("dictionary");
    std::fs::write(&dict, dictionary).map_err(|e| e.to_string())?;
    let memory = format!("--memory={}", dcz_window_limit(dictionary.len() as u64));
    let dict = dict.to_string_lossy().into_owned();
    cli("zstd", &["-q", "-d", "-c", &memory, "-D", &dict], frame)
}

/// The stdout of `prog args` over `input`; a tool that does not start
/// panics (a failed test, never a pass), one that fails is an error
/// naming it (gzip's "trailing garbage" warning included).
fn cli(prog: &str, args: &[&str], input: &[u8]) -> Result<Vec<u8>, String> {
    let out = super::pipe(prog, args, input).unwrap_or_else(|| {
        panic!("the independent decoder `{prog}` does not start (scripts/lib.sh installs it)")
    });
    if !out.status.success() {
        return Err(format!(
            "{prog} {args:?} does not decode the body: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(out.stdout)
}

/// Accept-Encoding read as RFC 9110 §12.5.3 and §12.4.2 write it, apart
/// from the product's parser: each member a token with parameters, its
/// weight `q=` a qvalue of at most three decimals (1 at most); other
/// `name=value` parameters are extensions and change nothing; a member
/// with a bad weight or a parameter that is not `name=value` is ignored;
/// names without case; `x-gzip` is gzip. A coding's q is the highest of
/// the members naming it, else that of `*`.
#[derive(Debug, Default)]
pub struct AcceptModel {
    named: std::collections::BTreeMap<String, u16>,
}

impl AcceptModel {
    pub fn parse(header: &str) -> AcceptModel {
        let mut m = AcceptModel::default();
        for member in header.split(',') {
            let member = member.trim_matches([' ', '\t']);
            let mut parts = member.split(';');
            let name = parts.next().unwrap_or_default().trim_matches([' ', '\t']);
            let tchar = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
            if name.is_empty() || !name.chars().all(tchar) {
                continue;
            }
            let Some(q) = weight(parts) else { continue };
            let mut name = name.to_ascii_lowercase();
            if name == "x-gzip" {
                name = "gzip".into();
            }
            let slot = m.named.entry(name).or_insert(0);
            *slot = (*slot).max(q);
        }
        m
    }

    /// A coding's q in thousandths (0: not acceptable); dictionary
    /// codings only when named (RFC 9842: `*` does not imply them).
    pub fn q(&self, coding: &str) -> u16 {
        let star = if coding.starts_with("dc") {
            None
        } else {
            self.named.get("*")
        };
        self.named.get(coding).or(star).copied().unwrap_or(0)
    }

    /// Identity's q where the client states one (itself or by `*`).
    pub fn identity_stated(&self) -> Option<u16> {
        self.named.get("identity").or(self.named.get("*")).copied()
    }
}

/// A member's weight from its parameters (`None`: the member does not
/// count): the last `q=`, 1 without one.
fn weight<'a>(params: impl Iterator<Item = &'a str>) -> Option<u16> {
    let mut q = 1000;
    for p in params
        .map(|p| p.trim_matches([' ', '\t']))
        .filter(|p| !p.is_empty())
    {
        let (k, v) = p.split_once('=')?;
        if k.trim_matches([' ', '\t']).eq_ignore_ascii_case("q") {
            q = qvalue(v.trim_matches([' ', '\t']))?;
        }
    }
    Some(q)
}

/// RFC 9110 §12.4.2: `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )`,
/// in thousandths.
fn qvalue(s: &str) -> Option<u16> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths: u16 = format!("{frac:0<3}").parse().ok()?;
    match int {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

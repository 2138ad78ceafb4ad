//! Decoding siblings back and comparing them with their originals, through
//! the same streaming decoders the module uses.

use crate::at::FileAt;
use gdn_core::coding::Coding;
use gdn_core::decode::{inspect, verdict, DecodeError, Decoder};
use gdn_core::dictionary::Hash;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// The coding a sibling's name says it carries, and its original's path.
pub fn sibling_of(path: &Path) -> Option<(Coding, PathBuf)> {
    let name = path.file_name()?.to_str()?;
    for c in Coding::ALL {
        for s in c.suffixes() {
            if let Some(stem) = name.strip_suffix(s) {
                if !stem.is_empty() {
                    return Some((c, path.with_file_name(stem)));
                }
            }
        }
    }
    None
}

/// Every sibling name a file can have, with its coding.
pub fn sibling_paths(original: &Path) -> Vec<(Coding, PathBuf)> {
    let mut v = Vec::new();
    for c in Coding::ALL {
        for s in c.suffixes() {
            let mut p = original.as_os_str().to_owned();
            p.push(s);
            v.push((c, PathBuf::from(p)));
        }
    }
    v
}

/// A sink that checks written bytes against a reader.
struct Compare<R: Read> {
    expected: R,
    offset: u64,
    differs: bool,
    buf: Vec<u8>,
}

impl<R: Read> Write for Compare<R> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.resize(data.len(), 0);
        let mut got = 0;
        while got < data.len() {
            match self.expected.read(&mut self.buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if got < data.len() || self.buf[..got] != *data {
            let same = self.buf[..got]
                .iter()
                .zip(data)
                .take_while(|(a, b)| a == b)
                .count();
            self.offset += same as u64;
            self.differs = true;
            return Err(io::Error::other("content differs"));
        }
        self.offset += data.len() as u64;
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn open_decoder(coding: Coding, sibling: &Path) -> Result<Decoder<File>, String> {
    let f = File::open(sibling).map_err(|e| format!("cannot open: {e}"))?;
    Decoder::new(coding, f).map_err(|e| format!("cannot decode: {e}"))
}

/// Refuses a sibling browsers cannot decode, which the module never sends
/// as such: a zstd window over 8 MiB, large-window brotli. Its headers say
/// so; one that cannot be inspected is left to decoding to report.
pub fn browsers_accept(coding: Coding, sibling: &Path) -> Result<(), String> {
    if coding == Coding::Gzip {
        return Ok(());
    }
    let f = File::open(sibling).map_err(|e| format!("cannot open: {e}"))?;
    let len = f.metadata().map_err(|e| format!("cannot stat: {e}"))?.len();
    match inspect(coding, &FileAt(&f), len).map(|facts| facts.browser_refusal(coding)) {
        Ok(Some(why)) => Err(format!("{why}: browsers refuse it")),
        _ => Ok(()),
    }
}

/// Whether the sibling at `sibling` is broken, as the module judges it
/// (`decode::verdict`): the cheap checks, then a decode to its end
/// compared with `original`'s length and SHA-256 where it exists. The
/// decoded length, or why it is broken.
pub fn judge(coding: Coding, sibling: &Path, original: Option<&Path>) -> Result<u64, String> {
    let f = File::open(sibling).map_err(|e| format!("cannot open: {e}"))?;
    let len = f.metadata().map_err(|e| format!("cannot stat: {e}"))?.len();
    let expected = match original {
        Some(o) => {
            let of = File::open(o).map_err(|e| format!("cannot open original: {e}"))?;
            let o = verdict::OriginalDigest::of(BufReader::with_capacity(64 * 1024, of))
                .map_err(|e| format!("cannot read original: {e}"))?;
            Some(o)
        }
        None => None,
    };
    let facts = verdict::cheap(coding, &FileAt(&f), len, expected.map(|o| o.len))
        .map_err(|b| b.to_string())?;
    verdict::full(coding, &f, Some(&facts), expected.as_ref()).map_err(|b| b.to_string())
}

/// Decodes a sibling to the end; returns the decoded length.
pub fn decodes(coding: Coding, sibling: &Path) -> Result<u64, String> {
    open_decoder(coding, sibling)?
        .copy_to(&mut io::sink())
        .map_err(|e| format!("does not decode: {e}"))
}

/// Decodes a sibling to the end; returns the SHA-256 of what it decodes
/// to, the hash a stored version of it is named by.
pub fn decoded_hash(coding: Coding, sibling: &Path) -> Result<Hash, String> {
    let mut h = Sha256::new();
    open_decoder(coding, sibling)?
        .copy_to(&mut h)
        .map_err(|e| format!("does not decode: {e}"))?;
    Ok(h.finalize().into())
}

/// Decodes a sibling and compares it byte for byte with `original`.
pub fn matches(coding: Coding, sibling: &Path, original: &Path) -> Result<(), String> {
    let orig = File::open(original).map_err(|e| format!("cannot open original: {e}"))?;
    let mut cmp = Compare {
        expected: BufReader::with_capacity(64 * 1024, orig),
        offset: 0,
        differs: false,
        buf: Vec::new(),
    };
    let r = open_decoder(coding, sibling)?.copy_to(&mut cmp);
    match r {
        Ok(_) => {}
        Err(DecodeError::Io(_)) if cmp.differs => {
            return Err(format!(
                "decodes to different content (first difference at byte {})",
                cmp.offset
            ))
        }
        Err(e) => return Err(format!("does not decode: {e}")),
    }
    let mut one = [0u8; 1];
    loop {
        match cmp.expected.read(&mut one) {
            Ok(0) => return Ok(()),
            Ok(_) => {
                return Err(format!(
                    "decodes to only {} bytes, shorter than the original",
                    cmp.offset
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("cannot read original: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gdn_core::encode::{encode_vec, Levels};
    use std::fs;

    #[test]
    fn names() {
        let (c, o) = sibling_of(Path::new("/x/a.html.zstd")).unwrap();
        assert_eq!((c, o), (Coding::Zstd, PathBuf::from("/x/a.html")));
        assert_eq!(sibling_of(Path::new("/x/a.br")).unwrap().0, Coding::Br);
        assert!(sibling_of(Path::new("/x/.gz")).is_none());
        assert!(sibling_of(Path::new("/x/a.html")).is_none());
        assert_eq!(sibling_paths(Path::new("a")).len(), 4);
    }

    #[test]
    fn compare_detects_differences() {
        let d = tempfile::tempdir().unwrap();
        let orig = d.path().join("a.txt");
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 97) as u8).collect();
        fs::write(&orig, &data).unwrap();
        for c in Coding::ALL {
            let sib = d.path().join(format!("a.txt{}", c.suffixes()[0]));
            fs::write(&sib, encode_vec(c, &Levels::default(), &data).unwrap()).unwrap();
            assert_eq!(decodes(c, &sib).unwrap(), data.len() as u64);
            matches(c, &sib, &orig).unwrap();
            let mut other = data.clone();
            other[5000] ^= 1;
            fs::write(&sib, encode_vec(c, &Levels::default(), &other).unwrap()).unwrap();
            let e = matches(c, &sib, &orig).unwrap_err();
            assert!(e.contains("byte 5000"), "{e}");
            fs::write(
                &sib,
                encode_vec(c, &Levels::default(), &data[..500]).unwrap(),
            )
            .unwrap();
            assert!(matches(c, &sib, &orig).unwrap_err().contains("shorter"));
            let mut longer = data.clone();
            longer.push(1);
            fs::write(&sib, encode_vec(c, &Levels::default(), &longer).unwrap()).unwrap();
            assert!(matches(c, &sib, &orig).is_err());
            fs::write(&sib, b"garbage garbage").unwrap();
            assert!(decodes(c, &sib).is_err());
            assert!(browsers_accept(c, &sib).is_ok(), "left to decoding");
        }
    }

    #[test]
    fn browsers_refuse_wide_zstd_and_large_window_brotli() {
        let d = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..50_000u32).map(|i| (i % 89) as u8).collect();
        let mut e = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
        e.window_log(24).unwrap();
        io::Write::write_all(&mut e, &data).unwrap();
        let wide = d.path().join("a.zst");
        fs::write(&wide, e.finish().unwrap()).unwrap();
        let why = browsers_accept(Coding::Zstd, &wide).unwrap_err();
        assert!(why.contains("16 MiB"), "{why}");
        let p = brotli::enc::BrotliEncoderParams {
            large_window: true,
            lgwin: 24,
            ..Default::default()
        };
        let mut out = Vec::new();
        brotli::BrotliCompress(&mut &data[..], &mut out, &p).unwrap();
        let lw = d.path().join("a.br");
        fs::write(&lw, out).unwrap();
        assert!(browsers_accept(Coding::Br, &lw)
            .unwrap_err()
            .contains("large-window"));
        let fine = d.path().join("b.zst");
        fs::write(
            &fine,
            encode_vec(Coding::Zstd, &Levels::default(), &data).unwrap(),
        )
        .unwrap();
        assert!(browsers_accept(Coding::Zstd, &fine).is_ok());
    }
}

//! `train`: a site dictionary learnt from the site's pages, for deltas of
//! every page against it (`compress --dictionary`).
//!
//! The core's trainer (`gdn_core::train`) picks the stretches the pages
//! share (templates, navigation, footers) as raw content, which is what
//! RFC 9842 clients use a dictionary as.

use super::walk::{FoundFile, WalkFilter};
use gdn_core::{dictionary, train};
use gdn_publish::atomic::TempFile;
use gdn_publish::store;
use std::fmt;
use std::fs;
use std::io::Write;
use std::path::Path;

/// Pages learnt from when no `--include` is given.
pub const DEFAULT_PAGES: &[&str] = &["*.html", "*.htm"];

/// What `train` did.
#[derive(Clone, Debug, Default)]
pub struct Trained {
    /// Pages learnt from.
    pub samples: u64,
    /// Their bytes.
    pub sample_bytes: u64,
    /// The dictionary's size.
    pub size: u64,
    /// Its SHA-256, as `Available-Dictionary` will carry it.
    pub hash: dictionary::Hash,
}

impl fmt::Display for Trained {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "dictionary: {} bytes from {} pages ({} bytes), sha-256 {}",
            self.size,
            self.samples,
            self.sample_bytes,
            dictionary::to_hex(&self.hash)
        )
    }
}

/// Learns a dictionary of at most `size` bytes from the pages under `dir`
/// and writes it to `out` (atomically).
pub fn train(
    dir: &Path,
    out: &Path,
    size: usize,
    include: &[String],
    exclude: &[String],
) -> Result<Trained, String> {
    let include: Vec<String> = if include.is_empty() {
        DEFAULT_PAGES.iter().map(|s| s.to_string()).collect()
    } else {
        include.to_vec()
    };
    let mut filter = WalkFilter::new(&include, exclude)?;
    filter.compress_rules = true;
    let out_real = fs::canonicalize(out).ok();
    let mut samples = Vec::new();
    for found in filter.walk(&[dir.to_path_buf()]) {
        let FoundFile::File(path, _) = found else {
            continue;
        };
        if out_real.is_some() && fs::canonicalize(&path).ok() == out_real {
            continue;
        }
        let page = store::read_limited(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        samples.push(page);
    }
    if samples.len() < 8 {
        return Err(format!(
            "{} pages under {} match {include:?}: too few to learn from",
            samples.len(),
            dir.display()
        ));
    }
    let dict = train::train(&samples, size);
    if dict.is_empty() {
        return Err(format!(
            "the {} pages under {} share nothing to learn",
            samples.len(),
            dir.display()
        ));
    }
    write_atomically(out, &dict).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    Ok(Trained {
        samples: samples.len() as u64,
        sample_bytes: samples.iter().map(|s| s.len() as u64).sum(),
        size: dict.len() as u64,
        hash: dictionary::hash(&dict),
    })
}

/// Writes `data` to `out` through a temporary beside it.
fn write_atomically(out: &Path, data: &[u8]) -> std::io::Result<()> {
    let mut tmp = TempFile::for_new_file(out)?;
    tmp.write_all(data)?;
    tmp.persist(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_from_pages_only_and_refuses_too_few() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..40 {
            let page = format!(
                "<html><head><title>Page {i}</title></head><body><nav>Home | Docs | About</nav><p>{}</p><footer>Same footer on every page</footer></body></html>",
                "text ".repeat(i * 7 % 50 + 10)
            );
            fs::write(d.path().join(format!("p{i}.html")), page).unwrap();
        }
        fs::write(d.path().join("style.css"), "body{}".repeat(500)).unwrap();
        let out = d.path().join("dictionary.dat");
        let t = train(d.path(), &out, 4096, &[], &[]).unwrap();
        assert_eq!(t.samples, 40);
        let dict = fs::read(&out).unwrap();
        assert_eq!(dict.len() as u64, t.size);
        assert!(dict.len() <= 4096);
        assert_eq!(dictionary::hash(&dict), t.hash);
        // A rerun does not learn from its own output.
        assert_eq!(train(d.path(), &out, 4096, &[], &[]).unwrap().samples, 40);
        let e = train(d.path(), &out, 4096, &["*.css".into()], &[]).unwrap_err();
        assert!(e.contains("too few"), "{e}");
    }
}

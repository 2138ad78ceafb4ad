//! Site dictionaries on demand: what `gzip-disk-ng train` and
//! `compress --dictionary` do, done by the compressor for a virtual host
//! with `GzipDiskNgSiteDictionary`.
//!
//! The host's HTML pages the server serves on demand are listed in
//! `site/<64 hex SHA-256 of the host>/pages`. Once `MIN_PAGES` are, the
//! compressor trains a dictionary from their content with the publish
//! tool's trainer, keeps it like an earlier version (`Kind::Kept`, so it
//! counts toward the cache's limit) and writes it as `current.dat` there
//! (which the module serves), then makes every listed page's
//! deltas against it. When the pages have doubled since, it trains
//! again: the new dictionary is current, and the deltas against the one
//! before stay for as long as a browser may hold it (`LIFETIME` after it
//! stopped being served), then go. The record of a host's dictionaries
//! is `site/<…>/dictionaries`: one line each, the hash, when it was
//! trained, from how many pages, and when it stopped being current.

use super::claim::Claim;
use super::deltas::{keep, read_kept};
use super::make::{pin, read_pinned, write_record, Ctx};
use super::state::{copy_path, kept_key, State};
use super::Level;
use crate::ondemand::key::{
    compressible, site_current_coded, site_dir_name, Local, Version, SITE_CURRENT,
};
use gdn_core::coding::Coding;
use gdn_core::dictionary::{self, Hash};
use gdn_core::publish::delta_codec;
use gdn_core::publish::encode::encode_vec;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The file the module serves at `GzipDiskNgSiteDictionary`.
const CURRENT: &str = SITE_CURRENT;

/// Pages a host needs before its first dictionary: zstd's trainer picks
/// what pages share, which a handful cannot show.
pub const MIN_PAGES: usize = 16;

/// Largest dictionary: a download once a day per browser, against the
/// bytes it saves on every page (docs/performance.md measures the sizes
/// on Debian's Apache manual).
pub const DICTIONARY_SIZE: usize = 192 << 10;

/// Pages listed per host at most (the newest kept): training reads them
/// all.
const MAX_PAGES: usize = 1024;

/// Bytes of pages trained on at most.
const MAX_SAMPLE_BYTES: usize = 32 << 20;

/// How long a browser may keep a dictionary: the `max-age` the module
/// serves it with. Deltas against a retrained one go this long after it
/// stopped being served.
pub const LIFETIME: u64 = 86_400;

/// One dictionary of a host.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Trained {
    hash: Hash,
    /// When it was trained, seconds since the epoch.
    at: u64,
    /// Pages it was trained from.
    pages: usize,
    /// When it stopped being the current one (0: it is).
    retired: u64,
}

/// A listed page: its path and the version Apache judged public. Only
/// that very file is ever read for training: a page changed since is
/// listed again by its next job, judged again.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Page {
    version: Version,
    path: PathBuf,
    /// The SHA-256 of its content when listed (zero in older lists): a
    /// page is listed once whatever paths hold it (a fleet's docroots).
    source: Hash,
}

impl Page {
    /// Its line in `pages`: its content's digest, the version's numbers,
    /// then the path.
    fn line(&self) -> Vec<u8> {
        let v = &self.version;
        let hex = dictionary::to_hex(&self.source);
        let mut l = format!("{hex} {} {} ", v.size, v.mtime_us).into_bytes();
        l.extend_from_slice(self.path.as_os_str().as_bytes());
        l
    }

    fn parse(l: &[u8]) -> Option<Page> {
        // A line of the older format (five numbers) has no path after
        // three: it is left out.
        let mut f = l.splitn(4, |&b| b == b' ');
        let mut n = || std::str::from_utf8(f.next()?).ok();
        let (h, s, m) = (n()?, n()?, n()?);
        let version = Version {
            size: s.parse().ok()?,
            mtime_us: m.parse().ok()?,
            ..Version::NONE
        };
        let path = f.next().filter(|p| p.first() == Some(&b'/'))?;
        Some(Page {
            version,
            path: PathBuf::from(std::ffi::OsStr::from_bytes(path)),
            source: dictionary::from_hex(h).unwrap_or_default(),
        })
    }

    /// The content of that very version, if the file still is it.
    fn content(&self) -> Option<Vec<u8>> {
        let pinned = pin(&self.path, &self.version).ok()?;
        read_pinned(&self.path, &pinned).ok()
    }
}

/// A host's files in the cache root.
struct Site {
    dir: PathBuf,
}

impl Site {
    fn of(root: &Path, key: &[u8]) -> Site {
        Site {
            dir: root.join(site_dir_name(key)),
        }
    }

    fn pages(&self) -> Vec<Page> {
        let text = fs::read(self.dir.join("pages")).unwrap_or_default();
        text.split(|&b| b == b'\n')
            .filter_map(Page::parse)
            .collect()
    }

    fn dictionaries(&self) -> Vec<Trained> {
        let text = fs::read_to_string(self.dir.join("dictionaries")).unwrap_or_default();
        text.lines()
            .filter_map(|l| {
                let mut f = l.split(' ');
                let hash = dictionary::from_hex(f.next()?)?;
                let mut n = || f.next()?.parse::<u64>().ok();
                let (at, pages, retired) = (n()?, n()?, n()?);
                Some(Trained {
                    hash,
                    at,
                    pages: pages as usize,
                    retired,
                })
            })
            .collect()
    }

    fn write(&self, name: &str, text: &[u8]) -> io::Result<()> {
        write_record(&self.dir.join(name), text)
    }

    fn save_pages(&self, pages: &[Page]) -> io::Result<()> {
        let mut text = Vec::new();
        for p in pages {
            text.extend_from_slice(&p.line());
            text.push(b'\n');
        }
        self.write("pages", &text)
    }

    fn save_dictionaries(&self, d: &[Trained]) -> io::Result<()> {
        let text: String = d
            .iter()
            .map(|t| {
                let hex = dictionary::to_hex(&t.hash);
                format!("{hex} {} {} {}\n", t.at, t.pages, t.retired)
            })
            .collect();
        self.write("dictionaries", text.as_bytes())
    }
}

/// Seconds since the epoch.
fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Lists `page` (newest last, once per path); whether the list changed.
fn list(pages: &mut Vec<Page>, page: &Page) -> bool {
    if pages.last().is_some_and(|p| p == page) {
        return false;
    }
    let same = |p: &Page| p.path == page.path || (p.source == page.source && p.source != [0; 32]);
    pages.retain(|p| !same(p));
    pages.push(page.clone());
    let excess = pages.len().saturating_sub(MAX_PAGES);
    pages.drain(..excess);
    true
}

/// The content of the listed pages still there and compressed on demand,
/// newest first, up to `MAX_SAMPLE_BYTES`; and their bytes.
fn samples(pages: &[Page]) -> (Vec<Vec<u8>>, usize) {
    let mut samples = Vec::new();
    let mut bytes = 0;
    for p in pages.iter().rev() {
        let Some(page) = p.content() else { continue };
        if !compressible(p.path.as_os_str().as_bytes(), page.len() as u64)
            || bytes + page.len() > MAX_SAMPLE_BYTES
        {
            continue;
        }
        bytes += page.len();
        samples.push(page);
    }
    (samples, bytes)
}

/// Whether a host with `pages` listed trains now: a first dictionary at
/// `MIN_PAGES`, another once the pages doubled since the last.
fn due(pages: usize, trained: &[Trained]) -> bool {
    match trained.iter().find(|t| t.retired == 0) {
        None => pages >= MIN_PAGES,
        Some(t) => pages >= 2 * t.pages.max(MIN_PAGES),
    }
}

impl Ctx<'_> {
    /// Lists the HTML page at `path` for the site dictionary of `key`
    /// (its host), trains one when it is due, and makes the page's deltas
    /// against the dictionaries a browser may hold.
    pub(super) fn site_page(
        &self,
        path: &Path,
        meta: &fs::Metadata,
        version: Version,
        content: &[u8],
        key: &[u8],
    ) {
        if path.as_os_str().as_bytes().contains(&b'\n') {
            return;
        }
        let site = Site::of(&self.settings.root, key);
        let (pages, trained, may_train) = {
            // Held while the records are read and written, so two workers
            // never lose each other's pages.
            let mut state = self.state();
            let mut pages = site.pages();
            let page = Page {
                // As the list keeps it: size and mtime.
                version: Version {
                    local: Local::UNKNOWN,
                    ..version
                },
                path: path.to_path_buf(),
                source: dictionary::hash(content),
            };
            if list(&mut pages, &page) {
                if let Err(e) = site.save_pages(&pages) {
                    state.cache_failed(self.settings, &e, self.log);
                }
            }
            let trained = self.expire(&site, &mut state);
            let may = due(pages.len(), &trained) && state.take_training(&site.dir, pages.len());
            (pages, trained, may)
        };
        // One compressor of those sharing the root trains at a time; the
        // others make deltas against what is trained already.
        let claim = may_train
            .then(|| Claim::take(&site.dir.join(SITE_CURRENT)).ok().flatten())
            .flatten();
        if claim.is_some() {
            if let Some(dict) = self.train(&site, &pages, trained.clone()) {
                // Listed again now that the new dictionary is recorded: a
                // page another worker listed meanwhile is here, or that
                // worker saw the new dictionary and made its own deltas.
                let pages = {
                    let _state = self.state();
                    site.pages()
                };
                self.deltas_of_pages(&pages, &dict);
                return;
            }
        }
        // The current dictionary and the one before: a browser keeps one
        // per URL, the one it fetched last; deltas against older ones
        // made earlier stay until they expire.
        let dictionaries: Vec<_> = trained
            .iter()
            .take(2)
            .filter_map(|t| self.dictionary(&site, t).map(|d| (t.hash, d)))
            .collect();
        self.deltas_against(path, meta, version, content, &dictionaries);
    }

    /// The host's dictionaries a browser may still hold; those retired
    /// longer than `LIFETIME` ago are forgotten, with their deltas.
    fn expire(&self, site: &Site, state: &mut State) -> Vec<Trained> {
        let (mut live, gone): (Vec<_>, Vec<_>) = site
            .dictionaries()
            .into_iter()
            .partition(|t| t.retired == 0 || t.retired + LIFETIME > now());
        live.sort_by_key(|t| std::cmp::Reverse(t.at));
        if gone.is_empty() {
            return live;
        }
        for t in &gone {
            state.forget_kept(self.settings, t.hash, self.log);
        }
        if let Err(e) = site.save_dictionaries(&live) {
            state.cache_failed(self.settings, &e, self.log);
        }
        live
    }

    /// A dictionary's content: kept, else (the current one) recovered
    /// from `current.dat`, checked against its hash.
    fn dictionary(&self, site: &Site, t: &Trained) -> Option<Vec<u8>> {
        let key = kept_key(t.hash);
        let kept = copy_path(&self.settings.root, &key);
        if let Some(d) = read_kept(&kept).filter(|d| dictionary::hash(d) == t.hash) {
            return Some(d);
        }
        let raw = fs::read(site.dir.join(CURRENT));
        let d = raw.ok().filter(|d| dictionary::hash(d) == t.hash)?;
        let size = keep(&kept, &d).ok()?;
        self.state().made(self.settings, key, size, self.log);
        Some(d)
    }

    /// Trains a dictionary from the listed pages and makes it the
    /// current one; its content.
    fn train(&self, site: &Site, pages: &[Page], trained: Vec<Trained>) -> Option<Vec<u8>> {
        let (samples, bytes) = samples(pages);
        // zstd's trainer wants many times the dictionary's size in samples.
        let size = DICTIONARY_SIZE.min(bytes / 8).max(1024);
        let Some(dict) = delta_codec::train(&samples, size)
            .ok()
            .filter(|d| !d.is_empty())
        else {
            let why = format!(
                "the site dictionary of {} cannot be trained from {} pages ({bytes} bytes) yet",
                site.dir.display(),
                samples.len()
            );
            // Tried again once the pages doubled (`take_training`).
            (self.log)(Level::Info, &why);
            return None;
        };
        self.install(site, &dict, trained, pages.len())?;
        (self.log)(
            Level::Notice,
            &format!(
                "site dictionary {} trained: {} bytes from {} pages ({bytes} bytes), served from {}",
                dictionary::to_hex(&dictionary::hash(&dict)),
                dict.len(),
                samples.len(),
                site.dir.join(CURRENT).display()
            ),
        );
        Some(dict)
    }

    /// Makes `dict`, trained from `pages` pages, the current dictionary:
    /// served from `current.dat`, kept (so it counts toward the cache's
    /// limit and the deltas against it go with it), and recorded, the one
    /// before retired now.
    fn install(
        &self,
        site: &Site,
        dict: &[u8],
        mut trained: Vec<Trained>,
        pages: usize,
    ) -> Option<()> {
        let hash = dictionary::hash(dict);
        let t = now();
        for old in trained.iter_mut().filter(|o| o.retired == 0) {
            old.retired = t;
        }
        trained.retain(|o| o.hash != hash);
        trained.push(Trained {
            hash,
            at: t,
            pages,
            retired: 0,
        });
        let key = kept_key(hash);
        let kept = copy_path(&self.settings.root, &key);
        let stored = keep(&kept, dict).and_then(|size| {
            self.state().made(self.settings, key, size, self.log);
            self.write_current(site, dict)?;
            site.save_dictionaries(&trained)
        });
        if let Err(e) = stored {
            self.state().cache_failed(self.settings, &e, self.log);
            return None;
        }
        Some(())
    }

    /// Writes the dictionary the module serves: as it is, and in each
    /// coding, with the encoders and levels of its copies (a browser
    /// fetches it like any resource). The codings first, so a request in
    /// between gets the old dictionary or the new one whole, in whatever
    /// coding it takes.
    fn write_current(&self, site: &Site, dict: &[u8]) -> io::Result<()> {
        for c in Coding::ALL {
            let coded = encode_vec(c, &self.settings.levels, dict)?;
            site.write(&site_current_coded(c), &coded)?;
        }
        site.write(CURRENT, dict)
    }

    /// Makes every listed page's deltas against a new dictionary, for the
    /// version each has now.
    fn deltas_of_pages(&self, pages: &[Page], dict: &[u8]) {
        let dictionaries = [(dictionary::hash(dict), dict.to_vec())];
        for p in pages {
            let Ok(pinned) = pin(&p.path, &p.version) else {
                continue;
            };
            if !compressible(p.path.as_os_str().as_bytes(), pinned.meta.len()) {
                continue;
            }
            let Ok(content) = read_pinned(&p.path, &pinned) else {
                continue;
            };
            self.deltas_against(&p.path, &pinned.meta, p.version, &content, &dictionaries);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trained(pages: usize, retired: u64) -> Trained {
        Trained {
            hash: [pages as u8; 32],
            at: 1,
            pages,
            retired,
        }
    }

    #[test]
    fn training_is_due_at_the_threshold_then_when_pages_double() {
        assert!(!due(MIN_PAGES - 1, &[]));
        assert!(due(MIN_PAGES, &[]));
        let t = [trained(20, 0), trained(16, 5)];
        assert!(!due(39, &t));
        assert!(due(40, &t));
    }

    fn page(path: &str, size: u64) -> Page {
        Page {
            version: Version {
                size,
                ..Version::NONE
            },
            path: PathBuf::from(path),
            source: dictionary::hash(format!("{path} {size}").as_bytes()),
        }
    }

    #[test]
    fn pages_are_listed_once_newest_last_and_bounded() {
        let mut pages = Vec::new();
        assert!(list(&mut pages, &page("/a.html", 1)));
        assert!(!list(&mut pages, &page("/a.html", 1)));
        assert!(list(&mut pages, &page("/b.html", 1)));
        assert!(list(&mut pages, &page("/a.html", 2)));
        assert_eq!(pages, [page("/b.html", 1), page("/a.html", 2)]);
        for i in 0..MAX_PAGES + 5 {
            list(&mut pages, &page(&format!("/p{i}.html"), 1));
        }
        assert_eq!(pages.len(), MAX_PAGES);
        assert_eq!(
            pages.last().unwrap().path,
            Path::new(&format!("/p{}.html", MAX_PAGES + 4))
        );
        // The same content at another path (another server's docroot):
        // listed once, where it was seen last.
        let copy = |p: &str| Page {
            path: PathBuf::from(p),
            ..page("/srv/a/x.html", 3)
        };
        let mut pages = vec![copy("/srv/a/x.html"), page("/srv/a/y.html", 4)];
        assert!(list(&mut pages, &copy("/srv/b/x.html")));
        assert_eq!(pages, [page("/srv/a/y.html", 4), copy("/srv/b/x.html")]);
    }

    #[test]
    fn a_listed_page_is_read_only_while_it_is_the_version_listed() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.html");
        fs::write(&p, b"public page").unwrap();
        let listed = Page {
            version: Version::of(&fs::metadata(&p).unwrap()),
            path: p.clone(),
            source: dictionary::hash(b"public page"),
        };
        assert_eq!(listed.content().as_deref(), Some(&b"public page"[..]));
        let secret = d.path().join("secret");
        fs::write(&secret, b"private bytes").unwrap();
        fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(&secret, &p).unwrap();
        assert_eq!(listed.content(), None);
    }

    #[test]
    fn records_round_trip() {
        let d = tempfile::tempdir().unwrap();
        let site = Site::of(d.path(), b"localhost:80");
        fs::create_dir_all(&site.dir).unwrap();
        let t = vec![trained(16, 7), trained(32, 0)];
        site.save_dictionaries(&t).unwrap();
        assert_eq!(site.dictionaries(), t);
        let pages = vec![page("/x y.html", 3), page("/z.html", 4)];
        site.save_pages(&pages).unwrap();
        assert_eq!(site.pages(), pages);
    }
}

//! Site dictionaries on demand: what `gzip-disk-ng train` and
//! `compress --dictionary` do, done by the compressor for a virtual host
//! with `GzipDiskNgSiteDictionary`.
//!
//! The pages a dictionary learns are a function of the host's files, not
//! of its traffic (`pages`): once a training period, a child
//! lists them under the document root, asks Apache of each whether every
//! client may GET it, and sends the verdicts (`Job::Train`). The
//! compressor lists them again, and when its list is the one judged,
//! trains from the public pages (at least `MIN_PAGES`) with zstd's
//! trainer at a size chosen from their bytes; the same files give the
//! same dictionary on every server. It is kept like an earlier version
//! (`Kind::Kept`, so it counts toward the cache's limit), written as
//! `current.dat` (the bare path) and `v-<16 hex>.dat` (the URL that
//! names it) in `sites/<64 hex SHA-256 of the host>/`, with the pages it
//! learned in `v-<16 hex>.pages`; then every page learned gets its
//! deltas against it. When the judged pages change (a file, a verdict),
//! it trains again: the new dictionary is current, and the one before
//! stays, served under its name and with the deltas against it, for as
//! long as a browser may hold it (`LIFETIME` after it stopped being
//! current). A dictionary that learned a page judged not public since is
//! withdrawn at once: its files go, and pages stop linking it. The record
//! of a host's dictionaries is `sites/<…>/dictionaries`: one line each,
//! the hash, when it was trained, from how many pages, and when it
//! stopped being current.

use super::claim::Claim;
use super::deltas::{keep, read_kept};
use super::disk::dirs_for;
use super::make::{pin, read_pinned, write_record, Ctx};
use super::state::{copy_path, kept_key, State};
use crate::key::{site_current_coded, site_dir_name, site_named, Version, SITE_CURRENT};
use crate::pages::{self, ChosenPage};
use crate::settings::Severity;
use gdn_core::coding::Coding;
use gdn_core::dictionary::{self, Hash};
use gdn_core::encode::encode_vec;
use gdn_core::train;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The file the module serves at `GzipDiskNgSiteDictionary`.
const CURRENT: &str = SITE_CURRENT;

/// Public pages a host needs for a dictionary: the trainer picks what
/// pages share, which a handful cannot show.
pub const MIN_PAGES: usize = 16;

/// Largest dictionary: a download once a day per browser, against the
/// bytes it saves on every page (docs/performance.md measures the sizes
/// on Debian's Apache manual).
pub const DICTIONARY_SIZE: usize = 512 << 10;

/// The dictionary asked of the trainer is the pages' bytes over this,
/// within 1 KiB and `DICTIONARY_SIZE`: a dictionary is worth what pages
/// share, which a quarter of their bytes holds on a templated site.
const SIZE_DIVISOR: usize = 4;

/// How long a browser may keep a dictionary: the `max-age` the module
/// serves it with. Deltas against a retrained one go this long after it
/// stopped being served.
pub const LIFETIME: u64 = 86_400;

/// The record of the judged list last acted on.
const SELECTION: &str = "selection";

/// One dictionary of a host.
#[derive(Clone, Debug, PartialEq, Eq)]
struct HostDictionary {
    hash: Hash,
    /// When it was trained, seconds since the epoch.
    at: u64,
    /// Pages it was trained from.
    pages: usize,
    /// When it stopped being the current one (0: it is).
    retired: u64,
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

    fn dictionaries(&self) -> Vec<HostDictionary> {
        let text = fs::read_to_string(self.dir.join("dictionaries")).unwrap_or_default();
        text.lines()
            .filter_map(|l| {
                let mut f = l.split(' ');
                let hash = dictionary::from_hex(f.next()?)?;
                let mut n = || f.next()?.parse::<u64>().ok();
                let (at, pages, retired) = (n()?, n()?, n()?);
                Some(HostDictionary {
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

    fn save_dictionaries(&self, d: &[HostDictionary]) -> io::Result<()> {
        let text: String = d
            .iter()
            .map(|t| {
                let hex = dictionary::to_hex(&t.hash);
                format!("{hex} {} {} {}\n", t.at, t.pages, t.retired)
            })
            .collect();
        self.write("dictionaries", text.as_bytes())
    }

    /// The pages the dictionary `h` learned, below the document root.
    fn learned(&self, h: &Hash) -> Vec<PathBuf> {
        let text = fs::read(self.dir.join(site_named(h, Some("pages")))).unwrap_or_default();
        text.split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(pages::rel_of)
            .collect()
    }

    /// The files serving the dictionary `h` under its name, in each
    /// coding and as it is.
    fn named_files(&self, h: &Hash) -> Vec<PathBuf> {
        let mut v: Vec<_> = Coding::ALL
            .iter()
            .map(|c| self.dir.join(site_named(h, Some(&c.suffixes()[0][1..]))))
            .collect();
        v.push(self.dir.join(site_named(h, None)));
        v
    }

    /// The files serving the current dictionary at the bare path.
    fn current_files(&self) -> Vec<PathBuf> {
        let mut v: Vec<_> = Coding::ALL
            .iter()
            .map(|&c| self.dir.join(site_current_coded(c)))
            .collect();
        v.push(self.dir.join(CURRENT));
        v
    }
}

/// Seconds since the epoch.
fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Removes `files`; a file already gone is no failure.
fn remove_all(files: &[PathBuf]) -> io::Result<()> {
    for f in files {
        match fs::remove_file(f) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// The public pages of a judged list: those whose bit is set.
fn public(list: &[ChosenPage], bits: &[u8]) -> Vec<ChosenPage> {
    list.iter()
        .enumerate()
        .filter(|(i, _)| pages::bit(bits, *i))
        .map(|(_, c)| c.clone())
        .collect()
}

/// The pages of `list` judged not public now.
fn private(list: &[ChosenPage], bits: &[u8]) -> Vec<PathBuf> {
    list.iter()
        .enumerate()
        .filter(|(i, _)| !pages::bit(bits, *i))
        .map(|(_, c)| c.rel.clone())
        .collect()
}

impl Ctx<'_> {
    /// Makes the deltas of the HTML page at `path` against the site
    /// dictionaries of `key` (its host) a browser may hold: the current
    /// one and the one before (a browser keeps one per URL, the one it
    /// fetched last; deltas against older ones stay until they expire).
    pub(super) fn site_page(
        &self,
        path: &Path,
        meta: &fs::Metadata,
        version: Version,
        content: &[u8],
        key: &[u8],
    ) {
        let site = Site::of(&self.settings.root, key);
        let trained = {
            let mut state = self.state();
            self.expire(&site, &mut state)
        };
        let dictionaries: Vec<_> = trained
            .iter()
            .take(2)
            .filter_map(|t| self.dictionary(&site, t).map(|d| (t.hash, d)))
            .collect();
        self.deltas_against(path, meta, version, content, &dictionaries);
    }

    /// Acts on a host's judged pages (`Job::Train`): withdraws every
    /// dictionary that learned a page judged not public now, and trains
    /// a new one when the public pages are not those of the last
    /// training.
    pub(super) fn train_site(&self, root: &Path, key: &[u8], digest: &Hash, bits: &[u8], at: i64) {
        let list = pages::candidates(root);
        if pages::digest(&list) != *digest {
            // The tree changed between the judging and now: the next
            // period judges it again.
            (self.log)(
                Severity::Debug,
                &format!("the pages under {} changed since judged", root.display()),
            );
            return;
        }
        let site = Site::of(&self.settings.root, key);
        // One compressor of those sharing the root acts on a host at a time.
        let record = site.dir.join(SELECTION);
        if let Err(e) = dirs_for(&record) {
            self.state().cache_failed(self.settings, &e, self.log);
            return;
        }
        let Ok(Some(_claim)) = Claim::take(&record) else {
            return;
        };
        // Verdicts older than those acted on (another child's, judged
        // before a change the newer ones saw) are not acted on.
        let last = fs::read_to_string(record.as_path()).unwrap_or_default();
        let mut fields = last.split_whitespace();
        let (last_selection, last_at) = (fields.next(), fields.next().and_then(|a| a.parse().ok()));
        if last_at.is_some_and(|t: i64| t > at) {
            return;
        }
        let public = public(&list, bits);
        let selection = dictionary::to_hex(&pages::digest(&public));
        let mut trained = {
            let mut state = self.state();
            self.expire(&site, &mut state)
        };
        let withdrawn = self.withdraw(&site, &mut trained, &private(&list, bits));
        let changed = withdrawn || last_selection != Some(selection.as_str());
        if changed && public.len() >= MIN_PAGES {
            let Some(dict) = self.train(&site, root, &public, trained) else {
                return;
            };
            self.deltas_of_pages(root, &public, &dict);
        }
        if let Err(e) = site.write(SELECTION, format!("{selection} {at}").as_bytes()) {
            self.state().cache_failed(self.settings, &e, self.log);
        }
    }

    /// Withdraws the dictionaries that learned one of `private`: their
    /// named files go at once (and the bare path's, for the current
    /// one), and the current one is retired, so no page links it;
    /// whether the current one was.
    fn withdraw(&self, site: &Site, trained: &mut [HostDictionary], private: &[PathBuf]) -> bool {
        if private.is_empty() {
            return false;
        }
        let mut changed = false;
        for t in trained.iter_mut() {
            let learned = site.learned(&t.hash);
            let Some(p) = learned.iter().find(|p| private.contains(p)) else {
                continue;
            };
            let mut files = site.named_files(&t.hash);
            if t.retired == 0 {
                files.extend(site.current_files());
                t.retired = now();
                changed = true;
            }
            if let Err(e) = remove_all(&files) {
                self.state().cache_failed(self.settings, &e, self.log);
            }
            (self.log)(
                Severity::Notice,
                &format!(
                    "site dictionary {} withdrawn: it learned {}, which not every client may read now",
                    dictionary::to_hex(&t.hash),
                    p.display()
                ),
            );
        }
        if changed {
            if let Err(e) = site.save_dictionaries(trained) {
                self.state().cache_failed(self.settings, &e, self.log);
            }
        }
        changed
    }

    /// The host's dictionaries a browser may still hold, newest first;
    /// those retired longer than `LIFETIME` ago are forgotten, with their
    /// files and deltas.
    fn expire(&self, site: &Site, state: &mut State) -> Vec<HostDictionary> {
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
            let mut files = site.named_files(&t.hash);
            files.push(site.dir.join(site_named(&t.hash, Some("pages"))));
            if let Err(e) = remove_all(&files) {
                state.cache_failed(self.settings, &e, self.log);
            }
        }
        if let Err(e) = site.save_dictionaries(&live) {
            state.cache_failed(self.settings, &e, self.log);
        }
        live
    }

    /// A dictionary's content: kept, else recovered from the file that
    /// serves it under its name, checked against its hash.
    fn dictionary(&self, site: &Site, t: &HostDictionary) -> Option<Vec<u8>> {
        let key = kept_key(t.hash);
        let kept = copy_path(&self.settings.root, &key);
        if let Some(d) = read_kept(&kept).filter(|d| dictionary::hash(d) == t.hash) {
            return Some(d);
        }
        let raw = fs::read(site.dir.join(site_named(&t.hash, None)));
        let d = raw.ok().filter(|d| dictionary::hash(d) == t.hash)?;
        let size = keep(&kept, &d).ok()?;
        self.state().made(self.settings, key, size, self.log);
        Some(d)
    }

    /// The content of each of `public` under `root`, in order, while each
    /// is the version judged; `None` when one changed since.
    fn read_pages(root: &Path, public: &[ChosenPage]) -> Option<Vec<Vec<u8>>> {
        public
            .iter()
            .map(|c| {
                let v = Version {
                    size: c.size,
                    mtime_us: c.mtime_us,
                    ..Version::NONE
                };
                let path = c.path(root);
                let pinned = pin(&path, &v).ok()?;
                read_pinned(&path, &pinned).ok()
            })
            .collect()
    }

    /// Trains a dictionary from the pages `public` under `root` and makes
    /// it the current one; its content. The same pages give the same
    /// bytes: the trainer is deterministic and the pages come in path
    /// order.
    fn train(
        &self,
        site: &Site,
        root: &Path,
        public: &[ChosenPage],
        trained: Vec<HostDictionary>,
    ) -> Option<Vec<u8>> {
        let samples = Self::read_pages(root, public)?;
        let bytes: usize = samples.iter().map(Vec::len).sum();
        let size = (bytes / SIZE_DIVISOR).clamp(1024, DICTIONARY_SIZE);
        let dict = train::train(&samples, size);
        if dict.is_empty() {
            let why = format!(
                "the site dictionary of {} cannot be trained from {} pages ({bytes} bytes)",
                root.display(),
                samples.len()
            );
            (self.log)(Severity::Info, &why);
            return None;
        }
        self.install(site, &dict, trained, public)?;
        (self.log)(
            Severity::Notice,
            &format!(
                "site dictionary {} trained: {} bytes from {} pages ({bytes} bytes) under {}, served from {}",
                dictionary::to_hex(&dictionary::hash(&dict)),
                dict.len(),
                samples.len(),
                root.display(),
                site.dir.join(CURRENT).display()
            ),
        );
        Some(dict)
    }

    /// Makes `dict`, trained from `public`, the current dictionary:
    /// served from `current.dat` and under its name, kept (so it counts
    /// toward the cache's limit and the deltas against it go with it),
    /// and recorded with the pages it learned, the one before retired
    /// now.
    fn install(
        &self,
        site: &Site,
        dict: &[u8],
        mut trained: Vec<HostDictionary>,
        public: &[ChosenPage],
    ) -> Option<()> {
        let hash = dictionary::hash(dict);
        let t = now();
        for old in trained.iter_mut().filter(|o| o.retired == 0) {
            old.retired = t;
        }
        trained.retain(|o| o.hash != hash);
        trained.insert(
            0,
            HostDictionary {
                hash,
                at: t,
                pages: public.len(),
                retired: 0,
            },
        );
        let mut learned = Vec::new();
        for p in public {
            learned.extend_from_slice(p.rel.as_os_str().as_bytes());
            learned.push(b'\n');
        }
        let key = kept_key(hash);
        let kept = copy_path(&self.settings.root, &key);
        let stored = keep(&kept, dict).and_then(|size| {
            self.state().made(self.settings, key, size, self.log);
            site.write(&site_named(&hash, Some("pages")), &learned)?;
            self.write_served(site, &hash, dict)?;
            site.save_dictionaries(&trained)
        });
        if let Err(e) = stored {
            self.state().cache_failed(self.settings, &e, self.log);
            return None;
        }
        Some(())
    }

    /// Writes the dictionary the module serves, under its name and at the
    /// bare path: as it is, and in each coding, with the encoders and
    /// levels of its copies (a browser fetches it like any resource). The
    /// codings first, so a request in between gets the old dictionary or
    /// the new one whole, in whatever coding it takes.
    fn write_served(&self, site: &Site, hash: &Hash, dict: &[u8]) -> io::Result<()> {
        for c in Coding::ALL {
            let coded = encode_vec(c, &self.settings.levels, dict)?;
            site.write(&site_named(hash, Some(&c.suffixes()[0][1..])), &coded)?;
            site.write(&site_current_coded(c), &coded)?;
        }
        site.write(&site_named(hash, None), dict)?;
        site.write(CURRENT, dict)
    }

    /// Makes every learned page's deltas against a new dictionary, for
    /// the version judged (named, as every copy is, by its content's
    /// digest: `deltas_against` learns it from the bytes read).
    fn deltas_of_pages(&self, root: &Path, public: &[ChosenPage], dict: &[u8]) {
        let dictionaries = [(dictionary::hash(dict), dict.to_vec())];
        for c in public {
            let path = c.path(root);
            let v = Version {
                size: c.size,
                mtime_us: c.mtime_us,
                ..Version::NONE
            };
            let Ok(pinned) = pin(&path, &v) else {
                continue;
            };
            let version = Version::of(&pinned.meta);
            let Ok(content) = read_pinned(&path, &pinned) else {
                continue;
            };
            self.deltas_against(&path, &pinned.meta, version, &content, &dictionaries);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trained(pages: usize, retired: u64) -> HostDictionary {
        HostDictionary {
            hash: [pages as u8; 32],
            at: 1,
            pages,
            retired,
        }
    }

    #[test]
    fn records_round_trip() {
        let d = tempfile::tempdir().unwrap();
        let site = Site::of(d.path(), b"localhost:80");
        fs::create_dir_all(&site.dir).unwrap();
        let t = vec![trained(16, 7), trained(32, 0)];
        site.save_dictionaries(&t).unwrap();
        assert_eq!(site.dictionaries(), t);
    }

    #[test]
    fn the_same_pages_train_the_same_bytes() {
        let pages: Vec<Vec<u8>> = (0..24u64)
            .map(|i| {
                let words = ["the ", "module ", "serves ", "pages ", "of ", "a ", "site "];
                let mut x = 100 + i;
                let text: String = (0..600)
                    .map(|_| {
                        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                        words[(x >> 33) as usize % words.len()]
                    })
                    .collect();
                format!("<html><head><title>Page {i}</title></head><body><nav>Home Docs About</nav><p>{text}</p></body></html>").into_bytes()
            })
            .collect();
        let bytes: usize = pages.iter().map(Vec::len).sum();
        let size = (bytes / SIZE_DIVISOR).clamp(1024, DICTIONARY_SIZE);
        let a = train::train(&pages, size);
        let b = train::train(&pages, size);
        assert!(!a.is_empty());
        assert_eq!(dictionary::hash(&a), dictionary::hash(&b));
    }
}

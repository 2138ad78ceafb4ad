//! The module's configuration: the directives' parsing and merge rules.
//!
//! Every field is optional so that an inner scope overrides only what it
//! sets (`config_by_field!` writes the merges); the accessors apply the
//! defaults. Parse errors leave out the directive's name: httpd's
//! dispatch (`gdn_httpd::module`) puts it in front.

use gdn_core::coding::Coding;
use gdn_core::dynamic::DEFAULT_MIN_SIZE;
use gdn_core::jitter::Secret;
use gdn_core::stream::StreamLevels;
use gdn_publish::store::Store;
use std::path::{Path, PathBuf};

/// Default name of the marker header.
pub const DEFAULT_STATUS_HEADER: &str = "Mod-Gzip-Disk-Ng";

/// `GzipDiskNgJitter`: padding appended to precompressed responses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Jitter {
    /// Largest padding, bytes (1..=max are added).
    pub max: u32,
    pub length: JitterLength,
}

/// How a padding length is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JitterLength {
    /// Drawn per response (a negative buffer in the directive).
    Random,
    /// A keyed hash of the file's first `hashed` bytes (at most
    /// `JITTER_BUFFER_MAX`), so every response of a version is alike.
    Keyed { hashed: u64 },
}

/// A scope's `GzipDiskNgJitter`: `Off` overrides an enclosing setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JitterSetting {
    Off,
    On(Jitter),
}

/// Largest `GzipDiskNgJitter` buffer: 1 MiB. The bytes hashed are read on
/// a request (once per file version), so the read must stay small.
pub const JITTER_BUFFER_MAX: i64 = 1 << 20;

/// Largest `GzipDiskNgJitterKey` file; a bigger one is not a key file.
pub const JITTER_KEY_MAX: u64 = 4096;

/// Per-server settings (server config and virtual hosts).
#[derive(Clone, Debug, Default)]
pub struct ServerConfig {
    /// `GzipDiskNgJitterKey`: the secret keying padding lengths.
    pub jitter_key: Option<Secret>,
    /// `GzipDiskNgCacheRoot`: where on-demand copies live. One cache and
    /// one compressor serve the whole Apache instance: the main server's
    /// setting is the one used.
    pub cache_root: Option<PathBuf>,
    /// `GzipDiskNgCacheMaxSize`: total bytes of copies kept.
    pub cache_max_size: Option<u64>,
    /// `GzipDiskNgCompressorWorkers`: compression threads.
    pub compressor_workers: Option<usize>,
    /// `GzipDiskNgSiteDictionary`: the URL path of the host's trained
    /// dictionary, for deltas of its pages on demand.
    pub site_dictionary: Option<String>,
    /// `GzipDiskNgSiteDictionaryPeriod`: seconds between two judgements
    /// of the pages the site dictionary learns.
    pub site_dictionary_period: Option<u32>,
    /// `GzipDiskNgDeltaStore`: published trees and their dictionary
    /// stores (`gzip-disk-ng compress --store`), whose earlier versions
    /// and catalogued dictionaries verify the trees' published deltas.
    /// Only read; every dictionary read is checked against the SHA-256
    /// its delta names.
    pub delta_stores: Option<Vec<Store>>,
}

// A virtual host without its own settings uses the main server's.
gdn_httpd::config_by_field!(ServerConfig {
    jitter_key,
    cache_root,
    cache_max_size,
    compressor_workers,
    site_dictionary,
    site_dictionary_period,
    delta_stores,
});

impl ServerConfig {
    /// Total bytes of on-demand copies kept (default 1 GiB).
    pub fn cache_max_size(&self) -> u64 {
        self.cache_max_size.unwrap_or(DEFAULT_CACHE_MAX_SIZE)
    }

    /// Seconds between two judgements of the host's pages for its site
    /// dictionary (default 300).
    pub fn site_dictionary_period(&self) -> u32 {
        self.site_dictionary_period
            .unwrap_or(DEFAULT_SITE_DICTIONARY_PERIOD)
    }

    /// Compression threads of the compressor (default 1).
    pub fn compressor_workers(&self) -> usize {
        self.compressor_workers.unwrap_or(1)
    }
}

/// `GzipDiskNgSiteDictionary /dictionary.dat`: a local URL path, in
/// printable ASCII, so it can stand in a `Link` header as it is.
pub fn parse_site_dictionary(arg: &str) -> Result<String, String> {
    let printable = arg.bytes().all(|b| b.is_ascii_graphic());
    if !arg.starts_with('/')
        || arg.starts_with("//")
        || !printable
        || arg.contains(['<', '>', '?', '#'])
    {
        return Err(format!(
            "'{arg}' is not a local URL path (it must start with a single /, \
             in printable ASCII without <, >, ? or #)"
        ));
    }
    Ok(arg.to_owned())
}

/// `GzipDiskNgDeltaStore tree store` (each relative to ServerRoot, as
/// httpd resolves file arguments): the store outside the tree (it holds
/// earlier versions, which a server of the tree would hand out) and the
/// tree outside the store.
pub fn parse_delta_store(args: &[PathBuf]) -> Result<Store, String> {
    let [tree, dir] = args else {
        return Err("takes two arguments: the published tree and its dictionary store".into());
    };
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let (t, d) = (canonical(tree), canonical(dir));
    if d.starts_with(&t) || t.starts_with(&d) {
        return Err(format!(
            "the store {} lies inside the tree {} (or the tree in it): its earlier versions \
             would be served; keep the store outside every published tree",
            dir.display(),
            tree.display()
        ));
    }
    Ok(Store::at(tree, dir.to_path_buf()))
}

/// A dictionary store must not be served: refused inside any
/// `DocumentRoot`, as the cache root is.
pub fn check_delta_store_served(store: &Path, document_roots: &[PathBuf]) -> Result<(), String> {
    match document_root_holding(store, document_roots) {
        Some(d) => Err(format!(
            "GzipDiskNgDeltaStore {} is inside DocumentRoot {}: its earlier versions would \
             be served as they are; keep the store outside every DocumentRoot",
            store.display(),
            d.display()
        )),
        None => Ok(()),
    }
}

/// The first of `document_roots` that holds `path` (both as they
/// resolve, where they exist).
fn document_root_holding(path: &Path, document_roots: &[PathBuf]) -> Option<PathBuf> {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    document_roots
        .iter()
        .map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| d.clone()))
        .find(|d| path.starts_with(d))
}

/// How often, by default, a host's pages are judged again for its site
/// dictionary: a page restricted since leaves it within this many seconds.
pub const DEFAULT_SITE_DICTIONARY_PERIOD: u32 = 300;

/// Longest `GzipDiskNgSiteDictionaryPeriod`: a day, the dictionary's
/// lifetime in a browser.
pub const MAX_SITE_DICTIONARY_PERIOD: u32 = 86_400;

/// `GzipDiskNgSiteDictionaryPeriod seconds`: 1 to a day.
pub fn parse_site_dictionary_period(arg: &str) -> Result<u32, String> {
    arg.parse()
        .ok()
        .filter(|n| (1..=MAX_SITE_DICTIONARY_PERIOD).contains(n))
        .ok_or_else(|| {
            format!("'{arg}' is not a number of seconds from 1 to {MAX_SITE_DICTIONARY_PERIOD}")
        })
}

/// `GzipDiskNgDeltaVersions N`: 0 (no deltas on demand) to 16.
pub fn parse_delta_versions(arg: &str) -> Result<u8, String> {
    arg.parse()
        .ok()
        .filter(|n| *n <= MAX_DELTA_VERSIONS)
        .ok_or_else(|| format!("'{arg}' is not a number from 0 to {MAX_DELTA_VERSIONS}"))
}

/// Most earlier versions a file or group keeps on demand: each is a
/// delta of every new version per dictionary coding, made at brotli's
/// and zstd's highest levels.
pub const MAX_DELTA_VERSIONS: u8 = 16;

/// Default `GzipDiskNgDeltaVersions`: browsers hold the version they last
/// fetched, which, for a file updated a few times between visits, is one
/// of the last few.
pub const DEFAULT_DELTA_VERSIONS: u8 = 3;

/// Default `GzipDiskNgCacheMaxSize`: 1 GiB, some 20 times the compressed
/// size of Debian's whole Apache manual in all three codings.
pub const DEFAULT_CACHE_MAX_SIZE: u64 = 1 << 30;

/// `GzipDiskNgCacheMaxSize 512M`: bytes, with an optional K, M or G
/// (powers of 1024).
pub fn parse_size(arg: &str) -> Result<u64, String> {
    let bad = || format!("'{arg}' is not a size (bytes, or with K, M or G)");
    let (num, unit) = match arg.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&arg[..i], c.to_ascii_uppercase()),
        _ => (arg, 'B'),
    };
    let shift = match unit {
        'B' => 0,
        'K' => 10,
        'M' => 20,
        'G' => 30,
        _ => return Err(bad()),
    };
    let n: u64 = num.parse().map_err(|_| bad())?;
    n.checked_mul(1 << shift).filter(|&n| n > 0).ok_or_else(bad)
}

/// `GzipDiskNgCompressorWorkers N`: 1 to 64 threads.
pub fn parse_workers(arg: &str) -> Result<usize, String> {
    arg.parse()
        .ok()
        .filter(|n| (1..=64).contains(n))
        .ok_or_else(|| format!("'{arg}' is not a number from 1 to 64"))
}

/// `GzipDiskNgCacheRoot DIR`: a directory, canonical. A missing one is
/// taken as it is written: check_config warns, naming the remedy, and
/// on-demand compression stays off (see `ondemand::root::unusable`).
pub fn check_cache_root(dir: &Path) -> Result<PathBuf, String> {
    let shown = dir.display();
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(dir.to_path_buf()),
        Err(e) => Err(format!("{shown}: {e}")),
        Ok(m) if !m.is_dir() => Err(format!("{shown} is not a directory")),
        Ok(_) => std::fs::canonicalize(dir).map_err(|e| format!("{shown}: {e}")),
    }
}

/// The cache root must not be served: refused inside any `DocumentRoot`.
pub fn check_cache_root_served(root: &Path, document_roots: &[PathBuf]) -> Result<(), String> {
    match document_root_holding(root, document_roots) {
        Some(d) => Err(format!(
            "GzipDiskNgCacheRoot {} is inside DocumentRoot {}: the cache would be served \
             as it is; choose a directory outside every DocumentRoot",
            root.display(),
            d.display()
        )),
        None => Ok(()),
    }
}

/// Whether a URL mapping (`Alias`, `AliasMatch`, `ScriptAlias`,
/// `ScriptAliasMatch`, `UserDir`, as `url_mappings` gives them) could
/// reach the cache root `root`: an error naming the directive where it
/// surely can, a warning where it may (a `UserDir` path with a `*`,
/// whose users' directories are not known here). A `RewriteRule` to a
/// path is not seen here: the request-time guard refuses those.
pub fn check_cache_root_mapped(
    root: &Path,
    mappings: &[(String, String)],
) -> Result<Vec<String>, String> {
    let mut warnings = Vec::new();
    for (directive, target) in mappings {
        let said = |how: &str| {
            format!(
                "GzipDiskNgCacheRoot {} {how} {directive} {target}: its copies would be \
                 served as they are; choose a directory no URL maps to",
                root.display()
            )
        };
        let userdir = directive.eq_ignore_ascii_case("UserDir");
        if userdir && !target.starts_with('/') {
            // A name under each user's home: any such component.
            if root.components().any(|c| c.as_os_str() == target.as_str()) {
                return Err(said("may be reached through"));
            }
            continue;
        }
        // The fixed part of the target: up to a `$1` or a `*`.
        let fixed = target.split(['$', '*']).next().unwrap_or("");
        let wild = fixed.len() < target.len();
        let dir = match (wild, fixed.rfind('/')) {
            (true, Some(i)) => &fixed[..=i],
            _ => fixed,
        };
        let dir = Path::new(dir);
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        if !(root.starts_with(&dir) || (!wild && dir.starts_with(root))) {
            continue;
        }
        if userdir {
            warnings.push(said("may be inside a directory of"));
        } else {
            return Err(said("is reached through"));
        }
    }
    Ok(warnings)
}

/// Reads a `GzipDiskNgJitterKey` file: its bytes, as they are, are the key,
/// so the same file on every server gives the same padding and ETags.
pub fn load_jitter_key(path: &Path) -> Result<Secret, String> {
    let shown = path.display();
    let fail = |why: String| format!("cannot use {shown}: {why}");
    let meta = std::fs::metadata(path).map_err(|e| fail(e.to_string()))?;
    if !meta.is_file() {
        return Err(fail("not a regular file".into()));
    }
    if meta.len() > JITTER_KEY_MAX {
        return Err(fail(format!("larger than {JITTER_KEY_MAX} bytes")));
    }
    let key = std::fs::read(path).map_err(|e| fail(e.to_string()))?;
    if key.is_empty() {
        return Err(fail(
            "the file is empty (write e.g. 32 random bytes into it)".into(),
        ));
    }
    Ok(Secret::new(&key))
}

/// The marker header setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StatusHeader {
    Off,
    Named(String),
}

/// `GzipDiskNgUseAsDictionary`: offer responses as dictionaries for
/// later requests (RFC 9842 `Use-As-Dictionary`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UseAsDictionary {
    Off,
    /// A pattern: the header value, serialized once at configuration
    /// time, and the pattern, which names the versioned group on demand.
    Header {
        value: String,
        pattern: String,
    },
    /// `self`: the request's own path is the pattern, with this `id`.
    OwnPath {
        id: Option<String>,
    },
}

/// Characters with a meaning in a URL pattern, escaped in a literal path.
const URL_PATTERN_SPECIAL: &[u8] = b"\\*:(){}?+";

/// `GzipDiskNgUseAsDictionary Off | <match pattern>|self [<id>]`
pub fn parse_use_as_dictionary(args: &[&str]) -> Result<UseAsDictionary, String> {
    const USAGE: &str = "takes Off, or a match pattern \
         (a path such as /assets/app.*.js, or self) and an optional id";
    let (pattern, id) = match args {
        [off] if off.eq_ignore_ascii_case("off") => return Ok(UseAsDictionary::Off),
        [p] => (*p, None),
        [p, id] => (*p, Some(*id)),
        _ => return Err(USAGE.into()),
    };
    if let Some(id) = id {
        if id.len() > 1024 || sfv::StringRef::from_str(id).is_err() {
            return Err(format!(
                "id '{id}' is not printable ASCII of at most 1024 bytes"
            ));
        }
    }
    if pattern == "self" {
        return Ok(UseAsDictionary::OwnPath {
            id: id.map(str::to_owned),
        });
    }
    if !pattern.starts_with('/') || pattern.contains(['(', ')']) {
        return Err(format!(
            "'{pattern}' is not a same-origin path pattern \
             (it must start with / and browsers refuse regular-expression groups)"
        ));
    }
    use_as_dictionary_header(pattern, id)
        .map(|value| UseAsDictionary::Header {
            value,
            pattern: pattern.to_owned(),
        })
        .ok_or_else(|| format!("'{pattern}' is not printable ASCII"))
}

/// The `Use-As-Dictionary` value for a pattern and optional id; `None`
/// when either is not a structured-field string (printable ASCII).
pub fn use_as_dictionary_header(pattern: &str, id: Option<&str>) -> Option<String> {
    let mut dict = sfv::DictSerializer::new();
    let _ = dict.bare_item(
        sfv::key_ref("match"),
        sfv::StringRef::from_str(pattern).ok()?,
    );
    if let Some(id) = id {
        let _ = dict.bare_item(sfv::key_ref("id"), sfv::StringRef::from_str(id).ok()?);
    }
    dict.finish()
}

/// A literal URL path as a URL pattern matching exactly it.
pub fn literal_url_pattern(path: &str) -> String {
    let mut out = String::with_capacity(path.len() + 4);
    for ch in path.chars() {
        if ch.is_ascii() && URL_PATTERN_SPECIAL.contains(&(ch as u8)) {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

/// What the configuration says for one request, read once by the module
/// and handed down with it.
#[derive(Clone, Copy)]
pub struct Settings<'r> {
    pub dir: &'r DirConfig,
    /// The key for keyed jitter lengths, where jitter is on.
    pub secret: Option<&'r Secret>,
    /// `GzipDiskNgSiteDictionary` of the request's virtual host.
    pub site_dictionary: Option<&'r str>,
    /// `GzipDiskNgSiteDictionaryPeriod` of the request's virtual host.
    pub site_period: u32,
    /// `GzipDiskNgDeltaStore`s of the request's virtual host.
    pub delta_stores: &'r [Store],
}

/// The first of `stores` whose tree holds the file `file`.
pub fn store_for<'a>(stores: &'a [Store], file: &std::ffi::CStr) -> Option<&'a Store> {
    use std::os::unix::ffi::OsStrExt;
    let file = Path::new(std::ffi::OsStr::from_bytes(file.to_bytes()));
    stores.iter().find(|s| s.relative(file).is_some())
}

/// One scope's settings, as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirConfig {
    /// Allowed codings in preference order.
    pub encodings: Option<Vec<Coding>>,
    pub decompress: Option<bool>,
    pub status_header: Option<StatusHeader>,
    pub jitter: Option<JitterSetting>,
    pub use_as_dictionary: Option<UseAsDictionary>,
    /// `GzipDiskNgOnDemand`: compress into the cache what has no sibling.
    pub on_demand: Option<bool>,
    /// `GzipDiskNgDeltaVersions`: earlier versions kept for deltas on
    /// demand.
    pub delta_versions: Option<u8>,
    /// `GzipDiskNgFilterLevels`: the output filter's level per coding.
    pub filter_levels: Option<StreamLevels>,
    /// `GzipDiskNgFilterMinSize`: the smallest body the filter codes.
    pub filter_min_size: Option<u64>,
    /// `GzipDiskNgFilterLoadLimit`: the load average (hundredths) from
    /// which the filter codes at cheaper levels; 0: never.
    pub filter_load_limit: Option<u32>,
}

// An inner scope overrides the settings it sets.
gdn_httpd::config_by_field!(DirConfig {
    encodings,
    decompress,
    status_header,
    jitter,
    use_as_dictionary,
    on_demand,
    delta_versions,
    filter_levels,
    filter_min_size,
    filter_load_limit,
});

impl DirConfig {
    /// Whether on-demand compression is on (default off).
    pub fn on_demand(&self) -> bool {
        self.on_demand.unwrap_or(false)
    }

    /// Earlier versions kept for deltas on demand (default 3; 0: none).
    pub fn delta_versions(&self) -> u8 {
        self.delta_versions.unwrap_or(DEFAULT_DELTA_VERSIONS)
    }

    /// Whether, among equal q, the smallest representation goes first:
    /// the default, unless `GzipDiskNgEncodings` set an order of its own.
    pub fn smallest_first(&self) -> bool {
        self.encodings.is_none()
    }

    /// Allowed codings in preference order.
    pub fn encodings(&self) -> &[Coding] {
        self.encodings.as_deref().unwrap_or(&Coding::ALL)
    }

    /// The output filter's levels (default `StreamLevels::default`).
    pub fn filter_levels(&self) -> StreamLevels {
        self.filter_levels.unwrap_or_default()
    }

    /// The smallest body the output filter codes (default 256 bytes).
    pub fn filter_min_size(&self) -> u64 {
        self.filter_min_size.unwrap_or(DEFAULT_MIN_SIZE)
    }

    /// The load average, in hundredths, from which the output filter
    /// codes at cheaper levels (`None`: off, the default).
    pub fn filter_load_limit(&self) -> Option<u32> {
        self.filter_load_limit.filter(|&l| l > 0)
    }

    /// Whether decompression on the fly is on.
    pub fn decompress(&self) -> bool {
        self.decompress.unwrap_or(true)
    }

    /// The marker header name, if any.
    pub fn status_header(&self) -> Option<&str> {
        match &self.status_header {
            None => Some(DEFAULT_STATUS_HEADER),
            Some(StatusHeader::Off) => None,
            Some(StatusHeader::Named(n)) => Some(n),
        }
    }

    /// The dictionary offer, if on.
    pub fn use_as_dictionary(&self) -> Option<&UseAsDictionary> {
        self.use_as_dictionary
            .as_ref()
            .filter(|u| **u != UseAsDictionary::Off)
    }

    /// The jitter setting, if on.
    pub fn jitter(&self) -> Option<Jitter> {
        match self.jitter {
            Some(JitterSetting::On(j)) => Some(j),
            _ => None,
        }
    }
}

/// `GzipDiskNgFilterLevels zstd=6 dcz=10 br=5 dcb=5 gzip=6`: any of them, the
/// others keep their defaults (or the enclosing scope's list as a whole
/// is replaced: one line says every level that scope uses).
pub fn parse_filter_levels(args: &[&str]) -> Result<StreamLevels, String> {
    if args.is_empty() {
        return Err(
            "needs coding=level pairs: zstd=1..19 dcz=1..19 br=0..11 dcb=0..11 gzip=1..9".into(),
        );
    }
    let mut l = StreamLevels::default();
    for a in args {
        let bad = || {
            format!(
                "'{a}' is not coding=level (zstd=1..19, dcz=1..19, br=0..11, dcb=0..11, gzip=1..9)"
            )
        };
        let (c, n) = a.split_once('=').ok_or_else(bad)?;
        let n: u32 = n.parse().map_err(|_| bad())?;
        if c.eq_ignore_ascii_case("dcz") && (1..=19).contains(&n) {
            l.dcz = n as i32;
            continue;
        }
        if c.eq_ignore_ascii_case("dcb") && n <= 11 {
            l.dcb = n;
            continue;
        }
        match (Coding::from_token(c), n) {
            (Some(Coding::Zstd), 1..=19) => l.zstd = n as i32,
            (Some(Coding::Br), 0..=11) => l.brotli_quality = n,
            (Some(Coding::Gzip), 1..=9) => l.gzip = n,
            _ => return Err(bad()),
        }
    }
    Ok(l)
}

/// `GzipDiskNgFilterMinSize 256`: bytes, at most 1 MiB (what the filter
/// holds back before it knows a body is that long).
pub fn parse_filter_min_size(arg: &str) -> Result<u64, String> {
    match arg.parse::<u64>() {
        Ok(n) if n <= 1 << 20 => Ok(n),
        _ => Err(format!("'{arg}' is not a size in bytes from 0 to 1048576")),
    }
}

/// `GzipDiskNgFilterLoadLimit 4.0`: a load average (one minute), with
/// at most two decimals; `Off` (or 0) for none.
pub fn parse_filter_load_limit(arg: &str) -> Result<u32, String> {
    if arg.eq_ignore_ascii_case("off") {
        return Ok(0);
    }
    let bad = || format!("'{arg}' is not Off or a load average such as 4 or 2.5");
    let (whole, frac) = arg.split_once('.').unwrap_or((arg, ""));
    if frac.len() > 2 || whole.is_empty() || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let whole: u32 = whole.parse().map_err(|_| bad())?;
    let frac: u32 = format!("{frac:0<2}").parse().map_err(|_| bad())?;
    whole
        .checked_mul(100)
        .and_then(|w| w.checked_add(frac))
        .filter(|&l| l <= 100_000)
        .ok_or_else(bad)
}

/// `GzipDiskNgEncodings zstd br gzip`
pub fn parse_encodings(args: &[&str]) -> Result<Vec<Coding>, String> {
    if args.is_empty() {
        return Err("needs one or more of: zstd br gzip".into());
    }
    let mut out = Vec::new();
    for a in args {
        let c = Coding::from_token(a)
            .ok_or_else(|| format!("unknown coding '{a}' (allowed: zstd br gzip)"))?;
        if out.contains(&c) {
            return Err(format!("'{a}' listed twice"));
        }
        out.push(c);
    }
    Ok(out)
}

/// `GzipDiskNgStatusHeader On|Off|<header-name>`
pub fn parse_status_header(arg: &str) -> Result<StatusHeader, String> {
    if arg.eq_ignore_ascii_case("on") {
        Ok(StatusHeader::Named(DEFAULT_STATUS_HEADER.into()))
    } else if arg.eq_ignore_ascii_case("off") {
        Ok(StatusHeader::Off)
    } else if !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    {
        Ok(StatusHeader::Named(arg.into()))
    } else {
        Err(format!("'{arg}' is not On, Off or a header field name"))
    }
}

/// `GzipDiskNgJitter Off | <max-bytes> [<buffer-bytes>] [paranoid]`
pub fn parse_jitter(args: &[&str]) -> Result<JitterSetting, String> {
    const USAGE: &str = "takes Off, or <max-bytes 1..65536> \
         [<buffer-bytes up to 1048576 (1 MiB), negative: random>] [paranoid]";
    match args {
        [off] if off.eq_ignore_ascii_case("off") => return Ok(JitterSetting::Off),
        [] => return Err(USAGE.into()),
        _ => {}
    }
    let mut rest = args;
    // Accepted for old configurations: the length is always HMAC-SHA256.
    if let [head @ .., last] = rest {
        if last.eq_ignore_ascii_case("paranoid") {
            rest = head;
        }
    }
    let (max, buffer) = match rest {
        [m] => (*m, None),
        [m, b] => (*m, Some(*b)),
        _ => return Err(USAGE.into()),
    };
    let max: u32 = max
        .parse()
        .ok()
        .filter(|m| (1..=65536).contains(m))
        .ok_or_else(|| format!("{USAGE}; got max '{max}'"))?;
    let buffer: i64 = match buffer {
        None => 0,
        Some(b) => b
            .parse()
            .map_err(|_| format!("{USAGE}; got buffer '{b}'"))?,
    };
    if buffer > JITTER_BUFFER_MAX {
        return Err(format!(
            "buffer {buffer} exceeds the maximum of \
             {JITTER_BUFFER_MAX} bytes (1 MiB)"
        ));
    }
    let length = match buffer {
        b if b < 0 => JitterLength::Random,
        0 => JitterLength::Keyed { hashed: 64 * 1024 },
        b => JitterLength::Keyed { hashed: b as u64 },
    };
    Ok(JitterSetting::On(Jitter { max, length }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_settings_parse_as_documented() {
        assert_eq!(parse_filter_load_limit("4"), Ok(400));
        assert_eq!(parse_filter_load_limit("2.5"), Ok(250));
        assert_eq!(parse_filter_load_limit("0.75"), Ok(75));
        assert_eq!(parse_filter_load_limit("Off"), Ok(0));
        for bad in ["", ".5", "2.555", "-1", "x", "2.x", "5000"] {
            assert!(parse_filter_load_limit(bad).is_err(), "{bad}");
        }
        let l = parse_filter_levels(&["zstd=3", "gzip=9"]).expect("levels");
        assert_eq!((l.zstd, l.dcz, l.brotli_quality, l.gzip), (3, 10, 5, 9));
        let l = parse_filter_levels(&["dcz=16", "dcb=9"]).expect("levels");
        assert_eq!((l.zstd, l.dcz, l.brotli_quality, l.dcb), (6, 16, 5, 9));
        for bad in [
            &["zstd=0"][..],
            &["dcz=0"],
            &["dcz=20"],
            &["dcb=12"],
            &["br=12"],
            &["gzip=10"],
            &["deflate=1"],
            &["zstd"],
            &[],
        ] {
            assert!(parse_filter_levels(bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse_filter_min_size("0"), Ok(0));
        assert!(parse_filter_min_size("1048577").is_err());
    }
    use gdn_httpd::Config;

    #[test]
    fn defaults() {
        let c = DirConfig::default();
        assert_eq!(c.encodings(), &Coding::ALL);
        assert!(c.smallest_first());
        assert!(c.decompress());
        assert_eq!(c.status_header(), Some(DEFAULT_STATUS_HEADER));
        assert_eq!(c.jitter(), None);
    }

    #[test]
    fn merge_is_field_by_field() {
        let outer = DirConfig {
            encodings: Some(vec![Coding::Gzip]),
            decompress: Some(false),
            ..Default::default()
        };
        let inner = DirConfig {
            decompress: Some(true),
            status_header: Some(StatusHeader::Off),
            ..Default::default()
        };
        let m = outer.merge(&inner);
        assert_eq!(m.encodings(), &[Coding::Gzip]);
        // An order set outside stays fixed inside, even the default one.
        assert!(!m.smallest_first());
        let all = DirConfig {
            encodings: Some(Coding::ALL.to_vec()),
            ..Default::default()
        };
        assert!(!DirConfig::default().merge(&all).smallest_first());
        assert!(!all.merge(&inner).smallest_first());
        assert!(DirConfig::default().merge(&inner).smallest_first());
        assert!(m.decompress());
        assert_eq!(m.status_header(), None);
        let back = inner.merge(&DirConfig::default());
        assert_eq!(back, inner);
    }

    /// An unset scope is skipped by the merge: merging with it must give
    /// the other side, either way round.
    #[test]
    fn an_unset_scope_merges_to_the_other() {
        let unset = DirConfig::default();
        assert!(unset.is_unset());
        let each = [
            DirConfig {
                encodings: Some(vec![Coding::Br]),
                ..Default::default()
            },
            DirConfig {
                decompress: Some(true),
                ..Default::default()
            },
            DirConfig {
                status_header: Some(StatusHeader::Off),
                ..Default::default()
            },
            DirConfig {
                jitter: Some(JitterSetting::Off),
                ..Default::default()
            },
            DirConfig {
                use_as_dictionary: Some(UseAsDictionary::Off),
                ..Default::default()
            },
            DirConfig {
                on_demand: Some(false),
                ..Default::default()
            },
        ];
        for c in each {
            assert!(!c.is_unset(), "{c:?}");
            assert_eq!(unset.merge(&c), c);
            assert_eq!(c.merge(&unset), c);
        }
    }

    /// What a merged scope owns follows from its fields' types: lists and
    /// strings need dropping, flags and jitter do not.
    #[test]
    fn heap_ownership_follows_the_fields() {
        assert!(!DirConfig::default().needs_drop());
        let flags = DirConfig {
            decompress: Some(false),
            jitter: Some(JitterSetting::Off),
            on_demand: Some(true),
            ..Default::default()
        };
        assert!(!flags.needs_drop());
        for owning in [
            DirConfig {
                encodings: Some(vec![Coding::Br]),
                ..Default::default()
            },
            DirConfig {
                status_header: Some(StatusHeader::Off),
                ..Default::default()
            },
            DirConfig {
                use_as_dictionary: Some(UseAsDictionary::Off),
                ..Default::default()
            },
        ] {
            assert!(owning.needs_drop(), "{owning:?}");
            assert!(flags.merge(&owning).needs_drop());
        }
        let server = ServerConfig {
            cache_max_size: Some(5),
            ..Default::default()
        };
        assert!(!server.needs_drop() && !server.is_unset());
        assert!(ServerConfig::default().is_unset());
    }

    #[test]
    fn encodings_parse() {
        assert_eq!(
            parse_encodings(&["gzip", "BR"]).unwrap(),
            vec![Coding::Gzip, Coding::Br]
        );
        assert!(parse_encodings(&["deflate"])
            .unwrap_err()
            .contains("deflate"));
        assert!(parse_encodings(&["gzip", "gzip"]).is_err());
        assert!(parse_encodings(&[]).is_err());
    }

    #[test]
    fn status_header_parse() {
        assert_eq!(parse_status_header("off").unwrap(), StatusHeader::Off);
        assert_eq!(
            parse_status_header("X-Precompressed").unwrap(),
            StatusHeader::Named("X-Precompressed".into())
        );
        assert!(parse_status_header("bad header").is_err());
    }

    #[test]
    fn jitter_parse() {
        assert_eq!(parse_jitter(&["Off"]).unwrap(), JitterSetting::Off);
        assert_eq!(
            parse_jitter(&["32"]).unwrap(),
            JitterSetting::On(Jitter {
                max: 32,
                length: JitterLength::Keyed { hashed: 65536 }
            })
        );
        assert_eq!(
            parse_jitter(&["32", "-1", "paranoid"]).unwrap(),
            JitterSetting::On(Jitter {
                max: 32,
                length: JitterLength::Random
            })
        );
        assert_eq!(
            parse_jitter(&["8", "paranoid"]).unwrap(),
            JitterSetting::On(Jitter {
                max: 8,
                length: JitterLength::Keyed { hashed: 65536 }
            })
        );
        for bad in [
            &["0"][..],
            &["x"],
            &["1", "2", "3"],
            &[],
            &["70000"],
            &["5", "z"],
            &["32", "1048577"],
        ] {
            assert!(parse_jitter(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            parse_jitter(&["32", "1048576"]).unwrap(),
            JitterSetting::On(Jitter {
                max: 32,
                length: JitterLength::Keyed { hashed: 1 << 20 }
            })
        );
        assert!(parse_jitter(&["32", "2000000"])
            .unwrap_err()
            .contains("1 MiB"));
    }

    #[test]
    fn jitter_key_files() {
        let d = tempfile::tempdir().unwrap();
        let k = d.path().join("key");
        std::fs::write(&k, b"secret one").unwrap();
        let a = load_jitter_key(&k).unwrap();
        assert_eq!(a, Secret::new(b"secret one"));
        let e = load_jitter_key(&d.path().join("missing")).unwrap_err();
        assert!(e.contains("missing") && e.contains("cannot use"), "{e}");
        std::fs::write(&k, b"").unwrap();
        assert!(load_jitter_key(&k).unwrap_err().contains("empty"));
        assert!(load_jitter_key(d.path()).unwrap_err().contains("regular"));
        std::fs::write(&k, vec![7u8; 5000]).unwrap();
        assert!(load_jitter_key(&k).unwrap_err().contains("larger"));
        let main = ServerConfig {
            jitter_key: Some(a.clone()),
            ..ServerConfig::default()
        };
        assert_eq!(main.merge(&ServerConfig::default()).jitter_key, Some(a));
        assert!(
            format!("{main:?}").contains("redacted"),
            "no secret in logs"
        );
    }

    #[test]
    fn cache_settings_parse_and_refuse_what_would_be_served() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("512K"), Ok(512 << 10));
        assert_eq!(parse_size("64m"), Ok(64 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        for bad in ["", "0", "1T", "x", "-5M", "99999999999G"] {
            assert!(
                parse_size(bad).unwrap_err().contains("is not a size"),
                "{bad}"
            );
        }
        assert_eq!(parse_workers("4"), Ok(4));
        assert!(parse_workers("0").is_err() && parse_workers("65").is_err());
        let d = tempfile::tempdir().unwrap();
        let root = check_cache_root(d.path()).unwrap();
        // Missing: taken as written; check_config warns (root::unusable).
        let missing = d.path().join("missing");
        assert_eq!(check_cache_root(&missing), Ok(missing.clone()));
        std::fs::write(d.path().join("file"), b"x").unwrap();
        assert!(check_cache_root(&d.path().join("file"))
            .unwrap_err()
            .contains("not a directory"));
        let parent = root.parent().unwrap().to_path_buf();
        let e = check_cache_root_served(&root, &[PathBuf::from("/srv/none"), parent]).unwrap_err();
        assert!(e.contains("inside DocumentRoot"), "{e}");
        assert!(check_cache_root_served(&root, &[PathBuf::from("/srv/none")]).is_ok());
        let merged = ServerConfig::default().merge(&ServerConfig {
            cache_max_size: Some(5),
            ..ServerConfig::default()
        });
        assert_eq!(
            (merged.cache_max_size(), merged.compressor_workers()),
            (5, 1)
        );
    }

    #[test]
    fn use_as_dictionary_parse() {
        assert_eq!(
            parse_use_as_dictionary(&["Off"]).unwrap(),
            UseAsDictionary::Off
        );
        assert_eq!(
            parse_use_as_dictionary(&["/assets/app.*.js"]).unwrap(),
            UseAsDictionary::Header {
                value: r#"match="/assets/app.*.js""#.into(),
                pattern: "/assets/app.*.js".into()
            }
        );
        assert_eq!(
            parse_use_as_dictionary(&["/a/*", "v1"]).unwrap(),
            UseAsDictionary::Header {
                value: r#"match="/a/*", id="v1""#.into(),
                pattern: "/a/*".into()
            }
        );
        assert_eq!(
            parse_use_as_dictionary(&["self", "x"]).unwrap(),
            UseAsDictionary::OwnPath {
                id: Some("x".into())
            }
        );
        for bad in [
            &[][..],
            &["app.js"],
            &["/a/(\\d+).js"],
            &["/a", "b", "c"],
            &["/caf\u{e9}"],
            &["/a", "\u{7f}"],
        ] {
            assert!(parse_use_as_dictionary(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            use_as_dictionary_header(&literal_url_pattern("/a b/x*.js?"), None).unwrap(),
            r#"match="/a b/x\\*.js\\?""#
        );
        let outer = DirConfig {
            use_as_dictionary: Some(UseAsDictionary::OwnPath { id: None }),
            ..Default::default()
        };
        let off = DirConfig {
            use_as_dictionary: Some(UseAsDictionary::Off),
            ..Default::default()
        };
        assert!(outer
            .merge(&DirConfig::default())
            .use_as_dictionary()
            .is_some());
        assert!(outer.merge(&off).use_as_dictionary().is_none());
    }
}

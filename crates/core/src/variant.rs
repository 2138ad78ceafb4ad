//! The decision, pure and allocation-free: request facts in, one ordered
//! list of candidates out. Which representation answers a request (a
//! delta, a precompressed sibling, the original, a decoded sibling) or
//! which error does. `respond` walks the list once, looking each file up
//! when its candidate is reached and moving on when it is missing, stale,
//! unreadable or vanished.

use crate::coding::{Coding, DeltaCoding};
use crate::negotiate::{Accepted, Ranked};
use crate::representation::Representation;

/// What the handler knows of a regular file on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMeta {
    /// Modification time, microseconds since the epoch.
    pub mtime: i64,
    pub size: u64,
}

/// One way to answer, tried in the order `candidates` gives: a
/// representation to look for (`offers` says which it may resolve into),
/// or an answer that is none. Candidates that name a file are looked up
/// when reached, so the common case (the client's preferred coding,
/// fresh) costs one stat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Candidate {
    /// Send the delta against the dictionary the client announced (RFC
    /// 9842), if it exists and is fresh.
    Delta(DeltaCoding),
    /// Send this coding's sibling as is, if it exists and is fresh.
    Sibling(Coding),
    /// Send the on-demand copy of the original in this coding, if the
    /// cache holds one for the original's version (else ask for it).
    Cached(Coding),
    /// Send the original file.
    Original,
    /// Decode this coding's sibling and send identity; with `Window::Small`
    /// only if decoding it needs a small window (zstd, which otherwise
    /// gives way to gzip, whose 32 KiB are less).
    Decode(Coding, Window),
    /// 406, listing the codings there are, if any sibling exists
    /// (decompression off).
    NotAcceptable,
    /// Neither the original nor a usable sibling exists (or, if a sibling
    /// exists, none could be decoded).
    NotFound,
    /// OPTIONS, answered as core answers it.
    Options,
    /// A method other than GET, HEAD or OPTIONS (405).
    MethodNotAllowed,
    /// A method Apache does not know (501).
    NotImplemented,
    /// Path info after a file, which the configuration does not accept (404).
    PathInfo,
}

impl Candidate {
    /// Whether this candidate may be answered by `r`: a delta published
    /// or made on demand, a decode on the fly or from its cached copy;
    /// the candidates that are no representation by none.
    pub fn offers(self, r: Representation) -> bool {
        use Representation as R;
        match self {
            Candidate::Delta(d) => r == R::Delta(d) || r == R::CachedDelta(d),
            Candidate::Sibling(c) => r == R::Sibling(c),
            Candidate::Cached(c) => r == R::Cached(c),
            Candidate::Original => r == R::Original,
            Candidate::Decode(c, _) => r == R::Decoded(c) || r == R::DecodedCopy(c),
            Candidate::NotAcceptable
            | Candidate::NotFound
            | Candidate::Options
            | Candidate::MethodNotAllowed
            | Candidate::NotImplemented
            | Candidate::PathInfo => false,
        }
    }
}

/// How much history a `Decode` candidate may need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    Small,
    Any,
}

/// On demand, a sibling is decoded once into the cache and then served
/// from there, whichever it was: gzip first, as the sibling most sites
/// publish, so the common hit looks up one sibling, not three.
const CACHED_DECODE_ORDER: [(Coding, Window); 3] = [
    (Coding::Gzip, Window::Any),
    (Coding::Zstd, Window::Any),
    (Coding::Br, Window::Any),
];

/// Decoding order: fastest first (zstd, then gzip, then brotli with its
/// costly set-up), but a zstd sibling with a large window after gzip, so
/// memory stays small.
const DECODE_ORDER: [(Coding, Window); 4] = [
    (Coding::Zstd, Window::Small),
    (Coding::Gzip, Window::Any),
    (Coding::Zstd, Window::Any),
    (Coding::Br, Window::Any),
];

/// The request's method, as the decision cares about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// GET, and HEAD (which Apache reports as GET).
    Get,
    Options,
    /// A method Apache does not know at all.
    Invalid,
    Other,
}

/// The answer before any file is looked at, as core's handler gives it;
/// `None` for a GET (or HEAD) that the files decide.
pub fn before_files(method: Method, rejected_path_info: bool) -> Option<Candidate> {
    match method {
        Method::Get if rejected_path_info => Some(Candidate::PathInfo),
        Method::Get => None,
        Method::Options => Some(Candidate::Options),
        Method::Invalid => Some(Candidate::NotImplemented),
        Method::Other => Some(Candidate::MethodNotAllowed),
    }
}

/// The dictionary codings the client names with q > 0, best first
/// (equal q: dcz, then dcb).
pub fn delta_codings(accepted: &Accepted) -> [Option<(DeltaCoding, u16)>; 2] {
    let [a, b] = DeltaCoding::ALL.map(|d| (d, accepted.delta_q(d)));
    if a.1 == 0 && b.1 == 0 {
        return [None; 2];
    }
    let ordered = if b.1 > a.1 { [b, a] } else { [a, b] };
    ordered.map(|(d, q)| (q > 0).then_some((d, q)))
}

/// The facts a decision needs.
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'a> {
    pub original: Option<FileMeta>,
    /// Codings the client accepts, best first, already limited to the
    /// codings the configuration allows.
    pub ranked: Ranked,
    /// The codings the configuration allows.
    pub allowed: &'a [Coding],
    /// The q the client states for identity: an existing original is sent
    /// before any coding the client likes less.
    pub identity_preference: u16,
    /// Whether to decompress when the original is missing.
    pub decompress: bool,
    /// Dictionary codings the client accepts, best first, when it
    /// announced a dictionary.
    pub deltas: [Option<(DeltaCoding, u16)>; 2],
    /// Whether the original is compressed on demand: a coding without a
    /// fresh sibling is then sent from the cache.
    pub cache: bool,
    /// The representations' sizes, where the smallest goes first among
    /// equal q (the default order); `None`: the server's fixed order
    /// (`GzipDiskNgEncodings` set, or no original to key sizes by).
    pub sizes: Option<Sizes>,
}

/// What is known of one representation's size: an ordering hint, never
/// a reason to send it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Size {
    #[default]
    Unknown,
    /// Neither a fresh sibling nor a cached copy.
    Absent,
    Bytes(u64),
}

/// The sizes of the representations of one file version: per coding
/// (`Coding::index`) the fresh sibling's, else the cached copy's, and per
/// dictionary coding (`DeltaCoding::index`) the delta's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sizes {
    pub codings: [Size; 3],
    pub deltas: [Size; 2],
}

/// A representation to place: a delta or a coding's (sibling, then
/// cached copy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rep {
    Delta(DeltaCoding),
    Coding(Coding),
}

impl Rep {
    /// Decoding speed, fastest first: zstd (and dcz), brotli (and dcb),
    /// gzip. Breaks ties between equal sizes, and keeps the default
    /// `zstd br gzip` where no size is known.
    fn speed_rank(self) -> u8 {
        match self {
            Rep::Delta(DeltaCoding::Dcz) | Rep::Coding(Coding::Zstd) => 0,
            Rep::Delta(DeltaCoding::Dcb) | Rep::Coding(Coding::Br) => 1,
            Rep::Coding(Coding::Gzip) => 2,
        }
    }

    fn size(self, s: &Sizes) -> Size {
        match self {
            Rep::Delta(d) => s.deltas[d.index()],
            Rep::Coding(c) => s.codings[c.index()],
        }
    }
}

/// The accepted representations with their q, best first: deltas, then
/// the codings in the server's order among equal q; with `sizes`, each
/// run of equal q (the deltas joining the first) goes smallest first,
/// sizes unknown last, ties by decoding speed. Deterministic: the same
/// sizes give the same order.
fn ordered(inp: &Inputs, preferred: impl Fn(u16) -> bool) -> ([(Rep, u16); 5], usize) {
    let mut items = [(Rep::Coding(Coding::Gzip), 0u16); 5];
    let mut n = 0;
    let top = inp.ranked.iter_q().next().map(|(_, q)| q);
    let delta_q = match (inp.sizes, top) {
        (Some(_), Some(q)) if preferred(q) => q,
        _ => u16::MAX,
    };
    for (d, q) in inp.deltas.into_iter().flatten() {
        if preferred(q) {
            items[n] = (Rep::Delta(d), delta_q);
            n += 1;
        }
    }
    for (c, q) in inp.ranked.iter_q() {
        if n < items.len() {
            items[n] = (Rep::Coding(c), q);
            n += 1;
        }
    }
    if let Some(sizes) = &inp.sizes {
        let mut keyed = [((0u16, 0u64, 0u8, 0usize), items[0]); 5];
        for (i, it) in items[..n].iter().enumerate() {
            let bytes = match it.0.size(sizes) {
                Size::Bytes(b) => b,
                Size::Unknown | Size::Absent => u64::MAX,
            };
            keyed[i] = ((u16::MAX - it.1, bytes, it.0.speed_rank(), i), *it);
        }
        keyed[..n].sort_unstable_by_key(|k| k.0);
        for (i, k) in keyed[..n].iter().enumerate() {
            items[i] = k.1;
        }
    }
    (items, n)
}

/// The codings whose size can change the order: those sharing their q
/// with another coding, or, when a delta joins them (`with_deltas`),
/// those of the best q. A client naming one coding, or each at its own
/// q, needs no size.
pub fn sizes_wanted(ranked: &Ranked, with_deltas: bool) -> [bool; 3] {
    let mut wanted = [false; 3];
    let top = ranked.iter_q().next().map(|(_, q)| q);
    for (c, q) in ranked.iter_q() {
        let shared = ranked.iter_q().filter(|&(_, q2)| q2 == q).count() > 1;
        wanted[c.index()] = shared || (with_deltas && Some(q) == top);
    }
    wanted
}

/// The coding a client would be sent once every copy on demand exists:
/// of those it accepts at its best q, the one that is usually smallest
/// (brotli, then zstd, then gzip, as the publish tool's levels make them
/// for text). The one copy worth making for it: a browser's
/// `br, gzip, zstd` asks for br alone, a client of gzip only for gzip.
pub fn likely_sent(ranked: &Ranked) -> Option<Coding> {
    let rank = |c: Coding| match c {
        Coding::Br => 0,
        Coding::Zstd => 1,
        Coding::Gzip => 2,
    };
    let top = ranked.iter_q().next().map(|(_, q)| q)?;
    ranked
        .iter_q()
        .filter(|&(_, q)| q == top)
        .map(|(c, _)| c)
        .min_by_key(|&c| rank(c))
}

/// The candidates, in the order to try them.
#[derive(Clone, Copy, Debug)]
pub struct Candidates {
    items: [Candidate; 16],
    len: usize,
}

impl Candidates {
    fn push(&mut self, c: Candidate) {
        if self.len < self.items.len() {
            self.items[self.len] = c;
            self.len += 1;
        }
    }

    pub fn as_slice(&self) -> &[Candidate] {
        &self.items[..self.len]
    }
}

/// A sibling older than its original is stale. Whole seconds: many tools
/// copy mtimes at that precision.
pub fn is_stale(sibling: FileMeta, original: FileMeta) -> bool {
    sibling.mtime.div_euclid(1_000_000) < original.mtime.div_euclid(1_000_000)
}

/// Whether a sibling (or delta) found may answer: never when older than
/// the original beside it.
pub fn usable(sibling: FileMeta, original: Option<FileMeta>) -> bool {
    original.is_none_or(|o| !is_stale(sibling, o))
}

/// Decides the order in which to try to answer: deltas, then each
/// accepted coding (its sibling, then, on demand, its cached copy), with
/// the original where the client's identity q puts it; without the
/// original, decoding a sibling, then the errors.
pub fn candidates(inp: &Inputs) -> Candidates {
    let mut out = Candidates {
        items: [Candidate::NotFound; 16],
        len: 0,
    };
    let preferred = |q: u16| inp.original.is_none() || q >= inp.identity_preference;
    let (items, n) = ordered(inp, preferred);
    let mut original_pushed = inp.original.is_none();
    for &(rep, q) in &items[..n] {
        let c = match rep {
            Rep::Delta(d) => {
                out.push(Candidate::Delta(d));
                continue;
            }
            Rep::Coding(c) => c,
        };
        if !preferred(q) && !original_pushed {
            out.push(Candidate::Original);
            original_pushed = true;
        }
        out.push(Candidate::Sibling(c));
        if inp.cache && inp.original.is_some() {
            out.push(Candidate::Cached(c));
        }
    }
    if inp.original.is_some() {
        if !original_pushed {
            out.push(Candidate::Original);
        }
        return out;
    }
    if inp.decompress {
        let order: &[(Coding, Window)] = if inp.cache {
            &CACHED_DECODE_ORDER
        } else {
            &DECODE_ORDER
        };
        for &(c, w) in order {
            if inp.allowed.contains(&c) {
                out.push(Candidate::Decode(c, w));
            }
        }
    } else {
        out.push(Candidate::NotAcceptable);
    }
    out.push(Candidate::NotFound);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use Candidate::*;
    use Coding::*;

    const ORDER: [Coding; 3] = [Zstd, Br, Gzip];

    fn meta(mtime: i64) -> Option<FileMeta> {
        Some(FileMeta { mtime, size: 10 })
    }

    fn inputs(ae: Option<&str>, orig: Option<FileMeta>) -> Inputs<'static> {
        let acc = Accepted::parse(ae);
        Inputs {
            original: orig,
            ranked: acc.ranked(&ORDER),
            allowed: &ORDER,
            identity_preference: acc.identity_preference(),
            decompress: true,
            deltas: delta_codings(&acc),
            cache: false,
            sizes: None,
        }
    }

    /// Sizes of zstd, br and gzip (`None`: absent).
    fn sized(z: Option<u64>, b: Option<u64>, g: Option<u64>) -> Sizes {
        let s = |o: Option<u64>| o.map_or(Size::Absent, Size::Bytes);
        Sizes {
            codings: [s(z), s(b), s(g)],
            deltas: [Size::Unknown; 2],
        }
    }

    fn by_size(ae: &str, sizes: Sizes) -> Vec<Candidate> {
        let mut i = inputs(Some(ae), meta(5));
        i.sizes = Some(sizes);
        candidates(&i).as_slice().to_vec()
    }

    fn order(ae: Option<&str>, orig: Option<FileMeta>) -> Vec<Candidate> {
        candidates(&inputs(ae, orig)).as_slice().to_vec()
    }

    const DECODES: [Candidate; 4] = [
        Decode(Zstd, Window::Small),
        Decode(Gzip, Window::Any),
        Decode(Zstd, Window::Any),
        Decode(Br, Window::Any),
    ];

    #[test]
    fn best_acceptable_sibling_first_then_original() {
        assert_eq!(
            order(Some("gzip, br"), meta(5)),
            [Sibling(Br), Sibling(Gzip), Original]
        );
    }

    #[test]
    fn identity_preferred_by_q_gets_the_original() {
        let o = meta(5);
        assert_eq!(
            order(Some("gzip;q=0.1, identity"), o),
            [Original, Sibling(Gzip)]
        );
        assert_eq!(
            order(Some("br, gzip;q=0.5, identity;q=0.8"), o),
            [Sibling(Br), Original, Sibling(Gzip)]
        );
        // Equal q keeps the server's order: codings first.
        assert_eq!(
            order(Some("gzip;q=0.5, identity;q=0.5"), o),
            [Sibling(Gzip), Original]
        );
        // Identity's default acceptability is not a preference.
        assert_eq!(order(Some("gzip;q=0.9"), o), [Sibling(Gzip), Original]);
        // Without the original, identity's q changes nothing.
        assert_eq!(order(Some("gzip;q=0.1, identity"), None)[0], Sibling(Gzip));
    }

    #[test]
    fn on_demand_a_coding_without_a_sibling_comes_from_the_cache() {
        let mut i = inputs(Some("br, gzip;q=0.5, identity;q=0.8"), meta(5));
        i.cache = true;
        assert_eq!(
            candidates(&i).as_slice(),
            [
                Sibling(Br),
                Cached(Br),
                Original,
                Sibling(Gzip),
                Cached(Gzip)
            ]
        );
        let mut i = inputs(Some("zstd"), None);
        i.cache = true;
        assert!(!candidates(&i).as_slice().contains(&Cached(Zstd)));
    }

    #[test]
    fn without_the_original_siblings_then_decoding_then_not_found() {
        let mut want = vec![Sibling(Zstd), Sibling(Br), Sibling(Gzip)];
        want.extend(DECODES);
        want.push(NotFound);
        assert_eq!(order(Some("zstd, br, gzip"), None), want);
    }

    #[test]
    fn identity_client_gets_original_or_decompression() {
        assert_eq!(order(None, meta(1)), [Original]);
        let mut want = DECODES.to_vec();
        want.push(NotFound);
        assert_eq!(order(None, None), want);
    }

    #[test]
    fn on_demand_a_gzip_sibling_is_decoded_first() {
        let mut i = inputs(None, None);
        i.cache = true;
        assert_eq!(
            &candidates(&i).as_slice()[..3],
            [
                Decode(Gzip, Window::Any),
                Decode(Zstd, Window::Any),
                Decode(Br, Window::Any)
            ]
        );
    }

    #[test]
    fn only_allowed_codings_are_decoded() {
        let mut i = inputs(None, None);
        i.allowed = &[Gzip, Br];
        assert_eq!(
            candidates(&i).as_slice(),
            [Decode(Gzip, Window::Any), Decode(Br, Window::Any), NotFound]
        );
    }

    #[test]
    fn stale_siblings_are_not_usable() {
        let at = |mtime| FileMeta { mtime, size: 1 };
        assert!(!usable(at(9_000_000), meta(10_000_000)));
        // Same second is not stale.
        assert!(usable(at(10_000_000), meta(10_500_000)));
        assert!(!usable(at(10_999_999), meta(11_000_000)));
        assert!(usable(at(1), None));
    }

    #[test]
    fn decompress_off_gives_not_acceptable() {
        let mut i = inputs(None, None);
        i.decompress = false;
        assert_eq!(candidates(&i).as_slice(), [NotAcceptable, NotFound]);
    }

    #[test]
    fn deltas_come_first_when_preferred_to_identity() {
        assert_eq!(
            order(Some("gzip, dcb, dcz"), meta(1)),
            [
                Delta(DeltaCoding::Dcz),
                Delta(DeltaCoding::Dcb),
                Sibling(Gzip),
                Original
            ]
        );
        assert_eq!(order(Some("dcz;q=0.5, identity"), meta(1)), [Original]);
        assert_eq!(
            order(Some("dcz;q=0.5, identity"), None)[0],
            Delta(DeltaCoding::Dcz)
        );
    }

    #[test]
    fn delta_codings_only_named_and_ranked() {
        let order = |ae| {
            delta_codings(&Accepted::parse(Some(ae)))
                .into_iter()
                .flatten()
                .map(|(d, _)| d)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            order("gzip, dcb, dcz"),
            [DeltaCoding::Dcz, DeltaCoding::Dcb]
        );
        assert_eq!(
            order("dcz;q=0.5, dcb"),
            [DeltaCoding::Dcb, DeltaCoding::Dcz]
        );
        assert_eq!(order("dcz;q=0, dcb"), [DeltaCoding::Dcb]);
        assert!(order("*, gzip").is_empty());
    }

    #[test]
    fn the_copy_worth_making_is_the_usually_smallest_at_the_best_q() {
        let sent = |ae: &str| likely_sent(&Accepted::parse(Some(ae)).ranked(&Coding::ALL));
        assert_eq!(sent("gzip, deflate, br, zstd"), Some(Coding::Br));
        assert_eq!(sent("gzip, zstd"), Some(Coding::Zstd));
        assert_eq!(sent("br;q=0.5, gzip"), Some(Coding::Gzip));
        assert_eq!(sent("identity"), None);
    }

    #[test]
    fn among_equal_q_the_smallest_goes_first() {
        let n = None;
        let cases = [
            (sized(Some(120), Some(100), Some(130)), [Br, Zstd, Gzip]),
            (sized(Some(90), Some(100), Some(80)), [Gzip, Zstd, Br]),
            // Ties by decoding speed: zstd, br, gzip.
            (sized(Some(100), Some(100), Some(100)), [Zstd, Br, Gzip]),
            (sized(Some(200), Some(100), Some(100)), [Br, Gzip, Zstd]),
            // Absent and unknown last, in speed order.
            (sized(n, n, Some(100)), [Gzip, Zstd, Br]),
            (Sizes::default(), [Zstd, Br, Gzip]),
        ];
        for (sizes, want) in cases {
            let mut want: Vec<_> = want.map(Sibling).to_vec();
            want.push(Original);
            assert_eq!(by_size("gzip, deflate, br, zstd", sizes), want, "{sizes:?}");
        }
    }

    #[test]
    fn q_values_win_over_sizes() {
        let small_br = sized(Some(200), Some(100), Some(150));
        assert_eq!(
            by_size("br;q=0.5, zstd", small_br),
            [Sibling(Zstd), Sibling(Br), Original]
        );
        // Each run of equal q is ordered by itself.
        assert_eq!(
            by_size("zstd, gzip;q=0.5, br;q=0.5", small_br),
            [Sibling(Zstd), Sibling(Br), Sibling(Gzip), Original]
        );
        // Identity preferred keeps its place between runs.
        assert_eq!(
            by_size("zstd;q=0.5, br;q=0.5, identity;q=0.8", small_br),
            [Original, Sibling(Br), Sibling(Zstd)]
        );
    }

    #[test]
    fn cached_copies_follow_their_coding() {
        let mut i = inputs(Some("gzip, br, zstd"), meta(5));
        i.cache = true;
        i.sizes = Some(sized(Some(300), Some(100), Some(200)));
        assert_eq!(
            candidates(&i).as_slice(),
            [
                Sibling(Br),
                Cached(Br),
                Sibling(Gzip),
                Cached(Gzip),
                Sibling(Zstd),
                Cached(Zstd),
                Original
            ]
        );
    }

    #[test]
    fn a_delta_larger_than_a_sibling_goes_after_it() {
        let mut s = sized(Some(300), Some(100), Some(200));
        s.deltas = [Size::Bytes(150), Size::Absent];
        assert_eq!(
            by_size("gzip, br, zstd, dcb, dcz", s),
            [
                Sibling(Br),
                Delta(DeltaCoding::Dcz),
                Sibling(Gzip),
                Sibling(Zstd),
                Delta(DeltaCoding::Dcb),
                Original
            ]
        );
        s.deltas = [Size::Bytes(50), Size::Absent];
        assert_eq!(
            by_size("gzip, br, zstd, dcz", s)[0],
            Delta(DeltaCoding::Dcz)
        );
        // Without sizes deltas stay first.
        assert_eq!(
            order(Some("gzip;q=0.5, dcz;q=0.1"), meta(1))[0],
            Delta(DeltaCoding::Dcz)
        );
    }

    #[test]
    fn sizes_are_wanted_only_where_they_can_change_the_order() {
        let w = |ae, deltas| sizes_wanted(&Accepted::parse(Some(ae)).ranked(&ORDER), deltas);
        assert_eq!(w("gzip, deflate, br, zstd", false), [true; 3]);
        assert_eq!(w("gzip", false), [false; 3]);
        assert_eq!(w("gzip", true), [false, false, true]);
        assert_eq!(w("gzip, br;q=0.5, zstd;q=0.5", false), [true, true, false]);
        assert_eq!(w("gzip;q=0.9, br;q=0.5", false), [false; 3]);
    }

    #[test]
    fn methods_and_path_info_are_answered_before_any_file() {
        assert_eq!(before_files(Method::Get, false), None);
        assert_eq!(before_files(Method::Get, true), Some(PathInfo));
        assert_eq!(before_files(Method::Options, true), Some(Options));
        assert_eq!(before_files(Method::Invalid, false), Some(NotImplemented));
        assert_eq!(before_files(Method::Other, false), Some(MethodNotAllowed));
    }
}

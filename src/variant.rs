//! The decision, pure and allocation-free: request facts in, outcomes out.
//! Which representation answers a request (a precompressed sibling, the
//! original, an on-the-fly decompression) or which error does. The handler
//! tries the planned outcomes in order, moving to the next when a file
//! turns out unreadable or vanished; `respond` turns each into a response.

use crate::coding::{Coding, DeltaCoding};
use crate::negotiate::{Accepted, Ranked};

/// What the handler knows of a regular file on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMeta {
    /// Modification time, microseconds since the epoch.
    pub mtime: i64,
    pub size: u64,
}

/// One way to answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Send this sibling as is, with Content-Encoding.
    Send(Coding),
    /// Send the original file.
    Original,
    /// Decode this sibling and send identity.
    Decompress(Coding),
    /// Siblings exist but none is acceptable and decompression is off
    /// (406, listing the codings there are).
    NotAcceptable,
    /// Neither the original nor a usable sibling exists.
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
pub fn before_files(method: Method, rejected_path_info: bool) -> Option<Outcome> {
    match method {
        Method::Get if rejected_path_info => Some(Outcome::PathInfo),
        Method::Get => None,
        Method::Options => Some(Outcome::Options),
        Method::Invalid => Some(Outcome::NotImplemented),
        Method::Other => Some(Outcome::MethodNotAllowed),
    }
}

/// The dictionary codings the client names with q > 0, best first
/// (equal q: dcz, then dcb).
pub fn delta_codings(accepted: &Accepted) -> impl Iterator<Item = (DeltaCoding, u16)> {
    let [a, b] = DeltaCoding::ALL.map(|d| (d, accepted.delta_q(d)));
    let ordered = if b.1 > a.1 { [b, a] } else { [a, b] };
    ordered.into_iter().filter(|&(_, q)| q > 0)
}

/// Whether the client's favourite coding (stated with `q`) answers at
/// once from its sibling: fresh, and preferred to identity where an
/// original exists. `plan` would put it first too, so one lookup decides
/// the common case.
pub fn favourite_answers(
    q: u16,
    identity_preference: u16,
    original: Option<FileMeta>,
    sibling: FileMeta,
) -> bool {
    match original {
        None => true,
        Some(o) => !is_stale(sibling, o) && q >= identity_preference,
    }
}

/// The facts a decision needs.
#[derive(Clone, Copy, Debug)]
pub struct Inputs {
    pub original: Option<FileMeta>,
    /// Per coding (indexed by `Coding::index`), the sibling if it exists.
    pub siblings: [Option<FileMeta>; 3],
    /// Codings the client accepts, best first, already limited to the
    /// codings the configuration allows.
    pub ranked: Ranked,
    /// The q the client states for identity: an existing original is sent
    /// before any coding the client likes less.
    pub identity_preference: u16,
    /// Whether to decompress when the original is missing.
    pub decompress: bool,
    /// Which siblings to decode from, fastest first.
    pub decode_order: [Coding; 3],
}

/// The ordered outcomes and the siblings found stale.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    outcomes: [Outcome; 8],
    len: usize,
    /// Siblings older than the original, which are never served.
    pub stale: [bool; 3],
    /// Whether the resource has any sibling, so responses vary.
    pub varies: bool,
}

impl Plan {
    fn push(&mut self, s: Outcome) {
        if self.len < self.outcomes.len() {
            self.outcomes[self.len] = s;
            self.len += 1;
        }
    }

    /// The outcomes, in the order to try them.
    pub fn outcomes(&self) -> &[Outcome] {
        &self.outcomes[..self.len]
    }
}

/// A sibling older than its original is stale. Whole seconds: many tools
/// copy mtimes at that precision.
pub fn is_stale(sibling: FileMeta, original: FileMeta) -> bool {
    sibling.mtime.div_euclid(1_000_000) < original.mtime.div_euclid(1_000_000)
}

/// Decides how to answer.
pub fn plan(inp: &Inputs) -> Plan {
    let mut p = Plan {
        outcomes: [Outcome::NotFound; 8],
        len: 0,
        stale: [false; 3],
        varies: inp.siblings.iter().any(Option::is_some),
    };
    let mut usable = [false; 3];
    for c in Coding::ALL {
        if let Some(s) = inp.siblings[c.index()] {
            match inp.original {
                Some(o) if is_stale(s, o) => p.stale[c.index()] = true,
                _ => usable[c.index()] = true,
            }
        }
    }
    if inp.original.is_some() {
        // Codings preferred to identity, the original, then the rest
        // (tried only if the original turns out unusable).
        let mut original_pushed = false;
        for (c, q) in inp.ranked.iter_q() {
            if q < inp.identity_preference && !original_pushed {
                p.push(Outcome::Original);
                original_pushed = true;
            }
            if usable[c.index()] {
                p.push(Outcome::Send(c));
            }
        }
        if !original_pushed {
            p.push(Outcome::Original);
        }
        return p;
    }
    for c in inp.ranked.iter() {
        if usable[c.index()] {
            p.push(Outcome::Send(c));
        }
    }
    let mut any = false;
    for c in inp.decode_order {
        if usable[c.index()] {
            any = true;
            if inp.decompress {
                p.push(Outcome::Decompress(c));
            }
        }
    }
    if any && !inp.decompress {
        p.push(Outcome::NotAcceptable);
    }
    p.push(Outcome::NotFound);
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use Coding::*;
    use Outcome::*;

    const ORDER: [Coding; 3] = [Zstd, Br, Gzip];
    const DEC: [Coding; 3] = [Zstd, Gzip, Br];

    fn meta(mtime: i64) -> Option<FileMeta> {
        Some(FileMeta { mtime, size: 10 })
    }

    fn inputs(ae: Option<&str>, orig: Option<FileMeta>, sib: [Option<FileMeta>; 3]) -> Inputs {
        let acc = Accepted::parse(ae);
        Inputs {
            original: orig,
            siblings: sib,
            ranked: acc.ranked(&ORDER),
            identity_preference: acc.identity_preference(),
            decompress: true,
            decode_order: DEC,
        }
    }

    #[test]
    fn best_acceptable_sibling_first_then_original() {
        let p = plan(&inputs(
            Some("gzip, br"),
            meta(5),
            [meta(5), meta(5), meta(6)],
        ));
        assert_eq!(p.outcomes(), &[Send(Br), Send(Gzip), Original]);
        assert!(p.varies);
    }

    #[test]
    fn identity_preferred_by_q_gets_the_original() {
        let all = [meta(5), meta(5), meta(5)];
        let p = plan(&inputs(Some("gzip;q=0.1, identity"), meta(5), all));
        assert_eq!(p.outcomes(), &[Original, Send(Gzip)]);
        let p = plan(&inputs(
            Some("br, gzip;q=0.5, identity;q=0.8"),
            meta(5),
            all,
        ));
        assert_eq!(p.outcomes(), &[Send(Br), Original, Send(Gzip)]);
        // Equal q keeps the server's order: codings first.
        let p = plan(&inputs(Some("gzip;q=0.5, identity;q=0.5"), meta(5), all));
        assert_eq!(p.outcomes(), &[Send(Gzip), Original]);
        // Identity's default acceptability is not a preference.
        let p = plan(&inputs(Some("gzip;q=0.9"), meta(5), all));
        assert_eq!(p.outcomes(), &[Send(Gzip), Original]);
        // Without the original, identity's q changes nothing.
        let p = plan(&inputs(Some("gzip;q=0.1, identity"), None, all));
        assert_eq!(p.outcomes()[0], Send(Gzip));
    }

    #[test]
    fn missing_sibling_is_skipped() {
        let p = plan(&inputs(Some("zstd, br, gzip"), None, [None, None, meta(1)]));
        assert_eq!(p.outcomes(), &[Send(Gzip), Decompress(Gzip), NotFound]);
    }

    #[test]
    fn identity_client_gets_original_or_decompression() {
        let p = plan(&inputs(None, meta(1), [meta(1), None, meta(1)]));
        assert_eq!(p.outcomes(), &[Original]);
        let p = plan(&inputs(None, None, [meta(1), meta(1), meta(1)]));
        assert_eq!(
            p.outcomes(),
            &[Decompress(Zstd), Decompress(Gzip), Decompress(Br), NotFound]
        );
    }

    #[test]
    fn stale_sibling_is_never_served() {
        let p = plan(&inputs(
            Some("gzip"),
            meta(10_000_000),
            [None, None, meta(9_000_000)],
        ));
        assert_eq!(p.outcomes(), &[Original]);
        assert_eq!(p.stale, [false, false, true]);
        assert!(p.varies);
    }

    #[test]
    fn same_second_is_not_stale() {
        let p = plan(&inputs(
            Some("gzip"),
            meta(10_500_000),
            [None, None, meta(10_000_000)],
        ));
        assert_eq!(p.outcomes(), &[Send(Gzip), Original]);
        let p = plan(&inputs(
            Some("gzip"),
            meta(11_000_000),
            [None, None, meta(10_999_999)],
        ));
        assert_eq!(p.outcomes(), &[Original]);
    }

    #[test]
    fn decompress_off_gives_not_acceptable() {
        let mut i = inputs(None, None, [None, meta(1), None]);
        i.decompress = false;
        assert_eq!(plan(&i).outcomes(), &[NotAcceptable, NotFound]);
    }

    #[test]
    fn nothing_at_all_is_not_found() {
        let p = plan(&inputs(Some("gzip"), None, [None; 3]));
        assert_eq!(p.outcomes(), &[NotFound]);
        assert!(!p.varies);
        let p = plan(&inputs(Some("gzip"), meta(1), [None; 3]));
        assert_eq!(p.outcomes(), &[Original]);
        assert!(!p.varies);
    }

    #[test]
    fn delta_codings_only_named_and_ranked() {
        let order = |ae| {
            delta_codings(&Accepted::parse(Some(ae)))
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
    fn methods_and_path_info_are_answered_before_any_file() {
        assert_eq!(before_files(Method::Get, false), None);
        assert_eq!(before_files(Method::Get, true), Some(PathInfo));
        assert_eq!(before_files(Method::Options, true), Some(Options));
        assert_eq!(before_files(Method::Invalid, false), Some(NotImplemented));
        assert_eq!(before_files(Method::Other, false), Some(MethodNotAllowed));
    }

    #[test]
    fn favourite_answers_when_fresh_and_preferred() {
        let sib = FileMeta {
            mtime: 2_000_000,
            size: 5,
        };
        let older = FileMeta {
            mtime: 1_000_000,
            size: 9,
        };
        let newer = FileMeta {
            mtime: 3_000_000,
            size: 9,
        };
        assert!(favourite_answers(1000, 1000, None, sib));
        assert!(favourite_answers(1, 1000, None, sib), "no original");
        assert!(favourite_answers(1000, 1000, Some(older), sib));
        assert!(!favourite_answers(1000, 1000, Some(newer), sib), "stale");
        assert!(
            !favourite_answers(500, 1000, Some(older), sib),
            "identity preferred"
        );
        assert!(
            favourite_answers(500, 500, Some(older), sib),
            "equal q: server order"
        );
    }
}

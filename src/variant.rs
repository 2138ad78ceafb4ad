//! Which representation answers a request: a precompressed sibling, the
//! original, an on-the-fly decompression, or an error. Pure and
//! allocation-free; the handler walks the returned steps in order, moving to
//! the next when a file turns out unreadable or vanished.

use crate::coding::Coding;
use crate::negotiate::Ranked;

/// What the handler knows of a regular file on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMeta {
    /// Modification time, microseconds since the epoch.
    pub mtime: i64,
    pub size: u64,
}

/// One way to answer, tried in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Send this sibling as is, with Content-Encoding.
    Send(Coding),
    /// Send the original file.
    Original,
    /// Decode this sibling and send identity.
    Decompress(Coding),
    /// Siblings exist but none is acceptable and decompression is off.
    NotAcceptable,
    /// Neither the original nor a sibling exists.
    NotFound,
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

/// The ordered steps and the siblings found stale.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    steps: [Step; 8],
    len: usize,
    /// Siblings older than the original, which are never served.
    pub stale: [bool; 3],
    /// Whether the resource has any sibling, so responses vary.
    pub varies: bool,
}

impl Plan {
    fn push(&mut self, s: Step) {
        if self.len < self.steps.len() {
            self.steps[self.len] = s;
            self.len += 1;
        }
    }

    /// The steps, in the order to try them.
    pub fn steps(&self) -> &[Step] {
        &self.steps[..self.len]
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
        steps: [Step::NotFound; 8],
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
                p.push(Step::Original);
                original_pushed = true;
            }
            if usable[c.index()] {
                p.push(Step::Send(c));
            }
        }
        if !original_pushed {
            p.push(Step::Original);
        }
        return p;
    }
    for c in inp.ranked.iter() {
        if usable[c.index()] {
            p.push(Step::Send(c));
        }
    }
    let mut any = false;
    for c in inp.decode_order {
        if usable[c.index()] {
            any = true;
            if inp.decompress {
                p.push(Step::Decompress(c));
            }
        }
    }
    if any && !inp.decompress {
        p.push(Step::NotAcceptable);
    }
    p.push(Step::NotFound);
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::negotiate::Accepted;
    use Coding::*;
    use Step::*;

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
        assert_eq!(p.steps(), &[Send(Br), Send(Gzip), Original]);
        assert!(p.varies);
    }

    #[test]
    fn identity_preferred_by_q_gets_the_original() {
        let all = [meta(5), meta(5), meta(5)];
        let p = plan(&inputs(Some("gzip;q=0.1, identity"), meta(5), all));
        assert_eq!(p.steps(), &[Original, Send(Gzip)]);
        let p = plan(&inputs(
            Some("br, gzip;q=0.5, identity;q=0.8"),
            meta(5),
            all,
        ));
        assert_eq!(p.steps(), &[Send(Br), Original, Send(Gzip)]);
        // Equal q keeps the server's order: codings first.
        let p = plan(&inputs(Some("gzip;q=0.5, identity;q=0.5"), meta(5), all));
        assert_eq!(p.steps(), &[Send(Gzip), Original]);
        // Identity's default acceptability is not a preference.
        let p = plan(&inputs(Some("gzip;q=0.9"), meta(5), all));
        assert_eq!(p.steps(), &[Send(Gzip), Original]);
        // Without the original, identity's q changes nothing.
        let p = plan(&inputs(Some("gzip;q=0.1, identity"), None, all));
        assert_eq!(p.steps()[0], Send(Gzip));
    }

    #[test]
    fn missing_sibling_is_skipped() {
        let p = plan(&inputs(Some("zstd, br, gzip"), None, [None, None, meta(1)]));
        assert_eq!(p.steps(), &[Send(Gzip), Decompress(Gzip), NotFound]);
    }

    #[test]
    fn identity_client_gets_original_or_decompression() {
        let p = plan(&inputs(None, meta(1), [meta(1), None, meta(1)]));
        assert_eq!(p.steps(), &[Original]);
        let p = plan(&inputs(None, None, [meta(1), meta(1), meta(1)]));
        assert_eq!(
            p.steps(),
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
        assert_eq!(p.steps(), &[Original]);
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
        assert_eq!(p.steps(), &[Send(Gzip), Original]);
        let p = plan(&inputs(
            Some("gzip"),
            meta(11_000_000),
            [None, None, meta(10_999_999)],
        ));
        assert_eq!(p.steps(), &[Original]);
    }

    #[test]
    fn decompress_off_gives_not_acceptable() {
        let mut i = inputs(None, None, [None, meta(1), None]);
        i.decompress = false;
        assert_eq!(plan(&i).steps(), &[NotAcceptable, NotFound]);
    }

    #[test]
    fn nothing_at_all_is_not_found() {
        let p = plan(&inputs(Some("gzip"), None, [None; 3]));
        assert_eq!(p.steps(), &[NotFound]);
        assert!(!p.varies);
        let p = plan(&inputs(Some("gzip"), meta(1), [None; 3]));
        assert_eq!(p.steps(), &[Original]);
        assert!(!p.varies);
    }
}

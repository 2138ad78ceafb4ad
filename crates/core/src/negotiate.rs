//! Accept-Encoding parsing (RFC 9110 §12.5.3) into per-coding quality values.
//!
//! Allocation-free: the result is a fixed table, so the precompressed path
//! costs no heap.

use crate::coding::{Coding, DeltaCoding};

/// Quality values in thousandths (0..=1000), as RFC 9110's qvalue grammar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accepted {
    /// Explicit q per coding, `None` when the header did not name it.
    explicit: [Option<u16>; 3],
    /// Explicit q of the dictionary codings (`*` never stands for them).
    delta: [Option<u16>; 2],
    identity: Option<u16>,
    star: Option<u16>,
    /// False when no Accept-Encoding header was sent at all.
    present: bool,
}

impl Accepted {
    /// What a request without Accept-Encoding accepts: identity only.
    pub fn none() -> Accepted {
        Accepted {
            explicit: [None; 3],
            delta: [None; 2],
            identity: None,
            star: None,
            present: false,
        }
    }

    /// Parses an Accept-Encoding header value. Malformed members are
    /// ignored, names are case-insensitive, `x-gzip` counts as gzip; when a
    /// coding appears twice the highest q wins.
    pub fn parse(header: Option<&str>) -> Accepted {
        Accepted::parse_bytes(header.map(str::as_bytes))
    }

    /// `parse` of the header's bytes as they came (no UTF-8 needed: a
    /// member with other bytes than a token's is ignored).
    pub fn parse_bytes(header: Option<&[u8]>) -> Accepted {
        let mut acc = Accepted::none();
        let Some(value) = header else { return acc };
        acc.present = true;
        for member in value.split(|&b| b == b',') {
            // The name, then any parameters: unknown names cost one look.
            let (name, params) = match member.iter().position(|&b| b == b';') {
                Some(i) => (&member[..i], &member[i..]),
                None => (member, &[][..]),
            };
            let Some(kind) = classify(trim_ows(name)) else {
                continue;
            };
            let q = if params.is_empty() {
                1000
            } else {
                match member_q(params[1..].split(|&b| b == b';')) {
                    Some(q) => q,
                    None => continue,
                }
            };
            let slot = match kind {
                Member::Star => &mut acc.star,
                Member::Identity => &mut acc.identity,
                Member::Coding(c) => &mut acc.explicit[c.index()],
                Member::Delta(d) => &mut acc.delta[d.index()],
            };
            *slot = Some(slot.map_or(q, |old| old.max(q)));
        }
        acc
    }

    /// The quality the client gives a coding (0 = not acceptable).
    pub fn q(&self, c: Coding) -> u16 {
        self.explicit[c.index()].or(self.star).unwrap_or(0)
    }

    /// The quality of identity: acceptable unless excluded by
    /// `identity;q=0` or by `*;q=0` without an identity entry.
    pub fn identity_q(&self) -> u16 {
        self.identity.or(self.star).unwrap_or(1000)
    }

    /// How much the client prefers identity over codings: its explicit q
    /// (or that of `*`). Identity is acceptable by default, but only a
    /// stated q ranks it above a coding: `gzip;q=0.9` alone still means
    /// gzip is welcome.
    pub fn identity_preference(&self) -> u16 {
        self.identity.or(self.star).unwrap_or(0)
    }

    /// The q of a dictionary coding the client names explicitly (0 when it
    /// does not: RFC 9842 codings are never implied by `*`).
    pub fn delta_q(&self, d: DeltaCoding) -> u16 {
        self.delta[d.index()].unwrap_or(0)
    }

    /// Whether any Accept-Encoding header was present.
    pub fn present(&self) -> bool {
        self.present
    }

    /// Removes a coding entirely (the `no-gzip` family of env vars).
    pub fn forbid(&mut self, c: Coding) {
        self.explicit[c.index()] = Some(0);
    }

    /// Codings from `order` with q > 0, best first; equal q keeps `order`.
    pub fn ranked(&self, order: &[Coding]) -> Ranked {
        let mut out = Ranked::default();
        for &c in order {
            let q = self.q(c);
            if q == 0 || out.contains(c) {
                continue;
            }
            // Insert after every entry with q >= this one (stable).
            let mut pos = out.len;
            while pos > 0 && out.items[pos - 1].1 < q {
                pos -= 1;
            }
            let mut i = out.len;
            while i > pos {
                out.items[i] = out.items[i - 1];
                i -= 1;
            }
            out.items[pos] = (c, q);
            out.len += 1;
        }
        out
    }
}

/// The SHA-256 an `Available-Dictionary` header announces: a structured
/// field byte sequence (RFC 8941 §4.2.7: base64 between colons, padding
/// optional, parameters after it ignored) of exactly 32 bytes; anything
/// else is `None`, and the request is negotiated as if it had no such
/// header. Decoded into the stack: a request that names a dictionary
/// costs no allocation.
pub fn available_dictionary(value: &[u8]) -> Option<[u8; 32]> {
    use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
    use base64::engine::DecodePaddingMode;
    use base64::Engine;
    const SF_BASE64: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let item = value.trim_ascii_start().strip_prefix(b":")?;
    let end = item.iter().position(|&b| b == b':')?;
    let rest = item[end + 1..].trim_ascii_end();
    if !(rest.is_empty() || rest.starts_with(b";")) {
        return None;
    }
    let mut hash = [0u8; 32];
    match SF_BASE64.decode_slice(&item[..end], &mut hash) {
        Ok(32) => Some(hash),
        _ => None,
    }
}

/// Acceptable codings, best first: a fixed-size list.
#[derive(Clone, Copy, Debug)]
pub struct Ranked {
    items: [(Coding, u16); 3],
    len: usize,
}

impl Default for Ranked {
    fn default() -> Self {
        Ranked {
            items: [(Coding::Gzip, 0); 3],
            len: 0,
        }
    }
}

impl Ranked {
    /// The codings in order.
    pub fn iter(&self) -> impl Iterator<Item = Coding> + '_ {
        self.items[..self.len].iter().map(|&(c, _)| c)
    }

    /// The codings in order, with their quality values.
    pub fn iter_q(&self) -> impl Iterator<Item = (Coding, u16)> + '_ {
        self.items[..self.len].iter().copied()
    }

    /// Whether `c` is in the list.
    pub fn contains(&self, c: Coding) -> bool {
        self.iter().any(|x| x == c)
    }

    /// Number of acceptable codings.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is acceptable.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// What an Accept-Encoding member names.
enum Member {
    Star,
    Identity,
    Coding(Coding),
    Delta(DeltaCoding),
}

/// Classifies a member's name by its length first: this runs on every
/// request, and most names are rejected by one comparison.
fn classify(name: &[u8]) -> Option<Member> {
    let is = |t: &[u8]| name.eq_ignore_ascii_case(t);
    Some(match name.len() {
        1 if name == b"*" => Member::Star,
        2 if is(b"br") => Member::Coding(Coding::Br),
        3 if is(b"dcz") => Member::Delta(DeltaCoding::Dcz),
        3 if is(b"dcb") => Member::Delta(DeltaCoding::Dcb),
        4 if is(b"gzip") => Member::Coding(Coding::Gzip),
        4 if is(b"zstd") => Member::Coding(Coding::Zstd),
        6 if is(b"x-gzip") => Member::Coding(Coding::Gzip),
        8 if is(b"identity") => Member::Identity,
        _ => return None,
    })
}

/// A member's q from its parameters: 1 without one, `None` when the q is
/// malformed or another parameter is not `name=value`.
fn member_q<'a>(params: impl Iterator<Item = &'a [u8]>) -> Option<u16> {
    let mut q = Some(1000u16);
    for param in params {
        let param = trim_ows(param);
        if let Some(eq) = param.iter().position(|&b| b == b'=') {
            let (k, v) = (&param[..eq], &param[eq + 1..]);
            if trim_ows(k).eq_ignore_ascii_case(b"q") {
                q = parse_qvalue(trim_ows(v));
            }
        } else if !param.is_empty() {
            q = None;
        }
    }
    q
}

/// Without the optional whitespace (spaces and tabs) around it.
fn trim_ows(b: &[u8]) -> &[u8] {
    let ows = |c: &u8| *c == b' ' || *c == b'\t';
    let start = b.iter().position(|c| !ows(c)).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !ows(c)).map_or(start, |e| e + 1);
    &b[start..end]
}

/// `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )`
fn parse_qvalue(b: &[u8]) -> Option<u16> {
    let (&first, rest) = b.split_first()?;
    let frac = match rest {
        [] => &[][..],
        [b'.', f @ ..] if f.len() <= 3 && f.iter().all(u8::is_ascii_digit) => f,
        _ => return None,
    };
    let mut thousandths = 0u16;
    for i in 0..3 {
        thousandths = thousandths * 10 + frac.get(i).map_or(0, |d| u16::from(d - b'0'));
    }
    match first {
        b'0' => Some(thousandths),
        b'1' if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Coding::*;

    const ORDER: [Coding; 3] = [Zstd, Br, Gzip];

    fn rank(h: Option<&str>) -> Vec<Coding> {
        Accepted::parse(h).ranked(&ORDER).iter().collect()
    }

    #[test]
    fn no_header_means_identity_only() {
        let a = Accepted::parse(None);
        assert!(rank(None).is_empty());
        assert_eq!(a.identity_q(), 1000);
        assert!(!a.present());
    }

    #[test]
    fn equal_q_uses_server_order() {
        assert_eq!(rank(Some("gzip, deflate, br, zstd")), vec![Zstd, Br, Gzip]);
        assert_eq!(rank(Some("gzip, br")), vec![Br, Gzip]);
    }

    #[test]
    fn q_values_rank_and_exclude() {
        assert_eq!(rank(Some("gzip;q=1.0, br;q=0.5, zstd;q=0")), vec![Gzip, Br]);
        assert_eq!(rank(Some("zstd;q=0.1,gzip;q=0.9")), vec![Gzip, Zstd]);
        assert_eq!(rank(Some("gzip;q=0")), Vec::<Coding>::new());
        assert_eq!(rank(Some("br;q=0.001")), vec![Br]);
    }

    #[test]
    fn star_covers_unnamed_codings() {
        assert_eq!(rank(Some("*")), vec![Zstd, Br, Gzip]);
        assert_eq!(rank(Some("*;q=0.5, gzip")), vec![Gzip, Zstd, Br]);
        assert_eq!(rank(Some("*;q=0, br")), vec![Br]);
        let a = Accepted::parse(Some("*;q=0"));
        assert_eq!(a.identity_q(), 0);
        let a = Accepted::parse(Some("*;q=0, identity"));
        assert_eq!(a.identity_q(), 1000);
    }

    #[test]
    fn identity_exclusion() {
        assert_eq!(Accepted::parse(Some("gzip, identity;q=0")).identity_q(), 0);
        assert_eq!(Accepted::parse(Some("gzip")).identity_q(), 1000);
        assert_eq!(Accepted::parse(Some("")).identity_q(), 1000);
    }

    #[test]
    fn case_whitespace_and_aliases() {
        assert_eq!(rank(Some("  GZIP ;  Q=0.8 ,\tBr")), vec![Br, Gzip]);
        assert_eq!(rank(Some("x-gzip")), vec![Gzip]);
        assert_eq!(rank(Some("ZsTd")), vec![Zstd]);
        assert_eq!(rank(Some(",,, ,gzip,,")), vec![Gzip]);
    }

    #[test]
    fn malformed_members_are_ignored() {
        assert_eq!(rank(Some("gzip;q=2, br")), vec![Br]);
        assert_eq!(rank(Some("gzip;q=abc, br;q=0.5")), vec![Br]);
        assert_eq!(rank(Some("gzip;q=0.1234, zstd")), vec![Zstd]);
        assert_eq!(rank(Some("gz ip, br")), vec![Br]);
        assert_eq!(rank(Some("gzip;q=1.001")), Vec::<Coding>::new());
        assert_eq!(rank(Some("br;q=")), Vec::<Coding>::new());
        assert_eq!(rank(Some("\0gzip, zstd")), vec![Zstd]);
        assert_eq!(rank(Some("compress, deflate, sdch")), Vec::<Coding>::new());
    }

    #[test]
    fn duplicates_take_highest_q() {
        assert_eq!(rank(Some("gzip;q=0, gzip;q=0.5")), vec![Gzip]);
    }

    #[test]
    fn forbid_removes_even_with_star() {
        let mut a = Accepted::parse(Some("*"));
        a.forbid(Gzip);
        assert_eq!(a.ranked(&ORDER).iter().collect::<Vec<_>>(), vec![Zstd, Br]);
    }

    #[test]
    fn custom_server_order_and_subset() {
        let a = Accepted::parse(Some("gzip, br, zstd"));
        let r: Vec<_> = a.ranked(&[Gzip, Br]).iter().collect();
        assert_eq!(r, vec![Gzip, Br]);
    }

    #[test]
    fn hostile_headers_do_not_panic() {
        let long = "gzip;q=0.5,".repeat(10_000);
        assert_eq!(rank(Some(&long)), vec![Gzip]);
        let many: String = (0..5000).map(|i| format!("c{i};q=0.{i},")).collect();
        assert!(rank(Some(&many)).is_empty());
        for s in ["é", ";;;", "q=1", "*;q=0.5;q=0.1", "\u{7f}"] {
            let _ = rank(Some(s));
        }
    }

    #[test]
    fn dictionary_codings_only_when_named() {
        let a = Accepted::parse(Some("gzip, br, zstd, dcb, dcz;q=0.5"));
        assert_eq!(a.delta_q(DeltaCoding::Dcz), 500);
        assert_eq!(a.delta_q(DeltaCoding::Dcb), 1000);
        let a = Accepted::parse(Some("*"));
        assert_eq!(a.delta_q(DeltaCoding::Dcz), 0, "* does not stand for dcz");
        let a = Accepted::parse(Some("dcz;q=0, gzip"));
        assert_eq!(a.delta_q(DeltaCoding::Dcz), 0);
        assert_eq!(
            a.ranked(&Coding::ALL).iter().collect::<Vec<_>>(),
            [Coding::Gzip]
        );
    }

    #[test]
    fn available_dictionary_is_a_32_byte_sequence() {
        let h = [7u8; 32];
        let b64 = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";
        let v = format!(":{b64}:");
        assert_eq!(available_dictionary(v.as_bytes()), Some(h));
        assert_eq!(available_dictionary(format!("  {v}  ").as_bytes()), Some(h));
        assert_eq!(available_dictionary(format!("{v};p=1").as_bytes()), Some(h));
        for bad in [
            &b""[..],
            b"::",
            b":AAAA:",
            b"BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=",
            b":BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=",
            b":!!!!BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=:",
            b"\xff\x00",
        ] {
            assert_eq!(available_dictionary(bad), None, "{bad:?}");
        }
    }
}

//! Property-based fuzzing of the parsers and decoders that see untrusted
//! bytes: Accept-Encoding parsing, the streaming decoders fed corrupt or
//! truncated data, and jitter framing. Bounded for CI; set
//! `PROPTEST_CASES=100000` for a long run.

mod common;

use common::*;
use gdn_core::coding::Coding;
use gdn_core::decode::{decode_all, inspect, Body, Decoder};
use gdn_core::jitter;
use gdn_core::negotiate::Accepted;
use proptest::prelude::*;

fn coding() -> impl Strategy<Value = Coding> {
    prop_oneof![Just(Coding::Gzip), Just(Coding::Zstd), Just(Coding::Br)]
}

/// The ranking `Accepted::ranked` promises, computed the obvious way
/// from the header as RFC 9110 reads it (`AcceptModel`, not the parser
/// under test).
fn model_rank(header: &str, order: &[Coding], forbid: &[Coding]) -> Vec<(Coding, u16)> {
    let m = AcceptModel::parse(header);
    let mut out: Vec<(Coding, u16)> = vec![];
    for &c in order {
        let q = m.q(c.token());
        if q > 0 && !forbid.contains(&c) && !out.iter().any(|&(x, _)| x == c) {
            out.push((c, q));
        }
    }
    // A stable sort: equal q keeps the server's order.
    out.sort_by_key(|&(_, q)| std::cmp::Reverse(q));
    out
}

/// Member names: the codings, their alias, identity, `*`, and others.
fn member_name() -> impl Strategy<Value = String> {
    "(gzip|br|zstd|identity|\\*|x-gzip|deflate|compress)".prop_map(String::from)
}

/// A q in thousandths and a legal way to write it (`None`: no weight,
/// meaning 1): trailing zeros and the dot may go, 1 may be `1.000`.
fn qvalue() -> impl Strategy<Value = (u16, Option<String>)> {
    prop_oneof![
        Just((1000, None)),
        (0u16..=1000, 0usize..4).prop_map(|(q, strip)| {
            let full = if q == 1000 {
                "1.000".to_string()
            } else {
                format!("0.{q:03}")
            };
            let zeros = full.len() - full.trim_end_matches('0').len();
            let mut t = full[..full.len() - strip.min(zeros)].to_string();
            if t.ends_with('.') && strip > zeros {
                t.pop();
            }
            (q, Some(t))
        }),
    ]
}

/// Accept-Encoding values: mostly lists of known members with legal q
/// values (where ties and exclusions happen), sometimes anything at all.
fn header() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::collection::vec((member_name(), qvalue()), 0..8).prop_map(|m| {
            m.iter()
                .map(|(n, (_, t))| match t {
                    Some(t) => format!("{n};q={t}"),
                    None => n.clone(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        }),
        1 => ".{0,300}",
    ]
}

/// Members the grammar rejects: they must count for nothing.
fn malformed() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("gzip;q=2".to_string()),
        Just("br;q=0.1234".to_string()),
        Just("zstd;q=".to_string()),
        Just("gz ip".to_string()),
        Just("identity;q=1.001".to_string()),
        Just("*;q=abc".to_string()),
        Just("zstd;bogus".to_string()),
        Just("x-gzip;q=-0".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::default())]

    /// Whatever the header and the server's order (duplicates and subsets
    /// included) and whatever codings the env vars forbid, `ranked` is
    /// exactly the acceptable codings, each once: q > 0, in the order, not
    /// forbidden; sorted by q descending, equal q in the server's order.
    #[test]
    fn ranked_is_exactly_the_acceptable_codings_in_order(
        s in header(),
        order in proptest::collection::vec(coding(), 0..6),
        forbid in proptest::collection::vec(coding(), 0..3),
    ) {
        let mut a = Accepted::parse(Some(&s));
        prop_assert!(a.present());
        for &c in &forbid {
            a.forbid(c);
        }
        let got: Vec<(Coding, u16)> = a.ranked(&order).iter_q().collect();
        prop_assert_eq!(got, model_rank(&s, &order, &forbid), "{:?}", s);
        for c in forbid {
            prop_assert_eq!(a.q(c), 0);
        }
        for c in Coding::ALL {
            prop_assert!(a.q(c) <= 1000);
        }
    }

    /// Headers built from members whose meaning is known: every coding's q,
    /// identity's q and preference are what RFC 9110 §12.5.3 gives them
    /// (the highest q of the members naming it, else that of `*`, else 0 for
    /// codings and 1 for identity; `x-gzip` is gzip; malformed members
    /// count for nothing), and case and optional whitespace around `,` and
    /// `;` change nothing.
    #[test]
    fn accept_encoding_from_tokens(
        parts in proptest::collection::vec((member_name(), qvalue(), any::<u64>()), 0..12),
        junk in proptest::collection::vec((0usize..12, malformed()), 0..4),
        noise in any::<u64>(),
    ) {
        let mut canonical: Vec<String> = vec![];
        let mut varied: Vec<String> = vec![];
        for (i, (name, (q, text), bits)) in parts.iter().enumerate() {
            for (at, j) in &junk {
                if *at == i {
                    canonical.push(j.clone());
                    varied.push(j.clone());
                }
            }
            let q_part = text.as_ref().map(|t| format!(";q={t}")).unwrap_or_default();
            canonical.push(format!("{name}{q_part}"));
            let mut b = *bits;
            let mut next = || { b = b.rotate_left(3) ^ 0x9e37_79b9; b };
            let ows = |x: u64| ["", " ", "\t", " \t "][(x % 4) as usize];
            let cased: String = name.chars().map(|ch| if next() % 2 == 0 { ch.to_ascii_uppercase() } else { ch }).collect();
            let q_varied = text.as_ref().map(|t| {
                let qq = if next() % 2 == 0 { "Q" } else { "q" };
                format!("{};{}{qq}={t}", ows(next()), ows(next()))
            }).unwrap_or_default();
            varied.push(format!("{}{cased}{q_varied}{}", ows(next()), ows(next())));
            let _ = q;
        }
        let header = canonical.join(",");
        let a = Accepted::parse(Some(&header));
        // The RFC's reading of the members.
        let best = |want: &dyn Fn(&str) -> bool| {
            parts.iter().filter(|(n, _, _)| want(n)).map(|(_, (q, _), _)| *q).max()
        };
        let star = best(&|n| n == "*");
        for c in Coding::ALL {
            let named = best(&|n| Coding::from_token(n) == Some(c));
            prop_assert_eq!(a.q(c), named.or(star).unwrap_or(0), "{:?} in {:?}", c, header);
        }
        let identity = best(&|n| n.eq_ignore_ascii_case("identity"));
        prop_assert_eq!(a.identity_q(), identity.or(star).unwrap_or(1000), "{:?}", header);
        prop_assert_eq!(a.identity_preference(), identity.or(star).unwrap_or(0), "{:?}", header);
        // Case and whitespace.
        let sep = [",", ", ", " ,\t", ",,"][(noise % 4) as usize];
        let other = varied.join(sep);
        prop_assert_eq!(Accepted::parse(Some(&other)), a, "{:?} vs {:?}", other, header);
    }

    /// Corrupt input never panics or hangs the decoders, and never passes
    /// for the content: a cut stream is an error for every coding; a
    /// mutated gzip (CRC-32 and ISIZE) or checksummed zstd stream either
    /// fails or decodes to exactly the original bytes. `inspect` on the
    /// clean stream declares no length but the true one.
    #[test]
    fn decoders_reject_or_survive_mutations(
        c in coding(),
        data in proptest::collection::vec(any::<u8>(), 0..4000),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        cut in any::<usize>(),
    ) {
        // As the publish tool writes it: zstd with its checksum and size.
        let clean = encoded_with(c, &fast(), &data);
        let cut = cut % clean.len();
        prop_assert!(decode_all(c, &clean[..cut]).is_err(), "{:?} cut at {} of {} decoded", c, cut, clean.len());
        let facts = inspect(c, &clean[..], clean.len() as u64).unwrap();
        if let Some(n) = facts.declared_len {
            prop_assert_eq!(n, data.len() as u64);
        }
        prop_assert_eq!(facts.declared_len.is_some(), c == Coding::Zstd);
        let mut e = clean.clone();
        for (pos, x) in flips {
            let n = e.len();
            e[pos % n] ^= x | 1;
        }
        let whole = decode_all(c, &e);
        if c != Coding::Br {
            if let Ok(out) = &whole {
                prop_assert!(out == &data, "{:?}: a corrupt stream decoded to other bytes", c);
            }
        }
        let _ = decode_all(c, &e[..cut]);
        let _ = inspect(c, &e[..cut], cut as u64);
        let _ = inspect(c, &e[..], e.len() as u64);
    }

    /// The decompress path's `Body` (whole-file decoders for small gzip
    /// and zstd siblings) gives what the streaming decoder gives: the same
    /// bytes, or an error, for clean, mutated, cut and multi-member input.
    #[test]
    fn body_agrees_with_the_streaming_decoder(
        c in coding(),
        data in proptest::collection::vec(any::<u8>(), 0..4000),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
        cut in any::<usize>(),
        members in 1usize..3,
        chunk in 1usize..5000,
    ) {
        let one = encoded_with(c, &fast(), &data);
        let clean = one.repeat(if c == Coding::Br { 1 } else { members });
        let mut e = clean.clone();
        for (pos, x) in flips {
            let n = e.len();
            e[pos % n] ^= x | 1;
        }
        for input in [&clean[..], &e[..], &e[..cut % e.len()]] {
            let len = input.len() as u64;
            let facts = inspect(c, input, len).ok();
            let got = Body::new(c, input, len, facts.as_ref(), chunk).and_then(|mut b| {
                let mut out = Vec::new();
                loop {
                    let (n, eof) = b.fill()?;
                    out.extend_from_slice(b.chunk());
                    assert!(n <= chunk && (eof || n == chunk), "chunk of {n}");
                    if eof {
                        return Ok(out);
                    }
                }
            });
            match (got, decode_all(c, input)) {
                (Ok(a), Ok(b)) => prop_assert!(a == b, "{:?}: bodies differ", c),
                (Err(_), Err(_)) => {}
                (a, b) => prop_assert!(false, "{:?}: {:?} vs {:?}", c, a.map(|v| v.len()), b.map(|v| v.len())),
            }
        }
    }

    #[test]
    fn decoders_round_trip_in_any_chunking(c in coding(), data in proptest::collection::vec(any::<u8>(), 0..20000), chunk in 1usize..5000) {
        let e = encoded_with(c, &fast(), &data);
        let mut d = Decoder::new(c, &e[..]).unwrap();
        let mut out = Vec::new();
        let mut buf = vec![0u8; chunk];
        loop {
            let n = d.read(&mut buf).unwrap();
            if n == 0 { break; }
            out.extend_from_slice(&buf[..n]);
        }
        prop_assert_eq!(out, data);
    }

    #[test]
    fn jitter_framing_never_panics_and_stays_in_the_file(
        c in coding(),
        head in proptest::collection::vec(any::<u8>(), 0..100),
        tail in proptest::collection::vec(any::<u8>(), 0..40),
        len in 0u64..1000,
        pad in 0usize..70000,
    ) {
        if let Ok(s) = jitter::splice(c, &head, &tail, len, pad) {
            prop_assert!(s.start <= s.end && s.end <= len);
        }
    }

    #[test]
    fn jitter_padded_streams_decode(c in coding(), data in proptest::collection::vec(any::<u8>(), 0..5000), pad in 1usize..3000) {
        let e = encoded_with(c, &fast(), &data);
        let tail = &e[e.len().saturating_sub(jitter::brotli_tail_len())..];
        let s = jitter::splice(c, &e[..e.len().min(4096)], tail, e.len() as u64, pad).unwrap();
        let mut out = s.head.clone();
        out.extend_from_slice(&e[s.start as usize..s.end as usize]);
        out.extend_from_slice(&s.tail);
        prop_assert_eq!(decode_all(c, &out).unwrap(), data);
    }

    /// Whatever brotli stream the proof accepts (one-shot streams from any
    /// quality, ending in a look-alike of an empty last meta-block by
    /// design or by chance), padding keeps it
    /// decoding to the same bytes; arbitrary bytes never panic it.
    #[test]
    fn brotli_proof_is_sound(
        data in proptest::collection::vec(any::<u8>(), 0..3000),
        q in 0u32..12,
        noise in proptest::collection::vec(any::<u8>(), 0..200),
        pad in 1usize..70000,
    ) {
        let e = brotli_one_shot(&data, q, 18);
        let _ = jitter::prove_brotli(|o| &noise[o as usize..], noise.len() as u64, 1 << 20);
        let ok = jitter::prove_brotli(|o| &e[o as usize..], e.len() as u64, 1 << 20).is_ok();
        if ok {
            let tail = &e[e.len().saturating_sub(jitter::brotli_tail_len())..];
            let s = jitter::splice(Coding::Br, &[], tail, e.len() as u64, pad).unwrap();
            let mut out = e[..s.end as usize].to_vec();
            out.extend_from_slice(&s.tail);
            prop_assert_eq!(decode_all(Coding::Br, &out).unwrap(), data);
        }
    }
}

//! Property-based fuzzing of the parsers and decoders that see untrusted
//! bytes: Accept-Encoding parsing, the streaming decoders fed corrupt or
//! truncated data, and jitter framing. Bounded for CI; set
//! `PROPTEST_CASES=100000` for a long run.

use mod_gzip_disk_ng::coding::Coding;
use mod_gzip_disk_ng::decode::{decode_all, inspect, probe, Decoder, PROBE_HEAD};
use mod_gzip_disk_ng::jitter;
use mod_gzip_disk_ng::negotiate::Accepted;
use proptest::prelude::*;
use std::io::Write;

fn encoded(c: Coding, data: &[u8]) -> Vec<u8> {
    match c {
        Coding::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        Coding::Zstd => zstd::bulk::compress(data, 1).unwrap(),
        // As the publish tool writes it: ending in an unaligned empty last
        // meta-block (or a byte-aligned one).
        Coding::Br => {
            let l = mod_gzip_disk_ng::publish::encode::Levels {
                brotli_quality: 1,
                brotli_lgwin: 18,
                ..Default::default()
            };
            mod_gzip_disk_ng::publish::encode::encode_vec(Coding::Br, &l, data).unwrap()
        }
    }
}

fn coding() -> impl Strategy<Value = Coding> {
    prop_oneof![Just(Coding::Gzip), Just(Coding::Zstd), Just(Coding::Br)]
}

proptest! {
    #![proptest_config(ProptestConfig::default())]

    #[test]
    fn accept_encoding_never_panics_and_ranks_sanely(s in ".{0,300}") {
        let a = Accepted::parse(Some(&s));
        let r = a.ranked(&Coding::ALL);
        prop_assert!(r.len() <= 3);
        let v: Vec<Coding> = r.iter().collect();
        for w in v.windows(2) {
            prop_assert!(a.q(w[0]) >= a.q(w[1]));
        }
        for c in v {
            prop_assert!(a.q(c) > 0 && a.q(c) <= 1000);
        }
    }

    #[test]
    fn accept_encoding_from_tokens(parts in proptest::collection::vec(
        ("(gzip|br|zstd|identity|\\*|x-gzip|deflate|GZIP)", proptest::option::of(0u16..=1000)), 0..12)) {
        let header: Vec<String> = parts.iter().map(|(n, q)| match q {
            Some(q) => format!("{n};q={}.{:03}", q / 1000, q % 1000),
            None => n.clone(),
        }).collect();
        let a = Accepted::parse(Some(&header.join(", ")));
        // Any coding named with q>0 and never with a higher q of 0 is acceptable.
        for c in Coding::ALL {
            let _ = a.q(c);
        }
        let _ = a.identity_q();
    }

    #[test]
    fn decoders_reject_or_survive_mutations(
        c in coding(),
        data in proptest::collection::vec(any::<u8>(), 0..4000),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        cut in any::<usize>(),
    ) {
        let mut e = encoded(c, &data);
        for (pos, x) in flips {
            let n = e.len();
            e[pos % n] ^= x | 1;
        }
        let cut = cut % (e.len() + 1);
        // Must return (Ok or Err), never panic or hang.
        let _ = decode_all(c, &e[..cut]);
        let _ = decode_all(c, &e);
        let head = &e[..e.len().min(PROBE_HEAD)];
        let _ = probe(c, head, e.len() as u64, None);
        let _ = inspect(c, &e[..cut], cut as u64);
        let _ = inspect(c, &e[..], e.len() as u64);
    }

    #[test]
    fn decoders_round_trip_in_any_chunking(c in coding(), data in proptest::collection::vec(any::<u8>(), 0..20000), chunk in 1usize..5000) {
        let e = encoded(c, &data);
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
        let e = encoded(c, &data);
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
        let mut e = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut e, 4096, q, 18);
            w.write_all(&data).unwrap();
        }
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

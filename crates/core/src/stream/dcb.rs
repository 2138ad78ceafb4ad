//! The `dcb` coder of a stream (RFC 9842): brotli with the client's
//! dictionary as a custom dictionary, in a window that holds the whole
//! dictionary and a stream's own 256 KiB after it, so every byte of the
//! dictionary can be referred to until the page outgrows that window.
//!
//! Hashing the dictionary into brotli's match finder costs more than
//! coding a page, so it is done once per process for each dictionary
//! (by its SHA-256) and quality: that coder's prepared match finder is
//! copied into each new one.

use super::{room, BROTLI_LGWIN};
use crate::dictionary::Hash;
use brotli::enc::backward_references::{CloneWithAlloc, UnionHasher};
use brotli::enc::encode::{
    BrotliEncoderOperation as Op, BrotliEncoderParameter as Param, BrotliEncoderStateStruct,
};
use brotli::enc::StandardAlloc;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};

type BrotliState = BrotliEncoderStateStruct<StandardAlloc>;

/// Prepared dictionaries kept per process: a site has one, and a
/// retrained one replaces it.
const SEEDS: usize = 2;

/// A coder that has taken a dictionary and coded nothing, by the
/// dictionary's hash and the quality: its match finder is what a new
/// coder of that pair copies.
type Seed = ((Hash, u32), Arc<BrotliState>);

/// The prepared dictionaries, the most recently made last.
static PREPARED: Mutex<Vec<Seed>> = Mutex::new(Vec::new());

/// One brotli stream against a dictionary.
pub(super) struct Dcb {
    state: BrotliState,
}

impl Dcb {
    /// A coder at `quality` against `dictionary`, whose hash is `hash`.
    pub(super) fn new(quality: u32, dictionary: &[u8], hash: &Hash) -> Dcb {
        let quality = quality.min(11);
        let seed = prepared((*hash, quality), dictionary);
        let mut state = configured(quality, dictionary.len());
        let hasher: UnionHasher<StandardAlloc> =
            seed.hasher_.clone_with_alloc(&mut StandardAlloc::default());
        state.set_custom_dictionary_with_optional_precomputed_hasher(
            dictionary.len(),
            dictionary,
            hasher,
            false,
        );
        Dcb { state }
    }

    /// Codes `input`; what is ready goes to `out`.
    pub(super) fn write(&mut self, input: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        self.run(Op::BROTLI_OPERATION_PROCESS, input, out)
    }

    /// Makes everything written so far decodable from `out`.
    pub(super) fn flush(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        self.run(Op::BROTLI_OPERATION_FLUSH, &[], out)
    }

    /// Ends the stream.
    pub(super) fn finish(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        self.run(Op::BROTLI_OPERATION_FINISH, &[], out)
    }

    /// Drives the coder over `input` with `op` until it has taken all of
    /// it and has nothing more to give (or, finishing, has ended).
    fn run(&mut self, op: Op, input: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        let mut nop =
            |_: &mut brotli::interface::PredictionModeContextMap<brotli::InputReferenceMut>,
             _: &mut [brotli::interface::StaticCommand],
             _: brotli::InputPair,
             _: &mut StandardAlloc| ();
        let (mut avail_in, mut in_at) = (input.len(), 0);
        loop {
            room(out);
            let mut at = out.len();
            out.resize(out.capacity(), 0);
            let mut avail_out = out.len() - at;
            let ok = self.state.compress_stream(
                op,
                &mut avail_in,
                input,
                &mut in_at,
                &mut avail_out,
                out,
                &mut at,
                &mut None,
                &mut nop,
            );
            out.truncate(at);
            if !ok {
                return Err(io::Error::other("brotli coder refused its input"));
            }
            let done = match op {
                Op::BROTLI_OPERATION_FINISH => self.state.is_finished(),
                _ => avail_in == 0 && !self.state.has_more_output(),
            };
            if done {
                return Ok(());
            }
        }
    }
}

/// A coder's state at `quality` with a window for a dictionary of
/// `dict_len` bytes and a stream's own window after it.
fn configured(quality: u32, dict_len: usize) -> BrotliState {
    let mut state = BrotliState::new(StandardAlloc::default());
    let lgwin = crate::delta_codec::dcb_lgwin(dict_len as u64, 1 << BROTLI_LGWIN);
    state.set_parameter(Param::BROTLI_PARAM_QUALITY, quality);
    state.set_parameter(Param::BROTLI_PARAM_LGWIN, lgwin);
    state
}

/// The prepared coder for `key`: the kept one, else one made now from
/// `dictionary` (the bytes the key's hash names) and kept.
fn prepared(key: (Hash, u32), dictionary: &[u8]) -> Arc<BrotliState> {
    let kept = {
        let seeds = PREPARED.lock().unwrap_or_else(PoisonError::into_inner);
        seeds
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, s)| Arc::clone(s))
    };
    if let Some(s) = kept {
        return s;
    }
    let mut state = configured(key.1, dictionary.len());
    state.set_custom_dictionary(dictionary.len(), dictionary);
    let state = Arc::new(state);
    let mut seeds = PREPARED.lock().unwrap_or_else(PoisonError::into_inner);
    if !seeds.iter().any(|(k, _)| *k == key) {
        if seeds.len() >= SEEDS {
            seeds.remove(0);
        }
        seeds.push((key, Arc::clone(&state)));
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A coder made from the prepared match finder codes exactly as one
    /// that hashed the dictionary itself, for each quality kept apart.
    #[test]
    fn a_prepared_dictionary_codes_as_one_hashed_anew() {
        let text = b"<div class=\"section\"><h2>Directive</h2>";
        let dict: Vec<u8> = (0..200_000usize)
            .map(|i| text[(i * 7 + i / 41) % text.len()])
            .collect();
        let body = [&dict[50_000..90_000], b"own text", &dict[150_000..160_000]].concat();
        let hash = crate::dictionary::hash(&dict);
        for quality in [3, 5] {
            let coded = |mut d: Dcb| {
                let mut out = Vec::new();
                d.write(&body, &mut out).expect("write");
                d.finish(&mut out).expect("finish");
                out
            };
            let mut fresh = configured(quality, dict.len());
            fresh.set_custom_dictionary(dict.len(), &dict);
            let expected = coded(Dcb { state: fresh });
            assert_eq!(
                coded(Dcb::new(quality, &dict, &hash)),
                expected,
                "q{quality}"
            );
            assert_eq!(
                coded(Dcb::new(quality, &dict, &hash)),
                expected,
                "q{quality}"
            );
        }
    }
}

//! Finished streams kept for the next response, per process: the state
//! of a coded response and its buffers are allocated once, not per
//! response (`bench/budget.sh` counts the heap calls of a coded one).

use super::{Mode, Stream};
use std::sync::{Mutex, PoisonError};

/// Streams kept at most: a process's concurrent coded responses, about.
const KEPT: usize = 16;

/// A buffer grown past this goes with its response, so a rare large
/// body does not hold its memory for good.
const BUFFER_KEPT: usize = 256 << 10;

/// The boxes themselves are kept: a response's state lives in one (the
/// filter's context holds a box), and the box is an allocation too.
#[allow(clippy::vec_box)]
static SPARE: Mutex<Vec<Box<Stream>>> = Mutex::new(Vec::new());

/// `s` in a box, a kept one (with its buffers' room) where there is one.
pub(super) fn boxed(mut s: Stream) -> Box<Stream> {
    let kept = SPARE.lock().unwrap_or_else(PoisonError::into_inner).pop();
    let Some(mut b) = kept else {
        return Box::new(s);
    };
    s.held = std::mem::take(&mut b.held);
    s.out = std::mem::take(&mut b.out);
    *b = s;
    b
}

/// Keeps an ended stream's box and buffers for the next response.
pub(super) fn keep(mut b: Box<Stream>) {
    for v in [&mut b.held, &mut b.out] {
        v.clear();
        if v.capacity() > BUFFER_KEPT {
            *v = Vec::new();
        }
    }
    b.delta = None;
    b.pad = None;
    b.mode = Mode::Ended;
    let mut spare = SPARE.lock().unwrap_or_else(PoisonError::into_inner);
    if spare.len() < KEPT {
        spare.push(b);
    }
}

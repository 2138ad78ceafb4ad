//! Finished streams kept for the next response, per process: the state
//! of a coded response and its buffers are allocated once, not per
//! response (`bench/budget.sh` counts the heap calls of a coded one).

use std::sync::{Mutex, PoisonError};

/// Streams kept at most: a process's concurrent coded responses, about.
const KEPT: usize = 16;

/// A buffer grown past this goes with its response, so a rare large
/// body does not hold its memory for good.
const BUFFER_KEPT: usize = 256 << 10;

/// What a kept state gives the next one, and how it is emptied.
pub(super) trait Reuse {
    /// Takes `old`'s buffers (their room) into `self`.
    fn take_room(&mut self, old: &mut Self);
    /// Empties `self` for keeping: no response's bytes stay.
    fn clear(&mut self);
}

/// The boxes themselves are kept: a response's state lives in one (the
/// filter's context holds a box), and the box is an allocation too.
pub(super) struct Pool<T>(Mutex<Vec<Box<T>>>);

impl<T: Reuse> Pool<T> {
    pub(super) const fn new() -> Self {
        Self(Mutex::new(Vec::new()))
    }

    /// `s` in a box, a kept one (with its buffers' room) where there is one.
    pub(super) fn boxed(&self, mut s: T) -> Box<T> {
        let kept = self.0.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let Some(mut b) = kept else {
            return Box::new(s);
        };
        s.take_room(&mut b);
        *b = s;
        b
    }

    /// Keeps an ended state's box and buffers for the next response.
    pub(super) fn keep(&self, mut b: Box<T>) {
        b.clear();
        let mut spare = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if spare.len() < KEPT {
            spare.push(b);
        }
    }
}

/// Empties `v`, and lets its memory go when it grew past [`BUFFER_KEPT`].
pub(super) fn clear_buffer(v: &mut Vec<u8>) {
    v.clear();
    if v.capacity() > BUFFER_KEPT {
        *v = Vec::new();
    }
}

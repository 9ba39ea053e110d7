//! What the client and the server keep alike for their streams.

use std::collections::VecDeque;
use std::hash::Hasher;

use bytes::Bytes;

/// Stream ids are distinct small integers: hashed by a multiplication, not SipHash.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8 | u64::from(*b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A stream's received DATA not yet read: most answers are one chunk, kept without a queue.
#[derive(Default)]
pub(crate) struct Chunks {
    one: Option<Bytes>,
    more: VecDeque<Bytes>,
}

impl Chunks {
    pub fn push(&mut self, b: Bytes) {
        if self.one.is_none() && self.more.is_empty() {
            self.one = Some(b);
        } else {
            self.more.push_back(b);
        }
    }
    pub fn pop(&mut self) -> Option<Bytes> {
        self.one.take().or_else(|| self.more.pop_front())
    }
    pub fn is_empty(&self) -> bool {
        self.one.is_none() && self.more.is_empty()
    }
}

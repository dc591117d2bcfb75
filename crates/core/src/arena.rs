//! An append-only arena with stable addresses, so the hot path can hold plain references.
//!
//! Resources, context nodes and origin nodes are never removed while their engine lives. Storing them
//! here lets an [`Entry`](crate::Entry) borrow them for the engine's lifetime instead of cloning an `Arc`
//! per call (two contended reference-count updates per entry when several threads use one resource).
//! Chunk `k` holds `BASE << k` slots and is allocated on first use; a slot is set once.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

pub(crate) const BASE: usize = 32;
pub(crate) const CHUNKS: usize = 26;

/// One chunk: slots set once each.
type Chunk<T> = Box<[OnceLock<Box<T>>]>;

/// Append-only storage addressed by a `u32` index.
#[derive(Debug)]
pub(crate) struct Arena<T> {
    chunks: [OnceLock<Chunk<T>>; CHUNKS],
    len: AtomicU32,
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Arena {
            chunks: std::array::from_fn(|_| OnceLock::new()),
            len: AtomicU32::new(0),
        }
    }
}

pub(crate) fn locate(index: u32) -> (usize, usize) {
    let i = index as usize / BASE + 1;
    let chunk = (usize::BITS - 1 - i.leading_zeros()) as usize;
    let offset = index as usize - BASE * ((1 << chunk) - 1);
    (chunk, offset)
}

impl<T> Arena<T> {
    /// Stores `value` and returns its index, or gives the value back when the arena is full.
    pub(crate) fn push(&self, value: T) -> Result<u32, T> {
        let index = self.len.fetch_add(1, Ordering::AcqRel);
        let (chunk, offset) = locate(index);
        if chunk >= CHUNKS {
            return Err(value);
        }
        let slots = self.chunks[chunk]
            .get_or_init(|| (0..BASE << chunk).map(|_| OnceLock::new()).collect());
        match slots[offset].set(Box::new(value)) {
            Ok(()) => Ok(index),
            Err(value) => Err(*value),
        }
    }

    /// The value at `index`, if it has been stored.
    #[inline]
    pub(crate) fn get(&self, index: u32) -> Option<&T> {
        let (chunk, offset) = locate(index);
        self.chunks
            .get(chunk)?
            .get()?
            .get(offset)?
            .get()
            .map(|b| &**b)
    }

    /// How many values were stored.
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Acquire) as usize
    }

    /// Every stored value, in index order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        (0..self.len.load(Ordering::Acquire)).filter_map(|i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_walks_the_chunks() {
        assert_eq!(locate(0), (0, 0));
        assert_eq!(locate(31), (0, 31));
        assert_eq!(locate(32), (1, 0));
        assert_eq!(locate(95), (1, 63));
        assert_eq!(locate(96), (2, 0));
    }

    #[test]
    fn push_and_get() {
        let arena = Arena::default();
        for i in 0..1000u32 {
            assert_eq!(arena.push(i * 2), Ok(i));
        }
        assert_eq!(arena.get(999), Some(&1998));
        assert_eq!(arena.get(1000), None);
        assert_eq!(arena.iter().count(), 1000);
    }
}

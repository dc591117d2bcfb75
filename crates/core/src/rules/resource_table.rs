//! A table addressed by resource id: each slot is filled once, on the resource's first entry.
//!
//! Resource ids are dense (`0, 1, 2, …` in creation order), so the rules (or breakers) of a
//! resource are found by indexing rather than by hashing its name. Each rule snapshot has its own
//! table, so a load starts empty and resolves every resource afresh, on its first entry under the
//! new rules. Slots live in chunks of growing size (the same layout as the
//! engine's arena), allocated when the first id in them is seen.

use std::sync::OnceLock;

use crate::arena::{BASE, CHUNKS, locate};

/// Resource id → `T`, each set once.
#[derive(Debug)]
pub(crate) struct ResourceTable<T> {
    chunks: [OnceLock<Box<[OnceLock<T>]>>; CHUNKS],
}

impl<T> Default for ResourceTable<T> {
    fn default() -> Self {
        ResourceTable {
            chunks: std::array::from_fn(|_| OnceLock::new()),
        }
    }
}

impl<T> ResourceTable<T> {
    /// The value of `id`, computed by `init` the first time (`None` past the table's capacity, which
    /// is the arena's).
    #[inline]
    pub(crate) fn get_or_init(&self, id: u32, init: impl FnOnce() -> T) -> Option<&T> {
        let (chunk, offset) = locate(id);
        let slots = self
            .chunks
            .get(chunk)?
            .get_or_init(|| (0..BASE << chunk).map(|_| OnceLock::new()).collect());
        Some(slots.get(offset)?.get_or_init(init))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_each_slot_once() {
        let table = ResourceTable::default();
        assert_eq!(table.get_or_init(0, || 1), Some(&1));
        assert_eq!(table.get_or_init(0, || 2), Some(&1));
        assert_eq!(table.get_or_init(5000, || 3), Some(&3));
        assert_eq!(table.get_or_init(u32::MAX, || 4), None);
    }
}

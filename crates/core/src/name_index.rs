//! A concurrent name → index map tuned for reads: sharded, copy-on-write, lock-free to look up.
//!
//! A lookup hashes the name (Fx), loads one shard's map through `arc-swap` (no shared write on the read
//! path) and probes it. Inserts copy one shard under the engine's creation lock; with 16 shards, building
//! 10,000 names copies about 3 million entries in all, once.

use std::hash::BuildHasher;
use std::sync::Arc;

use arc_swap::ArcSwap;
use rustc_hash::{FxBuildHasher, FxHashMap};

const SHARDS: usize = 16;

/// One shard: an immutable map, swapped whole.
type Shard = ArcSwap<FxHashMap<Arc<str>, u32>>;

/// Names to `u32` indices.
#[derive(Debug)]
pub(crate) struct NameIndex {
    shards: Box<[Shard]>,
}

impl Default for NameIndex {
    fn default() -> Self {
        NameIndex {
            shards: (0..SHARDS).map(|_| ArcSwap::default()).collect(),
        }
    }
}

fn shard_of(name: &str) -> usize {
    (FxBuildHasher.hash_one(name) >> 59) as usize % SHARDS
}

impl NameIndex {
    #[inline]
    pub(crate) fn get(&self, name: &str) -> Option<u32> {
        self.shards[shard_of(name)].load().get(name).copied()
    }

    /// Inserts `name → index`; the caller holds the creation lock.
    pub(crate) fn insert_locked(&self, name: Arc<str>, index: u32) {
        let shard = &self.shards[shard_of(&name)];
        let mut next = (**shard.load()).clone();
        next.insert(name, index);
        shard.store(Arc::new(next));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_and_get() {
        let index = NameIndex::default();
        for i in 0..500u32 {
            index.insert_locked(format!("res-{i}").into(), i);
        }
        assert_eq!(index.get("res-123"), Some(123));
        assert_eq!(index.get("nope"), None);
    }
}

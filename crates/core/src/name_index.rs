//! A concurrent name → index map tuned for reads: sharded, copy-on-write, lock-free to look up.
//!
//! A lookup picks a shard by the name's Fx hash, loads that shard's map through `arc-swap` (no shared
//! write on the read path) and probes it. The maps hash under random keys: names and origins may come
//! from clients, and names made to collide under Fx can at worst crowd one shard, not one bucket (see
//! [`keyed_hash`](crate::keyed_hash)). Inserts copy one shard under the engine's creation lock; with 16 shards, building
//! 10,000 names copies about 3 million entries in all, once.

use std::hash::BuildHasher;
use std::sync::Arc;

use arc_swap::ArcSwap;
use rustc_hash::FxBuildHasher;

use crate::keyed_hash::{KeyedMap, keyed_state};

const SHARDS: usize = 16;

/// One shard: an immutable map, swapped whole.
type Shard = ArcSwap<KeyedMap<Arc<str>, u32>>;

/// Names to `u32` indices.
#[derive(Debug)]
pub(crate) struct NameIndex {
    shards: Box<[Shard]>,
}

impl Default for NameIndex {
    fn default() -> Self {
        NameIndex {
            shards: (0..SHARDS)
                .map(|_| ArcSwap::from_pointee(KeyedMap::with_hasher(keyed_state())))
                .collect(),
        }
    }
}

impl NameIndex {
    fn shard_of(&self, name: &str) -> usize {
        (FxBuildHasher.hash_one(name) >> 59) as usize % SHARDS
    }

    #[inline]
    pub(crate) fn get(&self, name: &str) -> Option<u32> {
        self.shards[self.shard_of(name)].load().get(name).copied()
    }

    /// Inserts `name → index`; the caller holds the creation lock.
    pub(crate) fn insert_locked(&self, name: Arc<str>, index: u32) {
        let shard = &self.shards[self.shard_of(&name)];
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

    #[test]
    fn names_made_to_collide_under_fx_hash_apart() {
        let index = NameIndex::default();
        let [a, b] = crate::keyed_hash::FX_COLLISION;
        index.insert_locked(a.into(), 1);
        index.insert_locked(b.into(), 2);
        assert_eq!((index.get(a), index.get(b)), (Some(1), Some(2)));
        let map = index.shards[index.shard_of(a)].load();
        assert_ne!(map.hasher().hash_one(a), map.hasher().hash_one(b));
    }
}

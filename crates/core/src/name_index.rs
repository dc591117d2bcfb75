//! A concurrent name → index map tuned for reads: sharded, copy-on-write, lock-free to look up.
//!
//! A lookup picks a shard by the name's hash, loads that shard's map through `arc-swap` (no shared
//! write on the read path) and probes it. Both hash under random keys (see
//! [`keyed_hash`](crate::keyed_hash)): names and origins may come from clients, who could otherwise
//! pick names that crowd one shard (each insert copies its shard) or one bucket. Inserts copy one shard under the engine's creation lock; with 16 shards, building
//! 10,000 names copies about 3 million entries in all, once.

use std::hash::BuildHasher;
use std::sync::Arc;

use arc_swap::ArcSwap;
use foldhash::fast::SeedableRandomState;

use crate::keyed_hash::{KeyedMap, keyed_state};

const SHARDS: usize = 16;

/// One shard: an immutable map, swapped whole.
type Shard = ArcSwap<KeyedMap<Arc<str>, u32>>;

/// Names to `u32` indices.
#[derive(Debug)]
pub(crate) struct NameIndex {
    shards: Box<[Shard]>,
    /// Picks a name's shard.
    shard_keys: SeedableRandomState,
    /// Entries copied by inserts, for the tests.
    #[cfg(test)]
    copied: std::sync::atomic::AtomicUsize,
}

impl Default for NameIndex {
    fn default() -> Self {
        NameIndex {
            shards: (0..SHARDS)
                .map(|_| ArcSwap::from_pointee(KeyedMap::with_hasher(keyed_state())))
                .collect(),
            shard_keys: keyed_state(),
            #[cfg(test)]
            copied: Default::default(),
        }
    }
}

impl NameIndex {
    fn shard_of(&self, name: &str) -> usize {
        (self.shard_keys.hash_one(name) >> 60) as usize % SHARDS
    }

    #[inline]
    pub(crate) fn get(&self, name: &str) -> Option<u32> {
        self.shards[self.shard_of(name)].load().get(name).copied()
    }

    /// How many entries inserts have copied.
    #[cfg(test)]
    pub(crate) fn copied(&self) -> usize {
        self.copied.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Inserts `name → index`; the caller holds the creation lock.
    pub(crate) fn insert_locked(&self, name: Arc<str>, index: u32) {
        self.insert_many_locked(vec![(name, index)]);
    }

    /// Inserts every `name → index` of `entries`, copying each shard they touch once (one at a time,
    /// n names copied their shards n times: interning 100,000 origins an authority list named took
    /// seconds); the caller holds the creation lock.
    pub(crate) fn insert_many_locked(&self, entries: Vec<(Arc<str>, u32)>) {
        let mut by_shard: Vec<Vec<(Arc<str>, u32)>> = vec![Vec::new(); SHARDS];
        for (name, index) in entries {
            by_shard[self.shard_of(&name)].push((name, index));
        }
        for (shard, entries) in self.shards.iter().zip(by_shard) {
            if entries.is_empty() {
                continue;
            }
            let current = shard.load();
            #[cfg(test)]
            self.copied
                .fetch_add(current.len(), std::sync::atomic::Ordering::Relaxed);
            let mut next = (**current).clone();
            next.extend(entries);
            shard.store(Arc::new(next));
        }
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
    fn a_batch_copies_each_shard_once() {
        let index = NameIndex::default();
        index.insert_many_locked((0..5000u32).map(|i| (format!("a{i}").into(), i)).collect());
        index.insert_many_locked(
            (5000..10_000u32)
                .map(|i| (format!("a{i}").into(), i))
                .collect(),
        );
        let copied = index.copied();
        assert!(copied <= 5000, "{copied} entries copied");
        assert_eq!((index.get("a0"), index.get("a9999")), (Some(0), Some(9999)));
    }

    #[test]
    fn clients_cannot_pick_names_into_one_shard() {
        use rustc_hash::FxBuildHasher;
        // Names an unseeded hash would put in shard 0: under the index's keys they spread.
        let index = NameIndex::default();
        let crowded: Vec<String> = (0..)
            .map(|i| format!("o{i}"))
            .filter(|n| FxBuildHasher.hash_one(n.as_str()) >> 59 == 0)
            .take(1000)
            .collect();
        for (i, name) in crowded.iter().enumerate() {
            index.insert_locked(name.as_str().into(), i as u32);
        }
        let largest = index.shards.iter().map(|s| s.load().len()).max().unwrap();
        assert!(largest < 200, "{largest} of 1000 names in one shard");
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

//! A concurrent name → index map tuned for reads: sharded open-addressing tables, lock-free to look up.
//!
//! A name's keyed hash (see [`keyed_hash`](crate::keyed_hash): names and origins may come from
//! clients, who could otherwise pick names that crowd one shard or one run of slots) picks its shard
//! by its top bits and its first slot by its low bits. A lookup loads the shard's table through
//! `arc-swap` (no shared write on the read path) and probes linearly: each slot is set once
//! (`OnceLock`) and keeps the hash's middle bits, so a probe compares names only when those agree.
//!
//! Inserts run under the engine's creation lock. One fills an empty slot of the current table, which
//! readers see as soon as it is set; a table more than three quarters full is replaced by one twice as
//! large, built from the old one's entries and swapped in whole. So each entry is copied O(1) times
//! amortized (10,000 names one at a time copy about 10,000 entries in all, not millions), and a
//! reader still holding the old table sees every entry that table had.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwap;
use foldhash::fast::SeedableRandomState;

use crate::keyed_hash::{keyed_map, keyed_state};

const SHARDS: usize = 16;
/// Slots of a shard's first table.
const MIN_SLOTS: usize = 16;

/// One name: its hash's middle bits (the probe's filter), the name and its index.
#[derive(Debug, Clone)]
struct Slot {
    check: u32,
    name: Arc<str>,
    index: u32,
}

/// What placing a name in a table did.
#[derive(Debug, PartialEq, Eq)]
enum Placed {
    /// Set an empty slot, or found the name with the same index.
    Done,
    /// Found the name with another index: a slot is set once, so the table is rebuilt for it.
    Reindexed,
}

/// One shard's table: a power-of-two number of slots, each set at most once.
#[derive(Debug)]
struct Table {
    slots: Box<[OnceLock<Slot>]>,
    mask: usize,
    /// Slots set (changed under the creation lock only).
    len: AtomicUsize,
}

impl Table {
    fn with_slots(slots: usize) -> Self {
        let slots = slots.max(MIN_SLOTS).next_power_of_two();
        Table {
            slots: (0..slots).map(|_| OnceLock::new()).collect(),
            mask: slots - 1,
            len: AtomicUsize::new(0),
        }
    }

    fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Whether `extra` more entries fit under the three-quarters load.
    fn fits(&self, extra: usize) -> bool {
        (self.len() + extra) * 4 <= self.slots.len() * 3
    }

    #[inline]
    fn get(&self, hash: u64, name: &str) -> Option<u32> {
        let check = check_of(hash);
        let mut i = hash as usize & self.mask;
        // At most three quarters of the slots are set, so every probe meets an empty one.
        loop {
            let slot = self.slots[i].get()?;
            if slot.check == check && *slot.name == *name {
                return Some(slot.index);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Sets the first empty slot of `hash`'s probe to `slot` (readers see it from then on), unless the
    /// name is there already. The caller holds the creation lock and checked that it fits.
    fn place(&self, hash: u64, mut slot: Slot) -> Placed {
        let mut i = hash as usize & self.mask;
        loop {
            match self.slots[i].get() {
                None => match self.slots[i].set(slot) {
                    Ok(()) => {
                        self.len.fetch_add(1, Ordering::Relaxed);
                        return Placed::Done;
                    }
                    // Set meanwhile (only the lock holder sets slots, so not in practice): probed
                    // again like any set slot.
                    Err(back) => slot = back,
                },
                Some(s) if s.check == slot.check && s.name == slot.name => {
                    return if s.index == slot.index {
                        Placed::Done
                    } else {
                        Placed::Reindexed
                    };
                }
                Some(_) => i = (i + 1) & self.mask,
            }
        }
    }

    fn entries(&self) -> impl Iterator<Item = &Slot> {
        self.slots.iter().filter_map(OnceLock::get)
    }
}

/// The probe's filter: bits of the hash that pick neither the shard (top) nor, below 2^28 slots, the
/// first slot (bottom).
#[inline]
fn check_of(hash: u64) -> u32 {
    (hash >> 28) as u32
}

/// Names to `u32` indices.
#[derive(Debug)]
pub(crate) struct NameIndex {
    shards: Box<[ArcSwap<Table>]>,
    /// Hashes names (the shard, the first slot and the filter all come from one hash).
    keys: SeedableRandomState,
    /// Entries copied into new tables, for the tests.
    #[cfg(test)]
    copied: AtomicUsize,
}

impl Default for NameIndex {
    fn default() -> Self {
        NameIndex {
            shards: (0..SHARDS)
                .map(|_| ArcSwap::from_pointee(Table::with_slots(MIN_SLOTS)))
                .collect(),
            keys: keyed_state(),
            #[cfg(test)]
            copied: Default::default(),
        }
    }
}

impl NameIndex {
    #[inline]
    fn shard_of(hash: u64) -> usize {
        (hash >> 60) as usize % SHARDS
    }

    #[inline]
    pub(crate) fn get(&self, name: &str) -> Option<u32> {
        let hash = self.keys.hash_one(name);
        self.shards[Self::shard_of(hash)].load().get(hash, name)
    }

    /// How many entries inserts have copied.
    #[cfg(test)]
    pub(crate) fn copied(&self) -> usize {
        self.copied.load(Ordering::Relaxed)
    }

    /// Inserts `name → index`; the caller holds the creation lock.
    pub(crate) fn insert_locked(&self, name: Arc<str>, index: u32) {
        self.insert_many_locked(vec![(name, index)]);
    }

    /// Inserts every `name → index` of `entries` (a name inserted again takes the new index). A shard
    /// that must grow for them grows once, to fit them all (one at a time, a batch of n names would
    /// grow a shard up to log n times: still O(n) copies, only more of them). The caller holds the
    /// creation lock.
    pub(crate) fn insert_many_locked(&self, entries: Vec<(Arc<str>, u32)>) {
        let mut by_shard: Vec<Vec<(u64, Slot)>> = vec![Vec::new(); SHARDS];
        for (name, index) in entries {
            let hash = self.keys.hash_one(&*name);
            let slot = Slot {
                check: check_of(hash),
                name,
                index,
            };
            by_shard[Self::shard_of(hash)].push((hash, slot));
        }
        for (shard, entries) in self.shards.iter().zip(by_shard) {
            if entries.is_empty() {
                continue;
            }
            let current = shard.load();
            if current.fits(entries.len()) {
                let mut rest = entries.into_iter();
                let Some(first) = rest
                    .by_ref()
                    .find(|(hash, slot)| current.place(*hash, slot.clone()) == Placed::Reindexed)
                else {
                    continue;
                };
                // A name given another index (no caller does this): rebuilt with the new one.
                let next = self.rebuilt(&current, std::iter::once(first).chain(rest).collect());
                shard.store(Arc::new(next));
            } else {
                let next = self.rebuilt(&current, entries);
                shard.store(Arc::new(next));
            }
        }
    }

    /// A table holding `table`'s entries and then `entries` (a later entry's index replacing an earlier
    /// one's of the same name), at most three eighths full: room to double before the next rebuild.
    fn rebuilt(&self, table: &Table, entries: Vec<(u64, Slot)>) -> Table {
        let mut all: Vec<(u64, Slot)> = table
            .entries()
            .map(|slot| (self.keys.hash_one(&*slot.name), slot.clone()))
            .collect();
        #[cfg(test)]
        self.copied.fetch_add(all.len(), Ordering::Relaxed);
        all.extend(entries);
        let next = Table::with_slots(all.len() * 8 / 3 + 1);
        let mut reindexed = Vec::new();
        for (hash, slot) in all {
            if next.place(hash, slot.clone()) == Placed::Reindexed {
                reindexed.push(slot);
            }
        }
        if reindexed.is_empty() {
            return next;
        }
        // Rare (see above): the last index of each name wins.
        let mut last = keyed_map::<Arc<str>, u32>();
        last.extend(
            next.entries()
                .map(|s| (s.name.clone(), s.index))
                .chain(reindexed.into_iter().map(|s| (s.name, s.index))),
        );
        let again = Table::with_slots(last.len() * 8 / 3 + 1);
        for (name, index) in last {
            let hash = self.keys.hash_one(&*name);
            let check = check_of(hash);
            again.place(hash, Slot { check, name, index });
        }
        again
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

    /// One name at a time, as resources are created: each insert copied its whole shard (10,000 names
    /// copied about 3 million entries); now tables double, and each entry is copied O(1) times.
    #[test]
    fn inserting_one_name_at_a_time_copies_each_entry_a_bounded_number_of_times() {
        let index = NameIndex::default();
        for i in 0..10_000u32 {
            index.insert_locked(format!("res-{i}").into(), i);
        }
        let copied = index.copied();
        assert!(
            copied <= 10_000,
            "{copied} entries copied for 10,000 inserts"
        );
        assert!((0..10_000u32).all(|i| index.get(&format!("res-{i}")) == Some(i)));
        let slots: usize = index.shards.iter().map(|s| s.load().slots.len()).sum();
        assert!(slots <= 4 * 10_000, "{slots} slots for 10,000 names");
    }

    #[test]
    fn a_name_inserted_again_takes_its_new_index() {
        let index = NameIndex::default();
        index.insert_locked("a".into(), 1);
        index.insert_locked("b".into(), 2);
        index.insert_locked("a".into(), 3);
        assert_eq!((index.get("a"), index.get("b")), (Some(3), Some(2)));
        index.insert_many_locked(vec![("c".into(), 4), ("c".into(), 5), ("b".into(), 6)]);
        assert_eq!(
            (index.get("a"), index.get("b"), index.get("c")),
            (Some(3), Some(6), Some(5))
        );
        index.insert_many_locked((0..100u32).map(|i| (format!("n{i}").into(), i)).collect());
        index.insert_many_locked(
            (0..100u32)
                .map(|i| (format!("n{i}").into(), i + 1000))
                .collect(),
        );
        assert!((0..100u32).all(|i| index.get(&format!("n{i}")) == Some(i + 1000)));
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
        assert_ne!(index.keys.hash_one(a), index.keys.hash_one(b));
    }
}

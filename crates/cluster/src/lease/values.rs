//! The leases of hot-parameter values: a table sharded by key, each shard behind its own lock.
//!
//! Values come and go by the thousand (one per user, say), so the table is changed in place, one
//! shard at a time: a new value locks only its shard, and the table is never copied (the leases of
//! flow rules, few and fixed, live in a copy-on-write map instead). At most [`MAX_LEASES`] values
//! are kept; a value past them has no lease and its rule is checked locally.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::service::MAX_LEASES;
use super::tokens::Lease;

/// Shards of the table.
const SHARDS: usize = 16;

/// A shard: per flow id, each value's lease by its window key
/// ([`Param::window_key`](crate::protocol::Param::window_key)), so that a value is found by a
/// borrowed key.
type Shard = HashMap<i64, HashMap<String, Arc<Lease>>>;

/// The leases of hot-parameter values.
#[derive(Debug)]
pub(crate) struct ValueLeases {
    shards: Box<[Mutex<Shard>]>,
    hasher: RandomState,
    len: AtomicUsize,
}

impl Default for ValueLeases {
    fn default() -> Self {
        ValueLeases {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            hasher: RandomState::new(),
            len: AtomicUsize::new(0),
        }
    }
}

fn lock(shard: &Mutex<Shard>) -> MutexGuard<'_, Shard> {
    shard.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ValueLeases {
    fn shard(&self, flow_id: i64, key: &str) -> &Mutex<Shard> {
        let at = self.hasher.hash_one((flow_id, key)) as usize % SHARDS;
        &self.shards[at]
    }

    /// The lease of the value with window key `key` of the rule `flow_id`, made by `make` if there
    /// is none and the table has room.
    pub(crate) fn get_or_make(
        &self,
        flow_id: i64,
        key: &str,
        make: impl FnOnce() -> Lease,
    ) -> Option<Arc<Lease>> {
        let mut shard = lock(self.shard(flow_id, key));
        if let Some(lease) = shard.get(&flow_id).and_then(|values| values.get(key)) {
            return Some(Arc::clone(lease));
        }
        // Reserved before it is made, so that shards filling at once never pass the limit.
        if self.len.fetch_add(1, Ordering::Relaxed) >= MAX_LEASES {
            self.len.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        let lease = Arc::new(make());
        shard
            .entry(flow_id)
            .or_default()
            .insert(key.to_owned(), Arc::clone(&lease));
        Some(lease)
    }

    /// Keeps only the leases `keep` says so of.
    pub(crate) fn retain(&self, mut keep: impl FnMut(&Lease) -> bool) {
        for shard in &self.shards {
            let mut shard = lock(shard);
            let mut dropped = 0;
            shard.retain(|_, values| {
                let before = values.len();
                values.retain(|_, lease| keep(lease));
                dropped += before - values.len();
                !values.is_empty()
            });
            self.len.fetch_sub(dropped, Ordering::Relaxed);
        }
    }

    /// The flow ids of the values kept.
    pub(crate) fn flow_ids(&self) -> Vec<i64> {
        let mut ids = Vec::new();
        for shard in &self.shards {
            ids.extend(lock(shard).keys().copied());
        }
        ids
    }

    /// The most members the source reported for any value of the rule `flow_id`, if it has one.
    pub(crate) fn members(&self, flow_id: i64) -> Option<u32> {
        self.shards
            .iter()
            .filter_map(|shard| {
                let shard = lock(shard);
                shard
                    .get(&flow_id)?
                    .values()
                    .map(|lease| lease.members())
                    .max()
            })
            .max()
    }

    /// The values kept.
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use floodgate_core::cluster::TokenRequest;

    use super::*;

    #[test]
    fn the_table_keeps_at_most_its_limit_and_makes_room_as_values_go() {
        let table = ValueLeases::default();
        let request = TokenRequest::new(7, 1, "r", 10.0);
        let make = || Lease::new(&request, None);
        for i in 0..MAX_LEASES {
            assert!(table.get_or_make(7, &format!("s:{i}"), make).is_some());
        }
        assert_eq!(table.len(), MAX_LEASES);
        let kept = table.get_or_make(7, "s:0", make).unwrap();
        assert!(
            table.get_or_make(7, "s:new", make).is_none(),
            "full: a new value has no lease"
        );
        assert!(Arc::ptr_eq(
            &kept,
            &table.get_or_make(7, "s:0", make).unwrap()
        ));
        let mut n = 0;
        table.retain(|_| {
            n += 1;
            n % 2 == 0
        });
        assert_eq!(table.len(), MAX_LEASES / 2);
        assert!(table.get_or_make(7, "s:new", make).is_some());
        let mut ids = table.flow_ids();
        ids.dedup();
        assert_eq!(ids, [7]);
        assert_eq!(table.members(7), Some(1));
        assert_eq!(table.members(8), None);
    }
}

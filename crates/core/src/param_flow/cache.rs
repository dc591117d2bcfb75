//! The per-rule value cache: a bounded, sharded map from argument values to their limiter state, which
//! never forgets a value while forgetting it would change a decision.
//!
//! ```text
//!            hash(value) ──► shard (high bits) ──► slot (low bits, linear probing)
//!  ┌─ shard 0 (mutex) ─────────────────────┐
//!  │ index: [0, 3, 0, 1, 2, 0, 0, 0]       │  open addressing: hash tag + entry number (0 = empty)
//!  │ entries: [e0, e1, e2] ◄── hand        │  value, hash, cell; scanned from the hand for eviction
//!  │ overflow: cell                        │  shared by values that found no room
//!  └───────────────────────────────────────┘
//! ```
//!
//! Keys are (scope, value) pairs: the scope is the resource, so a regex rule that matches several
//! resources keeps their values apart (Sentinel keeps parameter metrics per resource). Lookups hash the
//! borrowed argument and compare it with the stored key in place, so a value already in the cache costs
//! no allocation; a new value is stored compactly (inline for numbers and short strings).
//! The capacity counts values across all shards. When the cache is full, a new value may take the place
//! of a *settled* one: a value whose state is what a brand-new value would start with (its bucket would
//! be full again, its pacing slot has passed, no call of it is in flight). Evicting a settled value is
//! lossless, so an evicted value that comes back is judged exactly as if it had been kept (Sentinel's LRU
//! instead resets a hot value's bucket: PF-02). When no settled value is found among the next few from
//! the shard's hand, the new value is judged against the shard's shared *overflow* cell, a single state
//! with the rule's threshold that all such values draw from: a flood of distinct values can exhaust it,
//! but can never buy any value a fresh bucket. Exception items are pinned (never evicted) and always
//! find room. Evictions and overflows are counted for the status API.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::param::{ParamValue, StoredValue, hash_value};

/// A value's state before its first admission.
pub(crate) const NEVER: u64 = u64::MAX;

/// How many entries from the hand an insertion into a full shard examines for a settled one.
const SCAN: usize = 32;

/// The limiter state of one value under one rule. What `stamp` and `level` mean depends on the rule's
/// controller (see the controllers); `threshold` is the value's own (the rule's count or an item's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cell {
    /// A time in ms, or [`NEVER`] before the first admission.
    pub(crate) stamp: u64,
    /// Tokens left (token bucket) or calls in flight (concurrency).
    pub(crate) level: i64,
    /// The value's threshold.
    pub(crate) threshold: i64,
}

impl Cell {
    /// A value that was never admitted.
    pub(crate) const fn new(threshold: i64) -> Self {
        Cell {
            stamp: NEVER,
            level: 0,
            threshold,
        }
    }
}

/// One value: exactly one cache line, so a lookup that finds it touches one line of the entries.
#[derive(Debug)]
#[repr(align(64))]
struct Entry {
    hash: u64,
    scope: u32,
    key: StoredValue,
    cell: Cell,
    pinned: bool,
}

#[derive(Debug)]
struct Shard {
    /// Open-addressing index: the hash's high 32 bits (a tag, compared before the entry is touched) and
    /// the entry number + 1 in the low 32 bits; 0 for an empty slot. Empty or a power of two at most
    /// half full.
    index: Vec<u64>,
    entries: Vec<Entry>,
    hand: usize,
    overflow: Cell,
}

impl Shard {
    #[inline(always)]
    fn find(&self, hash: u64, scope: u32, value: &ParamValue<'_>) -> Option<usize> {
        if self.index.is_empty() {
            return None;
        }
        let mask = self.index.len() - 1;
        let mut slot = hash as usize & mask;
        loop {
            let s = self.index[slot];
            if s == 0 {
                return None;
            }
            if s >> 32 == hash >> 32 {
                let n = (s as u32 - 1) as usize;
                let e = &self.entries[n];
                if e.hash == hash && e.scope == scope && e.key.matches(value) {
                    return Some(n);
                }
            }
            slot = (slot + 1) & mask;
        }
    }

    /// Puts entry `n` into the index (the index has room).
    fn index_insert(&mut self, hash: u64, n: usize) {
        let mask = self.index.len() - 1;
        let mut slot = hash as usize & mask;
        while self.index[slot] != 0 {
            slot = (slot + 1) & mask;
        }
        self.index[slot] = (hash & !0xffff_ffff) | (n as u64 + 1);
    }

    /// Takes entry `n` out of the index, shifting later entries of its probe run back (no tombstones).
    fn index_remove(&mut self, n: usize) {
        let mask = self.index.len() - 1;
        let mut hole = self.entries[n].hash as usize & mask;
        while self.index[hole] as u32 as usize != n + 1 {
            hole = (hole + 1) & mask;
        }
        let mut next = hole;
        loop {
            next = (next + 1) & mask;
            let m = self.index[next] as u32 as usize;
            if m == 0 {
                break;
            }
            let home = self.entries[m - 1].hash as usize & mask;
            // The entry at `next` may move into the hole if the hole lies on its probe path.
            if (next.wrapping_sub(home) & mask) >= (next.wrapping_sub(hole) & mask) {
                self.index[hole] = self.index[next];
                hole = next;
            }
        }
        self.index[hole] = 0;
    }

    fn push(&mut self, entry: Entry) -> usize {
        if (self.entries.len() + 1) * 2 > self.index.len() {
            let size = (self.index.len() * 2).max(8);
            self.index = vec![0; size];
            for n in 0..self.entries.len() {
                self.index_insert(self.entries[n].hash, n);
            }
        }
        let n = self.entries.len();
        let hash = entry.hash;
        self.entries.push(entry);
        self.index_insert(hash, n);
        n
    }

    /// A settled, unpinned entry among the next [`SCAN`] from the hand.
    fn settled(&mut self, settled: &impl Fn(&Cell) -> bool) -> Option<usize> {
        let len = self.entries.len();
        if len == 0 {
            return None;
        }
        let mut n = self.hand % len;
        for _ in 0..SCAN.min(len) {
            let e = &self.entries[n];
            let next = (n + 1) % len;
            if !e.pinned && settled(&e.cell) {
                self.hand = next;
                return Some(n);
            }
            n = next;
        }
        self.hand = n;
        None
    }

    fn replace(&mut self, n: usize, entry: Entry) {
        self.index_remove(n);
        let hash = entry.hash;
        self.entries[n] = entry;
        self.index_insert(hash, n);
    }
}

/// What a new value needs: its threshold and whether it is an exception item (pinned).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NewValue {
    pub(crate) threshold: i64,
    pub(crate) pinned: bool,
}

/// A bounded, sharded map from values to [`Cell`]s (see the module docs).
#[derive(Debug)]
pub(crate) struct ValueCache {
    shards: Box<[Mutex<Shard>]>,
    /// `64 - log2(shards)`: the hash's high bits pick the shard.
    shift: u32,
    seed: u64,
    capacity: usize,
    len: AtomicUsize,
    evictions: AtomicU64,
    overflows: AtomicU64,
}

impl ValueCache {
    /// A cache of at most `capacity` values (exception items come on top); the overflow cells use
    /// `threshold`.
    pub(crate) fn new(capacity: usize, threshold: i64) -> Self {
        let capacity = capacity.max(1);
        // About 64 values a shard, at most 64 shards (a power of two).
        let shards = (capacity / 64).clamp(1, 64);
        let shards = 1usize << (usize::BITS - 1 - shards.leading_zeros());
        ValueCache {
            shards: (0..shards)
                .map(|_| {
                    Mutex::new(Shard {
                        index: Vec::new(),
                        entries: Vec::new(),
                        hand: 0,
                        overflow: Cell::new(threshold),
                    })
                })
                .collect(),
            shift: 64 - shards.trailing_zeros(),
            seed: RandomState::new().hash_one(0x5eed_u64),
            capacity,
            len: AtomicUsize::new(0),
            evictions: AtomicU64::new(0),
            overflows: AtomicU64::new(0),
        }
    }

    /// The hash `value` is filed under in `scope`; `None` for `Null` and lists.
    #[inline]
    pub(crate) fn hash(&self, scope: u32, value: &ParamValue<'_>) -> Option<u64> {
        hash_value(
            self.seed ^ u64::from(scope).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            value,
        )
    }

    /// The hash of `value` regardless of scope (for the rule's exception items).
    pub(crate) fn item_hash(&self, value: &ParamValue<'_>) -> Option<u64> {
        hash_value(!self.seed, value)
    }

    #[inline]
    fn shard(&self, hash: u64) -> MutexGuard<'_, Shard> {
        let i = if self.shift >= 64 {
            0
        } else {
            (hash >> self.shift) as usize
        };
        self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the cell of `value` in `scope` (filed under `hash`, see [`hash`](Self::hash)),
    /// adding the value if it is new: into free room,
    /// else in place of a settled value (`settled` tells which are), else on the shard's overflow cell.
    /// `f`'s second argument says whether the cell is that shared overflow cell. `new` gives a new
    /// value's threshold.
    #[inline]
    pub(crate) fn with_cell<R>(
        &self,
        hash: u64,
        scope: u32,
        value: &ParamValue<'_>,
        new: impl FnOnce() -> NewValue,
        settled: impl Fn(&Cell) -> bool,
        f: impl FnOnce(&mut Cell, bool) -> R,
    ) -> R {
        let mut shard = self.shard(hash);
        if let Some(n) = shard.find(hash, scope, value) {
            return f(&mut shard.entries[n].cell, false);
        }
        let (cell, shared) = self.add(&mut shard, hash, scope, value, new(), settled);
        f(cell, shared)
    }

    /// Adds `value` to `shard` (see [`with_cell`](Self::with_cell)): its new cell, or the shard's
    /// overflow cell (`true`). Out of line, so that the lookup of a known value stays small.
    #[inline(never)]
    fn add<'s>(
        &self,
        shard: &'s mut Shard,
        hash: u64,
        scope: u32,
        value: &ParamValue<'_>,
        new: NewValue,
        settled: impl Fn(&Cell) -> bool,
    ) -> (&'s mut Cell, bool) {
        let NewValue { threshold, pinned } = new;
        let Some(key) = StoredValue::from_value(value) else {
            return (&mut shard.overflow, true);
        };
        let entry = Entry {
            hash,
            scope,
            key,
            cell: Cell::new(threshold),
            pinned,
        };
        if pinned || self.reserve() {
            let n = shard.push(entry);
            return (&mut shard.entries[n].cell, false);
        }
        if let Some(n) = shard.settled(&settled) {
            self.evictions.fetch_add(1, Ordering::Relaxed);
            shard.replace(n, entry);
            return (&mut shard.entries[n].cell, false);
        }
        self.overflows.fetch_add(1, Ordering::Relaxed);
        (&mut shard.overflow, true)
    }

    /// Runs `f` on the cell of `value` if it is cached (never adds it).
    #[inline]
    pub(crate) fn peek<R>(
        &self,
        hash: u64,
        scope: u32,
        value: &ParamValue<'_>,
        f: impl FnOnce(&mut Cell) -> R,
    ) -> Option<R> {
        let mut shard = self.shard(hash);
        let n = shard.find(hash, scope, value)?;
        Some(f(&mut shard.entries[n].cell))
    }

    /// Runs `f` on the cell of `value` if it is cached, else on its shard's overflow cell.
    pub(crate) fn cell_or_overflow<R>(
        &self,
        hash: u64,
        scope: u32,
        value: &ParamValue<'_>,
        f: impl FnOnce(&mut Cell) -> R,
    ) -> R {
        let mut shard = self.shard(hash);
        match shard.find(hash, scope, value) {
            Some(n) => f(&mut shard.entries[n].cell),
            None => f(&mut shard.overflow),
        }
    }

    /// Counts one more value against the capacity, if there is room.
    fn reserve(&self) -> bool {
        self.len
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < self.capacity).then_some(n + 1)
            })
            .is_ok()
    }

    /// The most values kept (exception items come on top).
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Values cached now (exception items included).
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).entries.len())
            .sum()
    }

    /// Settled values dropped to make room for new ones.
    pub(crate) fn evictions(&self) -> u64 {
        self.evictions.load(Ordering::Relaxed)
    }

    /// Checks of new values that found no room and were judged against a shared overflow cell.
    pub(crate) fn overflows(&self) -> u64 {
        self.overflows.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: NewValue = NewValue {
        threshold: 5,
        pinned: false,
    };

    fn touch(c: &ValueCache, v: &ParamValue<'_>, settled: bool) -> (Cell, bool) {
        let h = c.hash(0, v).unwrap();
        c.with_cell(
            h,
            0,
            v,
            || PLAIN,
            |_| settled,
            |cell, shared| {
                cell.level += 1;
                (*cell, shared)
            },
        )
    }

    #[test]
    fn values_keep_their_cells() {
        let c = ValueCache::new(100, 5);
        for round in 1..=3 {
            for i in 0..100 {
                let (cell, shared) = touch(&c, &ParamValue::Int(i), false);
                assert!(!shared);
                assert_eq!(cell.level, round);
            }
        }
        assert_eq!(c.len(), 100);
        let s = ParamValue::from("100");
        assert_eq!(
            touch(&c, &s, false),
            (
                Cell {
                    level: 1,
                    ..Cell::new(5)
                },
                true
            )
        );
        assert_eq!(c.overflows(), 1);
        assert_eq!(c.evictions(), 0);
        let h = c.hash(0, &ParamValue::Int(7)).unwrap();
        assert_eq!(c.peek(h, 0, &ParamValue::Int(7), |c| c.level), Some(3));
        assert_eq!(
            c.peek(h, 1, &ParamValue::Int(7), |c| c.level),
            None,
            "another scope"
        );
        let h = c.hash(0, &s).unwrap();
        assert_eq!(c.peek(h, 0, &s, |c| c.level), None);
    }

    #[test]
    fn a_full_cache_replaces_settled_values_only() {
        let c = ValueCache::new(4, 5);
        for i in 0..4 {
            touch(&c, &ParamValue::Int(i), false);
        }
        // Nothing settled: the overflow cell is shared by every newcomer.
        assert!(touch(&c, &ParamValue::Int(10), false).1);
        assert!(touch(&c, &ParamValue::Int(11), false).1);
        assert_eq!(c.overflows(), 2);
        // Everything settled: newcomers take their places, one eviction each.
        for i in 10..14 {
            let (cell, shared) = touch(&c, &ParamValue::Int(i), true);
            assert!(!shared);
            assert_eq!(cell.level, 1, "a new value starts from a fresh cell");
        }
        assert_eq!((c.len(), c.evictions()), (4, 4));
        for i in 10..14 {
            let h = c.hash(0, &ParamValue::Int(i)).unwrap();
            assert!(c.peek(h, 0, &ParamValue::Int(i), |_| ()).is_some(), "{i}");
        }
        for i in 0..4 {
            let h = c.hash(0, &ParamValue::Int(i)).unwrap();
            assert!(c.peek(h, 0, &ParamValue::Int(i), |_| ()).is_none(), "{i}");
        }
    }

    #[test]
    fn pinned_values_always_find_room_and_stay() {
        let c = ValueCache::new(2, 5);
        touch(&c, &ParamValue::Int(1), false);
        touch(&c, &ParamValue::Int(2), false);
        let vip = ParamValue::from("vip");
        let h = c.hash(0, &vip).unwrap();
        let pinned = NewValue {
            threshold: 100,
            pinned: true,
        };
        let cell = c.with_cell(
            h,
            0,
            &vip,
            || pinned,
            |_| true,
            |cell, shared| {
                assert!(!shared);
                *cell
            },
        );
        assert_eq!(cell.threshold, 100);
        for i in 3..50 {
            touch(&c, &ParamValue::Int(i), true);
        }
        assert!(
            c.peek(h, 0, &vip, |_| ()).is_some(),
            "pinned values are never evicted"
        );
    }

    #[test]
    fn removal_keeps_probe_runs_intact() {
        // Many replacements in one small shard exercise the backward-shift deletion.
        let c = ValueCache::new(16, 5);
        for round in 0..50i64 {
            for i in 0..16 {
                touch(&c, &ParamValue::Int(round * 16 + i), true);
            }
            for i in 0..16 {
                let v = ParamValue::Int(round * 16 + i);
                let h = c.hash(0, &v).unwrap();
                assert!(
                    c.peek(h, 0, &v, |_| ()).is_some(),
                    "round {round} value {i}"
                );
            }
        }
        assert_eq!(c.len(), 16);
    }

    #[test]
    fn an_entry_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Entry>(), 64);
    }

    #[test]
    fn shards_scale_with_capacity() {
        assert_eq!(ValueCache::new(10, 1).shards.len(), 1);
        assert_eq!(ValueCache::new(200, 1).shards.len(), 2);
        assert_eq!(ValueCache::new(4000, 1).shards.len(), 32);
        assert_eq!(ValueCache::new(200_000, 1).shards.len(), 64);
        let c = ValueCache::new(4000, 1);
        for i in 0..4000 {
            touch(&c, &ParamValue::Int(i), false);
        }
        assert_eq!(
            (c.len(), c.overflows()),
            (4000, 0),
            "the capacity is global, not per shard"
        );
    }
}

//! The per-rule value cache: a bounded, sharded map from argument values to their limiter state, which
//! never forgets a value while forgetting it would change a decision.
//!
//! ```text
//!            hash(value) ──► shard (high bits) ──► slot (low bits, linear probing)
//!  ┌─ shard 0 (mutex) ──────────────────────────────────────┐
//!  │ slots: [·, s2, ·, s0, s1, ·, ·, ·]  ◄── hand           │  hash, scope, kind, key no., state
//!  │ keys:  [k0, k1, k2]                                    │  the stored values (strings compared here)
//!  │ overflow: cell                                         │  shared by values that found no room
//!  └────────────────────────────────────────────────────────┘
//! ```
//!
//! Keys are (scope, value) pairs: the scope is the resource, so a regex rule that matches several
//! resources keeps their values apart (Sentinel keeps parameter metrics per resource). A value's slot
//! (32 bytes, two to a cache line) holds its hash, scope, kind and limiter state, so finding a boolean,
//! integer or float touches one line: their hash is a bijection of the value ([`hash_value`]), so an
//! equal hash, scope and kind *is* an equal value. A string is also compared with its stored key.
//! Lookups hash the borrowed argument, so a value already in the cache costs no allocation; a new value
//! is stored compactly (inline for numbers and short strings). Tables grow to stay at most ¾ full.
//!
//! The capacity counts values across all shards. When the cache is full, a new value may take the place
//! of a *settled* one: a value whose state is what a brand-new value would start with (its bucket would
//! be full again, its pacing slot has passed, no call of it is in flight). Evicting a settled value is
//! lossless, so an evicted value that comes back is judged exactly as if it had been kept (Sentinel's LRU
//! instead resets a hot value's bucket: `a_flood_of_distinct_values_cannot_reset_a_hot_value`). When no settled value is found among the next few from
//! the shard's hand, the new value is judged against the shard's shared *overflow* cell, a single state
//! with the rule's threshold that all such values draw from: a flood of distinct values can exhaust it,
//! but can never buy any value a fresh bucket. Nor can room found later: a value added while the
//! overflow cell is not settled may have drawn from it, so it starts from the overflow cell's state, not
//! a fresh one, which would give it its threshold twice in a window
//! (`a_value_that_drew_from_the_overflow_cell_gets_no_fresh_bucket_later`). Exception
//! items are pinned (never evicted) and always find room (up to 2²⁷ values in one shard). Evictions and
//! overflows are counted for the status API.

use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use foldhash::SharedSeed;

use crate::keyed_hash::{random_u64, shared_seed};
use crate::param::{ParamValue, StoredValue, ValueKind, hash_value};

/// A value's state before its first admission.
pub(crate) const NEVER: u64 = u64::MAX;

/// How many values from the hand an insertion into a full shard examines for a settled one.
const SCAN: usize = 32;

/// The limiter state of one value under one rule. What `stamp` and `level` mean depends on the rule's
/// controller (see the controllers); `threshold` is the value's own (the rule's count or an item's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cell {
    /// A time (ms for token buckets, ns for pacing), or [`NEVER`] before the first admission.
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

/// `Slot::meta`: the key number + 1 (0: an empty slot).
const KEY: u32 = (1 << 27) - 1;
/// `Slot::meta`: the value is an exception item (never evicted).
const PINNED: u32 = 1 << 27;
/// `Slot::meta`: the value's threshold is its key's, not the cache's.
const OWN_THRESHOLD: u32 = 1 << 28;
/// `Slot::meta`: where the value's [`ValueKind`] is kept (2 bits).
const KIND_SHIFT: u32 = 29;

/// One value: its identity and its state, half a cache line.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(32))]
struct Slot {
    hash: u64,
    scope: u32,
    /// Key number + 1, flags and kind (see the constants above); 0 for an empty slot.
    meta: u32,
    stamp: u64,
    level: i64,
}

impl Slot {
    fn key(&self) -> usize {
        (self.meta & KEY) as usize - 1
    }
}

/// A stored value, with its own threshold when it differs from the cache's: half a cache line, so
/// comparing a string touches one line more.
#[derive(Debug, Clone)]
#[repr(align(32))]
struct Key {
    value: StoredValue,
    threshold: i64,
}

#[derive(Debug, Clone)]
struct Shard {
    /// Open addressing with linear probing: empty or a power of two, at most ¾ full.
    slots: Vec<Slot>,
    /// One per filled slot, numbered as the slots' `meta` says; an evicted value's number is reused.
    keys: Vec<Key>,
    /// The position of each key's slot. Searches for a settled value walk these (dense) rather than the
    /// slots (a quarter to a half empty: unpredictable branches).
    positions: Vec<u32>,
    /// Where the next search for a settled value starts (a key number).
    hand: usize,
    overflow: Cell,
}

fn kind_bits(kind: ValueKind) -> u32 {
    (kind as u32) << KIND_SHIFT
}

impl Shard {
    /// The position of the slot of `value` (of `kind`, filed under `hash` in `scope`).
    #[inline(always)]
    fn find(
        &self,
        hash: u64,
        scope: u32,
        kind: ValueKind,
        value: &ParamValue<'_>,
    ) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut pos = hash as usize & mask;
        loop {
            let s = &self.slots[pos];
            if s.meta == 0 {
                return None;
            }
            if s.hash == hash
                && s.scope == scope
                && s.meta >> KIND_SHIFT == kind as u32
                && (kind.hash_is_identity() || self.keys[s.key()].value.matches(value))
            {
                debug_assert!(self.keys[s.key()].value.matches(value));
                return Some(pos);
            }
            pos = (pos + 1) & mask;
        }
    }

    /// Runs `f` on the state of the value in slot `pos`.
    #[inline(always)]
    fn with_slot<R>(&mut self, pos: usize, threshold: i64, f: impl FnOnce(&mut Cell) -> R) -> R {
        let mut cell = self.cell(pos, threshold);
        let r = f(&mut cell);
        let s = &mut self.slots[pos];
        s.stamp = cell.stamp;
        s.level = cell.level;
        r
    }

    /// The state of the value in slot `pos` (`threshold` unless the value has its own).
    #[inline(always)]
    fn cell(&self, pos: usize, threshold: i64) -> Cell {
        let s = &self.slots[pos];
        Cell {
            stamp: s.stamp,
            level: s.level,
            threshold: if s.meta & OWN_THRESHOLD != 0 {
                self.keys[s.key()].threshold
            } else {
                threshold
            },
        }
    }

    /// Puts `slot` into the table (which has room; its key is in place); its position.
    fn place(&mut self, slot: Slot) -> usize {
        let mask = self.slots.len() - 1;
        let mut pos = slot.hash as usize & mask;
        while self.slots[pos].meta != 0 {
            pos = (pos + 1) & mask;
        }
        self.move_to(pos, slot);
        pos
    }

    /// Writes `slot` at `pos`, telling its key.
    fn move_to(&mut self, pos: usize, slot: Slot) {
        self.positions[slot.key()] = pos as u32;
        self.slots[pos] = slot;
    }

    /// Empties slot `pos`, shifting later slots of its probe run back (no tombstones).
    fn remove(&mut self, pos: usize) {
        let mask = self.slots.len() - 1;
        let mut hole = pos;
        let mut next = pos;
        loop {
            next = (next + 1) & mask;
            let s = self.slots[next];
            if s.meta == 0 {
                break;
            }
            let home = s.hash as usize & mask;
            // The slot at `next` may move into the hole if the hole lies on its probe path.
            if (next.wrapping_sub(home) & mask) >= (next.wrapping_sub(hole) & mask) {
                self.move_to(hole, s);
                hole = next;
            }
        }
        self.slots[hole] = Slot::default();
    }

    /// Adds a value with a new key number; its slot's position.
    fn push(&mut self, mut slot: Slot, key: Key) -> usize {
        if (self.keys.len() + 1) * 4 > self.slots.len() * 3 {
            let size = (self.slots.len() * 2).max(8);
            let old = std::mem::replace(&mut self.slots, vec![Slot::default(); size]);
            for s in old.into_iter().filter(|s| s.meta != 0) {
                self.place(s);
            }
        }
        self.keys.push(key);
        self.positions.push(0);
        slot.meta |= self.keys.len() as u32;
        self.place(slot)
    }

    /// The slot position of a settled, unpinned value among the next [`SCAN`] from the hand.
    fn settled(&mut self, threshold: i64, settled: &impl Fn(&Cell) -> bool) -> Option<usize> {
        let len = self.keys.len();
        if len == 0 {
            return None;
        }
        let mut n = self.hand % len;
        for _ in 0..SCAN.min(len) {
            let pos = self.positions[n] as usize;
            let next = (n + 1) % len;
            if self.slots[pos].meta & PINNED == 0 && settled(&self.cell(pos, threshold)) {
                self.hand = next;
                return Some(pos);
            }
            n = next;
        }
        self.hand = n;
        None
    }

    /// Whether [`settled`](Self::settled) would find a value (changes nothing).
    fn has_settled(&self, threshold: i64, settled: &impl Fn(&Cell) -> bool) -> bool {
        let len = self.keys.len();
        (0..SCAN.min(len)).any(|i| {
            let pos = self.positions[(self.hand + i) % len] as usize;
            self.slots[pos].meta & PINNED == 0 && settled(&self.cell(pos, threshold))
        })
    }

    /// The state a value added now starts from: a fresh one, or the overflow cell's while that is not
    /// settled (the value may have drawn from it).
    fn initial(&self, new: NewValue, settled: &impl Fn(&Cell) -> bool) -> Cell {
        if new.pinned || settled(&self.overflow) {
            Cell::new(new.threshold)
        } else {
            Cell {
                threshold: new.threshold,
                ..self.overflow
            }
        }
    }

    /// Puts a new value in the place of the one in slot `pos`; the new slot's position.
    fn replace(&mut self, pos: usize, mut slot: Slot, key: Key) -> usize {
        let number = self.slots[pos].key();
        self.remove(pos);
        self.keys[number] = key;
        slot.meta |= number as u32 + 1;
        self.place(slot)
    }
}

/// What a new value needs: its threshold and whether it is an exception item (pinned).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NewValue {
    pub(crate) threshold: i64,
    pub(crate) pinned: bool,
}

/// A shard on cache lines of its own: its lock and its table's address are on one line, and no two
/// shards share a line (112 bytes each, unaligned, they did).
#[derive(Debug)]
#[repr(align(128))]
struct Aligned(Mutex<Shard>);

/// A bounded, sharded map from values to [`Cell`]s (see the module docs).
#[derive(Debug)]
pub(crate) struct ValueCache {
    /// Made on first use: most rules of a long list see no value for a while, and 32 shards of 128
    /// bytes for each of 20,000 rules took most of a reload's time (and 80 MB) to make and drop.
    shards: OnceLock<Box<[Aligned]>>,
    /// How many shards there are once made (a power of two).
    shard_count: usize,
    /// `64 - log2(shards)`: the hash's high bits pick the shard.
    shift: u32,
    seed: u64,
    /// The process's random keys, for strings.
    strings: &'static SharedSeed,
    /// The threshold of values without one of their own (exception items always have their own), and
    /// of the overflow cells. Changed only for a cache a THREAD rule takes over from its predecessor
    /// ([`set_threshold`](Self::set_threshold)).
    threshold: AtomicI64,
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
            shards: OnceLock::new(),
            shard_count: shards,
            shift: 64 - shards.trailing_zeros(),
            seed: random_u64(),
            strings: shared_seed(),
            threshold: AtomicI64::new(threshold),
            capacity,
            len: AtomicUsize::new(0),
            evictions: AtomicU64::new(0),
            overflows: AtomicU64::new(0),
        }
    }

    /// A copy: the same values under the same keys, with their states, and the same counts (for a
    /// rule reloaded with only its `id` changed). Copied shard by shard: what calls change meanwhile
    /// in shards already copied is not in the copy.
    pub(crate) fn duplicate(&self) -> ValueCache {
        // Exactly the copied values that count against the capacity (exception items do not).
        let mut len = 0;
        let shards = OnceLock::new();
        if let Some(from) = self.shards.get() {
            let copied: Box<[Aligned]> = from
                .iter()
                .map(|s| {
                    let shard = s.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
                    len += shard
                        .slots
                        .iter()
                        .filter(|slot| slot.meta != 0 && slot.meta & PINNED == 0)
                        .count();
                    Aligned(Mutex::new(shard))
                })
                .collect();
            let _ = shards.set(copied);
        }
        ValueCache {
            shards,
            shard_count: self.shard_count,
            shift: self.shift,
            seed: self.seed,
            strings: self.strings,
            threshold: AtomicI64::new(self.threshold()),
            capacity: self.capacity,
            len: AtomicUsize::new(len),
            evictions: AtomicU64::new(self.evictions.load(Ordering::Relaxed)),
            overflows: AtomicU64::new(self.overflows.load(Ordering::Relaxed)),
        }
    }

    /// The threshold of values without one of their own.
    #[inline]
    fn threshold(&self) -> i64 {
        self.threshold.load(Ordering::Relaxed)
    }

    /// Changes the threshold of values without one of their own (a THREAD rule that takes this cache
    /// over, with its calls in flight, from a rule of another count).
    pub(crate) fn set_threshold(&self, threshold: i64) {
        self.threshold.store(threshold, Ordering::Relaxed);
    }

    /// The hash `value` is filed under in `scope`; `None` for `Null` and lists.
    #[inline]
    pub(crate) fn hash(&self, scope: u32, value: &ParamValue<'_>) -> Option<u64> {
        hash_value(
            self.seed ^ u64::from(scope).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            self.strings,
            value,
        )
    }

    /// The hash of `value` regardless of scope (for the rule's exception items).
    pub(crate) fn item_hash(&self, value: &ParamValue<'_>) -> Option<u64> {
        hash_value(!self.seed, self.strings, value)
    }

    /// The shards, made on first use (their overflow cells with the threshold then in force).
    #[inline]
    fn shards(&self) -> &[Aligned] {
        self.shards.get_or_init(|| {
            let threshold = self.threshold();
            (0..self.shard_count)
                .map(|_| {
                    Aligned(Mutex::new(Shard {
                        slots: Vec::new(),
                        keys: Vec::new(),
                        positions: Vec::new(),
                        hand: 0,
                        overflow: Cell::new(threshold),
                    }))
                })
                .collect()
        })
    }

    #[inline]
    fn shard(&self, hash: u64) -> MutexGuard<'_, Shard> {
        let i = if self.shift >= 64 {
            0
        } else {
            (hash >> self.shift) as usize
        };
        self.shards()[i].0.lock().unwrap_or_else(|e| e.into_inner())
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
        let Some(kind) = ValueKind::of(value) else {
            return f(&mut shard.overflow, true);
        };
        let pos = match shard.find(hash, scope, kind, value) {
            Some(pos) => pos,
            None => match self.add(&mut shard, hash, scope, kind, value, new(), settled) {
                Some(pos) => pos,
                None => return f(&mut shard.overflow, true),
            },
        };
        shard.with_slot(pos, self.threshold(), |cell| f(cell, false))
    }

    /// Adds `value` to `shard` (see [`with_cell`](Self::with_cell)): its new slot's position, or `None`
    /// for the shard's overflow cell. Out of line, so that the lookup of a known value stays small.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn add(
        &self,
        shard: &mut Shard,
        hash: u64,
        scope: u32,
        kind: ValueKind,
        value: &ParamValue<'_>,
        new: NewValue,
        settled: impl Fn(&Cell) -> bool,
    ) -> Option<usize> {
        let NewValue { threshold, pinned } = new;
        let value = StoredValue::from_value(value)?;
        let initial = shard.initial(new, &settled);
        let mut meta = kind_bits(kind);
        if pinned {
            meta |= PINNED;
        }
        // Exception items have thresholds of their own (kept even when one equals the rule's, which
        // may change under it: see `set_threshold`); any other value follows the cache's, so a value
        // that a call still under a replaced rule adds does not keep that rule's count for good
        // (`a_value_added_under_the_replaced_rule_follows_the_new_count`).
        if pinned {
            meta |= OWN_THRESHOLD;
        }
        let slot = Slot {
            hash,
            scope,
            meta,
            stamp: initial.stamp,
            level: initial.level,
        };
        let key = Key { value, threshold };
        if shard.keys.len() < KEY as usize && (pinned || self.reserve()) {
            return Some(shard.push(slot, key));
        }
        if let Some(pos) = shard.settled(self.threshold(), &settled) {
            self.evictions.fetch_add(1, Ordering::Relaxed);
            return Some(shard.replace(pos, slot, key));
        }
        self.overflows.fetch_add(1, Ordering::Relaxed);
        None
    }

    /// Runs `f` on a copy of the cell [`with_cell`](Self::with_cell) would give `value` now (changes
    /// nothing): its own, else a new value's (in free room or a settled value's place), else the
    /// overflow cell's (`f`'s second argument: whether it is that shared cell).
    pub(crate) fn judge<R>(
        &self,
        hash: u64,
        scope: u32,
        value: &ParamValue<'_>,
        new: impl FnOnce() -> NewValue,
        settled: impl Fn(&Cell) -> bool,
        f: impl FnOnce(&mut Cell, bool) -> R,
    ) -> R {
        let shard = self.shard(hash);
        let Some(kind) = ValueKind::of(value) else {
            return f(&mut shard.overflow.clone(), true);
        };
        if let Some(pos) = shard.find(hash, scope, kind, value) {
            return f(&mut shard.cell(pos, self.threshold()), false);
        }
        let new = new();
        // A value other than an exception item follows the cache's threshold once added (see `add`).
        let new = NewValue {
            threshold: if new.pinned {
                new.threshold
            } else {
                self.threshold()
            },
            ..new
        };
        let room = shard.keys.len() < KEY as usize
            && (new.pinned || self.len.load(Ordering::Relaxed) < self.capacity);
        if room || shard.has_settled(self.threshold(), &settled) {
            f(&mut shard.initial(new, &settled), false)
        } else {
            f(&mut shard.overflow.clone(), true)
        }
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
        let pos = shard.find(hash, scope, ValueKind::of(value)?, value)?;
        Some(shard.with_slot(pos, self.threshold(), f))
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
        let pos = ValueKind::of(value).and_then(|kind| shard.find(hash, scope, kind, value));
        match pos {
            Some(pos) => shard.with_slot(pos, self.threshold(), f),
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
        self.shards.get().map_or(0, |shards| {
            shards
                .iter()
                .map(|s| s.0.lock().unwrap_or_else(|e| e.into_inner()).keys.len())
                .sum()
        })
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

    /// Every key knows its slot, every filled slot its key, and every slot is reachable from its home.
    fn assert_consistent(c: &ValueCache) {
        for shard in c.shards().iter() {
            let shard = shard.0.lock().unwrap();
            let filled = shard.slots.iter().filter(|s| s.meta != 0).count();
            assert_eq!(filled, shard.keys.len());
            assert_eq!(shard.positions.len(), shard.keys.len());
            for (n, &at) in shard.positions.iter().enumerate() {
                let slot = &shard.slots[at as usize];
                assert_eq!(slot.key(), n);
                let mask = shard.slots.len() - 1;
                let mut pos = slot.hash as usize & mask;
                while pos != at as usize {
                    assert_ne!(
                        shard.slots[pos].meta, 0,
                        "a hole in the probe run of key {n}"
                    );
                    pos = (pos + 1) & mask;
                }
            }
        }
    }

    fn touch(c: &ValueCache, v: &ParamValue<'_>, settled: bool) -> (Cell, bool) {
        touch_with(c, v, |_| settled)
    }

    fn touch_with(
        c: &ValueCache,
        v: &ParamValue<'_>,
        settled: impl Fn(&Cell) -> bool,
    ) -> (Cell, bool) {
        let h = c.hash(0, v).unwrap();
        c.with_cell(
            h,
            0,
            v,
            || PLAIN,
            settled,
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
    fn equal_hashes_of_other_kinds_or_strings_keep_their_own_cells() {
        let c = ValueCache::new(100, 5);
        let hash = 0x1234_5678_9abc_def0;
        let values = [
            ParamValue::Int(1),
            ParamValue::Float(f64::from_bits(1)),
            ParamValue::Bool(true),
            ParamValue::from("a"),
            ParamValue::from("b"),
        ];
        for round in 1..=2 {
            for v in &values {
                let level = c.with_cell(
                    hash,
                    0,
                    v,
                    || PLAIN,
                    |_| false,
                    |cell, shared| {
                        assert!(!shared);
                        cell.level += 1;
                        cell.level
                    },
                );
                assert_eq!(level, round, "{v:?}");
            }
        }
        assert_eq!(c.len(), values.len());
        assert_consistent(&c);
    }

    #[test]
    fn strings_made_to_collide_under_fx_do_not_collide_here() {
        let [a, b] = crate::keyed_hash::FX_COLLISION;
        let c = ValueCache::new(100, 5);
        let (a, b) = (ParamValue::from(a), ParamValue::from(b));
        assert_ne!(c.hash(0, &a), c.hash(0, &b));
    }

    #[test]
    fn a_full_cache_replaces_settled_values_only() {
        let c = ValueCache::new(4, 5);
        for i in 0..4 {
            touch(&c, &ParamValue::Int(i), false);
            touch(&c, &ParamValue::Int(i), false);
        }
        // Nothing settled: the overflow cell is shared by every newcomer.
        assert!(touch(&c, &ParamValue::Int(10), false).1);
        assert!(touch(&c, &ParamValue::Int(11), false).1);
        assert_eq!(c.overflows(), 2);
        // The old values settled (touched twice; a newcomer once): newcomers take their places, one
        // eviction each.
        for i in 10..14 {
            let (cell, shared) = touch_with(&c, &ParamValue::Int(i), |c| c.level >= 2);
            assert!(!shared);
            assert_eq!(cell.level, 1, "a new value starts from a fresh cell");
        }
        assert_eq!((c.len(), c.evictions()), (4, 4));
        assert_consistent(&c);
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
        // Values of earlier rounds are settled; each round's values replace them.
        let c = ValueCache::new(16, 5);
        for round in 0..50i64 {
            for i in 0..16 {
                let v = ParamValue::Int(round * 16 + i);
                let h = c.hash(0, &v).unwrap();
                let shared = c.with_cell(
                    h,
                    0,
                    &v,
                    || PLAIN,
                    |cell| cell.level <= round,
                    |cell, shared| {
                        cell.level = round + 1;
                        shared
                    },
                );
                assert!(!shared, "round {round} value {i}");
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
        assert_eq!((c.len(), c.evictions()), (16, 49 * 16));
        assert_consistent(&c);
    }

    #[test]
    fn a_slot_is_half_a_cache_line() {
        assert_eq!(std::mem::size_of::<Slot>(), 32);
        assert_eq!(std::mem::size_of::<Key>(), 32);
    }

    #[test]
    fn shards_scale_with_capacity() {
        assert_eq!(ValueCache::new(10, 1).shards().len(), 1);
        assert_eq!(ValueCache::new(200, 1).shards().len(), 2);
        assert_eq!(ValueCache::new(4000, 1).shards().len(), 32);
        assert_eq!(ValueCache::new(200_000, 1).shards().len(), 64);
        let c = ValueCache::new(4000, 1);
        for i in 0..4000 {
            touch(&c, &ParamValue::Int(i), false);
        }
        assert_eq!(
            (c.len(), c.overflows()),
            (4000, 0),
            "the capacity is global, not per shard"
        );
        assert_consistent(&c);
    }
}

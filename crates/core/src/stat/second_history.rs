//! The minute window: a ring of 60 one-second records, fed from the second window.
//!
//! Sentinel counts every event twice, once in the 1 s window and once in a 60 × 1 s window. Floodgate
//! counts each event once, in the 1 s window, and moves a finished bucket's values here when its cells are
//! recycled (see `cell.rs`: the recycling writer owns the old value). A second's figures are therefore the
//! record here plus whatever is still pending in the second window's cells; the node adds the two.
//!
//! The ring is allocated on the first fold, so a resource seen once costs no minute window until a bucket
//! of it finishes. Records are plain `u32`s (saturating) behind a mutex that only recycling writers
//! (a few times a second per node) and readers take. A recycling writer holds it from before it takes a
//! value out of its cell until the value is folded in, and a reader while it reads the history and the
//! cells, so a reader never finds a value in neither place (nor in both).

use std::sync::{Mutex, MutexGuard};

use super::leap_array::Event;

/// Seconds kept.
pub(crate) const HISTORY_SECONDS: u64 = 60;

/// One second of one node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SecondRecord {
    /// Epoch second (ms / 1000).
    pub(crate) second: u64,
    pub(crate) pass: u64,
    pub(crate) block: u64,
    pub(crate) success: u64,
    pub(crate) exception: u64,
    pub(crate) rt: u64,
    pub(crate) occupied_pass: u64,
}

impl SecondRecord {
    pub(crate) fn add(&mut self, event: Event, value: u64) {
        let field = match event {
            Event::Pass => &mut self.pass,
            Event::Block => &mut self.block,
            Event::Success => &mut self.success,
            Event::Exception => &mut self.exception,
            Event::Rt => &mut self.rt,
            Event::OccupiedPass => &mut self.occupied_pass,
        };
        *field = field.saturating_add(value);
    }

    pub(crate) fn merge(&mut self, other: &SecondRecord) {
        self.pass += other.pass;
        self.block += other.block;
        self.success += other.success;
        self.exception += other.exception;
        self.rt += other.rt;
        self.occupied_pass += other.occupied_pass;
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pass == 0
            && self.block == 0
            && self.success == 0
            && self.exception == 0
            && self.occupied_pass == 0
    }
}

/// 28 bytes: the epoch second fits 32 bits until 2106.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    second: u32,
    pass: u32,
    block: u32,
    success: u32,
    exception: u32,
    rt: u32,
    occupied_pass: u32,
}

/// The last 60 seconds of a node, as folded out of its second window.
#[derive(Debug, Default)]
pub(crate) struct SecondHistory {
    ring: Mutex<Option<Box<[Slot; HISTORY_SECONDS as usize]>>>,
}

impl SecondHistory {
    /// Holds the history: while held, no recycling writer of the node moves a value (the node takes it
    /// before a write that would recycle a cell, see `StatisticNode`), so the history and the cells read
    /// together are consistent.
    pub(crate) fn lock(&self) -> HistoryGuard<'_> {
        HistoryGuard(self.ring.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Adds `value` of `event` to `second` (see [`HistoryGuard::fold`]).
    #[cfg(test)]
    pub(crate) fn fold(&self, second: u64, event: Event, value: u32) {
        self.lock().fold(second, event, value);
    }

    /// The folded records for seconds in `from..=to` (see [`HistoryGuard::range`]).
    #[cfg(test)]
    pub(crate) fn range(&self, from: u64, to: u64) -> Vec<SecondRecord> {
        self.lock().range(from, to)
    }
}

/// The history, held (see [`SecondHistory::lock`]).
pub(crate) struct HistoryGuard<'a>(MutexGuard<'a, Option<Box<[Slot; HISTORY_SECONDS as usize]>>>);

impl HistoryGuard<'_> {
    /// Adds `value` of `event` to `second`. A second older than what its slot holds is dropped.
    pub(crate) fn fold(&mut self, second: u64, event: Event, value: u32) {
        if value == 0 {
            return;
        }
        let ring = self
            .0
            .get_or_insert_with(|| Box::new([Slot::default(); HISTORY_SECONDS as usize]));
        let Ok(stamp) = u32::try_from(second) else {
            return;
        };
        let slot = &mut ring[(second % HISTORY_SECONDS) as usize];
        if slot.second != stamp {
            if slot.second > stamp {
                return;
            }
            *slot = Slot {
                second: stamp,
                ..Slot::default()
            };
        }
        let field = match event {
            Event::Pass => &mut slot.pass,
            Event::Block => &mut slot.block,
            Event::Success => &mut slot.success,
            Event::Exception => &mut slot.exception,
            Event::Rt => &mut slot.rt,
            Event::OccupiedPass => &mut slot.occupied_pass,
        };
        *field = field.saturating_add(value);
    }

    /// The folded record of `second` (zeros if it is not held), without allocating.
    pub(crate) fn get(&self, second: u64) -> SecondRecord {
        read_slot(self.0.as_deref(), second)
    }

    /// The folded records for seconds in `from..=to` (at most the last 60), oldest first, one per second.
    pub(crate) fn range(&self, from: u64, to: u64) -> Vec<SecondRecord> {
        let from = from.max(to.saturating_sub(HISTORY_SECONDS - 1));
        (from..=to)
            .map(|second| read_slot(self.0.as_deref(), second))
            .collect()
    }
}

fn read_slot(ring: Option<&[Slot; HISTORY_SECONDS as usize]>, second: u64) -> SecondRecord {
    let mut record = SecondRecord {
        second,
        ..SecondRecord::default()
    };
    if let Some(slot) = ring.map(|r| &r[(second % HISTORY_SECONDS) as usize]) {
        if u64::from(slot.second) == second {
            record.pass = u64::from(slot.pass);
            record.block = u64::from(slot.block);
            record.success = u64::from(slot.success);
            record.exception = u64::from(slot.exception);
            record.rt = u64::from(slot.rt);
            record.occupied_pass = u64::from(slot.occupied_pass);
        }
    }
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_by_second_and_drops_older_than_the_slot() {
        let h = SecondHistory::default();
        h.fold(100, Event::Pass, 3);
        h.fold(100, Event::Pass, 2);
        h.fold(101, Event::Block, 1);
        let r = h.range(100, 101);
        assert_eq!(r[0].pass, 5);
        assert_eq!(r[1].block, 1);
        h.fold(160, Event::Pass, 7); // recycles second 100's slot
        h.fold(100, Event::Pass, 9); // too old for the slot now
        assert_eq!(h.range(100, 100)[0].pass, 0);
        assert_eq!(h.range(160, 160)[0].pass, 7);
    }

    #[test]
    fn range_is_capped_to_sixty_seconds() {
        let h = SecondHistory::default();
        assert_eq!(h.range(0, 1000).len(), 60);
        assert_eq!(h.range(990, 1000).len(), 11);
    }
}

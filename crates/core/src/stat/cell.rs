//! Tagged atomic cells: a counter that knows which window it belongs to.
//!
//! A cell is one `AtomicU64` holding `(tag: u32, value + 1: u32)`, where the tag is the index of the time
//! window (`t / window_length`, truncated to 32 bits) that the value counts; all-zero means empty (values
//! saturate at `u32::MAX − 1`). Writers change a cell with one compare-and-swap:
//!
//! * same tag: add to the value (saturating, never wrapping into the tag);
//! * older tag: the cell still holds a finished window; replace it with `(tag, n)` and hand the old value
//!   back to the caller, which folds it into the per-second history (the CAS makes that hand-over exact: each
//!   old value is moved out by exactly one writer);
//! * newer tag: the writer is stale (it read the clock before another thread moved on, or the clock stepped
//!   back). It never writes into the newer window; its update is dropped.
//!
//! This is the "reset tagged with the window start" that keeps a stale writer out of a recycled bucket,
//! without a lock and without a separate reset phase.

use std::sync::atomic::{AtomicU64, Ordering};

/// How many times a write retries a contended CAS before giving up (the update is then dropped).
const MAX_RETRIES: u32 = 256;

/// The largest value a cell holds.
const MAX_VALUE: u32 = u32::MAX - 1;

#[inline]
pub(crate) const fn pack(tag: u32, value: u32) -> u64 {
    let value = if value > MAX_VALUE { MAX_VALUE } else { value };
    ((tag as u64) << 32) | (value as u64 + 1)
}

/// `(tag, value)`, or `None` for an empty cell.
#[inline]
pub(crate) const fn unpack(cell: u64) -> Option<(u32, u32)> {
    let low = cell as u32;
    if low == 0 {
        None
    } else {
        Some(((cell >> 32) as u32, low - 1))
    }
}

/// How far ahead of a writer's window a cell's tag may be and still be a newer window (a stale writer,
/// a clock stepped back). A tag farther ahead on the 32-bit circle is a window so old that the circle
/// wrapped: the cell sat idle for about 2³¹ windows (25 days of 1 ms windows), and it is recycled like
/// any finished window. (Read as newer, it made every write stale and every read 0 for as long again.)
pub(crate) const MAX_LEAD: u32 = 1 << 20;

/// Whether tag `a` is a newer window than tag `b`: ahead of it on the 32-bit circle by at most
/// [`MAX_LEAD`].
#[inline]
pub(crate) const fn is_newer(a: u32, b: u32) -> bool {
    let ahead = a.wrapping_sub(b);
    ahead != 0 && ahead <= MAX_LEAD
}

/// What a tagged write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AddOutcome {
    /// Added to the value of the same window.
    Added,
    /// Replaced a finished window; its tag and value are returned for folding.
    Recycled { old_tag: u32, old_value: u32 },
    /// The cell holds a newer window (stale writer or clock stepped back); nothing was written.
    Stale,
}

/// Adds `n` to the cell for window `tag`.
#[inline]
pub(crate) fn add(cell: &AtomicU64, tag: u32, n: u32) -> AddOutcome {
    update::<true>(cell, tag, |v| v.saturating_add(n), n).unwrap_or(AddOutcome::Stale)
}

/// Adds `n` to the cell if it holds window `tag` (or a newer one: `Stale`, nothing written); `None`,
/// without writing, when the cell is empty or holds a finished window, for the caller to [`add`] under
/// whatever lock makes its hand-over of the old value atomic to its readers.
#[inline]
pub(crate) fn add_current(cell: &AtomicU64, tag: u32, n: u32) -> Option<AddOutcome> {
    update::<false>(cell, tag, |v| v.saturating_add(n), n)
}

/// Lowers the cell's value to `value` for window `tag` (a minimum, such as the minimum RT).
#[inline]
pub(crate) fn min(cell: &AtomicU64, tag: u32, value: u32) -> AddOutcome {
    if let Some((t, v)) = unpack(cell.load(Ordering::Relaxed)) {
        if t == tag && v <= value {
            return AddOutcome::Added;
        }
    }
    update::<true>(cell, tag, |v| v.min(value), value).unwrap_or(AddOutcome::Stale)
}

/// The compare-and-swap loop of the writes. `RECYCLE == false`: an empty cell or a finished window is
/// left as it is, and `None` comes back (see [`add_current`]); with `true` the result is always `Some`.
#[inline]
fn update<const RECYCLE: bool>(
    cell: &AtomicU64,
    tag: u32,
    same: impl Fn(u32) -> u32,
    fresh: u32,
) -> Option<AddOutcome> {
    let mut current = cell.load(Ordering::Relaxed);
    for _ in 0..MAX_RETRIES {
        let (next, outcome) = match unpack(current) {
            Some((t, v)) if t == tag => (pack(tag, same(v)), AddOutcome::Added),
            Some((t, _)) if is_newer(t, tag) => return Some(AddOutcome::Stale),
            _ if !RECYCLE => return None,
            None => (pack(tag, fresh), AddOutcome::Added),
            Some((t, v)) => (
                pack(tag, fresh),
                AddOutcome::Recycled {
                    old_tag: t,
                    old_value: v,
                },
            ),
        };
        if next == current {
            return Some(outcome);
        }
        match cell.compare_exchange_weak(current, next, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return Some(outcome),
            Err(actual) => current = actual,
        }
    }
    Some(AddOutcome::Stale)
}

/// Empties the cell if it holds a window older than `current`, handing back `(tag, value)`.
pub(crate) fn take_older(cell: &AtomicU64, current: u32) -> Option<(u32, u32)> {
    let mut packed = cell.load(Ordering::Relaxed);
    loop {
        let (tag, value) = unpack(packed)?;
        if tag == current || is_newer(tag, current) {
            return None;
        }
        match cell.compare_exchange_weak(packed, 0, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return Some((tag, value)),
            Err(actual) => packed = actual,
        }
    }
}

/// The value the cell holds for window `tag`, if it holds that window.
#[inline]
pub(crate) fn read(cell: &AtomicU64, tag: u32) -> Option<u32> {
    match unpack(cell.load(Ordering::Relaxed)) {
        Some((t, v)) if t == tag => Some(v),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_tag_adds_and_saturates() {
        let cell = AtomicU64::new(pack(7, 0));
        assert_eq!(add(&cell, 7, 3), AddOutcome::Added);
        assert_eq!(read(&cell, 7), Some(3));
        add(&cell, 7, u32::MAX);
        assert_eq!(
            read(&cell, 7),
            Some(MAX_VALUE),
            "saturates, never spills into the tag"
        );
    }

    #[test]
    fn older_tag_is_recycled_and_handed_back() {
        let cell = AtomicU64::new(pack(7, 5));
        assert_eq!(
            add(&cell, 9, 2),
            AddOutcome::Recycled {
                old_tag: 7,
                old_value: 5
            }
        );
        assert_eq!(read(&cell, 9), Some(2));
        assert_eq!(read(&cell, 7), None);
    }

    #[test]
    fn stale_writer_never_touches_a_newer_window() {
        let cell = AtomicU64::new(pack(9, 2));
        assert_eq!(add(&cell, 7, 100), AddOutcome::Stale);
        assert_eq!(read(&cell, 9), Some(2));
        assert_eq!(min(&cell, 7, 0), AddOutcome::Stale);
        assert_eq!(read(&cell, 9), Some(2));
    }

    #[test]
    fn tags_compare_across_the_wrap() {
        assert!(is_newer(1, u32::MAX));
        assert!(!is_newer(u32::MAX, 1));
        let cell = AtomicU64::new(pack(u32::MAX, 4));
        assert!(matches!(add(&cell, 0, 1), AddOutcome::Recycled { .. }));
    }

    /// A cell idle for half the circle: its tag looks ahead of the writer's, but far too far to be a
    /// newer window. It is recycled, not taken for newer (which dropped every write).
    #[test]
    fn a_cell_idle_for_half_the_circle_is_recycled() {
        let old = 5u32;
        let now = old.wrapping_add((1 << 31) + 7);
        assert!(!is_newer(old, now), "far ahead is not newer");
        let cell = AtomicU64::new(pack(old, 3));
        assert_eq!(
            add(&cell, now, 1),
            AddOutcome::Recycled {
                old_tag: old,
                old_value: 3
            }
        );
        assert_eq!(read(&cell, now), Some(1));
        let cell = AtomicU64::new(pack(old, 3));
        assert_eq!(take_older(&cell, now), Some((old, 3)));
        // A window just ahead is still newer: a stale writer does not touch it.
        let cell = AtomicU64::new(pack(now + 2, 3));
        assert_eq!(add(&cell, now, 1), AddOutcome::Stale);
    }

    #[test]
    fn an_empty_cell_takes_any_window() {
        let cell = AtomicU64::new(0);
        assert_eq!(read(&cell, 0), None);
        assert_eq!(add(&cell, 3_400_000_000, 1), AddOutcome::Added);
        assert_eq!(read(&cell, 3_400_000_000), Some(1));
        let cell = AtomicU64::new(0);
        min(&cell, 5, 0);
        assert_eq!(
            read(&cell, 5),
            Some(0),
            "a zero minimum is a value, not empty"
        );
    }

    #[test]
    fn take_older_empties_only_finished_windows() {
        let cell = AtomicU64::new(pack(7, 5));
        assert_eq!(take_older(&cell, 7), None, "the current window stays");
        assert_eq!(take_older(&cell, 8), Some((7, 5)));
        assert_eq!(take_older(&cell, 9), None, "already empty");
    }

    #[test]
    fn min_keeps_the_lowest() {
        let cell = AtomicU64::new(0);
        min(&cell, 3, 40);
        min(&cell, 3, 50);
        min(&cell, 3, 20);
        assert_eq!(read(&cell, 3), Some(20));
        min(&cell, 4, 90);
        assert_eq!(read(&cell, 4), Some(90));
    }
}

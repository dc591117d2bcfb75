//! The THREAD grade: calls in flight per value.
//!
//! A call with value `v` is admitted while `inFlight(v) + 1 ≤ threshold` (Sentinel's
//! `++threadCount <= threshold`, one per call whatever its acquire count; a value repeated k times in
//! a list argument takes k places) and counted at once, under the
//! same lock as the check, so concurrent callers cannot both take the last place. The count is released
//! when the entry exits, or when a later slot blocks the entry. A value with nothing in flight is
//! *settled*: the cache may drop it.

use super::cache::Cell;

/// Admits one more call of the cell's value, if there is room.
#[inline]
pub(crate) fn try_enter(cell: &mut Cell) -> bool {
    if can_enter(cell, 1) {
        cell.level += 1;
        cell.stamp = 0;
        true
    } else {
        false
    }
}

/// Whether `calls` more calls would be admitted.
#[inline]
pub(crate) fn can_enter(cell: &Cell, calls: u32) -> bool {
    cell.level.saturating_add(i64::from(calls)) <= cell.threshold
}

/// One call of the cell's value ended (never below zero).
pub(crate) fn exit(cell: &mut Cell) {
    cell.level = (cell.level - 1).max(0);
}

/// Whether no call of the value is in flight.
pub(crate) fn settled(cell: &Cell) -> bool {
    cell.level <= 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_up_to_the_threshold() {
        let mut cell = Cell::new(2);
        assert!(try_enter(&mut cell));
        assert!(try_enter(&mut cell));
        assert!(!try_enter(&mut cell));
        assert!(!settled(&cell));
        exit(&mut cell);
        assert!(try_enter(&mut cell));
        exit(&mut cell);
        exit(&mut cell);
        exit(&mut cell);
        assert_eq!(cell.level, 0);
        assert!(settled(&cell));
        assert!(!try_enter(&mut Cell::new(0)));
        assert!(can_enter(&Cell::new(2), 2));
        assert!(!can_enter(&Cell::new(2), 3));
    }
}

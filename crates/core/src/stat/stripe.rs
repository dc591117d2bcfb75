//! Per-thread stripes, so that threads hitting one resource write different cache lines.
//!
//! Each thread gets a stripe number once (round robin); a striped structure uses it modulo its stripe
//! count. Sums are taken over all stripes when read.

use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The number of stripes structures allocate: the number of CPUs rounded up to a power of two, at most 8.
pub(crate) fn stripe_count() -> usize {
    static COUNT: OnceLock<usize> = OnceLock::new();
    *COUNT.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .next_power_of_two()
            .min(8)
    })
}

/// This thread's stripe number (unbounded; callers mask it).
#[inline]
pub(crate) fn current_stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    STRIPE.with(|s| {
        let v = s.get();
        if v != usize::MAX {
            return v;
        }
        let v = NEXT.fetch_add(1, Ordering::Relaxed);
        s.set(v);
        v
    })
}

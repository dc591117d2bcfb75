//! Per-thread copies of the shared values a block carries: the resource's name and the rule.
//!
//! A [`BlockError`](crate::BlockError) owns an `Arc` of each. Cloning the engine's own `Arc`s writes
//! their reference counts, a cache line each that every thread blocked on the resource writes too,
//! so two threads rejected on one resource took longer per call in aggregate than one. Each thread
//! clones a copy of its own instead, made on its first block with that value and kept in a small
//! table, so that the counts it writes are its own
//! (`a_block_carries_a_copy_of_the_thread_and_the_same_values`).
//!
//! A copy is found by the shared value's address (direct-mapped: a colliding value replaces it). The
//! table keeps a `Weak` of the shared value with the copy, which keeps its allocation, and so its
//! address, from being reused by another value while the copy is kept. A thread whose table is gone
//! (it is ending) clones the shared value itself.

use std::any::Any;
use std::cell::RefCell;
use std::sync::{Arc, Weak};

use crate::block::BlockRule;

/// Copies kept per thread and kind.
const SLOTS: usize = 32;

#[derive(Debug)]
struct Kept<Src: ?Sized, T: ?Sized> {
    /// The shared value (not kept alive: its allocation only).
    source: Weak<Src>,
    copy: Arc<T>,
}

type Table<Src, T> = [Option<Kept<Src, T>>; SLOTS];

/// A thread's copies: both tables in one thread-local, so that a block reads one.
struct Copies {
    names: Table<str, str>,
    rules: Table<dyn Any + Send + Sync, dyn BlockRule>,
}

thread_local! {
    static COPIES: RefCell<Copies> = const {
        RefCell::new(Copies {
            names: [const { None }; SLOTS],
            rules: [const { None }; SLOTS],
        })
    };
}

fn slot_of(address: *const ()) -> usize {
    ((address as usize >> 4).wrapping_mul(0x9e37_79b9) >> 8) % SLOTS
}

/// This thread's copy of the shared value at `address`, made by `make` if it has none (or `fallback`
/// once the thread's table is gone).
fn copy_of<Src: ?Sized, T: ?Sized>(
    table: impl FnOnce(&mut Copies) -> &mut Table<Src, T>,
    address: *const (),
    make: impl FnOnce() -> (Weak<Src>, Arc<T>),
    fallback: impl FnOnce() -> Arc<T>,
) -> Arc<T> {
    COPIES
        .try_with(|copies| {
            let mut copies = copies.borrow_mut();
            let slot = &mut table(&mut copies)[slot_of(address)];
            if let Some(kept) = slot {
                if std::ptr::addr_eq(kept.source.as_ptr(), address) {
                    return Arc::clone(&kept.copy);
                }
            }
            let (source, copy) = make();
            *slot = Some(Kept {
                source,
                copy: Arc::clone(&copy),
            });
            copy
        })
        .unwrap_or_else(|_| fallback())
}

/// A resource name for a block: this thread's copy of `shared`.
pub(crate) fn name(shared: &Arc<str>) -> Arc<str> {
    copy_of(
        |c| &mut c.names,
        Arc::as_ptr(shared).cast(),
        || (Arc::downgrade(shared), Arc::from(&**shared)),
        || Arc::clone(shared),
    )
}

/// A rule for a block: this thread's copy of `shared`.
pub(crate) fn rule<R: BlockRule + Clone>(shared: &Arc<R>) -> Arc<dyn BlockRule> {
    copy_of(
        |c| &mut c.rules,
        Arc::as_ptr(shared).cast(),
        || {
            let source: Weak<R> = Arc::downgrade(shared);
            (source, Arc::new(R::clone(shared)) as Arc<dyn BlockRule>)
        },
        || Arc::clone(shared) as Arc<dyn BlockRule>,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FlowRule;

    #[test]
    fn a_block_carries_a_copy_of_the_thread_and_the_same_values() {
        let name: Arc<str> = Arc::from("GET:/orders");
        let rule = Arc::new(FlowRule::new("GET:/orders", 5.0));
        let (n1, n2) = (super::name(&name), super::name(&name));
        assert_eq!(&*n1, "GET:/orders");
        assert!(Arc::ptr_eq(&n1, &n2), "one copy per thread");
        assert!(
            !std::ptr::addr_eq(Arc::as_ptr(&n1), Arc::as_ptr(&name)),
            "not the shared one"
        );
        assert_eq!(
            Arc::strong_count(&name),
            1,
            "the shared count is not written"
        );
        let r = super::rule(&rule);
        assert_eq!(format!("{r:?}"), format!("{:?}", *rule));
        assert_eq!(Arc::strong_count(&rule), 1);
        let other = std::thread::spawn(move || {
            let theirs = super::name(&name);
            !Arc::ptr_eq(&theirs, &n1)
        });
        assert!(other.join().unwrap(), "another thread makes its own");
    }

    #[test]
    fn a_value_freed_and_replaced_at_its_address_is_not_mistaken_for_it() {
        let first: Arc<str> = Arc::from("a");
        assert_eq!(&*super::name(&first), "a");
        drop(first);
        // The table's `Weak` keeps the first allocation: a new value cannot take its address.
        for _ in 0..64 {
            let next: Arc<str> = Arc::from("b");
            assert_eq!(&*super::name(&next), "b");
        }
    }
}

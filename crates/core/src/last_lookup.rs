//! The thread's last resource lookup by name, remembered so that the next entry with the same name
//! skips the name index.
//!
//! Resource names are usually string literals, so a thread entering a resource again passes the very
//! same `&str` (address and length). The thread remembers the last `(engine, address, length)` it
//! resolved and the resource id it found; a lookup that matches all three only compares the name with
//! the resource's own (a different string at a reused address fails that compare and takes the index).
//! Resources are never removed from an engine and engine ids are never reused, so a remembered id
//! stays valid. A `Cell` of plain data, without a destructor: reading it is a thread-local load, not
//! a lazily registered slot.

use std::cell::Cell;

/// `(engine id, name address, name length, resource id)`; engine id 0 is no engine.
type Memo = (u64, usize, usize, u32);

thread_local! {
    static LAST: Cell<Memo> = const { Cell::new((0, 0, 0, 0)) };
}

/// The resource id this thread last resolved `name` (this very `&str`) to in engine `engine`.
#[inline]
pub(crate) fn recall(engine: u64, name: &str) -> Option<u32> {
    let (e, address, len, id) = LAST.with(Cell::get);
    (e == engine && address == name.as_ptr() as usize && len == name.len()).then_some(id)
}

/// Remembers that `name` is resource `id` in engine `engine`.
#[inline]
pub(crate) fn remember(engine: u64, name: &str, id: u32) {
    LAST.with(|last| last.set((engine, name.as_ptr() as usize, name.len(), id)));
}

#[cfg(test)]
mod tests {
    use crate::{Floodgate, ManualClock};

    fn engine() -> Floodgate {
        Floodgate::builder()
            .clock(ManualClock::new(1_700_000_000_000))
            .build()
    }

    fn passes(fg: &Floodgate, name: &str) -> u64 {
        fg.cluster_node(name).map_or(0, |n| n.total_pass())
    }

    #[test]
    fn a_reused_address_with_other_contents_is_looked_up_again() {
        let fg = engine();
        let mut name = String::from("aaaa");
        drop(fg.entry(&name).enter().unwrap());
        drop(fg.entry(&name).enter().unwrap());
        // The same buffer (same address, same length), other contents.
        name.replace_range(.., "bbbb");
        drop(fg.entry(&name).enter().unwrap());
        drop(fg.entry(&name).enter().unwrap());
        assert_eq!((passes(&fg, "aaaa"), passes(&fg, "bbbb")), (2, 2));
    }

    #[test]
    fn engines_sharing_a_thread_keep_their_own_resources() {
        let (a, b) = (engine(), engine());
        drop(a.entry("only in a").enter().unwrap());
        // "R" is resource 1 in `a` and resource 0 in `b`.
        for _ in 0..3 {
            drop(a.entry("R").enter().unwrap());
            drop(b.entry("R").enter().unwrap());
        }
        drop(b.entry("R").enter().unwrap());
        assert_eq!((passes(&a, "R"), passes(&b, "R")), (3, 4));
        assert_eq!(passes(&a, "only in a"), 1);
        assert!(b.cluster_node("only in a").is_none());
    }

    #[test]
    fn equal_names_at_different_addresses_are_one_resource() {
        let fg = engine();
        let (x, y) = (String::from("R"), String::from("R"));
        for _ in 0..2 {
            drop(fg.entry(&x).enter().unwrap());
            drop(fg.entry(&y).enter().unwrap());
        }
        assert_eq!(passes(&fg, "R"), 4);
        assert_eq!(fg.resource_names().len(), 1);
    }
}

//! A lock-free-to-read list of child node indices (the call tree's edges).

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwapOption;
use rustc_hash::FxHashSet;

/// Past this many slots a list also keeps a set of its children, so that adding one does not scan it.
const SCAN_UP_TO: usize = 32;

/// Children of a tree node, as indices into the engine's default-node arena. Reads are one atomic load
/// and a scan; adds append in place under the engine's tree lock, and a full list is replaced by one
/// twice as large (a node with n children copied O(n) indices in all: the default context's entrance
/// node gains a child per resource, and copying its whole list per child made creating the n-th
/// resource cost O(n)).
#[derive(Debug, Default)]
pub(crate) struct Children {
    list: ArcSwapOption<List>,
}

/// Room for a fixed number of children; the first `len` are set.
#[derive(Debug)]
struct List {
    items: Box<[AtomicU32]>,
    /// Set children (stored with `Release` after the child it counts).
    len: AtomicUsize,
    /// The children, for the duplicate check of a long list (used under the tree lock only).
    seen: Option<Mutex<FxHashSet<u32>>>,
}

impl List {
    fn with_capacity(capacity: usize, items: &[u32]) -> Self {
        let seen = (capacity > SCAN_UP_TO).then(|| Mutex::new(items.iter().copied().collect()));
        List {
            items: (0..capacity)
                .map(|i| AtomicU32::new(items.get(i).copied().unwrap_or(0)))
                .collect(),
            len: AtomicUsize::new(items.len()),
            seen,
        }
    }

    fn set(&self) -> impl Iterator<Item = u32> + '_ {
        let len = self.len.load(Ordering::Acquire);
        self.items[..len].iter().map(|c| c.load(Ordering::Relaxed))
    }

    fn contains(&self, child: u32) -> bool {
        self.set().any(|c| c == child)
    }

    /// Whether `child` is in the list (a long list's set answers), noting it as added.
    fn note(&self, child: u32) -> bool {
        match &self.seen {
            Some(seen) => !seen.lock().unwrap_or_else(|e| e.into_inner()).insert(child),
            None => self.contains(child),
        }
    }
}

impl Children {
    pub(crate) fn contains(&self, child: u32) -> bool {
        self.list.load().as_ref().is_some_and(|l| l.contains(child))
    }

    /// Adds `child`; the caller holds the engine's tree lock.
    pub(crate) fn add_locked(&self, child: u32) {
        let current = self.list.load_full();
        let Some(list) = current else {
            self.list
                .store(Some(Arc::new(List::with_capacity(4, &[child]))));
            return;
        };
        if list.note(child) {
            return;
        }
        let len = list.len.load(Ordering::Relaxed);
        if len < list.items.len() {
            list.items[len].store(child, Ordering::Relaxed);
            list.len.store(len + 1, Ordering::Release);
            return;
        }
        let mut items: Vec<u32> = list.set().collect();
        items.push(child);
        let next = List::with_capacity(2 * list.items.len(), &items);
        self.list.store(Some(Arc::new(next)));
    }

    pub(crate) fn to_vec(&self) -> Vec<u32> {
        self.list
            .load()
            .as_ref()
            .map_or_else(Vec::new, |l| l.set().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_are_added_once_in_order() {
        let children = Children::default();
        assert!(!children.contains(0));
        for round in 0..2 {
            for i in 0..1000u32 {
                children.add_locked(i * 3);
            }
            assert_eq!(
                children.to_vec(),
                (0..1000u32).map(|i| i * 3).collect::<Vec<_>>(),
                "round {round}"
            );
        }
        assert!(children.contains(2997) && !children.contains(2998));
    }

    /// Adding the n-th child copies O(1) indices amortized: the list's capacity stays within twice its
    /// length, and it was replaced only when full (log n times).
    #[test]
    fn a_list_grows_by_doubling() {
        let children = Children::default();
        let mut replaced = 0;
        let mut last = std::ptr::null();
        for i in 0..10_000u32 {
            children.add_locked(i);
            let list = children.list.load_full().unwrap();
            if !std::ptr::eq(Arc::as_ptr(&list), last) {
                replaced += 1;
                last = Arc::as_ptr(&list);
            }
            assert!(list.items.len() <= 2 * (i as usize + 1).max(4));
        }
        assert!(replaced <= 14, "{replaced} copies for 10,000 children");
    }
}

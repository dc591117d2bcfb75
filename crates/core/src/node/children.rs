//! A lock-free-to-read list of child node indices (the call tree's edges).

use std::sync::Arc;

use arc_swap::ArcSwapOption;

/// Children of a tree node, as indices into the engine's default-node arena. Reads are one atomic load;
/// adds copy the list under the engine's tree lock (a node gains a child once).
#[derive(Debug, Default)]
pub(crate) struct Children {
    list: ArcSwapOption<Vec<u32>>,
}

impl Children {
    pub(crate) fn contains(&self, child: u32) -> bool {
        self.list
            .load()
            .as_ref()
            .is_some_and(|l| l.contains(&child))
    }

    /// Adds `child`; the caller holds the engine's tree lock.
    pub(crate) fn add_locked(&self, child: u32) {
        let current = self.list.load_full();
        if current.as_ref().is_some_and(|l| l.contains(&child)) {
            return;
        }
        let mut next = current.map_or_else(Vec::new, |l| (*l).clone());
        next.push(child);
        self.list.store(Some(Arc::new(next)));
    }

    pub(crate) fn to_vec(&self) -> Vec<u32> {
        self.list
            .load()
            .as_ref()
            .map_or_else(Vec::new, |l| (**l).clone())
    }
}

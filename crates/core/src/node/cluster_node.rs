//! `ClusterNode`: one per resource, across every context, with its origin nodes.

use std::sync::Arc;

use arc_swap::ArcSwapOption;

use super::statistic_node::{StatisticNode, WindowGeometry};
use crate::keyed_hash::{KeyedMap, keyed_map};

/// The statistics of a resource as a whole, plus one `StatisticNode` per caller origin (kept in the
/// engine's origin arena; this map holds their indices).
#[derive(Debug)]
pub(crate) struct ClusterNode {
    pub(crate) stats: StatisticNode,
    /// Keyed by origin names, which clients choose.
    origins: ArcSwapOption<KeyedMap<Arc<str>, u32>>,
}

impl ClusterNode {
    pub(crate) fn new(geometry: WindowGeometry) -> Self {
        ClusterNode {
            stats: StatisticNode::new(geometry),
            origins: ArcSwapOption::empty(),
        }
    }

    /// The origin node index for `origin`, if one exists.
    #[inline]
    pub(crate) fn origin(&self, origin: &str) -> Option<u32> {
        self.origins.load().as_ref()?.get(origin).copied()
    }

    /// How many origins have a node here.
    pub(crate) fn origin_count(&self) -> usize {
        self.origins.load().as_ref().map_or(0, |m| m.len())
    }

    /// Records `origin → index`; the caller holds the engine's origin lock.
    pub(crate) fn add_origin_locked(&self, origin: Arc<str>, index: u32) {
        let mut next = self
            .origins
            .load_full()
            .map_or_else(keyed_map, |m| (*m).clone());
        next.insert(origin, index);
        self.origins.store(Some(Arc::new(next)));
    }

    /// Every `(origin, index)` pair, in the order the origins were first seen (the map's own order
    /// depends on its random keys).
    pub(crate) fn origins(&self) -> Vec<(Arc<str>, u32)> {
        let mut origins: Vec<(Arc<str>, u32)> = self
            .origins
            .load()
            .as_ref()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), *v)).collect())
            .unwrap_or_default();
        origins.sort_unstable_by_key(|&(_, index)| index);
        origins
    }
}

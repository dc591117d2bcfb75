//! `DefaultNode`: one per resource × context, the vertices of the call tree.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use super::children::Children;
use super::statistic_node::{StatisticNode, WindowGeometry};

/// A resource as entered within one context. Its children are the resources entered while it was the
/// current entry.
///
/// Its own statistics start on first read (a call tree, a CHAIN rule) unless the engine counts context
/// nodes eagerly: the resource's `ClusterNode` always counts, so the common case pays for one set of
/// counters, not two.
#[derive(Debug)]
pub(crate) struct DefaultNode {
    pub(crate) resource: u32,
    pub(crate) children: Children,
    pub(crate) attached_to_entrance: AtomicBool,
    stats: OnceLock<StatisticNode>,
    geometry: WindowGeometry,
}

impl DefaultNode {
    pub(crate) fn new(resource: u32, geometry: WindowGeometry, eager: bool) -> Self {
        let node = DefaultNode {
            resource,
            children: Children::default(),
            attached_to_entrance: AtomicBool::new(false),
            stats: OnceLock::new(),
            geometry,
        };
        if eager {
            node.stats();
        }
        node
    }

    /// The counters, if they are running.
    #[inline]
    pub(crate) fn counting(&self) -> Option<&StatisticNode> {
        self.stats.get()
    }

    /// The counters, started now if they were not running.
    pub(crate) fn stats(&self) -> &StatisticNode {
        self.stats.get_or_init(|| StatisticNode::new(self.geometry))
    }

    pub(crate) fn is_attached_to_entrance(&self) -> bool {
        self.attached_to_entrance.load(Ordering::Relaxed)
    }
}

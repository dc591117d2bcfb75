//! Nodes: a resource's node per context, the call-tree links between them, and origin nodes.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use rustc_hash::FxHashMap;

use super::{ContextData, MAX_ORIGIN_LEN, OVER_CAP_ORIGIN, Parent, Registry, Resource};
use crate::node::{DefaultNode, StatisticNode};

impl Registry {
    /// The node of `resource` in context `context`, created on first sight.
    #[inline]
    pub(crate) fn node_in_context(&self, resource: &Resource, context: u32) -> Option<u32> {
        if context == 0 {
            return Some(resource.default_node);
        }
        if let Some(id) = resource
            .context_nodes
            .load()
            .as_ref()
            .and_then(|m| m.get(&context).copied())
        {
            return Some(id);
        }
        let _guard = self.lock();
        let current = resource.context_nodes.load_full();
        if let Some(id) = current.as_ref().and_then(|m| m.get(&context).copied()) {
            return Some(id);
        }
        let id = self
            .default_nodes
            .push(DefaultNode::new(
                resource.id,
                self.limits.geometry,
                self.limits.eager_context_stats,
            ))
            .ok()?;
        let mut next = current.map_or_else(FxHashMap::default, |m| (*m).clone());
        next.insert(context, id);
        resource.context_nodes.store(Some(Arc::new(next)));
        Some(id)
    }

    /// Makes `node` a child of `parent` in `context` (once).
    #[inline]
    pub(crate) fn attach(
        &self,
        context: &ContextData,
        parent: Parent,
        node_id: u32,
        node: &DefaultNode,
    ) {
        match parent {
            Parent::Entrance => {
                if !node.is_attached_to_entrance() {
                    let _guard = self.lock();
                    context.entrance.children.add_locked(node_id);
                    node.attached_to_entrance.store(true, Ordering::Relaxed);
                }
            }
            Parent::Node(p) => {
                if p == node_id {
                    return;
                }
                if let Some(parent) = self.default_nodes.get(p) {
                    if !parent.children.contains(node_id) {
                        let _guard = self.lock();
                        parent.children.add_locked(node_id);
                    }
                }
            }
        }
    }

    /// The origin node id of `origin` on `resource`, created on first sight (past the resource's origin
    /// cap: the shared [`OVER_CAP_ORIGIN`] node); `None` for no origin.
    #[inline]
    pub(crate) fn origin_node_id(&self, resource: &Resource, origin: &str) -> Option<u32> {
        if origin.is_empty() {
            return None;
        }
        if let Some(id) = resource.cluster.origin(origin) {
            return Some(id);
        }
        self.add_origin_node(resource, origin)
    }

    #[cold]
    fn add_origin_node(&self, resource: &Resource, origin: &str) -> Option<u32> {
        let named = || self.caps.names_origin(resource, origin);
        let over_cap = || {
            origin.len() > MAX_ORIGIN_LEN
                || (resource.cluster.origin_count() >= self.limits.max_origins && !named())
        };
        // The usual case past the cap, without the lock: the shared node exists.
        if over_cap() {
            if let Some(id) = resource.cluster.origin(OVER_CAP_ORIGIN) {
                return Some(id);
            }
        }
        let _guard = self.lock();
        if let Some(id) = resource.cluster.origin(origin) {
            return Some(id);
        }
        let key = if over_cap() { OVER_CAP_ORIGIN } else { origin };
        if let Some(id) = resource.cluster.origin(key) {
            return Some(id);
        }
        let id = self
            .origin_nodes
            .push(StatisticNode::new(self.limits.geometry))
            .ok()?;
        resource.cluster.add_origin_locked(Arc::from(key), id);
        Some(id)
    }
}

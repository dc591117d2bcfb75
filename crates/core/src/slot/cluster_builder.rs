//! ClusterBuilderSlot (−9000): the resource's cluster node is built with the resource; this slot records
//! the resource type and attaches the caller's origin node.

use std::sync::Arc;

use super::{Hooks, Slot, SlotContext, order};
use crate::block::BlockError;

/// Sentinel's `ClusterBuilderSlot`.
#[derive(Debug, Default)]
pub struct ClusterBuilderSlot;

impl Slot for ClusterBuilderSlot {
    #[inline]
    fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        cx.resource.set_resource_type(cx.resource_type);
        cx.origin_node_id = cx.engine.origin_node_id(cx.resource, cx.origin);
        Ok(())
    }

    fn hooks(&self) -> Hooks {
        Hooks::ENTRY
    }
}

crate::register_slot!("cluster_builder", order::CLUSTER_BUILDER, || Arc::new(
    ClusterBuilderSlot
));

//! ClusterBuilderSlot (−9000): the resource's cluster node is built with the resource; this slot records
//! the resource type and attaches the caller's origin node.

use super::{Hooks, Slot, SlotContext};
use crate::block::BlockError;

/// Sentinel's `ClusterBuilderSlot`.
#[derive(Debug, Default)]
pub struct ClusterBuilderSlot;

impl Slot for ClusterBuilderSlot {
    #[inline]
    fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        cx.resource.set_resource_type(cx.resource_type);
        cx.origin_node_id = cx.engine.registry.origin_node_id(cx.resource, cx.origin);
        Ok(())
    }

    fn hooks(&self) -> Hooks {
        Hooks::ENTRY
    }
}

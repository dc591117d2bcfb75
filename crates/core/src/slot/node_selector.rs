//! NodeSelectorSlot (−10000): picks the resource's node in the current context and links it into the
//! call tree under the current entry (or the context's entrance).

use super::{Hooks, Slot, SlotContext};
use crate::block::BlockError;

/// Sentinel's `NodeSelectorSlot`.
#[derive(Debug, Default)]
pub struct NodeSelectorSlot;

impl Slot for NodeSelectorSlot {
    #[inline]
    fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        let engine = cx.engine;
        if let Some(id) = engine.registry.node_in_context(cx.resource, cx.context.id) {
            if let Some(node) = engine.registry.default_node(id) {
                engine.registry.attach(cx.context, cx.parent, id, node);
                cx.default_node = Some(node);
            }
            cx.node_id = Some(id);
        }
        Ok(())
    }

    fn hooks(&self) -> Hooks {
        Hooks::ENTRY
    }
}

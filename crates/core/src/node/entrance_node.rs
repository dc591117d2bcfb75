//! `EntranceNode`: the root of one context's call tree.

use std::sync::Arc;

use super::children::Children;

/// The entrance of a context. Its statistics are the sums over its children (see
/// [`NodeSnapshot::sum`](crate::NodeSnapshot)).
#[derive(Debug)]
pub(crate) struct EntranceNode {
    pub(crate) name: Arc<str>,
    pub(crate) children: Children,
}

impl EntranceNode {
    pub(crate) fn new(name: Arc<str>) -> Self {
        EntranceNode {
            name,
            children: Children::default(),
        }
    }
}

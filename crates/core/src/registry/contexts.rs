//! Contexts: created on first sight within the context cap (the default one, id 0, always there).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{ContextData, DEFAULT_CONTEXT_NAME, Registry};
use crate::node::EntranceNode;

impl Registry {
    /// The context named `name`, created on first sight; the default context past the context cap.
    pub(crate) fn context_id(&self, name: &str) -> u32 {
        if name == DEFAULT_CONTEXT_NAME {
            return 0;
        }
        if let Some(id) = self.context_index.get(name) {
            return id;
        }
        // A context a CHAIN rule names is created even past the cap: in the default context, the
        // rule would never apply. Checked before the lock too, so that a flood of new names past
        // the cap does not queue on it.
        let over_cap = || {
            // The default context (always there) does not count, as in Sentinel.
            self.contexts.len() > self.limits.max_contexts && !self.caps.names_context(name)
        };
        if !over_cap() {
            let _guard = self.lock();
            if let Some(id) = self.context_index.get(name) {
                return id;
            }
            if !over_cap() {
                return self.create_context_locked(name).unwrap_or(0);
            }
        }
        self.context_cap_hits.fetch_add(1, Ordering::Relaxed);
        0
    }

    pub(super) fn create_context_locked(&self, name: &str) -> Option<u32> {
        let name: Arc<str> = Arc::from(name);
        let id = u32::try_from(self.contexts.len()).ok()?;
        let id = self
            .contexts
            .push(ContextData {
                id,
                entrance: EntranceNode::new(name.clone()),
            })
            .ok()?;
        self.context_index.insert_locked(name, id);
        Some(id)
    }
}

//! Resource keys: a resource resolved once, for callers that enter it often, kept without borrowing
//! its engine (in an adapter's per-route cache beside its engine handle, say).
//!
//! Besides its name, a key is the one way to name a resource. A [`ResourceKey`] holds the engine's id,
//! the resource's id and its name; [`Floodgate::entry_for`] enters it without looking the name up. A key the engine cannot resolve (one made past the resource
//! cap or while the engine was switched off, or by another engine) enters by name, exactly as
//! [`Floodgate::entry`] would. Keys are equal when they name the same resource of the same engine.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::entry::{EntryBuilder, Target};
use crate::floodgate::Floodgate;

/// A resource resolved once (see [`Floodgate::resource_key`]).
#[derive(Debug, Clone)]
pub struct ResourceKey {
    engine: u64,
    /// `None`: not resolved (past the resource cap); entered by name.
    id: Option<u32>,
    name: Arc<str>,
}

impl ResourceKey {
    /// The resource's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the engine resolved the key to the resource of its name, so that its entries skip the
    /// name lookup. Not past the resource cap when no rule names the resource exactly (its entries may
    /// then be counted on a shared resource, which the key must not stay on once rules name it), nor
    /// while the engine was switched off.
    pub fn is_resolved(&self) -> bool {
        self.id.is_some()
    }
}

impl PartialEq for ResourceKey {
    /// The same engine and name (whether or not either key was resolved).
    fn eq(&self, other: &Self) -> bool {
        self.engine == other.engine && self.name == other.name
    }
}

impl Eq for ResourceKey {}

impl Hash for ResourceKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.engine.hash(state);
        self.name.hash(state);
    }
}

impl Floodgate {
    /// `resource` resolved once, to be entered often with [`entry_for`](Self::entry_for) (no name lookup
    /// per entry). Past the resource cap, when no rule names it exactly, or while the engine is switched off
    /// (which creates no resource), the key keeps only the name and its entries look it up as
    /// [`entry`](Self::entry) does.
    pub fn resource_key(&self, resource: &str) -> ResourceKey {
        // Only the resource of that very name: past the cap a name may be counted on the shared
        // over-cap resource, and a key kept to it would stay there once rules name it.
        let resolved = if self.inner.is_enabled() {
            self.inner
                .resource(resource)
                .filter(|r| *r.name == *resource)
        } else {
            None
        };
        match resolved {
            Some(r) => ResourceKey {
                engine: self.inner.id,
                id: Some(r.id),
                name: r.name.clone(),
            },
            None => ResourceKey {
                engine: self.inner.id,
                id: None,
                name: Arc::from(resource),
            },
        }
    }

    /// Starts an entry on the resource of `key` (by name if this engine did not resolve the key).
    #[inline]
    pub fn entry_for<'a>(&'a self, key: &'a ResourceKey) -> EntryBuilder<'a> {
        let resolved = match key.id {
            Some(id) if key.engine == self.inner.id => self.inner.registry.resource_by_id(id),
            _ => None,
        };
        let target = match resolved {
            Some(resource) => Target::Resolved(resource),
            None => Target::Name(&key.name),
        };
        EntryBuilder::new(&self.inner, target)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Floodgate, ManualClock, RuleType};

    const T0: u64 = 1_700_000_000_000;

    fn engine(max_resources: usize) -> Floodgate {
        Floodgate::builder()
            .clock(ManualClock::new(T0))
            .max_resources(max_resources)
            .build()
    }

    #[test]
    fn a_key_enters_its_resource() {
        let fg = engine(10);
        let key = fg.resource_key("R");
        assert_eq!(key.name(), "R");
        assert!(key.is_resolved());
        drop(fg.entry_for(&key).enter().unwrap());
        drop(fg.entry("R").enter().unwrap());
        assert_eq!(fg.cluster_node("R").unwrap().total_pass(), 2);
        assert_eq!(fg.resource_names().len(), 1);
    }

    #[test]
    fn a_key_of_another_engine_enters_by_name() {
        let (a, b) = (engine(10), engine(10));
        drop(a.resource_key("other"));
        let key = a.resource_key("R");
        drop(b.entry_for(&key).enter().unwrap());
        assert_eq!(b.cluster_node("R").unwrap().total_pass(), 1);
        assert!(b.cluster_node("other").is_none());
        assert_eq!(a.cluster_node("R").unwrap().total_pass(), 0);
    }

    #[test]
    fn a_switched_off_engine_creates_no_resource_for_a_key() {
        let fg = engine(10);
        fg.set_enabled(false);
        let key = fg.resource_key("R");
        assert!(!key.is_resolved());
        assert!(fg.resource_names().is_empty());
        fg.set_enabled(true);
        drop(fg.entry_for(&key).enter().unwrap());
        assert_eq!(fg.cluster_node("R").unwrap().total_pass(), 1);
        assert_eq!(key, fg.resource_key("R"), "keys name resources");
    }

    #[test]
    fn a_key_past_the_cap_enters_by_name_and_its_rules_still_apply() {
        let fg = engine(1);
        drop(fg.resource_key("first"));
        let key = fg.resource_key("late");
        assert!(!key.is_resolved(), "past the cap");
        drop(fg.entry_for(&key).enter().unwrap());
        assert!(
            fg.cluster_node("late").is_none(),
            "past the cap: not counted"
        );
        fg.load_rules_json(RuleType::Flow, r#"[{"resource":"late","count":0}]"#)
            .unwrap();
        assert!(
            fg.entry_for(&key).enter().is_err(),
            "a rule creates the resource past the cap: never fail-open"
        );
    }
}

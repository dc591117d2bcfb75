//! Resources: found by name (a per-thread memo, then the name index), created on first sight within the
//! resource cap, and shared past it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use arc_swap::ArcSwapOption;
use rustc_hash::FxHashMap;

use super::{OVER_CAP_RESOURCE, PastCap, Registry, Resource, read};
use crate::entry_type::ResourceType;
use crate::last_lookup;
use crate::node::{ClusterNode, DefaultNode};

impl Registry {
    /// The resource named `name`, created on first sight. Past the resource cap, a name no rule names
    /// gets [`OVER_CAP_RESOURCE`] while system or default degrade rules are in force, else `None`: the
    /// entry then passes without statistics; a name rules name exactly gets its own resource, and one
    /// only regex rules match shares a resource with the names the same regex rules match (so the cap
    /// never turns into fail-open, and regex rules cannot grow the engine without bound).
    #[inline]
    pub(crate) fn resource(&self, name: &str) -> Option<&Resource> {
        if let Some(id) = last_lookup::recall(self.id, name) {
            if let Some(resource) = self.resources.get(id) {
                if *resource.name == *name {
                    return Some(resource);
                }
            }
        }
        let resource = match self.resource_index.get(name) {
            Some(id) => self.resources.get(id),
            None => self.create_resource(name),
        }?;
        last_lookup::remember(self.id, name, resource.id);
        Some(resource)
    }

    #[cold]
    fn create_resource(&self, name: &str) -> Option<&Resource> {
        // Past the cap every name of a flood is new: decided before the engine's lock, so that such
        // entries do not all queue on it (the resources only grow, so the cap stays reached).
        match self.past_cap(name) {
            PastCap::No => {}
            PastCap::Unruled => return self.over_cap_resource(),
            PastCap::Regex(signature) => return self.regex_shared_resource(name, signature),
        }
        let guard = self.lock();
        if let Some(id) = self.resource_index.get(name) {
            return self.resources.get(id);
        }
        match self.past_cap(name) {
            PastCap::No => self.push_resource_locked(name),
            PastCap::Unruled => {
                drop(guard);
                self.over_cap_resource()
            }
            PastCap::Regex(signature) => {
                drop(guard);
                self.regex_shared_resource(name, signature)
            }
        }
    }

    /// What `name`, new, gets with respect to the resource cap.
    fn past_cap(&self, name: &str) -> PastCap {
        if self.resources.len() < self.limits.max_resources || self.caps.names_exactly(name) {
            return PastCap::No;
        }
        let signature = self.caps.regex_signature(name);
        if signature.is_empty() {
            PastCap::Unruled
        } else {
            PastCap::Regex(signature)
        }
    }

    /// The resource of a new name past the cap that only regex rules match (so that names made from
    /// raw URL paths do not grow the engine without bound, one resource each:
    /// `past_the_cap_names_matched_by_the_same_regex_rules_share_their_limits`): the resource of the
    /// first such name matched by exactly the same regex rules (their `signature`), created for `name`
    /// if there is none. The names sharing it share its statistics, and so its limits and breakers:
    /// stricter, never open.
    /// A shared resource is shared only while the rules in force treat its name as they treat `name`:
    /// not once rules name it exactly, nor once regex rules loaded since match it and not `name`.
    fn regex_shared_resource(&self, name: &str, signature: String) -> Option<&Resource> {
        self.resource_cap_hits.fetch_add(1, Ordering::Relaxed);
        let shared = |by: &FxHashMap<Box<str>, u32>| {
            let resource = self.resources.get(*by.get(signature.as_str())?)?;
            (!self.caps.names_exactly(&resource.name)
                && self.caps.regex_signature(&resource.name) == signature)
                .then_some(resource)
        };
        if let Some(resource) = shared(&read(&self.regex_shared)) {
            return Some(resource);
        }
        let _guard = self.lock();
        if let Some(resource) = shared(&read(&self.regex_shared)) {
            return Some(resource);
        }
        if let Some(id) = self.resource_index.get(name) {
            return self.resources.get(id);
        }
        let resource = self.push_resource_locked(name)?;
        self.regex_shared
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(signature.into_boxed_str(), resource.id);
        Some(resource)
    }

    /// The resource of an entry on a new name past the cap: none, or [`OVER_CAP_RESOURCE`] while rules
    /// that apply to every entry are in force.
    fn over_cap_resource(&self) -> Option<&Resource> {
        self.resource_cap_hits.fetch_add(1, Ordering::Relaxed);
        if !self.caps.counts_past_cap() {
            return None;
        }
        // System rules apply to every inbound entry, and default (`"*"`) breakers to every resource:
        // past the cap they still do, through one shared resource, so that names a client makes up
        // cannot grow the engine without bound.
        if let Some(id) = self.resource_index.get(OVER_CAP_RESOURCE) {
            return self.resources.get(id);
        }
        let _guard = self.lock();
        if let Some(id) = self.resource_index.get(OVER_CAP_RESOURCE) {
            return self.resources.get(id);
        }
        self.push_resource_locked(OVER_CAP_RESOURCE)
    }

    /// Creates the resource `name` (the caller holds the engine lock and checked the cap).
    fn push_resource_locked(&self, name: &str) -> Option<&Resource> {
        let count = self.resources.len();
        let name: Arc<str> = Arc::from(name);
        let id = u32::try_from(count).ok()?;
        let default_node = self
            .default_nodes
            .push(DefaultNode::new(
                id,
                self.limits.geometry,
                self.limits.eager_context_stats,
            ))
            .ok()?;
        let resource = Resource {
            id,
            name: name.clone(),
            cluster: ClusterNode::new(self.limits.geometry),
            default_node,
            context_nodes: ArcSwapOption::empty(),
            resource_type: AtomicU8::new(ResourceType::Common as u8),
        };
        let id = self.resources.push(resource).ok()?;
        self.resource_index.insert_locked(name, id);
        self.resources.get(id)
    }
}

//! Default resources, resolved once per route so that a request neither formats (and allocates) its
//! name nor looks the name up in the engine.
//!
//! The default name depends only on the method and the route template (or the gRPC path), so the layer
//! keeps the [`ResourceKey`] of every name it has built in a copy-on-write map, read through `arc-swap`:
//! a request whose route was seen before finds its resource with one hash of the template and no lock,
//! no allocation and no shared write. The map holds at most [`CAPACITY`] keys; past that a name is
//! formatted and looked up per request (and the cache, once full, is not locked again), so a flood of
//! distinct gRPC paths or extension methods — both chosen by clients — cannot grow it without bound nor
//! make requests queue on its lock. The engine's resource cap still bounds the resources themselves; a
//! key made past it (or while the engine was switched off) enters by name until the resource exists.
//!
//! With axum, a request first looks in a small table of recent routes, found by the address of axum's
//! template (`MatchedPath` shares one allocation per route) and the method: no hash of the template,
//! no string compare and no `arc-swap` load. An entry holds its `MatchedPath`, so the address cannot be
//! reused by another template while the entry lives, and equal addresses and lengths mean the same
//! template. A slot is filled once, by the first route that lands on it; routes that collide with it
//! use the map, and so do routes of nested routers, whose template axum builds anew per request.

#[cfg(feature = "axum")]
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

#[cfg(feature = "axum")]
use axum::extract::MatchedPath;

use arc_swap::ArcSwap;
use floodgate_core::{Floodgate, ResourceKey};
use http::Method;
use rustc_hash::FxHashMap;

use crate::resource::NameParts;

/// How many keys the cache keeps.
pub(crate) const CAPACITY: usize = 1024;

/// Route → the keys of the names built for it, one per method.
type Names = FxHashMap<Box<str>, Vec<(Option<Method>, ResourceKey)>>;

/// How many routes the recent table holds (axum only).
#[cfg(feature = "axum")]
const RECENT: usize = 64;

/// A route in the recent table.
#[cfg(feature = "axum")]
#[derive(Debug)]
struct Recent {
    /// Held so that the template's allocation, whose address finds this entry, is not reused meanwhile.
    path: MatchedPath,
    method: Method,
    key: ResourceKey,
}

/// The recent-table slot of `template` (by address) and `method`.
#[cfg(feature = "axum")]
fn recent_slot(template: &str, method: &Method) -> usize {
    // Templates are separate allocations (16-byte aligned); standard methods name static strings.
    let address = (template.as_ptr() as usize >> 4) ^ (method.as_str().as_ptr() as usize >> 2);
    address.wrapping_mul(0x9e37_79b9) >> 8 & (RECENT - 1)
}

/// The keys made so far, shared by the services a layer makes.
#[derive(Debug)]
pub(crate) struct RouteNames {
    names: ArcSwap<Names>,
    /// Serializes inserts (readers never take it); counts the keys kept.
    insert: Mutex<usize>,
    /// Set once [`CAPACITY`] keys are kept: later misses are looked up without locking.
    full: AtomicBool,
    /// Recent axum routes, by the address of their template (see the module docs).
    #[cfg(feature = "axum")]
    recent: Box<[OnceLock<Recent>]>,
}

impl Default for RouteNames {
    fn default() -> Self {
        RouteNames {
            names: ArcSwap::default(),
            insert: Mutex::new(0),
            full: AtomicBool::new(false),
            #[cfg(feature = "axum")]
            recent: (0..RECENT).map(|_| OnceLock::new()).collect(),
        }
    }
}

impl RouteNames {
    /// Runs `f` with the resource key of `parts` (made and kept on the route's first request).
    pub(crate) fn with<T>(
        &self,
        fg: &Floodgate,
        parts: NameParts<'_>,
        f: impl FnOnce(&ResourceKey) -> T,
    ) -> T {
        #[cfg(feature = "axum")]
        if let (Some(path), Some(method)) = (parts.matched, parts.method) {
            let slot = &self.recent[recent_slot(path.as_str(), method)];
            match slot.get() {
                Some(recent) => {
                    if std::ptr::eq(recent.path.as_str(), path.as_str()) && recent.method == *method
                    {
                        return f(&recent.key);
                    }
                }
                None => {
                    let key = self.lookup(fg, parts, ResourceKey::clone);
                    let result = f(&key);
                    // Another request may have filled the slot meanwhile: its route keeps it.
                    let _ = slot.set(Recent {
                        path: path.clone(),
                        method: method.clone(),
                        key,
                    });
                    return result;
                }
            }
        }
        self.lookup(fg, parts, f)
    }

    /// [`with`](Self::with) through the map.
    fn lookup<T>(
        &self,
        fg: &Floodgate,
        parts: NameParts<'_>,
        f: impl FnOnce(&ResourceKey) -> T,
    ) -> T {
        let names = self.names.load();
        let found = names.get(parts.route).and_then(|by_method| {
            by_method
                .iter()
                .find(|(method, _)| method.as_ref() == parts.method)
        });
        if let Some((_, key)) = found {
            return f(key);
        }
        drop(names);
        let key = fg.resource_key(&parts.to_string());
        if !self.full.load(Ordering::Relaxed) {
            self.remember(parts, &key);
        }
        f(&key)
    }

    #[cold]
    fn remember(&self, parts: NameParts<'_>, key: &ResourceKey) {
        let mut count = self.insert.lock().unwrap_or_else(|e| e.into_inner());
        if *count >= CAPACITY {
            self.full.store(true, Ordering::Relaxed);
            return;
        }
        let mut next = Names::clone(&self.names.load());
        let by_method = next.entry(Box::from(parts.route)).or_default();
        if by_method
            .iter()
            .any(|(method, _)| method.as_ref() == parts.method)
        {
            return; // another request remembered it meanwhile
        }
        by_method.push((parts.method.cloned(), key.clone()));
        *count += 1;
        self.names.store(Arc::new(next));
        if *count >= CAPACITY {
            self.full.store(true, Ordering::Relaxed);
        }
    }

    /// How many names are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        *self.insert.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(cache: &RouteNames, method: Option<&Method>, route: &str) -> String {
        let fg = Floodgate::default();
        cache.with(&fg, NameParts::new(method, route), |key| {
            key.name().to_owned()
        })
    }

    #[test]
    fn names_are_built_once_per_method_and_route() {
        let cache = RouteNames::default();
        assert_eq!(
            name(&cache, Some(&Method::GET), "/orders/{id}"),
            "GET:/orders/{id}"
        );
        assert_eq!(
            name(&cache, Some(&Method::GET), "/orders/{id}"),
            "GET:/orders/{id}"
        );
        assert_eq!(
            name(&cache, Some(&Method::POST), "/orders/{id}"),
            "POST:/orders/{id}"
        );
        assert_eq!(name(&cache, None, "/pkg.Svc/Call"), "/pkg.Svc/Call");
        assert_eq!(name(&cache, None, "/pkg.Svc/Call"), "/pkg.Svc/Call");
        assert_eq!(cache.len(), 3);
    }

    #[test]
    fn the_cache_is_bounded_and_names_stay_right_past_it() {
        let cache = RouteNames::default();
        for i in 0..CAPACITY + 100 {
            let route = format!("/r/{i}");
            assert_eq!(name(&cache, None, &route), route);
        }
        assert_eq!(cache.len(), CAPACITY);
        assert!(
            cache.full.load(Ordering::Relaxed),
            "misses past the cap skip the lock"
        );
        assert_eq!(name(&cache, None, "/r/5"), "/r/5", "cached");
        assert_eq!(
            name(&cache, None, "/late"),
            "/late",
            "formatted past the cap"
        );
    }
}

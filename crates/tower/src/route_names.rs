//! Default resources, resolved once per route so that a request neither formats (and allocates) its
//! name nor looks the name up in the engine.
//!
//! The default name depends only on the method and the route template (or the gRPC path), so the layer
//! keeps the [`ResourceKey`] of every name it has built in a copy-on-write map, read through `arc-swap`:
//! a request whose route was seen before finds its resource with one hash of the template and no lock,
//! no allocation and no shared write. The map holds at most [`CAPACITY`] keys; past that a name is
//! formatted and looked up per request (and the cache, once full, is not locked again), so a flood of
//! distinct names cannot grow it without bound nor make requests queue on its lock. Clients choose gRPC
//! paths (extension methods are all named `_OTHER`): past the capacity, a gRPC path not in the map is
//! named [`GRPC_OVERFLOW`], so they cannot fill the engine with resources either. The engine's resource
//! cap still bounds the resources themselves; a
//! key made past it (or while the engine was switched off) enters by name until the resource exists.
//!
//! With axum, a request with a standard method first looks in a small table of routes, found by the
//! address of axum's template (`MatchedPath` shares one allocation per route, `Router::nest` included)
//! and the method: no hash of the template, no string compare and no `arc-swap` load. An entry holds its
//! `MatchedPath`, so the address cannot be reused by another template while the entry lives, and equal
//! addresses and lengths mean the same template. A slot is filled once, and only by the request that
//! added its name to the map, so each name takes at most one slot: templates axum builds anew per request
//! (a router mounted with `nest_service`) and routers rebuilt under one layer cannot fill the table. Routes that find their slot taken use the map.

#[cfg(feature = "axum")]
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

#[cfg(feature = "axum")]
use axum::extract::MatchedPath;

use arc_swap::ArcSwap;
use floodgate_core::{Floodgate, ResourceKey};
use http::Method;

use crate::keyed_hash::{KeyedMap, keyed_map};
use crate::resource::NameParts;
#[cfg(feature = "axum")]
use crate::resource::STANDARD_METHODS;

/// How many keys the cache keeps.
pub(crate) const CAPACITY: usize = 1024;

/// The name of gRPC paths the map has no room for.
pub(crate) const GRPC_OVERFLOW: &str = "grpc:/*";

/// Route → the keys of the names built for it, one per method (a gRPC route is the request's own path:
/// hashed under random keys).
type Names = KeyedMap<Box<str>, Vec<(Option<Method>, ResourceKey)>>;

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

/// The recent-table slot of `template` (by address) and `method`, if it is a standard method.
#[cfg(feature = "axum")]
fn recent_slot(template: &str, method: &Method) -> Option<usize> {
    let m = STANDARD_METHODS.iter().position(|s| s == method)?;
    // Templates are separate allocations: the low bits of their addresses carry little.
    let x = (template.as_ptr() as u64 >> 4) ^ ((m as u64) << 56);
    Some((x.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - RECENT.trailing_zeros())) as usize)
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
            names: ArcSwap::from_pointee(keyed_map()),
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
            if let Some(slot) = recent_slot(path.as_str(), method).map(|i| &self.recent[i]) {
                match slot.get() {
                    Some(recent) => {
                        if std::ptr::eq(recent.path.as_str(), path.as_str())
                            && recent.method == *method
                        {
                            return f(&recent.key);
                        }
                    }
                    None => {
                        return self.lookup(fg, parts, f, |key| {
                            // Another request may have filled the slot meanwhile: its route keeps it.
                            let _ = slot.set(Recent {
                                path: path.clone(),
                                method: method.clone(),
                                key: key.clone(),
                            });
                        });
                    }
                }
            }
        }
        self.lookup(fg, parts, f, |_| {})
    }

    /// [`with`](Self::with) through the map; `added` sees a key this request added to the map.
    fn lookup<T>(
        &self,
        fg: &Floodgate,
        parts: NameParts<'_>,
        f: impl FnOnce(&ResourceKey) -> T,
        added: impl FnOnce(&ResourceKey),
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
        if self.full.load(Ordering::Relaxed) && parts.method.is_none() {
            // A gRPC path the map has no room for: clients choose paths, so past the capacity they
            // share one name instead of each making a resource.
            return f(&fg.resource_key(GRPC_OVERFLOW));
        }
        let key = fg.resource_key(&parts.to_string());
        if !self.full.load(Ordering::Relaxed) && self.remember(parts, &key) {
            added(&key);
        }
        f(&key)
    }

    /// Adds `key` to the map; whether this call added it.
    #[cold]
    fn remember(&self, parts: NameParts<'_>, key: &ResourceKey) -> bool {
        let mut count = self.insert.lock().unwrap_or_else(|e| e.into_inner());
        if *count >= CAPACITY {
            self.full.store(true, Ordering::Relaxed);
            return false;
        }
        let mut next = Names::clone(&self.names.load());
        let by_method = next.entry(Box::from(parts.route)).or_default();
        if by_method
            .iter()
            .any(|(method, _)| method.as_ref() == parts.method)
        {
            return false; // another request remembered it meanwhile
        }
        by_method.push((parts.method.cloned(), key.clone()));
        *count += 1;
        self.names.store(Arc::new(next));
        if *count >= CAPACITY {
            self.full.store(true, Ordering::Relaxed);
        }
        true
    }

    /// How many names are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        *self.insert.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many slots of the recent table are filled.
    #[cfg(all(test, feature = "axum"))]
    fn recent_len(&self) -> usize {
        self.recent
            .iter()
            .filter(|slot| slot.get().is_some())
            .count()
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

    /// The `MatchedPath` axum gives a request for `uri` through `router`'s route `template`.
    #[cfg(feature = "axum")]
    async fn matched(template: &str, uri: &str) -> MatchedPath {
        use std::sync::Mutex;

        use axum::body::Body;
        use axum::routing::get;
        use tower::ServiceExt;

        let seen = Arc::new(Mutex::new(None));
        let keep = seen.clone();
        let router: axum::Router = axum::Router::new().route(
            template,
            get(move |path: MatchedPath| async move {
                *keep.lock().unwrap() = Some(path);
            }),
        );
        let request = http::Request::get(uri).body(Body::empty()).unwrap();
        router.oneshot(request).await.unwrap();
        let path = seen.lock().unwrap().take();
        path.expect("the handler ran")
    }

    /// Only a request that adds a name fills a slot, and only for a standard method: the same template
    /// from another router (another allocation), or an extension method, leaves the table alone.
    #[cfg(feature = "axum")]
    #[tokio::test]
    async fn only_new_names_with_standard_methods_fill_the_recent_table() {
        let fg = Floodgate::default();
        let cache = RouteNames::default();
        let (a, b) = (matched("/x", "/x").await, matched("/x", "/x").await);
        assert_eq!(a.as_str(), b.as_str());
        assert!(
            !std::ptr::eq(a.as_str(), b.as_str()),
            "two routers, two templates"
        );
        let extension = Method::from_bytes(b"FOO").unwrap();
        let name = |method: &Method, path: &MatchedPath| {
            let parts = NameParts {
                method: Some(method),
                route: path.as_str(),
                matched: Some(path),
            };
            cache.with(&fg, parts, |key| key.name().to_owned())
        };
        assert_eq!(name(&Method::GET, &a), "GET:/x");
        assert_eq!(cache.recent_len(), 1);
        assert_eq!(name(&Method::GET, &a), "GET:/x", "from the table");
        assert_eq!(name(&Method::GET, &b), "GET:/x", "known name: the map");
        assert_eq!(cache.recent_len(), 1);
        for _ in 0..3 {
            assert_eq!(name(&extension, &a), "FOO:/x");
        }
        assert_eq!(cache.recent_len(), 1, "extension methods use the map");
        assert_eq!(name(&Method::POST, &b), "POST:/x");
        assert_eq!(name(&Method::POST, &b), "POST:/x");
        assert_eq!(cache.recent_len(), 2);
        assert_eq!(name(&Method::GET, &a), "GET:/x");
        assert_eq!(cache.len(), 3);
    }

    #[test]
    fn the_cache_is_bounded_and_names_stay_right_past_it() {
        let cache = RouteNames::default();
        for i in 0..CAPACITY + 100 {
            let route = format!("/r/{i}");
            let expected = if i < CAPACITY {
                route.as_str()
            } else {
                GRPC_OVERFLOW
            };
            assert_eq!(name(&cache, None, &route), expected, "gRPC path {i}");
        }
        for i in 0..CAPACITY + 100 {
            let route = format!("/t/{i}");
            assert_eq!(
                name(&cache, Some(&Method::GET), &route),
                format!("GET:{route}")
            );
        }
        assert_eq!(cache.len(), CAPACITY);
        assert!(
            cache.full.load(Ordering::Relaxed),
            "misses past the cap skip the lock"
        );
        assert_eq!(name(&cache, None, "/r/5"), "/r/5", "cached");
        assert_eq!(
            name(&cache, Some(&Method::GET), "/late"),
            "GET:/late",
            "a route template is formatted past the cap (the router bounds them)"
        );
        assert_eq!(
            name(&cache, None, "/late"),
            GRPC_OVERFLOW,
            "a gRPC path past the cap shares one name (clients choose them)"
        );
    }

    /// 1024 distinct gRPC paths (URI-safe ASCII) with one Fx hash for every seed: Fx compresses 16-byte
    /// chunks with a step that has a second input of the same result per chunk, and ten such choices
    /// chain.
    fn fx_colliding_paths() -> Vec<String> {
        const PREFIX: &str = "/MFPw1S.lp0OPyhnDhx081s.mLHGkRpu";
        const PAIRS: [[&str; 2]; 10] = [
            ["L90p46jJ5QXq-14N", "I0-4ZBf30XE5CE87"],
            ["x8BpL5IlaEaIm62i", "7MqsWML5.0RJvN70"],
            ["9Z4u.1GpHX7wq5i.", "61An6qYgG3Bliuw9"],
            ["y3GWyI76xvJLz0o.", "u-4A3JaKth9Z039S"],
            ["jLRu96fQ9LjIf11z", "51ke5b1gf1SYjefL"],
            ["-5I98G0sVK69mN-I", "120w10nsJLOwd9sI"],
            ["VANAd3ssqtQae73k", "SVsE73vztcle676b"],
            ["UC.-IX1lpP92oTww", "pF_t_88OUUHky4~T"],
            ["yL0A3V3BMx3bQQ4N", "Gbzk4Mj9sVyHVJm5"],
            ["~GZ-Vd4U24A459.J", "tA-q5jx2826hV7b-"],
        ];
        const TAIL: &str = "8qipRtBZmBNdNJr7X";
        (0..1u32 << PAIRS.len())
            .map(|bits| {
                let mut path = String::from(PREFIX);
                for (i, pair) in PAIRS.iter().enumerate() {
                    path.push_str(pair[(bits >> i & 1) as usize]);
                }
                path.push_str(TAIL);
                path
            })
            .collect()
    }

    #[test]
    fn grpc_paths_made_to_collide_under_fx_hash_apart() {
        use std::hash::BuildHasher;
        let paths = fx_colliding_paths();
        let fx = |p: &str| rustc_hash::FxBuildHasher.hash_one(p);
        assert!(
            paths.iter().all(|p| fx(p) == fx(&paths[0])),
            "the collision this test is about"
        );
        let (cache, fg) = (RouteNames::default(), Floodgate::default());
        for path in &paths {
            cache.with(&fg, NameParts::new(None, path), |_| ());
        }
        assert_eq!(cache.len(), CAPACITY);
        let names = cache.names.load();
        let hashes: std::collections::HashSet<u64> = paths
            .iter()
            .map(|p| names.hasher().hash_one(p.as_str()))
            .collect();
        assert_eq!(hashes.len(), paths.len(), "no shared probe chain");
    }
}

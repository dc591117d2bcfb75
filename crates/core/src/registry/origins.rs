//! Origins interned: each caller name an engine keeps, stored once, named by an id.

use std::sync::Arc;

use super::{MAX_INTERNED_ORIGINS, MAX_ORIGIN_LEN, OVER_CAP_ORIGIN, Registry};
use crate::keyed_hash::{KeyedMap, keyed_map};

impl Registry {
    /// `origin` interned: an id whose string lives as long as the engine (contexts carry the id, entries
    /// borrow the string, nothing is reference-counted per entry). `bounded`: past
    /// [`MAX_INTERNED_ORIGINS`] a new origin, and always one longer than [`MAX_ORIGIN_LEN`], is not
    /// interned, and `u32::MAX` (no origin) comes back, without taking the engine's lock.
    pub(crate) fn intern_origin(&self, origin: &str, bounded: bool) -> u32 {
        if bounded && origin.len() > MAX_ORIGIN_LEN {
            return u32::MAX;
        }
        if let Some(id) = self.origin_index.get(origin) {
            return id;
        }
        if bounded && self.origins.len() >= MAX_INTERNED_ORIGINS {
            return u32::MAX;
        }
        let _guard = self.lock();
        if let Some(id) = self.origin_index.get(origin) {
            return id;
        }
        if bounded && self.origins.len() >= MAX_INTERNED_ORIGINS {
            return u32::MAX;
        }
        match self.origins.push(Box::from(origin)) {
            Ok(id) => {
                self.origin_index.insert_locked(Arc::from(origin), id);
                id
            }
            Err(_) => u32::MAX,
        }
    }

    /// A context's origin interned (see [`MAX_INTERNED_ORIGINS`]): past the cap, a new one is
    /// [`OVER_CAP_ORIGIN`].
    pub(crate) fn context_origin(&self, origin: &str) -> u32 {
        match self.intern_origin(origin, true) {
            u32::MAX => self.intern_origin(OVER_CAP_ORIGIN, false),
            id => id,
        }
    }
    /// Interns every non-empty origin of `origins` that is not interned yet, whatever the cap, in one
    /// batch: the index copies each of its shards once (an origin at a time, the copies grew with the
    /// square of the origins: the regression test `origins_a_rule_list_names_are_interned_in_one_batch`).
    pub(crate) fn intern_all<'a>(&self, origins: impl IntoIterator<Item = &'a str>) {
        let missing: Vec<&str> = origins
            .into_iter()
            .filter(|o| !o.is_empty() && self.origin_index.get(o).is_none())
            .collect();
        if missing.is_empty() {
            return;
        }
        let _guard = self.lock();
        let mut batch: KeyedMap<&str, ()> = keyed_map();
        let mut entries = Vec::new();
        for origin in missing {
            if self.origin_index.get(origin).is_some() || batch.insert(origin, ()).is_some() {
                continue;
            }
            match self.origins.push(Box::from(origin)) {
                Ok(id) => entries.push((Arc::from(origin), id)),
                Err(_) => break,
            }
        }
        self.origin_index.insert_many_locked(entries);
    }
}

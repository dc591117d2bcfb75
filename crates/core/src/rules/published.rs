//! A rule snapshot published for lock-free readers, with a flag that spares the snapshot load when no
//! rule of the kind is in force (the common case for most kinds on most resources).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arc_swap::{ArcSwap, Guard};

/// The current snapshot of one rule kind.
#[derive(Debug)]
pub(crate) struct Published<T> {
    current: ArcSwap<T>,
    in_force: AtomicBool,
}

impl<T: Default> Default for Published<T> {
    fn default() -> Self {
        Published {
            current: ArcSwap::from_pointee(T::default()),
            in_force: AtomicBool::new(false),
        }
    }
}

impl<T> Published<T> {
    /// Whether any rule is in force (one relaxed load; a reader that sees `true` then loads).
    #[inline]
    pub(crate) fn in_force(&self) -> bool {
        self.in_force.load(Ordering::Relaxed)
    }

    /// The snapshot.
    #[inline]
    pub(crate) fn load(&self) -> Guard<Arc<T>> {
        self.current.load()
    }

    /// The snapshot, owned.
    pub(crate) fn load_full(&self) -> Arc<T> {
        self.current.load_full()
    }

    /// Publishes `value`.
    pub(crate) fn store(&self, value: Arc<T>, in_force: bool) {
        if in_force {
            self.current.store(value);
            self.in_force.store(true, Ordering::Release);
        } else {
            self.in_force.store(false, Ordering::Release);
            self.current.store(value);
        }
    }
}

//! Hashing of names that clients choose (caller origins, resource names taken from requests, argument
//! values) under keys drawn from the operating system's randomness.
//!
//! Fx, the hash of the engine's other maps, compresses a string's bytes with an unkeyed function before
//! it adds its seed, so strings made offline to collide collide in every process and pile up in one
//! bucket: each lookup then compares against all of them. Here strings go through foldhash with a
//! process-wide [`SharedSeed`] and a per-map seed, both taken from std's `RandomState` (foldhash's own
//! global seed comes from addresses and the time).

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::OnceLock;

use foldhash::SharedSeed;
use foldhash::fast::SeedableRandomState;

/// A map whose keys clients choose.
pub(crate) type KeyedMap<K, V> = HashMap<K, V, SeedableRandomState>;

/// A random `u64` (a fresh std `RandomState`'s hash of a constant).
pub(crate) fn random_u64() -> u64 {
    RandomState::new().hash_one(0x5eed_u64)
}

/// The process's string keys.
pub(crate) fn shared_seed() -> &'static SharedSeed {
    static SEED: OnceLock<SharedSeed> = OnceLock::new();
    SEED.get_or_init(|| SharedSeed::from_u64(random_u64()))
}

/// A hasher builder under the process's keys and a seed of its own.
pub(crate) fn keyed_state() -> SeedableRandomState {
    SeedableRandomState::with_seed(random_u64(), shared_seed())
}

/// An empty [`KeyedMap`].
pub(crate) fn keyed_map<K, V>() -> KeyedMap<K, V> {
    HashMap::with_hasher(keyed_state())
}

/// Two strings that collide under Fx for every seed: for 16 bytes Fx's compression is symmetric in
/// the two halves (each xored with a constant), and these are each other's halves so transformed.
#[cfg(test)]
pub(crate) const FX_COLLISION: [&str; 2] = [
    "@\u{80}` @  @\u{80}` @  ",
    "\u{5f9}S\u{61a0}\u{6}\u{17}\u{5f9}S\u{61a0}\u{6}\u{17}",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fx_collides_where_the_keyed_hash_does_not() {
        use std::hash::Hasher;
        let [a, b] = FX_COLLISION;
        for seed in [0, 1, 0x5eed] {
            let fx = |s: &str| {
                let mut h = rustc_hash::FxHasher::with_seed(seed);
                h.write(s.as_bytes());
                h.finish()
            };
            assert_eq!(fx(a), fx(b), "the collision these tests are about");
        }
        let keyed = keyed_state();
        assert_ne!(keyed.hash_one(a), keyed.hash_one(b));
    }

    #[test]
    fn every_state_hashes_differently() {
        let (a, b) = (keyed_state(), keyed_state());
        assert_ne!(a.hash_one("origin-1"), b.hash_one("origin-1"));
        assert_eq!(a.hash_one("origin-1"), a.clone().hash_one("origin-1"));
        assert!(std::ptr::eq(shared_seed(), shared_seed()));
    }
}

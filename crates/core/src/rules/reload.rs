//! What every rule manager does on a reload: carry the state of unchanged rules over to the new list,
//! and drop repeated rules, both in time linear in the lists.
//!
//! Rules are paired by hashes of their fields ([`RuleHasher`], under keys of its own: rule lists come
//! from outside), and compared only with the rules of the same hash. Old states are kept in buckets
//! by hash, each bucket in list order with a cursor past the states already taken, so taking the first
//! unused equal state is constant time however many rules repeat (a linear search of the old states
//! per new rule made a changed list of 30,000 rules take seconds: the regression test
//! `carry_over_compares_each_rule_with_its_own_bucket_only`).

use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

use foldhash::fast::SeedableRandomState;
use rustc_hash::FxHashMap;

use crate::block::BlockRule;
use crate::keyed_hash::keyed_state;

/// Hashes of rules' fields, under keys drawn for one load.
#[derive(Debug, Clone)]
pub(crate) struct RuleHasher(SeedableRandomState);

impl RuleHasher {
    pub(crate) fn new() -> Self {
        RuleHasher(keyed_state())
    }

    /// The hash of what `feed` writes.
    pub(crate) fn hash(&self, feed: impl FnOnce(&mut FieldHasher)) -> u64 {
        let mut h = self.0.build_hasher();
        feed(&mut h);
        h.finish()
    }

    /// The hash of every field of `rule`.
    pub(crate) fn hash_rule(&self, rule: &impl HashRule) -> u64 {
        self.hash(|h| rule.hash_rule(h))
    }
}

/// Feeds a float to `h` as `==` compares it: `0.0` and `-0.0` alike (a NaN is equal to nothing, so
/// how it hashes does not matter).
fn hash_f64(x: f64, h: &mut impl Hasher) {
    let bits = if x == 0.0 { 0 } else { x.to_bits() };
    bits.hash(h);
}

/// A float field of a rule, compared with `==` and hashed alike: a tuple of a rule's fields (floats
/// wrapped in it) both compares and hashes them, so that one list of the fields serves both.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Float(pub(crate) f64);

impl PartialEq for Float {
    fn eq(&self, other: &Float) -> bool {
        self.0 == other.0
    }
}

impl Hash for Float {
    fn hash<H: Hasher>(&self, h: &mut H) {
        hash_f64(self.0, h);
    }
}

/// A relation between old states and new rules, with a hash of each side that is equal whenever the
/// relation holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pairing<HS, HR, M> {
    /// The hash of an old state's rule.
    pub(crate) state: HS,
    /// The hash of a new rule.
    pub(crate) rule: HR,
    /// Whether the relation holds.
    pub(crate) holds: M,
}

/// The end of a group in [`Buckets::next`].
const END: usize = usize::MAX;

/// Positions of a list grouped by hash, each group a chain in list order (no allocation per group:
/// most hold one position), with a cursor past the positions already taken at its front.
#[derive(Debug, Default)]
struct Buckets {
    /// The cursor of each group: its first position not known to be taken.
    cursors: FxHashMap<u64, usize>,
    /// The next position of the same hash, or [`END`].
    next: Vec<usize>,
}

impl Buckets {
    fn new(hashes: Vec<u64>) -> Self {
        let mut cursors = FxHashMap::with_capacity_and_hasher(hashes.len(), Default::default());
        let mut next = vec![END; hashes.len()];
        // From the end, so that each chain comes out in list order.
        for (position, hash) in hashes.into_iter().enumerate().rev() {
            next[position] = cursors.insert(hash, position).unwrap_or(END);
        }
        Buckets { cursors, next }
    }

    /// Takes the first position of the group of `hash` that is not `taken` and `fits`.
    fn take(
        &mut self,
        hash: u64,
        taken: &mut [bool],
        mut fits: impl FnMut(usize) -> bool,
    ) -> Option<usize> {
        let cursor = self.cursors.get_mut(&hash)?;
        while *cursor != END && taken[*cursor] {
            *cursor = self.next[*cursor];
        }
        let mut position = *cursor;
        while position != END {
            if !taken[position] && fits(position) {
                taken[position] = true;
                return Some(position);
            }
            position = self.next[position];
        }
        None
    }
}

/// The states for the `new` rule list: each rule equal to one in force (`same`) takes that rule's
/// state, each old state at most once and the first unused one first (so duplicates never share one);
/// the others, in list order, get `fresh` state, made with the first unused old state that is
/// `similar` (the same rule but for its presentation) when there is one, to copy from. This is what
/// keeps warm-up tokens, pacing, breakers and value caches across a reload of unrelated rules.
pub(crate) fn carry_over<T, S>(
    old: &[Arc<S>],
    new: Vec<T>,
    same: Pairing<impl Fn(&S) -> u64, impl Fn(&T) -> u64, impl Fn(&S, &T) -> bool>,
    similar: Pairing<impl Fn(&S) -> u64, impl Fn(&T) -> u64, impl Fn(&S, &T) -> bool>,
    mut fresh: impl FnMut(T, Option<&S>) -> S,
) -> Vec<Arc<S>> {
    if old.is_empty() {
        return new
            .into_iter()
            .map(|rule| Arc::new(fresh(rule, None)))
            .collect();
    }
    let mut taken = vec![false; old.len()];
    let mut equal = Buckets::new(old.iter().map(|s| (same.state)(s)).collect());
    let kept: Vec<Option<usize>> = new
        .iter()
        .map(|rule| {
            equal.take((same.rule)(rule), &mut taken, |p| {
                (same.holds)(&old[p], rule)
            })
        })
        .collect();
    let mut alike = Buckets::new(old.iter().map(|s| (similar.state)(s)).collect());
    new.into_iter()
        .zip(kept)
        .map(|(rule, kept)| match kept {
            Some(p) => Arc::clone(&old[p]),
            None => {
                let like = alike.take((similar.rule)(&rule), &mut taken, |p| {
                    (similar.holds)(&old[p], &rule)
                });
                Arc::new(fresh(rule, like.map(|p| &*old[p])))
            }
        })
        .collect()
}

/// The hasher [`RuleHasher::hash`] feeds.
pub(crate) type FieldHasher = <SeedableRandomState as BuildHasher>::Hasher;

/// A rule type that a reload pairs by hashes of its fields: its fields but `id` as one value that
/// compares with `==` and hashes alike, and the id beside them.
pub(crate) trait HashRule: PartialEq + BlockRule {
    /// Every field but `id` (see [`compared_fields`]).
    fn without_id(&self) -> impl Hash + PartialEq;

    /// Feeds every field to `h`, so that equal rules hash alike.
    fn hash_rule<H: Hasher>(&self, h: &mut H) {
        (self.id(), self.without_id()).hash(h);
    }

    /// Feeds every field but `id` to `h`, so that rules equal but for their id hash alike (a reload
    /// pairs rules by it).
    fn hash_without_id<H: Hasher>(&self, h: &mut H) {
        self.without_id().hash(h);
    }

    /// Whether this rule and `other` are equal but for their ids (without copying either).
    fn eq_but_id(&self, other: &Self) -> bool {
        self.without_id() == other.without_id()
    }
}

/// The fields of `$value`, a `$rule`, as one value that compares with `==` and hashes alike: nested
/// pairs of the fields in the order given, those marked `: Float` wrapped in a [`Float`]. Every field
/// is named, those after `ignoring` left out, so that a field added to the rule must be placed.
macro_rules! compared_fields {
    ($value:expr => $rule:ident {
        $($field:ident $(: $float:ident)?),+ ; ignoring $($skip:ident),+ $(,)?
    }) => {{
        let $rule { $($field,)+ $($skip: _,)+ } = $value;
        $crate::rules::compared_fields!(@pairs $($field $($float)?),+)
    }};
    (@pairs) => {
        ()
    };
    (@pairs $field:ident Float $(, $($rest:tt)*)?) => {
        ($crate::rules::Float(*$field), $crate::rules::compared_fields!(@pairs $($($rest)*)?))
    };
    (@pairs $field:ident $(, $($rest:tt)*)?) => {
        ($field, $crate::rules::compared_fields!(@pairs $($($rest)*)?))
    };
}
pub(crate) use compared_fields;

/// A rule's state, holding its rule.
pub(crate) trait HoldsRule {
    type Rule: HashRule;

    fn rule(&self) -> &Self::Rule;
}

/// How [`carry_over_rules`] tells a similar rule (the same rule but for its presentation): `holds(old,
/// new)`, backed by what `fields` feeds a hasher (equal whenever `holds` holds).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Similar<F, M> {
    pub(crate) fields: F,
    pub(crate) holds: M,
}

/// [`carry_over`] of rule states: a new item (whose rule `rule_of` gives) keeps the state of an equal
/// rule in force, or gets a `fresh` one made with the state of a `similar` rule when there is one.
pub(crate) fn carry_over_rules<T, S: HoldsRule>(
    old: &[Arc<S>],
    new: Vec<T>,
    rule_of: impl Fn(&T) -> &S::Rule,
    similar: Similar<impl Fn(&S::Rule, &mut FieldHasher), impl Fn(&S::Rule, &S::Rule) -> bool>,
    fresh: impl FnMut(T, Option<&S>) -> S,
) -> Vec<Arc<S>> {
    let hasher = RuleHasher::new();
    let every_field = |r: &S::Rule| hasher.hash_rule(r);
    let similar_fields = |r: &S::Rule| hasher.hash(|h| (similar.fields)(r, h));
    carry_over(
        old,
        new,
        Pairing {
            state: |s: &S| every_field(s.rule()),
            rule: |t: &T| every_field(rule_of(t)),
            holds: |s: &S, t: &T| s.rule() == rule_of(t),
        },
        Pairing {
            state: |s: &S| similar_fields(s.rule()),
            rule: |t: &T| similar_fields(rule_of(t)),
            holds: |s: &S, t: &T| (similar.holds)(s.rule(), rule_of(t)),
        },
        fresh,
    )
}

/// The first item of each kind among the items of a list offered so far, by hash: an item is compared
/// only with the firsts of its hash.
#[derive(Debug, Default)]
pub(crate) struct Firsts {
    groups: FxHashMap<u64, Vec<usize>>,
}

impl Firsts {
    /// The position of the first of the `earlier` items (those offered so far, in list order) equal to
    /// `item` (`eq`, which equal hashes must back; `hash` is `item`'s); if there is none, `item` is
    /// noted as the first of its kind, at position `earlier.len()`.
    pub(crate) fn earlier_equal<T>(
        &mut self,
        earlier: &[T],
        item: &T,
        hash: u64,
        eq: impl Fn(&T, &T) -> bool,
    ) -> Option<usize> {
        let group = self.groups.entry(hash).or_default();
        let found = group.iter().copied().find(|&p| eq(&earlier[p], item));
        if found.is_none() {
            group.push(earlier.len());
        }
        found
    }
}

/// Whether each item is the first of the items equal to it (`eq`, which equal `hash`es must back), in
/// list order.
pub(crate) fn first_of_each<T>(
    items: &[T],
    hash: impl Fn(&T) -> u64,
    eq: impl Fn(&T, &T) -> bool,
) -> Vec<bool> {
    let mut firsts = Firsts::default();
    items
        .iter()
        .enumerate()
        .map(|(position, item)| {
            firsts
                .earlier_equal(&items[..position], item, hash(item), &eq)
                .is_none()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    /// A state: a rule (a value) and a tag saying where it came from.
    type State = (i32, &'static str);

    /// How a test pairs states with rules.
    type TestPairing = Pairing<
        Box<dyn Fn(&State) -> u64>,
        Box<dyn Fn(&i32) -> u64>,
        Box<dyn Fn(&State, &i32) -> bool>,
    >;

    /// States and rules paired by `key` of their values: hashed by the key, holding when the keys
    /// are equal.
    fn by_key(key: fn(i32) -> i32) -> TestPairing {
        Pairing {
            state: Box::new(move |s| key(s.0) as u64),
            rule: Box::new(move |r| key(*r) as u64),
            holds: Box::new(move |s, r| key(s.0) == key(*r)),
        }
    }

    /// `pairing` with every state and rule hashed alike.
    fn colliding(pairing: TestPairing) -> TestPairing {
        Pairing {
            state: Box::new(|_| 7),
            rule: Box::new(|_| 7),
            holds: pairing.holds,
        }
    }

    #[test]
    fn unchanged_rules_keep_their_state_once_each() {
        let old = vec![Arc::new((1, "a")), Arc::new((1, "b")), Arc::new((2, "c"))];
        let new = carry_over(
            &old,
            vec![1, 1, 1, 3],
            by_key(|v| v),
            Pairing {
                state: |_: &State| 0,
                rule: |_: &i32| 0,
                holds: |_: &State, _: &i32| false,
            },
            |r, _| (r, "fresh"),
        );
        assert_eq!(
            new.iter().map(|s| s.1).collect::<Vec<_>>(),
            ["a", "b", "fresh", "fresh"]
        );
        assert!(Arc::ptr_eq(&new[0], &old[0]));
    }

    #[test]
    fn a_similar_old_state_is_offered_once_after_the_equal_ones() {
        // States (value, tag); "similar" means the same value mod 10.
        let old = vec![Arc::new((1, "a")), Arc::new((12, "b")), Arc::new((2, "c"))];
        let new = carry_over(
            &old,
            vec![22, 2, 32, 5],
            by_key(|v| v),
            by_key(|v| v % 10),
            |r, like: Option<&State>| (r, like.map_or("fresh", |l| l.1)),
        );
        assert_eq!(
            new.iter().map(|s| (s.0, s.1)).collect::<Vec<_>>(),
            [(22, "b"), (2, "c"), (32, "fresh"), (5, "fresh")],
            "2 keeps its equal state; 22 copies from 12, once; nothing is like 5"
        );
    }

    /// Hash collisions (here every rule collides) cost comparisons, never the outcome.
    #[test]
    fn colliding_hashes_keep_the_outcome() {
        let old = vec![Arc::new((1, "a")), Arc::new((12, "b")), Arc::new((2, "c"))];
        let new = carry_over(
            &old,
            vec![22, 2, 32, 5],
            colliding(by_key(|v| v)),
            colliding(by_key(|v| v % 10)),
            |r, like: Option<&State>| (r, like.map_or("fresh", |l| l.1)),
        );
        assert_eq!(
            new.iter().map(|s| (s.0, s.1)).collect::<Vec<_>>(),
            [(22, "b"), (2, "c"), (32, "fresh"), (5, "fresh")],
        );
    }

    /// 3,000 rules renumbered (none equal to an old one, each similar to one) and 3,000 repeats of one
    /// rule: each new rule is compared with the states of its own hash only, about once. A linear
    /// search of the old states compared each new rule with all of them (9 million comparisons).
    #[test]
    fn carry_over_compares_each_rule_with_its_own_bucket_only() {
        const N: usize = 3000;
        let comparisons = Cell::new(0usize);
        let count = |holds: bool| {
            comparisons.set(comparisons.get() + 1);
            holds
        };
        // Rules (value, id); similar: the same value.
        let old: Vec<Arc<(usize, usize)>> = (0..N).map(|v| Arc::new((v, 0))).collect();
        let renumbered: Vec<(usize, usize)> = (0..N).map(|v| (v, 1)).collect();
        let hasher = RuleHasher::new();
        let full = |r: &(usize, usize)| hasher.hash(|h| r.hash(h));
        let value = |r: &(usize, usize)| hasher.hash(|h| r.0.hash(h));
        let equal = Pairing {
            state: full,
            rule: full,
            holds: |s: &(usize, usize), r: &(usize, usize)| count(s == r),
        };
        let similar = Pairing {
            state: value,
            rule: value,
            holds: |s: &(usize, usize), r: &(usize, usize)| count(s.0 == r.0),
        };
        let states = carry_over(&old, renumbered, equal, similar, |r, like| {
            (r.0, like.map_or(9, |l| l.1))
        });
        assert!(
            states.iter().all(|s| s.1 == 0),
            "each copied its similar state"
        );
        assert!(comparisons.get() <= N, "{} comparisons", comparisons.get());

        comparisons.set(0);
        let old: Vec<Arc<(usize, usize)>> = (0..N).map(|_| Arc::new((5, 0))).collect();
        let states = carry_over(&old, vec![(5, 0); N], equal, similar, |r, _| r);
        assert!(states.iter().zip(&old).all(|(s, o)| Arc::ptr_eq(s, o)));
        assert!(comparisons.get() <= N, "{} comparisons", comparisons.get());
    }

    #[test]
    fn the_first_of_each_kind_is_kept_with_few_comparisons() {
        let items: Vec<u32> = (0..2000).map(|i| i % 700).collect();
        let comparisons = Cell::new(0usize);
        let hasher = RuleHasher::new();
        let firsts = first_of_each(
            &items,
            |i| hasher.hash(|h| i.hash(h)),
            |a, b| {
                comparisons.set(comparisons.get() + 1);
                a == b
            },
        );
        let kept: Vec<u32> = items
            .iter()
            .zip(&firsts)
            .filter_map(|(i, first)| first.then_some(*i))
            .collect();
        assert_eq!(kept, (0..700).collect::<Vec<_>>());
        // Each repeat is compared with the first of its kind; a first item, with nothing (no
        // collision among 700 values).
        assert_eq!(comparisons.get(), 2000 - 700);
        // Colliding hashes: still right.
        let firsts = first_of_each(&[1, 2, 1, 3, 2], |_| 0, |a, b| a == b);
        assert_eq!(firsts, [true, true, false, true, false]);
        let mut seen = Firsts::default();
        let list = [4, 5, 4];
        let found: Vec<Option<usize>> = (0..3)
            .map(|i| seen.earlier_equal(&list[..i], &list[i], 0, |a, b| a == b))
            .collect();
        assert_eq!(
            found,
            [None, None, Some(0)],
            "the position of the first equal"
        );
    }

    #[test]
    fn floats_hash_as_they_compare() {
        let hasher = RuleHasher::new();
        let hash = |x: f64| hasher.hash(|h| hash_f64(x, h));
        assert_eq!(hash(0.0), hash(-0.0));
        assert_ne!(hash(1.0), hash(2.0));
    }
}

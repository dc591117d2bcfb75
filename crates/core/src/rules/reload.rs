//! What every rule manager does on a reload: carry the state of unchanged rules over to the new list.

use std::sync::Arc;

/// The states for the `new` rule list: each rule equal to one in force (`same`) takes that rule's state,
/// each old state at most once (so duplicates never share one); the others get `fresh` state, made with
/// an unused old state that is `similar` (the same rule but for its presentation) when there is one, to
/// copy from. This is what keeps warm-up tokens, pacing, breakers and value caches across a reload of
/// unrelated rules.
pub(crate) fn carry_over<T, S>(
    old: &[Arc<S>],
    new: Vec<T>,
    same: impl Fn(&S, &T) -> bool,
    similar: impl Fn(&S, &T) -> bool,
    mut fresh: impl FnMut(T, Option<&S>) -> S,
) -> Vec<Arc<S>> {
    let mut unused: Vec<Option<&Arc<S>>> = old.iter().map(Some).collect();
    let kept: Vec<Option<&Arc<S>>> = new
        .iter()
        .map(|rule| {
            unused
                .iter_mut()
                .find(|s| s.is_some_and(|s| same(s, rule)))
                .and_then(Option::take)
        })
        .collect();
    new.into_iter()
        .zip(kept)
        .map(|(rule, kept)| match kept {
            Some(state) => Arc::clone(state),
            None => {
                let like = unused
                    .iter_mut()
                    .find(|s| s.is_some_and(|s| similar(s, &rule)))
                    .and_then(Option::take);
                Arc::new(fresh(rule, like.map(|s| &**s)))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unchanged_rules_keep_their_state_once_each() {
        let old = vec![Arc::new((1, "a")), Arc::new((1, "b")), Arc::new((2, "c"))];
        let new = carry_over(
            &old,
            vec![1, 1, 1, 3],
            |s, r| s.0 == *r,
            |_, _| false,
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
            |s, r| s.0 == *r,
            |s, r| s.0 % 10 == *r % 10,
            |r, like: Option<&(i32, &str)>| (r, like.map_or("fresh", |l| l.1)),
        );
        assert_eq!(
            new.iter().map(|s| (s.0, s.1)).collect::<Vec<_>>(),
            [(22, "b"), (2, "c"), (32, "fresh"), (5, "fresh")],
            "2 keeps its equal state; 22 copies from 12, once; nothing is like 5"
        );
    }
}

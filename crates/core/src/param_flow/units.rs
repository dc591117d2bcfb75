//! The (rule, value) pairs a hot-parameter check walks for one call.
//!
//! Each rule picks one argument per call: `paramIdx` from the start, or counted from the end when
//! negative. A missing argument, an index out of range or a `Null` value is no pair (it passes, as in
//! Sentinel); a list argument contributes each of its elements (`Null` elements and nested lists
//! contribute nothing). Pairs come in rule order, list elements in list order.
//!
//! The pairs of cluster rules are walked by every walk but a local check's: that one walks only
//! the pairs the token service left to a local check, named by their place among the cluster pairs
//! of the call.

use std::sync::Arc;

use super::manager::{ParamRuleState, Rules};
use crate::param::ParamValue;

/// The argument a rule looks at in a call with `args`.
#[inline]
pub(super) fn argument<'s, 'a>(args: &'s [ParamValue<'a>], idx: i32) -> Option<&'s ParamValue<'a>> {
    let i = if idx >= 0 {
        usize::try_from(idx).ok()?
    } else {
        args.len()
            .checked_sub(usize::try_from(idx.unsigned_abs()).ok()?)?
    };
    args.get(i)
}

/// The (rule, value) pairs of a call.
pub(super) struct Units<'r, 's, 'a> {
    rules: std::slice::Iter<'r, Arc<ParamRuleState>>,
    args: &'s [ParamValue<'a>],
    list: Option<(&'r ParamRuleState, std::slice::Iter<'s, ParamValue<'a>>)>,
    /// With `Some`, a cluster rule's pair is walked only when its flag is set.
    fell_back: Option<&'r [bool]>,
    /// Cluster pairs passed so far.
    cluster_pairs: usize,
}

impl<'r, 's, 'a> Units<'r, 's, 'a> {
    /// Every pair of a call with `args` under `rules`.
    pub(super) fn new(rules: &'r Rules, args: &'s [ParamValue<'a>]) -> Self {
        Units {
            rules: rules.iter(),
            args,
            list: None,
            fell_back: None,
            cluster_pairs: 0,
        }
    }

    /// The pairs to check locally: every local rule's, and the cluster rules' whose flag in
    /// `fell_back` is set (`None`: every pair).
    pub(super) fn local(
        rules: &'r Rules,
        args: &'s [ParamValue<'a>],
        fell_back: Option<&'r [bool]>,
    ) -> Self {
        Units {
            fell_back,
            ..Units::new(rules, args)
        }
    }

    #[inline]
    fn next_pair(&mut self) -> Option<(&'r ParamRuleState, &'s ParamValue<'a>)> {
        loop {
            if let Some((state, elements)) = &mut self.list {
                let state = *state;
                if let Some(v) = elements.find(|v| !v.is_null() && v.as_list().is_none()) {
                    return Some((state, v));
                }
                self.list = None;
            }
            let state = &**self.rules.next()?;
            match argument(self.args, state.rule.param_idx) {
                None | Some(ParamValue::Null) => {}
                Some(v) => match v.as_list() {
                    Some(elements) => self.list = Some((state, elements.iter())),
                    None => return Some((state, v)),
                },
            }
        }
    }
}

impl<'r, 's, 'a> Iterator for Units<'r, 's, 'a> {
    type Item = (&'r ParamRuleState, &'s ParamValue<'a>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (state, value) = self.next_pair()?;
            if let (Some(fell_back), Some(_)) = (self.fell_back, &state.cluster) {
                let at = self.cluster_pairs;
                self.cluster_pairs += 1;
                if !fell_back.get(at).copied().unwrap_or(false) {
                    continue;
                }
            }
            return Some((state, value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_indexes_count_from_the_end_of_each_call() {
        let two = [ParamValue::from("a"), ParamValue::from("b")];
        let three = [
            ParamValue::from(1),
            ParamValue::from(2),
            ParamValue::from(3),
        ];
        assert_eq!(argument(&two, -1), Some(&two[1]));
        assert_eq!(argument(&three, -1), Some(&three[2]));
        assert_eq!(argument(&two, -2), Some(&two[0]));
        assert_eq!(argument(&two, -3), None);
        assert_eq!(argument(&two, 2), None);
        assert_eq!(argument(&two, i32::MIN), None);
        assert_eq!(argument(&[], -1), None);
    }
}

//! ParamFlowSlot (−3000): every hot-parameter rule of the resource must admit the call's values.
//!
//! Each rule picks one argument per call: `paramIdx` from the start, or counted from the end when
//! negative (`-1` is the last argument of *this* call; the rule itself never changes: PF-01). A missing
//! argument, an index out of range or a `Null` value passes, as in Sentinel. A list argument contributes
//! each of its elements as a value of its own (`Null` elements and nested lists pass).
//!
//! The (rule, value) pairs of a call are admitted all or nothing. A single pair is decided directly.
//! Several pairs (a list, or several rules) are first all *checked* without changing anything; only if
//! every one would pass are they charged, in order, and should one then fail after all (a concurrent
//! call took the last token in between) the ones already charged are refunded. A blocked call therefore
//! never consumes tokens (Sentinel charged the elements before the failing one: PF-03). The call waits
//! for the longest queueing delay any pair asked for.
//!
//! THREAD rules count a call in flight per value when it is admitted and release it when the entry
//! exits, or when a later slot blocks the entry.

use std::sync::Arc;
use std::time::Duration;

use super::manager::{ParamRuleState, Rules, Verdict};
use crate::block::{BlockError, BlockKind, BlockRule};
use crate::param::ParamValue;
use crate::rules::RuleType;
use crate::slot::{ExitContext, Hooks, Slot, SlotContext, order};

/// Sentinel's `ParamFlowSlot`.
#[derive(Debug, Default)]
pub struct ParamFlowSlot;

/// The argument a rule looks at in a call with `args`.
#[inline]
fn argument<'s, 'a>(args: &'s [ParamValue<'a>], idx: i32) -> Option<&'s ParamValue<'a>> {
    let i = if idx >= 0 {
        usize::try_from(idx).ok()?
    } else {
        args.len()
            .checked_sub(usize::try_from(idx.unsigned_abs()).ok()?)?
    };
    args.get(i)
}

/// The (rule, value) pairs of a call, in rule order, list elements in list order.
struct Units<'r, 's, 'a> {
    rules: std::slice::Iter<'r, Arc<ParamRuleState>>,
    args: &'s [ParamValue<'a>],
    list: Option<(&'r ParamRuleState, std::slice::Iter<'s, ParamValue<'a>>)>,
}

impl<'r, 's, 'a> Units<'r, 's, 'a> {
    fn new(rules: &'r Rules, args: &'s [ParamValue<'a>]) -> Self {
        Units {
            rules: rules.iter(),
            args,
            list: None,
        }
    }
}

impl<'r, 's, 'a> Iterator for Units<'r, 's, 'a> {
    type Item = (&'r ParamRuleState, &'s ParamValue<'a>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((state, elements)) = &mut self.list {
                let state = *state;
                if let Some(v) = elements.find(|v| !v.is_null() && v.as_list().is_none()) {
                    return Some((state, v));
                }
                self.list = None;
            }
            let state = &**self.rules.next()?;
            if !state.local {
                continue;
            }
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

fn block(cx: &SlotContext<'_>, state: &ParamRuleState, value: &ParamValue<'_>) -> BlockError {
    cx.block(BlockKind::ParamFlow)
        .with_rule(state.rule.clone() as Arc<dyn BlockRule>)
        .with_param(value)
}

/// Releases the THREAD counts of a call on resource `scope` with `args` (admitted at `admitted_ms`).
fn release(rules: &Rules, scope: u32, args: &[ParamValue<'_>], admitted_ms: u64) {
    for (state, value) in Units::new(rules, args) {
        if state.is_thread() && admitted_ms >= state.since_ms {
            state.release(scope, value);
        }
    }
}

impl Slot for ParamFlowSlot {
    #[inline]
    fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        let args = cx.args;
        if args.is_empty() || !cx.engine.param_flow.any() {
            return Ok(());
        }
        let snapshot = cx.engine.param_flow.snapshot();
        let Some(rules) = snapshot.rules_of(cx.resource) else {
            return Ok(());
        };
        let (scope, now, acquire) = (cx.resource.id, cx.now_ms, cx.count);
        let mut units = Units::new(rules, args);
        let Some((state, value)) = units.next() else {
            return Ok(());
        };
        let wait = if units.next().is_none() {
            match state.acquire(scope, value, now, acquire) {
                Verdict::Pass(wait) => wait,
                Verdict::Block => return Err(block(cx, state, value)),
            }
        } else {
            if let Some((state, value)) =
                Units::new(rules, args).find(|(s, v)| !s.would_admit(scope, v, now, acquire))
            {
                return Err(block(cx, state, value));
            }
            let mut longest = 0;
            for (charged, (state, value)) in Units::new(rules, args).enumerate() {
                match state.acquire(scope, value, now, acquire) {
                    Verdict::Pass(wait) => longest = longest.max(wait),
                    Verdict::Block => {
                        for (s, v) in Units::new(rules, args).take(charged) {
                            s.refund(scope, v, acquire);
                        }
                        return Err(block(cx, state, value));
                    }
                }
            }
            longest
        };
        if wait > 0 {
            cx.add_wait(Duration::from_millis(wait));
        }
        Ok(())
    }

    fn on_block(&self, cx: &mut SlotContext<'_>, _block: &BlockError) {
        if cx.args.is_empty() || !cx.engine.param_flow.any_thread() {
            return;
        }
        let snapshot = cx.engine.param_flow.snapshot();
        if !snapshot.has_thread_rules() {
            return;
        }
        if let Some(rules) = snapshot.rules_of(cx.resource) {
            release(rules, cx.resource.id, cx.args, cx.now_ms);
        }
    }

    #[inline]
    fn rule_type(&self) -> Option<RuleType> {
        Some(RuleType::ParamFlow)
    }

    fn exit(&self, cx: &mut ExitContext<'_>) {
        if cx.args.is_empty() || !cx.engine.param_flow.any_thread() {
            return;
        }
        let snapshot = cx.engine.param_flow.snapshot();
        if !snapshot.has_thread_rules() {
            return;
        }
        if let Some(rules) = snapshot.rules_of(cx.resource) {
            release(
                rules,
                cx.resource.id,
                cx.args,
                cx.now_ms.saturating_sub(u64::from(cx.rt_ms)),
            );
        }
    }

    fn hooks(&self) -> Hooks {
        Hooks {
            entry: true,
            pass: false,
            block: true,
            exit: true,
        }
    }
}

crate::register_slot!("param_flow", order::PARAM_FLOW, || Arc::new(ParamFlowSlot));

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

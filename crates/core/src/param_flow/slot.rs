//! ParamFlowSlot (−3000): every hot-parameter rule of the resource must admit the call's values.
//!
//! Each rule picks one argument per call (`paramIdx`; negative counts from the end of *this* call,
//! the rule itself never changes, so that a call with another number of arguments is not checked on
//! the wrong one: `a_negative_index_is_resolved_per_call`), and each value of it is a (rule, value)
//! pair of the call ([`super::units`]). The pairs of rules in cluster mode ask the token service
//! first ([`super::cluster`]); only those it leaves to a local check are checked here.
//!
//! The (rule, value) pairs of a call are admitted all or nothing. A single pair is decided directly.
//! Several pairs (a list, or several rules) are first all *checked* without changing anything; only if
//! every one would pass are they charged, in order, and should one then fail after all (a concurrent
//! call took the last token in between) the ones already charged are refunded. A blocked call therefore
//! never consumes tokens (Sentinel charges the elements before the failing one:
//! `a_blocked_list_consumes_nothing`). The call waits for the longest queueing delay any pair asked
//! for.
//!
//! THREAD rules count a call in flight per value when it is admitted and release it when the entry
//! exits, or when a later slot blocks the entry. The slot keeps the generation of the rules the call
//! was counted under as its word of the entry, until the exit (so its exit hook runs even once no
//! hot-parameter rule is in force), and the release goes to exactly the rule states of that generation
//! still in force (a state carried over by a reload keeps its counts; a rule added meanwhile never
//! counted this call). Times would not do: a reload in the same millisecond as an admission is
//! indistinguishable by time.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rustc_hash::FxHashMap;

use super::cluster;
use super::manager::{ParamFlowRules, ParamRuleState, Rules, Verdict};
use super::units::Units;
use crate::block::{BlockError, BlockKind};
use crate::param::{ParamValue, ValueKind};
use crate::registry::Resource;
use crate::rules::RuleType;
use crate::slot::{ExitContext, Hooks, Slot, SlotContext};

/// Sentinel's `ParamFlowSlot`.
pub(crate) struct ParamFlowSlot {
    rules: Arc<ParamFlowRules>,
}

impl fmt::Debug for ParamFlowSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParamFlowSlot").finish_non_exhaustive()
    }
}

impl ParamFlowSlot {
    /// The slot enforcing `rules` (an engine's own).
    pub(crate) fn new(rules: Arc<ParamFlowRules>) -> Self {
        ParamFlowSlot { rules }
    }
}

/// Pairs counted without allocating; a call with more distinct pairs counts the rest in a map.
const INLINE_PAIRS: usize = 16;

/// The first (rule, value) pair of a call that would not be admitted. A pair that occurs more than once
/// (a value repeated in a list) is checked, at its k-th occurrence, for k charges, as charging it k
/// times one after the other takes: the charges that follow then fail only if a concurrent call took
/// the room meanwhile, and a refused call changes nothing (refunds are close, not exact: a window or a
/// pacing slot a charge opened stays open). Pairs are told apart by rule, value kind and value hash
/// (a number's hash is its value within its kind, so an integer and a float can share one).
fn first_refused<'r, 's, 'a>(
    mut units: Units<'r, 's, 'a>,
    scope: u32,
    now: u64,
    acquire: u32,
) -> Option<(&'r ParamRuleState, &'s ParamValue<'a>)> {
    let mut inline = [((0usize, 0u64, 0u8), 0u32); INLINE_PAIRS];
    let mut len = 0;
    let mut more: Option<FxHashMap<(usize, u64, u8), u32>> = None;
    units.find(|(state, value)| {
        let times = match state.value_hash(scope, value) {
            None => 1,
            Some(hash) => {
                let kind = ValueKind::of(value).map_or(u8::MAX, |k| k as u8);
                let key = (
                    std::ptr::from_ref::<ParamRuleState>(state) as usize,
                    hash,
                    kind,
                );
                if let Some(seen) = inline[..len].iter_mut().find(|e| e.0 == key) {
                    seen.1 += 1;
                    seen.1
                } else if len < INLINE_PAIRS {
                    inline[len] = (key, 1);
                    len += 1;
                    1
                } else {
                    let seen = more
                        .get_or_insert_with(FxHashMap::default)
                        .entry(key)
                        .or_insert(0);
                    *seen += 1;
                    *seen
                }
            }
        };
        !state.would_admit(scope, value, now, acquire, times)
    })
}

fn block(cx: &SlotContext<'_>, state: &ParamRuleState, value: &ParamValue<'_>) -> BlockError {
    cx.block(BlockKind::ParamFlow)
        .with_rule(crate::thread_copies::rule(&state.rule))
        .with_param(value)
}

/// Releases the THREAD counts of a call on resource `scope` with `args`, counted under the rules of
/// `generation`.
fn release(rules: &Rules, scope: u32, args: &[ParamValue<'_>], generation: u64) {
    for (state, value) in Units::new(rules, args) {
        if state.is_thread() && state.born <= generation {
            state.release(scope, value);
        }
    }
}

/// Releases what [`ParamFlowSlot::entry`] counted for `resource` under `generation` (`None`: nothing).
fn release_counted(
    rules: &ParamFlowRules,
    resource: &Resource,
    args: &[ParamValue<'_>],
    generation: Option<u64>,
) {
    let Some(generation) = generation else {
        return;
    };
    let snapshot = rules.snapshot();
    if let Some(rules) = snapshot.rules_of(resource) {
        release(rules, resource.id, args, generation);
    }
}

impl Slot for ParamFlowSlot {
    #[inline]
    fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        // The chain calls it only while hot-parameter rules are in force (the built-in path and the
        // generic loop both check the engine's in-force mask first).
        let args = cx.args;
        if args.is_empty() {
            return Ok(());
        }
        let snapshot = self.rules.snapshot();
        let Some(rules) = snapshot.rules_of(cx.resource) else {
            return Ok(());
        };
        let (scope, now, acquire) = (cx.resource.id, cx.now_nanos, cx.count);
        let asked = if rules.iter().any(|s| s.cluster.is_some()) {
            match cluster::ask(cx, rules, args) {
                Ok(asked) => Some(asked),
                Err((state, value)) => return Err(block(cx, state, value)),
            }
        } else {
            None
        };
        let fell_back = asked.as_ref().map(|a| a.fell_back.as_slice());
        let local = || Units::local(rules, args, fell_back);
        let mut units = local();
        let wait = match (units.next(), units.next()) {
            (None, _) => 0,
            (Some((state, value)), None) => match state.acquire(scope, value, now, acquire) {
                Verdict::Pass(wait) => wait,
                Verdict::Block => return Err(block(cx, state, value)),
            },
            (Some(_), Some(_)) => {
                if let Some((state, value)) = first_refused(local(), scope, now, acquire) {
                    return Err(block(cx, state, value));
                }
                let mut longest = 0;
                for (charged, (state, value)) in local().enumerate() {
                    match state.acquire(scope, value, now, acquire) {
                        Verdict::Pass(wait) => longest = longest.max(wait),
                        Verdict::Block => {
                            for (s, v) in local().take(charged) {
                                s.refund(scope, v, acquire);
                            }
                            return Err(block(cx, state, value));
                        }
                    }
                }
                longest
            }
        };
        let wait = Duration::from_nanos(wait).max(asked.map_or(Duration::ZERO, |a| a.wait));
        if !wait.is_zero() {
            cx.add_wait(wait);
        }
        if rules.iter().any(|s| s.is_thread()) {
            cx.keep_until_exit(snapshot.generation);
        }
        Ok(())
    }

    fn on_block(&self, cx: &mut SlotContext<'_>, _block: &BlockError) {
        // Forgotten as released: nothing is counted any more.
        let counted = cx.forget();
        release_counted(&self.rules, cx.resource, cx.args, counted);
    }

    #[inline]
    fn rule_type(&self) -> Option<RuleType> {
        Some(RuleType::ParamFlow)
    }

    fn on_abandon(&self, cx: &mut SlotContext<'_>) {
        // A custom entry hook after this one panicked: the values counted in flight (THREAD rules) are
        // released, or they would stay counted for good.
        let counted = cx.forget();
        release_counted(&self.rules, cx.resource, cx.args, counted);
    }

    fn exit(&self, cx: &mut ExitContext<'_>) {
        release_counted(&self.rules, cx.resource, cx.args, cx.kept());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_integer_and_a_float_with_one_hash_are_two_values() {
        use crate::param::unmix;
        use crate::{Floodgate, ParamFlowRule};
        let fg = Floodgate::builder().build();
        fg.load_param_flow_rules([ParamFlowRule::new("r", 0, 1.0)])
            .unwrap();
        drop(fg.entry("r").enter());
        let resource = fg.inner.resource("r").unwrap();
        let snapshot = fg.inner.rules.param_flow.snapshot();
        let state = &snapshot.rules_of(resource).unwrap()[0];
        let hash = |v: ParamValue<'_>| state.value_hash(resource.id, &v).unwrap();
        // A number's hash is `mix(salt ^ bits)`: the float whose bits are `i ^ int salt ^ float salt`
        // hashes as the integer `i`.
        let salts = unmix(hash(ParamValue::Int(0))) ^ unmix(hash(ParamValue::Float(0.0)));
        let (int, float) = (1..)
            .map(|i: i64| (i, f64::from_bits(salts ^ i as u64)))
            .find(|(_, f)| !f.is_nan())
            .unwrap();
        assert_eq!(hash(ParamValue::Int(int)), hash(ParamValue::Float(float)));
        // Each is charged once, and a threshold of 1 admits each once.
        let both = ParamValue::list([ParamValue::Int(int), ParamValue::Float(float)]);
        assert!(fg.entry("r").args([both.clone()]).enter().is_ok());
        assert!(fg.entry("r").args([both]).enter().is_err());
    }
}

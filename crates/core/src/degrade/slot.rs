//! DefaultCircuitBreakerSlot (−1500) and DegradeSlot (−1000): every breaker of the resource must pass.
//!
//! The degrade slot checks the breakers of the resource's own rules; the default slot checks those of
//! the default rules (resource `"*"`), only for a resource without rules of its own. Both work the same
//! way, in four steps:
//!
//! 1. **entry**: ask each breaker once ([`Breaker::try_pass`]). A closed breaker passes; an open one
//!    blocks; an open one whose retry time has come reserves the probe, and the reservation (a
//!    [`ProbeToken`]) is attached to the entry, and the slot marks its exit
//!    ([`SlotContext::keep_until_exit`]) so that the probe completes even if the degrade rules are
//!    removed before the entry exits. If a breaker blocks, the reservations this slot made for the same
//!    entry are released before the block is returned.
//! 2. **on_pass** (the whole chain admitted the entry): commit the reservations, OPEN → HALF_OPEN.
//! 3. **on_block** (a later slot blocked the entry): release them, silently, retry time unchanged.
//! 4. **exit**: the probe's completion decides its breaker; every other breaker of the resource counts
//!    the call (its RT and whether it traced an error; the batch count is ignored, as in Sentinel).

use std::fmt;
use std::sync::Arc;

use super::breaker::{Admission, Breaker, ProbeToken};
use super::manager::{DegradeRules, Resolved};
use crate::block::{BlockError, BlockKind};
use crate::rules::RuleType;
use crate::slot::{Attachment, ExitContext, Slot, SlotContext};

/// Sentinel's `DegradeSlot`: the breakers of the resource's own degrade rules.
pub(crate) struct DegradeSlot {
    rules: Arc<DegradeRules>,
}

impl fmt::Debug for DegradeSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DegradeSlot").finish_non_exhaustive()
    }
}

impl DegradeSlot {
    /// The slot enforcing `rules` (an engine's own).
    pub(crate) fn new(rules: Arc<DegradeRules>) -> Self {
        DegradeSlot { rules }
    }
}

/// Sentinel's `DefaultCircuitBreakerSlot`: the breakers of the default rules (resource `"*"`), for
/// resources without degrade rules of their own.
pub(crate) struct DefaultCircuitBreakerSlot {
    rules: Arc<DegradeRules>,
}

impl fmt::Debug for DefaultCircuitBreakerSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DefaultCircuitBreakerSlot")
            .finish_non_exhaustive()
    }
}

impl DefaultCircuitBreakerSlot {
    /// The slot enforcing `rules` (an engine's own).
    pub(crate) fn new(rules: Arc<DegradeRules>) -> Self {
        DefaultCircuitBreakerSlot { rules }
    }
}

/// Which slot: the resource's own rules, or the default rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    Own,
    Default,
}

impl Which {
    fn list(self, resolved: &Resolved) -> &[Arc<Breaker>] {
        match self {
            Which::Own => &resolved.explicit,
            Which::Default => &resolved.defaults,
        }
    }

    /// This slot's probe, if `attachment` is one.
    fn probe(self, attachment: &Attachment) -> Option<&ProbeToken> {
        let token = attachment.downcast_ref::<ProbeToken>()?;
        (token.breaker().rule.is_default() == (self == Which::Default)).then_some(token)
    }
}

impl Slot for DegradeSlot {
    #[inline]
    fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        entry(&self.rules, cx, Which::Own)
    }

    fn on_pass(&self, cx: &mut SlotContext<'_>) {
        commit(cx, Which::Own);
    }

    fn on_block(&self, cx: &mut SlotContext<'_>, _block: &BlockError) {
        release(cx, Which::Own);
    }

    #[inline]
    fn exit(&self, cx: &mut ExitContext<'_>) {
        exit(&self.rules, cx, Which::Own);
    }

    fn rule_type(&self) -> Option<RuleType> {
        Some(RuleType::Degrade)
    }
}

impl Slot for DefaultCircuitBreakerSlot {
    #[inline]
    fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        entry(&self.rules, cx, Which::Default)
    }

    fn on_pass(&self, cx: &mut SlotContext<'_>) {
        commit(cx, Which::Default);
    }

    fn on_block(&self, cx: &mut SlotContext<'_>, _block: &BlockError) {
        release(cx, Which::Default);
    }

    #[inline]
    fn exit(&self, cx: &mut ExitContext<'_>) {
        exit(&self.rules, cx, Which::Default);
    }

    fn rule_type(&self) -> Option<RuleType> {
        Some(RuleType::Degrade)
    }
}

#[inline]
fn entry(rules: &DegradeRules, cx: &mut SlotContext<'_>, which: Which) -> Result<(), BlockError> {
    if !rules.in_force_for(which == Which::Default) {
        return Ok(());
    }
    let snapshot = rules.snapshot();
    if snapshot.is_empty() {
        return Ok(());
    }
    let resource = cx.resource;
    let Some(resolved) = snapshot.breakers(resource) else {
        return Ok(());
    };
    let breakers = which.list(resolved);
    if breakers.is_empty() {
        return Ok(());
    }
    let mark = cx.kept.attachments().len();
    for breaker in breakers {
        match breaker.try_pass(cx.now_ms) {
            Admission::Pass => {}
            Admission::Probe(token) => {
                cx.attach(Arc::new(token));
                // The probe, attached, is the state; the word says nothing more.
                cx.keep_until_exit(0);
            }
            Admission::Block => {
                // Dropping the tokens this call reserved releases them (nothing reported).
                if let Some(attachments) = cx.kept.attachments_mut() {
                    attachments.truncate(mark);
                }
                return Err(cx
                    .block(BlockKind::Degrade)
                    .with_rule(crate::thread_copies::rule(&breaker.rule)));
            }
        }
    }
    Ok(())
}

fn commit(cx: &mut SlotContext<'_>, which: Which) {
    for attachment in cx.kept.attachments() {
        if let Some(token) = which.probe(attachment) {
            token.commit(cx.now_ms);
        }
    }
}

fn release(cx: &mut SlotContext<'_>, which: Which) {
    if let Some(attachments) = cx.kept.attachments_mut() {
        attachments.retain(|a| which.probe(a).is_none());
    }
}

#[inline]
fn exit(rules: &DegradeRules, cx: &mut ExitContext<'_>, which: Which) {
    let (rt, error, now) = (cx.rt_ms, cx.error, cx.now_ms);
    let mut probes = false;
    for attachment in cx.attachments() {
        if let Some(token) = which.probe(attachment) {
            token.complete(rt, error, now);
            probes = true;
        }
    }
    if !rules.in_force_for(which == Which::Default) {
        return;
    }
    let snapshot = rules.snapshot();
    if snapshot.is_empty() {
        return;
    }
    let Some(resolved) = snapshot.breakers(cx.resource) else {
        return;
    };
    for breaker in which.list(resolved) {
        let is_probe = probes
            && cx.attachments().iter().any(|a| {
                which
                    .probe(a)
                    .is_some_and(|t| Arc::ptr_eq(t.breaker(), breaker))
            });
        if !is_probe {
            breaker.on_complete(rt, error, now);
        }
    }
}

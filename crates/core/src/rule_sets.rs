//! The rules of every kind an engine enforces, each shared (an `Arc`) with the slot that enforces it.

use std::sync::Arc;

use crate::authority::AuthorityRules;
use crate::degrade::DegradeRules;
use crate::flow::FlowRules;
use crate::param_flow::ParamFlowRules;
use crate::rules::RuleType;
use crate::system::SystemRules;

/// The rules of every kind an engine enforces.
#[derive(Clone)]
pub(crate) struct RuleSets {
    pub(crate) flow: Arc<FlowRules>,
    pub(crate) degrade: Arc<DegradeRules>,
    pub(crate) authority: Arc<AuthorityRules>,
    pub(crate) system: Arc<SystemRules>,
    pub(crate) param_flow: Arc<ParamFlowRules>,
}

impl RuleSets {
    /// Whether any rule of `rule_type` is in force.
    #[inline]
    pub(crate) fn in_force(&self, rule_type: RuleType) -> bool {
        match rule_type {
            RuleType::Flow => self.flow.in_force(),
            RuleType::Degrade => self.degrade.in_force(),
            RuleType::Authority => self.authority.in_force(),
            RuleType::System => self.system.in_force(),
            RuleType::ParamFlow => self.param_flow.any(),
        }
    }
}

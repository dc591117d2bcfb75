//! Flow control: flow rules, the slot that checks them, and the four traffic-shaping controllers
//! (reject, warm-up, uniform pacing, warm-up pacing).

mod decision;
mod limit_app;
mod manager;
mod reject;
mod rule;
mod slot;
mod throttling;
mod warm_up;
mod warm_up_rate_limiter;

pub use manager::FlowStatus;
pub(crate) use manager::{FlowKind, FlowRules};
pub(crate) use reject::RejectController;
pub use rule::{ClusterFlowConfig, ControlBehavior, FlowGrade, FlowRule, FlowStrategy};
pub(crate) use slot::FlowSlot;
pub(crate) use throttling::ThrottlingController;
pub(crate) use warm_up::{DEFAULT_COLD_FACTOR, WarmUpController};
pub(crate) use warm_up_rate_limiter::WarmUpRateLimiterController;

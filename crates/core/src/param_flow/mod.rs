//! Hot-parameter flow control: rules that limit each distinct value of an argument, the slot that
//! checks them, and the bounded per-value state behind them.

mod cache;
mod cluster;
mod concurrency;
mod manager;
mod rate_limiter;
mod rule;
mod slot;
mod token_bucket;
mod units;

pub(crate) use manager::ParamFlowKind;
pub use manager::ParamFlowStatus;
pub use rule::{ParamFlowClusterConfig, ParamFlowItem, ParamFlowRule};
pub(crate) use slot::ParamFlowSlot;

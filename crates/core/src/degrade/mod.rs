//! Circuit breaking: degrade rules, the breakers they drive, and the slots that check them.

mod breaker;
mod bucket;
mod error_count;
mod error_ratio;
mod manager;
mod observer;
mod rule;
mod slot;
mod slow_ratio;

pub(crate) use manager::DegradeKind;
pub use observer::{BreakerState, BreakerStateChange, BreakerStatus};
pub use rule::{DEFAULT_DEGRADE_RESOURCE, DegradeGrade, DegradeRule};
pub(crate) use slot::{DefaultCircuitBreakerSlot, DegradeSlot};

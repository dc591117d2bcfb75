//! Sliding-window statistics: tagged atomic cells, the LeapArray, and the per-second history.

pub(crate) mod cell;
mod fast_div;
mod leap_array;
mod second_history;
mod stripe;

pub(crate) use cell::AddOutcome;
pub use leap_array::WindowError;
pub(crate) use leap_array::{Cursor, Event, LeapArray};
pub(crate) use second_history::{HistoryGuard, SecondHistory, SecondRecord};
pub(crate) use stripe::{current_stripe, stripe_count};

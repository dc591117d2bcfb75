//! The integration tests of floodgate-core, one module per area, in one test binary (one link instead
//! of one per file). `tests/slots.rs` is its own binary: it registers a slot process-wide.

mod support;

mod authority;
mod builder;
mod builtin_chain;
mod caps;
mod cluster;
mod context;
mod degrade;
mod entry;
mod events;
mod flow;
mod flow_async;
mod owned;
mod param_flow;
mod round_trip;
mod rule_json_props;
mod rule_limits;
mod rule_warnings;
mod stress;
mod system;

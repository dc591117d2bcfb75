//! What the engine reports about the traffic it guards and the rules in force: the statistics of a
//! node ([`NodeView`], [`NodeSnapshot`]), the call tree ([`CallTree`]), the per-second metric lines
//! ([`MetricLine`]) and the state of each rule kind ([`FlowStatus`], [`BreakerStatus`],
//! [`ParamFlowStatus`], [`SystemStatus`]).
//!
//! Each is read from a [`Floodgate`](crate::Floodgate): `cluster_node` and the other node views,
//! `call_tree`, `metrics`, `flow_status`, `circuit_breakers`, `param_flow_status`, `system_status` and
//! `stats`.

pub use crate::degrade::BreakerStatus;
pub use crate::floodgate::EngineStats;
pub use crate::flow::FlowStatus;
pub use crate::node::{CallTree, MetricLine, NodeSnapshot, NodeView, TreeNodeKind};
pub use crate::param_flow::ParamFlowStatus;
pub use crate::system::{SystemStatus, SystemThresholds};
pub use crate::utc::utc_datetime;

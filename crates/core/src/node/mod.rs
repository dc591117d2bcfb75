//! The statistic nodes: per resource (cluster), per resource × context (default), per context
//! (entrance), per resource × origin, and the global inbound node.

mod children;
mod cluster_node;
mod default_node;
mod entrance_node;
mod snapshot;
mod statistic_node;

pub(crate) use cluster_node::ClusterNode;
pub(crate) use default_node::DefaultNode;
pub(crate) use entrance_node::EntranceNode;
pub use snapshot::{CallTree, MetricLine, NodeSnapshot, NodeView, TreeNodeKind};
pub(crate) use statistic_node::{StatisticNode, WindowGeometry};

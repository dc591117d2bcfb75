//! Cluster flow control as the dashboard shows it: each live machine's mode and backend (asked of its
//! agent), and the app's cluster rules with their traffic summed over its machines; and the
//! assignment of machines to token servers and their clients.

mod answers;
mod assign;
mod machines;
mod rules;

pub use answers::{
    AnswerError, Backend, ClientConfig, ClusterMode, FlowMetric, MAX_ITEMS, Namespace,
    RedisBackend, ServerInfo, read_client_config, read_cluster_mode, read_metric_list,
    read_server_info,
};
pub use assign::{AssignError, Assignment, CLIENT_REQUEST_TIMEOUT_MS, assign, server_port};
pub use machines::{BackendDetail, MachineCluster, MachineState, cluster_of_app};
pub use rules::{ClusterRule, ClusterRules, TRAFFIC_LOOKBACK_MS, Traffic, cluster_rules};

//! The embedded token server serves the application's own cluster rules.
//!
//! While the application is its cluster's token server, the server's rules of the application's
//! namespace follow the engine's rules in cluster mode (flow and hot-parameter): loaded when the
//! server starts and again whenever they differ, checked once a second (however the engine's
//! rules changed: `setRules`, a rule file, the application itself). The machines of the app get the
//! same rules from the dashboard, so the server grants exactly the rules its clients ask for. Once
//! `cluster/server/modifyFlowRules` (or `modifyParamRules`) sets that namespace's rules of a type
//! explicitly, the explicit rules stay and that type no longer follows.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use floodgate_cluster::server::{LocalTokenService, ServerRuleError};
use floodgate_core::Floodgate;

/// How often the rules are compared.
const EVERY: Duration = Duration::from_secs(1);

/// Which of the namespace's rule types follow the engine's. Held while rules are compared and
/// loaded, and while explicit rules are set, so that a comparison never loads over explicit rules.
#[derive(Debug)]
pub(crate) struct Following(Mutex<Types>);

/// The rule types that follow the engine's.
#[derive(Debug)]
pub(crate) struct Types {
    pub(crate) flow: bool,
    pub(crate) param: bool,
}

impl Default for Following {
    fn default() -> Self {
        Following(Mutex::new(Types {
            flow: true,
            param: true,
        }))
    }
}

impl Following {
    /// The types, held until the guard drops.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Types> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Loads the engine's cluster rules into `namespace` of `service` where they differ from what it
/// serves; a list the server refuses is logged (once while it stays the same) and the server keeps
/// what it had.
pub(crate) fn sync(
    fg: &Floodgate,
    service: &LocalTokenService,
    namespace: &str,
    following: &Following,
    refused: &mut Option<String>,
) {
    let types = following.lock();
    let mut failure = None;
    if types.flow {
        let own = fg.flow_rules().into_iter().filter(|r| r.cluster_mode);
        failure = load_if_changed(
            own,
            |r| r.cluster_config.as_ref().map(|c| c.flow_id),
            service.flow_rules(namespace),
            |rules| service.load_flow_rules(namespace, rules),
        )
        .map(|e| format!("flow rules: {e}"));
    }
    if types.param {
        let own = fg.param_flow_rules().into_iter().filter(|r| r.cluster_mode);
        let refused = load_if_changed(
            own,
            |r| r.cluster_config.as_ref().map(|c| c.flow_id),
            service.param_rules(namespace),
            |rules| service.load_param_rules(namespace, rules),
        );
        failure = refused
            .map(|e| format!("hot-parameter rules: {e}"))
            .or(failure);
    }
    if failure.is_some() && failure != *refused {
        tracing::warn!(
            target: "floodgate::cluster",
            namespace,
            error = failure.as_deref().unwrap_or_default(),
            "the token server refuses the application's own cluster rules: it keeps what it served"
        );
    }
    *refused = failure;
}

/// Loads `own` (in flow id order, as the server lists its rules) with `load` unless the server
/// serves them already; the server's refusal, if it refused.
fn load_if_changed<R: PartialEq>(
    own: impl Iterator<Item = R>,
    flow_id: impl Fn(&R) -> Option<i64>,
    served: Vec<R>,
    load: impl FnOnce(Vec<R>) -> Result<usize, ServerRuleError>,
) -> Option<ServerRuleError> {
    let mut own: Vec<R> = own.collect();
    own.sort_by_key(|r| flow_id(r));
    if own == served {
        return None;
    }
    load(own).err()
}

/// Keeps `namespace` of `service` following the engine's cluster rules until aborted.
pub(crate) async fn follow(
    fg: Floodgate,
    service: Arc<LocalTokenService>,
    namespace: String,
    following: Arc<Following>,
) {
    let mut ticks = tokio::time::interval(EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut refused = None;
    // The first tick is at once: the rules were loaded when the server started.
    ticks.tick().await;
    loop {
        ticks.tick().await;
        sync(&fg, &service, &namespace, &following, &mut refused);
    }
}

#[cfg(test)]
mod tests {
    use floodgate_core::{ClusterFlowConfig, FlowRule, ParamFlowClusterConfig, ParamFlowRule};

    use super::*;

    fn cluster_flow(flow_id: i64, count: f64) -> FlowRule {
        let mut rule = FlowRule::new("GET:/orders", count);
        rule.cluster_mode = true;
        rule.cluster_config = Some(ClusterFlowConfig {
            flow_id,
            ..ClusterFlowConfig::default()
        });
        rule
    }

    #[test]
    fn the_namespace_serves_the_engines_cluster_rules_until_set_explicitly() {
        let fg = Floodgate::builder().build();
        let mut param = ParamFlowRule::new("GET:/orders", 0, 5.0);
        param.cluster_mode = true;
        param.cluster_config = Some(ParamFlowClusterConfig {
            flow_id: 9,
            ..ParamFlowClusterConfig::default()
        });
        fg.load_flow_rules([
            cluster_flow(8, 3.0),
            FlowRule::new("local", 1.0),
            cluster_flow(7, 2.0),
        ])
        .unwrap();
        fg.load_param_flow_rules([param]).unwrap();
        let service = LocalTokenService::default();
        let following = Following::default();
        let mut refused = None;
        sync(&fg, &service, "orders", &following, &mut refused);
        let ids: Vec<i64> = service
            .flow_rules("orders")
            .iter()
            .map(|r| r.cluster_config.as_ref().unwrap().flow_id)
            .collect();
        assert_eq!(ids, [7, 8], "the cluster rules only");
        assert_eq!(service.param_rules("orders").len(), 1);
        assert_eq!(refused, None);

        fg.load_flow_rules([cluster_flow(7, 4.0)]).unwrap();
        sync(&fg, &service, "orders", &following, &mut refused);
        assert_eq!(service.flow_rules("orders"), fg.flow_rules());

        following.lock().flow = false;
        fg.load_flow_rules([cluster_flow(7, 10.0)]).unwrap();
        sync(&fg, &service, "orders", &following, &mut refused);
        assert_eq!(
            service.flow_rules("orders")[0].count,
            4.0,
            "set explicitly: kept"
        );
    }
}

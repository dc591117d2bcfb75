//! An app's cluster rules (its stored flow and hot-parameter rules in cluster mode) with the traffic
//! of each one's resource in the last complete second: pass and block, summed over the app's machines
//! from the metrics the dashboard stores.

use std::collections::HashMap;

use floodgate_core::RuleType;
use serde_json::Value;

use crate::AppState;
use crate::db::ResourceSecond;
use crate::error::AppResult;

/// How far back the newest stored second is looked for.
pub const TRAFFIC_LOOKBACK_MS: i64 = 60_000;

/// One cluster rule.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterRule {
    /// Flow or hot-parameter.
    pub rule_type: RuleType,
    /// The dashboard's id of the rule.
    pub id: i64,
    /// The flow id it has for the token service.
    pub flow_id: Option<i64>,
    /// Its resource.
    pub resource: String,
    /// 0 average local (the threshold is each machine's), 1 global.
    pub threshold_type: i64,
    /// Its threshold.
    pub count: f64,
    /// Whether a machine limits locally when the token service fails.
    pub fallback_to_local: bool,
    /// Its resource's pass and block in [`ClusterRules::second`] (zero when it had no traffic),
    /// or `None` without a second.
    pub traffic: Option<Traffic>,
}

/// A resource's traffic in one second, over the app's machines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Traffic {
    /// Calls let through.
    pub pass: i64,
    /// Calls blocked.
    pub block: i64,
    /// The machines that reported the resource.
    pub machines: i64,
}

/// An app's cluster rules and the second their traffic is of.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterRules {
    /// The newest stored second up to the last complete one (ms), if there is one within
    /// [`TRAFFIC_LOOKBACK_MS`].
    pub second: Option<i64>,
    /// The rules, flow rules first, each list by id.
    pub rules: Vec<ClusterRule>,
}

fn cluster_rule(rule_type: RuleType, id: i64, body: &str) -> Option<ClusterRule> {
    let rule: Value = serde_json::from_str(body).ok()?;
    if rule["clusterMode"].as_bool() != Some(true) {
        return None;
    }
    let config = &rule["clusterConfig"];
    Some(ClusterRule {
        rule_type,
        id,
        flow_id: config["flowId"].as_i64(),
        resource: rule["resource"].as_str().unwrap_or("").to_owned(),
        threshold_type: config["thresholdType"].as_i64().unwrap_or(0),
        count: rule["count"].as_f64().unwrap_or(0.0),
        fallback_to_local: config["fallbackToLocalWhenFail"].as_bool().unwrap_or(true),
        traffic: None,
    })
}

/// The cluster rules of app `app_id`, with their traffic.
pub async fn cluster_rules(state: &AppState, app_id: i64) -> AppResult<ClusterRules> {
    let mut rules = Vec::new();
    for rule_type in [RuleType::Flow, RuleType::ParamFlow] {
        for r in state.db.rules(app_id, rule_type.as_str()).await? {
            rules.extend(cluster_rule(rule_type, r.id, &r.body));
        }
    }
    let now = state.now_ms();
    // The last complete second: the one being counted now may hold only some machines' calls.
    let last_complete = now - now.rem_euclid(1000) - 1000;
    let second = if rules.is_empty() {
        None
    } else {
        state
            .db
            .newest_metric_second(app_id, last_complete - TRAFFIC_LOOKBACK_MS, last_complete)
            .await?
    };
    if let Some(ts) = second {
        let by_name: HashMap<String, ResourceSecond> = state
            .db
            .resources_in_second(app_id, ts)
            .await?
            .into_iter()
            .map(|r| (r.resource.clone(), r))
            .collect();
        for rule in &mut rules {
            rule.traffic =
                Some(
                    by_name
                        .get(&rule.resource)
                        .map_or(Traffic::default(), |r| Traffic {
                            pass: r.pass,
                            block: r.block,
                            machines: r.machines,
                        }),
                );
        }
    }
    Ok(ClusterRules { second, rules })
}

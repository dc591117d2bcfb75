//! The Prometheus exporter: the engine's figures in the Prometheus text format (version 0.0.4), encoded by
//! `prometheus-client`, served as the `metrics` command (`GET /metrics` on the command port) and, when
//! configured, on a port of its own. The metrics are listed on [`prometheus_text`].

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use floodgate_core::stats::EngineStats;
use floodgate_core::{
    BlockKind, BreakerState, DegradeGrade, Floodgate, RuleType, TOTAL_INBOUND_TRAFFIC,
};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use prometheus_client::registry::Unit;

use crate::metric_store::{MetricStore, OTHER_RESOURCES, ResourceTotals, named_resources};

/// The content type of the exposition (Prometheus text format 0.0.4).
pub const PROMETHEUS_CONTENT_TYPE: &str =
    prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The label value of a block kind.
fn kind_label(kind: BlockKind) -> &'static str {
    match kind {
        BlockKind::Flow => "flow",
        BlockKind::Degrade => "degrade",
        BlockKind::System => "system",
        BlockKind::Authority => "authority",
        BlockKind::ParamFlow => "param_flow",
        _ => "custom",
    }
}

fn grade_label(grade: DegradeGrade) -> &'static str {
    match grade {
        DegradeGrade::SlowRequestRatio => "slow_request_ratio",
        DegradeGrade::ErrorRatio => "error_ratio",
        DegradeGrade::ErrorCount => "error_count",
    }
}

/// The gauge value of a breaker state.
fn state_value(state: BreakerState) -> i64 {
    match state {
        BreakerState::Closed => 0,
        BreakerState::Open => 1,
        BreakerState::HalfOpen => 2,
    }
}

/// How restrictive a state is, to pick one among a resource's breakers of one grade.
fn restrictiveness(state: BreakerState) -> u8 {
    match state {
        BreakerState::Closed => 0,
        BreakerState::HalfOpen => 1,
        BreakerState::Open => 2,
    }
}

/// Sums `(name, value)` pairs per name, in the order first seen, folding names outside `allowed` into
/// [`OTHER_RESOURCES`].
fn bounded<K: Eq + Hash + Copy, V: Copy>(
    items: impl IntoIterator<Item = (Arc<str>, K, V)>,
    allowed: &HashSet<Arc<str>>,
    merge: impl Fn(V, V) -> V,
) -> Vec<(Arc<str>, K, V)> {
    let other: Arc<str> = Arc::from(OTHER_RESOURCES);
    let mut out: Vec<(Arc<str>, K, V)> = Vec::new();
    let mut index: HashMap<(Arc<str>, K), usize> = HashMap::new();
    for (name, key, value) in items {
        let name = if allowed.contains(&name) {
            name
        } else {
            other.clone()
        };
        match index
            .get(&(name.clone(), key))
            .and_then(|&i| out.get_mut(i))
        {
            Some(slot) => slot.2 = merge(slot.2, value),
            None => {
                index.insert((name.clone(), key), out.len());
                out.push((name, key, value));
            }
        }
    }
    out
}

/// Everything one scrape reports, read from the engine and the agent's totals.
#[derive(Debug)]
struct Scrape {
    totals: Vec<(Arc<str>, (), ResourceTotals)>,
    blocks: Vec<(Arc<str>, &'static str, u64)>,
    concurrency: Vec<(Arc<str>, (), u64)>,
    breakers: Vec<(Arc<str>, &'static str, BreakerState)>,
    rules: Vec<(RuleType, usize)>,
    stats: EngineStats,
}

impl Scrape {
    fn read(fg: &Floodgate, store: &MetricStore) -> Self {
        let mut allowed = named_resources(fg);
        allowed.insert(Arc::from(TOTAL_INBOUND_TRAFFIC));
        allowed.insert(Arc::from(OTHER_RESOURCES));
        let add = |a: ResourceTotals, b: ResourceTotals| ResourceTotals {
            pass: a.pass + b.pass,
            block: a.block + b.block,
            success: a.success + b.success,
            exception: a.exception + b.exception,
            rt_sum_ms: a.rt_sum_ms + b.rt_sum_ms,
        };
        let totals = bounded(
            store.totals().into_iter().map(|(n, t)| (n, (), t)),
            &allowed,
            add,
        );
        let blocks = bounded(
            fg.block_counts()
                .into_iter()
                .map(|(n, kind, count)| (n, kind_label(kind), count)),
            &allowed,
            |a, b| a + b,
        );
        let concurrency = bounded(
            fg.cluster_nodes()
                .into_iter()
                .map(|n| (n.name, (), n.cur_thread_num)),
            &allowed,
            |a, b| a + b,
        );
        let breakers = bounded(
            fg.circuit_breakers()
                .into_iter()
                .map(|b| (b.resource, grade_label(b.rule.grade), b.state)),
            &allowed,
            |a, b| {
                if restrictiveness(b) > restrictiveness(a) {
                    b
                } else {
                    a
                }
            },
        );
        Scrape {
            totals,
            blocks,
            concurrency,
            breakers,
            rules: RuleType::ALL
                .iter()
                .map(|&t| (t, fg.rule_count(t)))
                .collect(),
            stats: fg.stats(),
        }
    }
}

impl Collector for Scrape {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), fmt::Error> {
        if !self.totals.is_empty() {
            let mut metric = encoder.encode_descriptor(
                "requests",
                "Requests per resource and outcome: pass, block (refused by a rule), success (completed, \
                 errors included) and exception (completed with a traced error).",
                None,
                MetricType::Counter,
            )?;
            for (resource, (), t) in &self.totals {
                for (outcome, value) in [
                    ("pass", t.pass),
                    ("block", t.block),
                    ("success", t.success),
                    ("exception", t.exception),
                ] {
                    let labels = [("resource", &**resource), ("outcome", outcome)];
                    ConstCounter::new(value).encode(metric.encode_family(&labels)?)?;
                }
            }
            let mut metric = encoder.encode_descriptor(
                "response_time",
                "The sum of completed requests' response times, in seconds (measured in whole \
                 milliseconds; divide by the success count for the average).",
                Some(&Unit::Seconds),
                MetricType::Counter,
            )?;
            for (resource, (), t) in &self.totals {
                let labels = [("resource", &**resource)];
                // Milliseconds to seconds (exact up to 2^53 ms, some 285,000 years of response time).
                let seconds = t.rt_sum_ms as f64 / 1000.0;
                ConstCounter::new(seconds).encode(metric.encode_family(&labels)?)?;
            }
        }
        if !self.blocks.is_empty() {
            let mut metric = encoder.encode_descriptor(
                "blocks",
                "Requests refused, per resource and the kind of protection that refused them.",
                None,
                MetricType::Counter,
            )?;
            for (resource, kind, count) in &self.blocks {
                let labels = [("resource", &**resource), ("kind", *kind)];
                ConstCounter::new(*count).encode(metric.encode_family(&labels)?)?;
            }
        }
        if !self.concurrency.is_empty() {
            let mut metric = encoder.encode_descriptor(
                "concurrency",
                "Requests in flight per resource.",
                None,
                MetricType::Gauge,
            )?;
            for (resource, (), n) in &self.concurrency {
                let labels = [("resource", &**resource)];
                ConstGauge::new(*n as i64).encode(metric.encode_family(&labels)?)?;
            }
        }
        if !self.breakers.is_empty() {
            let mut metric = encoder.encode_descriptor(
                "circuit_breaker_state",
                "Circuit breaker state per resource and grade: 0 closed, 1 open, 2 half-open (the most \
                 restrictive of several breakers).",
                None,
                MetricType::Gauge,
            )?;
            for (resource, grade, state) in &self.breakers {
                let labels = [("resource", &**resource), ("grade", *grade)];
                ConstGauge::new(state_value(*state)).encode(metric.encode_family(&labels)?)?;
            }
        }
        let mut metric = encoder.encode_descriptor(
            "rules",
            "Rules in force per rule type.",
            None,
            MetricType::Gauge,
        )?;
        for (rule_type, count) in &self.rules {
            let labels = [("type", rule_type.as_str())];
            ConstGauge::new(*count as i64).encode(metric.encode_family(&labels)?)?;
        }
        let metric = encoder.encode_descriptor(
            "resources",
            "Resources with statistics.",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(self.stats.resources as i64).encode(metric)?;
        let metric = encoder.encode_descriptor(
            "resource_cap_hits",
            "Entries on new resources past the resource cap (passed uncounted, or counted on a shared resource).",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(self.stats.resource_cap_hits).encode(metric)?;
        Ok(())
    }
}

/// The exposition of `fg` and the agent's `store`, in the Prometheus text format 0.0.4 (served by the
/// agent as `GET /metrics`). Names, units and types follow Prometheus' conventions (base units,
/// `_total` counters): `promtool check metrics` has nothing to say about it.
///
/// | metric | type | labels | from |
/// |---|---|---|---|
/// | `floodgate_requests_total` | counter | `resource`, `outcome` = `pass`, `block`, `success`, `exception` | the per-second metric lines, summed |
/// | `floodgate_response_time_seconds_total` | counter | `resource` | the sum of completed calls' RTs, in seconds (whole milliseconds measured) |
/// | `floodgate_blocks_total` | counter | `resource`, `kind` = `flow`, `degrade`, `system`, `authority`, `param_flow`, `custom` | the block log's lifetime counters |
/// | `floodgate_concurrency` | gauge | `resource` | calls in flight now |
/// | `floodgate_circuit_breaker_state` | gauge | `resource`, `grade` = `slow_request_ratio`, `error_ratio`, `error_count` | 0 closed, 1 open, 2 half-open |
/// | `floodgate_rules` | gauge | `type` = `flow`, `degrade`, `system`, `authority`, `paramFlow` | rules in force |
/// | `floodgate_resources` | gauge | — | resources with statistics |
/// | `floodgate_resource_cap_hits_total` | counter | — | entries on new resources past the cap |
///
/// * **Totals are exact and lag by a second.** The engine keeps windows, not lifetime counters; the agent
///   adds each finished second once (see [`MetricStore`]), so `requests_total` moves once a second, when the
///   collector runs. `success` counts every completed call (errors included, as Sentinel does); the average
///   RT over a range, in seconds, is `rate(floodgate_response_time_seconds_total[1m]) /
///   rate(floodgate_requests_total{outcome="success"}[1m])`. `blocks_total` is counted on the blocking
///   path, so it is current while `requests_total{outcome="block"}` catches up within a second.
/// * **Bounded labels.** At most the engine's resource cap of resource names appear (the first resources
///   created, plus `__total_inbound_traffic__`); the figures of any further resource add up under
///   `resource="__other__"`. A resource's several breakers of one grade report the most restrictive state
///   (open, then half-open, then closed).
/// * **Token.** The exposition is a command like any other: when the agent has a token, Prometheus must
///   send it, e.g. `authorization: { credentials: <token> }` in the scrape config (sent as
///   `Authorization: Bearer <token>`), or `params: { token: [<token>] }`.
pub fn prometheus_text(fg: &Floodgate, store: &MetricStore) -> String {
    let mut registry = Registry::with_prefix("floodgate");
    registry.register_collector(Box::new(Scrape::read(fg, store)));
    let mut out = String::new();
    // Writing into a String cannot fail, and the collector only fails when its writer does.
    let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &registry);
    out
}

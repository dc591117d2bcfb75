//! The token service of a token server, counted in this process (Sentinel's `DefaultTokenService`
//! and `ClusterFlowChecker`).
//!
//! Rules are grouped by namespace (a client's ping names its namespace; by default its application's
//! name). A flow rule's global threshold is its `count` (threshold type GLOBAL) or `count` × the
//! clients connected in its namespace (AVG_LOCAL), times the namespace's `exceed_count`. A request for
//! `n` tokens passes when `threshold − passes per second − n ≥ 0` over the rule's own window
//! (`sampleCount` buckets over `windowIntervalMs`); a prioritized request that does not may borrow
//! from the next bucket (answered SHOULD_WAIT with the wait) while the passes borrowed stay within
//! `max_occupy_ratio` × the threshold; otherwise it is BLOCKED. Before any rule is read, each
//! namespace's request limiter answers TOO_MANY_REQUEST past its `max_allowed_qps`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use floodgate_core::cluster::{TokenResult, TokenStatus};
use floodgate_core::{Clock, Floodgate, FlowGrade, FlowRule, RuleError, SystemClock};

use super::config::{ServerConfigError, ServerFlowConfig};
use super::metric::{ClusterMetric, Event};

/// Sentinel's `thresholdType` GLOBAL: the rule's count is the cluster's total.
const THRESHOLD_GLOBAL: i32 = 1;

/// A token service that counts every client's tokens in this process.
#[derive(Debug)]
pub struct LocalTokenService {
    clock: Arc<dyn Clock>,
    state: RwLock<State>,
}

#[derive(Debug, Default)]
struct State {
    namespaces: HashMap<String, Namespace>,
    flows: HashMap<i64, Flow>,
}

#[derive(Debug)]
struct Namespace {
    config: ServerFlowConfig,
    limiter: Mutex<ClusterMetric>,
    /// The addresses of the clients connected in the namespace.
    clients: HashSet<String>,
}

impl Namespace {
    fn new(config: ServerFlowConfig) -> Self {
        Namespace {
            limiter: Mutex::new(ClusterMetric::new(
                config.sample_count,
                u64::from(config.interval_ms),
            )),
            config,
            clients: HashSet::new(),
        }
    }
}

#[derive(Debug)]
struct Flow {
    namespace: String,
    rule: FlowRule,
    metric: Mutex<ClusterMetric>,
}

/// Why a namespace's rules were not loaded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ServerRuleError {
    /// A rule was invalid as a rule (the same checks as an engine's).
    #[error(transparent)]
    Invalid(#[from] RuleError),
    /// A rule is not one a token server serves.
    #[error("rule {index}: `{field}` {reason}")]
    NotServed {
        /// The rule's position in the list.
        index: usize,
        /// The field at fault.
        field: &'static str,
        /// Why.
        reason: String,
    },
}

/// One flow id's figures (what `cluster/server/metricList` reports).
#[derive(Debug, Clone, PartialEq)]
pub struct FlowMetric {
    /// The rule's flow id.
    pub flow_id: i64,
    /// The rule's resource.
    pub resource: String,
    /// Tokens granted per second.
    pub pass_qps: f64,
    /// Tokens refused per second.
    pub block_qps: f64,
    /// Requests granted per second.
    pub pass_request_qps: f64,
    /// Requests refused per second.
    pub block_request_qps: f64,
    /// Tokens borrowed from the next bucket, per second.
    pub waiting_qps: f64,
    /// The global threshold now.
    pub threshold: f64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Default for LocalTokenService {
    fn default() -> Self {
        LocalTokenService::new(Arc::new(SystemClock::new()))
    }
}

impl LocalTokenService {
    /// A service reading time from `clock`, with no namespace and no rule.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        LocalTokenService {
            clock,
            state: RwLock::new(State::default()),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Replaces `namespace`'s flow rules, or changes nothing and names the first rule at fault. Each
    /// must be a QPS rule in cluster mode whose flow id no other namespace's rule has. A flow id whose
    /// rule keeps its window keeps its counts.
    pub fn load_flow_rules(
        &self,
        namespace: &str,
        rules: Vec<FlowRule>,
    ) -> Result<usize, ServerRuleError> {
        // The engine's own checks: fields, ranges, the cluster config.
        let scratch = Floodgate::builder().clock(SystemClock::new()).build();
        scratch.load_flow_rules(rules.clone())?;
        let mut ids = HashSet::new();
        let not_served = |index, field, reason: &str| ServerRuleError::NotServed {
            index,
            field,
            reason: reason.to_owned(),
        };
        let mut state = self.write();
        for (index, rule) in rules.iter().enumerate() {
            let Some(config) = rule.cluster_config.as_ref().filter(|_| rule.cluster_mode) else {
                return Err(not_served(
                    index,
                    "clusterMode",
                    "must be true on a token server",
                ));
            };
            if rule.grade != FlowGrade::Qps {
                return Err(not_served(
                    index,
                    "grade",
                    "must be QPS (1): concurrency tokens are not served",
                ));
            }
            if !ids.insert(config.flow_id) {
                return Err(not_served(
                    index,
                    "clusterConfig.flowId",
                    "is used by another rule of the list",
                ));
            }
            if let Some(other) = state.flows.get(&config.flow_id) {
                if other.namespace != namespace {
                    return Err(ServerRuleError::NotServed {
                        index,
                        field: "clusterConfig.flowId",
                        reason: format!("is used by a rule of namespace {:?}", other.namespace),
                    });
                }
            }
        }
        let own: Vec<i64> = state
            .flows
            .iter()
            .filter(|(_, f)| f.namespace == namespace)
            .map(|(id, _)| *id)
            .collect();
        let mut kept: HashMap<i64, Flow> = own
            .into_iter()
            .filter_map(|id| state.flows.remove_entry(&id))
            .collect();
        let count = rules.len();
        for rule in rules {
            let Some(config) = rule.cluster_config.clone() else {
                continue;
            };
            let (samples, interval) =
                (config.sample_count as u32, config.window_interval_ms as u64);
            let metric = match kept.remove(&config.flow_id) {
                Some(old) if same_window(&old.rule, &rule) => old.metric,
                _ => Mutex::new(ClusterMetric::new(samples, interval)),
            };
            state.flows.insert(
                config.flow_id,
                Flow {
                    namespace: namespace.to_owned(),
                    rule,
                    metric,
                },
            );
        }
        state
            .namespaces
            .entry(namespace.to_owned())
            .or_insert_with(|| Namespace::new(ServerFlowConfig::default()));
        Ok(count)
    }

    /// `namespace`'s flow rules, in flow id order.
    pub fn flow_rules(&self, namespace: &str) -> Vec<FlowRule> {
        let state = self.read();
        let mut rules: Vec<&Flow> = state
            .flows
            .values()
            .filter(|f| f.namespace == namespace)
            .collect();
        rules.sort_by_key(|f| f.rule.cluster_config.as_ref().map(|c| c.flow_id));
        rules.into_iter().map(|f| f.rule.clone()).collect()
    }

    /// Sets `namespace`'s settings (creating the namespace), or changes nothing.
    pub fn set_flow_config(
        &self,
        namespace: &str,
        config: ServerFlowConfig,
    ) -> Result<(), ServerConfigError> {
        let config = config.check()?;
        let mut state = self.write();
        match state.namespaces.get_mut(namespace) {
            Some(ns) => {
                if (ns.config.sample_count, ns.config.interval_ms)
                    != (config.sample_count, config.interval_ms)
                {
                    ns.limiter = Mutex::new(ClusterMetric::new(
                        config.sample_count,
                        u64::from(config.interval_ms),
                    ));
                }
                ns.config = config;
            }
            None => {
                state
                    .namespaces
                    .insert(namespace.to_owned(), Namespace::new(config));
            }
        }
        Ok(())
    }

    /// `namespace`'s settings (the defaults for a namespace not seen).
    pub fn flow_config(&self, namespace: &str) -> ServerFlowConfig {
        self.read()
            .namespaces
            .get(namespace)
            .map_or_else(ServerFlowConfig::default, |ns| ns.config)
    }

    /// The namespaces with rules, settings or clients, sorted.
    pub fn namespaces(&self) -> Vec<String> {
        let mut names: Vec<String> = self.read().namespaces.keys().cloned().collect();
        names.sort();
        names
    }

    /// Counts the client at `address` in `namespace` (a ping); returns the namespace's client count.
    /// A client that pings again with another namespace moves to it.
    pub fn connect(&self, namespace: &str, address: &str) -> usize {
        let mut state = self.write();
        for ns in state.namespaces.values_mut() {
            ns.clients.remove(address);
        }
        let ns = state
            .namespaces
            .entry(namespace.to_owned())
            .or_insert_with(|| Namespace::new(ServerFlowConfig::default()));
        ns.clients.insert(address.to_owned());
        ns.clients.len()
    }

    /// Forgets the client at `address` (its connection closed).
    pub fn disconnect(&self, address: &str) {
        for ns in self.write().namespaces.values_mut() {
            ns.clients.remove(address);
        }
    }

    /// The clients connected in `namespace`, sorted by address.
    pub fn clients(&self, namespace: &str) -> Vec<String> {
        let state = self.read();
        let mut clients: Vec<String> = state
            .namespaces
            .get(namespace)
            .map(|ns| ns.clients.iter().cloned().collect())
            .unwrap_or_default();
        clients.sort();
        clients
    }

    /// The global threshold of `flow`: its count, or its count × the clients of its namespace.
    fn threshold(state: &State, flow: &Flow, exceed_count: f64) -> f64 {
        let count = flow.rule.count;
        let global = match flow.rule.cluster_config.as_ref().map(|c| c.threshold_type) {
            Some(THRESHOLD_GLOBAL) => count,
            _ => {
                let clients = state
                    .namespaces
                    .get(&flow.namespace)
                    .map_or(0, |ns| ns.clients.len());
                count * clients as f64
            }
        };
        global * exceed_count
    }

    /// Whether `namespace`'s request limiter lets one more request through now.
    fn admit(ns: &Namespace, now: u64) -> bool {
        let mut limiter = lock(&ns.limiter);
        if limiter.avg(now, Event::PassRequest) + 1.0 > ns.config.max_allowed_qps {
            return false;
        }
        limiter.add(now, Event::PassRequest, 1);
        true
    }

    /// Asks for `acquire` tokens of the flow rule `flow_id`.
    pub fn request_token(&self, flow_id: i64, acquire: i32, prioritized: bool) -> TokenResult {
        if flow_id <= 0 || acquire <= 0 {
            return TokenResult::of(TokenStatus::BadRequest);
        }
        let state = self.read();
        let Some(flow) = state.flows.get(&flow_id) else {
            return TokenResult::of(TokenStatus::NoRuleExists);
        };
        let Some(ns) = state.namespaces.get(&flow.namespace) else {
            return TokenResult::of(TokenStatus::Fail);
        };
        let now = self.clock.now_ms();
        if !Self::admit(ns, now) {
            return TokenResult::of(TokenStatus::TooManyRequest);
        }
        let threshold = Self::threshold(&state, flow, ns.config.exceed_count);
        let n = acquire as u64;
        let mut metric = lock(&flow.metric);
        let remaining = threshold - metric.avg(now, Event::Pass) - f64::from(acquire);
        if remaining >= 0.0 {
            metric.add(now, Event::Pass, n);
            metric.add(now, Event::PassRequest, 1);
            if prioritized {
                metric.add(now, Event::OccupiedPass, n);
            }
            return TokenResult {
                status: TokenStatus::Ok,
                remaining: remaining as i32,
                wait_ms: 0,
            };
        }
        if prioritized && metric.avg(now, Event::Waiting) <= ns.config.max_occupy_ratio * threshold
        {
            if let Some(wait) = metric.try_borrow_next(now, n, threshold) {
                return TokenResult {
                    status: TokenStatus::ShouldWait,
                    remaining: 0,
                    wait_ms: wait as i32,
                };
            }
        }
        metric.add(now, Event::Block, n);
        metric.add(now, Event::BlockRequest, 1);
        if prioritized {
            metric.add(now, Event::OccupiedBlock, n);
        }
        TokenResult::of(TokenStatus::Blocked)
    }

    /// The figures of `namespace`'s flow rules, in flow id order.
    pub fn flow_metrics(&self, namespace: &str) -> Vec<FlowMetric> {
        let state = self.read();
        let now = self.clock.now_ms();
        let exceed = state
            .namespaces
            .get(namespace)
            .map_or(1.0, |ns| ns.config.exceed_count);
        let mut out: Vec<FlowMetric> = state
            .flows
            .iter()
            .filter(|(_, f)| f.namespace == namespace)
            .map(|(id, flow)| {
                let mut m = lock(&flow.metric);
                FlowMetric {
                    flow_id: *id,
                    resource: flow.rule.resource.clone(),
                    pass_qps: m.avg(now, Event::Pass),
                    block_qps: m.avg(now, Event::Block),
                    pass_request_qps: m.avg(now, Event::PassRequest),
                    block_request_qps: m.avg(now, Event::BlockRequest),
                    waiting_qps: m.avg(now, Event::Waiting),
                    threshold: Self::threshold(&state, flow, exceed),
                }
            })
            .collect();
        out.sort_by_key(|m| m.flow_id);
        out
    }
}

/// Whether two rules of one flow id count in the same window (their counts then carry over).
fn same_window(a: &FlowRule, b: &FlowRule) -> bool {
    let window = |r: &FlowRule| {
        r.cluster_config
            .as_ref()
            .map(|c| (c.sample_count, c.window_interval_ms))
    };
    window(a) == window(b)
}

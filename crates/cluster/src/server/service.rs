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
use floodgate_core::{
    Clock, Floodgate, FlowGrade, FlowRule, ParamFlowRule, RuleError, SystemClock,
};

use super::config::{ServerConfigError, ServerFlowConfig};
use super::metric::{ClusterMetric, Event};
use super::values::ValueMetrics;
use crate::protocol::Param;

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
    flows: HashMap<i64, Served<FlowRule>>,
    params: HashMap<i64, Served<ParamFlowRule>>,
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

/// A rule a namespace loaded, with its counts.
#[derive(Debug)]
struct Served<R: ServedRule> {
    namespace: String,
    rule: R,
    metric: Mutex<R::Metric>,
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
    /// must be a QPS rule in cluster mode whose flow id no other namespace's flow rule has. A flow id
    /// whose rule keeps its window keeps its counts.
    pub fn load_flow_rules(
        &self,
        namespace: &str,
        rules: Vec<FlowRule>,
    ) -> Result<usize, ServerRuleError> {
        let mut state = self.write();
        let count = load(&mut state.flows, namespace, rules)?;
        state.namespace(namespace);
        Ok(count)
    }

    /// Replaces `namespace`'s hot-parameter rules, with the same checks as
    /// [`load_flow_rules`](Self::load_flow_rules) (flow ids are their own: a flow rule and a
    /// hot-parameter rule may share one, as in Sentinel).
    pub fn load_param_rules(
        &self,
        namespace: &str,
        rules: Vec<ParamFlowRule>,
    ) -> Result<usize, ServerRuleError> {
        let mut state = self.write();
        let count = load(&mut state.params, namespace, rules)?;
        state.namespace(namespace);
        Ok(count)
    }

    /// `namespace`'s hot-parameter rules, in flow id order.
    pub fn param_rules(&self, namespace: &str) -> Vec<ParamFlowRule> {
        rules_of(&self.read().params, namespace)
    }

    /// `namespace`'s flow rules, in flow id order.
    pub fn flow_rules(&self, namespace: &str) -> Vec<FlowRule> {
        rules_of(&self.read().flows, namespace)
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

    /// Requests per second `namespace`'s clients send now (what its `max_allowed_qps` limits).
    pub fn request_qps(&self, namespace: &str) -> f64 {
        let now = self.clock.now_ms();
        self.read()
            .namespaces
            .get(namespace)
            .map_or(0.0, |ns| lock(&ns.limiter).avg(now, Event::PassRequest))
    }

    /// Serves exactly `namespaces`: each is created if new, and the others lose their rules and
    /// settings (their clients stay counted until they leave).
    pub fn set_namespaces(&self, namespaces: &[String]) {
        let mut state = self.write();
        state.flows.retain(|_, f| namespaces.contains(&f.namespace));
        state
            .params
            .retain(|_, p| namespaces.contains(&p.namespace));
        state
            .namespaces
            .retain(|name, ns| namespaces.contains(name) || !ns.clients.is_empty());
        for name in namespaces {
            state.namespace(name);
        }
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
        state.leave(address);
        let ns = state.namespace(namespace);
        ns.clients.insert(address.to_owned());
        ns.clients.len()
    }

    /// Forgets the client at `address` (its connection closed).
    pub fn disconnect(&self, address: &str) {
        self.write().leave(address);
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

    /// The global threshold of a rule of `served`'s whose own is `count`: `count`, or `count` × the
    /// clients of its namespace.
    fn threshold<R: ServedRule>(state: &State, served: &Served<R>, count: f64) -> f64 {
        match served.rule.cluster().map(|c| c.threshold_type) {
            Some(THRESHOLD_GLOBAL) => count,
            _ => {
                let clients = state
                    .namespaces
                    .get(&served.namespace)
                    .map_or(0, |ns| ns.clients.len());
                count * clients as f64
            }
        }
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
        let threshold = Self::threshold(&state, flow, flow.rule.count) * ns.config.exceed_count;
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

    /// The window a request for `acquire` tokens of the flow rule `flow_id` is counted in when the
    /// counts are kept in Redis: the rule's count times the namespace's `exceed_count`, its
    /// threshold type and window. Or the answer, when the request is bad, the rule unknown or the
    /// namespace over its `max_allowed_qps`, checked as [`request_token`](Self::request_token)
    /// checks them.
    #[cfg(feature = "redis")]
    pub(crate) fn flow_window(
        &self,
        flow_id: i64,
        acquire: i32,
    ) -> Result<crate::lease::WindowTerms, TokenResult> {
        if flow_id <= 0 || acquire <= 0 {
            return Err(TokenResult::of(TokenStatus::BadRequest));
        }
        let state = self.read();
        let flow = state
            .flows
            .get(&flow_id)
            .ok_or(TokenResult::of(TokenStatus::NoRuleExists))?;
        let ns = Self::admitted(&state, &flow.namespace, self.clock.now_ms())?;
        Ok(window_terms(flow, flow.rule.count * ns.config.exceed_count))
    }

    /// The windows a request for `acquire` tokens of the hot-parameter rule `flow_id` for `params`
    /// is counted in when the counts are kept in Redis: the rule's window terms and, per value,
    /// its text and threshold (its exception item's count or the rule's). Or the answer, as
    /// [`flow_window`](Self::flow_window).
    #[cfg(feature = "redis")]
    pub(crate) fn param_windows(
        &self,
        flow_id: i64,
        acquire: i32,
        params: &[Param],
    ) -> Result<(crate::lease::WindowTerms, Vec<(String, f64)>), TokenResult> {
        if flow_id <= 0 || acquire <= 0 || params.is_empty() {
            return Err(TokenResult::of(TokenStatus::BadRequest));
        }
        let state = self.read();
        let served = state
            .params
            .get(&flow_id)
            .ok_or(TokenResult::of(TokenStatus::NoRuleExists))?;
        Self::admitted(&state, &served.namespace, self.clock.now_ms())?;
        let values = params
            .iter()
            .map(|param| {
                let count = served.rule.threshold_of(&param.value());
                (param.window_key(), count)
            })
            .collect();
        Ok((window_terms(served, served.rule.count), values))
    }

    /// Counts a request for `acquire` tokens of the flow rule `flow_id` that was decided elsewhere
    /// (in Redis) in the rule's figures here, for `cluster/server/metricList`.
    #[cfg(feature = "redis")]
    pub(crate) fn record_flow(&self, flow_id: i64, acquire: i32, passed: bool) {
        let state = self.read();
        let Some(flow) = state.flows.get(&flow_id) else {
            return;
        };
        let now = self.clock.now_ms();
        let n = u64::try_from(acquire).unwrap_or(0);
        let mut metric = lock(&flow.metric);
        let (tokens, requests) = if passed {
            (Event::Pass, Event::PassRequest)
        } else {
            (Event::Block, Event::BlockRequest)
        };
        metric.add(now, tokens, n);
        metric.add(now, requests, 1);
    }

    /// `namespace`, when its request limiter lets one more request through at `now`.
    #[cfg(feature = "redis")]
    fn admitted<'s>(
        state: &'s State,
        namespace: &str,
        now: u64,
    ) -> Result<&'s Namespace, TokenResult> {
        let ns = state
            .namespaces
            .get(namespace)
            .ok_or(TokenResult::of(TokenStatus::Fail))?;
        if Self::admit(ns, now) {
            Ok(ns)
        } else {
            Err(TokenResult::of(TokenStatus::TooManyRequest))
        }
    }

    /// Asks for `acquire` tokens of the hot-parameter rule `flow_id` for each of `params` (Sentinel's
    /// `ClusterParamFlowChecker`): each value's threshold is its exception item's count or the rule's
    /// (× the namespace's clients for AVG_LOCAL), and the request passes when every value has
    /// `acquire` tokens left in its window; then each is counted. No value waits: hot-parameter
    /// rules do not borrow. With several values the tokens left are not reported (−1).
    pub fn request_param_token(&self, flow_id: i64, acquire: i32, params: &[Param]) -> TokenResult {
        if flow_id <= 0 || acquire <= 0 || params.is_empty() {
            return TokenResult::of(TokenStatus::BadRequest);
        }
        let state = self.read();
        let Some(served) = state.params.get(&flow_id) else {
            return TokenResult::of(TokenStatus::NoRuleExists);
        };
        let Some(ns) = state.namespaces.get(&served.namespace) else {
            return TokenResult::of(TokenStatus::Fail);
        };
        let now = self.clock.now_ms();
        if !Self::admit(ns, now) {
            return TokenResult::of(TokenStatus::TooManyRequest);
        }
        let mut values = lock(&served.metric);
        let mut remaining = 0.0;
        for param in params {
            let threshold =
                Self::threshold(&state, served, served.rule.threshold_of(&param.value()));
            remaining = threshold - values.avg(now, param) - f64::from(acquire);
            if remaining < 0.0 {
                return TokenResult::of(TokenStatus::Blocked);
            }
        }
        for param in params {
            values.add(now, param, acquire as u64);
        }
        TokenResult {
            status: TokenStatus::Ok,
            remaining: if params.len() > 1 {
                -1
            } else {
                remaining as i32
            },
            wait_ms: 0,
        }
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
                    threshold: Self::threshold(&state, flow, flow.rule.count) * exceed,
                }
            })
            .collect();
        out.sort_by_key(|m| m.flow_id);
        out
    }
}

impl State {
    /// Takes the client at `address` out of its namespace. A namespace that only clients made (no
    /// rule, the default settings) goes with its last client, so that pings naming new namespaces
    /// cannot grow the server without bound (`a_namespace_only_pings_made_goes_with_its_last_client`).
    fn leave(&mut self, address: &str) {
        let State {
            namespaces,
            flows,
            params,
        } = self;
        namespaces.retain(|name, ns| {
            ns.clients.remove(address);
            !ns.clients.is_empty()
                || ns.config != ServerFlowConfig::default()
                || flows.values().any(|f| &f.namespace == name)
                || params.values().any(|p| &p.namespace == name)
        });
    }

    /// `name`'s namespace, made with the default settings if it is new.
    fn namespace(&mut self, name: &str) -> &mut Namespace {
        self.namespaces
            .entry(name.to_owned())
            .or_insert_with(|| Namespace::new(ServerFlowConfig::default()))
    }
}

/// What the service reads of a cluster rule's config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ClusterFields {
    flow_id: i64,
    threshold_type: i32,
    window: (i32, i32),
}

/// The cluster fields of a flow or hot-parameter rule in cluster mode (their configs are two types with
/// the same fields).
macro_rules! cluster_fields {
    ($rule:expr) => {{
        let rule = $rule;
        rule.cluster_config
            .as_ref()
            .filter(|_| rule.cluster_mode)
            .map(|c| ClusterFields {
                flow_id: c.flow_id,
                threshold_type: c.threshold_type,
                window: (c.sample_count, c.window_interval_ms),
            })
    }};
}

/// A rule type a token server serves: flow rules and hot-parameter rules.
trait ServedRule: Clone + Sized {
    /// Its counts: one window, or one per value.
    type Metric: std::fmt::Debug;
    /// Its cluster config, in cluster mode.
    fn cluster(&self) -> Option<ClusterFields>;
    fn grade(&self) -> FlowGrade;
    /// The engine's checks of a whole list.
    fn check(rules: &[Self]) -> Result<(), RuleError>;
    fn metric(window: (i32, i32)) -> Self::Metric;
}

impl ServedRule for FlowRule {
    type Metric = ClusterMetric;

    fn cluster(&self) -> Option<ClusterFields> {
        cluster_fields!(self)
    }

    fn grade(&self) -> FlowGrade {
        self.grade
    }

    fn check(rules: &[Self]) -> Result<(), RuleError> {
        scratch().load_flow_rules(rules.to_vec()).map(drop)
    }

    fn metric((samples, interval): (i32, i32)) -> ClusterMetric {
        ClusterMetric::new(samples as u32, interval as u64)
    }
}

impl ServedRule for ParamFlowRule {
    type Metric = ValueMetrics;

    fn cluster(&self) -> Option<ClusterFields> {
        cluster_fields!(self)
    }

    fn grade(&self) -> FlowGrade {
        self.grade
    }

    fn check(rules: &[Self]) -> Result<(), RuleError> {
        scratch().load_param_flow_rules(rules.to_vec()).map(drop)
    }

    fn metric((samples, interval): (i32, i32)) -> ValueMetrics {
        ValueMetrics::new(samples as u32, interval as u64)
    }
}

/// An engine to check rules with (the engine's checks are the rules' own).
fn scratch() -> Floodgate {
    Floodgate::builder().clock(SystemClock::new()).build()
}

/// Replaces `namespace`'s rules in `served` with `rules`, or changes nothing.
fn load<R: ServedRule>(
    served: &mut HashMap<i64, Served<R>>,
    namespace: &str,
    rules: Vec<R>,
) -> Result<usize, ServerRuleError> {
    R::check(&rules)?;
    let not_served = |index, field, reason: String| ServerRuleError::NotServed {
        index,
        field,
        reason,
    };
    let mut ids = HashSet::new();
    let mut fields = Vec::with_capacity(rules.len());
    for (index, rule) in rules.iter().enumerate() {
        let Some(cluster) = rule.cluster() else {
            return Err(not_served(
                index,
                "clusterMode",
                "must be true on a token server".into(),
            ));
        };
        if rule.grade() != FlowGrade::Qps {
            return Err(not_served(
                index,
                "grade",
                "must be QPS (1): concurrency tokens are not served".into(),
            ));
        }
        if !ids.insert(cluster.flow_id) {
            return Err(not_served(
                index,
                "clusterConfig.flowId",
                "is used by another rule of the list".into(),
            ));
        }
        if let Some(other) = served
            .get(&cluster.flow_id)
            .filter(|o| o.namespace != namespace)
        {
            return Err(not_served(
                index,
                "clusterConfig.flowId",
                format!("is used by a rule of namespace {:?}", other.namespace),
            ));
        }
        fields.push(cluster);
    }
    let own: Vec<i64> = served
        .iter()
        .filter(|(_, s)| s.namespace == namespace)
        .map(|(id, _)| *id)
        .collect();
    let mut kept: HashMap<i64, Served<R>> = own
        .into_iter()
        .filter_map(|id| served.remove_entry(&id))
        .collect();
    let count = rules.len();
    for (rule, cluster) in rules.into_iter().zip(fields) {
        // A rule that keeps its window keeps its counts.
        let metric = match kept.remove(&cluster.flow_id) {
            Some(old) if old.rule.cluster().map(|c| c.window) == Some(cluster.window) => old.metric,
            _ => Mutex::new(R::metric(cluster.window)),
        };
        served.insert(
            cluster.flow_id,
            Served {
                namespace: namespace.to_owned(),
                rule,
                metric,
            },
        );
    }
    Ok(count)
}

/// `namespace`'s rules of `served`, in flow id order.
fn rules_of<R: ServedRule>(served: &HashMap<i64, Served<R>>, namespace: &str) -> Vec<R> {
    let mut rules: Vec<(i64, &R)> = served
        .iter()
        .filter(|(_, s)| s.namespace == namespace)
        .map(|(id, s)| (*id, &s.rule))
        .collect();
    rules.sort_by_key(|(id, _)| *id);
    rules.into_iter().map(|(_, r)| r.clone()).collect()
}

/// The window terms of `served`'s rule with the threshold `count`.
#[cfg(feature = "redis")]
fn window_terms<R: ServedRule>(served: &Served<R>, count: f64) -> crate::lease::WindowTerms {
    let cluster = served.rule.cluster();
    let (samples, interval) = cluster.map_or((10, 1000), |c| c.window);
    crate::lease::WindowTerms {
        flow_id: cluster.map_or(0, |c| c.flow_id),
        count,
        threshold_type: floodgate_core::cluster::ThresholdType::of(
            cluster.map_or(0, |c| c.threshold_type),
        ),
        sample_count: u32::try_from(samples).unwrap_or(1).max(1),
        window_interval_ms: u32::try_from(interval).unwrap_or(1000).max(1),
    }
}

/// An application that serves its cluster's tokens itself (Sentinel's embedded server) asks this
/// service in process: `Floodgate::builder().token_service(Arc::clone(&service))`. A request with
/// values is a hot-parameter request for them (a value the wire cannot carry, a `Null` or a list, is
/// refused as a bad request, and the engine checks it locally).
impl floodgate_core::cluster::TokenService for LocalTokenService {
    fn request_token(&self, request: &floodgate_core::cluster::TokenRequest<'_>) -> TokenResult {
        let acquire = i32::try_from(request.acquire).unwrap_or(i32::MAX);
        if request.params.is_empty() {
            return LocalTokenService::request_token(
                self,
                request.flow_id,
                acquire,
                request.prioritized,
            );
        }
        let params: Option<Vec<Param>> = request.params.iter().map(Param::of).collect();
        match params {
            Some(params) => self.request_param_token(request.flow_id, acquire, &params),
            None => TokenResult::of(TokenStatus::BadRequest),
        }
    }
}

//! The accuracy and cost of a GLOBAL limit on Redis under overload, run by hand:
//!
//! ```text
//! cargo test --release -p floodgate-cluster --test redis_load -- --ignored --nocapture
//! ```
//!
//! Three instances (three engines, each with its own [`RedisTokenService`]) with two threads each
//! send ten times a GLOBAL rule's 1,000 QPS for 10 s against a real `redis-server` on loopback.
//! It prints the admitted total and each second's, the latency of a guarded call (p50, p99)
//! against the same load on a local rule, and the Redis calls per admitted entry, with fetching
//! ahead (the default, 10 ms of demand) and without (one token per call); then the same for a
//! GLOBAL hot-parameter rule of 1,000 per value, every call with one value (its window in Redis is
//! the value's). The figures go into BENCHMARKS.md; nothing here asserts a time.

mod redis_server;

use std::sync::Arc;
use std::time::{Duration, Instant};

use floodgate_cluster::lease::LeaseStats;
use floodgate_cluster::redis::{RedisConfig, RedisTokenService};
use floodgate_core::cluster::{ThresholdType, TokenRequest};
use floodgate_core::{
    ClusterFlowConfig, Floodgate, FlowRule, ParamFlowClusterConfig, ParamFlowRule, ParamValue,
};
use redis_server::RedisServer;

const INSTANCES: usize = 3;
const THREADS: usize = 2;
const LIMIT: f64 = 1000.0;
const OVERLOAD: f64 = 10.0;
const SECONDS: u64 = 10;

/// What one run measured.
struct Run {
    admitted_per_second: Vec<u64>,
    latencies_ns: Vec<u64>,
    stats: Vec<LeaseStats>,
}

fn rule(flow_id: i64, cluster: bool) -> FlowRule {
    let mut rule = FlowRule::new("GET:/orders", LIMIT);
    if cluster {
        rule.cluster_mode = true;
        rule.cluster_config = Some(ClusterFlowConfig {
            flow_id,
            threshold_type: 1,
            ..ClusterFlowConfig::default()
        });
    }
    rule
}

/// A GLOBAL hot-parameter rule of 1,000 per value of argument 0.
fn param_rule(flow_id: i64) -> ParamFlowRule {
    let mut rule = ParamFlowRule::new("GET:/orders", 0, LIMIT);
    rule.cluster_mode = true;
    rule.cluster_config = Some(ParamFlowClusterConfig {
        flow_id,
        threshold_type: 1,
        ..ParamFlowClusterConfig::default()
    });
    rule
}

/// The value every call of a hot-parameter run carries.
const VALUE: &str = "alice";

/// The next start of a second on Redis's clock but one, as an instant of this process (a Redis on
/// loopback answers well within a millisecond), so that each second of a run is one of the
/// window's seconds.
fn next_redis_second(redis: &RedisServer) -> Instant {
    let before = Instant::now();
    let (_, micros): (u64, u64) = redis::cmd("TIME").query(&mut redis.connection()).unwrap();
    before + Duration::from_micros(2_000_000 - micros)
}

/// Sends the overload through `engines` (two threads each) from `start` for the run's length,
/// each call with [`VALUE`] as its argument when `param`.
fn drive(engines: &[Floodgate], start: Instant, param: bool) -> (Vec<u64>, Vec<u64>) {
    let per_thread =
        Duration::from_secs_f64(1.0 / (LIMIT * OVERLOAD / (INSTANCES * THREADS) as f64));
    let end = start + Duration::from_secs(SECONDS);
    let results: Vec<(Vec<u64>, Vec<u64>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = engines
            .iter()
            .flat_map(|fg| (0..THREADS).map(move |_| fg))
            .map(|fg| {
                scope.spawn(move || {
                    let mut per_second = vec![0u64; SECONDS as usize];
                    let mut latencies = Vec::with_capacity(20_000);
                    let mut next = start;
                    loop {
                        let now = Instant::now();
                        if now >= end {
                            break;
                        }
                        if now < next {
                            std::thread::sleep(next - now);
                            continue;
                        }
                        next += per_thread;
                        let before = Instant::now();
                        let admitted = if param {
                            fg.entry("GET:/orders").args([VALUE]).enter().is_ok()
                        } else {
                            fg.entry("GET:/orders").enter().is_ok()
                        };
                        latencies.push(before.elapsed().as_nanos() as u64);
                        if admitted {
                            per_second[(before - start).as_secs() as usize] += 1;
                        }
                    }
                    (per_second, latencies)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut per_second = vec![0u64; SECONDS as usize];
    let mut latencies = Vec::new();
    for (seconds, lat) in results {
        for (total, n) in per_second.iter_mut().zip(seconds) {
            *total += n;
        }
        latencies.extend(lat);
    }
    latencies.sort_unstable();
    (per_second, latencies)
}

/// What a run limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Limit {
    /// A local flow rule of 1,000 QPS per instance.
    Local,
    /// A GLOBAL cluster flow rule.
    Flow,
    /// A GLOBAL cluster hot-parameter rule, one value.
    Param,
}

fn run(redis: &RedisServer, limit: Limit, flow_id: i64, fetch_ahead: Duration) -> Run {
    let cluster = limit != Limit::Local;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let services: Vec<Arc<RedisTokenService>> = match cluster {
        false => Vec::new(),
        true => (0..INSTANCES)
            .map(|i| {
                let config = RedisConfig::new(redis.url())
                    .instance(format!("load-{i}"))
                    .fetch_ahead(fetch_ahead);
                Arc::new(RedisTokenService::start(config, runtime.handle()).unwrap())
            })
            .collect(),
    };
    let engines: Vec<Floodgate> = (0..INSTANCES)
        .map(|i| {
            let mut builder = Floodgate::builder();
            if let Some(service) = services.get(i) {
                builder = builder.token_service(service.clone());
            }
            let fg = builder.build();
            if limit == Limit::Param {
                fg.load_param_flow_rules([param_rule(flow_id)]).unwrap();
            } else {
                fg.load_flow_rules([rule(flow_id, cluster)]).unwrap();
            }
            fg
        })
        .collect();
    // A warm start: each instance hears from Redis just before its traffic starts.
    let start = next_redis_second(redis);
    std::thread::sleep(start - Instant::now() - Duration::from_millis(50));
    let mut request = TokenRequest::new(flow_id, 1, "GET:/orders", LIMIT);
    request.threshold_type = ThresholdType::Global;
    let values = [ParamValue::from(VALUE)];
    if limit == Limit::Param {
        request.params = &values;
    }
    for service in &services {
        runtime.block_on(service.prefetch(&request)).unwrap();
    }
    let (admitted_per_second, latencies_ns) = drive(&engines, start, limit == Limit::Param);
    let stats = services.iter().map(|s| s.stats()).collect();
    for fg in &engines {
        assert_eq!(fg.stats().cluster_passes_unchecked, 0);
    }
    Run {
        admitted_per_second,
        latencies_ns,
        stats,
    }
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    sorted[((sorted.len() - 1) as f64 * p) as usize]
}

fn report(name: &str, run: &Run, baseline: Option<&Run>) {
    let total: u64 = run.admitted_per_second.iter().sum();
    let (p50, p99) = (
        percentile(&run.latencies_ns, 0.5),
        percentile(&run.latencies_ns, 0.99),
    );
    println!("{name}");
    println!(
        "  admitted {total} in {SECONDS} s ({:+.2} % of {}); per second {:?}",
        (total as f64 / (LIMIT * SECONDS as f64) - 1.0) * 100.0,
        LIMIT as u64 * SECONDS,
        run.admitted_per_second
    );
    println!(
        "  guarded call p50 {p50} ns, p99 {p99} ns over {} calls",
        run.latencies_ns.len()
    );
    if let Some(base) = baseline {
        let (b50, b99) = (
            percentile(&base.latencies_ns, 0.5),
            percentile(&base.latencies_ns, 0.99),
        );
        println!(
            "  added to a local rule's call: p50 {} ns, p99 {} ns",
            p50 as i64 - b50 as i64,
            p99 as i64 - b99 as i64
        );
    }
    if !run.stats.is_empty() {
        let commands: u64 = run.stats.iter().map(|s| s.calls).sum();
        let fetches: u64 = run.stats.iter().map(|s| s.fetches).sum();
        let misses: u64 = run.stats.iter().map(|s| s.lease_misses).sum();
        let failed: u64 = run.stats.iter().map(|s| s.failed).sum();
        println!(
            "  Redis calls {commands} ({fetches} fetches): {:.3} per admitted entry; lease misses {misses}, answered FAIL {failed}",
            commands as f64 / total as f64
        );
    }
}

/// The time of one fetch (one script call on loopback), p50 and p99 over 2,000 calls in a row.
fn fetch_round_trip(redis: &RedisServer) -> (u64, u64) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let config = RedisConfig::new(redis.url()).instance("round-trip");
    let service = RedisTokenService::start(config, runtime.handle()).unwrap();
    let mut request = TokenRequest::new(99, 1, "GET:/orders", 1e9);
    request.threshold_type = ThresholdType::Global;
    let mut times: Vec<u64> = (0..2_000)
        .map(|_| {
            let before = Instant::now();
            runtime.block_on(service.prefetch(&request)).unwrap();
            before.elapsed().as_nanos() as u64
        })
        .collect();
    times.sort_unstable();
    (percentile(&times, 0.5), percentile(&times, 0.99))
}

#[test]
#[ignore = "a 40 s load run against redis-server; run by hand for BENCHMARKS.md"]
fn a_global_limit_across_three_instances_under_tenfold_overload() {
    let redis = RedisServer::start();
    let local = run(&redis, Limit::Local, 1, Duration::ZERO);
    report(
        "local rule (each instance 1,000 QPS; the baseline for latency)",
        &local,
        None,
    );
    let batched = run(&redis, Limit::Flow, 2, Duration::from_millis(10));
    report(
        "Redis, fetching 10 ms of demand ahead (default)",
        &batched,
        Some(&local),
    );
    let single = run(&redis, Limit::Flow, 3, Duration::ZERO);
    report(
        "Redis, one token per call (no batching)",
        &single,
        Some(&local),
    );
    let param = run(&redis, Limit::Param, 4, Duration::from_millis(10));
    report(
        "Redis, a hot-parameter rule of 1,000 per value, one value (fetching ahead)",
        &param,
        Some(&local),
    );
    let (p50, p99) = fetch_round_trip(&redis);
    println!("one fetch (a script call on loopback): p50 {p50} ns, p99 {p99} ns");
}

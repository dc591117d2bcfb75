//! Cluster rules counted in a real Redis: several engines share one limit, average-local limits
//! follow the instances, a Redis that stops or never answers makes rules fall back locally without
//! stalling a caller, a Redis Cluster keeps each rule's keys in one slot, hot-parameter rules
//! count each value once across engines, and token servers that count in one Redis grant one
//! limit to their clients (and share each value's window with engines on that Redis).
//!
//! The tests run on a current-thread runtime that they drive only where they `await`: a fetch
//! the service starts in the background runs then, so what an entry is answered is decided by the
//! test, not by a race with the fetch.

mod admit;
mod redis_server;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use admit::admit_all_with;
use floodgate_cluster::client::{ClientConfig, TokenClient};
use floodgate_cluster::lease::{FetchError, WindowTerms};
use floodgate_cluster::protocol::Param;
use floodgate_cluster::redis::{RedisConfig, RedisCounter, RedisTokenService};
use floodgate_cluster::server::{Counting, LocalTokenService, TokenServer, TransportConfig};
use floodgate_core::cluster::TokenStatus;
use floodgate_core::cluster::{ThresholdType, TokenRequest};
use floodgate_core::{
    ClusterFlowConfig, Floodgate, FlowRule, ManualClock, ParamFlowClusterConfig, ParamFlowItem,
    ParamFlowRule, ParamValue,
};
use redis_server::RedisServer;

const T0: u64 = 1_700_000_000_000;
/// The rules' cluster window: one bucket of a minute, so that no test sees it slide.
const WINDOW_MS: u32 = 60_000;

fn cluster_rule(flow_id: i64, count: f64, threshold_type: i32) -> FlowRule {
    let mut rule = FlowRule::new("GET:/orders", count);
    rule.cluster_mode = true;
    rule.cluster_config = Some(ClusterFlowConfig {
        flow_id,
        threshold_type,
        sample_count: 1,
        window_interval_ms: WINDOW_MS as i32,
        ..ClusterFlowConfig::default()
    });
    rule
}

fn request(flow_id: i64, count: f64, threshold_type: ThresholdType) -> TokenRequest<'static> {
    let mut request = TokenRequest::new(flow_id, 1, "GET:/orders", count);
    request.threshold_type = threshold_type;
    request.sample_count = 1;
    request.window_interval_ms = WINDOW_MS;
    request
}

fn service(redis: &RedisServer, instance: &str) -> Arc<RedisTokenService> {
    let config = RedisConfig::new(redis.url()).instance(instance);
    Arc::new(RedisTokenService::start(config, &tokio::runtime::Handle::current()).unwrap())
}

/// An engine on a frozen clock whose cluster rules ask `service`.
fn engine(service: &Arc<RedisTokenService>, rule: FlowRule) -> Floodgate {
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .token_service(service.clone())
        .build();
    fg.load_flow_rules([rule]).unwrap();
    fg
}

/// Enters `fg` until Redis grants no more, fetching first (an instance that has not heard from
/// Redis checks the rule locally) and whenever the lease runs dry; returns the entries admitted.
async fn admit_all(fg: &Floodgate, service: &RedisTokenService, request: &TokenRequest<'_>) -> u32 {
    admit_all_with(service, request, || fg.entry("GET:/orders").enter().is_ok()).await
}

#[tokio::test(flavor = "current_thread")]
async fn three_engines_sharing_a_global_limit_admit_the_limit_in_total() {
    let redis = RedisServer::start();
    let request = request(11, 30.0, ThresholdType::Global);
    let services: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|name| service(&redis, name))
        .collect();
    let engines: Vec<_> = services
        .iter()
        .map(|service| engine(service, cluster_rule(11, 30.0, 1)))
        .collect();
    let mut admitted = 0;
    // In turns, so that every instance fetches while the others hold tokens.
    for round in 0..3 {
        for (fg, service) in engines.iter().zip(&services) {
            if round < 2 {
                service.prefetch(&request).await.unwrap();
                for _ in 0..4 {
                    if fg.entry("GET:/orders").enter().is_ok() {
                        admitted += 1;
                    }
                }
            } else {
                admitted += admit_all(fg, service, &request).await;
            }
        }
    }
    assert_eq!(
        admitted, 30,
        "the count is the total of all three, not each one's"
    );
    for (fg, service) in engines.iter().zip(&services) {
        assert_eq!(
            fg.stats().cluster_fallbacks,
            0,
            "every entry was decided by Redis"
        );
        assert!(fg.entry("GET:/orders").enter().is_err());
        assert_eq!(service.members(11), Some(3));
    }
}

#[tokio::test(flavor = "current_thread")]
async fn an_average_local_limit_scales_as_instances_join_and_leave() {
    let redis = RedisServer::start();
    let request = request(12, 10.0, ThresholdType::AvgLocal);
    let a = service(&redis, "a");
    let fg_a = engine(&a, cluster_rule(12, 10.0, 0));
    assert_eq!(admit_all(&fg_a, &a, &request).await, 10, "one instance: 10");

    let b = service(&redis, "b");
    let fg_b = engine(&b, cluster_rule(12, 10.0, 0));
    let joined = b.prefetch(&request).await.unwrap();
    assert_eq!(joined.members, 2);
    let by_b = admit_all(&fg_b, &b, &request).await;
    let by_a = admit_all(&fg_a, &a, &request).await;
    assert_eq!(by_b + by_a, 10, "two instances: 20 in all");

    // An instance that stops without leaving counts until its membership expires: an old
    // last-seen time stands for one that stopped long ago.
    let mut redis_connection = redis.connection();
    redis::cmd("ZADD")
        .arg("floodgate:{12}:members")
        .arg(1)
        .arg("crashed")
        .exec(&mut redis_connection)
        .unwrap();
    assert_eq!(a.prefetch(&request).await.unwrap().members, 2);

    drop(fg_b);
    Arc::into_inner(b).unwrap().shutdown().await;
    let left = a.prefetch(&request).await.unwrap();
    assert_eq!((left.members, left.granted), (1, 0));
    assert_eq!(
        left.remaining, -10,
        "20 granted against a threshold of 10 again"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn redis_stopped_mid_traffic_falls_back_locally_and_recovers() {
    let mut redis = RedisServer::start();
    let request = request(13, 3.0, ThresholdType::Global);
    let config = RedisConfig::new(redis.url())
        .instance("a")
        .fetch_ahead(Duration::ZERO);
    let service =
        Arc::new(RedisTokenService::start(config, &tokio::runtime::Handle::current()).unwrap());
    let fg = engine(&service, cluster_rule(13, 3.0, 1));
    service.prefetch(&request).await.unwrap();
    drop(fg.entry("GET:/orders").enter().expect("granted by Redis"));
    assert_eq!(fg.stats().cluster_token_answers, 1);

    redis.stop();
    let failed = service.prefetch(&request).await.unwrap_err();
    assert!(
        matches!(failed, FetchError::Redis(_) | FetchError::Timeout(_)),
        "{failed:?}"
    );
    // The rule is now checked locally, on the engine's frozen clock: with the entry Redis granted
    // counted there too, 2 more pass, then it blocks.
    let local: Vec<bool> = (0..4)
        .map(|_| fg.entry("GET:/orders").enter().is_ok())
        .collect();
    assert_eq!(
        local,
        [true, true, false, false],
        "local enforcement, never unlimited"
    );
    assert_eq!(fg.stats().cluster_fallbacks, 4);

    redis.restart();
    // Connecting again takes the connection's own back-off: ask until Redis answers.
    let mut attempts = 0;
    while service.prefetch(&request).await.is_err() {
        attempts += 1;
        assert!(attempts < 500, "Redis was not reached again");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let answered = fg.stats().cluster_token_answers;
    assert!(fg.entry("GET:/orders").enter().is_ok());
    assert_eq!(
        fg.stats().cluster_token_answers,
        answered + 1,
        "Redis decides again"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_redis_that_accepts_and_never_answers_does_not_stall_callers() {
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://{}", silent.local_addr().unwrap());
    let service = Arc::new(
        RedisTokenService::start(
            RedisConfig::new(url).instance("a"),
            &tokio::runtime::Handle::current(),
        )
        .unwrap(),
    );
    let fg = engine(&service, cluster_rule(14, 5.0, 1));
    // The runtime does not run while these entries are made: an entry that waited for Redis
    // would never return. Each is checked locally (5 pass on the frozen clock).
    let passed = (0..100)
        .filter(|_| fg.entry("GET:/orders").enter().is_ok())
        .count();
    assert_eq!(passed, 5);
    assert_eq!(fg.stats().cluster_fallbacks, 100);
    // A fetch that waits for the answer gives up at the request timeout.
    let request = request(14, 5.0, ThresholdType::Global);
    let error = service.prefetch(&request).await.unwrap_err();
    assert!(
        matches!(error, FetchError::Timeout(t) if t == Duration::from_millis(20)),
        "{error:?}"
    );
    drop(silent);
}

#[tokio::test(flavor = "current_thread")]
async fn a_redis_cluster_keeps_a_rules_keys_in_one_slot() {
    let redis = RedisServer::start_cluster();
    let counter = RedisCounter::new(RedisConfig::cluster([redis.url()]).instance("a")).unwrap();
    let terms = WindowTerms {
        flow_id: 15,
        count: 4.0,
        threshold_type: ThresholdType::Global,
        sample_count: 1,
        window_interval_ms: WINDOW_MS,
    };
    // The window and the members are two keys of one script: a cluster refuses them unless they
    // share a slot.
    let first = counter.acquire(&terms, 3).await.unwrap();
    assert_eq!((first.granted, first.remaining, first.members), (3, 1, 1));
    let second = counter.acquire(&terms, 3).await.unwrap();
    assert_eq!((second.granted, second.remaining), (1, 0));
    assert!(second.free_in_ms > 0 && second.free_in_ms <= u64::from(WINDOW_MS));
    assert_eq!(counter.heartbeat(15).await.unwrap(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn each_argument_value_of_a_hot_parameter_rule_has_a_window_of_its_own() {
    let redis = RedisServer::start();
    let counter = RedisCounter::new(RedisConfig::new(redis.url()).instance("a")).unwrap();
    let terms = WindowTerms {
        flow_id: 16,
        count: 2.0,
        threshold_type: ThresholdType::Global,
        sample_count: 1,
        window_interval_ms: WINDOW_MS,
    };
    let values = |names: &[&str]| -> Vec<(String, f64)> {
        names
            .iter()
            .map(|n| ((*n).to_owned(), if *n == "vip" { 5.0 } else { 2.0 }))
            .collect()
    };
    for value in ["alice", "bob"] {
        let grant = counter
            .acquire_values(&terms, "client-1", &values(&[value]), 2)
            .await
            .unwrap();
        assert_eq!(grant.granted, 2, "{value}");
    }
    // All or nothing: alice has none left, so neither she nor vip is counted.
    let both = counter
        .acquire_values(&terms, "client-1", &values(&["alice", "vip"]), 1)
        .await
        .unwrap();
    assert_eq!(both.granted, 0);
    let vip = counter
        .acquire_values(&terms, "client-1", &values(&["vip"]), 5)
        .await
        .unwrap();
    assert_eq!(
        (vip.granted, vip.remaining),
        (5, 0),
        "vip's own count, untouched by the refusal"
    );
    // The rule's own window is apart from its values', and an exact request takes nothing of
    // a window with less free than it asks.
    assert_eq!(
        counter
            .acquire_all(&terms, "client-1", 3)
            .await
            .unwrap()
            .granted,
        0
    );
    assert_eq!(counter.acquire(&terms, 3).await.unwrap().granted, 2);
}

#[tokio::test(flavor = "current_thread")]
async fn a_sliding_window_frees_its_oldest_bucket_first() {
    let redis = RedisServer::start();
    let counter = RedisCounter::new(RedisConfig::new(redis.url()).instance("a")).unwrap();
    let terms = WindowTerms {
        flow_id: 17,
        count: 10.0,
        threshold_type: ThresholdType::Global,
        sample_count: 2,
        window_interval_ms: 2_000,
    };
    // Buckets written by hand: 6 tokens a bucket ago, 4 in the current one. The oldest leaves
    // within the next second and frees its 6.
    let mut connection = redis.connection();
    let (seconds, micros): (u64, u64) = redis::cmd("TIME").query(&mut connection).unwrap();
    let now = seconds * 1000 + micros / 1000;
    let current = now - now % 1000;
    redis::cmd("HSET")
        .arg("floodgate:{17}:window")
        .arg(current - 1000)
        .arg(6)
        .arg(current)
        .arg(4)
        .arg(current - 2000)
        .arg(9)
        .exec(&mut connection)
        .unwrap();
    let grant = counter.acquire(&terms, 1).await.unwrap();
    assert_eq!(
        grant.granted, 0,
        "the bucket two seconds old no longer counts; 6 + 4 do"
    );
    assert!(grant.free_in_ms <= 1000, "{grant:?}");
    let fields: Vec<u64> = redis::cmd("HKEYS")
        .arg("floodgate:{17}:window")
        .query(&mut connection)
        .unwrap();
    assert!(
        !fields.contains(&(current - 2000)),
        "a bucket out of the window is deleted"
    );
}

/// A GLOBAL hot-parameter rule on argument 0 of `GET:/orders`: `count` per value in the window.
fn cluster_param_rule(flow_id: i64, count: f64) -> ParamFlowRule {
    let mut rule = ParamFlowRule::new("GET:/orders", 0, count);
    rule.cluster_mode = true;
    rule.cluster_config = Some(ParamFlowClusterConfig {
        flow_id,
        threshold_type: 1,
        sample_count: 1,
        window_interval_ms: WINDOW_MS as i32,
        ..Default::default()
    });
    rule
}

/// A token server counting in `redis`, serving namespace `app` one GLOBAL flow rule (flow id 21,
/// count 5) and one GLOBAL hot-parameter rule (flow id 22, 2 per value).
async fn redis_token_server(redis: &RedisServer) -> TokenServer {
    let service = Arc::new(LocalTokenService::default());
    service
        .load_flow_rules("app", vec![cluster_rule(21, 5.0, 1)])
        .unwrap();
    let param_rule = cluster_param_rule(22, 2.0);
    service.load_param_rules("app", vec![param_rule]).unwrap();
    let counter = RedisCounter::new(RedisConfig::new(redis.url())).unwrap();
    TokenServer::bind_counting(
        "127.0.0.1:0".parse().unwrap(),
        service,
        TransportConfig::default(),
        Counting::Redis(Arc::new(counter)),
    )
    .await
    .unwrap()
}

async fn token_client(server: &TokenServer) -> TokenClient {
    let client = TokenClient::start(ClientConfig {
        request_timeout: Duration::from_secs(5),
        ..ClientConfig::new(server.local_addr(), "app")
    });
    client.started().await;
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_servers_counting_in_one_redis_grant_one_limit() {
    let mut redis = RedisServer::start();
    let (one, two) = (
        redis_token_server(&redis).await,
        redis_token_server(&redis).await,
    );
    let (a, b) = (token_client(&one).await, token_client(&two).await);
    assert_eq!(a.request_token(21, 3, false).await.status, TokenStatus::Ok);
    let second = b.request_token(21, 2, false).await;
    assert_eq!((second.status, second.remaining), (TokenStatus::Ok, 0));
    assert_eq!(
        b.request_token(21, 1, false).await.status,
        TokenStatus::Blocked
    );
    assert_eq!(
        a.request_token(21, 1, false).await.status,
        TokenStatus::Blocked
    );
    assert_eq!(
        a.request_token(99, 1, false).await.status,
        TokenStatus::NoRuleExists
    );

    // Each value of the hot-parameter rule has 2, across both servers; a request with a value
    // over its limit takes nothing of the other.
    let alice = [Param::Str("alice".into())];
    assert_eq!(
        a.request_param_token(22, 2, alice.to_vec()).await.status,
        TokenStatus::Ok
    );
    assert_eq!(
        b.request_param_token(22, 1, alice.to_vec()).await.status,
        TokenStatus::Blocked
    );
    let both = [Param::Str("bob".into()), Param::Str("alice".into())];
    assert_eq!(
        b.request_param_token(22, 1, both.to_vec()).await.status,
        TokenStatus::Blocked
    );
    assert_eq!(
        a.request_param_token(22, 2, vec![Param::Str("bob".into())])
            .await
            .status,
        TokenStatus::Ok
    );

    // The first server goes; its client moves to the second, where the limit still holds.
    drop(a);
    one.shutdown().await;
    let moved = token_client(&two).await;
    assert_eq!(
        moved.request_token(21, 1, false).await.status,
        TokenStatus::Blocked
    );

    // Redis gone: the server answers FAIL, for the client to fall back on.
    redis.stop();
    assert_eq!(
        moved.request_token(21, 1, false).await.status,
        TokenStatus::Fail
    );
}

#[tokio::test(flavor = "current_thread")]
async fn engines_sharing_a_hot_parameter_limit_admit_it_once_per_value() {
    let redis = RedisServer::start();
    let (a, b) = (service(&redis, "a"), service(&redis, "b"));
    let rule = cluster_param_rule(23, 3.0).item(ParamFlowItem::string("vip", 5));
    let engines: Vec<Floodgate> = [&a, &b]
        .iter()
        .map(|service| {
            let fg = Floodgate::builder()
                .clock(ManualClock::new(T0))
                .token_service(Arc::clone(service))
                .build();
            fg.load_param_flow_rules([rule.clone()]).unwrap();
            fg
        })
        .collect();
    for (value, limit) in [("alice", 3), ("vip", 5), ("bob", 3)] {
        let values = [ParamValue::from(value)];
        let mut request = request(23, f64::from(limit), ThresholdType::Global);
        request.params = &values;
        let mut admitted = 0;
        for (fg, service) in engines.iter().zip([&a, &b]) {
            admitted += admit_all_with(service, &request, || {
                fg.entry("GET:/orders").args([value]).enter().is_ok()
            })
            .await;
        }
        assert_eq!(
            admitted, limit,
            "{value}: its limit in total, not per engine"
        );
    }
    for fg in &engines {
        assert_eq!(
            fg.stats().cluster_fallbacks,
            0,
            "every value was decided by Redis"
        );
    }
    assert_eq!(a.leases(), 3, "one lease per value");
    let mut connection = redis.connection();
    let alice: Vec<(u64, u32)> = redis::cmd("HGETALL")
        .arg("floodgate:{23}:value:s:alice")
        .query(&mut connection)
        .unwrap();
    assert_eq!(alice.iter().map(|(_, n)| n).sum::<u32>(), 3);
}

#[tokio::test(flavor = "current_thread")]
async fn an_engine_and_a_token_server_on_one_redis_share_a_values_window() {
    let redis = RedisServer::start();
    let server = redis_token_server(&redis).await;
    let client = token_client(&server).await;
    let service = service(&redis, "engine");
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .token_service(Arc::clone(&service))
        .build();
    fg.load_param_flow_rules([cluster_param_rule(22, 2.0)])
        .unwrap();
    let values = [ParamValue::from("alice")];
    let mut request = request(22, 2.0, ThresholdType::Global);
    request.params = &values;
    let admitted = admit_all_with(&service, &request, || {
        fg.entry("GET:/orders").args(["alice"]).enter().is_ok()
    })
    .await;
    assert_eq!(admitted, 2);
    assert_eq!(
        client
            .request_param_token(22, 1, vec![Param::Str("alice".into())])
            .await
            .status,
        TokenStatus::Blocked,
        "the engine took alice's two"
    );
    assert_eq!(
        client
            .request_param_token(22, 1, vec![Param::Str("bob".into())])
            .await
            .status,
        TokenStatus::Ok
    );
}

//! The layer over a real axum router: statuses per block kind, exits on every path, 5xx traced,
//! bounded resource names, awaited queueing waits.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderName, Request, StatusCode, header};
use axum::routing::get;
use floodgate_core::{
    BlockError, BlockKind, BlockRule, Clock, ControlBehavior, DegradeRule, Floodgate, FlowGrade,
    ManualClock, ManualProbe, ParamFlowRule, RuleType,
};
use floodgate_tower::{DefaultBlockResponse, FloodgateLayer};
use tower::{Service, ServiceExt};

const T0: u64 = 1_700_000_000_000;

fn engine() -> (ManualClock, Floodgate) {
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .system_probe(ManualProbe::new())
        .build();
    (clock, fg)
}

async fn ok() -> &'static str {
    "ok"
}

async fn explode() -> &'static str {
    panic!("handler panicked")
}

async fn fail() -> (StatusCode, &'static str) {
    (StatusCode::INTERNAL_SERVER_ERROR, "boom")
}

fn app(fg: &Floodgate) -> Router {
    Router::new()
        .route("/orders/{id}", get(ok))
        .route("/fail", get(fail))
        .route("/panic", get(explode))
        .route(
            "/forever",
            get(|| async {
                std::future::pending::<()>().await;
                "never"
            }),
        )
        .route_layer(
            FloodgateLayer::new(fg.clone())
                .origin_header(HeaderName::from_bytes(b"X-Caller").unwrap()),
        )
}

async fn status(app: &Router, path: &str, caller: Option<&str>) -> (StatusCode, Option<String>) {
    let mut request = Request::get(path);
    if let Some(c) = caller {
        request = request.header("x-caller", c);
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let retry = response
        .headers()
        .get(header::RETRY_AFTER)
        .map(|v| v.to_str().unwrap().to_owned());
    (response.status(), retry)
}

#[tokio::test]
async fn every_block_kind_maps_to_its_status() {
    for (kind, expected) in [
        (BlockKind::Flow, 429),
        (BlockKind::ParamFlow, 429),
        (BlockKind::Degrade, 503),
        (BlockKind::System, 503),
        (BlockKind::Authority, 403),
        (BlockKind::Custom, 503),
    ] {
        assert_eq!(
            DefaultBlockResponse::status(kind).as_u16(),
            expected,
            "{kind:?}"
        );
    }
    let (_clock, fg) = engine();
    let app = app(&fg);
    fg.load_rules_json(
        RuleType::Flow,
        r#"[{"resource":"GET:/orders/{id}","count":1}]"#,
    )
    .unwrap();
    assert_eq!(
        status(&app, "/orders/1", None).await,
        (StatusCode::OK, None)
    );
    assert_eq!(
        status(&app, "/orders/2", None).await,
        (StatusCode::TOO_MANY_REQUESTS, Some("1".to_owned())),
        "flow: 429 with Retry-After"
    );
    fg.load_rules_json(RuleType::Flow, "[]").unwrap();
    fg.load_rules_json(
        RuleType::Authority,
        r#"[{"resource":"GET:/orders/{id}","limitApp":"partner","strategy":0}]"#,
    )
    .unwrap();
    assert_eq!(
        status(&app, "/orders/3", Some("stranger")).await.0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        status(&app, "/orders/3", Some("partner")).await.0,
        StatusCode::OK
    );
    fg.load_rules_json(RuleType::Authority, "[]").unwrap();
    fg.load_rules_json(RuleType::System, r#"[{"qps":0}]"#)
        .unwrap();
    assert_eq!(
        status(&app, "/orders/4", None).await,
        (StatusCode::SERVICE_UNAVAILABLE, None),
        "system: no Retry-After (nothing says when load falls)"
    );
}

#[test]
fn retry_after_follows_the_blocking_rule() {
    let block = |kind, rule: Option<Arc<dyn BlockRule>>| {
        let block = BlockError::new(kind, Arc::from("r"));
        DefaultBlockResponse::retry_after(&match rule {
            Some(rule) => block.with_rule(rule),
            None => block,
        })
    };
    let minute_bucket = ParamFlowRule::new("r", 0, 5.0).duration_in_sec(60);
    assert_eq!(
        block(BlockKind::ParamFlow, Some(Arc::new(minute_bucket.clone()))),
        Some(60),
        "a value's bucket refills only after its window"
    );
    assert_eq!(
        block(
            BlockKind::ParamFlow,
            Some(Arc::new(
                minute_bucket
                    .clone()
                    .control_behavior(ControlBehavior::RateLimiter)
            ))
        ),
        Some(1),
        "pacing frees a slot sooner"
    );
    for behavior in [ControlBehavior::WarmUp, ControlBehavior::WarmUpRateLimiter] {
        assert_eq!(
            block(
                BlockKind::ParamFlow,
                Some(Arc::new(minute_bucket.clone().control_behavior(behavior)))
            ),
            Some(60),
            "{behavior:?} is the token bucket for a parameter rule"
        );
    }
    assert_eq!(
        block(
            BlockKind::ParamFlow,
            Some(Arc::new(minute_bucket.grade(FlowGrade::Thread)))
        ),
        Some(1)
    );
    assert_eq!(block(BlockKind::Flow, None), Some(1));
    assert_eq!(
        block(
            BlockKind::Degrade,
            Some(Arc::new(DegradeRule::error_count("r", 3.0).time_window(30)))
        ),
        Some(30),
        "a probe passes after the breaker's time window"
    );
    assert_eq!(block(BlockKind::Degrade, None), None);
    assert_eq!(block(BlockKind::Authority, None), None);
    assert_eq!(block(BlockKind::Custom, None), None);
}

#[tokio::test]
async fn server_errors_open_an_error_ratio_breaker() {
    let (_clock, fg) = engine();
    let app = app(&fg);
    fg.load_degrade_rules([DegradeRule::error_ratio("GET:/fail", 0.5)
        .min_request_amount(5)
        .time_window(10)])
        .unwrap();
    for _ in 0..5 {
        assert_eq!(
            status(&app, "/fail", None).await.0,
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }
    assert_eq!(
        fg.cluster_node("GET:/fail").unwrap().exception_qps(),
        5.0,
        "5xx traced"
    );
    assert_eq!(
        status(&app, "/fail", None).await,
        (StatusCode::SERVICE_UNAVAILABLE, Some("10".to_owned())),
        "the breaker opened; a probe passes after its 10 s window"
    );
}

#[tokio::test]
async fn a_panicking_handler_still_exits_the_entry() {
    let (_clock, fg) = engine();
    let app = app(&fg);
    let task = tokio::spawn({
        let app = app.clone();
        async move { status(&app, "/panic", None).await }
    });
    assert!(task.await.is_err(), "the handler panicked");
    let node = fg.cluster_node("GET:/panic").unwrap();
    assert_eq!(node.pass_qps(), 1.0);
    assert_eq!(node.cur_thread_num(), 0, "exited while unwinding");
    assert_eq!(
        (node.exception_qps(), node.success_qps()),
        (1.0, 1.0),
        "counted as a failed call (success counts every completion, as in Sentinel)"
    );
}

#[tokio::test]
async fn a_dropped_response_future_exits_the_entry() {
    let (_clock, fg) = engine();
    let mut app = app(&fg);
    let request = Request::get("/forever").body(Body::empty()).unwrap();
    let mut future = Box::pin(app.call(request));
    assert!(futures_poll_once(future.as_mut()).await.is_none());
    assert_eq!(fg.cluster_node("GET:/forever").unwrap().cur_thread_num(), 1);
    drop(future);
    assert_eq!(
        fg.cluster_node("GET:/forever").unwrap().cur_thread_num(),
        0,
        "cancelled"
    );
}

/// Polls a future once.
async fn futures_poll_once<F: std::future::Future>(f: std::pin::Pin<&mut F>) -> Option<F::Output> {
    let mut f = Some(f);
    std::future::poll_fn(move |cx| {
        let f = f.take().unwrap();
        std::task::Poll::Ready(match f.poll(cx) {
            std::task::Poll::Ready(v) => Some(v),
            std::task::Poll::Pending => None,
        })
    })
    .await
}

#[tokio::test]
async fn route_templates_keep_resources_bounded() {
    let (_clock, fg) = engine();
    let app = app(&fg);
    for id in 0..100 {
        assert_eq!(
            status(&app, &format!("/orders/{id}?x={id}"), None).await.0,
            StatusCode::OK
        );
    }
    let names = fg.resource_names();
    assert_eq!(names.len(), 1, "{names:?}");
    assert_eq!(&*names[0], "GET:/orders/{id}");
    assert_eq!(
        fg.cluster_node("GET:/orders/{id}").unwrap().pass_qps(),
        100.0
    );
}

/// Many routes and methods through one layer (more than its table of recent routes holds, so some
/// share a slot), then a second router with other templates of the same lengths, made after the first
/// was dropped (so its templates may be allocated where those of the first were, unless the layer
/// still holds them): every request is counted under its own route's name.
#[tokio::test]
async fn every_route_keeps_its_own_name_through_one_layer() {
    let (_clock, fg) = engine();
    let layer = FloodgateLayer::new(fg.clone());
    fn routes(prefix: &'static str) -> impl Iterator<Item = String> {
        (0..150).map(move |i| format!("/{prefix}/{{id}}/{i:03}"))
    }
    let router = |prefix: &'static str| {
        routes(prefix)
            .fold(Router::new(), |r, route| r.route(&route, get(ok).post(ok)))
            .route_layer(layer.clone())
    };
    async fn call(app: &Router, method: &str, path: &str) {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .body(Body::empty())
            .unwrap();
        let response = app.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{method} {path}");
    }
    for prefix in ["a", "b"] {
        let app = router(prefix);
        for round in 0..3 {
            for i in 0..150 {
                call(&app, "GET", &format!("/{prefix}/{round}/{i:03}")).await;
                if i % 2 == 0 {
                    call(&app, "POST", &format!("/{prefix}/{round}/{i:03}")).await;
                }
            }
        }
        drop(app);
    }
    let passes = |name: &str| fg.cluster_node(name).map_or(0, |n| n.total_pass());
    for prefix in ["a", "b"] {
        for (i, route) in routes(prefix).enumerate() {
            assert_eq!(passes(&format!("GET:{route}")), 3, "GET:{route}");
            let posts = if i % 2 == 0 { 3 } else { 0 };
            assert_eq!(passes(&format!("POST:{route}")), posts, "POST:{route}");
        }
    }
    assert_eq!(fg.resource_names().len(), 2 * (150 + 75));
}

/// Methods a route does not serve, extension methods among them, and the routes of a router mounted
/// with `nest_service` (whose templates axum builds per request), all through one layer: each is
/// counted under its own name, and the plain routes keep theirs. Extension methods, which clients
/// choose, share the name `_OTHER`.
#[tokio::test]
async fn unserved_methods_and_nested_services_keep_their_names() {
    let (_clock, fg) = engine();
    let layer = FloodgateLayer::new(fg.clone());
    let nested = Router::new()
        .route("/a", get(ok))
        .route_layer(layer.clone());
    let app: Router = Router::new()
        .route("/orders/{id}", get(ok))
        .nest_service("/svc", nested)
        .route_layer(layer)
        .with_state(());
    async fn call(app: &Router, method: &str, path: &str) -> StatusCode {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .body(Body::empty())
            .unwrap();
        app.clone().oneshot(request).await.unwrap().status()
    }
    for round in 0..100 {
        assert_eq!(
            call(&app, "GET", &format!("/orders/{round}")).await,
            StatusCode::OK
        );
        assert_eq!(call(&app, "GET", "/svc/a").await, StatusCode::OK);
        for method in ["FOO", "BAR", "DELETE"] {
            let status = call(&app, method, &format!("/orders/{round}")).await;
            assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
        }
    }
    let passes = |name: &str| fg.cluster_node(name).map_or(0, |n| n.total_pass());
    assert_eq!(passes("GET:/orders/{id}"), 100);
    assert_eq!(passes("DELETE:/orders/{id}"), 100);
    assert_eq!(passes("_OTHER:/orders/{id}"), 200, "FOO and BAR");
    let nested: Vec<_> = fg
        .resource_names()
        .into_iter()
        .filter(|name| name.starts_with("GET:/svc"))
        .collect();
    assert_eq!(
        nested,
        vec!["GET:/svc/a".into()],
        "{:?}",
        fg.resource_names()
    );
    assert_eq!(passes("GET:/svc/a"), 100);
    // The outer router's layer sees the mounted service without a route template.
    assert_eq!(passes("GET:/*"), 100);
    assert_eq!(fg.resource_names().len(), 5, "{:?}", fg.resource_names());
}

/// The layer on one handler (`Handler::layer`) instead of the routes: the same resource names (axum has
/// matched the route by then), the same statuses.
#[tokio::test]
async fn a_layer_on_a_handler_names_its_route_and_blocks() {
    use axum::handler::Handler;
    let (_clock, fg) = engine();
    let app: Router = Router::new()
        .route(
            "/users/{id}",
            get(ok.layer(FloodgateLayer::new(fg.clone()))),
        )
        .route("/health", get(ok))
        .with_state(());
    for id in 0..5 {
        assert_eq!(
            status(&app, &format!("/users/{id}"), None).await,
            (StatusCode::OK, None)
        );
    }
    assert_eq!(status(&app, "/health", None).await.0, StatusCode::OK);
    assert_eq!(fg.resource_names(), vec!["GET:/users/{id}".into()]);
    fg.load_rules_json(
        RuleType::Flow,
        r#"[{"resource":"GET:/users/{id}","count":0}]"#,
    )
    .unwrap();
    assert_eq!(
        status(&app, "/users/9", None).await,
        (StatusCode::TOO_MANY_REQUESTS, Some("1".to_owned()))
    );
    assert_eq!(status(&app, "/health", None).await.0, StatusCode::OK);
    let node = fg.cluster_node("GET:/users/{id}").unwrap();
    assert_eq!((node.total_pass(), node.cur_thread_num()), (5, 0));
}

#[tokio::test]
async fn a_custom_block_response_and_resource_name() {
    let (_clock, fg) = engine();
    fg.load_rules_json(RuleType::Flow, r#"[{"resource":"all","count":0}]"#)
        .unwrap();
    let app = Router::new().route("/x", get(ok)).route_layer(
        FloodgateLayer::new(fg.clone())
            .resource_fn(|_| "all".to_owned())
            .on_block(|block: &BlockError| {
                axum::response::Response::builder()
                    .status(StatusCode::IM_A_TEAPOT)
                    .body(Body::from(block.kind().to_string()))
                    .unwrap()
            }),
    );
    assert_eq!(status(&app, "/x", None).await.0, StatusCode::IM_A_TEAPOT);
}

/// A manual clock whose sleeps are real, so the layer uses a (paused) tokio timer.
#[derive(Debug, Clone)]
struct TimerClock(ManualClock);

impl Clock for TimerClock {
    fn now_nanos(&self) -> u64 {
        self.0.now_nanos()
    }
    fn sleep(&self, _: Duration) {
        panic!("the layer must not sleep a worker thread");
    }
}

#[tokio::test(start_paused = true)]
async fn queueing_waits_are_awaited() {
    let fg = Floodgate::builder()
        .clock(TimerClock(ManualClock::new(T0)))
        .build();
    fg.load_rules_json(
        RuleType::Flow,
        r#"[{"resource":"GET:/orders/{id}","count":10,"controlBehavior":2,"maxQueueingTimeMs":500}]"#,
    )
    .unwrap();
    let app = app(&fg);
    let start = tokio::time::Instant::now();
    assert_eq!(status(&app, "/orders/1", None).await.0, StatusCode::OK);
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(status(&app, "/orders/2", None).await.0, StatusCode::OK);
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(100),
        "waited on the tokio timer"
    );
}

/// A service that acts when called (a client, a queue), not when its future is polled: a queued
/// request reaches it only once its wait is over.
#[tokio::test(start_paused = true)]
async fn a_queued_request_reaches_the_service_after_its_wait() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    let fg = Floodgate::builder()
        .clock(TimerClock(ManualClock::new(T0)))
        .build();
    fg.load_rules_json(
        RuleType::Flow,
        r#"[{"resource":"GET:/*","count":10,"controlBehavior":2,"maxQueueingTimeMs":500}]"#,
    )
    .unwrap();
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let service = tower::ServiceBuilder::new()
        .layer(FloodgateLayer::new(fg.clone()))
        .service(tower::service_fn(move |_: Request<Body>| {
            counted.fetch_add(1, Ordering::SeqCst);
            async {
                Ok::<_, std::convert::Infallible>(axum::response::Response::new(Body::empty()))
            }
        }));
    let request = || Request::get("/x").body(Body::empty()).unwrap();
    service.clone().oneshot(request()).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let mut queued = Box::pin(service.clone().oneshot(request()));
    assert!(
        futures_poll_once(queued.as_mut()).await.is_none(),
        "waiting"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1, "not called while it waits");
    let start = tokio::time::Instant::now();
    let response = queued.await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(start.elapsed(), Duration::from_millis(100));
    assert_eq!(fg.cluster_node("GET:/*").unwrap().cur_thread_num(), 0);
}

#[tokio::test]
async fn grpc_paths_and_the_method_fallback_name_resources_outside_axum_routes() {
    // A plain tower service (no axum routing, so no route template): gRPC requests are named by their
    // method path, others by `METHOD:/*` — the same names on a second request, from the layer's cache.
    let (_clock, fg) = engine();
    let service = tower::ServiceBuilder::new()
        .layer(FloodgateLayer::new(fg.clone()))
        .service(tower::service_fn(|_: Request<Body>| async {
            Ok::<_, std::convert::Infallible>(axum::response::Response::new(Body::empty()))
        }));
    for _ in 0..2 {
        let grpc = Request::post("/pkg.Orders/Get?ignored=1")
            .header(header::CONTENT_TYPE, "application/grpc+proto")
            .body(Body::empty())
            .unwrap();
        service.clone().oneshot(grpc).await.unwrap();
        for path in ["/a/1", "/b/2"] {
            let plain = Request::get(path).body(Body::empty()).unwrap();
            service.clone().oneshot(plain).await.unwrap();
        }
    }
    let mut names: Vec<String> = fg.resource_names().iter().map(|n| n.to_string()).collect();
    names.sort();
    assert_eq!(names, ["/pkg.Orders/Get", "GET:/*"]);
    assert_eq!(fg.cluster_node("/pkg.Orders/Get").unwrap().pass_qps(), 2.0);
    assert_eq!(fg.cluster_node("GET:/*").unwrap().pass_qps(), 4.0);
}

/// Outside axum's routes, a gRPC content type names a request by its path only for a gRPC method's
/// shape (`POST /package.Service/Method`): on any other request, a client that sent it would name the
/// request itself, and escape the rule on `GET:/*`.
#[tokio::test]
async fn a_grpc_content_type_does_not_rename_an_http_request() {
    let (_clock, fg) = engine();
    fg.load_rules_json(RuleType::Flow, r#"[{"resource":"GET:/*","count":0}]"#)
        .unwrap();
    let router: Router = Router::new().route("/orders/{id}", get(|| async { "order" }));
    let app = tower::Layer::layer(&FloodgateLayer::new(fg.clone()), router);
    for content_type in ["text/plain", "application/grpc"] {
        let request = Request::get("/orders/1")
            .header(header::CONTENT_TYPE, content_type)
            .body(Body::empty())
            .unwrap();
        let response = app.clone().oneshot(request).await.unwrap();
        assert_eq!(
            response.status(),
            StatusCode::TOO_MANY_REQUESTS,
            "{content_type}"
        );
    }
    for (method, path) in [
        ("POST", "/orders/1"),
        ("GET", "/pkg.Orders/Get"),
        ("POST", "/pkg.Orders/Get/more"),
        ("POST", "/pkg.Orders/"),
    ] {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::CONTENT_TYPE, "application/grpc")
            .body(Body::empty())
            .unwrap();
        app.clone().oneshot(request).await.unwrap();
    }
    let mut names: Vec<String> = fg.resource_names().iter().map(|n| n.to_string()).collect();
    names.sort();
    assert_eq!(names, ["GET:/*", "POST:/*"]);
}

/// A request is a root of the default context: a sync entry another task left current on the worker
/// thread (held across an `.await`) does not become its parent.
#[tokio::test]
async fn a_request_does_not_nest_under_the_threads_current_entry() {
    let (_clock, fg) = engine();
    let app = app(&fg);
    let held = fg.entry("held").enter().unwrap();
    assert_eq!(status(&app, "/orders/1", None).await.0, StatusCode::OK);
    drop(held);
    let tree = fg.call_tree();
    let default = tree
        .children
        .iter()
        .find(|c| &*c.stats.name == floodgate_core::DEFAULT_CONTEXT_NAME)
        .unwrap();
    let roots: Vec<&str> = default.children.iter().map(|c| &*c.stats.name).collect();
    assert_eq!(roots, ["held", "GET:/orders/{id}"]);
    assert!(
        default.children[0].children.is_empty(),
        "nothing under held"
    );
}

/// gRPC answers errors with HTTP 200 and a `grpc-status` header (a trailers-only response): the server's
/// failures are traced, a client's mistakes and successes are not.
#[tokio::test]
async fn grpc_server_failures_are_traced() {
    let (_clock, fg) = engine();
    let service = tower::ServiceBuilder::new()
        .layer(FloodgateLayer::new(fg.clone()))
        .service(tower::service_fn(|request: Request<Body>| async move {
            let code = request
                .uri()
                .path()
                .rsplit('/')
                .next()
                .unwrap_or("0")
                .to_owned();
            let response = axum::response::Response::builder()
                .header(header::CONTENT_TYPE, "application/grpc")
                .header("grpc-status", code)
                .body(Body::empty())
                .unwrap();
            Ok::<_, std::convert::Infallible>(response)
        }));
    for code in ["0", "3", "5", "14", "13", "2", "4"] {
        let request = Request::post(format!("/pkg.Svc/{code}"))
            .header(header::CONTENT_TYPE, "application/grpc")
            .body(Body::empty())
            .unwrap();
        let response = service.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
    let exceptions = |code: &str| {
        fg.cluster_node(&format!("/pkg.Svc/{code}"))
            .unwrap()
            .exception_qps()
    };
    for code in ["0", "3", "5"] {
        assert_eq!(exceptions(code), 0.0, "grpc-status {code}");
    }
    for code in ["14", "13", "2", "4"] {
        assert_eq!(exceptions(code), 1.0, "grpc-status {code}");
    }
}

/// gRPC paths and extension methods are chosen by clients: a flood of distinct ones through a layer
/// outside any router makes a bounded number of resources (at most the layer's 1024 names, then
/// `grpc:/*` and `_OTHER:/*`), and known paths keep their names.
#[tokio::test]
async fn names_clients_choose_stay_bounded() {
    let (_clock, fg) = engine();
    let service = tower::ServiceBuilder::new()
        .layer(FloodgateLayer::new(fg.clone()))
        .service(tower::service_fn(|_: Request<Body>| async {
            Ok::<_, std::convert::Infallible>(axum::response::Response::new(Body::empty()))
        }));
    let grpc = |path: String| {
        Request::post(path)
            .header(header::CONTENT_TYPE, "application/grpc")
            .body(Body::empty())
            .unwrap()
    };
    service
        .clone()
        .oneshot(grpc("/pkg.Orders/Get".into()))
        .await
        .unwrap();
    for i in 0..3000 {
        service
            .clone()
            .oneshot(grpc(format!("/pkg.Junk/M{i}")))
            .await
            .unwrap();
        let method = format!("X{i}");
        let request = Request::builder()
            .method(method.as_str())
            .uri("/")
            .body(Body::empty())
            .unwrap();
        service.clone().oneshot(request).await.unwrap();
    }
    service
        .clone()
        .oneshot(grpc("/pkg.Orders/Get".into()))
        .await
        .unwrap();
    let names = fg.resource_names();
    assert!(names.len() <= 1024 + 2, "{} resources", names.len());
    let passes = |name: &str| fg.cluster_node(name).map_or(0, |n| n.total_pass());
    assert_eq!(passes("/pkg.Orders/Get"), 2);
    assert_eq!(passes("_OTHER:/*"), 3000);
    assert_eq!(passes("grpc:/*"), 3000 - (1024 - 2));
}

#[test]
fn a_layer_is_send_whenever_its_block_response_is() {
    // A block response may be `Send` without being `Sync` (here it counts in a `Cell`); the layer and
    // its services must still move between threads.
    fn assert_send<T: Send>(_: &T) {}
    let blocked = std::cell::Cell::new(0u32);
    let layer = FloodgateLayer::new(Floodgate::default()).on_block(move |_: &BlockError| {
        blocked.set(blocked.get() + 1);
        axum::response::Response::new(Body::empty())
    });
    assert_send(&layer);
    assert_send(&tower::Layer::layer(
        &layer,
        tower::service_fn(|_: Request<Body>| async {
            Ok::<_, std::convert::Infallible>(axum::response::Response::new(Body::empty()))
        }),
    ));
}

/// A gRPC service mounted in an axum router (tonic's `into_axum_router` routes `/{NAME}/{*rest}`) names
/// each method by its path, not the catch-all route shared by all of them.
#[tokio::test]
async fn grpc_methods_in_an_axum_router_keep_their_names() {
    let (_clock, fg) = engine();
    let grpc = tower::service_fn(|_: Request<Body>| async {
        Ok::<_, std::convert::Infallible>(axum::response::Response::new(Body::empty()))
    });
    let app: Router = Router::new()
        .route_service("/hello.Greeter/{*rest}", grpc)
        .route_layer(FloodgateLayer::new(fg.clone()));
    for method in ["SayHello", "SayGoodbye"] {
        let request = Request::post(format!("/hello.Greeter/{method}"))
            .header(header::CONTENT_TYPE, "application/grpc")
            .body(Body::empty())
            .unwrap();
        app.clone().oneshot(request).await.unwrap();
    }
    let mut names: Vec<String> = fg.resource_names().iter().map(|n| n.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        ["/hello.Greeter/SayGoodbye", "/hello.Greeter/SayHello"]
    );
}

/// axum serves HEAD with the GET handler: HEAD requests count on the GET resource, so they cannot get
/// around its rules.
#[tokio::test]
async fn head_requests_count_on_the_get_resource() {
    let (_clock, fg) = engine();
    let app = app(&fg);
    fg.load_rules_json(
        RuleType::Flow,
        r#"[{"resource":"GET:/orders/{id}","count":1}]"#,
    )
    .unwrap();
    assert_eq!(status(&app, "/orders/1", None).await.0, StatusCode::OK);
    let head = app
        .clone()
        .oneshot(Request::head("/orders/2").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(head.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(fg.cluster_node("HEAD:/orders/{id}").is_none());
}

/// A layer outside another (a global `.layer` around a `.route_layer`) does not count the inner layer's
/// block (a 503 from an open breaker) as its service's failure: one route's breaker must not open the
/// whole service's.
#[tokio::test]
async fn an_outer_layer_does_not_trace_an_inner_block() {
    let (_clock, fg) = engine();
    let routes: Router = Router::new()
        .route("/fail", get(fail))
        .route_layer(FloodgateLayer::new(fg.clone()));
    // Around the whole router: no route template yet, so `GET:/*`.
    let app = tower::ServiceBuilder::new()
        .layer(FloodgateLayer::new(fg.clone()))
        .service(routes);
    fg.load_degrade_rules([DegradeRule::error_count("GET:/fail", 1.0)
        .min_request_amount(1)
        .time_window(10)])
        .unwrap();
    let mut statuses = Vec::new();
    for _ in 0..5 {
        let response = app
            .clone()
            .oneshot(Request::get("/fail").body(Body::empty()).unwrap())
            .await
            .unwrap();
        statuses.push(response.status().as_u16());
    }
    assert_eq!(
        statuses,
        [500, 500, 503, 503, 503],
        "the route's breaker opened"
    );
    let outer = fg.cluster_node("GET:/*").unwrap();
    assert_eq!(outer.pass_qps(), 5.0, "the outer layer let them all in");
    assert_eq!(
        outer.exception_qps(),
        2.0,
        "the two 500s failed; the inner blocks did not"
    );
}

/// A service whose `call` itself panics (not its future): the request is traced as failed, and the
/// entry exits as the panic unwinds.
#[tokio::test]
async fn a_panic_in_call_is_traced() {
    #[derive(Clone)]
    struct Explodes;
    impl tower::Service<Request<Body>> for Explodes {
        type Response = axum::response::Response;
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<Self::Response, Self::Error>>;
        fn poll_ready(
            &mut self,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), Self::Error>> {
            std::task::Poll::Ready(Ok(()))
        }
        fn call(&mut self, _: Request<Body>) -> Self::Future {
            panic!("call failed")
        }
    }
    let (_clock, fg) = engine();
    let service = tower::ServiceBuilder::new()
        .layer(FloodgateLayer::new(fg.clone()))
        .service(Explodes);
    let outcome = tokio::spawn(async move {
        service
            .oneshot(Request::get("/x").body(Body::empty()).unwrap())
            .await
    })
    .await;
    assert!(outcome.is_err(), "the panic went on");
    let node = fg.cluster_node("GET:/*").unwrap();
    assert_eq!(node.cur_thread_num(), 0);
    assert_eq!(node.exception_qps(), 1.0, "traced");
}

/// On a catch-all route that is not a gRPC service's, a client cannot pick the resource name (and
/// escape the route's rules) by sending a gRPC content type.
#[tokio::test]
async fn a_grpc_content_type_does_not_rename_other_catch_all_routes() {
    let (_clock, fg) = engine();
    let app: Router = Router::new()
        .route("/api/{*rest}", get(ok))
        .route_layer(FloodgateLayer::new(fg.clone()));
    fg.load_rules_json(
        RuleType::Flow,
        r#"[{"resource":"GET:/api/{*rest}","count":0}]"#,
    )
    .unwrap();
    let request = Request::get("/api/x")
        .header(header::CONTENT_TYPE, "application/grpc")
        .body(Body::empty())
        .unwrap();
    let response = app.oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(fg.cluster_node("/api/x").is_none());
}

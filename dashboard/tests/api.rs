//! The JSON API through the router (`oneshot`, a real SQLite file per test): rules CRUD per type,
//! export and import, history and rollback, and every refusal — no session, no CSRF token, a viewer,
//! a bad rule, an unknown app or type — answers with its status and changes nothing.

mod support;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use floodgate_dashboard::Dashboard;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use support::PASSWORD;
use tower::ServiceExt;

struct Api {
    router: Router,
    cookie: Option<String>,
    csrf: Option<String>,
}

impl Api {
    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut request = Request::builder().method(method).uri(path);
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        if let Some(csrf) = &self.csrf {
            request = request.header("x-csrf-token", csrf);
        }
        let request = match body {
            Some(b) => request
                .header("content-type", "application/json")
                .body(Body::from(b.to_string())),
            None => request.body(Body::empty()),
        }
        .unwrap();
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    async fn login(router: &Router, user: &str, password: &str) -> Api {
        let request = Request::post("/auth/login")
            .header("content-type", "application/json")
            .body(Body::from(
                json!({"username": user, "password": password}).to_string(),
            ))
            .unwrap();
        let response = router.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let cookie = response
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .map(|c| c.split(';').next().unwrap_or_default().to_owned());
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        Api {
            router: router.clone(),
            cookie,
            csrf: body["csrfToken"].as_str().map(str::to_owned),
        }
    }
}

async fn start(dir: &tempfile::TempDir) -> Dashboard {
    let d = support::start(dir).await;
    support::machine(&d, "orders", "127.0.0.1", "h").await;
    d
}

async fn flow_rules(api: &Api) -> Vec<Value> {
    let (status, body) = api.call("GET", "/api/apps/orders/rules/flow", None).await;
    assert_eq!(status, StatusCode::OK);
    body["rules"].as_array().unwrap().clone()
}

#[tokio::test]
async fn rules_crud_history_rollback_export_import() {
    let dir = tempfile::tempdir().unwrap();
    let d = start(&dir).await;
    let router = d.router();
    let admin = Api::login(&router, "admin", PASSWORD).await;

    let (status, created) = admin
        .call(
            "POST",
            "/api/apps/orders/rules/flow",
            Some(json!({"resource": "GET:/a", "count": 20})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["rule"]["id"].as_i64().unwrap();
    assert_eq!(created["rule"]["rule"]["count"], 20.0);

    let (status, _) = admin
        .call(
            "PUT",
            &format!("/api/apps/orders/rules/flow/{id}"),
            Some(json!({"resource": "GET:/a", "count": 30})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, one) = admin
        .call("GET", &format!("/api/apps/orders/rules/flow/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(one["rule"]["count"], 30.0);

    // A bad rule: 422 naming the field; nothing changes.
    let (status, err) = admin
        .call(
            "PUT",
            &format!("/api/apps/orders/rules/flow/{id}"),
            Some(json!({"resource": "GET:/a", "count": -5})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(err["field"], "count");
    let (status, err) = admin
        .call("PUT", "/api/apps/orders/rules/flow", Some(json!([{"resource": "ok", "count": 1}, {"resource": "bad", "grade": 7, "count": 1}])))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(err["fields"][0]["index"], 1);
    assert_eq!(err["fields"][0]["field"], "grade");
    let (status, _) = admin
        .call(
            "POST",
            "/api/apps/orders/rules/flow",
            Some(json!("not a rule")),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(flow_rules(&admin).await.len(), 1);
    assert_eq!(flow_rules(&admin).await[0]["rule"]["count"], 30.0);

    // Unknown app, type, rule.
    assert_eq!(
        admin.call("GET", "/api/apps/nope/rules/flow", None).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        admin
            .call("GET", "/api/apps/orders/rules/bogus", None)
            .await
            .0,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(
        admin
            .call("DELETE", "/api/apps/orders/rules/flow/999", None)
            .await
            .0,
        StatusCode::NOT_FOUND
    );

    // History, then roll the update back.
    let (_, history) = admin
        .call("GET", "/api/apps/orders/history?type=flow", None)
        .await;
    let entries = history.as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0]["action"], "update");
    assert_eq!(entries[0]["actor"], "admin");
    assert_eq!(entries[0]["before"][0]["rule"]["count"], 20.0);
    assert_eq!(entries[0]["after"][0]["rule"]["count"], 30.0);
    let update_id = entries[0]["id"].as_i64().unwrap();
    let (status, rolled) = admin
        .call(
            "POST",
            &format!("/api/apps/orders/history/{update_id}/rollback"),
            Some(json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{rolled}");
    assert_eq!(rolled["rules"][0]["id"], id);
    assert_eq!(rolled["rules"][0]["rule"]["count"], 20.0);

    // Export, change, import the export back: the rule set is as exported, ids kept.
    let (_, exported) = admin.call("GET", "/api/apps/orders/export", None).await;
    assert_eq!(exported["app"], "orders");
    assert_eq!(exported["flow"][0]["id"], id);
    admin
        .call("DELETE", &format!("/api/apps/orders/rules/flow/{id}"), None)
        .await;
    assert!(flow_rules(&admin).await.is_empty());
    let (status, imported) = admin
        .call("POST", "/api/apps/orders/import", Some(exported.clone()))
        .await;
    assert_eq!(status, StatusCode::OK, "{imported}");
    let rules = flow_rules(&admin).await;
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["rule"]["count"], 20.0);
    // An import with one bad type changes no type.
    let mut bad = exported.clone();
    bad["degrade"] = json!([{"resource": "x", "grade": 0}]);
    bad["flow"] = json!([]);
    let (status, err) = admin
        .call("POST", "/api/apps/orders/import", Some(bad))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert!(
        err["field"].as_str().unwrap().starts_with("degrade."),
        "{err}"
    );
    assert_eq!(flow_rules(&admin).await.len(), 1);
    d.shutdown().await;
}

#[tokio::test]
async fn refusals_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = start(&dir).await;
    let router = d.router();
    let admin = Api::login(&router, "admin", PASSWORD).await;
    let rule = json!({"resource": "GET:/a", "count": 1});

    let anonymous = Api {
        router: router.clone(),
        cookie: None,
        csrf: None,
    };
    assert_eq!(
        anonymous.call("GET", "/api/apps", None).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        anonymous
            .call("POST", "/api/apps/orders/rules/flow", Some(rule.clone()))
            .await
            .0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        anonymous.call("GET", "/no/such/page", None).await.0,
        StatusCode::UNAUTHORIZED
    );

    let no_csrf = Api {
        router: router.clone(),
        cookie: admin.cookie.clone(),
        csrf: None,
    };
    assert_eq!(
        no_csrf
            .call("POST", "/api/apps/orders/rules/flow", Some(rule.clone()))
            .await
            .0,
        StatusCode::FORBIDDEN
    );
    let wrong_csrf = Api {
        router: router.clone(),
        cookie: admin.cookie.clone(),
        csrf: Some("x".into()),
    };
    assert_eq!(
        wrong_csrf
            .call("POST", "/api/apps/orders/rules/flow", Some(rule.clone()))
            .await
            .0,
        StatusCode::FORBIDDEN
    );

    let (status, _) = admin
        .call(
            "POST",
            "/api/users",
            Some(json!({"username": "vera", "password": "viewer password 1", "role": "viewer"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let viewer = Api::login(&router, "vera", "viewer password 1").await;
    assert_eq!(
        viewer
            .call("GET", "/api/apps/orders/rules/flow", None)
            .await
            .0,
        StatusCode::OK
    );
    for (method, path) in [
        ("POST", "/api/apps/orders/rules/flow"),
        ("PUT", "/api/apps/orders/rules/flow"),
        ("POST", "/api/apps/orders/import"),
        ("POST", "/api/apps/orders/push"),
    ] {
        let body = if method == "PUT" {
            json!([rule.clone()])
        } else {
            rule.clone()
        };
        assert_eq!(
            viewer.call(method, path, Some(body)).await.0,
            StatusCode::FORBIDDEN,
            "{method} {path}"
        );
    }
    assert!(flow_rules(&admin).await.is_empty());
    let (_, history) = admin.call("GET", "/api/apps/orders/history", None).await;
    assert!(history.as_array().unwrap().is_empty());
    assert_eq!(d.state().db.rule_version(1, "flow").await.unwrap(), None);
    d.shutdown().await;
}

/// A field rules of the type do not have is left out of what is saved and named in the answer; a
/// rule without its threshold is refused naming `count` (it would otherwise block everything).
#[tokio::test]
async fn unknown_fields_are_named_and_a_missing_count_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = start(&dir).await;
    let router = d.router();
    let admin = Api::login(&router, "admin", PASSWORD).await;

    let (status, created) = admin
        .call(
            "POST",
            "/api/apps/orders/rules/flow",
            Some(json!({"resource": "GET:/a", "count": 20, "strategyy": 1})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(
        created["warnings"],
        json!([{"field": "strategyy", "message": "is not a field of these rules, and was left out"}])
    );
    assert!(created["rule"]["rule"].get("strategyy").is_none());

    let (status, replaced) = admin
        .call(
            "PUT",
            "/api/apps/orders/rules/flow",
            Some(json!([
                {"resource": "GET:/a", "count": 20},
                {"resource": "GET:/b", "count": 5, "clusterConfig": {"flowID": 3}},
            ])),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{replaced}");
    assert_eq!(replaced["warnings"][0]["index"], 1);
    assert_eq!(replaced["warnings"][0]["field"], "clusterConfig.flowID");

    for rule in [
        json!({"resource": "GET:/c", "Count": 20}),
        json!({"resource": "GET:/c", "count": null}),
    ] {
        let (status, err) = admin
            .call("POST", "/api/apps/orders/rules/flow", Some(rule.clone()))
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{rule}: {err}");
        assert_eq!(err["field"], "count", "{rule}: {err}");
    }
    assert_eq!(
        flow_rules(&admin).await.len(),
        2,
        "the refused rules changed nothing"
    );
}

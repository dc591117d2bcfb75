//! The rule pages and the history page through the router (`oneshot`, a real SQLite file per test):
//! forms create, edit and delete rules; an invalid rule comes back with its error next to the field
//! and nothing saved; names from outside are escaped; rollback restores the list; a viewer sees no
//! control and is refused every change; a form without its CSRF token is refused.

mod support;

use axum::http::StatusCode;
use floodgate_dashboard::Dashboard;
use serde_json::{Value, json};
use support::{Browser, PASSWORD};

/// The app's rules of `rule_type`, as the API lists them.
async fn stored(b: &Browser, rule_type: &str) -> Vec<Value> {
    let (status, body) = b
        .api("GET", &format!("/api/apps/orders/rules/{rule_type}"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    body["rules"].as_array().unwrap().clone()
}

async fn start(dir: &tempfile::TempDir) -> Dashboard {
    let d = support::start(dir).await;
    support::machine(&d, "orders", "127.0.0.1", "h").await;
    d
}

const FLOW: &str = "/apps/orders/rules/flow";

/// A form's fields.
type Form<'a> = Vec<(&'a str, &'a str)>;

/// A flow rule's form as a browser submits it, with `count`.
fn flow_form<'a>(resource: &'a str, count: &'a str) -> Form<'a> {
    vec![
        ("resource", resource),
        ("limitApp", "default"),
        ("grade", "1"),
        ("count", count),
        ("strategy", "0"),
        ("refResource", ""),
        ("controlBehavior", "0"),
        ("warmUpPeriodSec", "10"),
        ("maxQueueingTimeMs", "500"),
        ("clusterConfig.flowId", ""),
        ("clusterConfig.thresholdType", "0"),
    ]
}

#[tokio::test]
async fn a_flow_rule_is_created_edited_and_deleted_through_the_forms() {
    let dir = tempfile::tempdir().unwrap();
    let d = start(&dir).await;
    let admin = Browser::login(&d.router(), "admin", PASSWORD).await;

    let list = admin.get(FLOW).await;
    assert_eq!(list.status, StatusCode::OK);
    assert!(list.body.contains(r#"href="/apps/orders/rules/flow/new""#));
    assert!(list.body.contains("Not managed yet"));

    let form = admin.get(&format!("{FLOW}/new?resource=GET%3A%2Fa")).await;
    assert_eq!(form.status, StatusCode::OK);
    assert!(form.body.contains(r#"<form id="rule-form""#));
    assert!(form.body.contains(r#"action="/apps/orders/rules/flow""#));
    assert!(
        form.body
            .contains(r#"id="field-resource" name="resource" value="GET:/a""#)
    );
    assert!(
        form.body
            .contains(r#"id="field-count" name="count" value="10""#)
    );
    assert!(form.body.contains(r#"id="field-warmUpPeriodSec""#));
    assert!(form.body.contains(r#"<option value="1" selected>QPS"#));

    let saved = admin.post(FLOW, &flow_form("GET:/a", "20")).await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.body);
    assert_eq!(saved.location.as_deref(), Some(FLOW));
    let rules = stored(&admin, "flow").await;
    assert_eq!(rules.len(), 1);
    let id = rules[0]["id"].as_i64().unwrap();
    assert_eq!(rules[0]["rule"]["count"], 20.0);
    let list = admin.get(FLOW).await;
    assert!(list.body.contains(&format!(r#"<tr data-rule-id="{id}">"#)));
    assert!(list.body.contains("QPS ≤ 20, reject"));
    assert!(list.body.contains("version 1"));

    // Invalid rules come back with the error next to the field, the values kept, nothing saved.
    for (count, message) in [
        ("-1", "must be a finite number"),
        ("abc", "must be a number"),
    ] {
        let refused = admin.post(FLOW, &flow_form("GET:/b", count)).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(refused.body.contains(r#"<form id="rule-form""#));
        let input = format!(r#"id="field-count" name="count" value="{count}""#);
        let at = refused.body.find(&input).expect("the value is kept");
        let rest = &refused.body[at..];
        assert!(rest.contains(r#"aria-describedby="error-count hint-count" aria-invalid="true">"#));
        let error = rest.find(r#"<p class="error" id="error-count">"#).unwrap();
        assert!(rest[error..].contains(message), "{}", &rest[error..]);
        assert!(
            !rest[..error].contains("<input"),
            "the error follows its input"
        );
        assert!(refused.body.contains(r#"value="GET:/b""#));
    }
    assert_eq!(stored(&admin, "flow").await.len(), 1);

    // Edit.
    let edit_url = format!("{FLOW}/{id}/edit");
    let edit = admin.get(&edit_url).await;
    assert_eq!(edit.status, StatusCode::OK);
    assert!(edit.body.contains(&format!(r#"action="{FLOW}/{id}""#)));
    assert!(
        edit.body
            .contains(r#"id="field-count" name="count" value="20""#)
    );
    let mut form = flow_form("GET:/a", "30");
    form.push(("controlBehavior", "1"));
    let updated = admin.post(&format!("{FLOW}/{id}"), &form).await;
    assert_eq!(updated.status, StatusCode::SEE_OTHER, "{}", updated.body);
    let rules = stored(&admin, "flow").await;
    assert_eq!(rules[0]["id"], id);
    assert_eq!(rules[0]["rule"]["count"], 30.0);
    assert_eq!(rules[0]["rule"]["controlBehavior"], 1);
    assert!(
        admin
            .get(FLOW)
            .await
            .body
            .contains("QPS ≤ 30, warm up 10 s")
    );
    let refused = admin
        .post(&format!("{FLOW}/{id}"), &flow_form("GET:/a", "-5"))
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.body.contains(r#"id="error-count""#));
    assert_eq!(stored(&admin, "flow").await[0]["rule"]["count"], 30.0);

    // Delete.
    let deleted = admin.post(&format!("{FLOW}/{id}/delete"), &[]).await;
    assert_eq!(deleted.status, StatusCode::SEE_OTHER);
    assert_eq!(deleted.location.as_deref(), Some(FLOW));
    assert!(stored(&admin, "flow").await.is_empty());
    assert!(
        !admin
            .get(FLOW)
            .await
            .body
            .contains(&format!("data-rule-id=\"{id}\""))
    );
    assert_eq!(
        admin.post(&format!("{FLOW}/{id}/delete"), &[]).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn every_type_saves_its_form_and_lists_it_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let d = start(&dir).await;
    let admin = Browser::login(&d.router(), "admin", PASSWORD).await;
    let cases: [(&str, Form<'_>, &str); 4] = [
        (
            "degrade",
            vec![
                ("resource", "GET:/slow"),
                ("grade", "0"),
                ("count", "500"),
                ("slowRatioThreshold", "0.5"),
                ("timeWindow", "10"),
                ("minRequestAmount", "5"),
                ("statIntervalMs", "1000"),
                ("limitApp", "default"),
            ],
            "open when ≥ 50 % of calls take &#62; 500 ms (per 1000 ms, at least 5 requests), for 10 s",
        ),
        (
            "system",
            vec![
                ("highestSystemLoad", "-1"),
                ("highestCpuUsage", "0.8"),
                ("qps", "1000"),
                ("avgRt", "-1"),
                ("maxThread", "-1"),
            ],
            "inbound CPU ≤ 80 %, QPS ≤ 1000",
        ),
        (
            "authority",
            vec![
                ("resource", "GET:/admin"),
                ("limitApp", "app-a,app-b"),
                ("strategy", "1"),
            ],
            "refuse callers app-a, app-b",
        ),
        (
            "paramFlow",
            vec![
                ("resource", "GET:/item"),
                ("paramIdx", "0"),
                ("grade", "1"),
                ("count", "10"),
                ("durationInSec", "1"),
                ("controlBehavior", "0"),
                ("maxQueueingTimeMs", "0"),
                ("burstCount", "0"),
                ("paramFlowItemList", "42,int,100\r\nvip,String,5"),
                ("limitApp", "default"),
            ],
            "argument 0: ≤ 10 requests per value per 1 s, 2 exceptions",
        ),
    ];
    for (rule_type, form, words) in cases {
        let url = format!("/apps/orders/rules/{rule_type}");
        let page = admin.get(&format!("{url}/new")).await;
        assert_eq!(page.status, StatusCode::OK);
        for (name, _) in &form {
            assert!(
                page.body
                    .contains(&format!(r#"id="field-{name}" name="{name}""#)),
                "{rule_type} {name}"
            );
        }
        let saved = admin.post(&url, &form).await;
        assert_eq!(
            saved.status,
            StatusCode::SEE_OTHER,
            "{rule_type}: {}",
            saved.body
        );
        let list = admin.get(&url).await;
        assert!(list.body.contains(words), "{rule_type}: {}", list.body);
        let rules = stored(&admin, rule_type).await;
        assert_eq!(rules.len(), 1, "{rule_type}");
        let id = rules[0]["id"].as_i64().unwrap();
        // The edit form shows the stored rule again.
        let edit = admin.get(&format!("{url}/{id}/edit")).await;
        assert_eq!(edit.status, StatusCode::OK);
        if rule_type == "paramFlow" {
            assert!(
                edit.body
                    .contains("42,int,100\nvip,java.lang.String,5</textarea>")
            );
        }
    }
    let rules = stored(&admin, "paramFlow").await;
    assert_eq!(
        rules[0]["rule"]["paramFlowItemList"],
        json!([{"object": "42", "classType": "int", "count": 100},
               {"object": "vip", "classType": "java.lang.String", "count": 5}])
    );

    // An engine error inside a nested field is shown next to the field it belongs to.
    let refused = admin
        .post(
            "/apps/orders/rules/paramFlow",
            &[
                ("resource", "GET:/item"),
                ("paramIdx", "0"),
                ("count", "10"),
                ("paramFlowItemList", "notanint,int,100"),
            ],
        )
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.body.contains(r#"id="error-paramFlowItemList""#));
    // A missing required field too.
    let refused = admin
        .post(
            "/apps/orders/rules/paramFlow",
            &[("resource", "GET:/item"), ("paramIdx", ""), ("count", "10")],
        )
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.body.contains(r#"id="error-paramIdx""#));
    assert_eq!(stored(&admin, "paramFlow").await.len(), 1);

    // An unknown type or app is refused.
    assert_eq!(
        admin.get("/apps/orders/rules/gateway").await.status,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(
        admin.get("/apps/nosuch/rules/flow").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn names_from_outside_are_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let d = start(&dir).await;
    let admin = Browser::login(&d.router(), "admin", PASSWORD).await;
    let evil = "<script>alert(1)</script>";
    let saved = admin.post(FLOW, &flow_form(evil, "5")).await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.body);
    let escaped = "&#60;script&#62;alert(1)&#60;/script&#62;";
    let id = stored(&admin, "flow").await[0]["id"].as_i64().unwrap();
    for path in [
        FLOW.to_owned(),
        format!("{FLOW}/{id}/edit"),
        "/apps/orders/history".to_owned(),
    ] {
        let page = admin.get(&path).await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(!page.body.contains(evil), "{path}");
        assert!(page.body.contains(escaped), "{path}");
    }
    // Prefilled from the query, and kept by a refused form.
    let page = admin
        .get(&format!(
            "{FLOW}/new?resource=%3Cscript%3Ealert(1)%3C%2Fscript%3E"
        ))
        .await;
    assert!(!page.body.contains(evil));
    assert!(page.body.contains(escaped));
    let refused = admin.post(FLOW, &flow_form(evil, "x")).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(!refused.body.contains(evil));
    assert!(refused.body.contains(escaped));
}

#[tokio::test]
async fn the_history_shows_a_diff_and_rolls_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = start(&dir).await;
    let admin = Browser::login(&d.router(), "admin", PASSWORD).await;
    assert!(
        admin
            .get("/apps/orders/history")
            .await
            .body
            .contains("No rule has changed yet")
    );
    admin.post(FLOW, &flow_form("GET:/a", "20")).await;
    let id = stored(&admin, "flow").await[0]["id"].as_i64().unwrap();
    admin
        .post(&format!("{FLOW}/{id}"), &flow_form("GET:/a", "30"))
        .await;
    admin.post(FLOW, &flow_form("GET:/b", "7")).await;

    let (_, entries) = admin.api("GET", "/api/apps/orders/history", None).await;
    let entries = entries.as_array().unwrap();
    assert_eq!(entries.len(), 3);
    let (create_b, update_a) = (
        entries[0]["id"].as_i64().unwrap(),
        entries[1]["id"].as_i64().unwrap(),
    );

    let page = admin.get("/apps/orders/history").await;
    assert_eq!(page.status, StatusCode::OK);
    let first = page
        .body
        .find(&format!(r#"<li class="change" data-id="{create_b}">"#))
        .unwrap();
    let second = page
        .body
        .find(&format!(r#"<li class="change" data-id="{update_a}">"#))
        .unwrap();
    assert!(first < second, "newest first");
    let update = &page.body[second..];
    assert!(update.contains("update"));
    assert!(update.contains("by admin"));
    assert!(update.contains("2027-01-15 08:00:00 UTC"));
    assert!(update.contains("<code>count</code>: <del>20.0</del> → <ins>30.0</ins>"));
    assert!(page.body[first..second].contains("Added rule"));
    assert!(page.body.contains(&format!(
        r#"<form class="rollback" method="post" action="/apps/orders/history/{update_a}/rollback">"#
    )));

    // Only one type.
    let degrade_only = admin.get("/apps/orders/history?type=degrade").await;
    assert!(!degrade_only.body.contains(r#"class="change""#));

    // Back to the list as it was before the update: rule a at 20, no rule b.
    let back = admin
        .post(&format!("/apps/orders/history/{update_a}/rollback"), &[])
        .await;
    assert_eq!(back.status, StatusCode::SEE_OTHER);
    assert_eq!(back.location.as_deref(), Some("/apps/orders/history"));
    let rules = stored(&admin, "flow").await;
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["id"], id);
    assert_eq!(rules[0]["rule"]["count"], 20.0);
    let page = admin.get("/apps/orders/history").await;
    assert!(page.body.contains("rollback"));
    assert!(
        page.body
            .contains(&format!("admin (rollback of change {update_a})"))
    );
    assert!(page.body.contains("Removed rule"));
}

#[tokio::test]
async fn a_viewer_sees_no_controls_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = start(&dir).await;
    let router = d.router();
    let admin = Browser::login(&router, "admin", PASSWORD).await;
    admin.post(FLOW, &flow_form("GET:/a", "20")).await;
    let id = stored(&admin, "flow").await[0]["id"].as_i64().unwrap();
    let viewer = admin.new_viewer().await;

    let list = viewer.get(FLOW).await;
    assert_eq!(list.status, StatusCode::OK);
    assert!(list.body.contains(&format!(r#"<tr data-rule-id="{id}">"#)));
    assert!(!list.body.contains("New rule"));
    assert!(!list.body.contains("/edit"));
    assert!(!list.body.contains("/delete"));
    let history = viewer.get("/apps/orders/history").await;
    assert_eq!(history.status, StatusCode::OK);
    assert!(history.body.contains(r#"class="change""#));
    assert!(!history.body.contains("rollback\""));
    assert!(!history.body.contains("Roll back"));

    let entry = admin.api("GET", "/api/apps/orders/history", None).await.1[0]["id"]
        .as_i64()
        .unwrap();
    assert_eq!(
        viewer.get(&format!("{FLOW}/new")).await.status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        viewer.get(&format!("{FLOW}/{id}/edit")).await.status,
        StatusCode::FORBIDDEN
    );
    for path in [
        FLOW.to_owned(),
        format!("{FLOW}/{id}"),
        format!("{FLOW}/{id}/delete"),
        format!("/apps/orders/history/{entry}/rollback"),
    ] {
        let refused = viewer.post(&path, &flow_form("GET:/a", "1")).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{path}");
    }
    let rules = stored(&admin, "flow").await;
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["rule"]["count"], 20.0);
    assert_eq!(
        admin
            .api("GET", "/api/apps/orders/history", None)
            .await
            .1
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn a_form_without_its_csrf_token_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = start(&dir).await;
    let admin = Browser::login(&d.router(), "admin", PASSWORD).await;
    let refused = admin
        .post_form(FLOW, &flow_form("GET:/a", "20"), false)
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(stored(&admin, "flow").await.is_empty());
    admin.post(FLOW, &flow_form("GET:/a", "20")).await;
    let id = stored(&admin, "flow").await[0]["id"].as_i64().unwrap();
    for path in [
        format!("{FLOW}/{id}"),
        format!("{FLOW}/{id}/delete"),
        "/apps/orders/history/1/rollback".to_owned(),
    ] {
        let refused = admin
            .post_form(&path, &flow_form("GET:/a", "1"), false)
            .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{path}");
        let wrong = admin
            .post_form(&path, &[("_csrf", "wrong"), ("count", "1")], false)
            .await;
        assert_eq!(wrong.status, StatusCode::FORBIDDEN, "{path}");
    }
    let rules = stored(&admin, "flow").await;
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["rule"]["count"], 20.0);
}

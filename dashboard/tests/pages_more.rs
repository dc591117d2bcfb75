//! The machines, resources, users and tokens pages through the router (`oneshot`, a real SQLite
//! file per test): what they show, that their forms (with the `_csrf` field) change what they say,
//! that strings from outside are escaped, and their refusals.

mod support;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use floodgate_dashboard::db::PushRecord;
use support::{Browser, NOW, PASSWORD, machine, start};

#[tokio::test]
async fn the_machines_page_shows_push_states_and_escapes_hostnames() {
    let dir = tempfile::tempdir().unwrap();
    let d = start(&dir).await;
    let admin = Browser::login(&d.router(), "admin", PASSWORD).await;
    let m = machine(&d, "orders", "::1", "<script>alert(1)</script>").await;
    d.state()
        .db
        .record_push(&PushRecord {
            machine_id: m.id,
            rule_type: "flow".into(),
            version: 3,
            ok: false,
            message: "cannot connect: refused <b>".into(),
            attempts: 2,
            at: NOW as i64,
            next_retry_at: None,
        })
        .await
        .unwrap();
    d.state()
        .db
        .record_push(&PushRecord {
            machine_id: m.id,
            rule_type: "paramFlow".into(),
            version: 1,
            ok: false,
            message: "not supported".into(),
            attempts: 1,
            at: NOW as i64,
            next_retry_at: None,
        })
        .await
        .unwrap();

    let page = admin.get("/apps/orders/machines").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let row = page
        .body
        .split(&format!("id=\"machine-{}\"", m.id))
        .nth(1)
        .expect("the machine's row")
        .split("</tr>")
        .next()
        .unwrap();
    assert!(row.contains("[::1]:1"), "IPv6 in brackets: {row}");
    assert!(row.contains("1.8.9"));
    assert!(row.contains("2027-01-15 08:00:00 UTC"), "{row}");
    assert!(row.contains("0 s ago"), "{row}");
    assert!(row.contains(">healthy<"), "{row}");
    assert!(row.contains(">failed<"), "{row}");
    assert!(row.contains("cannot connect: refused &#60;b&#62;"), "{row}");
    assert!(row.contains(">not supported<"), "{row}");
    assert!(row.contains(">unmanaged<"), "{row}");
    // The app manages no type yet, so nothing is behind.
    assert!(
        row.contains("class=\"drift\"") && row.contains(">in sync<"),
        "{row}"
    );
    assert!(row.contains(&format!("/apps/orders/machines/{}/resources", m.id)));
    // The hostname from outside is text, never markup.
    assert!(!page.body.contains("<script>alert(1)</script>"));
    assert!(
        row.contains("<td class=\"hostname\">&#60;script&#62;alert(1)&#60;/script&#62;</td>"),
        "{row}"
    );
    // An editor's push button, posting with the CSRF token, back to the page.
    assert!(page.body.contains("action=\"/apps/orders/machines/push\""));
    let pushed = admin.post("/apps/orders/machines/push", &[]).await;
    assert_eq!(pushed.status, StatusCode::SEE_OTHER);
    assert_eq!(pushed.location.as_deref(), Some("/apps/orders/machines"));
    // Unknown app: a 404 page.
    assert_eq!(
        admin.get("/apps/nope/machines").await.status,
        StatusCode::NOT_FOUND
    );
    d.shutdown().await;
}

#[tokio::test]
async fn a_machine_that_does_not_answer_gives_a_502_page() {
    let dir = tempfile::tempdir().unwrap();
    let d = start(&dir).await;
    let admin = Browser::login(&d.router(), "admin", PASSWORD).await;
    let m = machine(&d, "orders", "127.0.0.1", "h").await;
    for view in ["list", "tree"] {
        let page = admin
            .get(&format!(
                "/apps/orders/machines/{}/resources?view={view}",
                m.id
            ))
            .await;
        assert_eq!(page.status, StatusCode::BAD_GATEWAY, "{}", page.body);
        assert!(
            page.body.contains("The machine did not answer"),
            "{}",
            page.body
        );
        assert!(page.body.contains("<html"), "an HTML page: {}", page.body);
    }
    assert_eq!(
        admin
            .get("/apps/orders/machines/999/resources")
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    // The breakers page says the same of the machine, and still answers.
    let breakers = admin.get("/apps/orders/breakers").await;
    assert_eq!(breakers.status, StatusCode::OK);
    assert!(
        breakers.body.contains("The machine did not answer"),
        "{}",
        breakers.body
    );
    // The resource page of a resource without data or rules still renders.
    let resource = admin.get("/apps/orders/resources/GET%3A%2Fa%20b").await;
    assert_eq!(resource.status, StatusCode::OK, "{}", resource.body);
    assert!(resource.body.contains("GET:/a b"));
    assert!(
        resource.body.contains("resource=GET%3A%2Fa%20b\""),
        "{}",
        resource.body
    );
    d.shutdown().await;
}

#[tokio::test]
async fn users_are_managed_by_admins_through_the_forms() {
    let dir = tempfile::tempdir().unwrap();
    let d = start(&dir).await;
    let router = d.router();
    let admin = Browser::login(&router, "admin", PASSWORD).await;

    let page = admin.get("/users").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("name=\"_csrf\""));

    // A bad form: the errors next to their fields, nobody created.
    let bad = admin
        .post(
            "/users",
            &[
                ("username", "bad name!"),
                ("password", "short"),
                ("role", "boss"),
            ],
        )
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    for field in ["username", "password", "role"] {
        assert!(
            bad.body
                .contains(&format!("class=\"error\" id=\"error-{field}\"")),
            "{field}: {}",
            bad.body
        );
    }
    assert_eq!(d.state().db.user_count().await.unwrap(), 1);

    let created = admin
        .post(
            "/users",
            &[
                ("username", "vera"),
                ("password", "viewer password 1"),
                ("role", "viewer"),
            ],
        )
        .await;
    assert_eq!(created.status, StatusCode::SEE_OTHER, "{}", created.body);
    assert_eq!(created.location.as_deref(), Some("/users"));
    let vera = d
        .state()
        .db
        .user_by_name("vera")
        .await
        .unwrap()
        .expect("created");
    assert_eq!(vera.role, "viewer");
    assert!(admin.get("/users").await.body.contains(">vera"));
    // The same name again: an error at the name.
    let taken = admin
        .post(
            "/users",
            &[
                ("username", "vera"),
                ("password", "viewer password 1"),
                ("role", "viewer"),
            ],
        )
        .await;
    assert_eq!(taken.status, StatusCode::CONFLICT);
    assert!(taken.body.contains("id=\"error-username\""));

    // A viewer is refused the page and every form.
    let viewer = Browser::login(&router, "vera", "viewer password 1").await;
    assert_eq!(viewer.get("/users").await.status, StatusCode::FORBIDDEN);
    let attempt = viewer
        .post(
            "/users",
            &[
                ("username", "eve"),
                ("password", "eve password 12"),
                ("role", "admin"),
            ],
        )
        .await;
    assert_eq!(attempt.status, StatusCode::FORBIDDEN);
    assert_eq!(
        viewer
            .post(&format!("/users/{}/role", vera.id), &[("role", "admin")])
            .await
            .status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        viewer.post("/apps/orders/machines/push", &[]).await.status,
        StatusCode::FORBIDDEN
    );
    // Without the CSRF field, even the admin is refused.
    let no_csrf = admin
        .send(
            Request::post(format!("/users/{}/delete", vera.id))
                .header("cookie", &admin.cookie)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(Body::from(""))
                .unwrap(),
        )
        .await;
    assert_eq!(no_csrf.status, StatusCode::FORBIDDEN);

    // Role, password, delete.
    let promoted = admin
        .post(&format!("/users/{}/role", vera.id), &[("role", "editor")])
        .await;
    assert_eq!(promoted.status, StatusCode::SEE_OTHER);
    assert_eq!(
        d.state().db.user(vera.id).await.unwrap().unwrap().role,
        "editor"
    );
    let short = admin
        .post(
            &format!("/users/{}/password", vera.id),
            &[("password", "x")],
        )
        .await;
    assert_eq!(short.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        short
            .body
            .contains(&format!("id=\"error-password-{}\"", vera.id))
    );
    let reset = admin
        .post(
            &format!("/users/{}/password", vera.id),
            &[("password", "a new password 2")],
        )
        .await;
    assert_eq!(reset.status, StatusCode::SEE_OTHER);
    Browser::login(&router, "vera", "a new password 2").await;
    // The last admin is neither demoted nor deleted.
    let me = d.state().db.user_by_name("admin").await.unwrap().unwrap();
    let demote = admin
        .post(&format!("/users/{}/role", me.id), &[("role", "viewer")])
        .await;
    assert_eq!(demote.status, StatusCode::CONFLICT);
    assert!(demote.body.contains("the last admin cannot be demoted"));
    let delete_me = admin.post(&format!("/users/{}/delete", me.id), &[]).await;
    assert_eq!(delete_me.status, StatusCode::CONFLICT);
    assert_eq!(me.role, "admin");
    let deleted = admin.post(&format!("/users/{}/delete", vera.id), &[]).await;
    assert_eq!(deleted.status, StatusCode::SEE_OTHER);
    assert!(d.state().db.user(vera.id).await.unwrap().is_none());
    d.shutdown().await;
}

#[tokio::test]
async fn tokens_are_created_once_shown_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let d = start(&dir).await;
    let router = d.router();
    let admin = Browser::login(&router, "admin", PASSWORD).await;
    let empty = admin.get("/tokens").await;
    assert_eq!(empty.status, StatusCode::OK);
    assert!(empty.body.contains("id=\"no-tokens\""));

    let bad = admin.post("/tokens", &[("name", "  ")]).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(bad.body.contains("id=\"error-name\""));

    let created = admin.post("/tokens", &[("name", "ci <deploy>")]).await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.body);
    let secret = created
        .body
        .split("<code id=\"new-token\">")
        .nth(1)
        .unwrap()
        .split("</code>")
        .next()
        .unwrap()
        .to_owned();
    assert!(secret.starts_with("fgt_"), "{secret}");
    assert!(
        created.body.contains("ci &#60;deploy&#62;"),
        "{}",
        created.body
    );
    // The secret works, and is not shown again.
    let by_token = admin
        .send(
            Request::get("/api/tokens")
                .header("authorization", format!("Bearer {secret}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(by_token.status, StatusCode::OK);
    let listed = admin.get("/tokens").await;
    assert!(!listed.body.contains(&secret));
    let id = d.state().db.tokens_of_user(1).await.unwrap()[0].id;
    assert!(
        listed
            .body
            .contains(&format!("action=\"/tokens/{id}/delete\""))
    );

    let deleted = admin.post(&format!("/tokens/{id}/delete"), &[]).await;
    assert_eq!(deleted.status, StatusCode::SEE_OTHER);
    assert_eq!(deleted.location.as_deref(), Some("/tokens"));
    assert!(d.state().db.tokens_of_user(1).await.unwrap().is_empty());
    assert_eq!(
        admin
            .post(&format!("/tokens/{id}/delete"), &[])
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    d.shutdown().await;
}

/// An app name with a space, a slash and a plus: every link and the live charts' URL keep it one
/// path segment (a `+` read back as a `+`, a `/` not splitting the path).
#[tokio::test]
async fn app_names_are_one_path_segment_in_every_link() {
    let dir = tempfile::tempdir().unwrap();
    let d = start(&dir).await;
    let admin = Browser::login(&d.router(), "admin", PASSWORD).await;
    machine(&d, "my shop/+1", "127.0.0.1", "h").await;
    let apps = admin.get("/apps").await;
    assert!(
        apps.body.contains("href=\"/apps/my%20shop%2F%2B1\""),
        "{}",
        apps.body
    );
    let page = admin.get("/apps/my%20shop%2F%2B1").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(
        page.body.contains("/apps/my%20shop%2F%2B1/charts?range=5m"),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains("href=\"/apps/my%20shop%2F%2B1/machines\"")
    );
    let charts = admin.get("/apps/my%20shop%2F%2B1/charts?range=5m").await;
    assert_eq!(charts.status, StatusCode::OK);
    d.shutdown().await;
}

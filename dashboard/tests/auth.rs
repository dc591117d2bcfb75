//! Sign-in, sessions, CSRF, roles, API tokens and login throttling, through the router, against a
//! real SQLite file per test.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use floodgate_core::ManualClock;
use floodgate_dashboard::{Config, Dashboard};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tempfile::TempDir;
use tower::ServiceExt;

const ADMIN_PASSWORD: &str = "correct-horse-battery";
const T0: u64 = 1_700_000_000_000;

struct Harness {
    _tmp: TempDir,
    dashboard: Dashboard,
    clock: ManualClock,
    app: Router,
}

async fn start_with(admin_password: Option<&str>) -> Harness {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut config = Config::for_database(format!(
        "sqlite://{}",
        tmp.path().join("db.sqlite").display()
    ));
    config.admin_password = admin_password.map(str::to_owned);
    let clock = ManualClock::new(T0);
    let dashboard = Dashboard::start_with_clock(config, Arc::new(clock.clone()))
        .await
        .expect("dashboard starts");
    let app = dashboard.router();
    Harness {
        _tmp: tmp,
        dashboard,
        clock,
        app,
    }
}

async fn start() -> Harness {
    start_with(Some(ADMIN_PASSWORD)).await
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Value,
    text: String,
}

impl Answer {
    fn set_cookie(&self) -> Option<&str> {
        self.headers
            .get(header::SET_COOKIE)
            .and_then(|v| v.to_str().ok())
    }

    /// `floodgate_session=…` of the Set-Cookie header, ready for a Cookie header.
    fn cookie(&self) -> String {
        self.set_cookie()
            .expect("a Set-Cookie header")
            .split(';')
            .next()
            .expect("a cookie")
            .to_owned()
    }
}

/// A request to send: method, path, optional JSON body, headers.
struct Call {
    request: axum::http::request::Builder,
    body: Body,
}

fn call(method: Method, path: &str) -> Call {
    Call {
        request: Request::builder()
            .method(method)
            .uri(path)
            .extension(ConnectInfo(SocketAddr::from(([10, 0, 0, 1], 40_000)))),
        body: Body::empty(),
    }
}

impl Call {
    fn json(mut self, value: Value) -> Call {
        self.request = self
            .request
            .header(header::CONTENT_TYPE, "application/json");
        self.body = Body::from(value.to_string());
        self
    }

    fn form(mut self, body: &str) -> Call {
        self.request = self
            .request
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        self.body = Body::from(body.to_owned());
        self
    }

    fn header(mut self, name: &str, value: &str) -> Call {
        self.request = self.request.header(name, value);
        self
    }

    fn session(self, s: &Session) -> Call {
        self.header("cookie", &s.cookie)
            .header("x-csrf-token", &s.csrf)
    }

    fn cookie_only(self, s: &Session) -> Call {
        self.header("cookie", &s.cookie)
    }

    fn bearer(self, token: &str) -> Call {
        self.header("authorization", &format!("Bearer {token}"))
    }

    fn client_ip(mut self, ip: [u8; 4]) -> Call {
        self.request = self
            .request
            .extension(ConnectInfo(SocketAddr::from((ip, 40_000))));
        self
    }

    async fn send(self, app: &Router) -> Answer {
        let request = self.request.body(self.body).expect("request");
        let response = app.clone().oneshot(request).await.expect("response");
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Answer {
            status,
            headers,
            body,
            text,
        }
    }
}

#[derive(Debug, Clone)]
struct Session {
    cookie: String,
    csrf: String,
}

async fn login(app: &Router, username: &str, password: &str) -> Answer {
    call(Method::POST, "/auth/login")
        .json(json!({"username": username, "password": password}))
        .send(app)
        .await
}

async fn sign_in(app: &Router, username: &str, password: &str) -> Session {
    let answer = login(app, username, password).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    Session {
        cookie: answer.cookie(),
        csrf: answer.body["csrfToken"]
            .as_str()
            .expect("csrfToken")
            .to_owned(),
    }
}

async fn create_user(app: &Router, admin: &Session, username: &str, role: &str) -> Value {
    let answer = call(Method::POST, "/api/users")
        .session(admin)
        .json(json!({"username": username, "password": "a-long-password", "role": role}))
        .send(app)
        .await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text);
    answer.body
}

async fn usernames(app: &Router, admin: &Session) -> Vec<String> {
    let answer = call(Method::GET, "/api/users")
        .session(admin)
        .send(app)
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    answer
        .body
        .as_array()
        .expect("a list")
        .iter()
        .map(|u| u["username"].as_str().expect("username").to_owned())
        .collect()
}

#[tokio::test]
async fn a_fresh_database_without_a_password_gets_a_generated_one_and_no_default() {
    let h = start_with(None).await;
    let generated = h
        .dashboard
        .generated_password()
        .expect("a generated password")
        .to_owned();
    assert!(generated.len() >= 12);
    for (user, password) in [
        ("admin", "sentinel"),
        ("sentinel", "sentinel"),
        ("admin", ""),
    ] {
        let answer = login(&h.app, user, password).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{user}/{password}");
        assert!(answer.set_cookie().is_none());
    }
    let answer = login(&h.app, "admin", &generated).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    assert_eq!(answer.body["username"], "admin");
    assert_eq!(answer.body["role"], "admin");
}

#[tokio::test]
async fn a_given_admin_password_works_and_is_not_reported_as_generated() {
    let h = start().await;
    assert!(h.dashboard.generated_password().is_none());
    let stored = h
        .dashboard
        .state()
        .db
        .user_by_name("admin")
        .await
        .expect("query")
        .expect("the first admin");
    assert_eq!(stored.role, "admin");
    assert!(
        stored.password_hash.starts_with("$argon2id$v=19$"),
        "{}",
        stored.password_hash
    );
    assert!(!stored.password_hash.contains(ADMIN_PASSWORD));
    sign_in(&h.app, "admin", ADMIN_PASSWORD).await;
}

#[tokio::test]
async fn a_short_admin_password_refuses_to_start() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut config = Config::for_database(format!(
        "sqlite://{}",
        tmp.path().join("db.sqlite").display()
    ));
    config.admin_password = Some("short".to_owned());
    let err = Dashboard::start_with_clock(config, Arc::new(ManualClock::new(T0)))
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("12"), "{err}");
}

#[tokio::test]
async fn the_admin_password_flag_is_ignored_once_users_exist() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", tmp.path().join("db.sqlite").display());
    let mut config = Config::for_database(url.clone());
    config.admin_password = Some(ADMIN_PASSWORD.to_owned());
    let first = Dashboard::start_with_clock(config, Arc::new(ManualClock::new(T0)))
        .await
        .expect("starts");
    first.shutdown().await;
    let mut config = Config::for_database(url);
    config.admin_password = Some("another-password-entirely".to_owned());
    let second = Dashboard::start_with_clock(config, Arc::new(ManualClock::new(T0)))
        .await
        .expect("starts again");
    assert!(second.generated_password().is_none());
    let app = second.router();
    assert_eq!(
        login(&app, "admin", "another-password-entirely")
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    sign_in(&app, "admin", ADMIN_PASSWORD).await;
}

#[tokio::test]
async fn login_sets_a_strict_http_only_cookie_and_a_new_session_each_time() {
    let h = start().await;
    let first = login(&h.app, "admin", ADMIN_PASSWORD).await;
    assert_eq!(first.status, StatusCode::OK);
    let set_cookie = first.set_cookie().expect("Set-Cookie");
    assert!(set_cookie.starts_with("floodgate_session="), "{set_cookie}");
    assert!(set_cookie.contains("HttpOnly"), "{set_cookie}");
    assert!(set_cookie.contains("SameSite=Strict"), "{set_cookie}");
    assert!(set_cookie.contains("Path=/"), "{set_cookie}");
    assert!(set_cookie.contains("Max-Age=28800"), "{set_cookie}");
    assert!(!set_cookie.contains("Secure"), "{set_cookie}");
    let second = login(&h.app, "admin", ADMIN_PASSWORD).await;
    assert_ne!(first.cookie(), second.cookie());
    assert_ne!(first.body["csrfToken"], second.body["csrfToken"]);
    // Both are sessions of their own (the second login presented no cookie).
    for answer in [&first, &second] {
        let me = call(Method::GET, "/api/me")
            .header("cookie", &answer.cookie())
            .send(&h.app)
            .await;
        assert_eq!(me.status, StatusCode::OK);
        assert_eq!(me.body["username"], "admin");
        assert_eq!(me.body["role"], "admin");
        assert_eq!(me.body["csrfToken"], answer.body["csrfToken"]);
    }
}

#[tokio::test]
async fn secure_cookies_are_marked_secure() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut config = Config::for_database(format!(
        "sqlite://{}",
        tmp.path().join("db.sqlite").display()
    ));
    config.admin_password = Some(ADMIN_PASSWORD.to_owned());
    config.secure_cookies = true;
    let dashboard = Dashboard::start_with_clock(config, Arc::new(ManualClock::new(T0)))
        .await
        .expect("starts");
    let answer = login(&dashboard.router(), "admin", ADMIN_PASSWORD).await;
    assert!(
        answer
            .set_cookie()
            .expect("Set-Cookie")
            .contains("; Secure")
    );
}

#[tokio::test]
async fn a_cookie_presented_at_login_is_not_kept() {
    let h = start().await;
    let planted = sign_in(&h.app, "admin", ADMIN_PASSWORD).await;
    let answer = call(Method::POST, "/auth/login")
        .header("cookie", &planted.cookie)
        .json(json!({"username": "admin", "password": ADMIN_PASSWORD}))
        .send(&h.app)
        .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_ne!(answer.cookie(), planted.cookie);
    let old = call(Method::GET, "/api/me")
        .cookie_only(&planted)
        .send(&h.app)
        .await;
    assert_eq!(old.status, StatusCode::UNAUTHORIZED);
    let new = call(Method::GET, "/api/me")
        .header("cookie", &answer.cookie())
        .send(&h.app)
        .await;
    assert_eq!(new.status, StatusCode::OK);
    // A made-up cookie is no session either.
    let forged = call(Method::GET, "/api/me")
        .header("cookie", "floodgate_session=00112233")
        .send(&h.app)
        .await;
    assert_eq!(forged.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn form_login_redirects_and_a_failed_one_goes_back_to_the_login_page() {
    let h = start().await;
    let page = call(Method::GET, "/login").send(&h.app).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.text.contains("action=\"/auth/login\""),
        "{}",
        page.text
    );
    let bad = call(Method::POST, "/auth/login")
        .form("username=admin&password=wrong-password-here")
        .send(&h.app)
        .await;
    assert_eq!(bad.status, StatusCode::SEE_OTHER);
    assert_eq!(bad.headers[header::LOCATION], "/login?error=1");
    assert!(bad.set_cookie().is_none());
    let good = call(Method::POST, "/auth/login")
        .form(&format!("username=admin&password={ADMIN_PASSWORD}"))
        .send(&h.app)
        .await;
    assert_eq!(good.status, StatusCode::SEE_OTHER);
    assert_eq!(good.headers[header::LOCATION], "/");
    let me = call(Method::GET, "/api/me")
        .header("cookie", &good.cookie())
        .send(&h.app)
        .await;
    assert_eq!(me.status, StatusCode::OK);
}

#[tokio::test]
async fn unknown_user_and_wrong_password_get_the_same_answer() {
    let h = start().await;
    let unknown = login(&h.app, "nobody", "whatever-password").await;
    let wrong = login(&h.app, "admin", "whatever-password").await;
    assert_eq!(unknown.status, StatusCode::UNAUTHORIZED);
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert_eq!(unknown.body, wrong.body);
}

#[tokio::test]
async fn without_a_session_the_api_and_unknown_paths_are_refused() {
    let h = start().await;
    for path in [
        "/api/me",
        "/api/users",
        "/api/tokens",
        "/api/nothing-here",
        "/no/such/page",
    ] {
        let answer = call(Method::GET, path).send(&h.app).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(answer.body["error"], "sign-in required", "{path}");
    }
    let post = call(Method::POST, "/api/users")
        .json(json!({"username": "mallory", "password": "a-long-password", "role": "admin"}))
        .send(&h.app)
        .await;
    assert_eq!(post.status, StatusCode::UNAUTHORIZED);
    // A wrong bearer token is refused too, even beside a good cookie.
    let admin = sign_in(&h.app, "admin", ADMIN_PASSWORD).await;
    let answer = call(Method::GET, "/api/me")
        .cookie_only(&admin)
        .bearer("fgt_0000")
        .send(&h.app)
        .await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    // Signed in, an unknown path is a 404.
    let answer = call(Method::GET, "/no/such/page")
        .cookie_only(&admin)
        .send(&h.app)
        .await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_browser_asking_for_a_page_without_a_session_is_sent_to_login() {
    let h = start().await;
    let page = call(Method::GET, "/apps")
        .header("accept", "text/html,application/xhtml+xml")
        .send(&h.app)
        .await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);
    assert_eq!(page.headers[header::LOCATION], "/login");
    let api = call(Method::GET, "/api/me")
        .header("accept", "text/html")
        .send(&h.app)
        .await;
    assert_eq!(api.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_registry_stays_open() {
    let h = start().await;
    let answer = call(
        Method::GET,
        "/registry/machine?app=demo&ip=127.0.0.1&port=8720&hostname=h1&v=1.8.6",
    )
    .send(&h.app)
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    assert_eq!(answer.body["success"], true);
}

#[tokio::test]
async fn a_session_write_needs_the_csrf_token() {
    let h = start().await;
    let admin = sign_in(&h.app, "admin", ADMIN_PASSWORD).await;
    let new_user = json!({"username": "eve", "password": "a-long-password", "role": "viewer"});
    let missing = call(Method::POST, "/api/users")
        .cookie_only(&admin)
        .json(new_user.clone())
        .send(&h.app)
        .await;
    assert_eq!(missing.status, StatusCode::FORBIDDEN);
    let wrong = call(Method::POST, "/api/users")
        .cookie_only(&admin)
        .header("x-csrf-token", "not-the-token")
        .json(new_user.clone())
        .send(&h.app)
        .await;
    assert_eq!(wrong.status, StatusCode::FORBIDDEN);
    // Another session's token is wrong too.
    let other = sign_in(&h.app, "admin", ADMIN_PASSWORD).await;
    let crossed = call(Method::POST, "/api/users")
        .cookie_only(&admin)
        .header("x-csrf-token", &other.csrf)
        .json(new_user.clone())
        .send(&h.app)
        .await;
    assert_eq!(crossed.status, StatusCode::FORBIDDEN);
    assert_eq!(usernames(&h.app, &admin).await, ["admin"]);
    // Logout is a write as well.
    let logout = call(Method::POST, "/auth/logout")
        .cookie_only(&admin)
        .send(&h.app)
        .await;
    assert_eq!(logout.status, StatusCode::FORBIDDEN);
    assert_eq!(
        call(Method::GET, "/api/me")
            .cookie_only(&admin)
            .send(&h.app)
            .await
            .status,
        StatusCode::OK
    );
    // With it, the write goes through.
    let ok = call(Method::POST, "/api/users")
        .session(&admin)
        .json(new_user)
        .send(&h.app)
        .await;
    assert_eq!(ok.status, StatusCode::CREATED, "{}", ok.text);
    assert_eq!(ok.body["username"], "eve");
    assert_eq!(ok.body["role"], "viewer");
    assert!(ok.body.get("passwordHash").is_none());
    assert_eq!(usernames(&h.app, &admin).await, ["admin", "eve"]);
}

#[tokio::test]
async fn viewers_and_editors_cannot_manage_users() {
    let h = start().await;
    let admin = sign_in(&h.app, "admin", ADMIN_PASSWORD).await;
    create_user(&h.app, &admin, "vera", "viewer").await;
    create_user(&h.app, &admin, "ed", "editor").await;
    for name in ["vera", "ed"] {
        let s = sign_in(&h.app, name, "a-long-password").await;
        let answer = call(Method::POST, "/api/users")
            .session(&s)
            .json(json!({"username": "mallory", "password": "a-long-password", "role": "admin"}))
            .send(&h.app)
            .await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{name}");
        let list = call(Method::GET, "/api/users")
            .session(&s)
            .send(&h.app)
            .await;
        assert_eq!(list.status, StatusCode::FORBIDDEN, "{name}");
        let me = call(Method::GET, "/api/me").session(&s).send(&h.app).await;
        assert_eq!(me.status, StatusCode::OK);
        assert_eq!(me.body["username"], name);
    }
    assert_eq!(usernames(&h.app, &admin).await, ["admin", "ed", "vera"]);
}

#[tokio::test]
async fn user_input_is_validated_and_names_are_unique() {
    let h = start().await;
    let admin = sign_in(&h.app, "admin", ADMIN_PASSWORD).await;
    let short = call(Method::POST, "/api/users")
        .session(&admin)
        .json(json!({"username": "bob", "password": "short", "role": "viewer"}))
        .send(&h.app)
        .await;
    assert_eq!(short.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(short.body["field"], "password");
    assert!(
        short.text.contains("at least 12 characters"),
        "{}",
        short.text
    );
    let bad = call(Method::POST, "/api/users")
        .session(&admin)
        .json(json!({"username": "bob smith", "password": "a-long-password", "role": "root"}))
        .send(&h.app)
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    let fields: Vec<&str> = bad.body["fields"]
        .as_array()
        .expect("fields")
        .iter()
        .filter_map(|f| f["field"].as_str())
        .collect();
    assert_eq!(fields, ["username", "role"]);
    let not_json = call(Method::POST, "/api/users")
        .session(&admin)
        .json(json!({"username": "bob"}))
        .send(&h.app)
        .await;
    assert_eq!(not_json.status, StatusCode::UNPROCESSABLE_ENTITY);
    let taken = call(Method::POST, "/api/users")
        .session(&admin)
        .json(json!({"username": "admin", "password": "a-long-password", "role": "viewer"}))
        .send(&h.app)
        .await;
    assert_eq!(taken.status, StatusCode::CONFLICT);
    assert_eq!(usernames(&h.app, &admin).await, ["admin"]);
}

#[tokio::test]
async fn a_bearer_token_works_without_csrf_and_stops_when_deleted() {
    let h = start().await;
    let admin = sign_in(&h.app, "admin", ADMIN_PASSWORD).await;
    let created = call(Method::POST, "/api/tokens")
        .session(&admin)
        .json(json!({"name": "ci"}))
        .send(&h.app)
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    let token = created.body["token"].as_str().expect("token").to_owned();
    assert!(token.starts_with("fgt_"));
    assert_eq!(created.body["name"], "ci");
    let id = created.body["id"].as_i64().expect("id");

    let me = call(Method::GET, "/api/me")
        .bearer(&token)
        .send(&h.app)
        .await;
    assert_eq!(me.status, StatusCode::OK);
    assert_eq!(me.body["username"], "admin");
    assert_eq!(me.body["csrfToken"], Value::Null);
    // A write with the token needs no CSRF token.
    let write = call(Method::POST, "/api/users")
        .bearer(&token)
        .json(json!({"username": "bot", "password": "a-long-password", "role": "viewer"}))
        .send(&h.app)
        .await;
    assert_eq!(write.status, StatusCode::CREATED, "{}", write.text);

    let list = call(Method::GET, "/api/tokens")
        .session(&admin)
        .send(&h.app)
        .await;
    assert_eq!(list.status, StatusCode::OK);
    let tokens = list.body.as_array().expect("a list");
    assert_eq!(tokens.len(), 1);
    assert_eq!(tokens[0]["id"], id);
    assert_eq!(tokens[0]["name"], "ci");
    assert_eq!(tokens[0]["createdAt"], T0);
    assert_eq!(tokens[0]["lastUsedAt"], T0);
    assert!(
        !list.text.contains(&token[4..]),
        "the secret is never listed"
    );

    // Another user cannot delete it.
    let bot = sign_in(&h.app, "bot", "a-long-password").await;
    let theirs = call(Method::DELETE, &format!("/api/tokens/{id}"))
        .session(&bot)
        .send(&h.app)
        .await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND);
    assert_eq!(
        call(Method::GET, "/api/me")
            .bearer(&token)
            .send(&h.app)
            .await
            .status,
        StatusCode::OK
    );

    let deleted = call(Method::DELETE, &format!("/api/tokens/{id}"))
        .session(&admin)
        .send(&h.app)
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let after = call(Method::GET, "/api/me")
        .bearer(&token)
        .send(&h.app)
        .await;
    assert_eq!(after.status, StatusCode::UNAUTHORIZED);
    let again = call(Method::DELETE, &format!("/api/tokens/{id}"))
        .session(&admin)
        .send(&h.app)
        .await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_token_acts_with_its_users_current_role_and_dies_with_the_user() {
    let h = start().await;
    let admin = sign_in(&h.app, "admin", ADMIN_PASSWORD).await;
    let user = create_user(&h.app, &admin, "ops", "admin").await;
    let id = user["id"].as_i64().expect("id");
    let ops = sign_in(&h.app, "ops", "a-long-password").await;
    let token = call(Method::POST, "/api/tokens")
        .session(&ops)
        .json(json!({"name": "script"}))
        .send(&h.app)
        .await
        .body["token"]
        .as_str()
        .expect("token")
        .to_owned();
    assert_eq!(
        call(Method::GET, "/api/users")
            .bearer(&token)
            .send(&h.app)
            .await
            .status,
        StatusCode::OK
    );
    let demote = call(Method::PUT, &format!("/api/users/{id}"))
        .session(&admin)
        .json(json!({"role": "viewer"}))
        .send(&h.app)
        .await;
    assert_eq!(demote.status, StatusCode::OK, "{}", demote.text);
    assert_eq!(demote.body["role"], "viewer");
    assert_eq!(
        call(Method::GET, "/api/users")
            .bearer(&token)
            .send(&h.app)
            .await
            .status,
        StatusCode::FORBIDDEN
    );
    // The role change ended ops's session.
    assert_eq!(
        call(Method::GET, "/api/me")
            .session(&ops)
            .send(&h.app)
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    let deleted = call(Method::DELETE, &format!("/api/users/{id}"))
        .session(&admin)
        .send(&h.app)
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    assert_eq!(
        call(Method::GET, "/api/me")
            .bearer(&token)
            .send(&h.app)
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(usernames(&h.app, &admin).await, ["admin"]);
}

#[tokio::test]
async fn a_session_expires_after_its_ttl() {
    let h = start().await;
    let admin = sign_in(&h.app, "admin", ADMIN_PASSWORD).await;
    h.clock.advance(Duration::from_secs(8 * 3600 - 1));
    assert_eq!(
        call(Method::GET, "/api/me")
            .session(&admin)
            .send(&h.app)
            .await
            .status,
        StatusCode::OK
    );
    h.clock.advance(Duration::from_secs(1));
    assert_eq!(
        call(Method::GET, "/api/me")
            .session(&admin)
            .send(&h.app)
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        h.dashboard
            .state()
            .db
            .session_count(1)
            .await
            .expect("count"),
        0,
        "an expired session is deleted when met"
    );
    // Going back in time does not revive it: it was deleted when met expired.
    h.clock.set(T0);
    assert_eq!(
        call(Method::GET, "/api/me")
            .session(&admin)
            .send(&h.app)
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn logout_ends_the_session() {
    let h = start().await;
    let admin = sign_in(&h.app, "admin", ADMIN_PASSWORD).await;
    let other = sign_in(&h.app, "admin", ADMIN_PASSWORD).await;
    let db = &h.dashboard.state().db;
    assert_eq!(db.session_count(1).await.expect("count"), 2);
    let out = call(Method::POST, "/auth/logout")
        .session(&admin)
        .send(&h.app)
        .await;
    assert_eq!(out.status, StatusCode::NO_CONTENT);
    let cleared = out.set_cookie().expect("Set-Cookie");
    assert!(cleared.starts_with("floodgate_session=;"), "{cleared}");
    assert!(cleared.contains("Max-Age=0"), "{cleared}");
    assert_eq!(
        call(Method::GET, "/api/me")
            .session(&admin)
            .send(&h.app)
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    // Only that session, and its row is gone.
    assert_eq!(db.session_count(1).await.expect("count"), 1);
    assert_eq!(
        call(Method::GET, "/api/me")
            .session(&other)
            .send(&h.app)
            .await
            .status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn changing_the_password_ends_the_other_sessions() {
    let h = start().await;
    let here = sign_in(&h.app, "admin", ADMIN_PASSWORD).await;
    let elsewhere = sign_in(&h.app, "admin", ADMIN_PASSWORD).await;
    let wrong = call(Method::PUT, "/api/me/password")
        .session(&here)
        .json(json!({"current": "not-my-password", "new": "a-brand-new-password"}))
        .send(&h.app)
        .await;
    assert_eq!(wrong.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(wrong.body["field"], "current");
    let short = call(Method::PUT, "/api/me/password")
        .session(&here)
        .json(json!({"current": ADMIN_PASSWORD, "new": "short"}))
        .send(&h.app)
        .await;
    assert_eq!(short.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(short.body["field"], "new");
    assert_eq!(
        call(Method::GET, "/api/me")
            .session(&elsewhere)
            .send(&h.app)
            .await
            .status,
        StatusCode::OK
    );
    let changed = call(Method::PUT, "/api/me/password")
        .session(&here)
        .json(json!({"current": ADMIN_PASSWORD, "new": "a-brand-new-password"}))
        .send(&h.app)
        .await;
    assert_eq!(changed.status, StatusCode::NO_CONTENT, "{}", changed.text);
    assert_eq!(
        call(Method::GET, "/api/me")
            .session(&elsewhere)
            .send(&h.app)
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        call(Method::GET, "/api/me")
            .session(&here)
            .send(&h.app)
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        login(&h.app, "admin", ADMIN_PASSWORD).await.status,
        StatusCode::UNAUTHORIZED
    );
    sign_in(&h.app, "admin", "a-brand-new-password").await;
}

#[tokio::test]
async fn an_admin_setting_a_password_ends_all_of_that_users_sessions() {
    let h = start().await;
    let admin = sign_in(&h.app, "admin", ADMIN_PASSWORD).await;
    let id = create_user(&h.app, &admin, "ed", "editor").await["id"]
        .as_i64()
        .expect("id");
    let ed = sign_in(&h.app, "ed", "a-long-password").await;
    let answer = call(Method::PUT, &format!("/api/users/{id}"))
        .session(&admin)
        .json(json!({"password": "another-long-password"}))
        .send(&h.app)
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    assert_eq!(answer.body["role"], "editor");
    assert_eq!(
        call(Method::GET, "/api/me")
            .session(&ed)
            .send(&h.app)
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    sign_in(&h.app, "ed", "another-long-password").await;
    let missing = call(Method::PUT, "/api/users/9999")
        .session(&admin)
        .json(json!({"role": "viewer"}))
        .send(&h.app)
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn five_wrong_passwords_then_even_the_right_one_is_throttled_until_the_window_ends() {
    let h = start().await;
    for _ in 0..5 {
        assert_eq!(
            login(&h.app, "admin", "wrong-password!").await.status,
            StatusCode::UNAUTHORIZED
        );
    }
    let throttled = login(&h.app, "admin", ADMIN_PASSWORD).await;
    assert_eq!(throttled.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(throttled.headers[header::RETRY_AFTER], "900");
    assert!(throttled.set_cookie().is_none());
    // From another address too: the username is throttled.
    let elsewhere = call(Method::POST, "/auth/login")
        .client_ip([10, 9, 9, 9])
        .json(json!({"username": "admin", "password": ADMIN_PASSWORD}))
        .send(&h.app)
        .await;
    assert_eq!(elsewhere.status, StatusCode::TOO_MANY_REQUESTS);
    h.clock.advance(Duration::from_secs(10 * 60));
    let later = login(&h.app, "admin", ADMIN_PASSWORD).await;
    assert_eq!(later.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(later.headers[header::RETRY_AFTER], "300");
    h.clock.advance(Duration::from_secs(5 * 60));
    sign_in(&h.app, "admin", ADMIN_PASSWORD).await;
}

#[tokio::test]
async fn one_address_trying_many_usernames_is_throttled() {
    let h = start().await;
    for i in 0..20 {
        let answer = call(Method::POST, "/auth/login")
            .client_ip([192, 0, 2, 7])
            .json(json!({"username": format!("guess{i}"), "password": "x"}))
            .send(&h.app)
            .await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "attempt {i}");
    }
    let blocked = call(Method::POST, "/auth/login")
        .client_ip([192, 0, 2, 7])
        .json(json!({"username": "admin", "password": ADMIN_PASSWORD}))
        .send(&h.app)
        .await;
    assert_eq!(blocked.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(blocked.headers.contains_key(header::RETRY_AFTER));
    // Other addresses are not affected.
    sign_in(&h.app, "admin", ADMIN_PASSWORD).await;
}

#[tokio::test]
async fn the_last_admin_can_be_neither_demoted_nor_deleted() {
    let h = start().await;
    let admin = sign_in(&h.app, "admin", ADMIN_PASSWORD).await;
    let me = call(Method::GET, "/api/me")
        .session(&admin)
        .send(&h.app)
        .await;
    let admin_id = me.body["id"].as_i64().expect("id");
    let demote = call(Method::PUT, &format!("/api/users/{admin_id}"))
        .session(&admin)
        .json(json!({"role": "editor"}))
        .send(&h.app)
        .await;
    assert_eq!(demote.status, StatusCode::CONFLICT);
    let delete = call(Method::DELETE, &format!("/api/users/{admin_id}"))
        .session(&admin)
        .send(&h.app)
        .await;
    assert_eq!(delete.status, StatusCode::CONFLICT);
    // Nothing changed: still an admin, still signed in.
    let me = call(Method::GET, "/api/me")
        .session(&admin)
        .send(&h.app)
        .await;
    assert_eq!(me.status, StatusCode::OK);
    assert_eq!(me.body["role"], "admin");
    // With a second admin, the first may go.
    let second = create_user(&h.app, &admin, "root2", "admin").await;
    let root2 = sign_in(&h.app, "root2", "a-long-password").await;
    let delete = call(Method::DELETE, &format!("/api/users/{admin_id}"))
        .session(&root2)
        .send(&h.app)
        .await;
    assert_eq!(delete.status, StatusCode::NO_CONTENT);
    assert_eq!(
        call(Method::GET, "/api/me")
            .session(&admin)
            .send(&h.app)
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    let second_id = second["id"].as_i64().expect("id");
    let demote = call(Method::PUT, &format!("/api/users/{second_id}"))
        .session(&root2)
        .json(json!({"role": "viewer"}))
        .send(&h.app)
        .await;
    assert_eq!(demote.status, StatusCode::CONFLICT);
    assert_eq!(usernames(&h.app, &root2).await, ["root2"]);
}

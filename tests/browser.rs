//! The dashboard's pages in a real browser: headless Chromium driven over WebDriver (Debian's
//! `chromium` and `chromium-driver`, which `.ci/run` installs) against a dashboard served on
//! loopback, with an app that embeds the agent and sends traffic. Each test has its own dashboard,
//! data folder, chromedriver port and Chromium profile, so they run in parallel; each writes a
//! screenshot of its main page to `target/screenshots/NAME.png`.
//!
//! Waits poll the page with a deadline ([`PATIENCE`]); the dashboard refreshes its charts every 2 s.

mod support;

use std::future::Future;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fantoccini::error::{CmdError, ErrorStatus};
use fantoccini::{ClientBuilder, Locator};
use floodgate::transport::Agent;
use floodgate::{EntryType, Floodgate};
use serde_json::{Value, json};
use support::{ADMIN_PASSWORD, Client, PATIENCE, Running, config};

/// A resource name that would run as script if a page did not escape it.
const XSS: &str = "<script>alert(1)</script>";
/// The busiest resource: about 100 calls a second.
const BUSY: &str = "GET:/orders";
/// The resources the app calls.
const RESOURCES: [&str; 3] = [BUSY, "GET:/items", XSS];
const APP: &str = "shop";
const VIEWER_PASSWORD: &str = "viewer password 1234";

/// How often a wait looks at the page again.
const POLL: Duration = Duration::from_millis(100);

/// Chromium's flags here: headless, as root, and no connection to anything but loopback.
const CHROMIUM_FLAGS: [&str; 10] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,900",
];

// ---------------------------------------------------------------------------------------------
// Chromium and chromedriver
// ---------------------------------------------------------------------------------------------

/// `env` if set (and there), else `default` if it exists, else `name` on `PATH`.
fn find_binary(env: &str, default: &str, name: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env) {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    if Path::new(default).is_file() {
        return Some(PathBuf::from(default));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Chromium's and chromedriver's paths, or a failure that says what to install.
fn browser_binaries() -> (PathBuf, PathBuf) {
    let chromium = find_binary("FLOODGATE_CHROMIUM", "/usr/bin/chromium", "chromium");
    let driver = find_binary(
        "FLOODGATE_CHROMEDRIVER",
        "/usr/bin/chromedriver",
        "chromedriver",
    );
    match (chromium, driver) {
        (Some(c), Some(d)) => (c, d),
        (c, d) => panic!(
            "the browser tests need Chromium and ChromeDriver, and {} not found: install Debian's \
             packages `chromium` and `chromium-driver` (`apt-get install -y chromium chromium-driver`; \
             .ci/run does it), or point FLOODGATE_CHROMIUM and FLOODGATE_CHROMEDRIVER at them",
            match (c, d) {
                (None, None) => "neither was",
                (None, Some(_)) => "chromium was",
                _ => "chromedriver was",
            }
        ),
    }
}

/// A chromedriver serving on a loopback port; killed (with the browsers it started) when dropped.
struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    /// Starts chromedriver on a port it picks itself (`--port=0`) and reads the port from the line
    /// it prints once it listens: a port picked here could be taken by another test's server or
    /// driver before chromedriver binds it (`a_flow_rule_made_in_the_form_blocks_traffic` once
    /// talked to another test's driver, which then went away).
    async fn start(binary: &Path) -> Driver {
        let mut command = Command::new(binary);
        command
            .arg("--port=0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("{} does not start: {e}", binary.display()));
        let stdout = child.stdout.take().expect("chromedriver's output");
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        // Reads the port, then drains the output until chromedriver exits, so that it never
        // blocks on a full pipe.
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(port) = line
                    .split("started successfully on port ")
                    .nth(1)
                    .and_then(|rest| rest.trim_end_matches('.').trim().parse::<u16>().ok())
                {
                    let _ = port_tx.send(port);
                }
            }
        });
        let port = tokio::task::spawn_blocking(move || port_rx.recv_timeout(PATIENCE))
            .await
            .expect("the port reader")
            .unwrap_or_else(|_| panic!("chromedriver does not say it listens"));
        let driver = Driver { child, port };
        assert!(
            TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port))).is_ok(),
            "chromedriver does not listen on port {port}"
        );
        driver
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The whole process group: chromedriver and the Chromium it started, if a test failed
        // before closing its session.
        #[cfg(unix)]
        {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", self.child.id())])
                .stderr(Stdio::null())
                .status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A browser session in headless Chromium with its own profile.
struct Browser {
    client: fantoccini::Client,
    _profile: tempfile::TempDir,
    _driver: Driver,
}

impl Browser {
    async fn start() -> Browser {
        let (chromium, chromedriver) = browser_binaries();
        let driver = Driver::start(&chromedriver).await;
        let profile = tempfile::tempdir().expect("a profile folder");
        let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|s| (*s).to_owned()).collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        let capabilities = json!({
            "browserName": "chrome",
            // An alert stays open, so that a test can see it opened.
            "unhandledPromptBehavior": "ignore",
            "goog:chromeOptions": { "binary": chromium, "args": args },
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(capabilities)
            .connect(&driver.url())
            .await
            .expect("a Chromium session starts");
        Browser {
            client,
            _profile: profile,
            _driver: driver,
        }
    }

    async fn close(self) {
        let _ = self.client.close().await;
    }
}

// ---------------------------------------------------------------------------------------------
// The world of one test: a dashboard, an app sending traffic, a browser
// ---------------------------------------------------------------------------------------------

/// Calls the app's resources, about 100 times a second each, until stopped.
struct Traffic {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Traffic {
    fn start(fg: Floodgate) -> Traffic {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::spawn({
            let stop = stop.clone();
            move || {
                while !stop.load(Ordering::Relaxed) {
                    for resource in RESOURCES {
                        if let Ok(entry) = fg.entry(resource).entry_type(EntryType::In).enter() {
                            drop(entry);
                        }
                    }
                    // Pacing the traffic, not waiting for anything.
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        });
        Traffic {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Traffic {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct World {
    dir: tempfile::TempDir,
    running: Option<Running>,
    agent: Option<Agent>,
    _traffic: Traffic,
    browser: Option<Browser>,
}

impl World {
    /// A dashboard, the app `shop` registered and sending traffic, and a browser not signed in.
    async fn start() -> World {
        // Before anything else, so that a machine without Chromium fails at once, saying why.
        browser_binaries();
        let dir = tempfile::tempdir().expect("a data folder");
        let running = Running::start(config(dir.path())).await;
        let fg = Floodgate::builder().build();
        let agent = Agent::builder(fg.clone())
            .app_name(APP)
            .port(0)
            .dashboard(running.addr.to_string())
            .heartbeat_interval(Duration::from_millis(200))
            .start()
            .expect("the agent starts");
        let traffic = Traffic::start(fg);
        let browser = Browser::start().await;
        World {
            dir,
            running: Some(running),
            agent: Some(agent),
            _traffic: traffic,
            browser: Some(browser),
        }
    }

    fn b(&self) -> &fantoccini::Client {
        &self.browser.as_ref().expect("a browser").client
    }

    fn running(&self) -> &Running {
        self.running.as_ref().expect("a running dashboard")
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.running().base())
    }

    async fn goto(&self, path: &str) {
        self.b().goto(&self.url(path)).await.expect("navigation");
    }

    /// The path of the page the browser shows.
    async fn path(&self) -> String {
        self.b().current_url().await.expect("url").path().to_owned()
    }

    async fn admin_api(&self) -> Client {
        Client::login(&self.running().base(), "admin", ADMIN_PASSWORD).await
    }

    /// Signs in through the sign-in form and waits for the apps page.
    async fn sign_in(&self, user: &str, password: &str) {
        self.goto("/login").await;
        let b = self.b();
        b.find(Locator::Css("input[name=username]"))
            .await
            .expect("a username field")
            .send_keys(user)
            .await
            .expect("typing");
        b.find(Locator::Css("input[name=password]"))
            .await
            .expect("a password field")
            .send_keys(password)
            .await
            .expect("typing");
        b.find(Locator::Css(
            "form[action='/auth/login'] button[type=submit]",
        ))
        .await
        .expect("a sign-in button")
        .click()
        .await
        .expect("click");
        eventually("the apps page after sign-in", || async {
            (self.path().await == "/apps").then_some(())
        })
        .await;
    }

    /// Fills the sign-in form and submits it, without waiting for what follows.
    async fn sign_in_attempt(&self, user: &str, password: &str) {
        self.goto("/login").await;
        let form = self
            .b()
            .form(Locator::Css("form[action='/auth/login']"))
            .await
            .expect("the sign-in form");
        form.set_by_name("username", user).await.expect("username");
        form.set_by_name("password", password)
            .await
            .expect("password");
        form.submit().await.expect("submit");
    }

    /// Writes a screenshot of the page to `target/screenshots/NAME.png` and returns its path.
    async fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.b().screenshot().await.expect("a screenshot");
        let dir = target_dir().join("screenshots");
        std::fs::create_dir_all(&dir).expect("target/screenshots");
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("screenshot written");
        path
    }

    /// Runs `script` (a function body) in the page and returns what it returns.
    async fn js(&self, script: &str) -> Value {
        self.b()
            .execute(script, vec![])
            .await
            .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// Sends `method path` with `body` from the page, as the signed-in user with the page's CSRF
    /// token, and returns the status.
    async fn fetch_status(&self, method: &str, path: &str, body: Value) -> u16 {
        let status = self
            .b()
            .execute_async(
                r#"const [method, path, body, done] = arguments;
                   const csrf = document.querySelector("input[name=_csrf]");
                   fetch(path, {
                     method, credentials: "same-origin",
                     headers: { "content-type": "application/json",
                                "x-csrf-token": csrf ? csrf.value : "" },
                     body: JSON.stringify(body),
                   }).then(r => done(r.status), e => done(String(e)));"#,
                vec![json!(method), json!(path), body],
            )
            .await
            .expect("fetch from the page");
        status
            .as_u64()
            .and_then(|s| u16::try_from(s).ok())
            .unwrap_or_else(|| panic!("fetch failed: {status}"))
    }

    /// Waits until the monitoring page charts `resource` with at least `segments` joined points
    /// of pass QPS.
    async fn wait_for_chart(&self, resource: &str, segments: usize) {
        eventually(&format!("a chart of {resource} with points"), || async {
            let d = self
                .js(&format!(
                    "const s = [...document.querySelectorAll('section.resource')]
                        .find(s => s.dataset.resource === {});
                     const p = s && s.querySelector('svg.chart path.line.pass');
                     return p ? p.getAttribute('d') : null;",
                    json!(resource)
                ))
                .await;
            d.as_str()
                .is_some_and(|d| d.matches('L').count() >= segments)
                .then_some(())
        })
        .await;
    }

    /// The `.block-now` of `resource`'s section on the page shown, if it has one.
    async fn block_now(&self, resource: &str) -> Option<f64> {
        self.js(&format!(
            "const s = [...document.querySelectorAll('section.resource')]
                .find(s => s.dataset.resource === {});
             const b = s && s.querySelector('.block-now');
             return b ? b.textContent : null;",
            json!(resource)
        ))
        .await
        .as_str()
        .and_then(|t| t.trim().parse().ok())
    }

    /// The ids of the rules listed on the page shown.
    async fn listed_rule_ids(&self) -> Vec<String> {
        let rows = self
            .b()
            .find_all(Locator::Css("table.rules tr[data-rule-id]"))
            .await
            .expect("rows");
        let mut ids = Vec::new();
        for row in rows {
            ids.push(
                row.attr("data-rule-id")
                    .await
                    .expect("attr")
                    .unwrap_or_default(),
            );
        }
        ids
    }

    /// Fills the new-flow-rule form with `resource` and `count` and submits it.
    async fn submit_flow_rule(&self, resource: &str, count: &str) {
        self.goto(&format!("/apps/{APP}/rules/flow/new")).await;
        let b = self.b();
        b.wait()
            .at_most(PATIENCE)
            .for_element(Locator::Css("form#rule-form"))
            .await
            .expect("the rule form");
        for (field, value) in [("#field-resource", resource), ("#field-count", count)] {
            let input = b.find(Locator::Css(field)).await.expect(field);
            input.clear().await.expect("clear");
            input.send_keys(value).await.expect("typing");
        }
        self.screenshot("rule-form").await;
        b.find(Locator::Css(
            "form#rule-form button[type=submit], form#rule-form input[type=submit]",
        ))
        .await
        .expect("a submit button")
        .click()
        .await
        .expect("submit");
    }

    /// The stored flow rules of the app, through the JSON API.
    async fn stored_flow_rules(&self) -> Vec<Value> {
        let a = self
            .admin_api()
            .await
            .get(&format!("/api/apps/{APP}/rules/flow"))
            .await;
        assert_eq!(a.status, 200, "{}", a.text);
        a.body["rules"].as_array().cloned().unwrap_or_default()
    }

    /// Closes the browser, stops the agent and the dashboard.
    async fn finish(mut self) {
        if let Some(b) = self.browser.take() {
            b.close().await;
        }
        if let Some(agent) = self.agent.take() {
            tokio::task::block_in_place(|| agent.shutdown());
        }
        if let Some(r) = self.running.take() {
            r.stop().await;
        }
    }
}

/// The target folder cargo builds into.
fn target_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => manifest.join(dir),
        None => manifest.join("target"),
    }
}

/// Polls `check` until it gives a value, for at most [`PATIENCE`].
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {PATIENCE:?} waiting for {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

fn no_alert(result: Result<String, CmdError>) {
    match result {
        Err(CmdError::Standard(e)) if e.error == ErrorStatus::NoSuchAlert => {}
        Ok(text) => panic!("an alert opened: {text:?}"),
        Err(e) => panic!("asking for an alert: {e}"),
    }
}

// ---------------------------------------------------------------------------------------------
// The pages there are
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signs_in_through_the_login_form() {
    let w = World::start().await;
    // A page asked for before signing in leads to the sign-in form.
    w.goto(&format!("/apps/{APP}")).await;
    assert_eq!(w.path().await, "/login");

    // A wrong password is refused, saying so.
    w.sign_in_attempt("admin", "not the password").await;
    eventually("the sign-in error", || async {
        (w.path().await == "/login" && w.b().find(Locator::Css("[role=alert]")).await.is_ok())
            .then_some(())
    })
    .await;

    w.goto("/login").await;
    w.screenshot("login").await;
    w.sign_in("admin", ADMIN_PASSWORD).await;
    let who = w
        .b()
        .find(Locator::Css("header .who"))
        .await
        .expect("who is signed in")
        .text()
        .await
        .expect("text");
    assert_eq!(who, "admin (admin)");
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shows_the_app_and_charts_with_points() {
    let w = World::start().await;
    // A rule that blocks some of GET:/items' 100 calls a second, so that the picture shows blocks.
    let a = w
        .admin_api()
        .await
        .post(
            &format!("/api/apps/{APP}/rules/flow"),
            json!({"resource": "GET:/items", "count": 60}),
        )
        .await;
    assert_eq!(a.status, 201, "{}", a.text);
    w.sign_in("admin", ADMIN_PASSWORD).await;

    // The overview lists the app, with its healthy machine.
    eventually("the app on /apps", || async {
        w.goto("/apps").await;
        let row = w
            .js(&format!(
                "const a = [...document.querySelectorAll('table.apps a')]
                    .find(a => a.textContent === {});
                 return a ? a.closest('tr').children[1].textContent : null;",
                json!(APP)
            ))
            .await;
        (row.as_str() == Some("1 / 1")).then_some(())
    })
    .await;
    w.screenshot("apps").await;

    w.b()
        .find(Locator::LinkText(APP))
        .await
        .expect("a link to the app")
        .click()
        .await
        .expect("click");
    eventually("the monitoring page", || async {
        (w.path().await == format!("/apps/{APP}")).then_some(())
    })
    .await;
    // The page refreshes itself: no reload here, only the 2 s refresh brings the points.
    w.wait_for_chart(BUSY, 1).await;
    for r in RESOURCES {
        w.wait_for_chart(r, 1).await;
    }
    // Enough seconds for a picture, and the blocks of GET:/items shown.
    w.wait_for_chart(BUSY, 8).await;
    eventually("blocks of GET:/items", || async {
        w.block_now("GET:/items")
            .await
            .is_some_and(|b| b > 0.0)
            .then_some(())
    })
    .await;
    let shot = w.screenshot("monitoring").await;
    // README's picture of the monitoring page is this one, written to docs/ when asked
    // (FLOODGATE_UPDATE_README_SCREENSHOT=1), so that a test run leaves the checkout clean.
    if std::env::var_os("FLOODGATE_UPDATE_README_SCREENSHOT").is_some() {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
        std::fs::create_dir_all(&docs).expect("docs/");
        std::fs::copy(&shot, docs.join("monitoring.png")).expect("docs/monitoring.png");
    }
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_named_like_a_script_is_shown_as_text() {
    let w = World::start().await;
    w.sign_in("admin", ADMIN_PASSWORD).await;
    w.goto(&format!("/apps/{APP}?q={}", "%3Cscript%3E")).await;
    w.wait_for_chart(XSS, 1).await;
    let heading = w
        .js(&format!(
            "const s = [...document.querySelectorAll('section.resource')]
                .find(s => s.dataset.resource === {});
             const h = s.querySelector('h2');
             return h.firstChild.textContent.trim();",
            json!(XSS)
        ))
        .await;
    assert_eq!(heading.as_str(), Some(XSS));
    // No element was made of it, and no alert opened.
    let scripts = w
        .js("return [...document.scripts].filter(s => !s.src).length;")
        .await;
    assert_eq!(scripts, json!(0), "an inline script in the page");
    no_alert(w.b().get_alert_text().await);
    // The search box shows what was searched for, as text too.
    let q = w
        .b()
        .find(Locator::Css("input#q"))
        .await
        .expect("the search box")
        .prop("value")
        .await
        .expect("value");
    assert_eq!(q.as_deref(), Some("<script>"));
    w.screenshot("script-resource").await;
    // After the page refreshed the charts in place, still text and still no alert.
    w.goto(&format!("/apps/{APP}")).await;
    w.wait_for_chart(XSS, 3).await;
    no_alert(w.b().get_alert_text().await);
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_sees_no_edit_controls_and_is_refused() {
    let w = World::start().await;
    let a = w
        .admin_api()
        .await
        .post(
            "/api/users",
            json!({"username": "vera", "password": VIEWER_PASSWORD, "role": "viewer"}),
        )
        .await;
    assert_eq!(a.status, 201, "{}", a.text);
    w.sign_in("vera", VIEWER_PASSWORD).await;
    let who = w
        .b()
        .find(Locator::Css("header .who"))
        .await
        .expect("who")
        .text()
        .await
        .expect("text");
    assert_eq!(who, "vera (viewer)");
    w.goto(&format!("/apps/{APP}")).await;
    w.wait_for_chart(BUSY, 1).await;

    // The only form that changes anything is signing out; no link to users' management.
    let edit_controls = w
        .js("return [...document.querySelectorAll('form')]
                .filter(f => f.method.toLowerCase() === 'post' && !f.classList.contains('signout'))
                .length
              + document.querySelectorAll('a[href=\"/users\"], a[href$=\"/new\"], a[href*=\"/edit\"]').length;")
        .await;
    assert_eq!(edit_controls, json!(0));
    w.screenshot("viewer").await;

    // A change sent from the viewer's page, with its CSRF token, is refused.
    let status = w
        .fetch_status(
            "POST",
            &format!("/api/apps/{APP}/rules/flow"),
            json!({"resource": BUSY, "count": 1}),
        )
        .await;
    assert_eq!(status, 403);
    let status = w
        .fetch_status(
            "POST",
            "/api/users",
            json!({"username": "mallory", "password": VIEWER_PASSWORD, "role": "admin"}),
        )
        .await;
    assert_eq!(status, 403);
    assert!(w.stored_flow_rules().await.is_empty());
    w.finish().await;
}

// ---------------------------------------------------------------------------------------------
// The rule pages
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_sees_the_rules_but_no_form() {
    let w = World::start().await;
    let admin = w.admin_api().await;
    let a = admin
        .post(
            "/api/users",
            json!({"username": "vera", "password": VIEWER_PASSWORD, "role": "viewer"}),
        )
        .await;
    assert_eq!(a.status, 201, "{}", a.text);
    let a = admin
        .post(
            &format!("/api/apps/{APP}/rules/flow"),
            json!({"resource": BUSY, "count": 1000}),
        )
        .await;
    assert_eq!(a.status, 201, "{}", a.text);
    w.sign_in("vera", VIEWER_PASSWORD).await;
    w.goto(&format!("/apps/{APP}/rules/flow")).await;
    assert_eq!(w.listed_rule_ids().await.len(), 1);
    let controls = w
        .js("return document.querySelectorAll('form#rule-form, a[href$=\"/new\"], a[href$=\"/edit\"], form[method=post]:not(.signout)').length;")
        .await;
    assert_eq!(controls, json!(0), "edit controls shown to a viewer");
    w.screenshot("viewer-rules").await;
    w.goto(&format!("/apps/{APP}/rules/flow/new")).await;
    assert!(
        w.b().find(Locator::Css("form#rule-form")).await.is_err(),
        "the rule form shown to a viewer"
    );
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_rule_made_in_the_form_blocks_traffic() {
    let w = World::start().await;
    w.sign_in("admin", ADMIN_PASSWORD).await;
    w.submit_flow_rule(BUSY, "1").await;
    eventually("the rule listed", || async {
        (w.path().await == format!("/apps/{APP}/rules/flow")
            && w.listed_rule_ids().await.len() == 1)
            .then_some(())
    })
    .await;
    w.screenshot("rules").await;
    let stored = w.stored_flow_rules().await;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0]["rule"]["resource"], BUSY);

    w.goto(&format!("/apps/{APP}")).await;
    eventually("blocks of the limited resource", || async {
        w.block_now(BUSY)
            .await
            .is_some_and(|b| b > 0.0)
            .then_some(())
    })
    .await;
    w.screenshot("monitoring-blocked").await;
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_rule_shows_the_field_error_and_saves_nothing() {
    let w = World::start().await;
    w.sign_in("admin", ADMIN_PASSWORD).await;
    w.submit_flow_rule(BUSY, "-1").await;
    let error = w
        .b()
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css("#error-count"))
        .await
        .expect("the count's error");
    assert!(error.is_displayed().await.expect("displayed"));
    assert!(!error.text().await.expect("text").trim().is_empty());
    // Next to its field: in the same form, and just below or beside it.
    let near = w
        .js("const e = document.getElementById('error-count');
             const f = document.getElementById('field-count');
             if (!e || !f || e.closest('form') !== f.closest('form')) return false;
             const a = e.getBoundingClientRect(), b = f.getBoundingClientRect();
             return Math.abs(a.top - b.top) < 120;")
        .await;
    assert_eq!(
        near,
        json!(true),
        "#error-count is not next to #field-count"
    );
    // What was typed is kept for correcting.
    let typed = w
        .b()
        .find(Locator::Css("#field-resource"))
        .await
        .expect("resource")
        .prop("value")
        .await
        .expect("value");
    assert_eq!(typed.as_deref(), Some(BUSY));
    w.screenshot("rule-error").await;
    assert!(w.stored_flow_rules().await.is_empty());
    w.goto(&format!("/apps/{APP}/rules/flow")).await;
    assert!(w.listed_rule_ids().await.is_empty());
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_change_is_rolled_back_from_the_history() {
    let w = World::start().await;
    w.sign_in("admin", ADMIN_PASSWORD).await;
    w.submit_flow_rule(BUSY, "1").await;
    eventually("the first rule listed", || async {
        (w.listed_rule_ids().await.len() == 1).then_some(())
    })
    .await;
    w.submit_flow_rule("GET:/items", "5").await;
    eventually("both rules listed", || async {
        (w.listed_rule_ids().await.len() == 2).then_some(())
    })
    .await;

    w.goto(&format!("/apps/{APP}/history")).await;
    let changes = w
        .b()
        .find_all(Locator::Css("li.change[data-id]"))
        .await
        .expect("changes");
    assert!(changes.len() >= 2, "{} changes listed", changes.len());
    w.screenshot("history").await;
    // The newest change (the second rule) is rolled back.
    let newest = w
        .js(
            "const ids = [...document.querySelectorAll('li.change[data-id]')]
                .map(li => Number(li.dataset.id));
             return Math.max(...ids);",
        )
        .await;
    let button = w
        .b()
        .find(Locator::Css(&format!(
            "li.change[data-id='{newest}'] form.rollback button"
        )))
        .await
        .expect("a rollback button on the newest change");
    button.click().await.expect("click");

    eventually("the list as it was before", || async {
        // A confirmation the page may ask for is accepted.
        if w.b().get_alert_text().await.is_ok() {
            let _ = w.b().accept_alert().await;
        }
        let stored = w.stored_flow_rules().await;
        (stored.len() == 1 && stored[0]["rule"]["resource"] == BUSY).then_some(())
    })
    .await;
    w.goto(&format!("/apps/{APP}/rules/flow")).await;
    let listed = w.listed_rule_ids().await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let text = w
        .b()
        .find(Locator::Css("table.rules"))
        .await
        .expect("the list")
        .text()
        .await
        .expect("text");
    assert!(
        text.contains(BUSY) && !text.contains("GET:/items"),
        "{text}"
    );
    w.screenshot("rules-rolled-back").await;
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_is_still_listed_after_the_dashboard_restarts() {
    let mut w = World::start().await;
    w.sign_in("admin", ADMIN_PASSWORD).await;
    w.submit_flow_rule(BUSY, "1").await;
    eventually("the rule listed", || async {
        (w.listed_rule_ids().await.len() == 1).then_some(())
    })
    .await;
    let before = w.listed_rule_ids().await;

    w.running.take().expect("running").stop().await;
    w.running = Some(Running::start(config(w.dir.path())).await);
    // The session may have survived the restart; if not, sign in again.
    w.goto(&format!("/apps/{APP}/rules/flow")).await;
    if w.path().await == "/login" {
        w.sign_in("admin", ADMIN_PASSWORD).await;
        w.goto(&format!("/apps/{APP}/rules/flow")).await;
    }
    assert_eq!(w.listed_rule_ids().await, before);
    let text = w
        .b()
        .find(Locator::Css("table.rules"))
        .await
        .expect("the list")
        .text()
        .await
        .expect("text");
    assert!(text.contains(BUSY), "{text}");
    w.screenshot("rules-after-restart").await;
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_other_main_pages_show_their_content() {
    let w = World::start().await;
    w.sign_in("admin", ADMIN_PASSWORD).await;
    // The machine registered and its resources have been charted: every page has something to show.
    w.goto(&format!("/apps/{APP}")).await;
    w.wait_for_chart(BUSY, 1).await;
    let pages: [(&str, String, &str); 7] = [
        (
            "machines",
            format!("/apps/{APP}/machines"),
            "#machines tr.healthy",
        ),
        (
            "machine-resources",
            format!("/apps/{APP}/machines/1/resources?view=tree"),
            "#nodes tr.node",
        ),
        (
            "breakers",
            format!("/apps/{APP}/breakers"),
            "section[id^=breakers-]",
        ),
        (
            "resource",
            format!("/apps/{APP}/resources/GET%3A%2Forders"),
            "svg.chart",
        ),
        (
            "rules-degrade",
            format!("/apps/{APP}/rules/degrade"),
            "nav.tabs",
        ),
        ("users", "/users".to_owned(), "form"),
        ("tokens", "/tokens".to_owned(), "form"),
    ];
    for (name, path, selector) in pages {
        w.goto(&path).await;
        eventually(&format!("{name}: {selector}"), || async {
            w.b().find(Locator::Css(selector)).await.ok().map(|_| ())
        })
        .await;
        w.screenshot(name).await;
    }
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_box_reveals_its_fields_and_the_cluster_page_lists_the_rule() {
    let w = World::start().await;
    w.sign_in("admin", ADMIN_PASSWORD).await;
    w.goto(&format!("/apps/{APP}/rules/flow/new")).await;
    let b = w.b();
    b.wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css("form#rule-form"))
        .await
        .expect("the rule form");
    let shown = || async {
        w.js(
            "return ['flowId', 'thresholdType', 'fallbackToLocalWhenFail', 'sampleCount',
                      'windowIntervalMs'].map(n => {
                  const f = document.getElementById('field-clusterConfig.' + n);
                  return f !== null && f.offsetParent !== null;
              });",
        )
        .await
    };
    assert_eq!(
        shown().await,
        json!([false, false, false, false, false]),
        "hidden until the box is ticked"
    );
    b.find(Locator::Css("#field-clusterMode"))
        .await
        .expect("the cluster mode box")
        .click()
        .await
        .expect("click");
    assert_eq!(
        shown().await,
        json!([true, true, true, true, true]),
        "shown once it is ticked"
    );
    for (field, value) in [("#field-resource", BUSY), ("#field-count", "100000")] {
        let input = b.find(Locator::Css(field)).await.expect(field);
        input.clear().await.expect("clear");
        input.send_keys(value).await.expect("typing");
    }
    b.find(Locator::Css("select[name='clusterConfig.thresholdType']"))
        .await
        .expect("the threshold type")
        .select_by_value("1")
        .await
        .expect("GLOBAL chosen");
    w.screenshot("rule-form-cluster").await;
    b.find(Locator::Css("form#rule-form button[type=submit]"))
        .await
        .expect("a submit button")
        .click()
        .await
        .expect("submit");
    eventually("the cluster rule listed", || async {
        (w.path().await == format!("/apps/{APP}/rules/flow")
            && w.listed_rule_ids().await.len() == 1)
            .then_some(())
    })
    .await;
    let stored = w.stored_flow_rules().await;
    let id = stored[0]["id"].as_i64().expect("an id");
    let rule = &stored[0]["rule"];
    assert_eq!(rule["clusterMode"], true);
    assert_eq!(
        rule["clusterConfig"]["flowId"], id,
        "an empty flow id is the rule's id"
    );
    assert_eq!(rule["clusterConfig"]["thresholdType"], 1);
    let list = b
        .find(Locator::Css("table.rules"))
        .await
        .expect("the list")
        .text()
        .await
        .expect("text");
    assert!(
        list.contains(&format!("cluster · GLOBAL · flowId {id}")),
        "{list}"
    );

    // The cluster page: the rule, and the app's machine, not yet in a cluster mode.
    w.goto(&format!("/apps/{APP}/cluster")).await;
    let row = b
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css(&format!("tr[data-rule='flow-{id}']")))
        .await
        .expect("the rule's row")
        .text()
        .await
        .expect("text");
    assert!(row.contains(BUSY) && row.contains("GLOBAL"), "{row}");
    let machine = b
        .find(Locator::Css("section.cluster-machine"))
        .await
        .expect("the machine's section")
        .text()
        .await
        .expect("text");
    assert!(machine.contains("-1 (not started)"), "{machine}");
    w.screenshot("cluster").await;

    // With the agent's cluster commands, the page makes the machine the app's token server.
    if cfg!(feature = "cluster") {
        let port = support::free_port().to_string();
        let field = b
            .find(Locator::Css("form.make-server input[name=port]"))
            .await
            .expect("the port field");
        field.send_keys(&port).await.expect("typing");
        b.find(Locator::Css("form.make-server button[type=submit]"))
            .await
            .expect("the server button")
            .click()
            .await
            .expect("click");
        eventually("the machine shown serving tokens", || async {
            let text = b
                .find(Locator::Css("section.cluster-machine"))
                .await
                .ok()?
                .text()
                .await
                .ok()?;
            (text.contains("1 (server)") && text.contains(&port)).then_some(())
        })
        .await;
    }
    w.finish().await;
}

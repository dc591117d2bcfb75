//! The Floodgate dashboard: apps register with it by heartbeat, it fetches every machine's per-second
//! metrics into SQLite, and it keeps each app's rules — validated by floodgate-core, committed, then
//! pushed to every healthy machine of the app, which converge to what is stored.
//!
//! It manages Floodgate agents and unmodified Java Sentinel 1.8 clients alike (see [`agent_client`]).
//!
//! ```text
//!  heartbeats ──► routes::registry ──► db (apps, machines) ──► push (reconcile: import, re-push on drift)
//!  fetch (every healthy machine, each second) ──► ingest (one writer, batched) ──► db (metric rows)
//!  routes (JSON API, behind a session or an API token) ──► rules (validate → commit → push) ──► db
//! ```
//!
//! [`app`] builds the router from an [`AppState`]; [`Dashboard::start`] opens the database and starts
//! the background tasks; the `floodgate-dashboard` binary is a thin `main` around both.
//!
//! `floodgate-dashboard --help` lists every setting (each also an environment variable). What it does:
//!
//! - **Registry.** Machines register by heartbeat (`/registry/machine`, GET or POST form); every field is
//!   checked (an IP literal, a port, lengths, no control characters). `--registration-token` makes heartbeats
//!   carry a token; `--allow-cidrs 10.0.0.0/8,…` limits the addresses machines may register from — the
//!   dashboard only ever calls registered `ip:port` pairs that passed both. A machine is healthy while its last
//!   heartbeat is under 60 s old (`--unhealthy-after-secs`); an unhealthy one is left out of fetches and
//!   pushes, not forgotten.
//! - **Metrics.** Every healthy machine's per-second metrics are fetched each second and summed per app ×
//!   resource × second (RT weighted by completed calls) into SQLite by one writer; per-second rows are kept
//!   6 h, per-minute rollups 7 days (`--second-retention-secs`, `--minute-retention-secs`).
//! - **Rules are the dashboard's**, per app (not per machine): every change is validated by floodgate-core's
//!   own parser (the bad rule's index and field named, nothing changed), committed with a history entry (who,
//!   when, the list before and after; any entry can be rolled back), then the app's whole list of that type is
//!   pushed to every healthy machine and each machine's result recorded; failures are retried with backoff. At
//!   every heartbeat a machine's rules are compared with the stored ones and pushed again when they differ (a
//!   restart without a rule file, an edit made elsewhere); a type the app has never managed is imported from
//!   the first machine that has rules of it, so existing rules are never wiped. Rule JSON is sent so that Java
//!   clients' second URL-decoding leaves it intact (`a+b %2B c` arrives as written).
//! - **Cluster flow control.** Flow and hot-parameter rules can be put in cluster mode in their forms
//!   (`clusterConfig` in Sentinel's field names); a cluster rule saved without a `flowId` gets one unique
//!   among all the dashboard's rules — its own rule id when no other rule has it, as Sentinel's dashboard
//!   gives a cluster rule its id — and a typed one another rule has is refused. `/apps/{app}/cluster`
//!   shows each cluster rule's pass and block QPS in the last complete second, summed over the app's
//!   machines, and asks each live machine its mode and backend (`getClusterMode`; a Java client, which
//!   names no backend, by its mode), the token server a client asks (`cluster/client/fetchConfig`),
//!   a token server's port, clients per namespace and figures (`cluster/server/info`, `metricList`),
//!   or the Redis it counts in. An editor makes a machine the app's token server there, or a client of
//!   another machine's (`POST /api/apps/{app}/cluster/machines/{id}/server`, `…/client` with
//!   `{"server": id}`), as Sentinel's dashboard assigns them.
//! - **Users.** No default password: the first admin (`--admin-user`, default `admin`) gets
//!   `FLOODGATE_ADMIN_PASSWORD` (or `--admin-password`), or a generated password printed once at the first
//!   start. Roles viewer, editor, admin; server-side sessions in `HttpOnly`, `SameSite=Strict` cookies, rotated
//!   at sign-in and expiring (`--session-ttl-secs`); state-changing requests need the session's CSRF token
//!   (`X-CSRF-Token`, from `GET /api/me`); sign-ins are throttled per user and per address; scripts use
//!   per-user API tokens (`Authorization: Bearer fgt_…`). Only `/registry/machine`, the sign-in page and
//!   `/static` are open.
//! - **JSON API** (`/api/…`): `apps`; `apps/{app}/machines` (health, version, last heartbeat, each rule
//!   type's last push, drift); `apps/{app}/machines/{id}/resources?view=tree|list`;
//!   `apps/{app}/metrics?resource=&from=&to=`; `apps/{app}/resources/top`; `apps/{app}/rules/{type}` (GET,
//!   POST, PUT of the whole list) and `…/{type}/{id}` (GET, PUT, DELETE) for `flow`, `degrade`, `system`,
//!   `authority`, `paramFlow`; `apps/{app}/push-status`, `apps/{app}/push`; `apps/{app}/circuit-breakers`;
//!   `apps/{app}/history`, `…/history/{id}/rollback`; `apps/{app}/export` and `apps/{app}/import` (the whole
//!   rule set as one JSON document); `users`, `tokens`, `me`. Bad input answers 422 with the field named.
//!
//! ```sh
//! curl -c jar -H 'content-type: application/json' \
//!      -d '{"username":"admin","password":"…"}' http://127.0.0.1:8080/auth/login
//! curl -b jar http://127.0.0.1:8080/api/apps
//! TOKEN=$(curl -s -b jar -H "x-csrf-token: $(curl -s -b jar http://127.0.0.1:8080/api/me | jq -r .csrfToken)" \
//!      -H 'content-type: application/json' -d '{"name":"ci"}' http://127.0.0.1:8080/api/tokens | jq -r .token)
//! curl -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \
//!      -d '{"resource":"GET:/api/orders","count":20}' http://127.0.0.1:8080/api/apps/demo-shop/rules/flow
//! ```

pub mod agent_client;
pub mod auth;
pub mod cluster;
pub mod config;
pub mod db;
pub mod error;
pub mod events;
pub mod fetch;
pub mod ingest;
pub mod pages;
pub mod push;
pub mod registry;
mod routes;
pub mod rules;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use floodgate_core::{Clock, SystemClock};
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use config::Config;
pub use error::{AppError, AppResult, FieldError};
pub use routes::app;

use agent_client::AgentClient;
use db::Db;
use events::Events;
use ingest::Ingest;
use push::Pusher;
use registry::Gate;
use rules::RuleBook;

/// What every handler and task shares; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The database.
    pub db: Db,
    /// The settings.
    pub config: Arc<Config>,
    /// The time (a [`floodgate_core::ManualClock`] in tests).
    pub clock: Arc<dyn Clock>,
    /// Who may register.
    pub gate: Arc<Gate>,
    /// The command-API client.
    pub agents: AgentClient,
    /// What just happened.
    pub events: Events,
    /// Pushes rules to machines.
    pub pusher: Pusher,
    /// Validates rule changes and applies them one at a time.
    pub rules: Arc<RuleBook>,
    /// Takes fetched metric lines to the writer.
    pub ingest: Ingest,
    /// Sign-in state kept in memory (login throttling).
    pub auth: Arc<auth::AuthState>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// The time now, in ms since the epoch.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms() as i64
    }

    /// The oldest heartbeat a healthy machine may have now.
    pub fn healthy_since(&self) -> i64 {
        self.now_ms() - self.config.unhealthy_after_ms()
    }
}

/// A running dashboard: its state and its background tasks (fetcher, writer, pusher, pruner).
#[derive(Debug)]
pub struct Dashboard {
    state: AppState,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    /// The first admin's generated password, when this start created it.
    generated_password: Option<String>,
}

impl Dashboard {
    /// Opens the database (creating it and its folder when missing), applies the migrations, creates
    /// the first admin when there is no user, and starts the background tasks.
    pub async fn start(config: Config) -> anyhow::Result<Dashboard> {
        Dashboard::start_with_clock(config, Arc::new(SystemClock::new())).await
    }

    /// [`start`](Self::start) with another clock.
    pub async fn start_with_clock(
        config: Config,
        clock: Arc<dyn Clock>,
    ) -> anyhow::Result<Dashboard> {
        if config.database_url.is_none() {
            std::fs::create_dir_all(&config.data_dir)?;
        }
        let db = Db::open(&config.database_url()).await?;
        let generated_password =
            auth::ensure_first_admin(&db, &config, clock.now_ms() as i64).await?;
        if config.registration_token.is_none() {
            tracing::warn!(
                "registration is open: whoever can reach /registry/machine can register machines \
                 (and a machine's rules are imported for a type its app does not manage yet); set \
                 --registration-token, and --allow-cidrs to bound the addresses called"
            );
        }
        let config = Arc::new(config);
        let (stop, stopped) = watch::channel(false);
        let events = Events::default();
        let agents = AgentClient::new(config.agent_timeout());
        let gate = Arc::new(Gate::new(
            config.registration_token.as_deref(),
            config.allow_cidrs.clone(),
        ));
        let rules = Arc::new(RuleBook::new());
        let (ingest, writer) = ingest::channel();
        let (pusher, push_worker) = push::channel();
        let state = AppState {
            db,
            config,
            clock,
            gate,
            agents,
            events,
            pusher,
            rules,
            ingest,
            auth: Arc::new(auth::AuthState::default()),
        };
        let tasks = vec![
            tokio::spawn(writer.run(state.clone(), stopped.clone())),
            tokio::spawn(push_worker.run(state.clone(), stopped.clone())),
            tokio::spawn(fetch::run(state.clone(), stopped.clone())),
        ];
        Ok(Dashboard {
            state,
            stop,
            tasks,
            generated_password,
        })
    }

    /// The shared state.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// The router serving this dashboard.
    pub fn router(&self) -> Router {
        app(self.state.clone())
    }

    /// The first admin's password, when this start generated it (print it once; it is not stored).
    pub fn generated_password(&self) -> Option<&str> {
        self.generated_password.as_deref()
    }

    /// Stops the background tasks — the pushes in flight and the metric writes queued finish first —
    /// and closes the database.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            if tokio::time::timeout(Duration::from_secs(15), task)
                .await
                .is_err()
            {
                tracing::warn!("a background task did not stop within 15 s");
            }
        }
        self.state.db.close().await;
    }
}

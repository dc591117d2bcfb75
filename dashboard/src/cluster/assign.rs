//! Assigning an app's machines their cluster roles, as Sentinel's dashboard does.
//!
//! - **Token server**: with a port, `cluster/server/modifyTransportConfig?port=` first (else the
//!   machine's own, Sentinel's 18730 by default); `setClusterMode?mode=1`; then
//!   `cluster/server/modifyNamespaceSet` with the app's name, so that the app's clients (which ask in
//!   the app's namespace) are served. A Floodgate agent's embedded server serves the app's own
//!   cluster rules, which the dashboard pushes to every machine.
//! - **Client of a token server**: the server must be another machine of the app that says
//!   it serves tokens (`getClusterMode` mode 1) and on which port (`cluster/server/info`); then
//!   `cluster/client/modifyConfig` with that machine's IP and port (and Sentinel's request timeout,
//!   20 ms), then `setClusterMode?mode=0`. A Floodgate agent started with a Redis backend returns to
//!   Redis on mode 0: its backend comes first.
//!
//! Each step must answer `success`; the first that does not stops the assignment, and the error
//! names it (the steps before it stay done: an agent has no transaction to undo them with).

use serde_json::json;

use super::answers::{read_cluster_mode, read_server_info};
use super::machines::{ask, failure};
use crate::AppState;
use crate::agent_client::{Target, survive_double_decoding};
use crate::db::{App, Machine};
use crate::error::{AppError, AppResult};
use crate::routes::machines::machine_target;

/// The request timeout a client is given, ms (Sentinel's default).
pub const CLIENT_REQUEST_TIMEOUT_MS: u32 = 20;

/// Why an assignment could not be made.
#[derive(Debug, thiserror::Error)]
pub enum AssignError {
    /// A client was to be its own server.
    #[error("a machine cannot be a client of its own token server")]
    OwnServer,
    /// The machine named as the server does not serve tokens.
    #[error("{address} does not serve tokens (cluster mode {mode})")]
    NotAServer {
        /// The machine's `ip:port`.
        address: String,
        /// The mode it reported.
        mode: i64,
    },
    /// The server did not say its port.
    #[error("{0} does not say which port it serves tokens on")]
    NoServerPort(String),
    /// A step failed.
    #[error("{command} on {address}: {reason}")]
    Step {
        /// The command of the step.
        command: &'static str,
        /// The machine's `ip:port`.
        address: String,
        /// What it answered, or why it did not.
        reason: String,
    },
}

impl From<AssignError> for AppError {
    fn from(e: AssignError) -> Self {
        match e {
            AssignError::OwnServer
            | AssignError::NotAServer { .. }
            | AssignError::NoServerPort(_) => AppError::field("server", e.to_string()),
            AssignError::Step { .. } => AppError::Upstream(e.to_string()),
        }
    }
}

/// Runs one step on `machine`.
async fn step(
    state: &AppState,
    machine: &Machine,
    target: &Target,
    command: &'static str,
    params: &[(&str, &str)],
) -> Result<(), AssignError> {
    state
        .agents
        .change(target, command, params)
        .await
        .map(drop)
        .map_err(|e| AssignError::Step {
            command,
            address: crate::push::machine_addr(machine),
            reason: failure(e),
        })
}

/// Makes `machine` a token server for the namespace `app`, on `port` when given.
async fn make_server(
    state: &AppState,
    machine: &Machine,
    target: &Target,
    app: &str,
    port: Option<u16>,
) -> Result<(), AssignError> {
    if let Some(port) = port {
        let port = port.to_string();
        step(
            state,
            machine,
            target,
            "cluster/server/modifyTransportConfig",
            &[("port", &port)],
        )
        .await?;
    }
    step(state, machine, target, "setClusterMode", &[("mode", "1")]).await?;
    let namespaces = survive_double_decoding(&json!([app]).to_string());
    step(
        state,
        machine,
        target,
        "cluster/server/modifyNamespaceSet",
        &[("data", &namespaces)],
    )
    .await
}

/// Makes `machine` a client of the token server that `server` runs.
async fn make_client(
    state: &AppState,
    machine: &Machine,
    target: &Target,
    server: (&Machine, &Target),
) -> Result<(), AssignError> {
    let (server, server_target) = server;
    if server.id == machine.id {
        return Err(AssignError::OwnServer);
    }
    let address = crate::push::machine_addr(server);
    let failed = |command: &'static str| {
        let address = address.clone();
        move |reason| AssignError::Step {
            command,
            address,
            reason,
        }
    };
    let mode = ask(
        state,
        server_target,
        "getClusterMode",
        &[],
        read_cluster_mode,
    )
    .await
    .map_err(failed("getClusterMode"))?;
    if mode.mode != 1 {
        return Err(AssignError::NotAServer {
            address,
            mode: mode.mode,
        });
    }
    let info = ask(
        state,
        server_target,
        "cluster/server/info",
        &[],
        read_server_info,
    )
    .await
    .map_err(failed("cluster/server/info"))?;
    let port = info
        .port
        .filter(|p| (1..=i64::from(u16::MAX)).contains(p))
        .ok_or_else(|| AssignError::NoServerPort(address.clone()))?;
    let config = json!({
        "serverHost": server.ip,
        "serverPort": port,
        "requestTimeout": CLIENT_REQUEST_TIMEOUT_MS,
    });
    let config = survive_double_decoding(&config.to_string());
    step(
        state,
        machine,
        target,
        "cluster/client/modifyConfig",
        &[("data", &config)],
    )
    .await?;
    step(state, machine, target, "setClusterMode", &[("mode", "0")]).await
}

/// What a machine is to become.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assignment {
    /// A token server for its app, on this port (`None`: the machine's own setting).
    Server(Option<u16>),
    /// A client of the token server that the machine of this id runs.
    ClientOf(i64),
}

/// Makes the machine `machine_id` of `app` what `assignment` says, for the user `by` (logged).
pub async fn assign(
    state: &AppState,
    app: &App,
    machine_id: i64,
    assignment: Assignment,
    by: &str,
) -> AppResult<()> {
    let (machine, target) = machine_target(state, app.id, machine_id).await?;
    match assignment {
        Assignment::Server(port) => {
            make_server(state, &machine, &target, &app.name, port).await?;
        }
        Assignment::ClientOf(server_id) => {
            let (server, server_target) =
                machine_target(state, app.id, server_id)
                    .await
                    .map_err(|e| match e {
                        AppError::NotFound(_) => {
                            AppError::field("server", format!("no machine {server_id} in this app"))
                        }
                        other => other,
                    })?;
            make_client(state, &machine, &target, (&server, &server_target)).await?;
        }
    }
    tracing::info!(
        target: "floodgate_dashboard::audit",
        user = by,
        app = %app.name,
        machine = %crate::push::machine_addr(&machine),
        ?assignment,
        "cluster role assigned"
    );
    Ok(())
}

/// A token server's port as a form or request gives it: blank for the machine's own, else 1 to
/// 65535.
pub fn server_port(text: &str) -> AppResult<Option<u16>> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    match text.parse::<u16>() {
        Ok(port) if port > 0 => Ok(Some(port)),
        _ => Err(AppError::field("port", "must be 1 to 65535, or blank")),
    }
}

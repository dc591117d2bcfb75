//! The cluster state of every live machine of an app, asked of each machine concurrently: its mode
//! and backend (`getClusterMode`), then what its backend says — a token client its server and state
//! (`cluster/client/fetchConfig`), a token server its port, its clients per namespace
//! (`cluster/server/info`) and its figures for the app's namespace (`cluster/server/metricList`).
//! A machine that does not answer, or answers something else than these, is unreachable with why;
//! a detail that fails is shown failed beside what did answer. A machine's calls take at most two
//! agent timeouts (the mode, then its backend's questions at once).

use super::answers::{
    Backend, ClientConfig, ClusterMode, FlowMetric, ServerInfo, read_client_config,
    read_cluster_mode, read_metric_list, read_server_info,
};
use crate::AppState;
use crate::agent_client::{CallError, Target};
use crate::db::Machine;
use crate::error::AppResult;
use crate::push::machine_addr;
use crate::routes::machines::join_all;

/// What a backend adds to a machine's mode.
#[derive(Debug, Clone, PartialEq)]
pub enum BackendDetail {
    /// Nothing more to ask (no backend, Redis — its settings come with the mode — or unknown).
    Nothing,
    /// A token client's settings, or why they could not be read.
    Client {
        /// `cluster/client/fetchConfig`.
        config: Result<ClientConfig, String>,
    },
    /// A token server's state and figures, or why each could not be read.
    Server {
        /// `cluster/server/info`.
        info: Result<ServerInfo, String>,
        /// `cluster/server/metricList` of the app's namespace.
        metrics: Result<Vec<FlowMetric>, String>,
    },
}

/// A machine that answered `getClusterMode`.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineState {
    /// Its mode and backend.
    pub mode: ClusterMode,
    /// What its backend says.
    pub detail: BackendDetail,
}

/// One live machine's cluster state.
#[derive(Debug, Clone)]
pub struct MachineCluster {
    /// The machine's id.
    pub machine_id: i64,
    /// `ip:port`.
    pub address: String,
    /// Its host name.
    pub hostname: String,
    /// Its state, or why it could not be had.
    pub state: Result<MachineState, String>,
}

/// What a failed call says, for a page.
pub(super) fn failure(e: CallError) -> String {
    match e {
        CallError::NotSupported => "not supported by this client".to_owned(),
        other => other.to_string(),
    }
}

/// `command`'s answer from `target`, read by `read`; or what went wrong, for a page.
pub(super) async fn ask<T, E: ToString>(
    state: &AppState,
    target: &Target,
    command: &str,
    params: &[(&str, &str)],
    read: fn(&str) -> Result<T, E>,
) -> Result<T, String> {
    let text = state
        .agents
        .get(target, command, params)
        .await
        .map_err(failure)?;
    read(&text).map_err(|e| e.to_string())
}

async fn machine_state(
    state: &AppState,
    target: &Target,
    namespace: &str,
) -> Result<MachineState, String> {
    let mode = ask(state, target, "getClusterMode", &[], read_cluster_mode).await?;
    let detail = match mode.backend {
        Backend::Client => BackendDetail::Client {
            config: ask(
                state,
                target,
                "cluster/client/fetchConfig",
                &[],
                read_client_config,
            )
            .await,
        },
        Backend::Server => {
            let of_namespace = [("namespace", namespace)];
            let (info, metrics) = tokio::join!(
                ask(state, target, "cluster/server/info", &[], read_server_info),
                ask(
                    state,
                    target,
                    "cluster/server/metricList",
                    &of_namespace,
                    read_metric_list,
                ),
            );
            BackendDetail::Server { info, metrics }
        }
        Backend::None | Backend::Redis(_) | Backend::Other { .. } => BackendDetail::Nothing,
    };
    Ok(MachineState { mode, detail })
}

/// The cluster state of every healthy machine of app `app_id` (named `app`, its namespace).
pub async fn cluster_of_app(
    state: &AppState,
    app_id: i64,
    app: &str,
) -> AppResult<Vec<MachineCluster>> {
    let machines: Vec<Machine> = state
        .db
        .healthy_machines(Some(app_id), state.healthy_since())
        .await?;
    let calls = machines.into_iter().map(|m| {
        let state = state.clone();
        let namespace = app.to_owned();
        async move {
            let target = Target::new(&m.ip, m.port, m.agent_token.clone())
                .filter(|t| state.gate.may_call(t.addr.ip()));
            let result = match target {
                None => Err("its address is not allowed".to_owned()),
                Some(t) => machine_state(&state, &t, &namespace).await,
            };
            MachineCluster {
                machine_id: m.id,
                address: machine_addr(&m),
                hostname: m.hostname.clone(),
                state: result,
            }
        }
    });
    Ok(join_all(calls).await)
}

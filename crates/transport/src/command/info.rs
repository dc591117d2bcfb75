//! `version`, `api`, `basicInfo`, `systemStatus`, `getSwitch`, `setSwitch`, `getClusterMode`.

use serde_json::json;

use super::{COMMANDS, CommandError, CommandState, Params};

/// The Sentinel version Floodgate speaks: the Java dashboard uses POST forms for agents at ≥ 1.7.1.
pub const SENTINEL_VERSION: &str = "1.8.9";

pub(crate) fn version() -> String {
    SENTINEL_VERSION.to_owned()
}

pub(crate) fn api() -> String {
    #[cfg(feature = "cluster")]
    let commands = COMMANDS.iter().chain(super::CLUSTER_COMMANDS);
    #[cfg(not(feature = "cluster"))]
    let commands = COMMANDS.iter();
    let list: Vec<_> = commands
        .map(|(name, desc)| json!({"url": format!("/{name}"), "desc": desc}))
        .collect();
    serde_json::Value::Array(list).to_string()
}

pub(crate) fn basic_info(state: &CommandState) -> String {
    json!({
        "machine": state.host.hostname,
        "ip": state.reported_ip.get(),
        "port": state.port,
        "floodgate": env!("CARGO_PKG_VERSION"),
    })
    .to_string()
}

/// Sentinel's keys for the inbound traffic, plus the probe's `load` and `cpu` (`null` when unavailable).
pub(crate) fn system_status(state: &CommandState) -> String {
    let inbound = state.fg.inbound_node();
    let system = state.fg.system_status();
    json!({
        "rqps": inbound.success_qps(),
        "qps": inbound.pass_qps(),
        "b": inbound.block_qps(),
        "r": inbound.avg_rt(),
        "t": inbound.cur_thread_num(),
        "load": system.load_average,
        "cpu": system.cpu_usage,
    })
    .to_string()
}

pub(crate) fn get_switch(state: &CommandState) -> String {
    format!("Sentinel switch value: {}", state.fg.is_enabled())
}

pub(crate) fn set_switch(state: &CommandState, params: &Params) -> Result<String, CommandError> {
    let value = match params.word("value") {
        Some("true") => true,
        Some("false") => false,
        _ => return Err(CommandError::bad_request("value must be `true` or `false`")),
    };
    state.fg.set_enabled(value);
    Ok(format!("Sentinel set switch value: {value}"))
}

#[cfg(not(feature = "cluster"))]
pub(crate) fn get_cluster_mode() -> String {
    // No cluster flow control yet: not started, neither client nor server available.
    json!({"mode": -1, "lastModified": -1, "clientAvailable": false, "serverAvailable": false})
        .to_string()
}

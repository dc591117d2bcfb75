//! `getRules`, `setRules`, `getParamFlowRules`, `setParamFlowRules`.
//!
//! A rule list with an invalid rule answers 400 with the error (rule index, field, reason) and changes
//! nothing. An accepted list is written to the rule file of its type, if one is configured, so that the
//! rules survive a restart; a failed write answers `partial success (write data source failed)` as
//! Sentinel does. Fields the rules of the type do not have are ignored, and named on lines after the
//! answer's first (``warning: rule 0: unknown field `strategyy` (ignored)``).

use floodgate_core::{RuleLoad, RuleType};
use serde_json::{Value, json};

use super::{CommandError, CommandState, Params};

fn rule_type(params: &Params) -> Result<RuleType, CommandError> {
    let t = params.word("type").unwrap_or_default().to_ascii_lowercase();
    match t.as_str() {
        "flow" => Ok(RuleType::Flow),
        "degrade" => Ok(RuleType::Degrade),
        "system" => Ok(RuleType::System),
        "authority" => Ok(RuleType::Authority),
        "paramflow" | "param_flow" | "param-flow" => Ok(RuleType::ParamFlow),
        _ => Err(CommandError::bad_request("invalid type")),
    }
}

pub(crate) fn get_rules(state: &CommandState, params: &Params) -> Result<String, CommandError> {
    Ok(state.fg.rules_json(rule_type(params)?))
}

/// Loads `data` as the rules of `t` and writes them to their file, on the blocking pool: parsing,
/// validating and compiling a large list takes long, and the agent's one runtime thread also serves
/// the other commands and sends the heartbeats. Loads run one at a time, in the order they arrived
/// (so the last pushed list of a type is the one in force, and in its file); a load whose client
/// hung up still finishes before the next starts.
async fn load(state: &CommandState, t: RuleType, data: &str) -> Result<String, CommandError> {
    let turn = state.rule_loads.clone().lock_owned().await;
    let (fg, files, data) = (state.fg.clone(), state.rule_files.clone(), data.to_owned());
    let loaded = tokio::task::spawn_blocking(move || {
        let _turn = turn;
        files.load_and_write(&fg, t, &data)
    })
    .await
    .map_err(|e| {
        tracing::error!(rule_type = %t, error = %e, "a rule load failed");
        CommandError::internal("the rule load failed")
    })?;
    let (load, written) = loaded.map_err(|e| CommandError::bad_request(e.to_string()))?;
    let mut answer = match written {
        Ok(()) => "success".to_owned(),
        Err(e) => {
            tracing::warn!(rule_type = %t, error = %e, "rules loaded but not written to their file");
            "partial success (write data source failed)".to_owned()
        }
    };
    append_warnings(&mut answer, &load);
    Ok(answer)
}

/// The most warning lines an answer carries (the engine logs the same number, then how many more).
const MAX_WARNING_LINES: usize = 20;

/// Appends one `warning: …` line per field the load ignored (at most [`MAX_WARNING_LINES`], then
/// how many more). Sentinel's dashboard sends only fields its rules have, so its answers stay the
/// exact `success` it requires.
fn append_warnings(answer: &mut String, load: &RuleLoad) {
    let warnings = load.warnings();
    for warning in warnings.iter().take(MAX_WARNING_LINES) {
        answer.push_str("\nwarning: ");
        answer.push_str(&warning.to_string());
    }
    if warnings.len() > MAX_WARNING_LINES {
        let more = warnings.len() - MAX_WARNING_LINES;
        answer.push_str(&format!("\nwarning: and {more} more"));
    }
}

pub(crate) async fn set_rules(
    state: &CommandState,
    params: &Params,
) -> Result<String, CommandError> {
    let t = rule_type(params)?;
    load(state, t, params.get("data").unwrap_or("[]")).await
}

pub(crate) fn get_param_flow_rules(state: &CommandState) -> String {
    state.fg.rules_json(RuleType::ParamFlow)
}

pub(crate) async fn set_param_flow_rules(
    state: &CommandState,
    params: &Params,
) -> Result<String, CommandError> {
    let data = params
        .non_blank("data")
        .ok_or_else(|| CommandError::bad_request("Bad data"))?;
    load(state, RuleType::ParamFlow, data).await
}

/// Every circuit breaker: resource, state (`CLOSED`/`OPEN`/`HALF_OPEN`), retry time, the current window's
/// counts and the rule — what Sentinel users asked for (#913) and no Sentinel command gives.
pub(crate) fn circuit_breakers(state: &CommandState) -> String {
    let list: Vec<Value> = state
        .fg
        .circuit_breakers()
        .iter()
        .map(|b| {
            json!({
                "resource": &*b.resource,
                "state": b.state.as_str(),
                "retryAt": b.retry_at_ms,
                "windowStart": b.window_start_ms,
                "total": b.total,
                "bad": b.bad,
                "rule": {
                    "resource": b.rule.resource,
                    "grade": b.rule.grade.as_i32(),
                    "count": b.rule.count,
                    "timeWindow": b.rule.time_window,
                    "minRequestAmount": b.rule.min_request_amount,
                    "slowRatioThreshold": b.rule.slow_ratio_threshold,
                    "statIntervalMs": b.rule.stat_interval_ms,
                },
            })
        })
        .collect();
    Value::Array(list).to_string()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use axum::body::Body;
    use axum::http::{Request, StatusCode, header};
    use floodgate_core::Floodgate;
    use tower_service::Service;

    use super::*;
    use crate::command::app;
    use crate::command::properties::state_with_files;
    use crate::rule_file::RuleFiles;

    fn set_rules(resource: &str) -> Request<Body> {
        let data = format!(r#"[{{"resource":"{resource}","count":1}}]"#);
        let body = form_urlencoded::Serializer::new(String::new())
            .append_pair("type", "flow")
            .append_pair("data", &data)
            .finish();
        Request::post("/setRules")
            .header(header::HOST, "127.0.0.1")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(body))
            .unwrap()
    }

    /// Two `setRules` of one type, the second arriving while the first waits for its turn: the
    /// second's rules are the ones in force, and in the rule file.
    #[tokio::test]
    async fn rule_loads_run_in_the_order_they_arrived() {
        let dir = std::env::temp_dir().join(format!("floodgate-order-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("flow.json");
        let files = RuleFiles::new(BTreeMap::from([(RuleType::Flow.into(), path.clone())]));
        let fg = Floodgate::default();
        let state = state_with_files(&fg, None, files);
        // A load in progress holds the turn while the two arrive, one after the other.
        let turn = state.rule_loads.clone().lock_owned().await;
        let mut first = Box::pin(app(state.clone()).call(set_rules("first")));
        let mut second = Box::pin(app(state.clone()).call(set_rules("second")));
        assert!(futures_now(&mut first).is_none(), "waits for its turn");
        assert!(futures_now(&mut second).is_none(), "waits behind the first");
        drop(turn);
        let (first, second) = tokio::join!(first, second);
        assert_eq!(first.unwrap().status(), StatusCode::OK);
        assert_eq!(second.unwrap().status(), StatusCode::OK);
        let in_force = fg.rules_json(RuleType::Flow);
        assert!(in_force.contains(r#""resource":"second""#), "{in_force}");
        assert!(!in_force.contains(r#""resource":"first""#), "{in_force}");
        let file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(file, serde_json::from_str::<Value>(&in_force).unwrap());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Polls `f` once: its output if it is ready.
    fn futures_now<F: std::future::Future + Unpin>(f: &mut F) -> Option<F::Output> {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        match std::pin::Pin::new(f).poll(&mut cx) {
            std::task::Poll::Ready(output) => Some(output),
            std::task::Poll::Pending => None,
        }
    }
}

//! An app's machines (address, host, version, heartbeat, health, the last push of each rule type,
//! drift), one machine's live resources as a tree or a list with "add rule" links, and the circuit
//! breakers of every healthy machine. The logic is the JSON API's (`routes::machines`).

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use floodgate_core::RuleType;
use serde::Deserialize;
use serde_json::Value;

use super::error::{OrPage, PageError, ago, utc};
use super::{Chrome, Page};
use crate::AppState;
use crate::auth::{CurrentUser, Role, SignedInBy};
use crate::error::{AppError, AppResult};
use crate::push::machine_addr;
use crate::routes::machines::{
    MachineBreakers, breakers_of_app, live_resources, machine_pushes, machine_target, versions,
};

/// The app named `name`.
pub(super) async fn find_app(state: &AppState, name: &str) -> AppResult<crate::db::App> {
    state
        .db
        .app_by_name(name)
        .await?
        .ok_or(AppError::NotFound("app"))
}

/// One rule type's last push to one machine.
#[derive(Debug)]
struct PushCell {
    /// `ok`, `failed`, `not supported`, `pending`, `unmanaged` (also the CSS class, spaces as `-`).
    status: &'static str,
    class: String,
    /// The machine's answer when the push failed, and the version pushed.
    detail: String,
}

#[derive(Debug)]
struct MachineRow {
    id: i64,
    address: String,
    hostname: String,
    version: String,
    heartbeat: String,
    ago: String,
    healthy: bool,
    pushes: Vec<PushCell>,
    drift: bool,
}

#[derive(Template)]
#[template(path = "machines/index.html")]
struct MachinesPage {
    chrome: Chrome,
    app: String,
    types: Vec<&'static str>,
    machines: Vec<MachineRow>,
}

pub(super) async fn machines(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Path(app): Path<String>,
) -> Result<Response, PageError> {
    let chrome = Chrome::new(&user, &by);
    let found = find_app(&state, &app).await.or_page(&chrome)?;
    let list = async {
        let machines = state.db.machines_of_app(found.id).await?;
        let pushes = state.db.pushes_of_app(found.id).await?;
        let versions = versions(&state, found.id).await?;
        AppResult::Ok((machines, pushes, versions))
    };
    let (machines, pushes, versions) = list.await.or_page(&chrome)?;
    let now = state.now_ms();
    let since = state.healthy_since();
    let rows = machines
        .iter()
        .map(|m| {
            let (by_type, drift) = machine_pushes(m, &pushes, &versions);
            MachineRow {
                id: m.id,
                address: machine_addr(m),
                hostname: m.hostname.clone(),
                version: m.sentinel_version.clone(),
                heartbeat: utc(m.last_heartbeat),
                ago: ago(now, m.last_heartbeat),
                healthy: m.last_heartbeat >= since,
                pushes: by_type
                    .into_iter()
                    .map(|(_, p)| PushCell {
                        status: p.status,
                        class: p.status.replace(' ', "-"),
                        detail: match (&p.record, p.status) {
                            (Some(r), "failed") => {
                                format!(
                                    "{} (version {}, {} attempts)",
                                    r.message, r.version, r.attempts
                                )
                            }
                            (Some(r), _) => format!("version {}", r.version),
                            (None, _) => String::new(),
                        },
                    })
                    .collect(),
                drift,
            }
        })
        .collect();
    Ok(Page(MachinesPage {
        chrome,
        app,
        types: RuleType::ALL.iter().map(|t| t.as_str()).collect(),
        machines: rows,
    })
    .into_response())
}

/// Pushes every rule type the app manages to its healthy machines now, then back to the machines.
pub(super) async fn push_all(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Path(app): Path<String>,
) -> Result<Response, PageError> {
    let chrome = Chrome::new(&user, &by);
    user.require(Role::Editor).or_page(&chrome)?;
    let found = find_app(&state, &app).await.or_page(&chrome)?;
    state.pusher.push_all(found.id);
    Ok(Redirect::to(&format!("/apps/{}/machines", super::segment(&app))).into_response())
}

#[derive(Debug, Deserialize)]
pub(super) struct ResourcesQuery {
    view: Option<String>,
}

#[derive(Debug)]
struct NodeRow {
    resource: String,
    depth: usize,
    pass: i64,
    block: i64,
    success: i64,
    exception: i64,
    threads: i64,
    rt: i64,
}

#[derive(Template)]
#[template(path = "machines/resources.html")]
struct ResourcesPage {
    chrome: Chrome,
    app: String,
    machine_id: i64,
    address: String,
    hostname: String,
    tree: bool,
    nodes: Vec<NodeRow>,
}

/// The deepest indentation shown (deeper nodes are indented as much).
const MAX_DEPTH: usize = 12;

fn int(v: &Value, key: &str) -> i64 {
    v.get(key)
        .and_then(|x| x.as_i64().or_else(|| x.as_f64().map(|f| f as i64)))
        .unwrap_or(0)
}

fn text(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// The most nodes of a machine's answer shown (a tree of thousands of resources is still whole).
const MAX_NODES: usize = 20_000;

/// The nodes in order (at most [`MAX_NODES`]), each with its depth: the parent chain (`parentId`)
/// of each node counted once, through an index of the ids, so that an answer of any shape is
/// linear work; a node whose parent is unknown, or that is on a cycle, counts as a root.
fn rows_of(nodes: &[Value], tree: bool) -> Vec<NodeRow> {
    let nodes = &nodes[..nodes.len().min(MAX_NODES)];
    let index: HashMap<String, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (text(n, "id"), i))
        .collect();
    let parents: Vec<Option<usize>> = nodes
        .iter()
        .map(|n| {
            let parent = text(n, "parentId");
            (!parent.is_empty())
                .then(|| index.get(&parent).copied())
                .flatten()
        })
        .collect();
    // Depth of every node, memoised; a walk that meets a node of its own walk found a cycle.
    let mut depths: Vec<Option<usize>> = vec![None; nodes.len()];
    if tree {
        for start in 0..nodes.len() {
            let mut path = Vec::new();
            let mut on_path = std::collections::HashSet::new();
            let mut at = Some(start);
            let base = loop {
                match at {
                    None => break 0,
                    Some(i) if depths[i].is_some() => break depths[i].unwrap_or(0) + 1,
                    Some(i) if !on_path.insert(i) => {
                        // A cycle: its nodes are roots.
                        for &n in &path {
                            depths[n] = Some(0);
                        }
                        path.clear();
                        break 0;
                    }
                    Some(i) => {
                        path.push(i);
                        at = parents[i];
                    }
                }
            };
            for (k, &n) in path.iter().rev().enumerate() {
                depths[n] = Some(base + k);
            }
        }
    }
    nodes
        .iter()
        .enumerate()
        .map(|(i, n)| NodeRow {
            resource: text(n, "resource"),
            depth: depths[i].unwrap_or(0).min(MAX_DEPTH),
            pass: int(n, "passQps"),
            block: int(n, "blockQps"),
            success: int(n, "successQps"),
            exception: int(n, "exceptionQps"),
            threads: int(n, "threadNum"),
            rt: int(n, "averageRt"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn depths_follow_parents_and_cycles_are_roots() {
        let nodes = vec![
            json!({"id": "r", "resource": "machine-root"}),
            json!({"id": "c", "parentId": "r", "resource": "ctx"}),
            json!({"id": "a", "parentId": "c", "resource": "A"}),
            json!({"id": "x", "parentId": "y", "resource": "X"}),
            json!({"id": "y", "parentId": "x", "resource": "Y"}),
            json!({"id": "o", "parentId": "gone", "resource": "O"}),
        ];
        let depths: Vec<usize> = rows_of(&nodes, true).iter().map(|r| r.depth).collect();
        assert_eq!(depths, [0, 1, 2, 0, 0, 0]);
    }

    #[test]
    fn a_long_cyclic_answer_is_linear_work() {
        // 20,000 nodes each naming the next as parent, the last naming the first.
        let n = 20_000;
        let nodes: Vec<Value> = (0..n)
            .map(|i| json!({"id": i.to_string(), "parentId": ((i + 1) % n).to_string()}))
            .collect();
        let rows = rows_of(&nodes, true);
        assert_eq!(rows.len(), n);
        assert!(rows.iter().all(|r| r.depth == 0));
    }

    #[test]
    fn a_far_retry_time_does_not_overflow() {
        assert_eq!(until(0, i64::MAX), format!("in {} s", i64::MAX / 1000));
        assert_eq!(until(10, 5), "due");
    }
}

pub(super) async fn resources(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Path((app, id)): Path<(String, i64)>,
    Query(q): Query<ResourcesQuery>,
) -> Result<Response, PageError> {
    let chrome = Chrome::new(&user, &by);
    let view = q.view.as_deref().unwrap_or("list");
    let found = find_app(&state, &app).await.or_page(&chrome)?;
    let (machine, target) = machine_target(&state, found.id, id)
        .await
        .or_page(&chrome)?;
    let nodes = live_resources(&state, &target, view)
        .await
        .or_page(&chrome)?;
    let tree = view == "tree";
    let mut rows = rows_of(&nodes, tree);
    if !tree {
        rows.sort_by(|a, b| {
            b.pass
                .cmp(&a.pass)
                .then_with(|| a.resource.cmp(&b.resource))
        });
    }
    Ok(Page(ResourcesPage {
        chrome,
        app,
        machine_id: machine.id,
        address: machine_addr(&machine),
        hostname: machine.hostname.clone(),
        tree,
        nodes: rows,
    })
    .into_response())
}

/// One circuit breaker as a page shows it.
#[derive(Debug)]
pub(super) struct BreakerRow {
    pub(super) resource: String,
    /// `closed`, `open`, `half-open` (also the CSS class), or the state as the machine said it.
    pub(super) state: String,
    pub(super) explain: &'static str,
    pub(super) since: String,
    pub(super) grade: &'static str,
    pub(super) threshold: String,
}

/// One machine's breakers.
#[derive(Debug)]
pub(super) struct MachineBreakerRows {
    pub(super) machine_id: i64,
    pub(super) address: String,
    pub(super) hostname: String,
    /// `ok`, `not supported`, or why the machine did not answer.
    pub(super) status: String,
    pub(super) breakers: Vec<BreakerRow>,
}

fn grade_name(grade: i64) -> &'static str {
    match grade {
        0 => "slow-call ratio",
        1 => "error ratio",
        2 => "error count",
        _ => "unknown",
    }
}

fn number(v: Option<&Value>) -> String {
    match v.and_then(Value::as_f64) {
        Some(f) if f.fract() == 0.0 => format!("{}", f as i64),
        Some(f) => format!("{f}"),
        None => "–".to_owned(),
    }
}

fn breaker_row(b: &Value, now: i64) -> BreakerRow {
    let rule = b.get("rule").cloned().unwrap_or(Value::Null);
    let grade = int(&rule, "grade");
    let threshold = match grade {
        0 => format!(
            "calls slower than {} ms over {} of calls",
            number(rule.get("count")),
            number(rule.get("slowRatioThreshold"))
        ),
        1 => format!("error ratio over {}", number(rule.get("count"))),
        2 => format!("more than {} errors", number(rule.get("count"))),
        _ => number(rule.get("count")),
    };
    let threshold = format!(
        "{threshold}; at least {} calls in {} ms; open for {} s",
        number(rule.get("minRequestAmount")),
        number(rule.get("statIntervalMs")),
        number(rule.get("timeWindow"))
    );
    let raw = text(b, "state");
    let (state, explain) = match raw.as_str() {
        "CLOSED" => ("closed", "calls pass"),
        "OPEN" => ("open", "calls are refused until the retry time"),
        "HALF_OPEN" => ("half-open", "one trial call decides"),
        _ => ("unknown", "the machine named an unknown state"),
    };
    let retry = int(b, "retryAt");
    let window = int(b, "windowStart");
    let since = if raw == "OPEN" && retry > 0 {
        format!("retry at {} ({})", utc(retry), until(now, retry))
    } else if window > 0 {
        format!(
            "window since {} ({} calls, {} bad)",
            utc(window),
            int(b, "total"),
            int(b, "bad")
        )
    } else {
        "–".to_owned()
    };
    BreakerRow {
        resource: text(b, "resource"),
        state: if state == "unknown" {
            raw.clone()
        } else {
            state.to_owned()
        },
        explain,
        since,
        grade: grade_name(grade),
        threshold,
    }
}

fn until(now: i64, ms: i64) -> String {
    if ms <= now {
        "due".to_owned()
    } else {
        format!("in {} s", ms.saturating_sub(now).saturating_add(999) / 1000)
    }
}

/// The breakers of every healthy machine of app `app_id`, those of `resource` only when given.
pub(super) async fn breaker_rows(
    state: &AppState,
    app_id: i64,
    resource: Option<&str>,
) -> AppResult<Vec<MachineBreakerRows>> {
    let now = state.now_ms();
    let all: Vec<MachineBreakers> = breakers_of_app(state, app_id).await?;
    Ok(all
        .into_iter()
        .map(|m| MachineBreakerRows {
            machine_id: m.machine.id,
            address: machine_addr(&m.machine),
            hostname: m.machine.hostname.clone(),
            breakers: m
                .breakers
                .as_array()
                .map(|list| {
                    list.iter()
                        .map(|b| breaker_row(b, now))
                        .filter(|b| resource.is_none_or(|r| b.resource == r))
                        .collect()
                })
                .unwrap_or_default(),
            status: m.status,
        })
        .collect())
}

#[derive(Template)]
#[template(path = "machines/breakers.html")]
struct BreakersPage {
    chrome: Chrome,
    app: String,
    machines: Vec<MachineBreakerRows>,
}

pub(super) async fn breakers(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Path(app): Path<String>,
) -> Result<Response, PageError> {
    let chrome = Chrome::new(&user, &by);
    let found = find_app(&state, &app).await.or_page(&chrome)?;
    let machines = breaker_rows(&state, found.id, None)
        .await
        .or_page(&chrome)?;
    Ok(Page(BreakersPage {
        chrome,
        app,
        machines,
    })
    .into_response())
}

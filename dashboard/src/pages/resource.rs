//! A resource's page: its charts (refreshed in place like the monitoring page's), its rules of
//! every type (read-only, linking to the rules pages) and its circuit breaker on each machine.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use floodgate_core::RuleType;
use serde_json::Value;

use super::apps::{MonitorQuery, RANGES, one_resource, range_of};
use super::error::{OrPage, PageError};
use super::machines::{MachineBreakerRows, breaker_rows, find_app};
use super::{Chrome, Page};
use crate::AppState;
use crate::auth::{CurrentUser, SignedInBy};
use crate::error::AppResult;

/// One stored rule, read-only: its id and its fields but the resource.
#[derive(Debug)]
struct RuleRow {
    id: i64,
    fields: Vec<(String, String)>,
}

/// The rules of one type.
#[derive(Debug)]
struct RuleGroup {
    rule_type: &'static str,
    title: &'static str,
    rules: Vec<RuleRow>,
}

#[derive(Template)]
#[template(path = "resource/show.html")]
struct ResourcePage {
    chrome: Chrome,
    app: String,
    resource: String,
    ranges: Vec<(&'static str, bool)>,
    /// The resource's page URL, for the range links.
    page_url: String,
    charts_url: String,
    charts: String,
    rule_groups: Vec<RuleGroup>,
    machines: Vec<MachineBreakerRows>,
}

fn title_of(t: RuleType) -> &'static str {
    match t {
        RuleType::Flow => "Flow rules",
        RuleType::Degrade => "Circuit-breaking (degrade) rules",
        RuleType::System => "System rules",
        RuleType::Authority => "Authority rules",
        RuleType::ParamFlow => "Hot-parameter rules",
    }
}

fn field_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

async fn rule_groups(state: &AppState, app_id: i64, resource: &str) -> AppResult<Vec<RuleGroup>> {
    let mut groups = Vec::new();
    for t in RuleType::ALL {
        if t == RuleType::System {
            // System rules guard the whole app, not one resource.
            continue;
        }
        let rules = state
            .db
            .rules(app_id, t.as_str())
            .await?
            .into_iter()
            .filter(|r| r.resource.as_deref() == Some(resource))
            .map(|r| {
                let fields = match serde_json::from_str::<Value>(&r.body) {
                    Ok(Value::Object(map)) => map
                        .iter()
                        .filter(|(k, _)| k.as_str() != "resource" && k.as_str() != "id")
                        .map(|(k, v)| (k.clone(), field_text(v)))
                        .collect(),
                    _ => vec![("rule".to_owned(), r.body.clone())],
                };
                RuleRow { id: r.id, fields }
            })
            .collect();
        groups.push(RuleGroup {
            rule_type: t.as_str(),
            title: title_of(t),
            rules,
        });
    }
    Ok(groups)
}

pub(super) async fn show(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Path((app, resource)): Path<(String, String)>,
    Query(q): Query<MonitorQuery>,
) -> Result<Response, PageError> {
    let chrome = Chrome::new(&user, &by);
    let found = find_app(&state, &app).await.or_page(&chrome)?;
    let (range, range_ms) = range_of(&q).or_page(&chrome)?;
    let charts = one_resource(&state, &app, found.id, &resource, range_ms)
        .await
        .or_page(&chrome)?;
    let charts = charts
        .render()
        .map_err(|e| crate::AppError::Internal(anyhow::anyhow!("charts did not render: {e}")))
        .or_page(&chrome)?;
    let rule_groups = rule_groups(&state, found.id, &resource)
        .await
        .or_page(&chrome)?;
    let machines = breaker_rows(&state, found.id, Some(&resource))
        .await
        .or_page(&chrome)?;
    let page_url = format!(
        "/apps/{}/resources/{}",
        super::segment(&app),
        super::segment(&resource)
    );
    let charts_url = format!(
        "/apps/{}/charts?range={range}&resource={}",
        super::segment(&app),
        super::segment(&resource)
    );
    Ok(Page(ResourcePage {
        chrome,
        app,
        resource,
        ranges: RANGES.iter().map(|(r, _)| (*r, *r == range)).collect(),
        page_url,
        charts_url,
        charts,
        rule_groups,
        machines,
    })
    .into_response())
}

//! The history of an app's rule changes, newest first: who, when, what, and a diff of the list
//! before and after (rules added, removed and changed, matched by id); for editors, a rollback to
//! the list as it was before a change.

use std::collections::BTreeSet;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use floodgate_core::RuleType;
use serde::Deserialize;
use serde_json::Value;

use super::rule_form::title;
use super::rules::find_app;
use super::{Chrome, Page};
use crate::AppState;
use crate::auth::{CurrentUser, Role, SignedInBy};
use crate::db::HistoryEntry;
use crate::error::AppResult;
use crate::rules::{roll_back, rule_type};

/// The most changes on one page.
const PAGE: i64 = 50;

/// A rule added or removed.
#[derive(Debug)]
struct WholeRule {
    id: i64,
    resource: String,
    json: String,
}

/// A rule whose fields changed: each field, its old and new value.
#[derive(Debug)]
struct ChangedRule {
    id: i64,
    resource: String,
    fields: Vec<(String, String, String)>,
}

/// One change of the history.
#[derive(Debug)]
struct ChangeView {
    id: i64,
    actor: String,
    at: String,
    action: String,
    type_title: String,
    added: Vec<WholeRule>,
    removed: Vec<WholeRule>,
    changed: Vec<ChangedRule>,
    unchanged: usize,
    rollback_url: String,
}

/// A filter of the history by type.
#[derive(Debug)]
struct Filter {
    title: &'static str,
    url: String,
    current: bool,
}

#[derive(Template)]
#[template(path = "history/list.html")]
struct History {
    chrome: Chrome,
    app: String,
    filters: Vec<Filter>,
    changes: Vec<ChangeView>,
    older_url: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct HistoryQuery {
    #[serde(rename = "type")]
    rule_type: Option<String>,
    before: Option<i64>,
}

/// A list of the history (`[{"id": .., "rule": {..}}]`) as (id, rule) pairs.
fn parse_list(text: &str) -> Vec<(i64, Value)> {
    let items: Vec<Value> = serde_json::from_str(text).unwrap_or_default();
    items
        .into_iter()
        .filter_map(|item| Some((item["id"].as_i64()?, item["rule"].clone())))
        .collect()
}

fn resource_of(rule: &Value) -> String {
    rule["resource"].as_str().unwrap_or("").to_owned()
}

fn shown(v: Option<&Value>) -> String {
    match v {
        None => "(none)".to_owned(),
        Some(Value::String(s)) => format!("\"{s}\""),
        Some(v) => v.to_string(),
    }
}

fn view(app: &str, e: &HistoryEntry) -> ChangeView {
    let before = parse_list(&e.before);
    let after = parse_list(&e.after);
    let whole = |(id, rule): &(i64, Value)| WholeRule {
        id: *id,
        resource: resource_of(rule),
        json: serde_json::to_string(rule).unwrap_or_default(),
    };
    let added = after
        .iter()
        .filter(|(id, _)| !before.iter().any(|(b, _)| b == id))
        .map(whole)
        .collect();
    let removed = before
        .iter()
        .filter(|(id, _)| !after.iter().any(|(a, _)| a == id))
        .map(whole)
        .collect();
    let mut changed = Vec::new();
    let mut unchanged = 0;
    for (id, old) in &before {
        let Some((_, new)) = after.iter().find(|(a, _)| a == id) else {
            continue;
        };
        let empty = serde_json::Map::new();
        let old_map = old.as_object().unwrap_or(&empty);
        let new_map = new.as_object().unwrap_or(&empty);
        let keys: BTreeSet<&String> = old_map.keys().chain(new_map.keys()).collect();
        let fields: Vec<(String, String, String)> = keys
            .into_iter()
            .filter(|k| old_map.get(*k) != new_map.get(*k))
            .map(|k| (k.clone(), shown(old_map.get(k)), shown(new_map.get(k))))
            .collect();
        if fields.is_empty() {
            unchanged += 1;
        } else {
            changed.push(ChangedRule {
                id: *id,
                resource: resource_of(new),
                fields,
            });
        }
    }
    ChangeView {
        id: e.id,
        actor: e.actor.clone(),
        at: super::error::utc(e.at),
        action: e.action.clone(),
        type_title: e
            .rule_type
            .parse::<RuleType>()
            .map_or_else(|_| e.rule_type.clone(), |t| title(t).to_owned()),
        added,
        removed,
        changed,
        unchanged,
        rollback_url: format!("/apps/{}/history/{}/rollback", super::segment(app), e.id),
    }
}

pub(super) async fn list(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Path(app): Path<String>,
    Query(q): Query<HistoryQuery>,
) -> AppResult<Response> {
    let found = find_app(&state, &app).await?;
    let only = q.rule_type.as_deref().map(rule_type).transpose()?;
    let entries = state
        .db
        .history(found.id, only.map(|t| t.as_str()), q.before, PAGE)
        .await?;
    let base = format!("/apps/{}/history", super::segment(&app));
    let mut filters = vec![Filter {
        title: "All types",
        url: base.clone(),
        current: only.is_none(),
    }];
    filters.extend(RuleType::ALL.iter().map(|t| Filter {
        title: title(*t),
        url: format!("{base}?type={}", t.as_str()),
        current: only == Some(*t),
    }));
    let older_url = match entries.last() {
        Some(last) if entries.len() as i64 == PAGE => Some(match only {
            Some(t) => format!("{base}?type={}&before={}", t.as_str(), last.id),
            None => format!("{base}?before={}", last.id),
        }),
        _ => None,
    };
    let changes = entries.iter().map(|e| view(&app, e)).collect();
    Ok(Page(History {
        chrome: Chrome::new(&user, &by),
        app,
        filters,
        changes,
        older_url,
    })
    .into_response())
}

pub(super) async fn rollback(
    State(state): State<AppState>,
    user: CurrentUser,
    Path((app, id)): Path<(String, i64)>,
) -> AppResult<Response> {
    user.require(Role::Editor)?;
    let found = find_app(&state, &app).await?;
    roll_back(&state, found.id, id, &user.username).await?;
    Ok(Redirect::to(&format!("/apps/{}/history", super::segment(&app))).into_response())
}

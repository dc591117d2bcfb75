//! An app's rules, per type: the list (each rule in plain words), and the forms that create and
//! edit one — every Sentinel field named in words with a hint, the server's errors next to their
//! fields. Every change goes through [`RuleBook::apply`](crate::rules::RuleBook::apply), as the
//! JSON API's do; a viewer sees the lists without the controls and is refused every change.

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use floodgate_core::RuleType;
use serde::Deserialize;
use serde_json::Value;

use super::rule_form::{
    Kind, Values, cluster_marker, is_cluster_field, specs, summary, title, to_rule,
};
use super::{Chrome, Page};
use crate::AppState;
use crate::auth::{CurrentUser, Role, SignedInBy};
use crate::db::App;
use crate::error::{AppError, AppResult, FieldError};
use crate::rules::{Change, rule_type};

pub(super) async fn find_app(state: &AppState, name: &str) -> AppResult<App> {
    state
        .db
        .app_by_name(name)
        .await?
        .ok_or(AppError::NotFound("app"))
}

fn list_url(app: &str, rule_type: RuleType) -> String {
    format!("/apps/{}/rules/{}", super::segment(app), rule_type.as_str())
}

/// A tab of the rule pages.
#[derive(Debug)]
struct Tab {
    title: &'static str,
    url: String,
    current: bool,
}

fn tabs(app: &str, current: RuleType) -> Vec<Tab> {
    RuleType::ALL
        .iter()
        .map(|t| Tab {
            title: title(*t),
            url: list_url(app, *t),
            current: *t == current,
        })
        .collect()
}

/// One rule of the list.
#[derive(Debug)]
struct RuleRow {
    id: i64,
    resource: String,
    origin: String,
    summary: String,
    regex: bool,
    /// "cluster · GLOBAL · flowId 7" for a rule in cluster mode.
    cluster: Option<String>,
    edit_url: String,
    delete_url: String,
}

#[derive(Template)]
#[template(path = "rules/list.html")]
struct RuleList {
    chrome: Chrome,
    app: String,
    title: &'static str,
    has_resource: bool,
    tabs: Vec<Tab>,
    version: Option<i64>,
    rules: Vec<RuleRow>,
    new_url: String,
    history_url: String,
}

pub(super) async fn list(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Path((app, t)): Path<(String, String)>,
) -> AppResult<Response> {
    let rule_type = rule_type(&t)?;
    let found = find_app(&state, &app).await?;
    let version = state.db.rule_version(found.id, rule_type.as_str()).await?;
    let base = list_url(&app, rule_type);
    let rules = state
        .db
        .rules(found.id, rule_type.as_str())
        .await?
        .into_iter()
        .map(|r| {
            let rule: Value = serde_json::from_str(&r.body).unwrap_or(Value::Null);
            RuleRow {
                id: r.id,
                resource: r.resource.clone().unwrap_or_default(),
                origin: rule["limitApp"].as_str().unwrap_or("").to_owned(),
                summary: summary(rule_type, &rule),
                regex: rule["regex"].as_bool() == Some(true),
                cluster: cluster_marker(&rule),
                edit_url: format!("{base}/{}/edit", r.id),
                delete_url: format!("{base}/{}/delete", r.id),
            }
        })
        .collect();
    Ok(Page(RuleList {
        chrome: Chrome::new(&user, &by),
        tabs: tabs(&app, rule_type),
        title: title(rule_type),
        has_resource: rule_type != RuleType::System,
        version,
        rules,
        new_url: format!("{base}/new"),
        history_url: format!(
            "/apps/{}/history?type={}",
            super::segment(&app),
            rule_type.as_str()
        ),
        app,
    })
    .into_response())
}

/// One field of a rule form, ready to show.
#[derive(Debug)]
struct FieldView {
    name: &'static str,
    label: &'static str,
    hint: &'static str,
    /// `text`, `int`, `float`, `select`, `check` or `items`.
    kind: &'static str,
    value: String,
    /// A select's choices: value, words, whether chosen.
    options: Vec<(&'static str, &'static str, bool)>,
    error: Option<String>,
    /// A field of the cluster config, shown while the cluster mode box is ticked.
    cluster: bool,
}

#[derive(Template)]
#[template(path = "rules/form.html")]
struct RuleForm {
    chrome: Chrome,
    app: String,
    heading: String,
    action: String,
    cancel_url: String,
    tabs: Vec<Tab>,
    fields: Vec<FieldView>,
    /// Errors that name no field of the form.
    errors: Vec<String>,
}

/// The form of `rule_type` showing `values` and `errors`, each error next to its field.
fn form_page(
    chrome: Chrome,
    app: String,
    rule_type: RuleType,
    rule_id: Option<i64>,
    values: &Values,
    errors: &[FieldError],
) -> RuleForm {
    let base = list_url(&app, rule_type);
    let mut fields: Vec<FieldView> = specs(rule_type)
        .iter()
        .map(|s| {
            let value = values.get(s.name).unwrap_or("").to_owned();
            let (kind, options) = match s.kind {
                Kind::Text => ("text", Vec::new()),
                Kind::Int => ("int", Vec::new()),
                Kind::Float => ("float", Vec::new()),
                Kind::Check => ("check", Vec::new()),
                Kind::Items => ("items", Vec::new()),
                Kind::Select(choices) => (
                    "select",
                    choices.iter().map(|(v, w)| (*v, *w, *v == value)).collect(),
                ),
            };
            FieldView {
                name: s.name,
                label: s.label,
                hint: s.hint,
                kind,
                value,
                options,
                error: None,
                cluster: is_cluster_field(s.name),
            }
        })
        .collect();
    let mut general = Vec::new();
    for e in errors {
        let field = fields.iter_mut().find(|f| {
            e.field == f.name
                || e.field
                    .strip_prefix(f.name)
                    .is_some_and(|rest| rest.starts_with(['[', '.']))
        });
        match (e.index, field) {
            (None, Some(f)) => {
                let message = if e.field == f.name {
                    e.message.clone()
                } else {
                    format!("{}: {}", e.field, e.message)
                };
                f.error = Some(match f.error.take() {
                    Some(earlier) => format!("{earlier}; {message}"),
                    None => message,
                });
            }
            (Some(i), _) => general.push(format!(
                "Another rule of the list (#{}) is invalid: {} {}",
                i + 1,
                e.field,
                e.message
            )),
            (None, None) => general.push(format!("{} {}", e.field, e.message)),
        }
    }
    let (heading, action) = match rule_id {
        Some(id) => (
            format!("Edit {} rule {id}", title(rule_type).to_lowercase()),
            format!("{base}/{id}"),
        ),
        None => (
            format!("New {} rule", title(rule_type).to_lowercase()),
            base.clone(),
        ),
    };
    RuleForm {
        chrome,
        tabs: tabs(&app, rule_type),
        app,
        heading,
        action,
        cancel_url: base,
        fields,
        errors: general,
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct NewQuery {
    resource: Option<String>,
}

pub(super) async fn new_form(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Path((app, t)): Path<(String, String)>,
    Query(q): Query<NewQuery>,
) -> AppResult<Response> {
    user.require(Role::Editor)?;
    let rule_type = rule_type(&t)?;
    find_app(&state, &app).await?;
    let mut prefill = Vec::new();
    if let Some(resource) = q.resource.as_deref()
        && rule_type != RuleType::System
    {
        prefill.push(("resource", resource));
    }
    let values = Values::defaults(rule_type, &prefill);
    let page = form_page(Chrome::new(&user, &by), app, rule_type, None, &values, &[]);
    Ok(Page(page).into_response())
}

/// The stored rule `id` of `rule_type` of `app`, as JSON.
async fn stored_rule(
    state: &AppState,
    app: &App,
    rule_type: RuleType,
    id: i64,
) -> AppResult<Value> {
    let rules = state.db.rules(app.id, rule_type.as_str()).await?;
    let rule = rules
        .iter()
        .find(|r| r.id == id)
        .ok_or(AppError::NotFound("rule"))?;
    serde_json::from_str(&rule.body)
        .map_err(|e| AppError::Internal(anyhow::anyhow!("stored rule {id} unreadable: {e}")))
}

pub(super) async fn edit_form(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Path((app, t, id)): Path<(String, String, i64)>,
) -> AppResult<Response> {
    user.require(Role::Editor)?;
    let rule_type = rule_type(&t)?;
    let found = find_app(&state, &app).await?;
    let rule = stored_rule(&state, &found, rule_type, id).await?;
    let values = Values::of_rule(rule_type, &rule);
    let page = form_page(
        Chrome::new(&user, &by),
        app,
        rule_type,
        Some(id),
        &values,
        &[],
    );
    Ok(Page(page).into_response())
}

/// Applies the rule a form describes (a new one, or rule `id`): 303 to the list, or the form again
/// with the errors next to their fields (422) and nothing saved.
async fn save(
    state: &AppState,
    user: &CurrentUser,
    by: &SignedInBy,
    app: String,
    t: &str,
    id: Option<i64>,
    body: &[u8],
) -> AppResult<Response> {
    user.require(Role::Editor)?;
    let rule_type = rule_type(t)?;
    let found = find_app(state, &app).await?;
    let values = Values::parse(body);
    let base = match id {
        Some(id) => Some(stored_rule(state, &found, rule_type, id).await?),
        None => None,
    };
    let outcome = match to_rule(rule_type, &values, base.as_ref()) {
        Ok(rule) => {
            let change = match id {
                Some(id) => Change::Update { id, rule },
                None => Change::Create(rule),
            };
            state
                .rules
                .apply(state, found.id, rule_type, change, &user.username)
                .await
        }
        Err(errors) => Err(AppError::Invalid(errors)),
    };
    match outcome {
        Ok(_) => Ok(Redirect::to(&list_url(&app, rule_type)).into_response()),
        Err(AppError::Invalid(errors)) => {
            let page = form_page(Chrome::new(user, by), app, rule_type, id, &values, &errors);
            Ok((StatusCode::UNPROCESSABLE_ENTITY, Page(page)).into_response())
        }
        Err(e) => Err(e),
    }
}

pub(super) async fn create(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Path((app, t)): Path<(String, String)>,
    body: Bytes,
) -> AppResult<Response> {
    save(&state, &user, &by, app, &t, None, &body).await
}

pub(super) async fn update(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Path((app, t, id)): Path<(String, String, i64)>,
    body: Bytes,
) -> AppResult<Response> {
    save(&state, &user, &by, app, &t, Some(id), &body).await
}

pub(super) async fn delete(
    State(state): State<AppState>,
    user: CurrentUser,
    Path((app, t, id)): Path<(String, String, i64)>,
) -> AppResult<Response> {
    user.require(Role::Editor)?;
    let rule_type = rule_type(&t)?;
    let found = find_app(&state, &app).await?;
    state
        .rules
        .apply(
            &state,
            found.id,
            rule_type,
            Change::Delete(id),
            &user.username,
        )
        .await?;
    Ok(Redirect::to(&list_url(&app, rule_type)).into_response())
}

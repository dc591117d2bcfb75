//! Routes of the metrics area: a resource's chart, an app's resources (all, or the most active) and
//! an app's summary for the overview. Any signed-in role may read them.
//!
//! A chart is per second when its range lies within the per-second retention and spans at most
//! [`MAX_SECOND_RANGE_MS`], else per minute (QPS = the minute's sums / 60). A second or minute without
//! data has no point, so the chart shows a gap.

use std::collections::HashMap;

use axum::extract::{Path, RawQuery, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;

use crate::AppState;
use crate::auth::CurrentUser;
use crate::db::{App, MINUTE_MS, MetricPoint};
use crate::error::{AppError, AppResult};
use crate::ingest::retention::floor_minute;

/// The longest range shown per second (6 hours).
pub(super) const MAX_SECOND_RANGE_MS: i64 = 6 * 3600 * 1000;
/// The longest range a chart may ask for (7 days).
pub(super) const MAX_RANGE_MS: i64 = 7 * 86_400 * 1000;
/// The range shown when none is given (5 minutes).
pub(super) const DEFAULT_RANGE_MS: i64 = 5 * MINUTE_MS;
/// The seconds of an app's summary sparkline.
const SPARKLINE_SECS: i64 = 60;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/apps/{app}/metrics", get(chart))
        .route("/api/apps/{app}/resources", get(resources))
        .route("/api/apps/{app}/resources/top", get(top))
        .route("/api/apps/{app}/summary", get(summary))
}

/// A chart's resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Resolution {
    /// One point per second.
    Second,
    /// One point per minute.
    Minute,
}

/// One point of a chart.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Point {
    /// The second, or the minute's first ms.
    ts: i64,
    /// Passes per second.
    pass_qps: f64,
    /// Blocks per second.
    block_qps: f64,
    /// Completions per second.
    success_qps: f64,
    /// Errors per second.
    exception_qps: f64,
    /// The average response time of the completions, in ms.
    avg_rt: f64,
}

impl Point {
    /// `p`'s sums over `secs` seconds as rates.
    fn from_sums(p: &MetricPoint, secs: f64) -> Point {
        Point {
            ts: p.ts,
            pass_qps: p.pass as f64 / secs,
            block_qps: p.block as f64 / secs,
            success_qps: p.success as f64 / secs,
            exception_qps: p.exception as f64 / secs,
            avg_rt: avg_rt(p.rt_sum, p.success),
        }
    }
}

fn avg_rt(rt_sum: i64, success: i64) -> f64 {
    if success > 0 {
        rt_sum as f64 / success as f64
    } else {
        0.0
    }
}

/// The range and resolution of a chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Plan {
    /// The first ms.
    from: i64,
    /// The last ms.
    to: i64,
    /// Per second or per minute.
    resolution: Resolution,
}

/// Checks a chart's `from` and `to` (ms; defaults: the last 5 minutes) at `now` and picks its
/// resolution given the per-second retention.
pub(super) fn plan(
    now: i64,
    from: Option<&str>,
    to: Option<&str>,
    second_retention_ms: i64,
) -> AppResult<Plan> {
    let ms = |field: &str, v: Option<&str>| -> AppResult<Option<i64>> {
        match v.map(str::trim).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v
                .parse::<i64>()
                .ok()
                .filter(|v| *v >= 0)
                .map(Some)
                .ok_or_else(|| AppError::field(field, "must be a time in ms since the epoch")),
        }
    };
    let to = ms("to", to)?.unwrap_or(now);
    let from = ms("from", from)?.unwrap_or(to.saturating_sub(DEFAULT_RANGE_MS));
    if from > to {
        return Err(AppError::field("from", "must not be after `to`"));
    }
    if to - from > MAX_RANGE_MS {
        return Err(AppError::field("from", "the range may span at most 7 days"));
    }
    let resolution = if to - from <= MAX_SECOND_RANGE_MS && from >= now - second_retention_ms {
        Resolution::Second
    } else {
        Resolution::Minute
    };
    Ok(Plan {
        from,
        to,
        resolution,
    })
}

/// A request's query parameters (the last of a repeated name wins).
fn params(query: Option<String>) -> HashMap<String, String> {
    query
        .as_deref()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default()
}

fn bounded(
    params: &HashMap<String, String>,
    name: &str,
    default: i64,
    range: std::ops::RangeInclusive<i64>,
) -> AppResult<i64> {
    match params.get(name).map(|v| v.trim()).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|v| range.contains(v))
            .ok_or_else(|| {
                AppError::field(
                    name,
                    format!("must be a number in {}–{}", range.start(), range.end()),
                )
            }),
    }
}

async fn app_named(state: &AppState, name: &str) -> AppResult<App> {
    state
        .db
        .app_by_name(name)
        .await?
        .ok_or(AppError::NotFound("app"))
}

/// A resource's chart.
#[derive(Debug, Serialize)]
struct Chart {
    resource: String,
    resolution: Resolution,
    points: Vec<Point>,
}

/// `GET /api/apps/{app}/metrics?resource=R&from=ms&to=ms`.
async fn chart(
    _user: CurrentUser,
    State(state): State<AppState>,
    Path(app): Path<String>,
    RawQuery(query): RawQuery,
) -> AppResult<Json<Chart>> {
    let app = app_named(&state, &app).await?;
    let params = params(query);
    let resource = params
        .get("resource")
        .filter(|r| !r.is_empty())
        .ok_or_else(|| AppError::field("resource", "is required"))?
        .clone();
    let retention_ms =
        i64::try_from(state.config.second_retention_secs.saturating_mul(1000)).unwrap_or(i64::MAX);
    let plan = plan(
        state.now_ms(),
        params.get("from").map(String::as_str),
        params.get("to").map(String::as_str),
        retention_ms,
    )?;
    let points = match state.db.resource_id(app.id, &resource).await? {
        None => Vec::new(),
        Some(id) => match plan.resolution {
            Resolution::Second => state
                .db
                .metric_seconds(id, plan.from, plan.to)
                .await?
                .iter()
                .map(|p| Point::from_sums(p, 1.0))
                .collect(),
            Resolution::Minute => state
                .db
                .metric_minutes(id, floor_minute(plan.from), plan.to)
                .await?
                .iter()
                .map(|p| Point::from_sums(p, 60.0))
                .collect(),
        },
    };
    Ok(Json(Chart {
        resource,
        resolution: plan.resolution,
        points,
    }))
}

/// `GET /api/apps/{app}/resources`: every resource name of the app.
async fn resources(
    _user: CurrentUser,
    State(state): State<AppState>,
    Path(app): Path<String>,
) -> AppResult<Json<serde_json::Value>> {
    let app = app_named(&state, &app).await?;
    let names = state.db.resource_names(app.id).await?;
    Ok(Json(serde_json::json!({ "resources": names })))
}

/// A resource active in the window, with its latest second.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Active {
    resource: String,
    #[serde(flatten)]
    latest: Point,
}

/// `GET /api/apps/{app}/resources/top?minutes=1&limit=20&search=`: the resources active in the last
/// `minutes`, most blocked first, then most passed.
async fn top(
    _user: CurrentUser,
    State(state): State<AppState>,
    Path(app): Path<String>,
    RawQuery(query): RawQuery,
) -> AppResult<Json<serde_json::Value>> {
    let app = app_named(&state, &app).await?;
    let params = params(query);
    let minutes = bounded(&params, "minutes", 1, 1..=60)?;
    let limit = bounded(&params, "limit", 20, 1..=100)?;
    let search = params.get("search").map(|s| s.trim()).unwrap_or("");
    if search.len() > crate::ingest::line::MAX_RESOURCE_BYTES {
        return Err(AppError::field("search", "is too long"));
    }
    let now = state.now_ms();
    let rows = state
        .db
        .active_resources(app.id, now - minutes * MINUTE_MS, now, search, limit)
        .await?;
    let resources: Vec<Active> = rows
        .into_iter()
        .map(|r| Active {
            latest: Point {
                ts: r.ts,
                pass_qps: r.pass as f64,
                block_qps: r.block as f64,
                success_qps: r.success as f64,
                exception_qps: r.exception as f64,
                avg_rt: avg_rt(r.rt_sum, r.success),
            },
            resource: r.resource,
        })
        .collect();
    Ok(Json(
        serde_json::json!({ "minutes": minutes, "resources": resources }),
    ))
}

/// One second of a sparkline.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Spark {
    ts: i64,
    pass_qps: i64,
}

/// An app's traffic now and over the last minute.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    /// The newest second stored in the last minute (`null` without any).
    ts: Option<i64>,
    pass_qps: i64,
    block_qps: i64,
    sparkline: Vec<Spark>,
}

/// `GET /api/apps/{app}/summary`: pass and block QPS of the newest complete second summed over the
/// app's resources, and the pass QPS of each second of the last minute.
async fn summary(
    _user: CurrentUser,
    State(state): State<AppState>,
    Path(app): Path<String>,
) -> AppResult<Json<Summary>> {
    let app = app_named(&state, &app).await?;
    let now = state.now_ms();
    let seconds = state
        .db
        .app_seconds(app.id, now - SPARKLINE_SECS * 1000, now)
        .await?;
    let last = seconds.last().copied();
    Ok(Json(Summary {
        ts: last.map(|s| s.ts),
        pass_qps: last.map_or(0, |s| s.pass),
        block_qps: last.map_or(0, |s| s.block),
        sparkline: seconds
            .iter()
            .map(|s| Spark {
                ts: s.ts,
                pass_qps: s.pass,
            })
            .collect(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000_000;
    const SIX_HOURS: i64 = 6 * 3600 * 1000;

    #[test]
    fn the_range_picks_the_resolution() {
        let p = plan(NOW, None, None, SIX_HOURS).unwrap();
        assert_eq!(
            (p.from, p.to, p.resolution),
            (NOW - DEFAULT_RANGE_MS, NOW, Resolution::Second)
        );
        let from = (NOW - SIX_HOURS).to_string();
        assert_eq!(
            plan(NOW, Some(&from), None, SIX_HOURS).unwrap().resolution,
            Resolution::Second
        );
        let from = (NOW - SIX_HOURS - 1).to_string();
        assert_eq!(
            plan(NOW, Some(&from), None, SIX_HOURS).unwrap().resolution,
            Resolution::Minute
        );
        // An hour a day ago is beyond the seconds kept.
        let (from, to) = (
            (NOW - 86_400_000).to_string(),
            (NOW - 82_800_000).to_string(),
        );
        assert_eq!(
            plan(NOW, Some(&from), Some(&to), SIX_HOURS)
                .unwrap()
                .resolution,
            Resolution::Minute
        );
    }

    #[test]
    fn bad_ranges_name_the_field() {
        let field = |from: &str, to: &str| match plan(NOW, Some(from), Some(to), SIX_HOURS) {
            Err(AppError::Invalid(f)) => f[0].field.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(field("soon", ""), "from");
        assert_eq!(field("", "-5"), "to");
        assert_eq!(field("2000", "1000"), "from");
        assert_eq!(field("0", &(MAX_RANGE_MS + 1).to_string()), "from");
    }
}

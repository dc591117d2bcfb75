//! The apps overview (machines healthy/total, pass and block QPS now, a sparkline per app) and an
//! app's monitoring page: a chart per resource (pass, block, success, exception QPS; average RT),
//! busiest first, searchable, over 5 min / 1 h / 6 h / 24 h / 7 d, refreshed in place.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;

use super::chart::{Frame, Series, line_chart, sparkline};
use super::{Chrome, Page};
use crate::AppState;
use crate::auth::{CurrentUser, SignedInBy};
use crate::db::{MINUTE_MS, MetricPoint};
use crate::error::{AppError, AppResult};

/// The most resources charted on one page.
const MAX_CHARTS: i64 = 50;

/// One app on the overview.
#[derive(Debug)]
struct AppRow {
    name: String,
    healthy: usize,
    total: usize,
    pass_qps: i64,
    block_qps: i64,
    sparkline: String,
}

#[derive(Template)]
#[template(path = "apps/index.html")]
struct Overview {
    chrome: Chrome,
    apps: Vec<AppRow>,
}

pub(super) async fn overview(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
) -> AppResult<Response> {
    let now = state.now_ms();
    let since = state.healthy_since();
    let mut apps = Vec::new();
    for app in state.db.apps().await? {
        let machines = state.db.machines_of_app(app.id).await?;
        let seconds = state.db.app_seconds(app.id, now - 62_000, now).await?;
        // The newest complete second; the one being fetched may hold only some machines.
        let last = seconds.last();
        apps.push(AppRow {
            healthy: machines
                .iter()
                .filter(|m| m.last_heartbeat >= since)
                .count(),
            total: machines.len(),
            pass_qps: last.map_or(0, |s| s.pass),
            block_qps: last.map_or(0, |s| s.block),
            sparkline: sparkline(&seconds.iter().map(|s| s.pass as f64).collect::<Vec<_>>()),
            name: app.name,
        });
    }
    Ok(Page(Overview {
        chrome: Chrome::new(&user, &by),
        apps,
    })
    .into_response())
}

/// The ranges a monitoring page offers.
pub(super) const RANGES: [(&str, i64); 5] = [
    ("5m", 5 * MINUTE_MS),
    ("1h", 60 * MINUTE_MS),
    ("6h", 360 * MINUTE_MS),
    ("24h", 1440 * MINUTE_MS),
    ("7d", 7 * 1440 * MINUTE_MS),
];

#[derive(Debug, Deserialize)]
pub(super) struct MonitorQuery {
    pub(super) range: Option<String>,
    q: Option<String>,
    /// Only this resource (exactly), for a resource's page.
    resource: Option<String>,
}

/// One resource's charts.
#[derive(Debug)]
pub(super) struct ResourceCharts {
    name: String,
    qps: String,
    rt: String,
    pass_now: String,
    block_now: String,
}

#[derive(Template)]
#[template(path = "apps/monitor.html")]
struct Monitor {
    chrome: Chrome,
    app: String,
    range: &'static str,
    /// Each range offered, and whether it is the one shown.
    ranges: Vec<(&'static str, bool)>,
    search: String,
    charts_url: String,
    charts: Charts,
}

#[derive(Template)]
#[template(path = "apps/charts.html")]
pub(super) struct Charts {
    /// The app (each resource's title links to its page).
    pub(super) app: String,
    pub(super) resources: Vec<ResourceCharts>,
    pub(super) resolution: &'static str,
}

pub(super) fn range_of(q: &MonitorQuery) -> AppResult<(&'static str, i64)> {
    let wanted = q.range.as_deref().unwrap_or("5m");
    RANGES
        .iter()
        .find(|(name, _)| *name == wanted)
        .copied()
        .ok_or_else(|| AppError::field("range", "must be 5m, 1h, 6h, 24h or 7d"))
}

fn rate(v: i64, secs: f64) -> Option<f64> {
    Some(v as f64 / secs)
}

/// The span a page charts: the range ending at the last complete second, per second while the
/// stored seconds cover it (up to 6 h), per minute beyond.
#[derive(Debug, Clone, Copy)]
pub(super) struct ChartWindow {
    from: i64,
    to: i64,
    per_second: bool,
    /// The first second the busiest resources are judged from (stored seconds only).
    rank_from: i64,
}

impl ChartWindow {
    pub(super) fn new(state: &AppState, range_ms: i64) -> ChartWindow {
        let now = state.now_ms();
        // The newest second shown is the last complete one; the range ends there.
        let to = now - now.rem_euclid(1000) - 1000;
        let from = to - range_ms;
        let second_retention = (state.config.second_retention_secs * 1000) as i64;
        ChartWindow {
            from,
            to,
            per_second: range_ms <= 6 * 3600 * 1000 && from >= now - second_retention,
            rank_from: from.max(now - second_retention),
        }
    }

    fn step_secs(self) -> (i64, f64) {
        if self.per_second {
            (1000, 1.0)
        } else {
            (MINUTE_MS, 60.0)
        }
    }

    pub(super) fn resolution(self) -> &'static str {
        if self.per_second {
            "per second"
        } else {
            "per minute"
        }
    }
}

/// The charts of resource `name` (stored as `id`) over `window`.
pub(super) async fn resource_charts(
    state: &AppState,
    id: i64,
    name: String,
    window: ChartWindow,
) -> AppResult<ResourceCharts> {
    let ChartWindow { from, to, .. } = window;
    let (step, secs) = window.step_secs();
    let points: Vec<MetricPoint> = if window.per_second {
        state.db.metric_seconds(id, from, to).await?
    } else {
        state.db.metric_minutes(id, from, to).await?
    };
    let xs: Vec<i64> = points.iter().map(|p| p.ts).collect();
    let pass: Vec<Option<f64>> = points.iter().map(|p| rate(p.pass, secs)).collect();
    let block: Vec<Option<f64>> = points.iter().map(|p| rate(p.block, secs)).collect();
    let success: Vec<Option<f64>> = points.iter().map(|p| rate(p.success, secs)).collect();
    let exception: Vec<Option<f64>> = points.iter().map(|p| rate(p.exception, secs)).collect();
    let rt: Vec<Option<f64>> = points
        .iter()
        .map(|p| (p.success > 0).then(|| p.rt_sum as f64 / p.success as f64))
        .collect();
    let frame = Frame {
        xs: &xs,
        from,
        to,
        step,
    };
    let qps = line_chart(
        &format!("{name} QPS"),
        frame,
        &[
            Series {
                name: "pass",
                class: "pass",
                values: &pass,
            },
            Series {
                name: "block",
                class: "block",
                values: &block,
            },
            Series {
                name: "success",
                class: "success",
                values: &success,
            },
            Series {
                name: "exception",
                class: "exception",
                values: &exception,
            },
        ],
        "QPS",
        Some(&[Series {
            name: "avg RT (ms)",
            class: "rt",
            values: &rt,
        }]),
    );
    let rt = line_chart(
        &format!("{name} average RT"),
        frame,
        &[Series {
            name: "avg RT",
            class: "rt",
            values: &rt,
        }],
        "ms",
        None,
    );
    let last = points.last();
    Ok(ResourceCharts {
        pass_now: last.map_or("–".to_owned(), |p| format!("{:.0}", p.pass as f64 / secs)),
        block_now: last.map_or("–".to_owned(), |p| {
            format!("{:.0}", p.block as f64 / secs)
        }),
        name,
        qps,
        rt,
    })
}

async fn build_charts(
    state: &AppState,
    app: &str,
    app_id: i64,
    range_ms: i64,
    search: &str,
) -> AppResult<Charts> {
    let window = ChartWindow::new(state, range_ms);
    // Busiest first, judged over the range's stored seconds.
    let active = state
        .db
        .active_resources(app_id, window.rank_from, window.to, search, MAX_CHARTS)
        .await?;
    let mut resources = Vec::with_capacity(active.len());
    for a in active {
        resources.push(resource_charts(state, a.id, a.resource, window).await?);
    }
    Ok(Charts {
        app: app.to_owned(),
        resources,
        resolution: window.resolution(),
    })
}

/// The charts of `resource` alone (none when it has no stored metrics).
pub(super) async fn one_resource(
    state: &AppState,
    app: &str,
    app_id: i64,
    resource: &str,
    range_ms: i64,
) -> AppResult<Charts> {
    let window = ChartWindow::new(state, range_ms);
    let resources = match state.db.resource_id(app_id, resource).await? {
        Some(id) => vec![resource_charts(state, id, resource.to_owned(), window).await?],
        None => Vec::new(),
    };
    Ok(Charts {
        app: app.to_owned(),
        resources,
        resolution: window.resolution(),
    })
}

pub(super) async fn app_id(state: &AppState, name: &str) -> AppResult<i64> {
    Ok(state
        .db
        .app_by_name(name)
        .await?
        .ok_or(AppError::NotFound("app"))?
        .id)
}

pub(super) async fn monitor(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Path(app): Path<String>,
    Query(q): Query<MonitorQuery>,
) -> AppResult<Response> {
    let id = app_id(&state, &app).await?;
    let (range, range_ms) = range_of(&q)?;
    let search = q.q.clone().unwrap_or_default();
    let charts = build_charts(&state, &app, id, range_ms, &search).await?;
    let mut query = form_urlencoded::Serializer::new(String::new());
    query.append_pair("range", range);
    if !search.is_empty() {
        query.append_pair("q", &search);
    }
    let charts_url = format!("/apps/{}/charts?{}", super::segment(&app), query.finish());
    Ok(Page(Monitor {
        chrome: Chrome::new(&user, &by),
        app,
        range,
        ranges: RANGES.iter().map(|(r, _)| (*r, *r == range)).collect(),
        search,
        charts_url,
        charts,
    })
    .into_response())
}

/// The charts alone, which `live.js` fetches every 2 s to replace them in place.
pub(super) async fn charts(
    State(state): State<AppState>,
    _user: CurrentUser,
    Path(app): Path<String>,
    Query(q): Query<MonitorQuery>,
) -> AppResult<Response> {
    let id = app_id(&state, &app).await?;
    let (_, range_ms) = range_of(&q)?;
    let charts = match &q.resource {
        Some(resource) => one_resource(&state, &app, id, resource, range_ms).await?,
        None => build_charts(&state, &app, id, range_ms, q.q.as_deref().unwrap_or("")).await?,
    };
    let html = charts
        .render()
        .map_err(|e| AppError::Internal(anyhow::anyhow!("charts did not render: {e}")))?;
    Ok(Html(html).into_response())
}

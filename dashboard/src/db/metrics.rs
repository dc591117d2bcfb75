//! Metric rows: per app × resource × second in `metric_seconds` (summed over the app's machines,
//! added to by late machines), rolled up per minute into `metric_minutes`, and the reads the charts
//! and the resource lists make. Resource names are stored once in `resources`; rows refer to their id.
//!
//! A commit sends its rows as one JSON array bound to one `INSERT … SELECT … FROM json_each(?)`
//! statement (per chunk of [`ROWS_PER_STATEMENT`]): one call into SQLite instead of one per row, which
//! is what keeps 10 000 rows a second cheap.

use std::collections::HashMap;
use std::fmt::Write as _;

use sqlx::FromRow;

use super::Db;

/// The most rows sent in one statement.
pub(super) const ROWS_PER_STATEMENT: usize = 5000;
/// One minute, in ms.
pub const MINUTE_MS: i64 = 60_000;

/// The sums of one resource in one second (or minute), over the app's machines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MetricSums {
    /// Calls let through.
    pub pass: i64,
    /// Calls blocked.
    pub block: i64,
    /// Calls completed.
    pub success: i64,
    /// Calls that ended with an error.
    pub exception: i64,
    /// `Σ avgRt × success` over the machines.
    pub rt_sum: i64,
    /// The machines that reported the resource in that second.
    pub machines: i64,
}

impl MetricSums {
    /// The average response time of the completed calls (0 without any).
    pub fn avg_rt(&self) -> f64 {
        if self.success > 0 {
            self.rt_sum as f64 / self.success as f64
        } else {
            0.0
        }
    }
}

/// One row to add: app, resource name, second, sums.
#[derive(Debug, Clone, Copy)]
pub struct SecondRow<'a> {
    /// The app.
    pub app_id: i64,
    /// The resource's name.
    pub resource: &'a str,
    /// The second (ms).
    pub ts: i64,
    /// What to add.
    pub sums: MetricSums,
}

/// The ids of resources already stored, by app and name (kept by the writer across commits).
pub type ResourceIds = HashMap<(i64, String), i64>;

/// What a commit wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOutcome {
    /// Rows added or created.
    pub rows: usize,
    /// Rows left out because their resource could not be stored (their app was deleted).
    pub skipped: usize,
}

/// One point of a resource's chart: the sums of a second or a minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromRow)]
pub struct MetricPoint {
    /// The second or the minute's first ms.
    pub ts: i64,
    /// Calls let through.
    pub pass: i64,
    /// Calls blocked.
    pub block: i64,
    /// Calls completed.
    pub success: i64,
    /// Calls that ended with an error.
    pub exception: i64,
    /// `Σ avgRt × success`.
    pub rt_sum: i64,
}

/// A resource active in a window, with its latest second.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct ResourceActivity {
    /// The resource's id.
    pub id: i64,
    /// The resource's name.
    pub resource: String,
    /// Its latest second in the window.
    pub ts: i64,
    /// That second's passes.
    pub pass: i64,
    /// That second's blocks.
    pub block: i64,
    /// That second's completions.
    pub success: i64,
    /// That second's errors.
    pub exception: i64,
    /// That second's `Σ avgRt × success`.
    pub rt_sum: i64,
    /// Blocks over the window.
    pub total_block: i64,
    /// Passes over the window.
    pub total_pass: i64,
}

/// One resource's sums in one second, by name.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct ResourceSecond {
    /// The resource's name.
    pub resource: String,
    /// Calls let through, over the app's machines.
    pub pass: i64,
    /// Calls blocked, over the app's machines.
    pub block: i64,
    /// The machines that reported the resource in that second.
    pub machines: i64,
}

/// An app's traffic in one second, summed over its resources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromRow)]
pub struct AppSecond {
    /// The second.
    pub ts: i64,
    /// Passes.
    pub pass: i64,
    /// Blocks.
    pub block: i64,
}

const ADD_SECONDS: &str = "INSERT INTO metric_seconds \
         (resource_id, ts, pass, block, success, exception, rt_sum, machines) \
     SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, \
            value ->> 6, value ->> 7 \
     FROM json_each(?) WHERE true \
     ON CONFLICT (resource_id, ts) DO UPDATE SET \
         pass = pass + excluded.pass, block = block + excluded.block, \
         success = success + excluded.success, exception = exception + excluded.exception, \
         rt_sum = rt_sum + excluded.rt_sum, machines = machines + excluded.machines";

impl Db {
    /// Adds `rows` to the per-second table in one transaction, creating the resources not yet in
    /// `ids` (which learns them once the transaction is committed).
    pub async fn add_metric_seconds(
        &self,
        rows: &[SecondRow<'_>],
        ids: &mut ResourceIds,
    ) -> Result<WriteOutcome, sqlx::Error> {
        let mut tx = self.pool().begin().await?;
        let mut created: ResourceIds = HashMap::new();
        let mut refused: Vec<(i64, &str)> = Vec::new();
        for row in rows {
            let key = (row.app_id, row.resource.to_owned());
            if ids.contains_key(&key)
                || created.contains_key(&key)
                || refused.contains(&(row.app_id, row.resource))
            {
                continue;
            }
            if let Err(e) = sqlx::query(
                "INSERT INTO resources (app_id, name) VALUES (?, ?) \
                 ON CONFLICT (app_id, name) DO NOTHING",
            )
            .bind(row.app_id)
            .bind(row.resource)
            .execute(&mut *tx)
            .await
            {
                // Its app is gone (a foreign key): the rows of that resource are left out below.
                tracing::warn!(app_id = row.app_id, error = %e, "metric resource not stored");
            }
            let id: Option<i64> =
                sqlx::query_scalar("SELECT id FROM resources WHERE app_id = ? AND name = ?")
                    .bind(row.app_id)
                    .bind(row.resource)
                    .fetch_optional(&mut *tx)
                    .await?;
            match id {
                Some(id) => {
                    created.insert(key, id);
                }
                None => refused.push((row.app_id, row.resource)),
            }
        }
        let mut outcome = WriteOutcome::default();
        let mut json = String::new();
        for chunk in rows.chunks(ROWS_PER_STATEMENT) {
            json.clear();
            json.push('[');
            let mut n = 0usize;
            for row in chunk {
                let key = (row.app_id, row.resource.to_owned());
                let Some(id) = ids.get(&key).or_else(|| created.get(&key)) else {
                    outcome.skipped += 1;
                    continue;
                };
                let s = &row.sums;
                if n > 0 {
                    json.push(',');
                }
                // Only integers go into the text, so it is valid JSON by construction.
                let _ = write!(
                    json,
                    "[{id},{},{},{},{},{},{},{}]",
                    row.ts, s.pass, s.block, s.success, s.exception, s.rt_sum, s.machines
                );
                n += 1;
            }
            json.push(']');
            if n > 0 {
                sqlx::query(ADD_SECONDS)
                    .bind(json.as_str())
                    .execute(&mut *tx)
                    .await?;
                outcome.rows += n;
            }
        }
        tx.commit().await?;
        ids.extend(created);
        Ok(outcome)
    }

    /// The newest second stored for app `app_id` at or after `since`.
    pub async fn last_metric_second(
        &self,
        app_id: i64,
        since: i64,
    ) -> Result<Option<i64>, sqlx::Error> {
        sqlx::query_scalar(
            "SELECT MAX(s.ts) FROM resources r JOIN metric_seconds s ON s.resource_id = r.id \
             WHERE r.app_id = ? AND s.ts >= ?",
        )
        .bind(app_id)
        .bind(since)
        .fetch_one(self.pool())
        .await
    }

    /// The newest second stored for app `app_id` in `[from, to]`.
    pub async fn newest_metric_second(
        &self,
        app_id: i64,
        from: i64,
        to: i64,
    ) -> Result<Option<i64>, sqlx::Error> {
        sqlx::query_scalar(
            "SELECT MAX(s.ts) FROM resources r JOIN metric_seconds s ON s.resource_id = r.id \
             WHERE r.app_id = ? AND s.ts >= ? AND s.ts <= ?",
        )
        .bind(app_id)
        .bind(from)
        .bind(to)
        .fetch_one(self.pool())
        .await
    }

    /// App `app_id`'s resources with traffic in second `ts`, with their sums.
    pub async fn resources_in_second(
        &self,
        app_id: i64,
        ts: i64,
    ) -> Result<Vec<ResourceSecond>, sqlx::Error> {
        sqlx::query_as(
            "SELECT r.name AS resource, s.pass, s.block, s.machines \
             FROM resources r JOIN metric_seconds s ON s.resource_id = r.id \
             WHERE r.app_id = ? AND s.ts = ? ORDER BY r.name",
        )
        .bind(app_id)
        .bind(ts)
        .fetch_all(self.pool())
        .await
    }

    /// The first minute not yet rolled up: the one after the newest stored minute.
    pub async fn minutes_rolled_through(&self) -> Result<Option<i64>, sqlx::Error> {
        let newest: Option<i64> = sqlx::query_scalar("SELECT MAX(ts) FROM metric_minutes")
            .fetch_one(self.pool())
            .await?;
        Ok(newest.map(|ts| ts + MINUTE_MS))
    }

    /// The oldest second stored.
    pub async fn oldest_metric_second(&self) -> Result<Option<i64>, sqlx::Error> {
        sqlx::query_scalar("SELECT MIN(ts) FROM metric_seconds")
            .fetch_one(self.pool())
            .await
    }

    /// Recomputes the minutes in `[from, to)` (whole minutes) from the seconds, replacing what was
    /// stored for them. Returns the minute rows written.
    pub async fn roll_up_minutes(&self, from: i64, to: i64) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(
            "INSERT INTO metric_minutes (resource_id, ts, pass, block, success, exception, rt_sum) \
             SELECT resource_id, ts - ts % 60000, SUM(pass), SUM(block), SUM(success), \
                    SUM(exception), SUM(rt_sum) \
             FROM metric_seconds WHERE ts >= ? AND ts < ? \
             GROUP BY resource_id, ts - ts % 60000 \
             ON CONFLICT (resource_id, ts) DO UPDATE SET pass = excluded.pass, \
                 block = excluded.block, success = excluded.success, \
                 exception = excluded.exception, rt_sum = excluded.rt_sum",
        )
        .bind(from)
        .bind(to)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected())
    }

    /// Deletes the seconds before `before`. Returns the rows deleted.
    pub async fn delete_metric_seconds_before(&self, before: i64) -> Result<u64, sqlx::Error> {
        let done = sqlx::query("DELETE FROM metric_seconds WHERE ts < ?")
            .bind(before)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected())
    }

    /// Deletes the minutes before `before`. Returns the rows deleted.
    pub async fn delete_metric_minutes_before(&self, before: i64) -> Result<u64, sqlx::Error> {
        let done = sqlx::query("DELETE FROM metric_minutes WHERE ts < ?")
            .bind(before)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected())
    }

    /// The id of app `app_id`'s resource `name`.
    pub async fn resource_id(&self, app_id: i64, name: &str) -> Result<Option<i64>, sqlx::Error> {
        sqlx::query_scalar("SELECT id FROM resources WHERE app_id = ? AND name = ?")
            .bind(app_id)
            .bind(name)
            .fetch_optional(self.pool())
            .await
    }

    /// Every resource name of app `app_id`, by name.
    pub async fn resource_names(&self, app_id: i64) -> Result<Vec<String>, sqlx::Error> {
        sqlx::query_scalar("SELECT name FROM resources WHERE app_id = ? ORDER BY name")
            .bind(app_id)
            .fetch_all(self.pool())
            .await
    }

    /// Resource `resource_id`'s seconds in `[from, to]`, oldest first.
    pub async fn metric_seconds(
        &self,
        resource_id: i64,
        from: i64,
        to: i64,
    ) -> Result<Vec<MetricPoint>, sqlx::Error> {
        sqlx::query_as(
            "SELECT ts, pass, block, success, exception, rt_sum FROM metric_seconds \
             WHERE resource_id = ? AND ts >= ? AND ts <= ? ORDER BY ts",
        )
        .bind(resource_id)
        .bind(from)
        .bind(to)
        .fetch_all(self.pool())
        .await
    }

    /// Resource `resource_id`'s minutes starting in `[from, to]`, oldest first: the rolled-up ones,
    /// then the minutes not rolled up yet summed from their seconds.
    pub async fn metric_minutes(
        &self,
        resource_id: i64,
        from: i64,
        to: i64,
    ) -> Result<Vec<MetricPoint>, sqlx::Error> {
        sqlx::query_as(
            "SELECT ts, pass, block, success, exception, rt_sum FROM metric_minutes \
             WHERE resource_id = ? AND ts >= ? AND ts <= ? \
             UNION ALL \
             SELECT ts - ts % 60000 AS ts, SUM(pass), SUM(block), SUM(success), SUM(exception), \
                    SUM(rt_sum) \
             FROM metric_seconds \
             WHERE resource_id = ? AND ts >= ? AND ts < ? + 60000 \
               AND ts >= (SELECT COALESCE(MAX(ts) + 60000, 0) FROM metric_minutes) \
             GROUP BY ts - ts % 60000 \
             ORDER BY ts",
        )
        .bind(resource_id)
        .bind(from)
        .bind(to)
        .bind(resource_id)
        .bind(from)
        .bind(to)
        .fetch_all(self.pool())
        .await
    }

    /// App `app_id`'s resources with seconds in `[from, to]` whose name contains `search` (any case;
    /// empty: all), most blocked first, then most passed, at most `limit`.
    pub async fn active_resources(
        &self,
        app_id: i64,
        from: i64,
        to: i64,
        search: &str,
        limit: i64,
    ) -> Result<Vec<ResourceActivity>, sqlx::Error> {
        // With a single MAX() aggregate, SQLite takes the bare columns from the row holding the
        // maximum: the resource's latest second.
        sqlx::query_as(
            "SELECT r.id AS id, r.name AS resource, MAX(s.ts) AS ts, s.pass, s.block, s.success, s.exception, \
                    s.rt_sum, SUM(s.block) AS total_block, SUM(s.pass) AS total_pass \
             FROM resources r JOIN metric_seconds s ON s.resource_id = r.id \
             WHERE r.app_id = ? AND s.ts >= ? AND s.ts <= ? \
               AND (? = '' OR instr(lower(r.name), lower(?)) > 0) \
             GROUP BY r.id \
             ORDER BY total_block DESC, total_pass DESC, r.name \
             LIMIT ?",
        )
        .bind(app_id)
        .bind(from)
        .bind(to)
        .bind(search)
        .bind(search)
        .bind(limit)
        .fetch_all(self.pool())
        .await
    }

    /// App `app_id`'s passes and blocks per second in `[from, to]`, summed over its resources.
    pub async fn app_seconds(
        &self,
        app_id: i64,
        from: i64,
        to: i64,
    ) -> Result<Vec<AppSecond>, sqlx::Error> {
        sqlx::query_as(
            "SELECT s.ts, SUM(s.pass) AS pass, SUM(s.block) AS block \
             FROM resources r JOIN metric_seconds s ON s.resource_id = r.id \
             WHERE r.app_id = ? AND s.ts >= ? AND s.ts <= ? \
             GROUP BY s.ts ORDER BY s.ts",
        )
        .bind(app_id)
        .bind(from)
        .bind(to)
        .fetch_all(self.pool())
        .await
    }
}

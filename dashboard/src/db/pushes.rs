//! The outcome of the last push of each rule type to each machine.

use sqlx::FromRow;

use super::Db;

/// The last push of one rule type to one machine.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct PushRecord {
    /// The machine.
    pub machine_id: i64,
    /// The rule type.
    pub rule_type: String,
    /// The version of the list pushed.
    pub version: i64,
    /// Whether the machine took it (or the machine does not support the type).
    pub ok: bool,
    /// `success`, `not supported`, `in sync`, or what went wrong.
    pub message: String,
    /// Attempts of this version so far (1 after a first success).
    pub attempts: i64,
    /// When (ms since the epoch).
    pub at: i64,
    /// When the next retry is due, after a failure.
    pub next_retry_at: Option<i64>,
}

impl Db {
    /// Records the outcome of a push.
    pub async fn record_push(&self, record: &PushRecord) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO pushes (machine_id, rule_type, version, ok, message, attempts, at, \
                                 next_retry_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (machine_id, rule_type) DO UPDATE SET version = excluded.version, \
                 ok = excluded.ok, message = excluded.message, attempts = excluded.attempts, \
                 at = excluded.at, next_retry_at = excluded.next_retry_at",
        )
        .bind(record.machine_id)
        .bind(&record.rule_type)
        .bind(record.version)
        .bind(record.ok)
        .bind(&record.message)
        .bind(record.attempts)
        .bind(record.at)
        .bind(record.next_retry_at)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The last push of every type to every machine of app `app_id`.
    pub async fn pushes_of_app(&self, app_id: i64) -> Result<Vec<PushRecord>, sqlx::Error> {
        sqlx::query_as(
            "SELECT p.machine_id, p.rule_type, p.version, p.ok, p.message, p.attempts, p.at, \
                    p.next_retry_at \
             FROM pushes p JOIN machines m ON m.id = p.machine_id \
             WHERE m.app_id = ? ORDER BY p.machine_id, p.rule_type",
        )
        .bind(app_id)
        .fetch_all(self.pool())
        .await
    }

    /// The last push of `rule_type` to machine `machine_id`.
    pub async fn push_of(
        &self,
        machine_id: i64,
        rule_type: &str,
    ) -> Result<Option<PushRecord>, sqlx::Error> {
        sqlx::query_as(
            "SELECT machine_id, rule_type, version, ok, message, attempts, at, next_retry_at \
             FROM pushes WHERE machine_id = ? AND rule_type = ?",
        )
        .bind(machine_id)
        .bind(rule_type)
        .fetch_optional(self.pool())
        .await
    }
}

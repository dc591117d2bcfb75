//! The history of rule changes.

use sqlx::FromRow;

use super::Db;

/// One change of an app's list of one rule type.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct HistoryEntry {
    /// Its id.
    pub id: i64,
    /// The rule type.
    pub rule_type: String,
    /// `create`, `update`, `delete`, `replace`, `import`, `rollback`.
    pub action: String,
    /// Who made it (a user name, or `import from <ip>:<port>`).
    pub actor: String,
    /// When (ms since the epoch).
    pub at: i64,
    /// The list before, as `[{"id": .., "rule": {..}}]`.
    pub before: String,
    /// The list after.
    pub after: String,
}

impl Db {
    /// The app's changes, newest first: of one type or all, at most `limit`, older than `before_id`
    /// when given (for paging).
    pub async fn history(
        &self,
        app_id: i64,
        rule_type: Option<&str>,
        before_id: Option<i64>,
        limit: i64,
    ) -> Result<Vec<HistoryEntry>, sqlx::Error> {
        sqlx::query_as(
            "SELECT id, rule_type, action, actor, at, before, after FROM rule_history \
             WHERE app_id = ? AND (? IS NULL OR rule_type = ?) AND (? IS NULL OR id < ?) \
             ORDER BY id DESC LIMIT ?",
        )
        .bind(app_id)
        .bind(rule_type)
        .bind(rule_type)
        .bind(before_id)
        .bind(before_id)
        .bind(limit)
        .fetch_all(self.pool())
        .await
    }

    /// The app's change `id`.
    pub async fn history_entry(
        &self,
        app_id: i64,
        id: i64,
    ) -> Result<Option<HistoryEntry>, sqlx::Error> {
        sqlx::query_as(
            "SELECT id, rule_type, action, actor, at, before, after FROM rule_history \
             WHERE app_id = ? AND id = ?",
        )
        .bind(app_id)
        .bind(id)
        .fetch_optional(self.pool())
        .await
    }
}

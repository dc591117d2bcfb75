//! An app's rules per type, and the version of each type's list.

use sqlx::FromRow;

use super::Db;

/// A stored rule.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct StoredRule {
    /// Its id (never reused).
    pub id: i64,
    /// Its resource (none for system rules).
    pub resource: Option<String>,
    /// The rule in Sentinel's JSON, without an id.
    pub body: String,
    /// When it was created (ms since the epoch).
    pub created_at: i64,
    /// When it last changed.
    pub updated_at: i64,
}

/// A rule of a new list: its id when it keeps (or takes back) one, its resource and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRule {
    /// The id to keep, or `None` for a new rule.
    pub id: Option<i64>,
    /// Its resource.
    pub resource: Option<String>,
    /// Its JSON.
    pub body: String,
}

/// A stored rule whose `clusterConfig` carries a `flowId` (in cluster mode or not).
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct FlowIdUse {
    /// The rule's id.
    pub rule_id: i64,
    /// Its app's id.
    pub app_id: i64,
    /// Its app's name.
    pub app: String,
    /// Its type (`flow` or `paramFlow`).
    pub rule_type: String,
    /// The flow id.
    pub flow_id: i64,
}

/// A change to record with a new list.
#[derive(Debug, Clone)]
pub struct HistoryRecord<'a> {
    /// `create`, `update`, `delete`, `replace`, `import`, `rollback`.
    pub action: &'a str,
    /// Who made it.
    pub actor: &'a str,
}

/// An app's rules of one type (`app_id`, `rule_type`), by id.
const SELECT_RULES: &str = "SELECT id, resource, body, created_at, updated_at FROM rules \
                            WHERE app_id = ? AND rule_type = ? ORDER BY id";

impl Db {
    /// The rules of `rule_type` of app `app_id`, by id.
    pub async fn rules(
        &self,
        app_id: i64,
        rule_type: &str,
    ) -> Result<Vec<StoredRule>, sqlx::Error> {
        sqlx::query_as(SELECT_RULES)
            .bind(app_id)
            .bind(rule_type)
            .fetch_all(self.pool())
            .await
    }

    /// The version of the app's list of `rule_type`: `None` while the dashboard has never managed
    /// that type for the app.
    pub async fn rule_version(
        &self,
        app_id: i64,
        rule_type: &str,
    ) -> Result<Option<i64>, sqlx::Error> {
        sqlx::query_scalar("SELECT version FROM rule_sets WHERE app_id = ? AND rule_type = ?")
            .bind(app_id)
            .bind(rule_type)
            .fetch_optional(self.pool())
            .await
    }

    /// Every flow id the dashboard's flow and hot-parameter rules carry, of every app.
    pub async fn flow_id_uses(&self) -> Result<Vec<FlowIdUse>, sqlx::Error> {
        sqlx::query_as(
            "SELECT r.id AS rule_id, r.app_id, a.name AS app, r.rule_type, \
                    r.body ->> '$.clusterConfig.flowId' AS flow_id \
             FROM rules r JOIN apps a ON a.id = r.app_id \
             WHERE r.rule_type IN ('flow', 'paramFlow') \
               AND json_type(r.body, '$.clusterConfig.flowId') = 'integer' \
             ORDER BY r.id",
        )
        .fetch_all(self.pool())
        .await
    }

    /// The largest rule id ever handed out (0 before the first rule): the next new rule gets the
    /// one after it, as ids are never reused.
    pub async fn last_rule_id(&self) -> Result<i64, sqlx::Error> {
        sqlx::query_scalar(
            "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'rules'), 0), \
                        COALESCE((SELECT MAX(id) FROM rules), 0))",
        )
        .fetch_one(self.pool())
        .await
    }

    /// Replaces the app's list of `rule_type` with `rules` in one transaction: rules whose id is
    /// kept are updated, the others deleted; new rules get new ids (an id taken back by a rollback
    /// is the rule's own: ids are never handed out twice). Records the change in the history with
    /// the whole list before and after, and bumps the list's version. Returns the version and the
    /// new list.
    pub async fn replace_rules(
        &self,
        app_id: i64,
        rule_type: &str,
        rules: &[NewRule],
        history: HistoryRecord<'_>,
        now: i64,
    ) -> Result<(i64, Vec<StoredRule>), sqlx::Error> {
        let mut tx = self.write().await?;
        let before: Vec<StoredRule> = sqlx::query_as(SELECT_RULES)
            .bind(app_id)
            .bind(rule_type)
            .fetch_all(&mut *tx)
            .await?;
        let kept: Vec<i64> = rules.iter().filter_map(|r| r.id).collect();
        for old in &before {
            if !kept.contains(&old.id) {
                sqlx::query("DELETE FROM rules WHERE id = ?")
                    .bind(old.id)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        for rule in rules {
            let existing = rule.id.and_then(|id| before.iter().find(|b| b.id == id));
            match (rule.id, existing) {
                (Some(id), Some(old)) => {
                    if old.body != rule.body {
                        sqlx::query(
                            "UPDATE rules SET resource = ?, body = ?, updated_at = ? WHERE id = ?",
                        )
                        .bind(&rule.resource)
                        .bind(&rule.body)
                        .bind(now)
                        .bind(id)
                        .execute(&mut *tx)
                        .await?;
                    }
                }
                (id, _) => {
                    // A new rule, or one taken back with its own id (free: AUTOINCREMENT never
                    // hands a deleted id out again).
                    sqlx::query(
                        "INSERT INTO rules (id, app_id, rule_type, resource, body, created_at, \
                                            updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    )
                    .bind(id)
                    .bind(app_id)
                    .bind(rule_type)
                    .bind(&rule.resource)
                    .bind(&rule.body)
                    .bind(now)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                }
            }
        }
        let after: Vec<StoredRule> = sqlx::query_as(SELECT_RULES)
            .bind(app_id)
            .bind(rule_type)
            .fetch_all(&mut *tx)
            .await?;
        let version: i64 = sqlx::query_scalar(
            "INSERT INTO rule_sets (app_id, rule_type, version) VALUES (?, ?, 1) \
             ON CONFLICT (app_id, rule_type) DO UPDATE SET version = version + 1 \
             RETURNING version",
        )
        .bind(app_id)
        .bind(rule_type)
        .fetch_one(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO rule_history (app_id, rule_type, action, actor, at, before, after) \
             VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(app_id)
        .bind(rule_type)
        .bind(history.action)
        .bind(history.actor)
        .bind(now)
        .bind(snapshot(&before))
        .bind(snapshot(&after))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok((version, after))
    }
}

/// A list as history keeps it: `[{"id": .., "rule": {..}}, ..]`.
pub(crate) fn snapshot(rules: &[StoredRule]) -> String {
    let items: Vec<serde_json::Value> = rules
        .iter()
        .map(|r| {
            serde_json::json!({
                "id": r.id,
                "rule": serde_json::from_str::<serde_json::Value>(&r.body)
                    .unwrap_or(serde_json::Value::Null),
            })
        })
        .collect();
    serde_json::Value::Array(items).to_string()
}

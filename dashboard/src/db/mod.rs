//! The store: every SQL statement of the dashboard, on one SQLite file in WAL mode. Nothing outside
//! this module knows the schema, so another store (Postgres, for several dashboards) can follow.

mod apps;
mod history;
mod metrics;
mod pushes;
mod rules;
mod sessions;
mod tokens;
mod users;

use std::str::FromStr;
use std::time::Duration;

use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

pub use apps::{App, HeartbeatRecord, Machine, Recorded, RegistryLimits};
pub use history::HistoryEntry;
pub use metrics::{
    AppSecond, MINUTE_MS, MetricPoint, MetricSums, ResourceActivity, ResourceIds, ResourceSecond,
    SecondRow, WriteOutcome,
};
pub use pushes::PushRecord;
pub use rules::{FlowIdUse, HistoryRecord, NewRule, StoredRule};
pub use sessions::SessionUser;
pub use tokens::{ApiToken, TokenUser};
pub use users::{User, UserChange, is_unique_violation};

/// The dashboard's database.
#[derive(Debug, Clone)]
pub struct Db {
    pool: SqlitePool,
}

impl Db {
    /// Opens (creating when missing) the database at `url` and applies the migrations.
    pub async fn open(url: &str) -> Result<Db, sqlx::Error> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true)
            // After a checkpoint the write-ahead log is truncated to this size (64 MiB) instead of
            // staying as large as the largest burst of writes made it.
            .pragma("journal_size_limit", "67108864");
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await?;
        sqlx::migrate!("../migrations").run(&pool).await?;
        Ok(Db { pool })
    }

    /// Closes every connection (after the writes in flight).
    pub async fn close(&self) {
        self.pool.close().await;
    }

    pub(crate) fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// A transaction that reads and then writes: `BEGIN IMMEDIATE` takes the write lock first (waiting
    /// for it up to the busy timeout), so that a write committed by another connection after this
    /// one's first read cannot make its own write fail.
    pub(crate) async fn write(
        &self,
    ) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, sqlx::Error> {
        self.pool.begin_with("BEGIN IMMEDIATE").await
    }
}

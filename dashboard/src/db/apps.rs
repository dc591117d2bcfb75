//! Apps and their machines, as heartbeats report them.

use sqlx::FromRow;

use super::Db;

/// An app: the name its machines report.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct App {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// 0 for a common app, 1 for a gateway.
    pub app_type: i64,
    /// When its first machine registered (ms since the epoch).
    pub created_at: i64,
}

/// A machine of an app: one agent, at one IP and port.
#[derive(Clone, PartialEq, Eq, FromRow)]
pub struct Machine {
    /// Its id.
    pub id: i64,
    /// Its app's id.
    pub app_id: i64,
    /// Its app's name.
    pub app: String,
    /// The IP its heartbeats report (validated as an IP literal).
    pub ip: String,
    /// Its command port.
    pub port: i64,
    /// The host name it reports.
    pub hostname: String,
    /// The Sentinel version it reports (`v`).
    pub sentinel_version: String,
    /// The token its heartbeats carry, presented back on every call to it.
    pub agent_token: Option<String>,
    /// Its first heartbeat (ms since the epoch).
    pub first_seen: i64,
    /// Its last heartbeat (ms since the epoch).
    pub last_heartbeat: i64,
}

impl std::fmt::Debug for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Machine")
            .field("id", &self.id)
            .field("app", &self.app)
            .field("ip", &self.ip)
            .field("port", &self.port)
            .field("hostname", &self.hostname)
            .field("sentinel_version", &self.sentinel_version)
            .field("agent_token", &self.agent_token.as_ref().map(|_| "…"))
            .field("last_heartbeat", &self.last_heartbeat)
            .finish()
    }
}

/// The most apps, and machines per app, heartbeats may create (they arrive unauthenticated unless a
/// registration token is set: without a bound, a stranger could grow the database at will).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistryLimits {
    /// The most apps.
    pub max_apps: i64,
    /// The most machines of one app.
    pub max_machines_per_app: i64,
}

/// What [`Db::record_heartbeat`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// The heartbeat was recorded.
    Machine {
        /// The machine, as stored now.
        machine: Machine,
        /// Its previous heartbeat; `None` for a machine seen for the first time.
        previous: Option<i64>,
    },
    /// A new app would exceed the limit; nothing was recorded.
    TooManyApps,
    /// A new machine would exceed its app's limit; nothing was recorded.
    TooManyMachines,
}

/// What a heartbeat stores.
#[derive(Debug, Clone)]
pub struct HeartbeatRecord<'a> {
    /// The app.
    pub app: &'a str,
    /// The app's type.
    pub app_type: i64,
    /// The IP, as an IP literal.
    pub ip: &'a str,
    /// The command port.
    pub port: u16,
    /// The host name.
    pub hostname: &'a str,
    /// The Sentinel version.
    pub sentinel_version: &'a str,
    /// The agent's token, if it sent one.
    pub agent_token: Option<&'a str>,
}

/// `SELECT` of machines with their app's name, followed by `$tail`.
macro_rules! select_machines {
    ($tail:literal) => {
        concat!(
            "SELECT m.id, m.app_id, a.name AS app, m.ip, m.port, m.hostname, m.sentinel_version, \
             m.agent_token, m.first_seen, m.last_heartbeat \
             FROM machines m JOIN apps a ON a.id = m.app_id ",
            $tail
        )
    };
}

impl Db {
    /// Records a heartbeat at `now`: the app and machine are created when new, unless that would make
    /// more than `limits` apps or machines of the app. Returns the machine and its previous heartbeat
    /// (`None` for a machine seen for the first time).
    pub async fn record_heartbeat(
        &self,
        hb: &HeartbeatRecord<'_>,
        now: i64,
        limits: RegistryLimits,
    ) -> Result<Recorded, sqlx::Error> {
        let mut tx = self.write().await?;
        let existing: Option<i64> = sqlx::query_scalar("SELECT id FROM apps WHERE name = ?")
            .bind(hb.app)
            .fetch_optional(&mut *tx)
            .await?;
        let app_id = match existing {
            Some(id) => {
                sqlx::query("UPDATE apps SET app_type = ? WHERE id = ?")
                    .bind(hb.app_type)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                id
            }
            None => {
                let apps: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM apps")
                    .fetch_one(&mut *tx)
                    .await?;
                if apps >= limits.max_apps {
                    return Ok(Recorded::TooManyApps);
                }
                sqlx::query_scalar(
                    "INSERT INTO apps (name, app_type, created_at) VALUES (?, ?, ?) RETURNING id",
                )
                .bind(hb.app)
                .bind(hb.app_type)
                .bind(now)
                .fetch_one(&mut *tx)
                .await?
            }
        };
        let previous: Option<i64> = sqlx::query_scalar(
            "SELECT last_heartbeat FROM machines WHERE app_id = ? AND ip = ? AND port = ?",
        )
        .bind(app_id)
        .bind(hb.ip)
        .bind(i64::from(hb.port))
        .fetch_optional(&mut *tx)
        .await?;
        if previous.is_none() {
            let machines: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM machines WHERE app_id = ?")
                    .bind(app_id)
                    .fetch_one(&mut *tx)
                    .await?;
            if machines >= limits.max_machines_per_app {
                return Ok(Recorded::TooManyMachines);
            }
        }
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO machines (app_id, ip, port, hostname, sentinel_version, agent_token, \
                                   first_seen, last_heartbeat) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (app_id, ip, port) DO UPDATE SET hostname = excluded.hostname, \
                 sentinel_version = excluded.sentinel_version, agent_token = excluded.agent_token, \
                 last_heartbeat = MAX(last_heartbeat, excluded.last_heartbeat) \
             RETURNING id",
        )
        .bind(app_id)
        .bind(hb.ip)
        .bind(i64::from(hb.port))
        .bind(hb.hostname)
        .bind(hb.sentinel_version)
        .bind(hb.agent_token)
        .bind(now)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        let machine = self.machine(id).await?.ok_or(sqlx::Error::RowNotFound)?;
        Ok(Recorded::Machine { machine, previous })
    }

    /// Every app, by name.
    pub async fn apps(&self) -> Result<Vec<App>, sqlx::Error> {
        sqlx::query_as("SELECT id, name, app_type, created_at FROM apps ORDER BY name")
            .fetch_all(self.pool())
            .await
    }

    /// The app named `name`.
    pub async fn app_by_name(&self, name: &str) -> Result<Option<App>, sqlx::Error> {
        sqlx::query_as("SELECT id, name, app_type, created_at FROM apps WHERE name = ?")
            .bind(name)
            .fetch_optional(self.pool())
            .await
    }

    /// The machine `id`.
    pub async fn machine(&self, id: i64) -> Result<Option<Machine>, sqlx::Error> {
        sqlx::query_as(select_machines!("WHERE m.id = ?"))
            .bind(id)
            .fetch_optional(self.pool())
            .await
    }

    /// Every machine of app `app_id`, healthy or not, by address.
    pub async fn machines_of_app(&self, app_id: i64) -> Result<Vec<Machine>, sqlx::Error> {
        sqlx::query_as(select_machines!("WHERE m.app_id = ? ORDER BY m.ip, m.port"))
            .bind(app_id)
            .fetch_all(self.pool())
            .await
    }

    /// The machines (of every app, or of `app_id`) whose last heartbeat is at or after `since`.
    pub async fn healthy_machines(
        &self,
        app_id: Option<i64>,
        since: i64,
    ) -> Result<Vec<Machine>, sqlx::Error> {
        sqlx::query_as(select_machines!(
            "WHERE m.last_heartbeat >= ? AND (? IS NULL OR m.app_id = ?) ORDER BY m.id"
        ))
        .bind(since)
        .bind(app_id)
        .bind(app_id)
        .fetch_all(self.pool())
        .await
    }
}

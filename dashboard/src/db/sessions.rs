//! Server-side sessions: keyed by the SHA-256 of the cookie's secret, each with its CSRF token and
//! its expiry. An expired session is never returned, and is deleted when met or at the next sign-in.

use sqlx::FromRow;

use super::Db;

/// A live session with its user, as a request presenting it acts.
#[derive(Clone, PartialEq, Eq, FromRow)]
pub struct SessionUser {
    /// The session's id hash.
    pub id_hash: String,
    /// The session's CSRF token.
    pub csrf_token: String,
    /// When the session ends (ms since the epoch).
    pub expires_at: i64,
    /// The user's id.
    pub user_id: i64,
    /// The user's name.
    pub username: String,
    /// The user's current role.
    pub role: String,
}

impl std::fmt::Debug for SessionUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionUser")
            .field("expires_at", &self.expires_at)
            .field("user_id", &self.user_id)
            .field("username", &self.username)
            .field("role", &self.role)
            .finish_non_exhaustive()
    }
}

impl Db {
    /// Stores a new session of `user_id`.
    pub async fn create_session(
        &self,
        id_hash: &str,
        user_id: i64,
        csrf_token: &str,
        now: i64,
        expires_at: i64,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO sessions (id_hash, user_id, csrf_token, created_at, expires_at) \
             VALUES (?, ?, ?, ?, ?)",
        )
        .bind(id_hash)
        .bind(user_id)
        .bind(csrf_token)
        .bind(now)
        .bind(expires_at)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The session `id_hash` with its user, when it has not expired at `now`.
    pub async fn session_user(
        &self,
        id_hash: &str,
        now: i64,
    ) -> Result<Option<SessionUser>, sqlx::Error> {
        sqlx::query_as(
            "SELECT s.id_hash, s.csrf_token, s.expires_at, u.id AS user_id, u.username, u.role \
             FROM sessions s JOIN users u ON u.id = s.user_id \
             WHERE s.id_hash = ? AND s.expires_at > ?",
        )
        .bind(id_hash)
        .bind(now)
        .fetch_optional(self.pool())
        .await
    }

    /// Deletes the session `id_hash` (nothing when there is none).
    pub async fn delete_session(&self, id_hash: &str) -> Result<(), sqlx::Error> {
        sqlx::query("DELETE FROM sessions WHERE id_hash = ?")
            .bind(id_hash)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Deletes every session expired at `now`; returns how many.
    pub async fn delete_expired_sessions(&self, now: i64) -> Result<u64, sqlx::Error> {
        let done = sqlx::query("DELETE FROM sessions WHERE expires_at <= ?")
            .bind(now)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected())
    }

    /// The number of sessions of `user_id` (expired ones included).
    pub async fn session_count(&self, user_id: i64) -> Result<i64, sqlx::Error> {
        sqlx::query_scalar("SELECT COUNT(*) FROM sessions WHERE user_id = ?")
            .bind(user_id)
            .fetch_one(self.pool())
            .await
    }
}

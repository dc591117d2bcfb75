//! API tokens: each belongs to a user and acts with the user's current role. Only the SHA-256 of a
//! token is stored; its use is recorded in `last_used_at` (at most once a minute, to spare writes).

use sqlx::FromRow;

use super::Db;

/// How often `last_used_at` is brought up to date, at most.
const LAST_USED_RESOLUTION_MS: i64 = 60_000;

/// An API token, without its secret.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct ApiToken {
    /// Its id.
    pub id: i64,
    /// Its user's id.
    pub user_id: i64,
    /// The name its user gave it.
    pub name: String,
    /// When it was created (ms since the epoch).
    pub created_at: i64,
    /// When it was last used (ms since the epoch, to the minute).
    pub last_used_at: Option<i64>,
}

/// The user a token acts as.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct TokenUser {
    /// The token's id.
    pub token_id: i64,
    /// The user's id.
    pub user_id: i64,
    /// The user's name.
    pub username: String,
    /// The user's current role.
    pub role: String,
}

impl Db {
    /// Stores a new token of `user_id` by its hash.
    pub async fn create_token(
        &self,
        user_id: i64,
        name: &str,
        token_hash: &str,
        now: i64,
    ) -> Result<ApiToken, sqlx::Error> {
        sqlx::query_as(
            "INSERT INTO api_tokens (user_id, name, token_hash, created_at) VALUES (?, ?, ?, ?) \
             RETURNING id, user_id, name, created_at, last_used_at",
        )
        .bind(user_id)
        .bind(name)
        .bind(token_hash)
        .bind(now)
        .fetch_one(self.pool())
        .await
    }

    /// The tokens of `user_id`, oldest first.
    pub async fn tokens_of_user(&self, user_id: i64) -> Result<Vec<ApiToken>, sqlx::Error> {
        sqlx::query_as(
            "SELECT id, user_id, name, created_at, last_used_at FROM api_tokens \
             WHERE user_id = ? ORDER BY id",
        )
        .bind(user_id)
        .fetch_all(self.pool())
        .await
    }

    /// The user of the token whose hash is `token_hash`, recording its use at `now`.
    pub async fn use_token(
        &self,
        token_hash: &str,
        now: i64,
    ) -> Result<Option<TokenUser>, sqlx::Error> {
        let found: Option<TokenUser> = sqlx::query_as(
            "SELECT t.id AS token_id, u.id AS user_id, u.username, u.role \
             FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = ?",
        )
        .bind(token_hash)
        .fetch_optional(self.pool())
        .await?;
        if let Some(token) = &found {
            sqlx::query(
                "UPDATE api_tokens SET last_used_at = ?1 \
                 WHERE id = ?2 AND (last_used_at IS NULL OR last_used_at <= ?1 - ?3)",
            )
            .bind(now)
            .bind(token.token_id)
            .bind(LAST_USED_RESOLUTION_MS)
            .execute(self.pool())
            .await?;
        }
        Ok(found)
    }

    /// Deletes token `id` of `user_id`; returns whether there was one.
    pub async fn delete_token(&self, user_id: i64, id: i64) -> Result<bool, sqlx::Error> {
        let done = sqlx::query("DELETE FROM api_tokens WHERE id = ? AND user_id = ?")
            .bind(id)
            .bind(user_id)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() == 1)
    }
}

//! Users: name, Argon2id password hash and role. Changing a user's password or role deletes their
//! sessions; deleting a user deletes their sessions and API tokens; the last admin can be neither
//! demoted nor deleted (each guarded change is one statement, so two admins demoting each other at
//! once cannot both succeed).

use sqlx::FromRow;

use super::Db;

/// A user, as stored.
#[derive(Clone, PartialEq, Eq, FromRow)]
pub struct User {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub username: String,
    /// The PHC string of its password.
    pub password_hash: String,
    /// Its role (`viewer`, `editor`, `admin`).
    pub role: String,
    /// When it was created (ms since the epoch).
    pub created_at: i64,
}

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User")
            .field("id", &self.id)
            .field("username", &self.username)
            .field("role", &self.role)
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
    }
}

/// How a guarded change of a user went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserChange {
    /// Done.
    Done,
    /// No such user.
    NotFound,
    /// Refused: it would leave no admin.
    LastAdmin,
}

impl Db {
    /// The number of users.
    pub async fn user_count(&self) -> Result<i64, sqlx::Error> {
        sqlx::query_scalar("SELECT COUNT(*) FROM users")
            .fetch_one(self.pool())
            .await
    }

    /// Every user, by name.
    pub async fn users(&self) -> Result<Vec<User>, sqlx::Error> {
        sqlx::query_as(
            "SELECT id, username, password_hash, role, created_at FROM users ORDER BY username",
        )
        .fetch_all(self.pool())
        .await
    }

    /// The user `id`.
    pub async fn user(&self, id: i64) -> Result<Option<User>, sqlx::Error> {
        sqlx::query_as(
            "SELECT id, username, password_hash, role, created_at FROM users WHERE id = ?",
        )
        .bind(id)
        .fetch_optional(self.pool())
        .await
    }

    /// The user named `username`.
    pub async fn user_by_name(&self, username: &str) -> Result<Option<User>, sqlx::Error> {
        sqlx::query_as(
            "SELECT id, username, password_hash, role, created_at FROM users WHERE username = ?",
        )
        .bind(username)
        .fetch_optional(self.pool())
        .await
    }

    /// Creates a user; a taken name is a unique-constraint error (see [`is_unique_violation`]).
    pub async fn create_user(
        &self,
        username: &str,
        password_hash: &str,
        role: &str,
        now: i64,
    ) -> Result<User, sqlx::Error> {
        sqlx::query_as(
            "INSERT INTO users (username, password_hash, role, created_at) VALUES (?, ?, ?, ?) \
             RETURNING id, username, password_hash, role, created_at",
        )
        .bind(username)
        .bind(password_hash)
        .bind(role)
        .bind(now)
        .fetch_one(self.pool())
        .await
    }

    /// Creates a user only when there is none yet; returns whether it did.
    pub async fn create_first_user(
        &self,
        username: &str,
        password_hash: &str,
        role: &str,
        now: i64,
    ) -> Result<bool, sqlx::Error> {
        let done = sqlx::query(
            "INSERT INTO users (username, password_hash, role, created_at) \
             SELECT ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM users)",
        )
        .bind(username)
        .bind(password_hash)
        .bind(role)
        .bind(now)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Sets the role and/or password hash of user `id` (`None` keeps one), unless that would leave
    /// no admin, and deletes every session of the user.
    pub async fn update_user(
        &self,
        id: i64,
        role: Option<&str>,
        password_hash: Option<&str>,
    ) -> Result<UserChange, sqlx::Error> {
        let mut tx = self.write().await?;
        let done = sqlx::query(
            "UPDATE users SET role = COALESCE(?1, role), password_hash = COALESCE(?2, password_hash) \
             WHERE id = ?3 AND (COALESCE(?1, role) = 'admin' OR role <> 'admin' \
                  OR (SELECT COUNT(*) FROM users WHERE role = 'admin') > 1)",
        )
        .bind(role)
        .bind(password_hash)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return guard_refusal(&mut tx, id).await;
        }
        sqlx::query("DELETE FROM sessions WHERE user_id = ?")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(UserChange::Done)
    }

    /// Sets the password hash of user `id` and deletes every session of the user but the one whose
    /// id hash is `keep_session`. Returns whether the user exists.
    pub async fn set_own_password(
        &self,
        id: i64,
        password_hash: &str,
        keep_session: Option<&str>,
    ) -> Result<bool, sqlx::Error> {
        let mut tx = self.write().await?;
        let done = sqlx::query("UPDATE users SET password_hash = ? WHERE id = ?")
            .bind(password_hash)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        sqlx::query("DELETE FROM sessions WHERE user_id = ? AND (? IS NULL OR id_hash <> ?)")
            .bind(id)
            .bind(keep_session)
            .bind(keep_session)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Deletes user `id` with its sessions and API tokens, unless it is the last admin.
    pub async fn delete_user(&self, id: i64) -> Result<UserChange, sqlx::Error> {
        let mut tx = self.write().await?;
        sqlx::query("DELETE FROM sessions WHERE user_id = ?")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM api_tokens WHERE user_id = ?")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let done = sqlx::query(
            "DELETE FROM users WHERE id = ? AND (role <> 'admin' \
                  OR (SELECT COUNT(*) FROM users WHERE role = 'admin') > 1)",
        )
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            // Dropping the transaction rolls the deletions back.
            return guard_refusal(&mut tx, id).await;
        }
        tx.commit().await?;
        Ok(UserChange::Done)
    }
}

/// Why a guarded change of user `id` touched no row: no such user, or the last admin.
async fn guard_refusal(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    id: i64,
) -> Result<UserChange, sqlx::Error> {
    let exists: Option<i64> = sqlx::query_scalar("SELECT id FROM users WHERE id = ?")
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?;
    Ok(if exists.is_some() {
        UserChange::LastAdmin
    } else {
        UserChange::NotFound
    })
}

/// Whether `e` is a unique-constraint violation (a name already taken).
pub fn is_unique_violation(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .is_some_and(|d| d.is_unique_violation())
}

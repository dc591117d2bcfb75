//! [`AppError`]: every way a request fails, and the response it becomes.
//!
//! Bad input is a 4xx whose JSON body names the field (`{"error": .., "field": ..}`) and is not logged;
//! an internal failure is a 500 whose body says only "internal error" while the cause goes to the log.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// One invalid field of a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldError {
    /// The position of the rule in a submitted list, when the request carried one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
    /// The field at fault (`count`, `clusterConfig.flowId`, `username`, …).
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The input was invalid; nothing changed.
    #[error("invalid input: {}", .0.iter().map(|e| format!("{}: {}", e.field, e.message)).collect::<Vec<_>>().join("; "))]
    Invalid(Vec<FieldError>),
    /// No valid session or token.
    #[error("sign-in required")]
    Unauthorized,
    /// Signed in, but the role does not allow it (or the CSRF token is missing or wrong).
    #[error("forbidden: {0}")]
    Forbidden(&'static str),
    /// No such thing.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The request conflicts with what is stored (a name taken, a stale version).
    #[error("conflict: {0}")]
    Conflict(String),
    /// A machine the request needed did not answer, or answered nonsense.
    #[error("the machine did not answer: {0}")]
    Upstream(String),
    /// Too many attempts; try again after the given seconds.
    #[error("too many attempts")]
    TooManyRequests {
        /// Seconds until the next attempt may succeed.
        retry_after_secs: u64,
    },
    /// Something failed inside the dashboard (the database, a task).
    #[error("internal error: {0}")]
    Internal(#[from] anyhow::Error),
}

/// `Result` with [`AppError`].
pub type AppResult<T> = Result<T, AppError>;

impl AppError {
    /// An invalid `field`, with `message`.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        AppError::Invalid(vec![FieldError {
            index: None,
            field: field.into(),
            message: message.into(),
        }])
    }

    /// The status the error answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            AppError::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
            AppError::Unauthorized => StatusCode::UNAUTHORIZED,
            AppError::Forbidden(_) => StatusCode::FORBIDDEN,
            AppError::NotFound(_) => StatusCode::NOT_FOUND,
            AppError::Conflict(_) => StatusCode::CONFLICT,
            AppError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            AppError::Upstream(_) => StatusCode::BAD_GATEWAY,
            AppError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<sqlx::Error> for AppError {
    fn from(e: sqlx::Error) -> Self {
        AppError::Internal(e.into())
    }
}

#[derive(Serialize)]
struct Body<'a> {
    error: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<&'a str>,
    #[serde(skip_serializing_if = "<[FieldError]>::is_empty")]
    fields: &'a [FieldError],
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = match &self {
            AppError::Invalid(fields) => Body {
                error: self.to_string(),
                field: fields.first().map(|f| f.field.as_str()),
                fields,
            },
            AppError::Internal(e) => {
                tracing::error!(error = ?e, "request failed");
                Body {
                    error: "internal error".to_owned(),
                    field: None,
                    fields: &[],
                }
            }
            other => Body {
                error: other.to_string(),
                field: None,
                fields: &[],
            },
        };
        let mut response = (status, Json(body)).into_response();
        if let AppError::TooManyRequests { retry_after_secs } = self
            && let Ok(v) = HeaderValue::from_str(&retry_after_secs.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        response
    }
}

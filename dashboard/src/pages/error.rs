//! The error page: an [`AppError`] shown as HTML inside the page chrome (a machine that does not
//! answer is a 502 that says so, a viewer's change a 403), and the times pages print.

use askama::Template;
use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};

use super::Chrome;
use crate::error::AppError;

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorTemplate {
    chrome: Chrome,
    status: u16,
    title: &'static str,
    message: String,
}

/// An error of a page's request, to be shown as a page.
#[derive(Debug)]
pub(super) struct PageError {
    chrome: Chrome,
    error: AppError,
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let status = self.error.status();
        let (title, message) = match &self.error {
            AppError::Invalid(fields) => (
                "Invalid request",
                fields
                    .iter()
                    .map(|f| format!("{}: {}", f.field, f.message))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            AppError::Unauthorized => ("Sign-in required", "Please sign in again.".to_owned()),
            AppError::Forbidden(why) => ("Not allowed", format!("Not allowed: {why}.")),
            AppError::NotFound(what) => ("Not found", format!("No such {what}.")),
            AppError::Conflict(why) => ("Conflict", why.clone()),
            AppError::Upstream(why) => (
                "The machine did not answer",
                format!("The machine did not answer: {why}."),
            ),
            AppError::TooManyRequests { .. } => {
                ("Too many requests", "Try again shortly.".to_owned())
            }
            AppError::Internal(e) => {
                tracing::error!(error = ?e, "page failed");
                (
                    "Internal error",
                    "Something failed inside the dashboard.".to_owned(),
                )
            }
        };
        let page = ErrorTemplate {
            chrome: self.chrome,
            status: status.as_u16(),
            title,
            message,
        };
        match page.render() {
            Ok(html) => (
                status,
                [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
                Html(html),
            )
                .into_response(),
            Err(_) => self.error.into_response(),
        }
    }
}

/// Turns a request's error into its error page.
pub(super) trait OrPage<T> {
    /// `self`, its error shown with `chrome`.
    fn or_page(self, chrome: &Chrome) -> Result<T, PageError>;
}

impl<T> OrPage<T> for Result<T, AppError> {
    fn or_page(self, chrome: &Chrome) -> Result<T, PageError> {
        self.map_err(|error| PageError {
            chrome: chrome.clone(),
            error,
        })
    }
}

/// `YYYY-MM-DD HH:MM:SS UTC` of `ms` (since the epoch; a time before it reads as the epoch).
pub(super) fn utc(ms: i64) -> String {
    let second = u64::try_from(ms.div_euclid(1000)).unwrap_or(0);
    format!("{} UTC", floodgate_core::stats::utc_datetime(second))
}

/// How long before `now` the time `ms` was: `5 s ago`, `3 min ago`, `2 h ago`, `4 d ago`.
pub(super) fn ago(now: i64, ms: i64) -> String {
    let secs = (now - ms).div_euclid(1000);
    if secs < 0 {
        "in the future".to_owned()
    } else if secs < 120 {
        format!("{secs} s ago")
    } else if secs < 7200 {
        format!("{} min ago", secs / 60)
    } else if secs < 172_800 {
        format!("{} h ago", secs / 3600)
    } else {
        format!("{} d ago", secs / 86_400)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_800_000_000_000), "2027-01-15 08:00:00 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(ago(10_000, 7_000), "3 s ago");
        assert_eq!(ago(600_000, 0), "10 min ago");
    }
}

//! Retention: complete minutes are rolled up from the seconds into `metric_minutes` (recomputed and
//! replaced, so running it twice changes nothing), then seconds older than the per-second retention
//! and minutes older than the per-minute retention are deleted.
//!
//! A minute counts as complete [`ROLLUP_DELAY_MS`] after its end, which leaves room for machines
//! whose lines arrive late (a fetch catches up at most a minute). Minutes are rolled from the one
//! after the newest stored minute, so each run reads only the seconds written since the last one; a
//! second is never deleted before its minute was rolled up.

use crate::config::Config;
use crate::db::{Db, MINUTE_MS};

/// How long after its end a minute is rolled up.
pub const ROLLUP_DELAY_MS: i64 = 90_000;

/// What one run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// Minute rows written.
    pub minutes_rolled: u64,
    /// Second rows deleted.
    pub seconds_deleted: u64,
    /// Minute rows deleted.
    pub minutes_deleted: u64,
}

/// The start of the minute holding `ms`.
pub fn floor_minute(ms: i64) -> i64 {
    ms - ms.rem_euclid(MINUTE_MS)
}

/// Rolls up and deletes as of `now` (ms).
pub async fn prune(db: &Db, config: &Config, now: i64) -> Result<PruneReport, sqlx::Error> {
    let mut report = PruneReport::default();
    let complete = floor_minute(now - ROLLUP_DELAY_MS);
    let from = match db.minutes_rolled_through().await? {
        Some(through) => Some(through),
        None => db.oldest_metric_second().await?.map(floor_minute),
    };
    let mut rolled_through = complete;
    if let Some(from) = from {
        if from < complete {
            report.minutes_rolled = db.roll_up_minutes(from, complete).await?;
        } else {
            rolled_through = from;
        }
    }
    let seconds_cutoff = (now - secs_to_ms(config.second_retention_secs)).min(rolled_through);
    report.seconds_deleted = db.delete_metric_seconds_before(seconds_cutoff).await?;
    let minutes_cutoff = now - secs_to_ms(config.minute_retention_secs);
    report.minutes_deleted = db.delete_metric_minutes_before(minutes_cutoff).await?;
    Ok(report)
}

fn secs_to_ms(secs: u64) -> i64 {
    i64::try_from(secs.saturating_mul(1000)).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minutes_floor() {
        assert_eq!(floor_minute(119_999), 60_000);
        assert_eq!(floor_minute(120_000), 120_000);
    }
}

//! Epoch seconds as civil dates and times in UTC, the time format of Sentinel's log lines.

/// `yyyy-MM-dd HH:mm:ss` in UTC for an epoch second (the civil-from-days algorithm), the time format of
/// Sentinel's log lines.
pub fn utc_datetime(second: u64) -> String {
    let days = (second / 86_400) as i64;
    let rem = second % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::utc_datetime;

    #[test]
    fn formats_utc() {
        assert_eq!(utc_datetime(0), "1970-01-01 00:00:00");
        assert_eq!(utc_datetime(1_700_000_000), "2023-11-14 22:13:20");
        assert_eq!(
            utc_datetime(951_782_400),
            "2000-02-29 00:00:00",
            "a leap day"
        );
        assert_eq!(
            utc_datetime(4_107_542_399),
            "2100-02-28 23:59:59",
            "2100 is no leap year"
        );
        assert_eq!(utc_datetime(4_107_542_400), "2100-03-01 00:00:00");
    }
}

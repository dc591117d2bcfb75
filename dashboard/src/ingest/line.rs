//! Reading a `metric` answer: Sentinel's thin lines
//! `timestamp|resource|pass|block|success|exception|rt|occupiedPass|concurrency|classification`,
//! one per resource per second (7 to 10 fields; the last three are optional and not kept).
//!
//! Every line is checked on its own: a line that is not a metric line is skipped and counted, so one
//! bad line costs only itself. An answer that is mostly such lines (an HTML page, a proxy's error) is
//! not a metric answer at all and is refused whole, as is one larger than [`MAX_ANSWER_BYTES`]. The
//! pseudo-resources Sentinel adds (`__total_inbound_traffic__`, `__system_load__`, `__cpu_usage__`)
//! and seconds outside the window asked for are left out without counting as garbage.

/// The largest answer parsed (100 resources × 60 s of lines is about 400 KiB).
pub const MAX_ANSWER_BYTES: usize = 8 * 1024 * 1024;
/// The most lines parsed from one answer (Sentinel's searcher stops at 100 000).
pub const MAX_LINES: usize = 100_000;
/// The longest resource name kept, in bytes.
pub const MAX_RESOURCE_BYTES: usize = 1024;
/// The largest count (pass, block, success, exception) accepted for one resource in one second.
pub const MAX_COUNT: u64 = 1_000_000_000;
/// The largest average response time accepted, in ms (about 2.8 hours).
pub const MAX_RT_MS: u64 = 10_000_000;

/// Resources Sentinel reports that are not resources of the app (whole-app and system gauges).
const PSEUDO_RESOURCES: [&str; 3] = [
    "__total_inbound_traffic__",
    "__system_load__",
    "__cpu_usage__",
];

/// One resource's counts in one second, on one machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricLine {
    /// The second (ms since the epoch, a whole second).
    pub ts: i64,
    /// The resource.
    pub resource: String,
    /// Calls let through.
    pub pass: i64,
    /// Calls blocked.
    pub block: i64,
    /// Calls completed.
    pub success: i64,
    /// Calls that ended with an error.
    pub exception: i64,
    /// The average response time of the completed calls, in ms.
    pub rt: i64,
}

/// Why a whole answer was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// The answer is larger than [`MAX_ANSWER_BYTES`] or has more than [`MAX_LINES`] lines.
    #[error("answer too large")]
    TooLarge,
    /// More of the answer's lines are unreadable than readable.
    #[error("not a metric answer ({garbage} of {lines} lines unreadable)")]
    Garbage {
        /// The unreadable lines.
        garbage: usize,
        /// All non-empty lines.
        lines: usize,
    },
}

/// What an answer held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// The metric lines kept.
    pub lines: Vec<MetricLine>,
    /// Lines that were not metric lines (or had values out of bounds).
    pub garbage: usize,
}

/// Parses `body`, keeping the lines of seconds in `[start, end]` (ms).
pub fn parse_answer(body: &str, start: i64, end: i64) -> Result<Parsed, AnswerError> {
    if body.len() > MAX_ANSWER_BYTES {
        return Err(AnswerError::TooLarge);
    }
    let mut parsed = Parsed::default();
    let mut total = 0usize;
    for raw in body.lines() {
        let raw = raw.trim();
        if raw.is_empty() {
            continue;
        }
        total += 1;
        if total > MAX_LINES {
            return Err(AnswerError::TooLarge);
        }
        match parse_line(raw) {
            Some(Line::Metric(line)) => {
                if line.ts >= start && line.ts <= end {
                    parsed.lines.push(line);
                }
            }
            Some(Line::Pseudo) => {}
            None => parsed.garbage += 1,
        }
    }
    // More unreadable than readable lines: this is not a metric answer, so nothing of it is kept.
    if parsed.garbage > total - parsed.garbage {
        return Err(AnswerError::Garbage {
            garbage: parsed.garbage,
            lines: total,
        });
    }
    Ok(parsed)
}

/// A readable line.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    Metric(MetricLine),
    /// One of Sentinel's pseudo-resources.
    Pseudo,
}

/// Reads one line; `None` when it is not a valid metric line.
fn parse_line(raw: &str) -> Option<Line> {
    let fields: Vec<&str> = raw.split('|').collect();
    if !(7..=10).contains(&fields.len()) {
        return None;
    }
    let ts = number(fields[0], i64::MAX as u64)? as i64;
    if ts % 1000 != 0 {
        return None;
    }
    let resource = fields[1];
    if PSEUDO_RESOURCES.contains(&resource) {
        return Some(Line::Pseudo);
    }
    if resource.is_empty()
        || resource.len() > MAX_RESOURCE_BYTES
        || resource.chars().any(char::is_control)
    {
        return None;
    }
    let count = |i: usize| number(fields[i], MAX_COUNT).map(|n| n as i64);
    // The optional fields, when present, must still be numbers: a line with text there is not one
    // of Sentinel's.
    for optional in &fields[7..] {
        number(optional, u64::MAX)?;
    }
    Some(Line::Metric(MetricLine {
        ts,
        resource: resource.to_owned(),
        pass: count(2)?,
        block: count(3)?,
        success: count(4)?,
        exception: count(5)?,
        rt: number(fields[6], MAX_RT_MS)? as i64,
    }))
}

/// A decimal number in `0..=max` (digits only: no sign, no space).
fn number(s: &str, max: u64) -> Option<u64> {
    if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u64>().ok().filter(|n| *n <= max)
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: (i64, i64) = (1_796_150_315_000, 1_796_150_333_000);

    fn parse(body: &str) -> Result<Parsed, AnswerError> {
        parse_answer(body, WINDOW.0, WINDOW.1)
    }

    #[test]
    fn reads_a_java_clients_answer() {
        let body = "1796150315000|GET:/orders|6|0|7|0|194|0|0|0\n\
                    1796150315000|GET:/items/{id}|5|3|5|2|3|0|0|0\n\
                    1796150315000|__total_inbound_traffic__|14|3|16|2|162|0|0|0\n\
                    1796150316000|POST:/pay|2|0|2|0|257|0|0|0\n";
        let parsed = parse(body).unwrap();
        assert_eq!(parsed.garbage, 0);
        assert_eq!(parsed.lines.len(), 3);
        assert_eq!(
            parsed.lines[0],
            MetricLine {
                ts: 1_796_150_315_000,
                resource: "GET:/orders".into(),
                pass: 6,
                block: 0,
                success: 7,
                exception: 0,
                rt: 194,
            }
        );
        assert_eq!(parsed.lines[1].resource, "GET:/items/{id}");
        assert_eq!((parsed.lines[1].block, parsed.lines[1].exception), (3, 2));
    }

    #[test]
    fn seven_to_ten_fields_are_read() {
        for line in [
            "1796150315000|a|1|2|3|4|5",
            "1796150315000|a|1|2|3|4|5|0",
            "1796150315000|a|1|2|3|4|5|0|0",
            "1796150315000|a|1|2|3|4|5|0|0|1",
        ] {
            let parsed = parse(line).unwrap();
            assert_eq!(parsed.lines.len(), 1, "{line}");
            assert_eq!(parsed.lines[0].rt, 5);
        }
        // Six or eleven fields, or a fat file line (with its date), are not thin lines.
        for line in [
            "1796150315000|a|1|2|3|4",
            "1796150315000|a|1|2|3|4|5|0|0|1|9",
            "1796150315000|2026-12-01 10:00:00|a|1|2|3|4|5|0|0|1",
        ] {
            assert!(parse(line).is_err(), "{line}");
        }
    }

    #[test]
    fn garbage_lines_are_skipped_and_counted() {
        let body = "1796150315000|a|1|0|1|0|5|0|0|0\n\
                    1796150315000|b|1|0|1|0|5|0|0|0\n\
                    1796150315000|c|1|0|1|0|5|0|0|0\n\
                    1796150315001|d|1|0|1|0|5\n\
                    1796150315000|e|-1|0|1|0|5\n\
                    1796150315000|f\u{7}|1|0|1|0|5\n\
                    ";
        let parsed = parse(body).unwrap();
        assert_eq!(parsed.lines.len(), 3);
        assert_eq!(parsed.garbage, 3);
        let huge = format!("1796150315000|a|{}|0|1|0|5", MAX_COUNT + 1);
        assert_eq!(
            parse(&huge).unwrap_err(),
            AnswerError::Garbage {
                garbage: 1,
                lines: 1
            }
        );
        let long = format!(
            "1796150315000|{}|1|0|1|0|5",
            "r".repeat(MAX_RESOURCE_BYTES + 1)
        );
        assert!(parse(&long).is_err());
    }

    #[test]
    fn a_wholly_garbage_answer_is_refused() {
        let html = "<html>\n<body>502 Bad Gateway</body>\n</html>\n";
        assert_eq!(
            parse(html).unwrap_err(),
            AnswerError::Garbage {
                garbage: 3,
                lines: 3
            }
        );
        let big = "x".repeat(MAX_ANSWER_BYTES + 1);
        assert_eq!(parse(&big).unwrap_err(), AnswerError::TooLarge);
        // An empty answer is a machine with no traffic.
        assert_eq!(parse("").unwrap(), Parsed::default());
    }

    #[test]
    fn seconds_outside_the_window_and_pseudo_resources_are_left_out() {
        let body = "1796150314000|early|1|0|1|0|5\n\
                    1796150334000|late|1|0|1|0|5\n\
                    1796150333000|__system_load__|12000|0|0|0|0\n\
                    1796150333000|__cpu_usage__|3000|0|0|0|0\n\
                    1796150333000|last|1|0|1|0|5\n";
        let parsed = parse(body).unwrap();
        assert_eq!(parsed.garbage, 0);
        assert_eq!(parsed.lines.len(), 1);
        assert_eq!(parsed.lines[0].resource, "last");
    }
}

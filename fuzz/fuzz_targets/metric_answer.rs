//! A `metric` answer, as the dashboard's fetcher reads it from a machine. Never a panic; the lines
//! kept are within bounds and, written out again, read back the same.

#![no_main]

use floodgate_dashboard::ingest::line::{MAX_RESOURCE_BYTES, parse_answer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(parsed) = parse_answer(body, 0, i64::MAX) else {
        return;
    };
    let mut written = String::new();
    for l in &parsed.lines {
        assert!(!l.resource.is_empty() && l.resource.len() <= MAX_RESOURCE_BYTES);
        assert!(l.ts % 1000 == 0);
        written.push_str(&format!(
            "{}|{}|{}|{}|{}|{}|{}\n",
            l.ts, l.resource, l.pass, l.block, l.success, l.exception, l.rt
        ));
    }
    let again = parse_answer(&written, 0, i64::MAX).expect("written lines read back");
    assert_eq!(again.garbage, 0);
    assert_eq!(again.lines, parsed.lines);
});

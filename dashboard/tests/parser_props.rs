//! Property tests for the two parsers that read what machines send unauthenticated: heartbeat
//! parameters and `metric` answers. Whatever arrives, they never panic; what they accept is within
//! their bounds; what an agent writes, they read back exactly.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use floodgate_core::stats::MetricLine as AgentLine;
use floodgate_dashboard::ingest::line::{
    AnswerError, MAX_COUNT, MAX_LINES, MAX_RESOURCE_BYTES, MAX_RT_MS, MetricLine, parse_answer,
};
use floodgate_dashboard::registry::{MAX_NAME_LEN, MAX_TOKEN_LEN, parse_heartbeat};
use floodgate_transport::thin_line;
use proptest::prelude::*;

/// A heartbeat form as bytes on the wire, decoded the way the registry route decodes it.
fn decode(form: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(form.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// A name as an agent may send it: printable, not blank, not `.` or `..`, trimmed.
fn name() -> impl Strategy<Value = String> {
    "[^\\p{Cc}\\s][^\\p{Cc}]{0,40}"
        .prop_map(|s| s.trim().to_owned())
        .prop_filter("a name", |s| !s.is_empty() && s != "." && s != "..")
}

/// The address of one machine (not unspecified, multicast or broadcast).
fn machine_ip() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        any::<u32>().prop_map(|n| IpAddr::V4(Ipv4Addr::from(n))),
        any::<u128>().prop_map(|n| IpAddr::V6(Ipv6Addr::from(n))),
    ]
    .prop_filter("one machine", |ip| {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(*ip, IpAddr::V4),
            v4 => *v4,
        };
        !ip.is_unspecified() && !ip.is_multicast() && ip != IpAddr::from([255, 255, 255, 255])
    })
}

/// The keys a heartbeat may carry, and some it may not.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("app".to_owned()),
        Just("app_type".to_owned()),
        Just("hostname".to_owned()),
        Just("ip".to_owned()),
        Just("port".to_owned()),
        Just("v".to_owned()),
        Just("version".to_owned()),
        Just("token".to_owned()),
        "[a-z_]{0,8}",
    ]
}

/// Values anything from plausible to hostile.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{0,6}",
        "-?[0-9]{1,25}",
        "[0-9a-fA-F:.\\[\\]%]{0,45}",
        ".{0,80}",
        "\\PC{300,400}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_valid_heartbeat_reads_back_exactly(
        app in name(),
        hostname in name(),
        ip in machine_ip(),
        port in 1u16..=65535,
        app_type in 0i64..=1,
        v in "[0-9a-z._+-]{1,32}",
        version in any::<u64>(),
        token in proptest::option::of("[!-~]{1,64}"),
    ) {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("app", &app)
            .append_pair("app_type", &app_type.to_string())
            .append_pair("hostname", &hostname)
            .append_pair("ip", &ip.to_string())
            .append_pair("port", &port.to_string())
            .append_pair("v", &v)
            .append_pair("version", &version.to_string());
        if let Some(token) = &token {
            form.append_pair("token", token);
        }
        let got = parse_heartbeat(&decode(&form.finish())).unwrap();
        let mapped = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        prop_assert_eq!(&got.app, &app);
        prop_assert_eq!(&got.hostname, &hostname);
        prop_assert_eq!(got.ip, mapped);
        prop_assert_eq!(got.port, port);
        prop_assert_eq!(got.app_type, app_type);
        prop_assert_eq!(&got.sentinel_version, &v);
        prop_assert_eq!(&got.token, &token);
    }

    #[test]
    fn any_heartbeat_is_read_or_refused_with_its_field(
        params in proptest::collection::vec((key(), value()), 0..12),
    ) {
        match parse_heartbeat(&params) {
            Ok(r) => {
                prop_assert!(!r.app.is_empty() && r.app.chars().count() <= MAX_NAME_LEN);
                prop_assert!(r.hostname.chars().count() <= MAX_NAME_LEN);
                prop_assert!(!r.app.chars().chain(r.hostname.chars()).any(char::is_control));
                prop_assert!(r.port != 0);
                prop_assert!(!r.ip.is_unspecified() && !r.ip.is_multicast());
                prop_assert!(r.app_type == 0 || r.app_type == 1);
                prop_assert!(r.token.as_ref().is_none_or(|t| t.len() <= MAX_TOKEN_LEN));
            }
            Err(e) => {
                let known = ["app", "app_type", "hostname", "ip", "port", "v", "version", "token"];
                prop_assert!(known.contains(&e.field.as_str()), "field {:?}", e.field);
                prop_assert!(!e.message.is_empty());
            }
        }
    }

    #[test]
    fn metric_lines_an_agent_writes_read_back_exactly(
        lines in proptest::collection::vec(
            (
                0u64..4_000_000_000,
                "[^\\p{Cc}|]{1,60}",
                0..=MAX_COUNT,
                0..=MAX_COUNT,
                0..=MAX_COUNT,
                0..=MAX_COUNT,
                0..=MAX_RT_MS,
                any::<u8>(),
            ),
            1..40,
        ),
    ) {
        let lines: Vec<AgentLine> = lines
            .into_iter()
            .filter(|l| !l.1.starts_with("__") && l.1.len() <= MAX_RESOURCE_BYTES)
            .map(|(second, resource, pass, block, success, exception, rt, classification)| {
                AgentLine {
                    timestamp: second * 1000,
                    resource: Arc::from(resource.as_str()),
                    pass_qps: pass,
                    block_qps: block,
                    success_qps: success,
                    exception_qps: exception,
                    rt,
                    rt_sum: rt.saturating_mul(success),
                    occupied_pass_qps: 0,
                    concurrency: 0,
                    classification,
                }
            })
            .collect();
        let body: String = lines.iter().map(|l| thin_line(l) + "\n").collect();
        let parsed = parse_answer(&body, 0, i64::MAX).unwrap();
        prop_assert_eq!(parsed.garbage, 0);
        let expected: Vec<MetricLine> = lines
            .iter()
            .map(|l| MetricLine {
                ts: l.timestamp as i64,
                resource: l.resource.to_string(),
                pass: l.pass_qps as i64,
                block: l.block_qps as i64,
                success: l.success_qps as i64,
                exception: l.exception_qps as i64,
                rt: l.rt as i64,
            })
            .collect();
        prop_assert_eq!(parsed.lines, expected);
    }

    #[test]
    fn any_metric_answer_is_read_within_bounds_or_refused(
        body in prop_oneof![
            ".{0,400}",
            proptest::collection::vec("[0-9]{0,14}(\\|[^\n]{0,12}){0,11}", 0..30)
                .prop_map(|lines| lines.join("\n")),
        ],
        start in any::<i64>(),
        span in 0i64..10_000_000,
    ) {
        let end = start.saturating_add(span);
        match parse_answer(&body, start, end) {
            Ok(parsed) => {
                let lines = body.lines().filter(|l| !l.trim().is_empty()).count();
                prop_assert!(parsed.garbage * 2 <= lines);
                prop_assert!(parsed.lines.len() + parsed.garbage <= lines);
                for line in &parsed.lines {
                    prop_assert!(line.ts >= start && line.ts <= end && line.ts % 1000 == 0);
                    prop_assert!(!line.resource.is_empty());
                    prop_assert!(line.resource.len() <= MAX_RESOURCE_BYTES);
                    for count in [line.pass, line.block, line.success, line.exception] {
                        prop_assert!((0..=MAX_COUNT as i64).contains(&count));
                    }
                    prop_assert!((0..=MAX_RT_MS as i64).contains(&line.rt));
                }
            }
            Err(AnswerError::Garbage { garbage, lines }) => prop_assert!(garbage * 2 > lines),
            Err(AnswerError::TooLarge) => prop_assert!(body.lines().count() > MAX_LINES),
        }
    }
}

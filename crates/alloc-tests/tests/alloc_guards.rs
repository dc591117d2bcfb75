//! Admitting and refusing entries under authority and system rules (and outbound entries they do not
//! check) allocates nothing once the resource exists (a behaviour test with a counting allocator; one test per binary, as the count is global).

use floodgate_core::{AuthorityRule, EntryType, Floodgate, ManualClock, ManualProbe, SystemRule};

#[test]
fn authority_and_system_checks_allocate_nothing() {
    // Outbound entries under system rules, with no inbound entry ever (they count towards the warning
    // that the rules check nothing, and cross it).
    let outbound = Floodgate::builder()
        .clock(ManualClock::new(1_700_000_000_000))
        .build();
    outbound
        .load_system_rules([SystemRule::new().qps(1e12)])
        .unwrap();
    drop(outbound.entry("call-out").enter());
    let stats = allocation_counter::measure(|| {
        for _ in 0..2_000 {
            drop(outbound.entry("call-out").enter());
        }
    });
    assert_eq!(stats.count_total, 0, "outbound: {stats:?}");

    let clock = ManualClock::new(1_700_000_000_000);
    let probe = ManualProbe::with(Some(0.5), Some(0.9));
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .system_probe(probe.clone())
        .build();
    fg.load_authority_rules([AuthorityRule::white("R", "web,mobile")])
        .unwrap();
    fg.load_system_rules([SystemRule::new()
        .qps(1e12)
        .max_thread(1_000)
        .avg_rt(1_000)
        .highest_system_load(1.0)
        .highest_cpu_usage(0.8)])
        .unwrap();
    let attempt = |origin: &'static str| {
        drop(
            fg.entry("R")
                .origin(origin)
                .entry_type(EntryType::In)
                .enter(),
        );
    };
    // Warm up: nodes, origin nodes, block-log keys of this second.
    for origin in ["web", "batch"] {
        attempt(origin);
    }
    probe.set_cpu_usage(Some(0.5));
    attempt("web");
    let stats = allocation_counter::measure(|| {
        for _ in 0..5_000 {
            attempt("web"); // passes every check
            attempt("batch"); // refused by the white list
        }
        probe.set_cpu_usage(Some(0.9));
        for _ in 0..5_000 {
            attempt("web"); // refused by the CPU threshold
        }
    });
    assert_eq!(stats.count_total, 0, "{stats:?}");
    let node = fg.inbound_node();
    assert_eq!((node.pass_qps(), node.block_qps()), (5_001.0, 10_002.0));
}

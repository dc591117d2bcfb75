//! The slot chain: SPI registration, order, per-engine edits, blocking.

// Its own test binary, not a module of `tests/core`: `register_slot!` below adds `test_registered` to
// the chain of every engine built in the process, so in the shared binary every default engine would
// take the generic chain, `builtin_chain` would no longer compare the built-in path with the generic
// one, and the slot lists other tests check would change.

use std::sync::{Arc, Mutex};

use floodgate_core::slot::{ExitContext, Hooks, Slot, SlotContext};
use floodgate_core::{BlockError, BlockKind, Floodgate, ManualClock, register_slot};

const T0: u64 = 1_700_000_000_000;

/// Records every hook call into a shared log.
#[derive(Debug)]
struct Recorder {
    name: &'static str,
    log: Arc<Mutex<Vec<String>>>,
    block: bool,
}

impl Recorder {
    fn push(&self, what: &str) {
        self.log
            .lock()
            .unwrap()
            .push(format!("{}.{what}", self.name));
    }
}

impl Slot for Recorder {
    fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        self.push("entry");
        if self.block {
            return Err(cx.block(BlockKind::Custom));
        }
        Ok(())
    }
    fn on_pass(&self, _cx: &mut SlotContext<'_>) {
        self.push("pass");
    }
    fn on_block(&self, _cx: &mut SlotContext<'_>, block: &BlockError) {
        self.push(&format!("block({})", block.kind()));
    }
    fn exit(&self, _cx: &mut ExitContext<'_>) {
        self.push("exit");
    }
}

#[derive(Debug)]
struct Registered;
impl Slot for Registered {
    fn hooks(&self) -> Hooks {
        Hooks::ENTRY
    }
}
register_slot!("test_registered", -4000, || Arc::new(Registered));

fn recorder(name: &'static str, log: &Arc<Mutex<Vec<String>>>, block: bool) -> Arc<dyn Slot> {
    Arc::new(Recorder {
        name,
        log: log.clone(),
        block,
    })
}

#[test]
fn the_default_chain_has_sentinels_orders() {
    let fg = Floodgate::builder().clock(ManualClock::new(T0)).build();
    let slots = fg.slots();
    assert_eq!(
        &slots[..4],
        &[
            ("node_selector", -10000),
            ("cluster_builder", -9000),
            ("log", -8000),
            ("statistic", -7000)
        ]
    );
    assert!(
        slots.contains(&("test_registered", -4000)),
        "collected through inventory"
    );
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .remove_slot("test_registered")
        .build();
    assert!(!fg.slots().iter().any(|(n, _)| *n == "test_registered"));
}

#[test]
fn custom_slots_run_in_order_and_see_the_outcome() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .slot("late", -500, recorder("late", &log, false))
        .slot("early", -6500, recorder("early", &log, false))
        .build();
    drop(fg.entry("R").enter().unwrap());
    assert_eq!(
        *log.lock().unwrap(),
        [
            "early.entry",
            "late.entry",
            "late.pass",
            "early.pass",
            "early.exit",
            "late.exit"
        ]
    );
}

#[test]
fn a_custom_slot_can_block_and_earlier_slots_learn_it() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .slot("early", -6500, recorder("early", &log, false))
        .slot("gate", -2500, recorder("gate", &log, true))
        .slot("late", -500, recorder("late", &log, false))
        .build();
    let block = fg.entry("R").enter().unwrap_err();
    assert_eq!(block.kind(), BlockKind::Custom);
    assert_eq!(
        *log.lock().unwrap(),
        ["early.entry", "gate.entry", "early.block(custom)"],
        "later slots never run; earlier ones see the block; no exit for a blocked entry"
    );
    let node = fg.cluster_node("R").unwrap();
    assert_eq!(
        (node.pass_qps(), node.block_qps(), node.cur_thread_num()),
        (0.0, 1.0, 0)
    );
    clock_free_block_log(&fg);
}

fn clock_free_block_log(fg: &Floodgate) {
    // The block is logged once its second is over.
    assert!(fg.block_log().is_empty());
}

#[test]
fn replace_keeps_the_order_and_remove_drops_the_slot() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .slot("gate", -2500, recorder("gate", &log, true))
        .replace_slot("gate", recorder("open", &log, false))
        .build();
    assert!(fg.entry("R").enter().is_ok());
    assert!(fg.slots().contains(&("gate", -2500)));
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .slot("gate", -2500, recorder("gate", &log, true))
        .remove_slot("gate")
        .build();
    assert!(fg.entry("R").enter().is_ok());
}

#[test]
fn blocks_are_aggregated_per_second_in_the_block_log() {
    let dir = std::env::temp_dir().join(format!("floodgate-block-log-{}", std::process::id()));
    let _ = std::fs::remove_file(&dir);
    let clock = ManualClock::new(T0);
    let log = Arc::new(Mutex::new(Vec::new()));
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .block_log_file(&dir)
        .slot("gate", -2500, recorder("gate", &log, true))
        .build();
    for _ in 0..3 {
        let _ = fg.entry("R").origin("appA").enter();
    }
    let _ = fg.entry("R").enter();
    assert!(fg.block_log().is_empty(), "the second is not over");
    clock.advance(std::time::Duration::from_secs(1));
    let lines = fg.block_log();
    assert_eq!(
        lines,
        [
            "2023-11-14 22:13:20|1|R,BlockException,default,,|1,0",
            "2023-11-14 22:13:20|1|R,BlockException,default,appA,|3,0",
        ]
    );
    let file = std::fs::read_to_string(&dir).unwrap();
    assert_eq!(file.lines().collect::<Vec<_>>(), lines);
    let _ = std::fs::remove_file(&dir);
}

/// Attaches its name at pass and checks it comes back at exit.
#[derive(Debug)]
struct Attaching(Arc<Mutex<Vec<String>>>);

impl Slot for Attaching {
    fn on_pass(&self, cx: &mut SlotContext<'_>) {
        cx.attach(Arc::new(format!("probe:{}", cx.resource())));
    }
    fn exit(&self, cx: &mut ExitContext<'_>) {
        for a in cx.attachments() {
            if let Some(s) = a.downcast_ref::<String>() {
                self.0.lock().unwrap().push(s.clone());
            }
        }
    }
}

#[test]
fn a_slot_keeps_state_with_the_entry_until_exit() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .slot("attaching", -900, Arc::new(Attaching(seen.clone())))
        .build();
    let e = fg.entry("R").enter().unwrap();
    assert!(seen.lock().unwrap().is_empty());
    drop(e);
    assert_eq!(*seen.lock().unwrap(), ["probe:R"]);
}

/// Counts its calls; declares that it enforces flow rules.
#[derive(Debug, Default)]
struct FlowBound(std::sync::atomic::AtomicU32);

impl Slot for FlowBound {
    fn entry(&self, _cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
    fn hooks(&self) -> Hooks {
        Hooks::ENTRY
    }
    fn rule_type(&self) -> Option<floodgate_core::RuleType> {
        Some(floodgate_core::RuleType::Flow)
    }
}

#[test]
fn a_slot_bound_to_a_rule_kind_runs_only_while_such_rules_are_in_force() {
    let slot = Arc::new(FlowBound::default());
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .slot("flow_bound", -2100, slot.clone())
        .build();
    drop(fg.entry("R").enter().unwrap());
    assert_eq!(
        slot.0.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "skipped: no flow rule"
    );
    fg.load_rules_json(
        floodgate_core::RuleType::Flow,
        r#"[{"resource":"other","count":1}]"#,
    )
    .unwrap();
    drop(fg.entry("R").enter().unwrap());
    assert_eq!(slot.0.load(std::sync::atomic::Ordering::SeqCst), 1);
    fg.load_rules_json(floodgate_core::RuleType::Flow, "[]")
        .unwrap();
    drop(fg.entry("R").enter().unwrap());
    assert_eq!(slot.0.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// Fails in its exit hook for resource `boom`.
#[derive(Debug)]
struct PanicsOnExit;
impl Slot for PanicsOnExit {
    fn hooks(&self) -> Hooks {
        Hooks {
            entry: false,
            pass: false,
            block: false,
            exit: true,
        }
    }
    fn exit(&self, cx: &mut ExitContext<'_>) {
        if cx.resource() == "boom" {
            panic!("exit hook failed");
        }
    }
}

/// A slot whose exit hook panics cannot leave the exited entry current on its thread: later entries
/// do not nest under it, nor run in its context.
#[test]
fn a_panicking_exit_hook_leaves_the_thread_clean() {
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .slot("panics_on_exit", -7500, Arc::new(PanicsOnExit))
        .build();
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        fg.context("cx")
            .run(|| drop(fg.entry("boom").enter().unwrap()))
    }));
    assert!(failed.is_err());
    let later = fg.entry("after").enter().unwrap();
    assert_eq!(later.context_name(), floodgate_core::DEFAULT_CONTEXT_NAME);
    // The statistic slot's exit ran all the same (it comes after the panicking one), so the call is
    // not left counted in flight for good.
    let boom = fg.cluster_node("boom").unwrap();
    assert_eq!((boom.cur_thread_num(), boom.success_qps()), (0, 1.0));
}

/// Fails in its pass hook for resource `boom`.
#[derive(Debug)]
struct PanicsOnPass;
impl Slot for PanicsOnPass {
    fn hooks(&self) -> Hooks {
        Hooks {
            entry: false,
            pass: true,
            block: false,
            exit: false,
        }
    }
    fn on_pass(&self, cx: &mut SlotContext<'_>) {
        if cx.resource() == "boom" {
            panic!("pass hook failed");
        }
    }
}

/// A pass hook that panics after the statistic slot counted the call in flight (pass hooks run in
/// reverse order: a slot before the statistic slot passes after it): the call exits through the slots
/// that passed it before the panic goes on, so it is not left counted in flight for good. One that
/// panics before the statistic slot passed leaves nothing to undo.
#[test]
fn a_panicking_pass_hook_leaves_nothing_in_flight() {
    for order in [-7500, -2500] {
        let fg = Floodgate::builder()
            .clock(ManualClock::new(T0))
            .slot("panics_on_pass", order, Arc::new(PanicsOnPass))
            .build();
        let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            drop(fg.entry("boom").enter())
        }));
        assert!(failed.is_err());
        let boom = fg.cluster_node("boom").unwrap();
        let counted = if order < -7000 { 1.0 } else { 0.0 };
        assert_eq!(
            (boom.cur_thread_num(), boom.pass_qps(), boom.exception_qps()),
            (0, counted, counted),
            "order {order}"
        );
    }
}

/// Attaches a value to every entry it passes.
#[derive(Debug)]
struct AttachesOne;
impl Slot for AttachesOne {
    fn on_pass(&self, cx: &mut SlotContext<'_>) {
        cx.attach(Arc::new(1u32));
    }
    fn hooks(&self) -> Hooks {
        Hooks {
            entry: false,
            pass: true,
            block: false,
            exit: false,
        }
    }
}

/// Counts calls in flight, bound to flow rules.
#[derive(Debug, Default)]
struct FlowInFlight(std::sync::atomic::AtomicI64);
impl Slot for FlowInFlight {
    fn entry(&self, _cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
    fn exit(&self, _cx: &mut ExitContext<'_>) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
    fn hooks(&self) -> Hooks {
        Hooks {
            entry: true,
            pass: false,
            block: false,
            exit: true,
        }
    }
    fn rule_type(&self) -> Option<floodgate_core::RuleType> {
        Some(floodgate_core::RuleType::Flow)
    }
}

/// A slot skipped at entry (no rule of its kind in force) is skipped at exit, even for an entry that
/// carries attachments: a slot that counts at entry and gives back at exit would otherwise give back
/// what it never took, and its count would go below zero.
#[test]
fn a_slot_skipped_at_entry_is_skipped_at_exit_whatever_the_entry_carries() {
    let in_flight = Arc::new(FlowInFlight::default());
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .slot("attaching", -900, Arc::new(AttachesOne))
        .slot("flow_in_flight", -2100, in_flight.clone())
        .build();
    for _ in 0..3 {
        drop(fg.entry("R").enter().unwrap());
    }
    assert_eq!(in_flight.0.load(std::sync::atomic::Ordering::SeqCst), 0);
}

/// Panics in its entry hook, once.
#[derive(Debug, Default)]
struct PanicsOnceOnEntry(std::sync::atomic::AtomicBool);
impl Slot for PanicsOnceOnEntry {
    fn entry(&self, _cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        if !self.0.swap(true, std::sync::atomic::Ordering::SeqCst) {
            panic!("entry hook failed");
        }
        Ok(())
    }
    fn hooks(&self) -> Hooks {
        Hooks {
            entry: true,
            pass: false,
            block: false,
            exit: false,
        }
    }
}

/// An entry hook that panics after the hot-parameter slot counted the call's value in flight: the
/// count is released before the panic goes on (it leaked, and the value stayed at its limit).
#[test]
fn a_panicking_entry_hook_releases_hot_parameter_counts() {
    use floodgate_core::{FlowGrade, ParamFlowRule};
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .slot(
            "panics_once_on_entry",
            -2500,
            Arc::new(PanicsOnceOnEntry::default()),
        )
        .build();
    fg.load_param_flow_rules([ParamFlowRule::new("R", 0, 1.0).grade(FlowGrade::Thread)])
        .unwrap();
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        drop(fg.entry("R").args(["v"]).enter())
    }));
    assert!(failed.is_err());
    let entry = fg.entry("R").args(["v"]).enter();
    assert!(entry.is_ok(), "nothing of v in flight: {:?}", entry.err());
}

/// Blocks while armed.
#[derive(Debug, Default)]
struct BlocksWhenArmed(std::sync::atomic::AtomicBool);
impl Slot for BlocksWhenArmed {
    fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        if self.0.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(cx.block(BlockKind::Custom));
        }
        Ok(())
    }
    fn hooks(&self) -> Hooks {
        Hooks {
            entry: true,
            pass: false,
            block: false,
            exit: false,
        }
    }
}

/// Panics in its block hook, once.
#[derive(Debug, Default)]
struct PanicsOnceOnBlock(std::sync::atomic::AtomicBool);
impl Slot for PanicsOnceOnBlock {
    fn on_block(&self, _cx: &mut SlotContext<'_>, _block: &BlockError) {
        if !self.0.swap(true, std::sync::atomic::Ordering::SeqCst) {
            panic!("block hook failed");
        }
    }
    fn hooks(&self) -> Hooks {
        Hooks {
            entry: false,
            pass: false,
            block: true,
            exit: false,
        }
    }
}

/// A block hook that panics after the hot-parameter slot's released a blocked call's counts: they are
/// not released a second time (that would take away another call's count and let the limit be passed).
#[test]
fn a_panicking_block_hook_releases_hot_parameter_counts_once() {
    use floodgate_core::{FlowGrade, ParamFlowRule};
    let blocker = Arc::new(BlocksWhenArmed::default());
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .slot(
            "panics_once_on_block",
            -3500,
            Arc::new(PanicsOnceOnBlock::default()),
        )
        .slot("blocks_when_armed", -2500, blocker.clone())
        .build();
    fg.load_param_flow_rules([ParamFlowRule::new("R", 0, 2.0).grade(FlowGrade::Thread)])
        .unwrap();
    let a = fg.entry("R").args(["v"]).enter().expect("1 of 2 in flight");
    blocker.0.store(true, std::sync::atomic::Ordering::SeqCst);
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        drop(fg.entry("R").args(["v"]).enter())
    }));
    assert!(failed.is_err());
    blocker.0.store(false, std::sync::atomic::Ordering::SeqCst);
    let b = fg.entry("R").args(["v"]).enter();
    assert!(b.is_ok());
    assert!(
        fg.entry("R").args(["v"]).enter().is_err(),
        "2 of 2 in flight"
    );
    drop((a, b));
}

/// Counts calls in flight, bound to flow rules, and marks its exit so that what it counted is given
/// back whatever the rules by then. Its exit checks it gets its own word back.
#[derive(Debug, Default)]
struct MarksItsExit {
    in_flight: std::sync::atomic::AtomicI64,
    exits: std::sync::atomic::AtomicU32,
}
impl Slot for MarksItsExit {
    fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        self.in_flight
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        cx.keep_until_exit(u64::from(cx.count()) + 40);
        Ok(())
    }
    fn exit(&self, cx: &mut ExitContext<'_>) {
        assert_eq!(cx.kept(), Some(u64::from(cx.count()) + 40), "its own word");
        self.in_flight
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        self.exits.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    fn hooks(&self) -> Hooks {
        Hooks {
            entry: true,
            pass: false,
            block: false,
            exit: true,
        }
    }
    fn rule_type(&self) -> Option<floodgate_core::RuleType> {
        Some(floodgate_core::RuleType::Flow)
    }
}

/// A slot that marked its exit at entry sees the exit even once no rule of its kind is in force, with
/// the word it kept; one skipped at entry marks nothing and sees no exit. Other slots keeping words in
/// the same entry (the hot-parameter slot, another custom slot) keep theirs apart.
#[test]
fn a_marked_exit_runs_after_the_rules_are_removed() {
    use floodgate_core::{FlowGrade, ParamFlowRule, RuleType};
    let marks = Arc::new(MarksItsExit::default());
    let in_flight = Arc::new(FlowInFlight::default());
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .slot("marks_its_exit", -2100, marks.clone())
        .slot("flow_in_flight", -2200, in_flight.clone())
        .build();
    fg.load_rules_json(RuleType::Flow, r#"[{"resource":"other","count":1}]"#)
        .unwrap();
    fg.load_param_flow_rules([ParamFlowRule::new("R", 0, 1.0).grade(FlowGrade::Thread)])
        .unwrap();
    let a = fg.entry("R").args(["v"]).count(2).enter().unwrap();
    let b = fg.entry("S").enter().unwrap();
    fg.load_rules_json(RuleType::Flow, "[]").unwrap();
    drop((a, b));
    assert_eq!(
        marks.exits.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "both exits seen, rules gone"
    );
    assert_eq!(marks.in_flight.load(std::sync::atomic::Ordering::SeqCst), 0);
    // The unmarked slot bound to the same rules took one per entry and saw no exit.
    assert_eq!(in_flight.0.load(std::sync::atomic::Ordering::SeqCst), 2);
    // The hot-parameter slot's count of v was released too.
    drop(
        fg.entry("R")
            .args(["v"])
            .enter()
            .expect("v is no longer in flight"),
    );
    // Skipped at entry (no flow rule): nothing marked, no exit.
    drop(fg.entry("R").enter().unwrap());
    assert_eq!(marks.exits.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert_eq!(marks.in_flight.load(std::sync::atomic::Ordering::SeqCst), 0);
}

/// What a slot keeps, and in which hooks it saw it.
#[derive(Debug, Default)]
struct Keeps {
    seen: Mutex<Vec<String>>,
}
impl Slot for Keeps {
    fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        assert_eq!(cx.kept(), None);
        cx.keep(7);
        cx.keep(8);
        Ok(())
    }
    fn on_pass(&self, cx: &mut SlotContext<'_>) {
        self.seen
            .lock()
            .unwrap()
            .push(format!("pass {:?}", cx.kept()));
    }
    fn on_block(&self, cx: &mut SlotContext<'_>, _block: &BlockError) {
        let word = cx.forget();
        self.seen.lock().unwrap().push(format!("block {word:?}"));
    }
    fn exit(&self, cx: &mut ExitContext<'_>) {
        self.seen
            .lock()
            .unwrap()
            .push(format!("exit {:?}", cx.kept()));
    }
    fn rule_type(&self) -> Option<floodgate_core::RuleType> {
        Some(floodgate_core::RuleType::Flow)
    }
}

/// Removes every flow rule of the engine it is given, from its entry hook.
#[derive(Debug, Default)]
struct RemovesFlowRules(std::sync::OnceLock<Floodgate>);
impl Slot for RemovesFlowRules {
    fn entry(&self, _cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        if let Some(fg) = self.0.get() {
            fg.load_rules_json(floodgate_core::RuleType::Flow, "[]")
                .unwrap();
        }
        Ok(())
    }
    fn hooks(&self) -> Hooks {
        Hooks::ENTRY
    }
}

/// A word kept with [`SlotContext::keep`] reaches the slot's pass and block hooks (replaced by a second
/// `keep`, taken back by `forget`), even when the slot's rules are removed between its entry hook and
/// them; only a word kept until the exit reaches the exit.
#[test]
fn a_kept_word_reaches_the_later_hooks_and_not_the_exit() {
    use floodgate_core::RuleType;
    let keeps = Arc::new(Keeps::default());
    let remover = Arc::new(RemovesFlowRules::default());
    let blocker = Arc::new(BlocksWhenArmed::default());
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .slot("keeps", -2100, keeps.clone())
        .slot("removes_flow_rules", -2000, remover.clone())
        .slot("blocks_when_armed", -500, blocker.clone())
        .build();
    let rules = r#"[{"resource":"other","count":1}]"#;
    fg.load_rules_json(RuleType::Flow, rules).unwrap();
    drop(fg.entry("R").enter().unwrap());
    assert_eq!(*keeps.seen.lock().unwrap(), ["pass Some(8)", "exit None"]);
    keeps.seen.lock().unwrap().clear();

    // Rules removed between the entry hook and the pass hook: the pass hook runs all the same; the
    // exit, not marked, is skipped.
    let _ = remover.0.set(fg.clone());
    drop(fg.entry("R").enter().unwrap());
    assert_eq!(*keeps.seen.lock().unwrap(), ["pass Some(8)"]);
    keeps.seen.lock().unwrap().clear();

    // Blocked by a later slot, rules removed meanwhile: the block hook gets the word.
    fg.load_rules_json(RuleType::Flow, rules).unwrap();
    blocker.0.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(fg.entry("R").enter().is_err());
    assert_eq!(*keeps.seen.lock().unwrap(), ["block Some(8)"]);
}

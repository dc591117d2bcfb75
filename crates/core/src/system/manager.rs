//! The system rules in force: the list as loaded, the merged thresholds, and the probe they read.
//!
//! A load validates the whole list (any invalid rule rejects it and changes nothing), merges it by the
//! minimum per dimension and swaps in an immutable snapshot holding one pre-built [`SystemLimit`] per
//! dimension, so a block allocates nothing. When a load or CPU threshold comes into force the probe is
//! started.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use super::limit::{SystemLimit, SystemLimitType, SystemThresholds};
use super::probe::SystemProbe;
use super::rule::SystemRule;
use crate::node::StatisticNode;
use crate::rules::{Build, CompiledRules, RuleKind, RuleSet};

/// An immutable set of system rules.
#[derive(Debug)]
pub(crate) struct SystemSnapshot {
    rules: Vec<SystemRule>,
    pub(crate) thresholds: SystemThresholds,
    limits: [Arc<SystemLimit>; 5],
}

impl SystemSnapshot {
    fn new(rules: Vec<SystemRule>) -> Self {
        let thresholds = SystemThresholds::merge(&rules);
        let limits = SystemLimitType::ALL.map(|limit_type| {
            let threshold = match limit_type {
                SystemLimitType::Qps => thresholds.qps,
                SystemLimitType::Thread => thresholds.max_thread.map(|t| t as f64),
                SystemLimitType::Rt => thresholds.avg_rt.map(|t| t as f64),
                SystemLimitType::Load => thresholds.highest_system_load,
                SystemLimitType::Cpu => thresholds.highest_cpu_usage,
            };
            Arc::new(SystemLimit {
                limit_type,
                threshold: threshold.unwrap_or(f64::INFINITY),
            })
        });
        SystemSnapshot {
            rules,
            thresholds,
            limits,
        }
    }

    /// Whether any dimension is on.
    #[inline]
    pub(crate) fn is_active(&self) -> bool {
        !self.thresholds.is_empty()
    }

    /// The block rule of a dimension.
    #[inline]
    pub(crate) fn limit(&self, limit_type: SystemLimitType) -> &Arc<SystemLimit> {
        &self.limits[limit_type as usize]
    }
}

impl CompiledRules for SystemSnapshot {
    type Rule = SystemRule;

    fn rules(&self) -> impl Iterator<Item = &SystemRule> {
        self.rules.iter()
    }
}

impl Default for SystemSnapshot {
    fn default() -> Self {
        SystemSnapshot::new(Vec::new())
    }
}

/// What system protection sees now: the probe's readings and the thresholds in force.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SystemStatus {
    /// The load average, `None` when unavailable (then the load dimension does not block).
    pub load_average: Option<f64>,
    /// The CPU usage ratio, `None` when unavailable (then the CPU dimension does not block).
    pub cpu_usage: Option<f64>,
    /// The merged thresholds of the system rules in force.
    pub thresholds: SystemThresholds,
}

/// How many outbound entries, with system rules in force and no inbound entry seen yet, make the
/// engine warn that the rules check nothing (system rules never check outbound entries).
pub(crate) const OUTBOUND_BEFORE_WARNING: u32 = 1000;

/// The system rules, with the probe they read and the state of the warning about outbound entries: an
/// engine's [`RuleSet`](crate::rules::RuleSet) of them holds a [`SystemSnapshot`].
#[derive(Debug)]
pub(crate) struct SystemKind {
    pub(crate) probe: Arc<dyn SystemProbe>,
    /// Whether the inbound node was found to have counted an inbound entry (it never forgets).
    inbound_seen: AtomicBool,
    /// Outbound entries that met the rules of the last load while no inbound entry had been seen.
    outbound_unchecked: AtomicU32,
    /// Whether the last load's rules were warned about.
    warned: AtomicBool,
}

impl SystemKind {
    pub(crate) fn new(probe: Arc<dyn SystemProbe>) -> Self {
        SystemKind {
            probe,
            inbound_seen: AtomicBool::new(false),
            outbound_unchecked: AtomicU32::new(0),
            warned: AtomicBool::new(false),
        }
    }

    /// Notes an outbound entry that met rules in force (which do not check it): past
    /// [`OUTBOUND_BEFORE_WARNING`] of them with no inbound entry ever counted on the `inbound` node
    /// (passed or blocked, or one in flight), warns once per load that the rules check nothing, so that
    /// an application that never marks its entries inbound learns that it has no system protection
    /// (`system_rules_that_only_ever_meet_outbound_entries_are_warned_about_once_per_load`).
    #[inline]
    pub(crate) fn note_outbound(&self, inbound: &StatisticNode) {
        if !self.inbound_seen.load(Ordering::Relaxed) && !self.warned.load(Ordering::Relaxed) {
            self.count_outbound(inbound);
        }
    }

    #[cold]
    fn count_outbound(&self, inbound: &StatisticNode) {
        // Every inbound entry, checked by the rules or from before they came into force, is counted
        // there (one in flight that borrowed a future window has counted nothing yet but its
        // concurrency).
        if inbound.has_counted() || inbound.cur_thread_num() > 0 {
            self.inbound_seen.store(true, Ordering::Relaxed);
            return;
        }
        let seen = self.outbound_unchecked.fetch_add(1, Ordering::Relaxed) + 1;
        if seen >= OUTBOUND_BEFORE_WARNING && !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                target: "floodgate::system",
                outbound = seen,
                "system rules are in force but every entry so far was outbound, and system rules \
                 check inbound entries only: enter the requests this service receives with \
                 `.entry_type(EntryType::In)`"
            );
        }
    }
}

impl RuleSet<SystemKind> {
    /// The probe's readings and the thresholds in force (starts the probe).
    pub(crate) fn status(&self) -> SystemStatus {
        self.probe.start();
        SystemStatus {
            load_average: self.probe.load_average(),
            cpu_usage: self.probe.cpu_usage(),
            thresholds: self.snapshot().thresholds,
        }
    }
}

impl RuleKind for SystemKind {
    type Checked = Vec<SystemRule>;
    type Compiled = SystemSnapshot;

    /// Merges the rules (every rule sets a threshold, so a list protects something unless it is `[]`,
    /// which clears), and starts the probe when a load or CPU threshold comes into force.
    fn build(&self, load: Build<'_, Self>) -> SystemSnapshot {
        let snapshot = SystemSnapshot::new(load.checked);
        if snapshot.thresholds.reads_probe() {
            self.probe.start();
        }
        snapshot
    }

    /// The rules of each load, changed or not, are warned about afresh.
    fn loaded(&self, _: &SystemSnapshot) {
        self.outbound_unchecked.store(0, Ordering::Relaxed);
        self.warned.store(false, Ordering::Relaxed);
    }
}

/// The system rules in force, as the engine and the system slot share them.
pub(crate) type SystemRules = crate::rules::RuleSet<SystemKind>;

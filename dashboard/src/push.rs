//! The rule pusher: an app's machines converge to the rules the dashboard stores.
//!
//! * After a change, the app's whole list of that type goes to every healthy machine (`setRules` /
//!   `setParamFlowRules`, `[]` when the list is empty), and each machine's result is recorded.
//! * A failed push is retried after 1 s, 2 s, 4 s … (at most a minute apart) while the machine stays
//!   healthy; a machine that comes back is reconciled by its next heartbeat anyway.
//! * At every heartbeat a machine is reconciled: for each type the app manages, the machine's rules
//!   are read and, when they differ from the stored ones (a restart without a rule file, an edit made
//!   elsewhere), the stored list is pushed. For a type the app has never managed, a machine's
//!   non-empty list is imported as the app's, so that existing rules are never wiped.
//! * Calls to one machine are made one at a time, each reading the newest list when it is sent, so
//!   an older list never lands after a newer one.
//! * A type the machine does not have (a Java client without the param-flow module answers
//!   ``Unknown command``) is recorded as "not supported", not as a failure.
//!
//! At shutdown the pushes queued or in flight finish before the task returns.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use floodgate_core::RuleType;
use serde_json::Value;
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::task::JoinSet;

use crate::AppState;
use crate::agent_client::{CallError, Target};
use crate::db::{Machine, PushRecord};
use crate::events::Event;
use crate::rules::Change;

fn digest(answer: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(answer.as_bytes()).into()
}

/// The longest wait between two retries of a failed push.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// The wait before the retry that follows `attempts` failed attempts: 1 s, 2 s, 4 s, … at most
/// [`MAX_BACKOFF`].
pub fn backoff(attempts: u32) -> Duration {
    let secs = 1u64 << attempts.saturating_sub(1).min(16);
    Duration::from_secs(secs).min(MAX_BACKOFF)
}

#[derive(Debug)]
enum Job {
    App {
        app_id: i64,
        rule_type: RuleType,
    },
    AllTypes {
        app_id: i64,
    },
    Reconcile {
        machine_id: i64,
    },
    Pushed {
        machine_id: i64,
        rule_type: RuleType,
        failed_attempts: Option<u32>,
    },
    Reconciled {
        machine_id: i64,
    },
}

/// Queues pushes and reconciliations; cheap to clone.
#[derive(Debug, Clone)]
pub struct Pusher {
    tx: mpsc::UnboundedSender<Job>,
}

/// The task that carries them out (see [`channel`]).
#[derive(Debug)]
pub struct PushWorker {
    tx: mpsc::UnboundedSender<Job>,
    rx: mpsc::UnboundedReceiver<Job>,
}

/// A connected pusher and its worker.
pub fn channel() -> (Pusher, PushWorker) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Pusher { tx: tx.clone() }, PushWorker { tx, rx })
}

impl Pusher {
    /// Pushes the app's list of `rule_type` to every healthy machine of app `app_id`.
    pub fn push_app(&self, app_id: i64, rule_type: RuleType) {
        let _ = self.tx.send(Job::App { app_id, rule_type });
    }

    /// Pushes every type the app manages to every healthy machine of app `app_id` now (retries
    /// included).
    pub fn push_all(&self, app_id: i64) {
        let _ = self.tx.send(Job::AllTypes { app_id });
    }

    /// Compares machine `machine_id`'s rules with the stored ones, pushing or importing as needed.
    pub fn reconcile(&self, machine_id: i64) {
        let _ = self.tx.send(Job::Reconcile { machine_id });
    }
}

/// A version and the digest of the answer a machine gave while it held it.
type SeenInSync = (i64, [u8; 32]);

/// What the pusher keeps per machine: a lock, so that its calls do not overtake one another, and the
/// last answer of each type found in sync with the stored list (at that version), so that a heartbeat
/// that finds the same answer again is settled without validating both lists once more.
#[derive(Debug, Default)]
struct MachineLocks {
    locks: Mutex<HashMap<i64, Arc<tokio::sync::Mutex<()>>>>,
    in_sync: Mutex<HashMap<(i64, RuleType), SeenInSync>>,
}

impl MachineLocks {
    fn of(&self, machine_id: i64) -> Arc<tokio::sync::Mutex<()>> {
        let mut map = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(machine_id).or_default().clone()
    }

    fn known_in_sync(
        &self,
        machine_id: i64,
        rule_type: RuleType,
        version: i64,
        answer: &str,
    ) -> bool {
        let map = self.in_sync.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&(machine_id, rule_type))
            .is_some_and(|(v, d)| *v == version && *d == digest(answer))
    }

    /// Remembers `answer` as what the machine says when it holds `version` (`None`: forget).
    fn set_in_sync(&self, machine_id: i64, rule_type: RuleType, seen: Option<(i64, &str)>) {
        let mut map = self.in_sync.lock().unwrap_or_else(|p| p.into_inner());
        match seen {
            Some((version, answer)) => {
                map.insert((machine_id, rule_type), (version, digest(answer)));
            }
            None => {
                map.remove(&(machine_id, rule_type));
            }
        }
    }
}

/// Reports a reconciliation's end to the worker when dropped.
struct ReconcileDone {
    tx: mpsc::UnboundedSender<Job>,
    machine_id: i64,
}

impl Drop for ReconcileDone {
    fn drop(&mut self) {
        let _ = self.tx.send(Job::Reconciled {
            machine_id: self.machine_id,
        });
    }
}

#[derive(Debug, Clone, Copy)]
struct Retry {
    failed_attempts: u32,
    due: i64,
}

struct Worker {
    state: AppState,
    tx: mpsc::UnboundedSender<Job>,
    locks: Arc<MachineLocks>,
    /// Calls of pushes after a change or a retry.
    permits: Arc<Semaphore>,
    /// Reconciliations (each makes up to ten calls, to one machine): apart from `permits`, so that
    /// machines that accept and never answer cannot hold up the pushes of a change.
    reconcile_permits: Arc<Semaphore>,
    tasks: JoinSet<()>,
    retries: HashMap<(i64, RuleType), Retry>,
    reconciling: HashSet<i64>,
}

impl PushWorker {
    /// Runs until `stopped` turns true, then finishes what is queued and in flight.
    pub async fn run(mut self, state: AppState, mut stopped: watch::Receiver<bool>) {
        let concurrency = state.config.agent_concurrency as usize;
        let permits = Arc::new(Semaphore::new(concurrency));
        let reconcile_permits = Arc::new(Semaphore::new(concurrency));
        let mut worker = Worker {
            state,
            tx: self.tx.clone(),
            locks: Arc::default(),
            permits,
            reconcile_permits,
            tasks: JoinSet::new(),
            retries: HashMap::new(),
            reconciling: HashSet::new(),
        };
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                job = self.rx.recv() => match job {
                    Some(job) => worker.handle(job).await,
                    None => break,
                },
                _ = tick.tick() => worker.retry_due().await,
                Some(_) = worker.tasks.join_next(), if !worker.tasks.is_empty() => {}
                changed = stopped.changed() => {
                    if changed.is_err() || *stopped.borrow() {
                        break;
                    }
                }
            }
        }
        // Finish the pushes already queued (their changes are committed) and those in flight.
        while let Ok(job) = self.rx.try_recv() {
            if matches!(job, Job::App { .. } | Job::AllTypes { .. }) {
                worker.handle(job).await;
            }
        }
        while worker.tasks.join_next().await.is_some() {}
    }
}

impl Worker {
    async fn handle(&mut self, job: Job) {
        match job {
            Job::App { app_id, rule_type } => self.push_app(app_id, &[rule_type]).await,
            Job::AllTypes { app_id } => self.push_app(app_id, &RuleType::ALL).await,
            Job::Reconcile { machine_id } => {
                if self.reconciling.insert(machine_id) {
                    let (state, locks, _, tx) = self.parts();
                    let permits = self.reconcile_permits.clone();
                    self.tasks.spawn(async move {
                        // Sent however the task ends (a panic included), or the machine would
                        // never be reconciled again.
                        let _done = ReconcileDone {
                            tx: tx.clone(),
                            machine_id,
                        };
                        if let Ok(_permit) = permits.acquire_owned().await {
                            reconcile(&state, &locks, &tx, machine_id).await;
                        }
                    });
                }
            }
            Job::Reconciled { machine_id } => {
                self.reconciling.remove(&machine_id);
                self.state.events.send(Event::Reconciled { machine_id });
            }
            Job::Pushed {
                machine_id,
                rule_type,
                failed_attempts,
            } => match failed_attempts {
                Some(failed_attempts) => {
                    let due = self.state.now_ms() + backoff(failed_attempts).as_millis() as i64;
                    self.retries.insert(
                        (machine_id, rule_type),
                        Retry {
                            failed_attempts,
                            due,
                        },
                    );
                }
                None => {
                    self.retries.remove(&(machine_id, rule_type));
                }
            },
        }
    }

    fn parts(
        &self,
    ) -> (
        AppState,
        Arc<MachineLocks>,
        Arc<Semaphore>,
        mpsc::UnboundedSender<Job>,
    ) {
        (
            self.state.clone(),
            self.locks.clone(),
            self.permits.clone(),
            self.tx.clone(),
        )
    }

    async fn push_app(&mut self, app_id: i64, types: &[RuleType]) {
        let machines = match self
            .state
            .db
            .healthy_machines(Some(app_id), self.state.healthy_since())
            .await
        {
            Ok(m) => m,
            Err(e) => {
                tracing::error!(error = %e, app_id, "cannot list machines to push to");
                return;
            }
        };
        for machine in machines {
            for &rule_type in types {
                let failed = self
                    .retries
                    .remove(&(machine.id, rule_type))
                    .map_or(0, |r| r.failed_attempts);
                self.spawn_push(machine.clone(), rule_type, failed);
            }
        }
    }

    fn spawn_push(&mut self, machine: Machine, rule_type: RuleType, failed_attempts: u32) {
        let (state, locks, permits, tx) = self.parts();
        self.tasks.spawn(async move {
            // The machine's lock first: a push waiting behind a slow call to its machine holds no
            // permit that pushes to other machines need.
            let lock = locks.of(machine.id);
            let _one_call_at_a_time = lock.lock().await;
            let Ok(_permit) = permits.acquire_owned().await else {
                return;
            };
            let failed = push(&state, &machine, &locks, rule_type, failed_attempts).await;
            let _ = tx.send(Job::Pushed {
                machine_id: machine.id,
                rule_type,
                failed_attempts: failed,
            });
        });
    }

    async fn retry_due(&mut self) {
        if self.retries.is_empty() {
            return;
        }
        let now = self.state.now_ms();
        let due: Vec<((i64, RuleType), Retry)> = self
            .retries
            .iter()
            .filter(|(_, r)| r.due <= now)
            .map(|(k, r)| (*k, *r))
            .collect();
        for ((machine_id, rule_type), retry) in due {
            self.retries.remove(&(machine_id, rule_type));
            match self.state.db.machine(machine_id).await {
                Ok(Some(machine)) if machine.last_heartbeat >= self.state.healthy_since() => {
                    self.spawn_push(machine, rule_type, retry.failed_attempts);
                }
                // Gone quiet: its next heartbeat reconciles it.
                Ok(_) => {}
                Err(e) => tracing::error!(error = %e, machine_id, "cannot read machine to retry"),
            }
        }
    }
}

fn target(state: &AppState, machine: &Machine) -> Result<Target, String> {
    let target = Target::new(&machine.ip, machine.port, machine.agent_token.clone())
        .ok_or_else(|| "not a valid address".to_owned())?;
    if !state.gate.may_call(target.addr.ip()) {
        return Err("address not allowed".to_owned());
    }
    Ok(target)
}

/// The stored list of `rule_type` as the JSON array pushed, with its version (`None` while the app
/// does not manage the type).
async fn stored_list(
    state: &AppState,
    app_id: i64,
    rule_type: RuleType,
) -> Result<Option<(i64, String)>, sqlx::Error> {
    let Some(version) = state.db.rule_version(app_id, rule_type.as_str()).await? else {
        return Ok(None);
    };
    let rules = state.db.rules(app_id, rule_type.as_str()).await?;
    let items: Vec<Value> = rules
        .iter()
        .filter_map(|r| serde_json::from_str(&r.body).ok())
        .collect();
    Ok(Some((version, Value::Array(items).to_string())))
}

/// Pushes the stored list of `rule_type` to `machine` (the caller holds the machine's lock) and
/// records the outcome. After a push the machine took, its rules are read back and remembered as what
/// it says when it holds this version: a client that reports rules in a form of its own (a Java
/// client splits a system rule per dimension, keeps one authority rule per resource) is then not
/// found drifting, and pushed again, at every heartbeat. Returns the failed attempts so far when it
/// failed and should be retried.
async fn push(
    state: &AppState,
    machine: &Machine,
    locks: &MachineLocks,
    rule_type: RuleType,
    failed_attempts: u32,
) -> Option<u32> {
    let (version, json) = match stored_list(state, machine.app_id, rule_type).await {
        Ok(Some(list)) => list,
        Ok(None) => return None,
        Err(e) => {
            tracing::error!(error = %e, "cannot read rules to push");
            return Some(failed_attempts + 1);
        }
    };
    locks.set_in_sync(machine.id, rule_type, None);
    let now = state.now_ms();
    let (ok, message, retry) = match target(state, machine) {
        Err(reason) => (false, reason, false),
        Ok(target) => match state.agents.set_rules(&target, rule_type, &json).await {
            Ok(answer) => {
                if let Ok(reported) = state.agents.get_rules(&target, rule_type).await {
                    locks.set_in_sync(machine.id, rule_type, Some((version, &reported)));
                }
                (true, answer, false)
            }
            Err(CallError::NotSupported) => (true, NOT_SUPPORTED.to_owned(), false),
            Err(e) => (false, e.to_string(), true),
        },
    };
    let attempts = failed_attempts + 1;
    let next_retry_at = retry.then(|| now + backoff(attempts).as_millis() as i64);
    if ok {
        tracing::debug!(machine = machine.id, %rule_type, version, "rules pushed");
    } else {
        tracing::warn!(
            machine = machine.id, ip = %machine.ip, port = machine.port, %rule_type, version,
            error = %message, attempts, "push failed"
        );
    }
    let record = PushRecord {
        machine_id: machine.id,
        rule_type: rule_type.as_str().to_owned(),
        version,
        ok,
        message,
        attempts: i64::from(attempts),
        at: now,
        next_retry_at,
    };
    if let Err(e) = state.db.record_push(&record).await {
        tracing::error!(error = %e, "cannot record a push");
    }
    state.events.send(Event::Pushed {
        machine_id: machine.id,
        rule_type,
        ok,
    });
    retry.then_some(attempts)
}

/// What a push record says for a type the machine does not have.
pub const NOT_SUPPORTED: &str = "not supported";

/// Reconciles one machine: see the module docs.
async fn reconcile(
    state: &AppState,
    locks: &MachineLocks,
    tx: &mpsc::UnboundedSender<Job>,
    machine_id: i64,
) {
    let machine = match state.db.machine(machine_id).await {
        Ok(Some(m)) => m,
        Ok(None) => return,
        Err(e) => {
            tracing::error!(error = %e, machine_id, "cannot read machine to reconcile");
            return;
        }
    };
    let Ok(target) = target(state, &machine) else {
        return;
    };
    let lock = locks.of(machine_id);
    let _one_call_at_a_time = lock.lock().await;
    for rule_type in RuleType::ALL {
        let stored = match stored_list(state, machine.app_id, rule_type).await {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(error = %e, "cannot read rules to reconcile");
                continue;
            }
        };
        let last = state
            .db
            .push_of(machine.id, rule_type.as_str())
            .await
            .ok()
            .flatten();
        // A failed push of this very list is being retried on its schedule: leave it to the retry.
        if let (Some((version, _)), Some(last)) = (&stored, &last)
            && !last.ok
            && last.version == *version
            && last.next_retry_at.is_some_and(|at| at > state.now_ms())
        {
            continue;
        }
        let reported = state.agents.get_rules(&target, rule_type).await;
        let needs_push = match (stored, reported) {
            (stored, Err(CallError::NotSupported)) => {
                let version = stored.map_or(0, |(v, _)| v);
                record_unchanged(state, &machine, rule_type, version, NOT_SUPPORTED).await;
                None
            }
            (None, Ok(json)) => {
                import(state, &machine, rule_type, &json).await;
                None
            }
            (None, Err(_)) => None,
            (Some((version, stored_json)), Ok(json)) => {
                let validator = &state.rules.validator;
                let same = locks.known_in_sync(machine_id, rule_type, version, &json)
                    || validator.canonical_list(rule_type, &json)
                        == validator.canonical_list(rule_type, &stored_json);
                if same {
                    locks.set_in_sync(machine_id, rule_type, Some((version, &json)));
                    record_unchanged(state, &machine, rule_type, version, "in sync").await;
                    None
                } else {
                    tracing::info!(
                        machine = machine.id, ip = %machine.ip, port = machine.port, %rule_type,
                        "machine's rules differ from the stored ones; pushing"
                    );
                    Some(version)
                }
            }
            (Some((version, _)), Err(_)) => Some(version),
        };
        if let Some(version) = needs_push {
            // Failures of this same list so far count, so that the backoff keeps growing for a
            // machine that heartbeats but cannot be called back.
            let failed = last
                .filter(|l| !l.ok && l.version == version)
                .map_or(0, |l| u32::try_from(l.attempts).unwrap_or(u32::MAX));
            let failed = push(state, &machine, locks, rule_type, failed).await;
            let _ = tx.send(Job::Pushed {
                machine_id,
                rule_type,
                failed_attempts: failed,
            });
        }
    }
}

/// Records that `machine` has the stored list (or does not support the type), unless that is what
/// is recorded already (a heartbeat every few seconds should not write every time).
async fn record_unchanged(
    state: &AppState,
    machine: &Machine,
    rule_type: RuleType,
    version: i64,
    message: &str,
) {
    let current = state.db.push_of(machine.id, rule_type.as_str()).await;
    let unchanged = matches!(&current, Ok(Some(r)) if r.ok && r.version == version);
    if unchanged {
        return;
    }
    let record = PushRecord {
        machine_id: machine.id,
        rule_type: rule_type.as_str().to_owned(),
        version,
        ok: true,
        message: message.to_owned(),
        attempts: 1,
        at: state.now_ms(),
        next_retry_at: None,
    };
    if let Err(e) = state.db.record_push(&record).await {
        tracing::error!(error = %e, "cannot record a push");
    }
}

/// Takes `machine`'s rules of a type the app does not manage yet as the app's, when it has any.
async fn import(state: &AppState, machine: &Machine, rule_type: RuleType, json: &str) {
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(json) else {
        tracing::warn!(machine = machine.id, %rule_type, "machine's rules are not a JSON array; not imported");
        record_not_imported(state, machine, rule_type, "its answer is not a JSON array").await;
        return;
    };
    if items.is_empty() {
        return;
    }
    let actor = format!("import from {}", machine_addr(machine));
    match state
        .rules
        .apply(
            state,
            machine.app_id,
            rule_type,
            Change::Import(items),
            &actor,
        )
        .await
    {
        Ok(Some(outcome)) => {
            tracing::info!(
                machine = machine.id, %rule_type, rules = outcome.rules.len(),
                "imported a machine's rules as the app's"
            );
            state.events.send(Event::Imported {
                app_id: machine.app_id,
                rule_type,
            });
        }
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(machine = machine.id, %rule_type, error = %e, "machine's rules not imported");
            record_not_imported(state, machine, rule_type, &e.to_string()).await;
        }
    }
}

/// Records that `machine`'s rules of a type the app does not manage could not be imported: they stay
/// on the machine until a user saves a list of that type, which then replaces them, so the pages
/// must show it.
async fn record_not_imported(state: &AppState, machine: &Machine, rule_type: RuleType, why: &str) {
    let message = format!("its rules could not be imported: {why}");
    let current = state.db.push_of(machine.id, rule_type.as_str()).await;
    if matches!(&current, Ok(Some(r)) if !r.ok && r.message == message) {
        return;
    }
    let record = PushRecord {
        machine_id: machine.id,
        rule_type: rule_type.as_str().to_owned(),
        version: 0,
        ok: false,
        message,
        attempts: 1,
        at: state.now_ms(),
        next_retry_at: None,
    };
    if let Err(e) = state.db.record_push(&record).await {
        tracing::error!(error = %e, "cannot record a push");
    }
}

/// `ip:port`, the IPv6 address in brackets.
pub fn machine_addr(machine: &Machine) -> String {
    match machine.ip.parse::<std::net::IpAddr>() {
        Ok(ip) => std::net::SocketAddr::new(ip, machine.port as u16).to_string(),
        Err(_) => format!("{}:{}", machine.ip, machine.port),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_a_minute() {
        let secs: Vec<u64> = (1..=9).map(|a| backoff(a).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(backoff(1000), MAX_BACKOFF);
    }
}

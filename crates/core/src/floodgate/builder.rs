//! [`FloodgateBuilder`]: the settings of an engine, its clock, probe, error filters and slot edits.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::Floodgate;
use crate::chain::{ChainEdit, Parts, SlotChain};
use crate::clock::{CachedClock, Clock};
use crate::cluster::{TokenService, TokenServiceCell};
use crate::engine::{Caps, ConfigError, Inner, KindSettings, NEXT_ENGINE_ID, RuleSets, Settings};
use crate::error_filter::ErrorFilter;
use crate::registry::Registry;
use crate::slot::{BlockLog, EngineCore, Slot};
use crate::system::{OsProbe, SystemProbe};

/// Configures a [`Floodgate`].
#[derive(Default)]
pub struct FloodgateBuilder {
    clock: Option<Arc<dyn Clock>>,
    /// `clock` when it is a [`CachedClock`] (or none was set: the default).
    cached_clock: Option<CachedClock>,
    settings: Settings,
    edits: Vec<ChainEdit>,
    errors: ErrorFilter,
    block_log_file: Option<std::path::PathBuf>,
    system_probe: Option<Arc<dyn SystemProbe>>,
    token_service: Option<Box<dyn TokenService>>,
}

impl fmt::Debug for FloodgateBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FloodgateBuilder")
            .field("clock", &self.clock)
            .field("edits", &self.edits)
            .field("system_probe", &self.system_probe)
            .finish_non_exhaustive()
    }
}

impl FloodgateBuilder {
    /// The clock (default: [`CachedClock`], the real clock refreshed every millisecond).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.cached_clock = (&clock as &dyn std::any::Any)
            .downcast_ref::<CachedClock>()
            .copied();
        self.clock = Some(Arc::new(clock));
        self
    }

    /// The clock, shared.
    pub fn shared_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.cached_clock = None;
        self.clock = Some(clock);
        self
    }

    /// How many resources get statistics (default 6000). Past it, entries on new resources without rules
    /// pass uncounted, unless system or default (`"*"`) degrade rules are in force: then they share
    /// [`OVER_CAP_RESOURCE`](crate::OVER_CAP_RESOURCE). Resources that rules name exactly are always created and checked. New names
    /// that only regex rules match (one per raw URL path, say) share one resource per set of matching
    /// regex rules, the first such name's: checked by those rules, with the statistics, limits and
    /// breakers of all of them together (stricter, never open), and reported under that name (entries,
    /// blocks, metrics). Each entry on such a name matches the regex rules again (microseconds, not
    /// nanoseconds): keep resource names templates.
    pub fn max_resources(mut self, max: usize) -> Self {
        self.settings.max_resources = max;
        self
    }

    /// How many named contexts exist besides the default one (default 2000, as in Sentinel). Past it,
    /// entries run in the default context.
    pub fn max_contexts(mut self, max: usize) -> Self {
        self.settings.max_contexts = max;
        self
    }

    /// How many origins (callers) each resource counts apart (default 1000). Past it, a new origin's
    /// calls are counted on the resource's [`OVER_CAP_ORIGIN`](crate::OVER_CAP_ORIGIN) node, shared by all such callers, so an
    /// origin header a client fills in cannot grow the engine without bound. An origin a flow rule of
    /// the resource names (`limitApp`) always gets its own node. Rules read the shared node for callers
    /// past the cap (`limitApp: "other"` then limits them together: stricter, never open), and
    /// authority rules, which compare names, are unaffected.
    pub fn max_origins(mut self, max: usize) -> Self {
        self.settings.max_origins = max;
        self
    }

    /// The second window of every node: `sample_count` buckets over `interval_ms` (default 2 × 500 ms).
    /// Buckets must tile whole seconds (500, 250, 200, 100 ms, …).
    /// Checked when the engine is built ([`ConfigError::Window`]).
    pub fn second_window(mut self, sample_count: u32, interval_ms: u64) -> Self {
        self.settings.window = (sample_count, interval_ms);
        self
    }

    /// The warm-up cold factor (default 3, Sentinel's `csp.sentinel.flow.cold.factor`): a cold resource
    /// starts at `count / cold_factor`. Must be a number > 1, checked when the engine is built
    /// ([`ConfigError::ColdFactor`]).
    pub fn cold_factor(mut self, cold_factor: f64) -> Self {
        self.settings.cold_factor = cold_factor;
        self
    }

    /// How long a prioritized entry may wait for capacity borrowed from the next window (default 500 ms,
    /// or the window interval if that is shorter). At most the window interval, checked when the
    /// engine is built ([`ConfigError::OccupyTimeout`]).
    pub fn occupy_timeout(mut self, timeout: Duration) -> Self {
        self.settings.occupy_timeout = Some(timeout);
        self
    }

    /// Whether per-context nodes count from the start (default: they start on first read, which keeps
    /// the hot path to one set of counters per resource).
    pub fn count_context_nodes(mut self, eager: bool) -> Self {
        self.settings.eager_context_stats = eager;
        self
    }

    /// Where system rules read the load average and CPU usage (default: [`OsProbe`], which samples
    /// `/proc` and the cgroup file system once a second). Tests inject a
    /// [`ManualProbe`](crate::ManualProbe).
    pub fn system_probe(mut self, probe: impl SystemProbe) -> Self {
        self.system_probe = Some(Arc::new(probe));
        self
    }

    /// How many distinct values each hot-parameter rule remembers (default: Sentinel's
    /// `min(4000 · durationInSec, 200000)` per rule). Exception items come on top.
    /// At least 1, checked when the engine is built ([`ConfigError::ParamCacheCapacity`]).
    pub fn param_cache_capacity(mut self, capacity: usize) -> Self {
        self.settings.param_capacity = Some(capacity);
        self
    }

    /// The token service that rules in cluster mode ask (default: none, and they fall back as their
    /// `fallbackToLocalWhenFail` says). Also settable while the engine runs:
    /// [`Floodgate::set_token_service`].
    pub fn token_service(mut self, service: impl TokenService) -> Self {
        self.token_service = Some(Box::new(service));
        self
    }

    /// Appends the aggregated block log (Sentinel's `sentinel-block.log` lines) to `path`, rolled over to
    /// `<path>.1` (replacing it) once the file holds 64 MiB.
    pub fn block_log_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.block_log_file = Some(path.into());
        self
    }

    /// Only errors for which `predicate` holds are traced (Sentinel's `exceptionsToTrace`).
    pub fn trace_if(
        mut self,
        predicate: impl Fn(&(dyn std::error::Error + 'static)) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.errors.trace_if = Some(Arc::new(predicate));
        self
    }

    /// Errors for which `predicate` holds are never traced (Sentinel's `exceptionsToIgnore`; wins over
    /// [`trace_if`](Self::trace_if)).
    pub fn ignore_if(
        mut self,
        predicate: impl Fn(&(dyn std::error::Error + 'static)) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.errors.ignore_if = Some(Arc::new(predicate));
        self
    }

    /// Adds `slot` as `name` at `order` (lower runs first), replacing a slot of the same name.
    pub fn slot(mut self, name: &'static str, order: i32, slot: Arc<dyn Slot>) -> Self {
        self.edits.push(ChainEdit::Add { name, order, slot });
        self
    }

    /// Replaces the slot called `name`, keeping its order.
    pub fn replace_slot(mut self, name: &'static str, slot: Arc<dyn Slot>) -> Self {
        self.edits.push(ChainEdit::Replace { name, slot });
        self
    }

    /// Removes the slot called `name`.
    pub fn remove_slot(mut self, name: &'static str) -> Self {
        self.edits.push(ChainEdit::Remove { name });
        self
    }

    /// Builds the engine: checks the settings, collects the registered slots, applies the edits, sorts
    /// the chain.
    ///
    /// # Panics
    ///
    /// If a setting is invalid (see [`try_build`](Self::try_build), which returns the error instead).
    /// The default settings are valid.
    pub fn build(self) -> Floodgate {
        match self.try_build() {
            Ok(engine) => engine,
            Err(error) => panic!("invalid Floodgate setting: {error}"),
        }
    }

    /// Builds the engine, or names the first invalid setting and builds nothing.
    ///
    /// ```
    /// use floodgate_core::{ConfigError, Floodgate};
    ///
    /// let error = Floodgate::builder().cold_factor(1.0).try_build().unwrap_err();
    /// assert_eq!(error, ConfigError::ColdFactor(1.0));
    /// ```
    pub fn try_build(self) -> Result<Floodgate, ConfigError> {
        let config = self.settings.check()?;
        let (clock, cached_clock) = match self.clock {
            Some(clock) => (clock, self.cached_clock),
            None => {
                let cached = CachedClock::new();
                (Arc::new(cached) as Arc<dyn Clock>, Some(cached))
            }
        };
        let tick_ns = u64::try_from(clock.resolution().as_nanos()).unwrap_or(u64::MAX);
        let system_probe = self
            .system_probe
            .unwrap_or_else(|| Arc::new(OsProbe::new()) as Arc<dyn SystemProbe>);
        let rules = RuleSets::new(&KindSettings {
            cold_factor: config.cold_factor,
            param_capacity: config.param_capacity,
            tick_ns,
            system_probe,
        });
        let parts = Parts {
            rules: &rules,
            occupy_timeout_ms: config.occupy_timeout_ms,
        };
        let chain = SlotChain::build(self.edits, &parts);
        let caps = Caps {
            rules: rules.clone(),
            slots: chain.slot_list(),
        };
        let id = NEXT_ENGINE_ID.fetch_add(1, Ordering::Relaxed);
        let core = EngineCore {
            id,
            block_log: BlockLog::new(self.block_log_file, clock.clone()),
            cached_clock,
            clock,
            registry: Registry::new(id, config.limits(), Box::new(caps)),
            token_service: TokenServiceCell::default(),
        };
        core.token_service.set(self.token_service);
        let inner = Arc::new_cyclic(|me| Inner {
            me: me.clone(),
            core,
            rules,
            chain,
            config,
            errors: self.errors,
            enabled: AtomicBool::new(true),
        });
        Ok(Floodgate { inner })
    }
}

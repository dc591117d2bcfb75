//! The statistics and views of [`Floodgate`]: nodes, the call tree, metrics, engine counters, the
//! block log and the chain.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::Floodgate;
use crate::block::BlockKind;
use crate::entry_type::ResourceType;
use crate::node::{CallTree, MetricLine, NodeSnapshot, NodeView, TreeNodeKind};
use crate::registry::{DEFAULT_CONTEXT_NAME, MACHINE_ROOT};

/// Counters about the engine itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineStats {
    /// Resources with statistics.
    pub resources: usize,
    /// Named contexts (the default one included).
    pub contexts: usize,
    /// Entries on a new resource past the resource cap that no rule names exactly (passed without
    /// statistics, counted on [`OVER_CAP_RESOURCE`](crate::OVER_CAP_RESOURCE) while system or default `"*"` degrade rules are in
    /// force, or, when only regex rules match them, on the resource shared by the names those rules
    /// match).
    pub resource_cap_hits: u64,
    /// Entries in a new context past the context cap (run in the default context instead).
    pub context_cap_hits: u64,
    /// Cluster rules' token requests the token service decided (OK, BLOCKED or SHOULD_WAIT).
    pub cluster_token_answers: u64,
    /// Cluster rules' token requests it did not decide, or asked with no service: the rule fell back.
    pub cluster_fallbacks: u64,
    /// Of those, entries that passed a rule unchecked (its `fallbackToLocalWhenFail` is false).
    pub cluster_passes_unchecked: u64,
}

impl Floodgate {
    /// The statistics of `resource` across all contexts.
    pub fn cluster_node(&self, resource: &str) -> Option<NodeView<'_>> {
        let id = self.inner.registry.resource_index.get(resource)?;
        let resource = self.inner.registry.resources.get(id)?;
        Some(self.inner.view(&resource.cluster.stats))
    }

    /// The statistics of calls to `resource` from `origin`.
    pub fn origin_node(&self, resource: &str, origin: &str) -> Option<NodeView<'_>> {
        let id = self.inner.registry.resource_index.get(resource)?;
        let resource = self.inner.registry.resources.get(id)?;
        let origin = self
            .inner
            .registry
            .origin_nodes
            .get(resource.cluster.origin(origin)?)?;
        Some(self.inner.view(origin))
    }

    /// The per-origin statistics of `resource`.
    pub fn origin_nodes(&self, resource: &str) -> Vec<NodeSnapshot> {
        let now = self.inner.clock.now_ms();
        let Some(resource) = self
            .inner
            .registry
            .resource_index
            .get(resource)
            .and_then(|id| self.inner.registry.resources.get(id))
        else {
            return Vec::new();
        };
        resource
            .cluster
            .origins()
            .into_iter()
            .filter_map(|(origin, id)| {
                let node = self.inner.registry.origin_nodes.get(id)?;
                Some(NodeSnapshot::read(origin, node, now))
            })
            .collect()
    }

    /// The statistics of `resource` within the context `context` (starts that node's counting if it
    /// was not counting yet: see
    /// [`FloodgateBuilder::count_context_nodes`](crate::FloodgateBuilder::count_context_nodes)).
    pub fn context_node(&self, resource: &str, context: &str) -> Option<NodeView<'_>> {
        let resource = self
            .inner
            .registry
            .resources
            .get(self.inner.registry.resource_index.get(resource)?)?;
        let context = if context == DEFAULT_CONTEXT_NAME {
            0
        } else {
            self.inner.registry.context_index.get(context)?
        };
        let id = resource.context_node(context)?;
        Some(
            self.inner
                .view(self.inner.registry.default_nodes.get(id)?.stats()),
        )
    }

    /// All inbound traffic (`__total_inbound_traffic__`), what system rules look at.
    pub fn inbound_node(&self) -> NodeView<'_> {
        self.inner.view(&self.inner.registry.inbound.stats)
    }

    /// A snapshot of every resource's cluster node, in creation order.
    pub fn cluster_nodes(&self) -> Vec<NodeSnapshot> {
        let now = self.inner.clock.now_ms();
        self.inner
            .registry
            .resources
            .iter()
            .map(|r| NodeSnapshot::read(r.name.clone(), &r.cluster.stats, now))
            .collect()
    }

    /// The names of every resource with statistics.
    pub fn resource_names(&self) -> Vec<Arc<str>> {
        self.inner
            .registry
            .resources
            .iter()
            .map(|r| r.name.clone())
            .collect()
    }

    /// The call tree: `machine-root`, one entrance per context, resources nested as they were called.
    /// Reading it starts the counting of context nodes that were not counting yet.
    pub fn call_tree(&self) -> CallTree {
        let now = self.inner.clock.now_ms();
        let entrances: Vec<CallTree> = self
            .inner
            .registry
            .contexts
            .iter()
            .map(|context| {
                let mut expanded = rustc_hash::FxHashSet::default();
                let children: Vec<CallTree> = context
                    .entrance
                    .children
                    .to_vec()
                    .into_iter()
                    .filter_map(|id| self.subtree(id, now, 0, &mut expanded))
                    .collect();
                let parts: Vec<NodeSnapshot> = children.iter().map(|c| c.stats.clone()).collect();
                CallTree {
                    kind: TreeNodeKind::Entrance,
                    stats: NodeSnapshot::sum(context.name().clone(), &parts),
                    children,
                }
            })
            .collect();
        let parts: Vec<NodeSnapshot> = entrances.iter().map(|c| c.stats.clone()).collect();
        CallTree {
            kind: TreeNodeKind::Root,
            stats: NodeSnapshot::sum(Arc::from(MACHINE_ROOT), &parts),
            children: entrances,
        }
    }

    /// The tree under node `id`. Resources that call each other make the links a graph, not a tree:
    /// each node's children are listed once per context (`expanded`), where the walk first meets it,
    /// and it appears elsewhere without them. (Walking every path took time exponential in the depth.)
    fn subtree(
        &self,
        id: u32,
        now: u64,
        depth: usize,
        expanded: &mut rustc_hash::FxHashSet<u32>,
    ) -> Option<CallTree> {
        let node = self.inner.registry.default_nodes.get(id)?;
        let resource = self.inner.registry.resources.get(node.resource)?;
        let children = if depth < 64 && expanded.insert(id) {
            node.children
                .to_vec()
                .into_iter()
                .filter_map(|c| self.subtree(c, now, depth + 1, expanded))
                .collect()
        } else {
            Vec::new()
        };
        Some(CallTree {
            kind: TreeNodeKind::Resource,
            stats: NodeSnapshot::read(resource.name.clone(), node.stats(), now),
            children,
        })
    }

    /// Every resource's figures for each finished second in `[start_ms, end_ms]` (at most the last 60
    /// seconds), the inbound node included, non-empty seconds only, ordered by time then resource.
    pub fn metrics(&self, start_ms: u64, end_ms: u64) -> Vec<MetricLine> {
        let now = self.inner.clock.now_ms();
        let current = now / 1000;
        let Some(last) = (end_ms / 1000)
            .min(current)
            .checked_sub(u64::from(end_ms / 1000 >= current))
        else {
            return Vec::new();
        };
        let first = start_ms.div_ceil(1000);
        if first > last {
            return Vec::new();
        }
        let mut lines = Vec::new();
        let inbound = std::iter::once((
            &self.inner.registry.inbound_name,
            &self.inner.registry.inbound.stats,
            ResourceType::Common as u8,
        ));
        let resources = self
            .inner
            .registry
            .resources
            .iter()
            .map(|r| (&r.name, &r.cluster.stats, r.resource_type()));
        for (name, node, classification) in resources.chain(inbound) {
            for record in node.seconds(now, first, last) {
                if record.is_empty() {
                    continue;
                }
                lines.push(MetricLine {
                    timestamp: record.second * 1000,
                    resource: name.clone(),
                    pass_qps: record.pass,
                    block_qps: record.block,
                    success_qps: record.success,
                    exception_qps: record.exception,
                    rt: record.rt.checked_div(record.success).unwrap_or(0),
                    rt_sum: record.rt,
                    occupied_pass_qps: record.occupied_pass,
                    concurrency: node.cur_thread_num(),
                    classification,
                });
            }
        }
        lines.sort_by_key(|l| l.timestamp);
        lines
    }

    /// Counters about the engine: resources, contexts, and how often the caps were hit.
    pub fn stats(&self) -> EngineStats {
        EngineStats {
            resources: self.inner.registry.resources.iter().count(),
            contexts: self.inner.registry.contexts.iter().count(),
            resource_cap_hits: self
                .inner
                .registry
                .resource_cap_hits
                .load(Ordering::Relaxed),
            context_cap_hits: self.inner.registry.context_cap_hits.load(Ordering::Relaxed),
            cluster_token_answers: self.inner.token_service.answered.load(Ordering::Relaxed),
            cluster_fallbacks: self.inner.token_service.fell_back.load(Ordering::Relaxed),
            cluster_passes_unchecked: self
                .inner
                .token_service
                .passed_unchecked
                .load(Ordering::Relaxed),
        }
    }

    /// How many resources get statistics (the builder's [`max_resources`](crate::FloodgateBuilder::max_resources));
    /// resources with rules are created past it.
    pub fn max_resources(&self) -> usize {
        self.inner.config.max_resources
    }

    /// Blocks since the engine started, per resource and [`BlockKind`], in the order first seen: exact
    /// lifetime counters (kept by the block log, so a chain without the `log` slot counts none). Every
    /// resource keeps its own counts however many callers it has (the block log's lines gather the callers
    /// past 100 per resource and kind under origin `__other__`).
    pub fn block_counts(&self) -> Vec<(Arc<str>, BlockKind, u64)> {
        self.inner.block_log.totals()
    }

    /// The block log lines of finished seconds still held in memory (the last 1000), oldest first.
    pub fn block_log(&self) -> Vec<String> {
        self.inner.block_log.lines(self.inner.clock.now_ms())
    }

    /// The slots of this engine's chain, as `(name, order)`, in the order they run.
    pub fn slots(&self) -> Vec<(&'static str, i32)> {
        self.inner.chain.describe()
    }
}

//! Read-only views of nodes: a live view, an owned snapshot, the call tree and per-second metric lines.

use std::sync::Arc;

use super::statistic_node::StatisticNode;
use crate::clock::Clock;

/// A live view of one node's statistics, read at the engine's current time on each call.
#[derive(Debug, Clone, Copy)]
pub struct NodeView<'a> {
    pub(crate) node: &'a StatisticNode,
    pub(crate) clock: &'a dyn Clock,
}

impl NodeView<'_> {
    fn now(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Admitted requests per second over the second window.
    pub fn pass_qps(&self) -> f64 {
        self.node.pass_qps(self.now())
    }

    /// Blocked requests per second.
    pub fn block_qps(&self) -> f64 {
        self.node.block_qps(self.now())
    }

    /// Completed requests per second (errored ones included).
    pub fn success_qps(&self) -> f64 {
        self.node.success_qps(self.now())
    }

    /// Errored requests per second.
    pub fn exception_qps(&self) -> f64 {
        self.node.exception_qps(self.now())
    }

    /// Pass + block per second.
    pub fn total_qps(&self) -> f64 {
        self.node.total_qps(self.now())
    }

    /// Passes borrowed from future windows by prioritized entries, per second.
    pub fn occupied_pass_qps(&self) -> f64 {
        self.node.occupied_pass_qps(self.now())
    }

    /// Average response time in ms over the second window (0 without completions).
    pub fn avg_rt(&self) -> f64 {
        self.node.avg_rt(self.now())
    }

    /// Minimum response time in ms over the second window (5000 when none is smaller, at least 1).
    pub fn min_rt(&self) -> f64 {
        self.node.min_rt(self.now())
    }

    /// The best bucket's completions (at least 1, as Sentinel's), scaled to a second.
    pub fn max_success_qps(&self) -> f64 {
        self.node.max_success_qps(self.now())
    }

    /// Passes in the previous whole second.
    pub fn previous_pass_qps(&self) -> f64 {
        self.node.previous_pass_qps(self.now())
    }

    /// Blocks in the previous whole second.
    pub fn previous_block_qps(&self) -> f64 {
        self.node.previous_block_qps(self.now())
    }

    /// Requests in flight.
    pub fn cur_thread_num(&self) -> u64 {
        self.node.cur_thread_num()
    }

    /// Pass + block over the last minute.
    pub fn total_request(&self) -> u64 {
        let t = self.node.minute_totals(self.now());
        t.pass + t.block
    }

    /// Passes over the last minute.
    pub fn total_pass(&self) -> u64 {
        self.node.minute_totals(self.now()).pass
    }

    /// Blocks over the last minute.
    pub fn block_request(&self) -> u64 {
        self.node.minute_totals(self.now()).block
    }

    /// Completions over the last minute.
    pub fn total_success(&self) -> u64 {
        self.node.minute_totals(self.now()).success
    }

    /// Errors over the last minute.
    pub fn total_exception(&self) -> u64 {
        self.node.minute_totals(self.now()).exception
    }

    /// Passes counted in windows still to come: prioritized entries' borrowed passes and queued
    /// (rate-limited) entries' passes.
    pub fn waiting(&self) -> u64 {
        self.node.waiting(self.now())
    }

    /// An owned copy of every figure, named `name`.
    pub fn snapshot(&self, name: Arc<str>) -> NodeSnapshot {
        NodeSnapshot::read(name, self.node, self.now())
    }
}

/// Every figure of one node at one instant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeSnapshot {
    /// The resource (or context, for an entrance node) the node belongs to.
    pub name: Arc<str>,
    /// Admitted per second.
    pub pass_qps: f64,
    /// Blocked per second.
    pub block_qps: f64,
    /// Pass + block per second.
    pub total_qps: f64,
    /// Completed per second.
    pub success_qps: f64,
    /// Errored per second.
    pub exception_qps: f64,
    /// Average RT in ms.
    pub avg_rt: f64,
    /// Minimum RT in ms.
    pub min_rt: f64,
    /// Borrowed passes per second.
    pub occupied_pass_qps: f64,
    /// Requests in flight.
    pub cur_thread_num: u64,
    /// Passes over the last minute.
    pub one_minute_pass: u64,
    /// Blocks over the last minute.
    pub one_minute_block: u64,
    /// Errors over the last minute.
    pub one_minute_exception: u64,
    /// Pass + block over the last minute.
    pub one_minute_total: u64,
    /// Completions over the last minute.
    pub one_minute_success: u64,
}

impl NodeSnapshot {
    pub(crate) fn read(name: Arc<str>, node: &StatisticNode, now: u64) -> Self {
        let minute = node.minute_totals(now);
        NodeSnapshot {
            name,
            pass_qps: node.pass_qps(now),
            block_qps: node.block_qps(now),
            total_qps: node.total_qps(now),
            success_qps: node.success_qps(now),
            exception_qps: node.exception_qps(now),
            avg_rt: node.avg_rt(now),
            min_rt: node.min_rt(now),
            occupied_pass_qps: node.occupied_pass_qps(now),
            cur_thread_num: node.cur_thread_num(),
            one_minute_pass: minute.pass,
            one_minute_block: minute.block,
            one_minute_exception: minute.exception,
            one_minute_total: minute.pass + minute.block,
            one_minute_success: minute.success,
        }
    }

    /// Sums of several snapshots, as an entrance node reports its children: counts and rates add up, the
    /// average RT is weighted by pass QPS, the minimum RT is the smallest.
    pub fn sum(name: Arc<str>, parts: &[NodeSnapshot]) -> Self {
        let mut total = NodeSnapshot {
            name,
            min_rt: f64::from(super::statistic_node::STATISTIC_MAX_RT),
            ..NodeSnapshot::default()
        };
        let mut weighted_rt = 0.0;
        for p in parts {
            total.pass_qps += p.pass_qps;
            total.block_qps += p.block_qps;
            total.total_qps += p.total_qps;
            total.success_qps += p.success_qps;
            total.exception_qps += p.exception_qps;
            total.occupied_pass_qps += p.occupied_pass_qps;
            total.cur_thread_num += p.cur_thread_num;
            total.one_minute_pass += p.one_minute_pass;
            total.one_minute_block += p.one_minute_block;
            total.one_minute_exception += p.one_minute_exception;
            total.one_minute_total += p.one_minute_total;
            total.one_minute_success += p.one_minute_success;
            total.min_rt = total.min_rt.min(p.min_rt);
            weighted_rt += p.avg_rt * p.pass_qps;
        }
        if total.pass_qps > 0.0 {
            total.avg_rt = weighted_rt / total.pass_qps;
        }
        total
    }
}

/// The invocation tree: `machine-root` → one entrance node per context → the resources entered in it,
/// nested as they were called.
#[derive(Debug, Clone, PartialEq)]
pub struct CallTree {
    /// What the node is: the root, a context's entrance, or a resource in a context.
    pub kind: TreeNodeKind,
    /// The node's figures (an entrance sums its children; the root sums the entrances).
    pub stats: NodeSnapshot,
    /// Child nodes.
    pub children: Vec<CallTree>,
}

/// The kind of a [`CallTree`] node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeNodeKind {
    /// `machine-root`.
    Root,
    /// A context's entrance node.
    Entrance,
    /// A resource within a context (Sentinel's `DefaultNode`).
    Resource,
}

/// One resource's figures for one finished second: a line of Sentinel's `metric` command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricLine {
    /// The second, in epoch ms.
    pub timestamp: u64,
    /// The resource.
    pub resource: Arc<str>,
    /// Passes in that second.
    pub pass_qps: u64,
    /// Blocks in that second.
    pub block_qps: u64,
    /// Completions in that second.
    pub success_qps: u64,
    /// Errors in that second.
    pub exception_qps: u64,
    /// Average RT of that second's completions, in ms (integer, as Sentinel reports it).
    pub rt: u64,
    /// The sum of that second's completion RTs, in ms (exact; `rt` is this over `success_qps`).
    pub rt_sum: u64,
    /// Borrowed passes in that second.
    pub occupied_pass_qps: u64,
    /// Requests in flight when the line was read (Sentinel's core always reports 0 here).
    pub concurrency: u64,
    /// The resource type (classification).
    pub classification: u8,
}

//! Summing machines' lines per app × resource × second, as Sentinel's dashboard does: pass, block,
//! success and exception add up; the response time is weighted by completed calls, so the sum kept is
//! `Σ avgRt × success` and the average is that sum over `Σ success`; and the machines are counted.

use std::collections::HashMap;

use super::line::MetricLine;

pub use crate::db::MetricSums as Sums;

/// Adds one machine's `line` to `sums`.
pub fn add_line(sums: &mut Sums, line: &MetricLine) {
    sums.pass = sums.pass.saturating_add(line.pass);
    sums.block = sums.block.saturating_add(line.block);
    sums.success = sums.success.saturating_add(line.success);
    sums.exception = sums.exception.saturating_add(line.exception);
    sums.rt_sum = sums
        .rt_sum
        .saturating_add(line.rt.saturating_mul(line.success));
    sums.machines = sums.machines.saturating_add(1);
}

/// Which row a line adds to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// The app.
    pub app_id: i64,
    /// The resource's name.
    pub resource: String,
    /// The second.
    pub ts: i64,
}

/// The rows pending a commit.
#[derive(Debug, Default)]
pub struct Aggregator {
    rows: HashMap<Key, Sums>,
    newest: Option<i64>,
}

impl Aggregator {
    /// Adds one machine's lines of app `app_id`.
    pub fn add(&mut self, app_id: i64, lines: Vec<MetricLine>) {
        for line in lines {
            self.newest = Some(self.newest.map_or(line.ts, |n| n.max(line.ts)));
            let sums = self
                .rows
                .entry(Key {
                    app_id,
                    resource: line.resource.clone(),
                    ts: line.ts,
                })
                .or_default();
            add_line(sums, &line);
        }
    }

    /// How many rows are pending.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether no row is pending.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Takes the pending rows and the newest second among them.
    pub fn take(&mut self) -> (HashMap<Key, Sums>, Option<i64>) {
        (std::mem::take(&mut self.rows), self.newest.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(resource: &str, ts: i64, pass: i64, success: i64, rt: i64) -> MetricLine {
        MetricLine {
            ts,
            resource: resource.into(),
            pass,
            block: 1,
            success,
            exception: 0,
            rt,
        }
    }

    #[test]
    fn machines_are_summed_and_rt_weighted_by_success() {
        let mut agg = Aggregator::default();
        agg.add(
            1,
            vec![line("a", 1000, 10, 10, 100), line("b", 1000, 1, 1, 5)],
        );
        agg.add(
            1,
            vec![line("a", 1000, 30, 30, 20), line("a", 2000, 2, 2, 7)],
        );
        agg.add(2, vec![line("a", 1000, 5, 5, 1)]);
        assert_eq!(agg.len(), 4);
        let (rows, newest) = agg.take();
        assert!(agg.is_empty());
        assert_eq!(newest, Some(2000));
        let key = |app_id, resource: &str, ts| Key {
            app_id,
            resource: resource.into(),
            ts,
        };
        let a = rows[&key(1, "a", 1000)];
        assert_eq!(
            a,
            Sums {
                pass: 40,
                block: 2,
                success: 40,
                exception: 0,
                rt_sum: 10 * 100 + 30 * 20,
                machines: 2,
            }
        );
        // (10 calls at 100 ms + 30 at 20 ms) / 40 calls = 40 ms, not the plain mean of 60 ms.
        assert_eq!(a.avg_rt(), 40.0);
        assert_eq!(rows[&key(2, "a", 1000)].machines, 1);
        assert_eq!(rows[&key(1, "a", 2000)].rt_sum, 14);
        assert_eq!(Sums::default().avg_rt(), 0.0);
    }
}

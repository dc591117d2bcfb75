//! A hot-parameter rule's windows on a token server, one per argument value (Sentinel's
//! `ClusterParamMetric`), for at most [`CAPACITY`] values: past it, the eighth of them used least
//! recently are forgotten, so that a flood of distinct values costs one scan per eighth.

use std::collections::HashMap;

use super::metric::{ClusterMetric, Event};
use crate::protocol::Param;

/// How many values a rule keeps windows for (Sentinel's cluster default).
pub(crate) const CAPACITY: usize = 4000;

/// A value as a key: Java's integer types alike, floats by their bits (as the engine compares them).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Int(i64),
    Float(u64),
    Bool(bool),
    Str(Box<str>),
}

impl Key {
    fn of(param: &Param) -> Key {
        let float = |x: f64| {
            Key::Float(if x.is_nan() {
                f64::NAN.to_bits()
            } else {
                x.to_bits()
            })
        };
        match param {
            Param::Int(v) => Key::Int(i64::from(*v)),
            Param::Long(v) => Key::Int(*v),
            Param::Byte(v) => Key::Int(i64::from(*v)),
            Param::Short(v) => Key::Int(i64::from(*v)),
            Param::Double(v) => float(*v),
            Param::Float(v) => float(f64::from(*v)),
            Param::Bool(v) => Key::Bool(*v),
            Param::Str(s) => Key::Str(s.as_str().into()),
        }
    }
}

/// The windows of one rule's values.
#[derive(Debug)]
pub(crate) struct ValueMetrics {
    sample_count: u32,
    interval_ms: u64,
    /// Each value's window and when it was last used.
    values: HashMap<Key, (ClusterMetric, u64)>,
}

impl ValueMetrics {
    pub(crate) fn new(sample_count: u32, interval_ms: u64) -> Self {
        ValueMetrics {
            sample_count,
            interval_ms,
            values: HashMap::new(),
        }
    }

    /// Passes per second of `value` (0 for a value not seen).
    pub(crate) fn avg(&mut self, now: u64, value: &Param) -> f64 {
        self.values
            .get_mut(&Key::of(value))
            .map_or(0.0, |(m, _)| m.avg(now, Event::Pass))
    }

    /// Counts `n` passes of `value`.
    pub(crate) fn add(&mut self, now: u64, value: &Param, n: u64) {
        let key = Key::of(value);
        if !self.values.contains_key(&key) && self.values.len() >= CAPACITY {
            self.forget_least_recent();
        }
        let (samples, interval) = (self.sample_count, self.interval_ms);
        let (metric, used) = self
            .values
            .entry(key)
            .or_insert_with(|| (ClusterMetric::new(samples, interval), now));
        *used = now;
        metric.add(now, Event::Pass, n);
    }

    fn forget_least_recent(&mut self) {
        let mut used: Vec<u64> = self.values.values().map(|(_, at)| *at).collect();
        let cut = used.len() / 8;
        let (_, oldest_kept, _) = used.select_nth_unstable(cut);
        let oldest_kept = *oldest_kept;
        let mut over = self.values.len() - (CAPACITY - CAPACITY / 8);
        self.values.retain(|_, (_, at)| {
            if over > 0 && *at <= oldest_kept {
                over -= 1;
                false
            } else {
                true
            }
        });
    }

    /// How many values have windows.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_types_count_as_one_value_and_strings_apart() {
        let mut v = ValueMetrics::new(10, 1000);
        v.add(0, &Param::Int(5), 1);
        v.add(0, &Param::Long(5), 1);
        v.add(0, &Param::Short(5), 1);
        assert_eq!(v.avg(0, &Param::Byte(5)), 3.0);
        assert_eq!(v.avg(0, &Param::Str("5".into())), 0.0);
    }

    #[test]
    fn past_the_capacity_the_least_recent_values_go() {
        let mut v = ValueMetrics::new(10, 1000);
        for i in 0..CAPACITY as i64 {
            v.add(i as u64, &Param::Long(i), 1);
        }
        // Value 0 used again: among the most recent now.
        v.add(CAPACITY as u64, &Param::Long(0), 1);
        v.add(CAPACITY as u64 + 1, &Param::Long(-1), 1);
        assert!(v.len() <= CAPACITY);
        assert!(v.len() >= CAPACITY - CAPACITY / 8);
        let now = CAPACITY as u64 + 1;
        assert_eq!(
            v.avg(now, &Param::Long(0)),
            1.0,
            "kept: used lately (its first pass left the window)"
        );
        assert_eq!(v.avg(now, &Param::Long(1)), 0.0, "forgotten");
        assert_eq!(v.avg(now, &Param::Long(-1)), 1.0);
    }
}

//! Averaging metric values over questions, overall and per group.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// Sums of named metrics, to average.
#[derive(Debug, Default, Clone)]
pub struct Accumulator {
    sums: BTreeMap<String, f64>,
    count: usize,
}

impl Accumulator {
    /// Adds one question's values.
    pub fn add(&mut self, values: &[(String, f64)]) {
        for (name, value) in values {
            *self.sums.entry(name.clone()).or_default() += value;
        }
        self.count += 1;
    }

    /// Questions added.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Mean of one metric.
    pub fn mean(&self, name: &str) -> f64 {
        if self.count == 0 { 0.0 } else { self.sums.get(name).copied().unwrap_or(0.0) / self.count as f64 }
    }

    /// Every mean, rounded to 4 places, plus `questions`.
    pub fn to_json(&self) -> Value {
        let mut map: Map<String, Value> = self
            .sums
            .keys()
            .map(|name| (name.clone(), json!((self.mean(name) * 10_000.0).round() / 10_000.0)))
            .collect();
        map.insert("questions".into(), json!(self.count));
        Value::Object(map)
    }
}

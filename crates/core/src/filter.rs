//! Structured filters on a drawer's context JSON (robotmem `context_filter`)
//! and nearest-neighbour ordering on coordinates (`spatial_sort`).
//!
//! A context filter is a JSON object whose keys are dot paths into the
//! context (`"params.force"`, `"spatial.position"`) and whose values are
//! either a value (equality) or an object of operators: `$lt`, `$lte`,
//! `$gt`, `$gte` (numbers) and `$ne` (any value). All conditions must hold.
//! A filter is parsed once ([`ContextFilter::parse`]) so a malformed one is
//! refused with a message before any search runs.

use serde_json::{Map, Value};

use crate::error::ValidationError;

/// A comparison on one path.
#[derive(Debug, Clone, PartialEq)]
enum Condition {
    Equals(Value),
    NotEquals(Value),
    Less(f64),
    LessOrEqual(f64),
    Greater(f64),
    GreaterOrEqual(f64),
}

/// A parsed context filter.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ContextFilter {
    conditions: Vec<(Vec<String>, Condition)>,
}

fn bad(reason: String) -> ValidationError {
    ValidationError::BadName { what: "context_filter", value: String::new(), reason }
}

impl ContextFilter {
    /// Parses a filter object.
    pub fn parse(filter: &Value) -> Result<Self, ValidationError> {
        let Value::Object(map) = filter else {
            return Err(bad("it must be a JSON object of dot paths, e.g. {\"params.force\": {\"$lt\": 15}}".into()));
        };
        let mut conditions = Vec::new();
        for (path, expected) in map {
            let parts: Vec<String> = path.split('.').map(str::to_string).collect();
            if parts.iter().any(String::is_empty) {
                return Err(bad(format!("path {path:?} has an empty segment")));
            }
            match expected {
                Value::Object(ops) if ops.keys().any(|k| k.starts_with('$')) => {
                    for (op, operand) in ops {
                        let number = || {
                            operand.as_f64().ok_or_else(|| bad(format!("{path}: {op} needs a number, got {operand}")))
                        };
                        let condition = match op.as_str() {
                            "$lt" => Condition::Less(number()?),
                            "$lte" => Condition::LessOrEqual(number()?),
                            "$gt" => Condition::Greater(number()?),
                            "$gte" => Condition::GreaterOrEqual(number()?),
                            "$ne" => Condition::NotEquals(operand.clone()),
                            "$eq" => Condition::Equals(operand.clone()),
                            other => {
                                return Err(bad(format!(
                                    "{path}: operator {other:?} is not supported; use $lt, $lte, $gt, $gte, $ne"
                                )));
                            }
                        };
                        conditions.push((parts.clone(), condition));
                    }
                }
                value => conditions.push((parts, Condition::Equals(value.clone()))),
            }
        }
        Ok(Self { conditions })
    }

    /// Whether the filter has no conditions.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty()
    }

    /// Whether a context satisfies every condition. A missing path fails
    /// every condition except `$ne`.
    pub fn matches(&self, context: &Map<String, Value>) -> bool {
        self.conditions.iter().all(|(path, condition)| {
            let found = lookup(context, path);
            match (condition, found) {
                (Condition::NotEquals(expected), found) => found != Some(expected),
                (_, None) => false,
                (Condition::Equals(expected), Some(value)) => value == expected || numbers_equal(value, expected),
                (Condition::Less(limit), Some(value)) => value.as_f64().is_some_and(|v| v < *limit),
                (Condition::LessOrEqual(limit), Some(value)) => value.as_f64().is_some_and(|v| v <= *limit),
                (Condition::Greater(limit), Some(value)) => value.as_f64().is_some_and(|v| v > *limit),
                (Condition::GreaterOrEqual(limit), Some(value)) => value.as_f64().is_some_and(|v| v >= *limit),
            }
        })
    }
}

fn numbers_equal(a: &Value, b: &Value) -> bool {
    matches!((a.as_f64(), b.as_f64()), (Some(x), Some(y)) if x == y)
}

fn lookup<'a>(context: &'a Map<String, Value>, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut current = context.get(first)?;
    for part in rest {
        current = match current {
            Value::Object(map) => map.get(part)?,
            Value::Array(items) => items.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

/// Nearest-neighbour ordering on a coordinate array in the context.
#[derive(Debug, Clone, PartialEq)]
pub struct SpatialSort {
    /// Dot path of the coordinates, e.g. `spatial.position`.
    pub field: Vec<String>,
    /// The reference point.
    pub target: Vec<f64>,
    /// Drop drawers farther than this.
    pub max_distance: Option<f64>,
}

impl SpatialSort {
    /// Parses robotmem's `{"field": "...", "target": [x, y, ...], "max_distance": d}`.
    pub fn parse(value: &Value) -> Result<Self, ValidationError> {
        let bad = |reason: &str| ValidationError::BadName {
            what: "spatial_sort",
            value: value.to_string(),
            reason: reason.to_string(),
        };
        let field = value["field"].as_str().ok_or_else(|| bad("needs \"field\": a dot path to a coordinate array"))?;
        let target: Vec<f64> = value["target"]
            .as_array()
            .ok_or_else(|| bad("needs \"target\": an array of numbers"))?
            .iter()
            .map(|v| v.as_f64().ok_or_else(|| bad("\"target\" must hold only numbers")))
            .collect::<Result<_, _>>()?;
        if target.is_empty() {
            return Err(bad("\"target\" is empty"));
        }
        let max_distance = match &value["max_distance"] {
            Value::Null => None,
            v => Some(v.as_f64().filter(|d| *d >= 0.0).ok_or_else(|| bad("\"max_distance\" must be a number ≥ 0"))?),
        };
        Ok(Self { field: field.split('.').map(str::to_string).collect(), target, max_distance })
    }

    /// Euclidean distance from the target to the context's coordinates, or
    /// `None` when they are missing or of another dimension.
    pub fn distance(&self, context: &Map<String, Value>) -> Option<f64> {
        let coordinates = lookup(context, &self.field)?.as_array()?;
        if coordinates.len() != self.target.len() {
            return None;
        }
        let mut sum = 0.0;
        for (value, target) in coordinates.iter().zip(&self.target) {
            let d = value.as_f64()? - target;
            sum += d * d;
        }
        Some(sum.sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn context(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn operators_and_equality_on_dot_paths() {
        let ctx = context(json!({"params": {"force": 12.5, "mode": "soft"}, "task": "grasp", "tags": ["a", "b"]}));
        let check = |filter: Value| ContextFilter::parse(&filter).unwrap().matches(&ctx);
        assert!(check(json!({"params.force": {"$lt": 15}})));
        assert!(!check(json!({"params.force": {"$lt": 12.5}})));
        assert!(check(json!({"params.force": {"$lte": 12.5}})));
        assert!(check(json!({"params.force": {"$gt": 10, "$lt": 13}})));
        assert!(!check(json!({"params.force": {"$gte": 13}})));
        assert!(check(json!({"params.mode": "soft", "task": "grasp"})));
        assert!(!check(json!({"params.mode": {"$ne": "soft"}})));
        assert!(check(json!({"params.missing": {"$ne": 1}})), "a missing path is not equal to anything");
        assert!(!check(json!({"params.missing": 1})));
        assert!(check(json!({"tags.1": "b"})));
        assert!(check(json!({"params.force": 12.5})));
    }

    #[test]
    fn malformed_filters_are_refused_with_a_reason() {
        for filter in [json!([1]), json!({"a": {"$lt": "x"}}), json!({"a": {"$regex": "x"}}), json!({"a..b": 1})] {
            let err = ContextFilter::parse(&filter).unwrap_err().to_string();
            assert!(err.starts_with("context_filter"), "{err}");
        }
    }

    #[test]
    fn spatial_distance_and_limits() {
        let sort =
            SpatialSort::parse(&json!({"field": "spatial.pos", "target": [0.0, 0.0], "max_distance": 2})).unwrap();
        assert_eq!(sort.distance(&context(json!({"spatial": {"pos": [3.0, 4.0]}}))), Some(5.0));
        assert_eq!(sort.distance(&context(json!({"spatial": {"pos": [1.0]}}))), None);
        assert_eq!(sort.distance(&context(json!({}))), None);
        assert_eq!(sort.max_distance, Some(2.0));
        assert!(SpatialSort::parse(&json!({"field": "p", "target": []})).is_err());
        assert!(SpatialSort::parse(&json!({"target": [1]})).is_err());
    }
}

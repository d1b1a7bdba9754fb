//! The runtime bound: one walk over an object (and the object it replaces) records, for each schema node, how
//! many values it holds and the largest of them; the rules' costs estimated with those sizes bound what running
//! them can cost, and past kube's budget they are not run.

use serde_json::Value;

use super::estimate::{self, Sizes};
use super::{CostModel, Kind, MAX_DEPTH, PER_CALL_LIMIT, RUNTIME_BUDGET};
use crate::FieldError;

/// What one object holds at one schema node.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Seen {
    /// How many values (of the new object).
    pub count: u64,
    /// The largest: elements, entries, bytes (everything in it, for a node of any content).
    pub size: u64,
    /// The longest map key.
    pub key: u64,
}

/// The runtime estimate of one object's rules.
#[derive(Debug, Default)]
pub struct Runtime {
    /// The estimated cost of running every rule on the object.
    pub total: u64,
    /// Past a limit: the error kube reports, at the rule site where the budget ran out.
    pub refused: Option<FieldError>,
}

struct Walk<'a> {
    model: &'a CostModel,
    seen: Vec<Seen>,
    /// The path of the first value at each node that has rules.
    first: Vec<Option<String>>,
    /// Whether a node or one below it has rules (only their paths are kept).
    rules_below: Vec<bool>,
}

impl CostModel {
    /// The estimated cost of running every rule on `object` (`old`: the object it replaces, which transition
    /// rules see), and the error when it is past kube's per-call limit or runtime budget.
    pub fn runtime(&self, object: &Value, old: Option<&Value>) -> Runtime {
        if self.nodes.is_empty() {
            return Runtime::default();
        }
        let mut walk = Walk { model: self, seen: vec![Seen::default(); self.nodes.len()], first: vec![None; self.nodes.len()], rules_below: self.rules_below() };
        walk.observe(0, object, Some(""), true, 0);
        if let Some(old) = old {
            walk.observe(0, old, None, false, 0);
        }
        let sizes = Sizes::observed(self, &walk.seen);
        let mut total = 0u64;
        for (index, node) in self.nodes.iter().enumerate() {
            let count = walk.seen[index].count;
            if count == 0 {
                continue;
            }
            for rule in &node.rules {
                let once = estimate::rule(self, &sizes, index, &rule.expression);
                let field = walk.first[index].clone().unwrap_or_default();
                let value = format!("{:?}", node.type_name);
                if once > PER_CALL_LIMIT {
                    let why = format!("'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}", rule.shown);
                    return Runtime { total: total.saturating_add(once), refused: Some(FieldError::invalid(field, value, why)) };
                }
                total = total.saturating_add(once.saturating_mul(count));
                if total > RUNTIME_BUDGET {
                    let why = "validation failed due to running out of cost budget, no further validation rules will be run";
                    return Runtime { total, refused: Some(FieldError::invalid(field, value, why)) };
                }
            }
        }
        Runtime { total, refused: None }
    }

    fn rules_below(&self) -> Vec<bool> {
        let mut below: Vec<bool> = self.nodes.iter().map(|n| !n.rules.is_empty()).collect();
        // Children come after their parent, so one pass from the end carries the flag up.
        for index in (0..self.nodes.len()).rev() {
            let node = &self.nodes[index];
            let children = node.properties.values().chain(&node.items).chain(&node.unknown);
            if children.into_iter().any(|c| below[*c]) {
                below[index] = true;
            }
        }
        below
    }
}

impl Walk<'_> {
    /// Records `value` at `node` and below. `path` is given only where a path is still wanted.
    fn observe(&mut self, node: usize, value: &Value, path: Option<&str>, counting: bool, depth: usize) {
        let model = self.model;
        let schema = &model.nodes[node];
        let seen = &mut self.seen[node];
        if counting {
            seen.count = seen.count.saturating_add(1);
        }
        let size = match (schema.kind, value) {
            (Kind::Any, _) => weight(value, 0),
            (Kind::Scalar, Value::Number(_) | Value::Bool(_) | Value::Null) => 1,
            (Kind::String, Value::String(s)) => s.len() as u64,
            (Kind::List, Value::Array(items)) => items.len() as u64,
            (Kind::Object | Kind::Map, Value::Object(map)) => map.len() as u64,
            // Not what the schema says (OpenAPI validation reports it): everything in it.
            _ => weight(value, 0),
        };
        seen.size = seen.size.max(size);
        if let (Kind::Map, Value::Object(map)) = (schema.kind, value) {
            seen.key = seen.key.max(map.keys().map(|k| k.len() as u64).max().unwrap_or(0));
        }
        if let (Some(path), false) = (path, schema.rules.is_empty()) {
            self.first[node].get_or_insert_with(|| path.to_owned());
        }
        if depth > MAX_DEPTH {
            return;
        }
        match (schema.kind, value) {
            (Kind::Object, Value::Object(map)) => {
                for (key, child_value) in map {
                    let Some(child) = schema.properties.get(key).or(schema.unknown.as_ref()).copied() else { continue };
                    let child_path = self.child_path(child, path, || join(path.unwrap_or_default(), key));
                    self.observe(child, child_value, child_path.as_deref(), counting, depth + 1);
                }
            }
            (Kind::Map, Value::Object(map)) => {
                let Some(child) = schema.items else { return };
                for (key, child_value) in map {
                    let child_path = self.child_path(child, path, || join(path.unwrap_or_default(), key));
                    self.observe(child, child_value, child_path.as_deref(), counting, depth + 1);
                }
            }
            (Kind::List, Value::Array(items)) => {
                let Some(child) = schema.items else { return };
                for (i, item) in items.iter().enumerate() {
                    let child_path = self.child_path(child, path, || format!("{}[{i}]", path.unwrap_or_default()));
                    self.observe(child, item, child_path.as_deref(), counting, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// A child's path, wanted only where rules are below.
    fn child_path(&self, child: usize, path: Option<&str>, make: impl FnOnce() -> String) -> Option<String> {
        (path.is_some() && self.rules_below[child]).then(make)
    }
}

/// `base.key`, or `key` at the root.
fn join(base: &str, key: &str) -> String {
    if base.is_empty() {
        key.to_owned()
    } else {
        format!("{base}.{key}")
    }
}

/// Everything in a value: elements, entries and bytes, all the way down (saturating; deeper than `MAX_DEPTH`
/// counts as its serialized-size bound would).
fn weight(value: &Value, depth: usize) -> u64 {
    if depth > MAX_DEPTH {
        return super::MAX_REQUEST_BYTES;
    }
    match value {
        Value::String(s) => s.len() as u64,
        Value::Array(items) => items.iter().fold(items.len() as u64, |sum, v| sum.saturating_add(weight(v, depth + 1))),
        Value::Object(map) => map.iter().fold(map.len() as u64, |sum, (k, v)| sum.saturating_add(k.len() as u64).saturating_add(weight(v, depth + 1))),
        _ => 1,
    }
}

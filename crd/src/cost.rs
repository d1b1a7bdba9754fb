//! CEL cost: an upper bound on the work of a CRD version's `x-kubernetes-validations` rules, as kube-apiserver
//! bounds it. At a CRD write the bound is estimated from the schema (`maxItems`, `maxProperties`, `maxLength`, or
//! what fits in a 3 MiB request) and checked against kube's static limits; before an object's rules run it is
//! estimated again from the object's actual sizes and checked against kube's runtime budget, so no rule runs
//! past the budget (the interpreter itself counts nothing).
//!
//! The model: a rule's cost is the sum of its nodes' costs, a comprehension (`all`, `exists`, `map`, ...) costs
//! the size of what it ranges over times its body, and size-dependent functions (string search, `in` on a list,
//! list equality, ...) cost a tenth of a unit per element or byte they may touch, as cel-go counts them. The
//! estimator itself is in `estimate`.

use std::collections::BTreeMap;

use kube_core::cel::cel::common::ast::IdedExpr;
use serde_json::Value;

use crate::FieldError;

mod estimate;
mod observe;

pub use observe::Runtime;

/// kube's `StaticEstimatedCostLimit`: one rule's estimated cost times the number of times it can run.
pub const STATIC_RULE_LIMIT: u64 = 10_000_000;
/// kube's `StaticEstimatedCRDCostLimit`: the sum over every rule of a schema.
pub const STATIC_TOTAL_LIMIT: u64 = 100_000_000;
/// kube's `RuntimeCELCostBudget`: every rule run while validating one object.
pub const RUNTIME_BUDGET: u64 = 10_000_000;
/// kube's `PerCallLimit`: one rule run once.
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// kube's request body limit, which bounds lists, maps and strings without a declared maximum.
const MAX_REQUEST_BYTES: u64 = 3 * 1024 * 1024;
/// How deep schemas are followed (as `structural`).
const MAX_DEPTH: usize = 64;

/// What a schema node holds, as far as cost goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Declared properties (and, with `x-kubernetes-preserve-unknown-fields`, any others).
    Object,
    /// `additionalProperties`: string keys to values of one schema.
    Map,
    List,
    String,
    /// Numbers, booleans.
    Scalar,
    /// Anything (`x-kubernetes-preserve-unknown-fields` without properties): sized by its whole content.
    Any,
}

/// One schema node.
#[derive(Debug)]
struct Node {
    kind: Kind,
    /// The OpenAPI type kube names in runtime errors (`object`, `array`, `string`, ...).
    type_name: &'static str,
    properties: BTreeMap<String, usize>,
    /// List items or map values.
    items: Option<usize>,
    /// The node undeclared properties of an object that keeps unknown fields are.
    unknown: Option<usize>,
    /// The most elements, entries or bytes a value here has, by the schema.
    max_size: u64,
    /// How many values here one object can hold, by the schema (saturating).
    cardinality: u64,
    rules: Vec<Rule>,
}

/// One `x-kubernetes-validations` entry.
#[derive(Debug)]
struct Rule {
    /// `<schema path>.x-kubernetes-validations[i].rule`.
    path: String,
    /// The rule's text.
    text: String,
    /// What kube names the rule by in errors: its message, or its text.
    shown: String,
    expression: IdedExpr,
}

/// A CRD version's schema as the estimator sees it: its nodes (the root first, then depth first) and their rules.
#[derive(Debug, Default)]
pub struct CostModel {
    nodes: Vec<Node>,
}

/// One rule's static estimate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleCost {
    /// `<schema path>.x-kubernetes-validations[i].rule`.
    pub path: String,
    /// The rule's text.
    pub rule: String,
    /// Its cost for one run times the number of times it can run.
    pub cost: u64,
}

impl CostModel {
    /// The model of `schema` (a version's `openAPIV3Schema`), rules parsed; a rule that does not parse is left
    /// out (compilation reports it).
    pub fn of(schema: &Value, path: &str) -> CostModel {
        let mut model = CostModel::default();
        model.add(schema, path, 1, 0);
        model
    }

    /// Whether any rule is modelled.
    pub fn has_rules(&self) -> bool {
        self.nodes.iter().any(|n| !n.rules.is_empty())
    }

    /// Each rule's static estimate (its cost times how many times it can run), in schema order.
    pub fn static_costs(&self) -> Vec<RuleCost> {
        let sizes = estimate::Sizes::of_schema(self);
        let mut out = Vec::new();
        for node in (0..self.nodes.len()).filter(|n| !self.nodes[*n].rules.is_empty()) {
            for rule in &self.nodes[node].rules {
                let once = estimate::rule(self, &sizes, node, &rule.expression);
                out.push(RuleCost { path: rule.path.clone(), rule: rule.text.clone(), cost: once.saturating_mul(self.nodes[node].cardinality) });
            }
        }
        out
    }

    fn add(&mut self, schema: &Value, path: &str, cardinality: u64, depth: usize) -> usize {
        let index = self.nodes.len();
        let kind = kind_of(schema);
        let max_size = declared_max(schema, kind).unwrap_or_else(|| fitting(schema, kind));
        let type_name = match kind {
            Kind::Object | Kind::Map | Kind::Any => "object",
            Kind::List => "array",
            Kind::String => "string",
            Kind::Scalar => match schema.get("type").and_then(Value::as_str) {
                Some("integer") => "integer",
                Some("boolean") => "boolean",
                _ => "number",
            },
        };
        self.nodes.push(Node { kind, type_name, properties: BTreeMap::new(), items: None, unknown: None, max_size, cardinality, rules: Vec::new() });
        if depth > MAX_DEPTH {
            return index;
        }
        self.nodes[index].rules = rules(schema, path);
        let below = cardinality.saturating_mul(max_size);
        if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
            for (name, child) in properties {
                let child = self.add(child, &format!("{path}.properties[{name}]"), cardinality, depth + 1);
                self.nodes[index].properties.insert(name.clone(), child);
            }
        }
        match kind {
            Kind::List => {
                let items = schema.get("items").unwrap_or(&Value::Null);
                let child = self.add(items, &format!("{path}.items"), below, depth + 1);
                self.nodes[index].items = Some(child);
            }
            Kind::Map => {
                let values = schema.get("additionalProperties").unwrap_or(&Value::Null);
                let child = self.add(values, &format!("{path}.additionalProperties"), below, depth + 1);
                self.nodes[index].items = Some(child);
            }
            Kind::Object if flag(schema, "x-kubernetes-preserve-unknown-fields") => {
                let any = json_any();
                let child = self.add(&any, &format!("{path}.properties[*]"), cardinality, depth + 1);
                self.nodes[index].unknown = Some(child);
            }
            _ => {}
        }
        index
    }
}

/// A schema that is anything.
fn json_any() -> Value {
    serde_json::json!({"x-kubernetes-preserve-unknown-fields": true})
}

fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn kind_of(schema: &Value) -> Kind {
    if flag(schema, "x-kubernetes-int-or-string") {
        return Kind::String;
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("array") => Kind::List,
        Some("string") => Kind::String,
        Some("integer" | "number" | "boolean") => Kind::Scalar,
        Some("object") if schema.get("additionalProperties").is_some_and(|a| a.is_object() || a == true) => Kind::Map,
        Some("object") if schema.get("properties").is_none() && flag(schema, "x-kubernetes-preserve-unknown-fields") => Kind::Any,
        Some("object") => Kind::Object,
        _ if flag(schema, "x-kubernetes-preserve-unknown-fields") => Kind::Any,
        _ => Kind::Object,
    }
}

fn declared_max(schema: &Value, kind: Kind) -> Option<u64> {
    let key = match kind {
        Kind::List => "maxItems",
        Kind::Map => "maxProperties",
        Kind::String => "maxLength",
        Kind::Object => return Some(schema.get("properties").and_then(Value::as_object).map_or(0, |p| p.len() as u64)),
        Kind::Scalar => return Some(1),
        Kind::Any => return None,
    };
    schema.get(key).and_then(Value::as_u64)
}

/// The most a value without a declared maximum can hold in a 3 MiB request: for a list or map, as many of the
/// smallest element as fit (kube's estimate from the element's minimum serialized size).
fn fitting(schema: &Value, kind: Kind) -> u64 {
    let room = MAX_REQUEST_BYTES - 2;
    match kind {
        Kind::List => room / (min_bytes(schema.get("items").unwrap_or(&Value::Null)) + 1),
        // `"":` before each value, and a comma.
        Kind::Map => room / (min_bytes(schema.get("additionalProperties").unwrap_or(&Value::Null)) + 4),
        _ => room,
    }
}

/// The fewest bytes a value of `schema` serializes to (kube's `estimateMinSizeJSON`).
fn min_bytes(schema: &Value) -> u64 {
    if flag(schema, "x-kubernetes-int-or-string") {
        return 1;
    }
    let least = match schema.get("type").and_then(Value::as_str) {
        Some("string") => 2 + schema.get("minLength").and_then(Value::as_u64).unwrap_or(0),
        Some("integer" | "number") => 1,
        Some("boolean") => 4,
        Some("object" | "array") => 2,
        _ => 1,
    };
    if flag(schema, "nullable") {
        least.min(4)
    } else {
        least
    }
}

/// The rules at one node (and in its `allOf`/`anyOf`/`oneOf` branches, which see the same value).
fn rules(schema: &Value, path: &str) -> Vec<Rule> {
    let mut out = Vec::new();
    collect_rules(schema, path, &mut out);
    for branch in ["allOf", "anyOf", "oneOf"] {
        for (i, sub) in schema.get(branch).and_then(Value::as_array).into_iter().flatten().enumerate() {
            collect_rules(sub, &format!("{path}.{branch}[{i}]"), &mut out);
        }
    }
    out
}

fn collect_rules(schema: &Value, path: &str, out: &mut Vec<Rule>) {
    for (i, entry) in schema.get("x-kubernetes-validations").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let Some(text) = entry.get("rule").and_then(Value::as_str) else { continue };
        let Ok(program) = kube_core::cel::cel::Program::compile(text) else { continue };
        let message = entry.get("message").and_then(Value::as_str).map(str::trim).filter(|m| !m.is_empty());
        out.push(Rule {
            path: format!("{path}.x-kubernetes-validations[{i}].rule"),
            text: text.trim().to_owned(),
            shown: message.unwrap_or(text.trim()).to_owned(),
            expression: program.expression().clone(),
        });
    }
}

/// Rules that construct a message (`Object{...}`): kube's type check knows no such type in a CRD's rules
/// (`undeclared reference`), and the CEL interpreter cannot evaluate one, so they are refused when written.
pub fn check_constructions(model: &CostModel) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for rule in model.nodes.iter().flat_map(|node| &node.rules) {
        if let Some(name) = construction(&rule.expression) {
            errors.push(FieldError::invalid(&rule.path, format!("{:?}", rule.text),
                format!("compilation failed: ERROR: undeclared reference to '{name}' (message construction is not supported in x-kubernetes-validations)")));
        }
    }
    errors
}

/// The type name of the first message construction in `expression`, if it has one (the CEL interpreter panics
/// on one: callers refuse such expressions when they are written).
pub fn construction(expression: &IdedExpr) -> Option<String> {
    use kube_core::cel::cel::common::ast::{EntryExpr, Expr};
    match &expression.expr {
        Expr::Struct(construction) => Some(construction.type_name.clone()),
        Expr::Map(map) => map.entries.iter().find_map(|entry| match &entry.expr {
            EntryExpr::MapEntry(pair) => construction(&pair.key).or_else(|| construction(&pair.value)),
            EntryExpr::StructField(field) => construction(&field.value),
        }),
        Expr::Call(call) => call.target.as_deref().and_then(construction).or_else(|| call.args.iter().find_map(construction)),
        Expr::Comprehension(c) => [&c.iter_range, &c.accu_init, &c.loop_cond, &c.loop_step, &c.result].into_iter().find_map(construction),
        Expr::List(list) => list.elements.iter().find_map(construction),
        Expr::Select(select) => construction(&select.operand),
        _ => None,
    }
}

/// kube's wording of a cost past its limit.
fn exceeds(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_owned()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!("{what} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)")
}

/// The static limits, as kube checks them when a CRD is written: each rule past `STATIC_RULE_LIMIT`, and the whole
/// schema past `STATIC_TOTAL_LIMIT` (with the rules that contributed most). `schema_path` is the version's
/// `...schema.openAPIV3Schema`. A rule whose text is in `preexisting` (the CRD being replaced) is not held to
/// the per-rule limit, and the total is checked only when it grew past the limit, so a stored CRD can still be
/// updated.
pub fn check_static(model: &CostModel, schema_path: &str, previous_total: Option<u64>, preexisting: &dyn Fn(&str) -> bool) -> Vec<FieldError> {
    let costs = model.static_costs();
    let mut errors = Vec::new();
    for cost in costs.iter().filter(|c| c.cost > STATIC_RULE_LIMIT && !preexisting(&c.rule)) {
        errors.push(FieldError::forbidden(&cost.path, exceeds("estimated rule cost", cost.cost, STATIC_RULE_LIMIT)));
    }
    let total = costs.iter().fold(0u64, |sum, c| sum.saturating_add(c.cost));
    if total > STATIC_TOTAL_LIMIT && previous_total.is_none_or(|previous| total > previous) {
        let mut expensive: Vec<&RuleCost> = costs.iter().filter(|c| c.cost >= STATIC_TOTAL_LIMIT / 100).collect();
        expensive.sort_by_key(|c| std::cmp::Reverse(c.cost));
        for cost in expensive.into_iter().take(4) {
            errors.push(FieldError::forbidden(&cost.path, "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"));
        }
        errors.push(FieldError::forbidden(schema_path,
            exceeds("x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema", total, STATIC_TOTAL_LIMIT)));
    }
    errors
}

/// The sum of a model's static estimates.
pub fn static_total(model: &CostModel) -> u64 {
    model.static_costs().iter().fold(0u64, |sum, c| sum.saturating_add(c.cost))
}

/// Whether `rule` (a rule's text, trimmed) is among `schema`'s rules.
pub fn has_rule(schema: &Value, rule: &str, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    match schema {
        Value::Object(map) => {
            let here = map.get("x-kubernetes-validations").and_then(Value::as_array).into_iter().flatten()
                .any(|entry| entry.get("rule").and_then(Value::as_str).map(str::trim) == Some(rule));
            here || map.values().any(|v| has_rule(v, rule, depth + 1))
        }
        Value::Array(items) => items.iter().any(|v| has_rule(v, rule, depth + 1)),
        _ => false,
    }
}

#[cfg(test)]
mod tests;

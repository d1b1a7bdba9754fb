use serde_json::{json, Value};

use super::*;
use crate::structural::Structural;

const PATH: &str = "spec.versions[0].schema.openAPIV3Schema";

/// A root schema whose `spec.items` is a list of `items`, bounded by `max_items` when given, with `rule` on `spec`.
fn list_schema(items: Value, max_items: Option<u64>, rule: &str) -> Value {
    let mut list = json!({"type": "array", "items": items});
    if let Some(max) = max_items {
        list["maxItems"] = json!(max);
    }
    json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [{"rule": rule}], "properties": {"items": list}}}})
}

fn static_errors(schema: &Value) -> Vec<FieldError> {
    check_static(&CostModel::of(schema, PATH), PATH, None, &|_| false)
}

const THREE_ALL: &str = "self.items.all(a, self.items.all(b, self.items.all(c, a + b + c >= 0)))";
const RULE_AT_SPEC: &str = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule";

#[test]
fn rules_are_accepted_or_refused_by_their_estimated_cost() {
    let int = json!({"type": "integer"});
    let string = json!({"type": "string"});
    let short = json!({"type": "string", "maxLength": 10});
    let table: Vec<(&str, Value, bool)> = vec![
        ("three nested all() over an unbounded list", list_schema(int.clone(), None, THREE_ALL), false),
        ("three nested all() over 10 items", list_schema(int.clone(), Some(10), THREE_ALL), true),
        ("three nested all() over 50 items", list_schema(int.clone(), Some(50), THREE_ALL), true),
        ("three nested all() over 1000 items", list_schema(int.clone(), Some(1000), THREE_ALL), false),
        ("one all() over an unbounded list", list_schema(int.clone(), None, "self.items.all(a, a > 0)"), true),
        ("two nested all() over an unbounded list", list_schema(int.clone(), None, "self.items.all(a, self.items.exists(b, a == b))"), false),
        ("`in` inside all() over an unbounded list", list_schema(int.clone(), None, "self.items.all(a, a in self.items)"), false),
        ("`in` inside all() over 100 items", list_schema(int.clone(), Some(100), "self.items.all(a, a in self.items)"), true),
        ("map() then all() over bounded strings", list_schema(short.clone(), Some(100), "self.items.map(s, s + 'x').all(s, s.size() < 20)"), true),
        ("contains() over unbounded strings in an unbounded list", list_schema(string.clone(), None, "self.items.all(s, s.contains('x'))"), false),
        ("contains() over short strings in an unbounded list", list_schema(short.clone(), None, "self.items.all(s, s.contains('x'))"), true),
        ("size() of an unbounded list", list_schema(int.clone(), None, "self.items.size() < 5"), true),
        ("a plain comparison", list_schema(int.clone(), None, "has(self.items) || true"), true),
    ];
    for (name, schema, accepted) in table {
        let errors = static_errors(&schema);
        assert_eq!(errors.is_empty(), accepted, "{name}: {errors:?}");
        if !accepted {
            let error = errors.iter().find(|e| e.field == RULE_AT_SPEC).unwrap_or_else(|| panic!("{name}: {errors:?}"));
            assert_eq!(error.reason, "FieldValueForbidden");
            assert!(error.message.starts_with("Forbidden: estimated rule cost exceeds budget by factor of "), "{name}: {error:?}");
            assert!(error.message.ends_with("(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"));
        }
    }
}

#[test]
fn a_rule_on_list_items_costs_once_per_item() {
    let item = |max_length: Option<u64>| {
        let mut string = json!({"type": "string", "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+$')"}]});
        if let Some(max) = max_length {
            string["maxLength"] = json!(max);
        }
        string
    };
    let schema = |max_items: Option<u64>, max_length: Option<u64>| {
        let mut list = json!({"type": "array", "items": item(max_length)});
        if let Some(max) = max_items {
            list["maxItems"] = json!(max);
        }
        json!({"type": "object", "properties": {"names": list}})
    };
    assert!(static_errors(&schema(Some(100), Some(63))).is_empty());
    let unbounded = static_errors(&schema(None, None));
    let rule = "spec.versions[0].schema.openAPIV3Schema.properties[names].items.x-kubernetes-validations[0].rule";
    assert!(unbounded.iter().any(|e| e.field == rule && e.message.contains("estimated rule cost exceeds budget by factor of more than 100x")), "{unbounded:?}");
    assert!(unbounded.iter().any(|e| e.field == PATH
        && e.message.contains("x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of")), "{unbounded:?}");
}

#[test]
fn the_total_is_limited_even_when_each_rule_fits() {
    let rule = |i: usize| json!({"rule": format!("self.items.all(a, self.items.all(b, a + b != {i}))")});
    let rules: Vec<Value> = (0..40).map(rule).collect();
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-validations": rules,
        "properties": {"items": {"type": "array", "maxItems": 1000, "items": {"type": "integer"}}}}}});
    let costs = CostModel::of(&schema, PATH).static_costs();
    assert!(costs.iter().all(|c| c.cost <= STATIC_RULE_LIMIT), "{costs:?}");
    let errors = static_errors(&schema);
    assert!(errors.iter().any(|e| e.field == PATH && e.message.contains("cost total for entire OpenAPIv3 schema exceeds budget by factor of")), "{errors:?}");
    assert!(errors.iter().any(|e| e.message.contains("contributed to estimated rule cost total exceeding cost limit")), "{errors:?}");
    assert!(errors.len() <= 5, "at most four contributors are named: {errors:?}");
    let total = static_total(&CostModel::of(&schema, PATH));
    assert!(check_static(&CostModel::of(&schema, PATH), PATH, Some(total), &|_| true).is_empty(), "an update that does not grow the total");
}

#[test]
fn cost_messages_use_kubes_factor_wording() {
    assert!(exceeds("x", 12, 10).contains("by factor of 1.200000x"));
    assert!(exceeds("x", 25, 10).contains("by factor of 2.5x"));
    assert!(exceeds("x", 2000, 10).contains("by factor of more than 100x"));
}

fn items(n: usize) -> Value {
    json!({"spec": {"items": (0..n as i64).collect::<Vec<_>>()}})
}

/// The rules' estimate on an object of `n` items, and how many times the innermost body runs when every rule
/// holds (counted from the rule's structure: the interpreter does at least that much work).
fn estimate_and_iterations(rule: &str, n: usize) -> (u64, u64) {
    let schema = list_schema(json!({"type": "integer"}), Some(100), rule);
    let runtime = CostModel::of(&schema, PATH).runtime(&items(n), None);
    let n = n as u64;
    let depth = rule.matches(".all(").count() + rule.matches(".exists(").count() + rule.matches(" in ").count();
    let iterations = n.pow(depth as u32);
    (runtime.total, iterations)
}

#[test]
fn the_runtime_estimate_bounds_the_work_and_grows_with_it() {
    let rules = [
        "self.items.all(a, a >= 0)",
        "self.items.all(a, a in self.items)",
        "self.items.all(a, self.items.all(b, a + b >= 0))",
        THREE_ALL,
        "self.items.map(a, a * 2).all(a, a >= 0)",
    ];
    for rule in rules {
        let mut previous = 0;
        for n in [1, 5, 10, 20, 40] {
            let (estimate, iterations) = estimate_and_iterations(rule, n);
            assert!(estimate >= iterations, "{rule} on {n} items: {estimate} < {iterations}");
            assert!(estimate > previous, "{rule}: the estimate grows with the work ({n} items: {estimate})");
            previous = estimate;
        }
    }
    // The static estimate (maxItems 100) bounds every runtime estimate.
    let schema = list_schema(json!({"type": "integer"}), Some(100), THREE_ALL);
    let model = CostModel::of(&schema, PATH);
    let bound = model.static_costs()[0].cost;
    assert!(model.runtime(&items(100), None).total <= bound);
}

#[test]
fn objects_past_the_runtime_budget_are_refused_before_their_rules_run() {
    // Statically fine (maxItems 1000: a million pairs), but one call on 1000 items is past kube's per-call limit.
    let rule = "self.items.all(a, self.items.all(b, a + b != -1))";
    let schema = list_schema(json!({"type": "integer"}), Some(1000), rule);
    assert!(static_errors(&schema).is_empty());
    let structural = Structural::compile(&schema, PATH).unwrap_or_else(|e| panic!("{e:?}"));
    let errors = structural.validate(&items(1000), None);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].field, "spec");
    assert!(errors[0].message.starts_with("Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: "),
        "{errors:?}");
    assert!(structural.validate(&items(20), None).is_empty(), "a small object's rules run");
    // Many cheap calls past the budget: a rule on each of 20,000 items.
    let each = json!({"type": "object", "properties": {"items": {"type": "array", "maxItems": 20000, "items": {"type": "string", "maxLength": 5000,
        "x-kubernetes-validations": [{"rule": "self.contains('x') || self.startsWith('y') || self.endsWith('z')"}]}}}});
    let structural = Structural::compile(&each, PATH).unwrap_or_else(|e| panic!("{e:?}"));
    let big: Vec<String> = (0..20000).map(|_| "abcd".repeat(1000)).collect();
    let errors = structural.validate(&json!({"items": big}), None);
    assert!(errors.iter().any(|e| e.field == "items[0]"
        && e.message == "Invalid value: \"string\": validation failed due to running out of cost budget, no further validation rules will be run"), "{errors:?}");
}

#[test]
fn costly_rules_are_left_to_run_elsewhere() {
    let schema = list_schema(json!({"type": "integer"}), Some(100), "self.items.all(a, a > 0)");
    let structural = Structural::compile(&schema, PATH).unwrap_or_else(|e| panic!("{e:?}"));
    let object = json!({"spec": {"items": [1, 0]}});
    let (errors, pending) = structural.validate_inline(&object, None, 1);
    assert!(errors.is_empty() && pending, "{errors:?}");
    assert!(structural.rules_pending(&object, None, 1));
    assert_eq!(structural.validate_rules(&object, None).len(), 1);
    let (errors, pending) = structural.validate_inline(&object, None, 1_000);
    assert!(!pending && errors.len() == 1, "{errors:?}");
}


//! ClusterRole aggregation, as kube-controller-manager's clusterrole-aggregation controller computes it: a
//! ClusterRole with `aggregationRule.clusterRoleSelectors` holds the rules of every other ClusterRole whose labels
//! one of the selectors matches. This is how `admin`, `edit` and `view` pick up rules for new resources (a CRD's
//! author labels a ClusterRole `rbac.authorization.k8s.io/aggregate-to-view: "true"`).
//!
//! Pure: the server's controller feeds it a space's ClusterRoles and writes the result back into `rules`; the
//! authorizer only ever reads `rules`, exactly as kube's does.

use serde_json::{Map, Value};

use crate::rbac::PolicyRule;

/// The rules `role` should hold, or `None` if it has no `aggregationRule`. For each selector in order, the
/// matching ClusterRoles (never `role` itself) are taken by name and their rules appended in order, skipping a
/// rule equal to one already taken (compared as rules, so `"resourceNames": []` equals a missing list). The
/// result is stable, so writing it back only when it differs settles.
pub fn aggregated_rules(role: &Value, cluster_roles: &[Value]) -> Option<Vec<Value>> {
    let aggregation = role.get("aggregationRule").filter(|rule| !rule.is_null())?;
    let own_name = name_of(role);
    let selectors = aggregation.get("clusterRoleSelectors").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let mut taken: Vec<(Option<PolicyRule>, Value)> = Vec::new();
    for selector in selectors {
        let mut matching: Vec<&Value> = cluster_roles
            .iter()
            .filter(|candidate| name_of(candidate) != own_name && selector_matches(selector, labels_of(candidate)))
            .collect();
        matching.sort_by_key(|candidate| name_of(candidate));
        for rule in matching.iter().flat_map(|candidate| candidate.get("rules").and_then(Value::as_array).into_iter().flatten()) {
            let parsed = PolicyRule::from_json(rule);
            let duplicate = taken.iter().any(|(seen, seen_json)| match (seen, &parsed) {
                (Some(seen), Some(parsed)) => seen == parsed,
                _ => seen_json == rule,
            });
            if !duplicate {
                taken.push((parsed, rule.clone()));
            }
        }
    }
    Some(taken.into_iter().map(|(_, rule)| rule).collect())
}

fn name_of(object: &Value) -> &str {
    object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default()
}

fn labels_of(object: &Value) -> Option<&Map<String, Value>> {
    object.pointer("/metadata/labels").and_then(Value::as_object)
}

/// A `metav1.LabelSelector` applied to `labels`, as `LabelSelectorAsSelector` builds it: `{}` matches every
/// object, `null` none; `matchLabels` and every `matchExpressions` entry (In, NotIn, Exists, DoesNotExist) must
/// all hold. A selector kube would reject (unknown operator, In/NotIn without values, Exists/DoesNotExist with
/// values) matches nothing, so a typo can never widen a role.
pub fn selector_matches(selector: &Value, labels: Option<&Map<String, Value>>) -> bool {
    let Some(selector) = selector.as_object() else { return false };
    let label = |key: &str| labels.and_then(|labels| labels.get(key)).and_then(Value::as_str);
    let match_labels = match selector.get("matchLabels") {
        None | Some(Value::Null) => true,
        Some(Value::Object(wanted)) => wanted.iter().all(|(key, value)| value.as_str().is_some_and(|value| label(key) == Some(value))),
        Some(_) => false,
    };
    let expressions = match selector.get("matchExpressions") {
        None | Some(Value::Null) => true,
        Some(Value::Array(expressions)) => expressions.iter().all(|expression| expression_matches(expression, &label)),
        Some(_) => false,
    };
    match_labels && expressions
}

/// One `matchExpressions` entry: `{key, operator, values}`.
fn expression_matches<'a>(expression: &Value, label: &impl Fn(&str) -> Option<&'a str>) -> bool {
    let Some(key) = expression.get("key").and_then(Value::as_str) else { return false };
    let values: Option<Vec<&str>> = match expression.get("values") {
        None | Some(Value::Null) => Some(Vec::new()),
        Some(Value::Array(values)) => values.iter().map(Value::as_str).collect(),
        Some(_) => None,
    };
    let Some(values) = values else { return false };
    let value = label(key);
    match expression.get("operator").and_then(Value::as_str) {
        Some("In") if !values.is_empty() => value.is_some_and(|value| values.contains(&value)),
        Some("NotIn") if !values.is_empty() => value.is_none_or(|value| !values.contains(&value)),
        Some("Exists") if values.is_empty() => value.is_some(),
        Some("DoesNotExist") if values.is_empty() => value.is_none(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn labelled(name: &str, labels: Value, rules: Value) -> Value {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name, "labels": labels}, "rules": rules})
    }

    fn aggregating(name: &str, selectors: Value) -> Value {
        let mut role = labelled(name, json!({}), Value::Null);
        role["aggregationRule"] = json!({"clusterRoleSelectors": selectors});
        role
    }

    fn get(resource: &str) -> Value {
        json!({"verbs": ["get"], "apiGroups": [""], "resources": [resource]})
    }

    /// (selector, labels, matches): every operator, the empty and the malformed selector.
    #[test]
    fn selector_table() {
        let labels = json!({"tier": "web", "team": "a", "aggregate": "true"});
        let cases: Vec<(Value, bool)> = vec![
            (json!({}), true),
            (Value::Null, false),
            (json!({"matchLabels": {"tier": "web"}}), true),
            (json!({"matchLabels": {"tier": "web", "team": "b"}}), false),
            (json!({"matchLabels": {"missing": "x"}}), false),
            (json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["db", "web"]}]}), true),
            (json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["db"]}]}), false),
            (json!({"matchExpressions": [{"key": "missing", "operator": "In", "values": ["db"]}]}), false),
            (json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]}), true),
            (json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["web"]}]}), false),
            (json!({"matchExpressions": [{"key": "missing", "operator": "NotIn", "values": ["web"]}]}), true),
            (json!({"matchExpressions": [{"key": "team", "operator": "Exists"}]}), true),
            (json!({"matchExpressions": [{"key": "missing", "operator": "Exists"}]}), false),
            (json!({"matchExpressions": [{"key": "missing", "operator": "DoesNotExist"}]}), true),
            (json!({"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}), false),
            (json!({"matchLabels": {"tier": "web"}, "matchExpressions": [{"key": "team", "operator": "In", "values": ["b"]}]}), false),
            (json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": []}]}), false),
            (json!({"matchExpressions": [{"key": "missing", "operator": "NotIn", "values": []}]}), false),
            (json!({"matchExpressions": [{"key": "team", "operator": "Exists", "values": ["a"]}]}), false),
            (json!({"matchExpressions": [{"key": "team", "operator": "Matches", "values": ["a"]}]}), false),
            (json!({"matchExpressions": [{"operator": "Exists"}]}), false),
        ];
        for (selector, expected) in cases {
            assert_eq!(selector_matches(&selector, labels.as_object()), expected, "{selector}");
        }
        assert!(selector_matches(&json!({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}), None));
        assert!(!selector_matches(&json!({"matchLabels": {"x": "y"}}), None));
    }

    #[test]
    fn roles_without_an_aggregation_rule_are_not_aggregated() {
        assert_eq!(aggregated_rules(&labelled("plain", json!({}), json!([get("pods")])), &[]), None);
        let mut null_rule = labelled("plain", json!({}), json!([]));
        null_rule["aggregationRule"] = Value::Null;
        assert_eq!(aggregated_rules(&null_rule, &[]), None);
        assert_eq!(aggregated_rules(&aggregating("empty", json!([])), &[]), Some(vec![]));
    }

    #[test]
    fn matching_roles_are_taken_by_name_per_selector_without_duplicates() {
        let monitoring = aggregating("monitoring", json!([
            {"matchLabels": {"aggregate-to-monitoring": "true"}},
            {"matchExpressions": [{"key": "team", "operator": "In", "values": ["ops"]}]},
        ]));
        let roles = vec![
            labelled("zeta", json!({"aggregate-to-monitoring": "true"}), json!([get("pods"), get("nodes")])),
            labelled("alpha", json!({"aggregate-to-monitoring": "true"}), json!([get("nodes"), get("services")])),
            labelled("ops-extra", json!({"team": "ops"}), json!([get("events"), {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": []}])),
            labelled("unrelated", json!({"team": "dev"}), json!([get("secrets")])),
            monitoring.clone(),
        ];
        let rules = aggregated_rules(&monitoring, &roles).expect("aggregating");
        assert_eq!(rules, vec![get("nodes"), get("services"), get("pods"), get("events")],
            "alpha then zeta for the first selector, then ops-extra; repeats (even with an empty resourceNames) dropped");
        let mut reversed = roles.clone();
        reversed.reverse();
        assert_eq!(aggregated_rules(&monitoring, &reversed), Some(rules), "input order does not matter");
    }

    #[test]
    fn a_role_never_aggregates_itself() {
        let mut greedy = aggregating("greedy", json!([{}]));
        greedy["rules"] = json!([get("secrets")]);
        let roles = vec![greedy.clone(), labelled("other", json!({}), json!([get("pods")]))];
        assert_eq!(aggregated_rules(&greedy, &roles), Some(vec![get("pods")]));
    }
}

//! `flowcontrol.apiserver.k8s.io/v1` FlowSchema and PriorityLevelConfiguration: cluster-scoped, in the system
//! space only and for system users only (they share the whole server's seats out), with kube's defaults and
//! validation. What they configure is `crate::flowcontrol`, which follows their writes. A FlowSchema's `Dangling`
//! condition (kube's config controller writes it) is computed when it is read: whether its level exists now.

use std::sync::Arc;

use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::{json, Map, Value};

use super::{verbs, Context, Kind, Rules};
use crate::flowcontrol::config::{DEFAULT_HAND_SIZE, DEFAULT_PRECEDENCE, DEFAULT_QUEUES, DEFAULT_QUEUE_LENGTH_LIMIT, DEFAULT_SHARES};
use crate::flowcontrol::queueset::MAX_HAND;
use crate::flowcontrol::{FlowControl, FLOW_SCHEMA, GROUP, PRIORITY_LEVEL};
use crate::registry::strategy::{Part, Strategy, View};
use crate::registry::{ResourceInfo, Subresource};
use crate::status::Cause;

/// FlowSchema and PriorityLevelConfiguration: their rows and strategies (k8s-openapi has their definitions).
pub const KIND: Kind = Kind { rows, definitions: Map::new, rules };

fn row(kind: &str, plural: &str) -> ResourceInfo {
    ResourceInfo {
        group: GROUP.into(),
        version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_ascii_lowercase(),
        short_names: vec![],
        categories: vec![],
        namespaced: false,
        subresources: vec![Subresource::Status],
        verbs: verbs(&["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]),
        definition: Some(format!("io.k8s.api.flowcontrol.v1.{kind}")),
        system_only: true,
        custom: None,
    }
}

fn rows() -> Vec<ResourceInfo> {
    vec![row(FLOW_SCHEMA, "flowschemas"), row(PRIORITY_LEVEL, "prioritylevelconfigurations")]
}

fn rules(context: &Context, rules: &mut Rules) {
    rules.strategy(GROUP, FLOW_SCHEMA, Arc::new(FlowSchemaStrategy { flowcontrol: context.flowcontrol.clone() }));
    rules.strategy(GROUP, PRIORITY_LEVEL, Arc::new(PriorityLevelStrategy));
}

pub struct FlowSchemaStrategy {
    flowcontrol: Arc<FlowControl>,
}
pub struct PriorityLevelStrategy;

fn set_default(object: &mut Value, pointer: &str, key: &str, value: Value) {
    if let Some(parent) = object.pointer_mut(pointer).and_then(Value::as_object_mut) {
        parent.entry(key.to_owned()).or_insert(value);
    }
}

/// kube's `SetDefaults_FlowSchemaSpec`.
fn flow_schema_defaults(object: &mut Value) {
    if object.pointer("/spec/matchingPrecedence").and_then(Value::as_i64).unwrap_or(0) == 0 {
        set_default(object, "", "spec", json!({}));
        if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("matchingPrecedence".into(), json!(DEFAULT_PRECEDENCE));
        }
    }
}

/// kube's `SetDefaults_PriorityLevelConfiguration` (v1): shares, lendable percent and the queuing parameters.
fn priority_level_defaults(object: &mut Value) {
    set_default(object, "/spec/limited", "nominalConcurrencyShares", json!(DEFAULT_SHARES));
    set_default(object, "/spec/limited", "lendablePercent", json!(0));
    set_default(object, "/spec/exempt", "nominalConcurrencyShares", json!(0));
    set_default(object, "/spec/exempt", "lendablePercent", json!(0));
    let Some(queuing) = object.pointer_mut("/spec/limited/limitResponse/queuing").and_then(Value::as_object_mut) else { return };
    for (key, default) in [("queues", DEFAULT_QUEUES), ("handSize", DEFAULT_HAND_SIZE), ("queueLengthLimit", DEFAULT_QUEUE_LENGTH_LIMIT)] {
        if queuing.get(key).and_then(Value::as_i64).unwrap_or(0) == 0 {
            queuing.insert(key.into(), json!(default));
        }
    }
}

/// kube's `Dangling` condition: whether the schema's level is missing, since the schema was made (the time kube's
/// controller would have first written it).
fn dangling_condition(object: &Value, exists: bool) -> Value {
    let level = object.pointer("/spec/priorityLevelConfiguration/name").and_then(Value::as_str).unwrap_or_default();
    let since = object.pointer("/metadata/creationTimestamp").cloned().unwrap_or(Value::Null);
    let (status, reason, message) = match exists {
        true => ("False", "Found", format!("This FlowSchema references the PriorityLevelConfiguration object named {level:?} and it exists")),
        false => ("True", "NotFound", format!("This FlowSchema references the PriorityLevelConfiguration object named {level:?} but there is no such object")),
    };
    json!({"type": "Dangling", "status": status, "lastTransitionTime": since, "reason": reason, "message": message})
}

impl View for FlowSchemaStrategy {
    fn to_request(&self, _: &ResourceInfo, object: &mut Value) {
        let level = object.pointer("/spec/priorityLevelConfiguration/name").and_then(Value::as_str).unwrap_or_default();
        let condition = dangling_condition(object, self.flowcontrol.has_level(level));
        let Some(object) = object.as_object_mut() else { return };
        let status = object.entry("status").or_insert_with(|| json!({}));
        if let Some(status) = status.as_object_mut() {
            status.insert("conditions".into(), json!([condition]));
        }
    }
}

impl Strategy for FlowSchemaStrategy {
    fn view(&self) -> Option<&dyn View> {
        Some(self)
    }

    fn prepare_create(&self, _: &ResourceInfo, _: &SpaceName, _: Option<&Caller>, object: &mut Value) {
        flow_schema_defaults(object);
    }

    fn prepare_update(&self, _: &ResourceInfo, _: &SpaceName, _: &Value, new: &mut Value, _: Part) {
        flow_schema_defaults(new);
    }

    fn validate(&self, _: &ResourceInfo, object: &Value, _: Option<&Value>, causes: &mut Vec<Cause>) {
        validate_flow_schema(object, causes);
    }
}

impl Strategy for PriorityLevelStrategy {
    fn prepare_create(&self, _: &ResourceInfo, _: &SpaceName, _: Option<&Caller>, object: &mut Value) {
        priority_level_defaults(object);
    }

    fn prepare_update(&self, _: &ResourceInfo, _: &SpaceName, _: &Value, new: &mut Value, _: Part) {
        priority_level_defaults(new);
    }

    fn validate(&self, _: &ResourceInfo, object: &Value, _: Option<&Value>, causes: &mut Vec<Cause>) {
        validate_priority_level(object, causes);
    }
}

fn strings(value: Option<&Value>) -> Vec<&str> {
    value.and_then(Value::as_array).map(|items| items.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// kube's `field.Required` with its detail.
fn required(field: String, why: &str) -> Cause {
    Cause { reason: "FieldValueRequired", message: format!("Required value: {why}"), field }
}

/// A list that must not be empty, and holds `*` only alone (kube's `hasWildcard` rule).
fn check_list(items: &[&str], field: &str, causes: &mut Vec<Cause>) {
    if items.is_empty() {
        causes.push(Cause::required(field));
    } else if items.len() > 1 && items.contains(&"*") {
        causes.push(Cause::invalid(field, &format!("{items:?}"), "if '*' is present, must not specify other elements"));
    }
}

/// kube's `ValidateFlowSchema`, as far as the spec goes.
fn validate_flow_schema(object: &Value, causes: &mut Vec<Cause>) {
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let spec = object.get("spec").cloned().unwrap_or_default();
    let precedence = spec.get("matchingPrecedence").and_then(Value::as_i64).unwrap_or(0);
    if !(1..=10000).contains(&precedence) {
        causes.push(Cause::invalid("spec.matchingPrecedence", &precedence.to_string(), "must be between 1 and 10000 inclusively"));
    } else if name == "exempt" && precedence != 1 {
        causes.push(Cause::invalid("spec.matchingPrecedence", &precedence.to_string(), "the mandatory FlowSchema \"exempt\" must have matchingPrecedence 1"));
    } else if name == "catch-all" && precedence != 10000 {
        causes.push(Cause::invalid("spec.matchingPrecedence", &precedence.to_string(), "the mandatory FlowSchema \"catch-all\" must have matchingPrecedence 10000"));
    }
    if let Some(method) = spec.get("distinguisherMethod") {
        let kind = text(method, "type");
        if !matches!(kind, "ByUser" | "ByNamespace") {
            causes.push(Cause::not_supported("spec.distinguisherMethod.type", kind, &["ByNamespace", "ByUser"]));
        }
    }
    if spec.pointer("/priorityLevelConfiguration/name").and_then(Value::as_str).unwrap_or_default().is_empty() {
        causes.push(Cause::required("spec.priorityLevelConfiguration.name"));
    }
    let rules = spec.get("rules").and_then(Value::as_array).cloned().unwrap_or_default();
    for (i, rule) in rules.iter().enumerate() {
        validate_rule(rule, &format!("spec.rules[{i}]"), causes);
    }
}

fn validate_rule(rule: &Value, field: &str, causes: &mut Vec<Cause>) {
    let subjects = rule.get("subjects").and_then(Value::as_array).cloned().unwrap_or_default();
    if subjects.is_empty() {
        causes.push(Cause::required(format!("{field}.subjects")));
    }
    for (i, subject) in subjects.iter().enumerate() {
        validate_subject(subject, &format!("{field}.subjects[{i}]"), causes);
    }
    let resource_rules = rule.get("resourceRules").and_then(Value::as_array).cloned().unwrap_or_default();
    let non_resource_rules = rule.get("nonResourceRules").and_then(Value::as_array).cloned().unwrap_or_default();
    if resource_rules.is_empty() && non_resource_rules.is_empty() {
        causes.push(required(format!("{field}.resourceRules"), "at least one of resourceRules and nonResourceRules has to be non-empty"));
    }
    for (i, rule) in resource_rules.iter().enumerate() {
        let at = format!("{field}.resourceRules[{i}]");
        check_list(&strings(rule.get("verbs")), &format!("{at}.verbs"), causes);
        check_list(&strings(rule.get("apiGroups")), &format!("{at}.apiGroups"), causes);
        check_list(&strings(rule.get("resources")), &format!("{at}.resources"), causes);
        let namespaces = strings(rule.get("namespaces"));
        let cluster_scope = rule.get("clusterScope").and_then(Value::as_bool).unwrap_or(false);
        if namespaces.is_empty() && !cluster_scope {
            causes.push(required(format!("{at}.namespaces"), "resource rules that are not cluster scoped must supply at least one namespace"));
        } else if !namespaces.is_empty() {
            check_list(&namespaces, &format!("{at}.namespaces"), causes);
        }
    }
    for (i, rule) in non_resource_rules.iter().enumerate() {
        let at = format!("{field}.nonResourceRules[{i}]");
        check_list(&strings(rule.get("verbs")), &format!("{at}.verbs"), causes);
        let urls = strings(rule.get("nonResourceURLs"));
        check_list(&urls, &format!("{at}.nonResourceURLs"), causes);
        for (j, url) in urls.iter().enumerate() {
            if *url != "*" && !url.starts_with('/') {
                causes.push(Cause::invalid(format!("{at}.nonResourceURLs[{j}]"), url, "must start with slash"));
            }
        }
    }
}

fn validate_subject(subject: &Value, field: &str, causes: &mut Vec<Cause>) {
    let member = |key: &str, names: &[&str], causes: &mut Vec<Cause>| match subject.get(key) {
        None => causes.push(Cause::required(format!("{field}.{key}"))),
        Some(value) => {
            for name in names {
                if text(value, name).is_empty() {
                    causes.push(Cause::required(format!("{field}.{key}.{name}")));
                }
            }
        }
    };
    match text(subject, "kind") {
        "User" => member("user", &["name"], causes),
        "Group" => member("group", &["name"], causes),
        "ServiceAccount" => member("serviceAccount", &["namespace", "name"], causes),
        other => causes.push(Cause::not_supported(format!("{field}.kind"), other, &["Group", "ServiceAccount", "User"])),
    }
}

/// kube's `ValidatePriorityLevelConfiguration`: the type and its member, shares and percentages in range, the
/// limit response and its queuing parameters (shuffle sharding's entropy bound included), and the mandatory
/// levels' types.
fn validate_priority_level(object: &Value, causes: &mut Vec<Cause>) {
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let spec = object.get("spec").cloned().unwrap_or_default();
    let kind = text(&spec, "type");
    match kind {
        "Exempt" | "Limited" => {}
        other => return causes.push(Cause::not_supported("spec.type", other, &["Exempt", "Limited"])),
    }
    if (name == "exempt") != (kind == "Exempt") {
        causes.push(Cause::invalid("spec.type", kind, "must be 'Exempt' if and only if `name` is 'exempt'"));
    }
    let (member, other) = if kind == "Exempt" { ("exempt", "limited") } else { ("limited", "exempt") };
    if spec.get(other).is_some_and(|v| !v.is_null()) {
        causes.push(Cause::forbidden(format!("spec.{other}"), &format!("must be nil if the type is {kind}")));
    }
    let Some(body) = spec.get(member).filter(|v| !v.is_null()) else {
        if kind == "Limited" {
            causes.push(Cause::required("spec.limited"));
        }
        return;
    };
    let at = |key: &str| format!("spec.{member}.{key}");
    let non_negative = |key: &str, max: Option<i64>, causes: &mut Vec<Cause>| {
        let Some(value) = body.get(key).and_then(Value::as_i64) else { return };
        if value < 0 {
            causes.push(Cause::invalid(at(key), &value.to_string(), "must be a non-negative integer"));
        } else if max.is_some_and(|max| value > max) {
            causes.push(Cause::invalid(at(key), &value.to_string(), "must be between 0 and 100, inclusive"));
        }
    };
    non_negative("nominalConcurrencyShares", None, causes);
    non_negative("lendablePercent", Some(100), causes);
    non_negative("borrowingLimitPercent", None, causes);
    if kind == "Limited" {
        validate_limit_response(body.get("limitResponse"), causes);
    }
}

fn validate_limit_response(response: Option<&Value>, causes: &mut Vec<Cause>) {
    let field = "spec.limited.limitResponse";
    let Some(response) = response else { return causes.push(Cause::required(field)) };
    let queuing = response.get("queuing").filter(|v| !v.is_null());
    match (text(response, "type"), queuing) {
        ("Reject", None) => {}
        ("Reject", Some(_)) => causes.push(Cause::forbidden(format!("{field}.queuing"), "must be nil if limited.limitResponse.type is not Limited")),
        ("Queue", None) => causes.push(Cause::required(format!("{field}.queuing"))),
        ("Queue", Some(queuing)) => validate_queuing(queuing, &format!("{field}.queuing"), causes),
        (other, _) => causes.push(Cause::not_supported(format!("{field}.type"), other, &["Queue", "Reject"])),
    }
}

fn validate_queuing(queuing: &Value, field: &str, causes: &mut Vec<Cause>) {
    let get = |key: &str| queuing.get(key).and_then(Value::as_i64).unwrap_or(0);
    let (queues, hand_size, limit) = (get("queues"), get("handSize"), get("queueLengthLimit"));
    if limit <= 0 {
        causes.push(Cause::invalid(format!("{field}.queueLengthLimit"), &limit.to_string(), "must be positive"));
    }
    if queues <= 0 {
        causes.push(Cause::invalid(format!("{field}.queues"), &queues.to_string(), "must be positive"));
    }
    if hand_size <= 0 {
        causes.push(Cause::invalid(format!("{field}.handSize"), &hand_size.to_string(), "must be positive"));
    } else if queues > 0 && hand_size > queues {
        causes.push(Cause::invalid(format!("{field}.handSize"), &hand_size.to_string(),
            &format!("should not be greater than queues ({queues})")));
    } else if queues > 1 && (hand_size as f64) * (queues as f64).log2() > MAX_HAND as f64 {
        causes.push(Cause::invalid(format!("{field}.handSize"), &hand_size.to_string(),
            &format!("required entropy bits of deckSize {queues} and handSize {hand_size} should not be greater than {MAX_HAND}")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn causes_of(validate: fn(&Value, &mut Vec<Cause>), object: Value) -> Vec<String> {
        let mut causes = Vec::new();
        validate(&object, &mut causes);
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn the_bootstrap_objects_are_valid_and_keep_their_values_when_defaulted() {
        for mut level in crate::flowcontrol::bootstrap::priority_levels() {
            let before = level.clone();
            priority_level_defaults(&mut level);
            assert_eq!(level, before, "bootstrap levels carry every default");
            assert_eq!(causes_of(validate_priority_level, level), Vec::<String>::new());
        }
        for mut schema in crate::flowcontrol::bootstrap::flow_schemas() {
            let before = schema.clone();
            flow_schema_defaults(&mut schema);
            assert_eq!(schema, before);
            assert_eq!(causes_of(validate_flow_schema, schema), Vec::<String>::new());
        }
    }

    #[test]
    fn levels_are_defaulted_and_checked_as_kube_does() {
        let mut level = json!({"metadata": {"name": "tiny"}, "spec": {"type": "Limited", "limited": {
            "limitResponse": {"type": "Queue", "queuing": {"queues": 1}}}}});
        priority_level_defaults(&mut level);
        assert_eq!(level["spec"]["limited"]["nominalConcurrencyShares"], 30);
        assert_eq!(level["spec"]["limited"]["limitResponse"]["queuing"], json!({"queues": 1, "handSize": 8, "queueLengthLimit": 50}));
        assert_eq!(causes_of(validate_priority_level, level), ["spec.limited.limitResponse.queuing.handSize: Invalid value: \"8\": should not be greater than queues (1)"]);
        let entropy = json!({"metadata": {"name": "wide"}, "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 1024, "handSize": 7, "queueLengthLimit": 5}}}}});
        assert!(causes_of(validate_priority_level, entropy)[0].contains("required entropy bits of deckSize 1024 and handSize 7"));
        let wrong = json!({"metadata": {"name": "exempt"}, "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": -1,
            "lendablePercent": 101, "limitResponse": {"type": "Reject", "queuing": {"queues": 1}}}}});
        assert_eq!(causes_of(validate_priority_level, wrong), [
            "spec.type: Invalid value: \"Limited\": must be 'Exempt' if and only if `name` is 'exempt'",
            "spec.limited.nominalConcurrencyShares: Invalid value: \"-1\": must be a non-negative integer",
            "spec.limited.lendablePercent: Invalid value: \"101\": must be between 0 and 100, inclusive",
            "spec.limited.limitResponse.queuing: Forbidden: must be nil if limited.limitResponse.type is not Limited",
        ]);
        let untyped = json!({"metadata": {"name": "x"}, "spec": {"type": "Sometimes"}});
        assert_eq!(causes_of(validate_priority_level, untyped), ["spec.type: Unsupported value: \"Sometimes\": supported values: \"Exempt\", \"Limited\""]);
    }

    #[test]
    fn schemas_are_defaulted_and_checked_as_kube_does() {
        let mut schema = json!({"metadata": {"name": "s"}, "spec": {"priorityLevelConfiguration": {"name": "p"},
            "distinguisherMethod": {"type": "ByTenant"},
            "rules": [{"subjects": [{"kind": "User"}, {"kind": "Robot"}], "resourceRules": [{"verbs": ["get", "*"], "apiGroups": [""], "resources": ["pods"]}],
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["healthz"]}]}]}});
        flow_schema_defaults(&mut schema);
        assert_eq!(schema["spec"]["matchingPrecedence"], 1000);
        assert_eq!(causes_of(validate_flow_schema, schema), [
            "spec.distinguisherMethod.type: Unsupported value: \"ByTenant\": supported values: \"ByNamespace\", \"ByUser\"",
            "spec.rules[0].subjects[0].user: Required value",
            "spec.rules[0].subjects[1].kind: Unsupported value: \"Robot\": supported values: \"Group\", \"ServiceAccount\", \"User\"",
            "spec.rules[0].resourceRules[0].verbs: Invalid value: \"[\\\"get\\\", \\\"*\\\"]\": if '*' is present, must not specify other elements",
            "spec.rules[0].resourceRules[0].namespaces: Required value: resource rules that are not cluster scoped must supply at least one namespace",
            "spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: \"healthz\": must start with slash",
        ]);
        let far = json!({"metadata": {"name": "catch-all"}, "spec": {"matchingPrecedence": 20000, "priorityLevelConfiguration": {"name": ""}}});
        assert_eq!(causes_of(validate_flow_schema, far), [
            "spec.matchingPrecedence: Invalid value: \"20000\": must be between 1 and 10000 inclusively",
            "spec.priorityLevelConfiguration.name: Required value",
        ]);
    }
}

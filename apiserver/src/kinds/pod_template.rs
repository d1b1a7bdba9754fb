//! What pods and the workloads that template them share: small defaulting helpers (the pod spec's own defaults
//! are `defaults::pod_spec`'s) and kube-apiserver's checks of it that clients run into most (containers with
//! unique DNS-label names and images, ports in range), and a template's labels matched by its selector.

use serde_json::{json, Map, Value};

use crate::registry::validate::{is_dns_label, LABEL_MSG};
use crate::status::Cause;

/// Sets `field` unless the object has it.
pub(crate) fn set_default(object: &mut Map<String, Value>, field: &str, value: Value) {
    object.entry(field.to_owned()).or_insert(value);
}

/// Sets each of `fields` of `object.status` that is missing to 0, as Go writes a status count without `omitempty`.
pub(crate) fn zero_status(object: &mut Value, fields: &[&str]) {
    let zeros: Vec<(&str, Value)> = fields.iter().map(|field| (*field, json!(0))).collect();
    default_status(object, &zeros);
}

/// Sets each `(field, value)` of `object.status` that is missing, as Go writes a status field without `omitempty`
/// (a status that is not an object is left to validation).
pub(crate) fn default_status(object: &mut Value, defaults: &[(&str, Value)]) {
    if defaults.is_empty() {
        return;
    }
    let Some(map) = object.as_object_mut() else { return };
    let status = map.entry("status").or_insert_with(|| json!({}));
    if status.is_null() {
        *status = json!({});
    }
    if let Some(status) = status.as_object_mut() {
        for (field, value) in defaults {
            set_default(status, field, value.clone());
        }
    }
}

/// kube's `Invalid value` cause, showing the value as Go prints it.
pub(crate) fn invalid_value(field: String, value: &Value, why: &str) -> Cause {
    let shown = match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    Cause { reason: "FieldValueInvalid", message: format!("Invalid value: {shown}: {why}"), field }
}

/// `spec.selector` must select the template's labels (apps/v1: `matchLabels`/`matchExpressions`;
/// ReplicationController: a plain map).
pub(crate) fn check_selector_matches(group: &str, spec: &Value, causes: &mut Vec<Cause>) {
    let labels = spec.pointer("/template/metadata/labels").and_then(Value::as_object);
    let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
    let (match_labels, expressions) = if group == "apps" {
        let Some(selector) = spec.get("selector") else { return };
        let match_labels = selector.get("matchLabels").and_then(Value::as_object);
        let expressions = selector.get("matchExpressions").and_then(Value::as_array);
        if match_labels.is_none_or(|m| m.is_empty()) && expressions.is_none_or(|e| e.is_empty()) {
            causes.push(Cause {
                reason: "FieldValueInvalid",
                message: "Invalid value: {}: empty selector is invalid for deployment".into(),
                field: "spec.selector".into(),
            });
            return;
        }
        (match_labels, expressions)
    } else {
        (spec.get("selector").and_then(Value::as_object), None)
    };
    let labels_match = match_labels.is_none_or(|m| m.iter().all(|(k, v)| label(k) == v.as_str()));
    let expressions_match = expressions.is_none_or(|exprs| {
        exprs.iter().all(|e| {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let values: Vec<&str> =
                e.get("values").and_then(Value::as_array).map(|v| v.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
            match e.get("operator").and_then(Value::as_str) {
                Some("In") => label(key).is_some_and(|l| values.contains(&l)),
                Some("NotIn") => label(key).is_none_or(|l| !values.contains(&l)),
                Some("Exists") => label(key).is_some(),
                Some("DoesNotExist") => label(key).is_none(),
                _ => false,
            }
        })
    });
    if !(labels_match && expressions_match) {
        let shown = spec.pointer("/template/metadata/labels").cloned().unwrap_or(Value::Null);
        causes.push(Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {shown}: `selector` does not match template `labels`"),
            field: "spec.template.metadata.labels".into(),
        });
    }
}

/// Containers: at least one, each with a DNS-label name (unique) and an image; ports in range.
pub(crate) fn check_pod_spec(path: &str, spec: &Value, causes: &mut Vec<Cause>) {
    let containers = spec.get("containers").and_then(Value::as_array);
    if containers.is_none_or(|c| c.is_empty()) {
        causes.push(Cause::required(format!("{path}.containers")));
    }
    let mut seen: Vec<&str> = Vec::new();
    for list in ["initContainers", "containers"] {
        for (index, container) in spec.get(list).and_then(Value::as_array).into_iter().flatten().enumerate() {
            let at = format!("{path}.{list}[{index}]");
            match container.get("name").and_then(Value::as_str) {
                None | Some("") => causes.push(Cause::required(format!("{at}.name"))),
                Some(name) if !is_dns_label(name) => causes.push(Cause::invalid(format!("{at}.name"), name, LABEL_MSG)),
                Some(name) if seen.contains(&name) => causes.push(Cause {
                    reason: "FieldValueDuplicate",
                    message: format!("Duplicate value: {name:?}"),
                    field: format!("{at}.name"),
                }),
                Some(name) => seen.push(name),
            }
            if container.get("image").and_then(Value::as_str).is_none_or(str::is_empty) {
                causes.push(Cause::required(format!("{at}.image")));
            }
            for (p, port) in container.get("ports").and_then(Value::as_array).into_iter().flatten().enumerate() {
                let out_of_range = |n: &Value| n.as_i64().is_none_or(|n| !(1..=65535).contains(&n));
                if let Some(number) = port.get("containerPort").filter(|n| out_of_range(n)) {
                    causes.push(invalid_value(format!("{at}.ports[{p}].containerPort"), number, "must be between 1 and 65535, inclusive"));
                }
            }
        }
    }
}


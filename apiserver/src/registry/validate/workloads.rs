//! kube-apiserver's semantic checks of workloads and pod specs that clients run into most: replica counts,
//! selectors that match their template, containers with names and images.

use serde_json::Value;

use super::{is_dns_label, LABEL_MSG};
use crate::status::Cause;

fn invalid_value(field: String, value: &Value, why: &str) -> Cause {
    let shown = match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    Cause { reason: "FieldValueInvalid", message: format!("Invalid value: {shown}: {why}"), field }
}

/// Checks the spec of `group`/`kind`, adding every problem to `causes`.
pub fn check(group: &str, kind: &str, object: &Value, causes: &mut Vec<Cause>) {
    let spec = object.get("spec");
    match (group, kind) {
        ("", "Pod") => {
            if let Some(spec) = spec {
                check_pod_spec("spec", spec, causes);
            }
        }
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet") | ("", "ReplicationController") => {
            let Some(spec) = spec else { return };
            if let Some(replicas) = spec.get("replicas") {
                if replicas.as_i64().is_some_and(|r| r < 0) {
                    causes.push(invalid_value("spec.replicas".into(), replicas, "must be greater than or equal to 0"));
                }
            }
            check_selector_matches(group, spec, causes);
            if let Some(template_spec) = spec.pointer("/template/spec") {
                check_pod_spec("spec.template.spec", template_spec, causes);
            }
        }
        ("batch", "Job") => {
            if let Some(template_spec) = spec.and_then(|s| s.pointer("/template/spec")) {
                check_pod_spec("spec.template.spec", template_spec, causes);
            }
        }
        ("batch", "CronJob") => {
            if let Some(template_spec) = spec.and_then(|s| s.pointer("/jobTemplate/spec/template/spec")) {
                check_pod_spec("spec.jobTemplate.spec.template.spec", template_spec, causes);
            }
        }
        _ => {}
    }
}

/// `spec.selector` must select the template's labels (apps/v1: `matchLabels`/`matchExpressions`;
/// ReplicationController: a plain map).
fn check_selector_matches(group: &str, spec: &Value, causes: &mut Vec<Cause>) {
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
fn check_pod_spec(path: &str, spec: &Value, causes: &mut Vec<Cause>) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(group: &str, kind: &str, object: Value) -> Vec<String> {
        let mut causes = Vec::new();
        check(group, kind, &object, &mut causes);
        causes.into_iter().map(|c| c.field).collect()
    }

    #[test]
    fn broken_deployment_reports_every_cause() {
        let broken = json!({"spec": {"replicas": -1, "selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "b"}}, "spec": {"containers": [
                {"name": "Bad_C", "image": ""}, {"name": "ok", "image": "x", "ports": [{"containerPort": 0}]}]}}}});
        assert_eq!(fields("apps", "Deployment", broken), [
            "spec.replicas",
            "spec.template.metadata.labels",
            "spec.template.spec.containers[0].name",
            "spec.template.spec.containers[0].image",
            "spec.template.spec.containers[1].ports[0].containerPort",
        ]);
        let fine = json!({"spec": {"selector": {"matchLabels": {"app": "a"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]},
            "template": {"metadata": {"labels": {"app": "a", "tier": "x"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
        assert!(fields("apps", "Deployment", fine).is_empty());
        assert_eq!(fields("", "Pod", json!({"spec": {"containers": []}})), ["spec.containers"]);
        let duplicate = json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]}});
        assert_eq!(fields("", "Pod", duplicate), ["spec.containers[1].name"]);
    }
}

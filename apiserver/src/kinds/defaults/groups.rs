//! The defaults of the kinds without rules of their own outside storage: core's PodTemplates and Endpoints,
//! PriorityClasses, NetworkPolicies, IngressClasses, EndpointSlices, RBAC bindings and webhook configurations.

use serde_json::{json, Map, Value};

use super::pod_spec::{default_pod_spec, object_mut, objects_mut};
use super::Write;
use crate::kinds::pod_template::set_default;

/// The object's `spec`, if it has one.
pub(crate) fn spec_mut(object: &mut Value) -> Option<&mut Map<String, Value>> {
    object.get_mut("spec").and_then(Value::as_object_mut)
}

/// A PodTemplate's pod spec (`template.spec`; a PodTemplate has no `spec` of its own).
pub(crate) fn pod_template(object: &mut Value, _: Write) {
    if let Some(spec) = object.pointer_mut("/template/spec") {
        default_pod_spec(spec);
    }
}

/// Endpoints: each subset's ports are TCP unless they say otherwise.
pub(crate) fn endpoints(object: &mut Value, _: Write) {
    let Some(object) = object.as_object_mut() else { return };
    for port in objects_mut(object, "subsets").flat_map(|subset| objects_mut(subset, "ports")) {
        set_default(port, "protocol", json!("TCP"));
    }
}

/// PriorityClass: `preemptionPolicy` PreemptLowerPriority.
pub(crate) fn priority_class(object: &mut Value, _: Write) {
    if let Some(object) = object.as_object_mut() {
        set_default(object, "preemptionPolicy", json!("PreemptLowerPriority"));
    }
}

/// NetworkPolicy: its ports are TCP unless they say otherwise; without `policyTypes` it is an Ingress policy, and
/// an Egress one too when it has egress rules.
pub(crate) fn network_policy(object: &mut Value, _: Write) {
    let Some(spec) = spec_mut(object) else { return };
    for direction in ["ingress", "egress"] {
        for port in objects_mut(spec, direction).flat_map(|rule| objects_mut(rule, "ports")) {
            set_default(port, "protocol", json!("TCP"));
        }
    }
    if spec.get("policyTypes").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        let egress = spec.get("egress").and_then(Value::as_array).is_some_and(|rules| !rules.is_empty());
        let types = if egress { json!(["Ingress", "Egress"]) } else { json!(["Ingress"]) };
        spec.insert("policyTypes".into(), types);
    }
}

/// IngressClass: parameters without a scope are the cluster's.
pub(crate) fn ingress_class(object: &mut Value, _: Write) {
    if let Some(parameters) = spec_mut(object).and_then(|spec| object_mut(spec, "parameters")) {
        set_default(parameters, "scope", json!("Cluster"));
    }
}

/// EndpointSlice: each port's name is `""` and its protocol TCP unless given.
pub(crate) fn endpoint_slice(object: &mut Value, _: Write) {
    let Some(object) = object.as_object_mut() else { return };
    for port in objects_mut(object, "ports") {
        set_default(port, "name", json!(""));
        set_default(port, "protocol", json!("TCP"));
    }
}

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// RoleBinding and ClusterRoleBinding: the role's group is RBAC's; a User's or Group's subject group too.
pub(crate) fn role_binding(object: &mut Value, _: Write) {
    let Some(object) = object.as_object_mut() else { return };
    if let Some(role) = object_mut(object, "roleRef") {
        fill_empty(role, "apiGroup", RBAC_GROUP);
    }
    for subject in objects_mut(object, "subjects") {
        if matches!(subject.get("kind").and_then(Value::as_str), Some("User" | "Group")) {
            fill_empty(subject, "apiGroup", RBAC_GROUP);
        }
    }
}

/// Sets `field` to `value` when it is missing or empty (Go's `len(x) == 0`).
fn fill_empty(map: &mut Map<String, Value>, field: &str, value: &str) {
    if map.get(field).and_then(Value::as_str).is_none_or(str::is_empty) {
        map.insert(field.into(), json!(value));
    }
}

/// MutatingWebhookConfiguration: each webhook's validating defaults, and `reinvocationPolicy` Never.
pub(crate) fn mutating_webhooks(object: &mut Value, _: Write) {
    webhooks(object, true);
}

/// ValidatingWebhookConfiguration: each webhook's failure and match policies, selectors, timeout, rules' scope and
/// service port.
pub(crate) fn validating_webhooks(object: &mut Value, _: Write) {
    webhooks(object, false);
}

/// ValidatingAdmissionPolicy: `failurePolicy` Fail, and its `matchConstraints`' defaults.
pub(crate) fn admission_policy(object: &mut Value, _: Write) {
    let Some(spec) = object.as_object_mut().and_then(|object| object_mut(object, "spec")) else { return };
    set_default(spec, "failurePolicy", json!("Fail"));
    if let Some(matches) = object_mut(spec, "matchConstraints") {
        match_resources(matches);
    }
}

/// MutatingAdmissionPolicy: a validating policy's defaults, and `reinvocationPolicy` Never.
pub(crate) fn mutating_admission_policy(object: &mut Value, write: Write) {
    admission_policy(object, write);
    let Some(spec) = object.as_object_mut().and_then(|object| object_mut(object, "spec")) else { return };
    set_default(spec, "reinvocationPolicy", json!("Never"));
}

/// ValidatingAdmissionPolicyBinding and MutatingAdmissionPolicyBinding: their `matchResources`' defaults.
pub(crate) fn admission_policy_binding(object: &mut Value, _: Write) {
    let Some(spec) = object.as_object_mut().and_then(|object| object_mut(object, "spec")) else { return };
    if let Some(matches) = object_mut(spec, "matchResources") {
        match_resources(matches);
    }
}

/// kube's `SetDefaults_MatchResources`, and the rules' scope.
fn match_resources(matches: &mut Map<String, Value>) {
    set_default(matches, "matchPolicy", json!("Equivalent"));
    set_default(matches, "namespaceSelector", json!({}));
    set_default(matches, "objectSelector", json!({}));
    for list in ["resourceRules", "excludeResourceRules"] {
        for rule in objects_mut(matches, list) {
            set_default(rule, "scope", json!("*"));
        }
    }
}

fn webhooks(object: &mut Value, mutating: bool) {
    let Some(object) = object.as_object_mut() else { return };
    for webhook in objects_mut(object, "webhooks") {
        set_default(webhook, "failurePolicy", json!("Fail"));
        set_default(webhook, "matchPolicy", json!("Equivalent"));
        set_default(webhook, "namespaceSelector", json!({}));
        set_default(webhook, "objectSelector", json!({}));
        set_default(webhook, "timeoutSeconds", json!(10));
        if mutating {
            set_default(webhook, "reinvocationPolicy", json!("Never"));
        }
        for rule in objects_mut(webhook, "rules") {
            set_default(rule, "scope", json!("*"));
        }
        if let Some(service) = object_mut(webhook, "clientConfig").and_then(|config| object_mut(config, "service")) {
            set_default(service, "port", json!(443));
        }
    }
}

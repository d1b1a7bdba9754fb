//! Pod: kube's pod spec defaults and checks, the status a new pod has (`Pending`, its QoS class), and graceful
//! deletion (a pod bound to a node is deleted with a grace period; `registry::deletion` holds the rules).

use std::sync::Arc;

use std::collections::BTreeMap;

use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::{json, Value};

use super::defaults::pod_spec::{default_pod_only, default_pod_spec};
use super::pod_template::check_pod_spec;
use super::{Context, Kind, Rules};
use crate::registry::strategy::{Part, Strategy};
use crate::quota::resource_quota::milli;
use crate::registry::ResourceInfo;
use crate::status::Cause;

/// Pod: its strategy.
pub const KIND: Kind = Kind::rules(|_: &Context, rules: &mut Rules| rules.strategy("", "Pod", Arc::new(PodStrategy)));

pub struct PodStrategy;

impl Strategy for PodStrategy {
    /// kube's `PrepareForCreate`: the spec defaulted, the status `Pending` with the pod's QoS class.
    fn prepare_create(&self, _resource: &ResourceInfo, _space: &SpaceName, _caller: Option<&Caller>, object: &mut Value) {
        if let Some(spec) = object.get_mut("spec") {
            default_pod_spec(spec);
            default_pod_only(spec);
            default_requests(spec);
        }
        let qos = qos_class(object.get("spec").unwrap_or(&Value::Null));
        if let Some(map) = object.as_object_mut() {
            map.insert("status".into(), json!({"phase": "Pending", "qosClass": qos}));
        }
    }

    fn prepare_update(&self, _resource: &ResourceInfo, _space: &SpaceName, _old: &Value, new: &mut Value, _part: Part) {
        if let Some(spec) = new.get_mut("spec") {
            default_pod_spec(spec);
            default_pod_only(spec);
            default_requests(spec);
        }
    }

    fn validate(&self, _resource: &ResourceInfo, object: &Value, _old: Option<&Value>, causes: &mut Vec<Cause>) {
        if let Some(spec) = object.get("spec") {
            check_pod_spec("spec", spec, causes);
        }
    }

    fn graceful_delete(&self) -> bool {
        true
    }
}

/// kube's `SetDefaults_Pod`: a container's limit without a request makes the request (a Pod's, not a template's).
fn default_requests(spec: &mut Value) {
    for list in ["containers", "initContainers"] {
        let containers = spec.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten();
        for resources in containers.filter_map(|c| c.get_mut("resources")).filter_map(Value::as_object_mut) {
            let limits = resources.get("limits").and_then(Value::as_object).cloned().unwrap_or_default();
            if limits.is_empty() {
                continue;
            }
            let requests = resources.entry("requests").or_insert_with(|| json!({}));
            if let Some(requests) = requests.as_object_mut() {
                for (name, limit) in limits {
                    requests.entry(name).or_insert(limit);
                }
            }
        }
    }
}

/// kube's `GetPodQOS` over the containers and init containers: `BestEffort` without any CPU or memory request or
/// limit; `Guaranteed` when every container limits both and requests (when given) equal the limits; else
/// `Burstable`.
pub fn qos_class(spec: &Value) -> &'static str {
    const COMPUTE: [&str; 2] = ["cpu", "memory"];
    let mut requests: BTreeMap<&str, i128> = BTreeMap::new();
    let mut limits: BTreeMap<&str, i128> = BTreeMap::new();
    let mut guaranteed = true;
    let containers = ["containers", "initContainers"].into_iter().flat_map(|list| spec.get(list).and_then(Value::as_array).into_iter().flatten());
    for container in containers {
        let amounts = |kind: &str| -> Vec<(&'static str, i128)> {
            COMPUTE.iter().filter_map(|name| {
                let text = container.pointer(&format!("/resources/{kind}/{name}"))?;
                let milli = text.as_str().and_then(milli).or_else(|| text.as_i64().map(|n| i128::from(n) * 1000))?;
                (milli != 0).then_some((*name, milli))
            }).collect()
        };
        for (name, amount) in amounts("requests") {
            *requests.entry(name).or_default() += amount;
        }
        let limited = amounts("limits");
        if !COMPUTE.iter().all(|name| limited.iter().any(|(n, _)| n == name)) {
            guaranteed = false;
        }
        for (name, amount) in limited {
            *limits.entry(name).or_default() += amount;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed && requests.iter().all(|(name, amount)| limits.get(name) == Some(amount)) && requests.len() == limits.len() {
        return "Guaranteed";
    }
    "Burstable"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::builtin::builtin_resources;

    #[test]
    fn pod_specs_need_unique_named_containers() {
        let pods = builtin_resources().into_iter().find(|r| r.is("", "Pod")).unwrap_or_else(|| panic!("no Pod row"));
        let fields = |object: Value| {
            let mut causes = Vec::new();
            PodStrategy.validate(&pods, &object, None, &mut causes);
            causes.into_iter().map(|c| c.field).collect::<Vec<_>>()
        };
        assert_eq!(fields(json!({"spec": {"containers": []}})), ["spec.containers"]);
        let duplicate = json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]}});
        assert_eq!(fields(duplicate), ["spec.containers[1].name"]);
    }

    #[test]
    fn qos_classes_are_computed_as_kube_computes_them() {
        let pod = |containers: Value| {
            let mut spec = json!({"containers": containers});
            default_requests(&mut spec);
            qos_class(&spec)
        };
        assert_eq!(pod(json!([{"name": "a"}])), "BestEffort");
        assert_eq!(pod(json!([{"name": "a", "resources": {"requests": {"cpu": "0"}}}])), "BestEffort", "a zero request counts as none");
        assert_eq!(pod(json!([{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}])), "Guaranteed", "requests default to limits");
        assert_eq!(pod(json!([{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1000m", "memory": "1Gi"}}}])),
            "Guaranteed", "equal amounts in other units");
        assert_eq!(pod(json!([{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}}])), "Burstable");
        assert_eq!(pod(json!([{"name": "a", "resources": {"limits": {"cpu": "1"}}}])), "Burstable", "no memory limit");
        assert_eq!(pod(json!([{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}, {"name": "b"}])), "Burstable",
            "one container without limits");
        assert_eq!(pod(json!([{"name": "a", "resources": {"requests": {"memory": "1Gi"}}}])), "Burstable");
    }
}

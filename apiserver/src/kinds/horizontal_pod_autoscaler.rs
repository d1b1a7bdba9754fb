//! HorizontalPodAutoscaler, served as kube 1.32 serves it: `autoscaling/v2` (the stored form, the preferred version)
//! and `autoscaling/v1`, two views of one stored object. v1's `targetCPUUtilizationPercentage` is v2's CPU
//! utilization metric; what v1 cannot say (other metrics, `behavior`, conditions) is kept in kube's
//! `autoscaling.alpha.kubernetes.io/*` annotations, so a v1 read-modify-write loses nothing. kube's defaults
//! (`minReplicas: 1`, a CPU target of 80% when no metric is given) and the status counts kube always writes.

use std::sync::Arc;

use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::{json, Map, Value};

use super::pod_template::{set_default, zero_status};
use super::{verbs, Context, Kind, Rules};
use crate::registry::strategy::{Part, Strategy, View};
use crate::registry::{ResourceInfo, Subresource};

/// HorizontalPodAutoscaler: its `autoscaling/v1` row (the `v2` row is Kubernetes' built-in one) and its strategy.
pub const KIND: Kind = Kind { rows, definitions: Map::new, rules };

const GROUP: &str = "autoscaling";
const KIND_NAME: &str = "HorizontalPodAutoscaler";
/// What v1 cannot say, as kube keeps it.
const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
/// kube's CPU target when an HPA names no metric.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

fn rows() -> Vec<ResourceInfo> {
    vec![ResourceInfo {
        group: GROUP.into(),
        version: "v1".into(),
        kind: KIND_NAME.into(),
        plural: "horizontalpodautoscalers".into(),
        singular: "horizontalpodautoscaler".into(),
        short_names: vec!["hpa".into()],
        categories: vec!["all".into()],
        namespaced: true,
        subresources: vec![Subresource::Status],
        verbs: verbs(&["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]),
        definition: Some("io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler".into()),
        system_only: false,
        custom: None,
    }]
}

fn rules(_context: &Context, rules: &mut Rules) {
    rules.strategy(GROUP, KIND_NAME, Arc::new(HpaStrategy));
}

pub struct HpaStrategy;

fn is_v1(resource: &ResourceInfo) -> bool {
    resource.version == "v1"
}

/// kube's `autoscaling/v2` defaults and status counts.
fn defaults(object: &mut Value) {
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        set_default(spec, "minReplicas", json!(1));
        if spec.get("metrics").and_then(Value::as_array).is_none_or(Vec::is_empty) {
            spec.insert("metrics".into(), json!([cpu_metric(DEFAULT_CPU_UTILIZATION)]));
        }
    }
    if let Some(behavior) = object.pointer_mut("/spec/behavior").and_then(Value::as_object_mut) {
        let scale_up = json!([{"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]);
        let scale_down = json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]);
        default_scaling_rules(behavior, "scaleUp", 0, scale_up);
        default_scaling_rules(behavior, "scaleDown", 300, scale_down);
    }
    zero_status(object, &["desiredReplicas"]);
}

/// kube's `GenerateHPAScaleUpRules`/`ScaleDownRules`: a behavior's rules in one direction get the stabilization
/// window, `Max` selection and policies kube uses when they are not given.
fn default_scaling_rules(behavior: &mut serde_json::Map<String, Value>, direction: &str, window: i64, policies: Value) {
    let rules = behavior.entry(direction).or_insert_with(|| json!({}));
    if rules.is_null() {
        *rules = json!({});
    }
    let Some(rules) = rules.as_object_mut() else { return };
    for (field, value) in [("stabilizationWindowSeconds", json!(window)), ("selectPolicy", json!("Max")), ("policies", policies)] {
        if rules.get(field).is_none_or(Value::is_null) {
            rules.insert(field.into(), value);
        }
    }
}

fn cpu_metric(utilization: i64) -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": utilization}}})
}

/// The CPU utilization a v2 metric targets, if it is v1's kind of metric.
fn cpu_utilization(metric: &Value) -> Option<i64> {
    let resource = metric.get("resource").filter(|_| metric.get("type").and_then(Value::as_str) == Some("Resource"))?;
    (resource.get("name").and_then(Value::as_str) == Some("cpu")
        && resource.pointer("/target/type").and_then(Value::as_str) == Some("Utilization"))
        .then(|| resource.pointer("/target/averageUtilization").and_then(Value::as_i64)).flatten()
}

fn annotations(object: &mut Value) -> Option<&mut Map<String, Value>> {
    let metadata = object.get_mut("metadata")?.as_object_mut()?;
    let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations.as_object_mut()
}

fn tidy_annotations(object: &mut Value) {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        if metadata.get("annotations").and_then(Value::as_object).is_some_and(Map::is_empty) {
            metadata.remove("annotations");
        }
    }
}

/// A stored (`v2`) HPA as `autoscaling/v1` shows it.
fn to_v1(object: &mut Value) {
    object["apiVersion"] = json!("autoscaling/v1");
    let spec = object.get_mut("spec").and_then(Value::as_object_mut).map(std::mem::take).unwrap_or_default();
    let status = object.get_mut("status").and_then(Value::as_object_mut).map(std::mem::take).unwrap_or_default();
    let metrics: Vec<Value> = spec.get("metrics").and_then(Value::as_array).cloned().unwrap_or_default();
    let cpu = metrics.iter().find_map(cpu_utilization);
    let others: Vec<&Value> = metrics.iter().filter(|m| cpu_utilization(m).is_none()).collect();
    let mut v1 = Map::new();
    for field in ["scaleTargetRef", "minReplicas", "maxReplicas"] {
        if let Some(value) = spec.get(field) {
            v1.insert(field.into(), value.clone());
        }
    }
    if let Some(cpu) = cpu {
        v1.insert("targetCPUUtilizationPercentage".into(), json!(cpu));
    }
    let mut v1_status = Map::new();
    for field in ["observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas"] {
        if let Some(value) = status.get(field) {
            v1_status.insert(field.into(), value.clone());
        }
    }
    v1_status.entry("currentReplicas").or_insert(json!(0));
    v1_status.entry("desiredReplicas").or_insert(json!(0));
    let current: Vec<Value> = status.get("currentMetrics").and_then(Value::as_array).cloned().unwrap_or_default();
    if let Some(cpu) = current.iter().find_map(|m| m.pointer("/resource/current/averageUtilization").filter(|_| m.pointer("/resource/name") == Some(&json!("cpu")))) {
        v1_status.insert("currentCPUUtilizationPercentage".into(), cpu.clone());
    }
    object["spec"] = Value::Object(v1);
    object["status"] = Value::Object(v1_status);
    if let Some(annotations) = annotations(object) {
        let mut keep = |key: &str, value: Option<Value>| match value.filter(|v| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty())) {
            Some(value) => drop(annotations.insert(key.into(), json!(value.to_string()))),
            None => drop(annotations.remove(key)),
        };
        keep(METRICS, (!others.is_empty()).then(|| json!(others)));
        keep(BEHAVIOR, spec.get("behavior").cloned());
        keep(CONDITIONS, status.get("conditions").cloned());
        keep(CURRENT_METRICS, (!current.is_empty()).then(|| json!(current)));
    }
    tidy_annotations(object);
}

/// An `autoscaling/v1` HPA in its stored (`v2`) form.
fn to_v2(object: &mut Value) {
    object["apiVersion"] = json!("autoscaling/v2");
    let taken = |object: &mut Value, key: &str| -> Option<Value> {
        let text = annotations(object)?.remove(key)?;
        serde_json::from_str(text.as_str()?).ok()
    };
    let others = taken(object, METRICS);
    let behavior = taken(object, BEHAVIOR);
    let conditions = taken(object, CONDITIONS);
    let current = taken(object, CURRENT_METRICS);
    tidy_annotations(object);
    let spec = object.get_mut("spec").and_then(Value::as_object_mut).map(std::mem::take).unwrap_or_default();
    let mut v2 = Map::new();
    for field in ["scaleTargetRef", "minReplicas", "maxReplicas"] {
        if let Some(value) = spec.get(field) {
            v2.insert(field.into(), value.clone());
        }
    }
    let mut metrics = Vec::new();
    if let Some(cpu) = spec.get("targetCPUUtilizationPercentage").and_then(Value::as_i64) {
        metrics.push(cpu_metric(cpu));
    }
    metrics.extend(others.and_then(|o| o.as_array().cloned()).unwrap_or_default());
    if !metrics.is_empty() {
        v2.insert("metrics".into(), json!(metrics));
    }
    if let Some(behavior) = behavior {
        v2.insert("behavior".into(), behavior);
    }
    object["spec"] = Value::Object(v2);
    if let Some(status) = object.get_mut("status").and_then(Value::as_object_mut) {
        status.remove("currentCPUUtilizationPercentage");
        if let Some(conditions) = conditions {
            status.insert("conditions".into(), conditions);
        }
        if let Some(current) = current {
            status.insert("currentMetrics".into(), current);
        }
    }
}

impl Strategy for HpaStrategy {
    fn view(&self) -> Option<&dyn View> {
        Some(self)
    }

    fn prepare_create(&self, resource: &ResourceInfo, _space: &SpaceName, _caller: Option<&Caller>, object: &mut Value) {
        if is_v1(resource) {
            to_v2(object);
        }
        defaults(object);
        if is_v1(resource) {
            to_v1(object);
        }
    }

    fn prepare_update(&self, resource: &ResourceInfo, _space: &SpaceName, _old: &Value, new: &mut Value, _part: Part) {
        if is_v1(resource) {
            to_v2(new);
        }
        defaults(new);
        if is_v1(resource) {
            to_v1(new);
        }
    }

    /// A v1 HPA is stored as v2.
    fn to_storage(&self, resource: &ResourceInfo, _space: &SpaceName, object: &mut Value, _old: Option<&Value>) {
        if is_v1(resource) {
            to_v2(object);
        }
    }
}

impl View for HpaStrategy {
    fn to_request(&self, resource: &ResourceInfo, object: &mut Value) {
        if is_v1(resource) {
            to_v1(object);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_and_v2_are_two_views_of_one_hpa() {
        let mut v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"}, "maxReplicas": 5,
                "targetCPUUtilizationPercentage": 60}});
        to_v2(&mut v1);
        defaults(&mut v1);
        assert_eq!(v1["spec"]["metrics"], json!([cpu_metric(60)]));
        assert_eq!((&v1["spec"]["minReplicas"], &v1["status"]["desiredReplicas"]), (&json!(1), &json!(0)));
        // A v2 HPA with another metric and a behavior, read and written back through v1, keeps them.
        let mut stored = v1.clone();
        stored["spec"]["metrics"] = json!([cpu_metric(60), {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}]);
        stored["spec"]["behavior"] = json!({"scaleDown": {"stabilizationWindowSeconds": 60}});
        let mut shown = stored.clone();
        to_v1(&mut shown);
        assert_eq!(shown["spec"]["targetCPUUtilizationPercentage"], 60);
        assert_eq!(shown["status"], json!({"currentReplicas": 0, "desiredReplicas": 0}));
        assert!(shown["metadata"]["annotations"][METRICS].as_str().is_some_and(|m| m.contains("qps")), "{shown}");
        to_v2(&mut shown);
        assert_eq!(shown["spec"], stored["spec"], "nothing lost");
        assert!(shown["metadata"].get("annotations").is_none(), "{shown}");
        // No metric: kube's CPU target.
        let mut bare = json!({"spec": {"maxReplicas": 3}});
        defaults(&mut bare);
        assert_eq!(bare["spec"]["metrics"], json!([cpu_metric(DEFAULT_CPU_UTILIZATION)]));
    }
}

//! kube's defaults of the workload kinds' specs (apps/v1, batch/v1 and core's ReplicationController): replicas,
//! update strategies, history limits, Jobs' completion and failure handling. Their pod templates get
//! `pod_spec`'s defaults.

use serde_json::{json, Map, Value};

use super::groups::spec_mut;
use super::pod_spec::{object_mut, objects_mut};
use super::storage::{default_claim, pending};
use crate::kinds::pod_template::set_default;

/// The object at `field` of `map`, made an empty object when missing (kube's `if x == nil { x = &T{} }`).
fn entry_object<'a>(map: &'a mut Map<String, Value>, field: &str) -> Option<&'a mut Map<String, Value>> {
    map.entry(field.to_owned()).or_insert_with(|| json!({})).as_object_mut()
}

/// Deployment: one replica, a 25%/25% rolling update, ten old ReplicaSets kept, ten minutes to progress.
pub(crate) fn deployment(object: &mut Value) {
    let Some(spec) = spec_mut(object) else { return };
    set_default(spec, "replicas", json!(1));
    set_default(spec, "revisionHistoryLimit", json!(10));
    set_default(spec, "progressDeadlineSeconds", json!(600));
    rolling_update(spec, "strategy", &[("maxSurge", json!("25%")), ("maxUnavailable", json!("25%"))]);
}

/// `spec.<field>` of type RollingUpdate unless given, and a rolling update's `defaults`.
fn rolling_update(spec: &mut Map<String, Value>, field: &str, defaults: &[(&str, Value)]) {
    let Some(strategy) = entry_object(spec, field) else { return };
    set_default(strategy, "type", json!("RollingUpdate"));
    if strategy.get("type").and_then(Value::as_str) != Some("RollingUpdate") {
        return;
    }
    if let Some(rolling) = entry_object(strategy, "rollingUpdate") {
        for (field, value) in defaults {
            set_default(rolling, field, value.clone());
        }
    }
}

/// ReplicaSet: one replica.
pub(crate) fn replica_set(object: &mut Value) {
    if let Some(spec) = spec_mut(object) {
        set_default(spec, "replicas", json!(1));
    }
}

/// DaemonSet: a rolling update one node at a time without surge, ten old revisions kept.
pub(crate) fn daemon_set(object: &mut Value) {
    let Some(spec) = spec_mut(object) else { return };
    rolling_update(spec, "updateStrategy", &[("maxUnavailable", json!(1)), ("maxSurge", json!(0))]);
    set_default(spec, "revisionHistoryLimit", json!(10));
}

/// StatefulSet: ordered pod management, a rolling update from partition 0 (a rolling update is added only
/// when the strategy's type was not given, as kube does), claims retained, one replica, ten revisions kept; its
/// claim templates get a claim's defaults and their `apiVersion` and `kind` (kube's conversion writes them).
pub(crate) fn stateful_set(object: &mut Value) {
    let Some(spec) = spec_mut(object) else { return };
    set_default(spec, "podManagementPolicy", json!("OrderedReady"));
    if let Some(strategy) = entry_object(spec, "updateStrategy") {
        if strategy.get("type").and_then(Value::as_str).is_none_or(str::is_empty) {
            strategy.insert("type".into(), json!("RollingUpdate"));
            set_default(strategy, "rollingUpdate", json!({}));
        }
        if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
            if let Some(rolling) = object_mut(strategy, "rollingUpdate") {
                set_default(rolling, "partition", json!(0));
            }
        }
    }
    if let Some(retention) = entry_object(spec, "persistentVolumeClaimRetentionPolicy") {
        set_default(retention, "whenDeleted", json!("Retain"));
        set_default(retention, "whenScaled", json!("Retain"));
    }
    set_default(spec, "replicas", json!(1));
    set_default(spec, "revisionHistoryLimit", json!(10));
    for claim in spec.get_mut("volumeClaimTemplates").and_then(Value::as_array_mut).into_iter().flatten() {
        default_claim(claim);
        pending(claim, None);
        if let Some(claim) = claim.as_object_mut() {
            set_default(claim, "apiVersion", json!("v1"));
            set_default(claim, "kind", json!("PersistentVolumeClaim"));
        }
    }
}

/// ReplicationController: the selector and the object's labels are the template's when not given; one replica.
pub(crate) fn replication_controller(object: &mut Value) {
    let labels = object.pointer("/spec/template/metadata/labels").filter(|l| l.as_object().is_some_and(|l| !l.is_empty())).cloned();
    if let Some(labels) = labels {
        if let Some(spec) = spec_mut(object) {
            fill_empty_map(spec, "selector", &labels);
        }
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            fill_empty_map(metadata, "labels", &labels);
        }
    }
    if let Some(spec) = spec_mut(object) {
        set_default(spec, "replicas", json!(1));
    }
}

/// Sets `field` to `value` when it is missing or an empty map.
fn fill_empty_map(map: &mut Map<String, Value>, field: &str, value: &Value) {
    if map.get(field).and_then(Value::as_object).is_none_or(Map::is_empty) {
        map.insert(field.into(), value.clone());
    }
}

/// Job: one completion at a time when neither is given, six retries (the most there are with a per-index limit),
/// not indexed, not suspended, the selector not manual, replacement pods once the old ones terminate or fail (once
/// they fail, with a pod failure policy, whose patterns' status is `True`); the object's labels are the
/// template's when it has none.
pub(crate) fn job(object: &mut Value) {
    let labels = object.pointer("/spec/template/metadata/labels").filter(|l| l.as_object().is_some_and(|l| !l.is_empty())).cloned();
    if let (Some(labels), Some(metadata)) = (labels, object.get_mut("metadata").and_then(Value::as_object_mut)) {
        fill_empty_map(metadata, "labels", &labels);
    }
    let Some(spec) = spec_mut(object) else { return };
    if spec.get("completions").is_none_or(Value::is_null) && spec.get("parallelism").is_none_or(Value::is_null) {
        spec.insert("completions".into(), json!(1));
    }
    set_default(spec, "parallelism", json!(1));
    let per_index = spec.get("backoffLimitPerIndex").is_some_and(|limit| !limit.is_null());
    set_default(spec, "backoffLimit", json!(if per_index { i64::from(i32::MAX) } else { 6 }));
    set_default(spec, "completionMode", json!("NonIndexed"));
    set_default(spec, "suspend", json!(false));
    set_default(spec, "manualSelector", json!(false));
    let failure_policy = object_mut(spec, "podFailurePolicy");
    let replacement = if failure_policy.is_some() { "Failed" } else { "TerminatingOrFailed" };
    if let Some(policy) = failure_policy {
        for pattern in objects_mut(policy, "rules").flat_map(|rule| objects_mut(rule, "onPodConditions")) {
            if pattern.get("status").and_then(Value::as_str).is_none_or(str::is_empty) {
                pattern.insert("status".into(), json!("True"));
            }
        }
    }
    set_default(spec, "podReplacementPolicy", json!(replacement));
}

/// CronJob: concurrent runs allowed, not suspended, three successful and one failed Job kept (its Job template's
/// spec is not a Job's and gets no Job defaults).
pub(crate) fn cron_job(object: &mut Value) {
    let Some(spec) = spec_mut(object) else { return };
    set_default(spec, "concurrencyPolicy", json!("Allow"));
    set_default(spec, "suspend", json!(false));
    set_default(spec, "successfulJobsHistoryLimit", json!(3));
    set_default(spec, "failedJobsHistoryLimit", json!(1));
}

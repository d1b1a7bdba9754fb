//! A small OpenAPI v3 `components.schemas` map shaped like the real Deployment → Pod → Container chain.
//!
//! Extensions mirror the upstream API types (merge keys `name`, `containerPort`, `mountPath`, `type`;
//! `volumes` as `merge,retainKeys`; `tolerations` without a strategy). `test.MergeItem` is a compact
//! self-referencing type for the ordering and directive rows, and one `$ref` uses the v2
//! `#/definitions/` spelling on purpose.

use serde_json::{json, Map, Value};

fn r(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// A property that refers to another definition through an `allOf` wrapper, as v3 documents do.
fn wrapped(name: &str) -> Value {
    json!({ "allOf": [r(name)], "description": "wrapped" })
}

/// A list of `item` definitions merged by `key`.
fn merged_list(item: &str, key: &str) -> Value {
    json!({
        "type": "array",
        "items": wrapped(item),
        "x-kubernetes-patch-strategy": "merge",
        "x-kubernetes-patch-merge-key": key,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": [key],
    })
}

fn string_map() -> Value {
    json!({ "type": "object", "additionalProperties": { "type": "string", "default": "" } })
}

fn object(properties: Value) -> Value {
    json!({ "type": "object", "properties": properties })
}

fn api_types() -> Vec<(&'static str, Value)> {
    vec![
        (
            "io.k8s.api.apps.v1.Deployment",
            object(json!({
                "apiVersion": { "type": "string" },
                "kind": { "type": "string" },
                "metadata": wrapped("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"),
                "spec": wrapped("io.k8s.api.apps.v1.DeploymentSpec"),
                "status": wrapped("io.k8s.api.apps.v1.DeploymentStatus"),
            })),
        ),
        (
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            object(json!({
                "name": { "type": "string" },
                "labels": string_map(),
                "annotations": string_map(),
                "finalizers": {
                    "type": "array",
                    "items": { "type": "string" },
                    "x-kubernetes-patch-strategy": "merge",
                    "x-kubernetes-list-type": "set",
                },
            })),
        ),
        (
            "io.k8s.api.apps.v1.DeploymentSpec",
            object(json!({
                "replicas": { "type": "integer" },
                "template": wrapped("io.k8s.api.core.v1.PodTemplateSpec"),
            })),
        ),
        (
            "io.k8s.api.apps.v1.DeploymentStatus",
            object(json!({
                "replicas": { "type": "integer" },
                "conditions": merged_list("io.k8s.api.apps.v1.DeploymentCondition", "type"),
            })),
        ),
        (
            "io.k8s.api.apps.v1.DeploymentCondition",
            object(json!({
                "type": { "type": "string" }, "status": { "type": "string" }, "reason": { "type": "string" },
            })),
        ),
        (
            "io.k8s.api.core.v1.PodTemplateSpec",
            object(json!({
                "metadata": wrapped("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"),
                "spec": wrapped("io.k8s.api.core.v1.PodSpec"),
            })),
        ),
        (
            "io.k8s.api.core.v1.PodSpec",
            object(json!({
                "containers": merged_list("io.k8s.api.core.v1.Container", "name"),
                "volumes": {
                    "type": "array",
                    "items": wrapped("io.k8s.api.core.v1.Volume"),
                    "x-kubernetes-patch-strategy": "merge,retainKeys",
                    "x-kubernetes-patch-merge-key": "name",
                },
                "imagePullSecrets": merged_list("io.k8s.api.core.v1.LocalObjectReference", "name"),
                "tolerations": {
                    "type": "array",
                    "items": { "$ref": "#/definitions/io.k8s.api.core.v1.Toleration" },
                    "x-kubernetes-list-type": "atomic",
                },
                "readinessGates": {
                    "type": "array",
                    "items": wrapped("io.k8s.api.core.v1.PodReadinessGate"),
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["conditionType"],
                },
                "nodeSelector": string_map(),
            })),
        ),
        (
            "io.k8s.api.core.v1.Container",
            object(json!({
                "name": { "type": "string" },
                "image": { "type": "string" },
                "args": { "type": "array", "items": { "type": "string" }, "x-kubernetes-list-type": "atomic" },
                "env": merged_list("io.k8s.api.core.v1.EnvVar", "name"),
                "ports": merged_list("io.k8s.api.core.v1.ContainerPort", "containerPort"),
                "volumeMounts": merged_list("io.k8s.api.core.v1.VolumeMount", "mountPath"),
            })),
        ),
        (
            "io.k8s.api.core.v1.EnvVar",
            object(json!({
                "name": { "type": "string" }, "value": { "type": "string" }, "valueFrom": { "type": "object" },
            })),
        ),
        (
            "io.k8s.api.core.v1.ContainerPort",
            object(json!({
                "containerPort": { "type": "integer" }, "name": { "type": "string" }, "protocol": { "type": "string" },
            })),
        ),
        (
            "io.k8s.api.core.v1.VolumeMount",
            object(json!({
                "mountPath": { "type": "string" }, "name": { "type": "string" }, "readOnly": { "type": "boolean" },
            })),
        ),
        (
            "io.k8s.api.core.v1.Volume",
            object(json!({
                "name": { "type": "string" },
                "hostPath": wrapped("io.k8s.api.core.v1.HostPathVolumeSource"),
                "emptyDir": wrapped("io.k8s.api.core.v1.EmptyDirVolumeSource"),
            })),
        ),
        (
            "io.k8s.api.core.v1.HostPathVolumeSource",
            object(json!({
                "path": { "type": "string" }, "type": { "type": "string" },
            })),
        ),
        (
            "io.k8s.api.core.v1.EmptyDirVolumeSource",
            object(json!({
                "medium": { "type": "string" }, "sizeLimit": { "type": "string" },
            })),
        ),
        (
            "io.k8s.api.core.v1.LocalObjectReference",
            object(json!({ "name": { "type": "string" } })),
        ),
        (
            "io.k8s.api.core.v1.Toleration",
            object(json!({
                "key": { "type": "string" }, "operator": { "type": "string" }, "effect": { "type": "string" },
            })),
        ),
        (
            "io.k8s.api.core.v1.PodReadinessGate",
            object(json!({ "conditionType": { "type": "string" } })),
        ),
    ]
}

fn test_types() -> Vec<(&'static str, Value)> {
    vec![(
        "test.MergeItem",
        object(json!({
            "name": { "type": "string" },
            "value": { "type": "string" },
            "other": { "type": "string" },
            "mergingList": merged_list("test.MergeItem", "name"),
            "nonMergingList": { "type": "array", "items": r("test.MergeItem") },
            "mergingIntList": {
                "type": "array", "items": { "type": "integer" }, "x-kubernetes-patch-strategy": "merge",
            },
            "nonMergingIntList": { "type": "array", "items": { "type": "integer" } },
            "keylessMergingList": {
                "type": "array", "items": r("test.MergeItem"), "x-kubernetes-patch-strategy": "merge",
            },
            "replacingMap": { "allOf": [r("test.MergeItem")], "x-kubernetes-patch-strategy": "replace" },
            "simpleMap": string_map(),
            "broken": r("test.DoesNotExist"),
        })),
    )]
}

/// The definitions map every table row runs against.
pub(super) fn definitions() -> Map<String, Value> {
    api_types()
        .into_iter()
        .chain(test_types())
        .map(|(name, schema)| (name.to_owned(), schema))
        .collect()
}

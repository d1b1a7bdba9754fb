//! The schemas the rows run against: a `test.Widget` kind in OpenAPI v3 form with one field of every merge
//! kind, and a CRD version's structural schema.

use std::sync::LazyLock;

use serde_json::{json, Map, Value};

use super::Types;

pub(super) const API_VERSION: &str = "example.com/v1";
pub(super) const KIND: &str = "Widget";
/// The time of the write under test; live entries are older.
pub(super) const NOW: &str = "2025-01-01T00:00:00Z";
pub(super) const OLD: &str = "2024-01-01T00:00:00Z";

fn reference(name: &str) -> Value {
    json!({"allOf": [{"$ref": format!("#/components/schemas/{name}")}]})
}

fn definitions() -> Map<String, Value> {
    let string = json!({"type": "string"});
    let strings = json!({"type": "object", "additionalProperties": {"type": "string"}});
    let definitions = json!({
        "test.Widget": {"type": "object", "properties": {
            "apiVersion": string, "kind": string,
            "metadata": reference("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"),
            "spec": reference("test.Spec"),
            "status": {"type": "object", "properties": {"phase": string, "ready": {"type": "integer"}}},
        }},
        "test.Spec": {"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "name": string,
            "nested": {"type": "object", "properties": {"a": string, "b": {"type": "object", "properties": {"c": string, "d": string}}}},
            "labels": strings,
            "selector": {"type": "object", "additionalProperties": {"type": "string"}, "x-kubernetes-map-type": "atomic"},
            "ref": reference("test.Ref"),
            "ports": {"type": "array", "items": reference("test.Port"),
                "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"]},
            "containers": {"type": "array", "items": reference("test.Container"),
                "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name"},
            "tags": {"type": "array", "items": string, "x-kubernetes-list-type": "set"},
            "args": {"type": "array", "items": string},
            "extra": {"x-kubernetes-preserve-unknown-fields": true},
        }},
        "test.Port": {"type": "object", "required": ["port"], "properties": {
            "port": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}, "name": string,
        }},
        "test.Container": {"type": "object", "properties": {
            "name": string, "image": string,
            "env": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": string, "value": string}}},
        }},
        "test.Ref": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {"kind": string, "name": string}},
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object", "properties": {
            "name": string, "namespace": string, "uid": string, "resourceVersion": string,
            "generation": {"type": "integer"}, "creationTimestamp": string,
            "labels": strings, "annotations": strings,
            "finalizers": {"type": "array", "items": string, "x-kubernetes-patch-strategy": "merge", "x-kubernetes-list-type": "set"},
            "managedFields": {"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "atomic"},
        }},
    });
    match definitions {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

pub(super) fn test_types() -> &'static Types {
    static TYPES: LazyLock<Types> = LazyLock::new(|| Types::compile(&definitions()));
    &TYPES
}

/// A CRD version's `openAPIV3Schema`: a `map` list keyed by `name`, an untyped (preserved) field, a status.
pub(super) fn crd_schema() -> Value {
    json!({"type": "object", "properties": {
        "metadata": {"type": "object"},
        "spec": {"type": "object", "properties": {
            "size": {"type": "integer"},
            "members": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "role": {"type": "string"}}}},
            "hosts": {"type": "array", "items": {"type": "string"}},
            "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        }},
        "status": {"type": "object", "properties": {"observed": {"type": "integer"}}},
    }})
}

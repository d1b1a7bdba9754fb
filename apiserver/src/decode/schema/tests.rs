//! Unknown-field paths against a small hand-written schema (one row per shape) and against the served
//! definitions of real kinds; the problems' texts.

use std::sync::OnceLock;

use serde_json::{json, Map, Value};

use super::*;
use crate::openapi::OpenApi;
use crate::registry::builtin::builtin_resources;

/// The built-in definitions, built once (generation takes tens of milliseconds).
fn served() -> &'static Map<String, Value> {
    static OPENAPI: OnceLock<OpenApi> = OnceLock::new();
    OPENAPI.get_or_init(|| OpenApi::build(&builtin_resources())).definitions()
}

/// One definition of each shape, referring to each other the way the served documents do.
fn shapes() -> &'static Map<String, Value> {
    static SHAPES: OnceLock<Map<String, Value>> = OnceLock::new();
    SHAPES.get_or_init(|| {
        let definitions = json!({
            "Thing": {"type": "object", "properties": {
                "apiVersion": {"type": "string"},
                "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]},
                "spec": {"allOf": [{"$ref": "#/components/schemas/ThingSpec"}], "description": "v3 wraps a described $ref"},
            }},
            "ThingSpec": {"type": "object", "properties": {
                "port": {"$ref": "#/components/schemas/IntOrString"},
                "items": {"type": "array", "items": {"$ref": "#/components/schemas/Item"}},
                "byName": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/Item"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "anyKeys": {"type": "object", "additionalProperties": true},
                "raw": {"$ref": "#/components/schemas/RawExtension"},
                "either": {"$ref": "#/components/schemas/ItemOrList"},
                "dangling": {"$ref": "#/components/schemas/Nowhere"},
            }},
            "Item": {"type": "object", "properties": {"name": {"type": "string"}, "nested": {"$ref": "#/components/schemas/Item"}}},
            "ItemOrList": {"oneOf": [{"$ref": "#/components/schemas/Item"}, {"type": "array", "items": {"$ref": "#/components/schemas/Item"}}]},
            "IntOrString": {"oneOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true},
            "RawExtension": {"type": "object"},
            OBJECT_META: {"type": "object", "properties": {"name": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
        });
        match definitions {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    })
}

/// One row: the definitions, the kind's definition, a value, and the unknown paths expected; pruning removes
/// exactly those.
fn check(definitions: &Map<String, Value>, kind: &str, value: Value, expected: &[&str]) {
    let node = Node::definition(definitions, kind).unwrap_or_else(|| panic!("no definition {kind}"));
    assert_eq!(unknown_fields(node, &value, ""), expected, "{kind}: {value}");
    let mut pruned = value.clone();
    prune(node, &mut pruned);
    assert_eq!(unknown_fields(node, &pruned, ""), Vec::<String>::new(), "{kind}: pruned {pruned}");
}

#[test]
fn pruning_keeps_every_declared_field() {
    let value = json!({"apiVersion": "v1", "metadata": {"name": "x", "tenant": "t", "labels": {"a": "b"}},
        "spec": {"port": 1, "items": [{"name": "a", "nested": {"name": "b", "q": 1}}], "byName": {"k": {"name": "n"}},
            "free": {"any": {"thing": 1}}, "raw": {"kind": "X"}, "either": [{"name": "e"}], "bogus": 1}});
    let mut pruned = value.clone();
    prune(Node::definition(shapes(), "Thing").expect("Thing"), &mut pruned);
    let mut expected = value;
    expected["spec"].as_object_mut().map(|spec| spec.remove("bogus"));
    expected["spec"]["items"][0]["nested"].as_object_mut().map(|nested| nested.remove("q"));
    assert_eq!(pruned, expected);
}

#[test]
fn unknown_fields_of_each_shape() {
    let rows: Vec<(Value, &[&str])> = vec![
        (json!({"apiVersion": "v1", "metadata": {"name": "x"}, "spec": {}}), &[]),
        (json!({"kind": "Thing", "bogus": 1}), &["bogus", "kind"]),
        (json!({"spec": {"nope": 1, "port": 80}}), &["spec.nope"]),
        (json!({"spec": {"port": "http"}}), &[]),
        (json!({"spec": {"items": [{"name": "a"}, {"name": "b", "x": 1}, {"nested": {"y": 2}}]}}), &["spec.items[1].x", "spec.items[2].nested.y"]),
        (json!({"spec": {"byName": {"a": {"name": "a", "z": 1}}, "labels": {"any": "key"}}}), &["spec.byName.a.z"]),
        (json!({"spec": {"free": {"a": {"b": [1, {"c": 2}]}}, "anyKeys": {"k": {"v": 1}}, "raw": {"kind": "X", "data": 1}}}), &[]),
        (json!({"spec": {"either": {"name": "a", "q": 1}}}), &["spec.either.q"]),
        (json!({"spec": {"either": [{"name": "a"}, {"q": 1}]}}), &["spec.either[1].q"]),
        (json!({"spec": {"dangling": {"anything": 1}}}), &[]),
        (json!({"metadata": {"name": "x", "tenant": "t-a", "bogus": 1, "labels": {"a": "b"}}}), &["metadata.bogus"]),
        (json!({"spec": {"items": "not a list", "byName": [1], "labels": null}}), &[]),
    ];
    for (value, expected) in rows {
        check(shapes(), "Thing", value, expected);
    }
}

#[test]
fn unknown_fields_of_served_kinds() {
    let deployment = "io.k8s.api.apps.v1.Deployment";
    let rows: Vec<(&str, Value, &[&str])> = vec![
        (deployment, json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "tenant": "t-a",
            "annotations": {"a": "b"}, "ownerReferences": [{"uid": "u", "bogus": 1}]},
            "spec": {"replicas": 2, "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                "template": {"spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "1"}}},
                    {"name": "d", "unknownNested": 1, "ports": [{"containerPort": 80, "portName": "x"}]}]}}},
            "status": {"replicas": 1}}),
            &["metadata.ownerReferences[0].bogus", "spec.template.spec.containers[1].ports[0].portName", "spec.template.spec.containers[1].unknownNested"]),
        (deployment, json!({"spec": {"Replicas": 1, "foo": {"bar": 1}}}), &["spec.Replicas", "spec.foo"]),
        ("io.k8s.api.core.v1.ConfigMap", json!({"data": {"k": "v"}, "binaryData": {}, "immutable": true, "extra": 1}), &["extra"]),
        ("io.k8s.api.apps.v1.ControllerRevision", json!({"data": {"anything": {"at": "all"}}, "revision": 1}), &[]),
        ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition", json!({"spec": {"versions": [{"name": "v1",
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "bogus": 1,
                "x-kubernetes-preserve-unknown-fields": true, "default": {"free": 1}, "additionalProperties": false}}}}}]}}),
            &["spec.versions[0].schema.openAPIV3Schema.properties.spec.bogus"]),
    ];
    for (kind, value, expected) in rows {
        check(served(), kind, value, expected);
    }
}

#[test]
fn metadata_alone_is_checked_against_object_meta() {
    let node = Node::definition(served(), OBJECT_META).expect("ObjectMeta is served");
    let metadata = json!({"name": "x", "tenant": "t", "unknownMeta": 1, "managedFields": [{"manager": "m", "fieldsV1": {"f:x": {}}}]});
    assert_eq!(unknown_fields(node, &metadata, "metadata"), ["metadata.unknownMeta"]);
}

#[test]
fn walks_stop_after_a_hundred_problems() {
    let spec: Map<String, Value> = (0..150).map(|i| (format!("f{i:03}"), json!(i))).collect();
    let found = unknown_fields(Node::definition(shapes(), "Thing").expect("Thing"), &json!({"spec": spec}), "");
    assert_eq!(found.len(), MAX_PROBLEMS);
    assert_eq!(found[0], "spec.f000");
}

#[test]
fn problems_read_as_kube_writes_them() {
    let rows = [
        (Problem::Unknown("spec.foo".into()), r#"unknown field "spec.foo""#),
        (Problem::Duplicate("spec.template.spec.containers[0].imagePullPolicy".into()), r#"duplicate field "spec.template.spec.containers[0].imagePullPolicy""#),
        (Problem::YamlDuplicate { line: 12, key: "paused".into() }, r#"line 12: key "paused" already set in map"#),
        (Problem::InJsonPatch(Box::new(Problem::Unknown("[0].foo".into()))), r#"json patch unknown field "[0].foo""#),
        (Problem::Unknown("a\"b\\c\nd\u{1}é".into()), r#"unknown field "a\"b\\c\nd\x01é""#),
    ];
    for (problem, text) in rows {
        assert_eq!(problem.to_string(), text);
    }
    let mixed = [
        Problem::YamlDuplicate { line: 5, key: "name".into() },
        Problem::YamlDuplicate { line: 14, key: "paused".into() },
        Problem::Unknown("metadata.unknownMeta".into()),
        Problem::Unknown("spec.unknown1".into()),
    ];
    assert_eq!(strict_decoding_error(&mixed), "strict decoding error: yaml: unmarshal errors:\n  line 5: key \"name\" already set in map\n  \
        line 14: key \"paused\" already set in map, unknown field \"metadata.unknownMeta\", unknown field \"spec.unknown1\"");
    assert_eq!(strict_decoding_error(&mixed[2..]), "strict decoding error: unknown field \"metadata.unknownMeta\", unknown field \"spec.unknown1\"");
}

//! The pieces under the rows: FieldsV1 round trips, kube's path text, manager identities, set algebra.

use serde_json::json;

use super::super::managers::{Identity, Operation};
use super::super::path::{display, PathElement};
use super::FieldSet;

#[test]
fn fields_v1_round_trips_with_members_that_have_children() {
    let fields = json!({
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:image": {}}},
            "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {}}, "f:tags": {"v:\"x\"": {}, "v:3": {}}},
    });
    let set = FieldSet::from_fields_v1(&fields).expect("valid FieldsV1");
    assert_eq!(set.to_fields_v1(), fields);
    let labels = [PathElement::Field("metadata".into()), PathElement::Field("labels".into())];
    assert!(set.has(&labels), "`.` makes the node a member");
    assert!(!set.has(&[PathElement::Field("spec".into())]), "a node with children only is not a member");
}

#[test]
fn unknown_element_types_are_dropped_and_bad_keys_refused() {
    let set = FieldSet::from_fields_v1(&json!({"x:future": {}, "f:a": {}})).expect("unknown types are skipped");
    assert_eq!(set.to_fields_v1(), json!({"f:a": {}}));
    assert!(FieldSet::from_fields_v1(&json!({"nocolon": {}})).is_err());
    assert!(FieldSet::from_fields_v1(&json!({"k:{not json": {}})).is_err());
    assert!(FieldSet::from_fields_v1(&json!(["f:a"])).is_err());
}

#[test]
fn paths_print_as_kube_prints_them() {
    let path = vec![
        PathElement::Field("spec".into()),
        PathElement::Key(vec![("port".into(), json!(80)), ("protocol".into(), json!("TCP"))]),
        PathElement::Field("name".into()),
    ];
    assert_eq!(display(&path), ".spec[port=80,protocol=\"TCP\"].name");
    assert_eq!(display(&[PathElement::Field("f".into()), PathElement::Value(json!("x"))]), ".f[=\"x\"]");
    assert_eq!(PathElement::Key(vec![("name".into(), json!("a<b"))]).encode(), "k:{\"name\":\"a\\u003cb\"}", "HTML characters escaped as Go does");
}

#[test]
fn manager_identities_are_kubes() {
    let apply = Identity::new("a", Operation::Apply, "apps/v1", "");
    assert_eq!(apply.key(), r#"{"manager":"a","operation":"Apply"}"#, "appliers have no apiVersion in their identity");
    let update = Identity::new("", Operation::Update, "v1", "status");
    assert_eq!(update.key(), r#"{"manager":"unknown","operation":"Update","apiVersion":"v1","subresource":"status"}"#);
    assert_eq!(update.describe(), "\"unknown\" with subresource \"status\" using v1");
    let quoted = Identity::new("a\"b\\<c>", Operation::Apply, "v1", "");
    assert_eq!(quoted.key(), r#"{"manager":"a\"b\\<c>","operation":"Apply"}"#, "escaped as encoding/json's Marshal of the entry would be, without HTML escapes");
}

#[test]
fn difference_keeps_children_of_removed_members_and_recursive_difference_does_not() {
    let f = |name: &str| PathElement::Field(name.into());
    let set = FieldSet::of(&[vec![f("spec")], vec![f("spec"), f("replicas")]]);
    let spec = FieldSet::of(&[vec![f("spec")]]);
    assert_eq!(set.difference(&spec), FieldSet::of(&[vec![f("spec"), f("replicas")]]));
    assert!(set.recursive_difference(&spec).is_empty());
    assert_eq!(set.only_under(&[f("spec")]), set);
    assert!(set.only_under(&[f("status")]).is_empty());
}

#[test]
fn a_comparison_under_a_prefix_is_the_part_of_the_whole_comparison_under_it() {
    use super::super::typed::{compare, compare_under};
    use super::fixture::test_types;
    let schema = test_types().view("test.Widget");
    let base = json!({"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "w", "labels": {"a": "1"}, "finalizers": ["x"]},
        "spec": {"replicas": 1, "tags": ["a"]}, "status": {"phase": "Ready", "ready": 1}});
    let with = |pointer: &str, value: serde_json::Value| {
        let mut object = base.clone();
        match pointer.rsplit_once('/') {
            Some((parent, field)) if !value.is_null() => object.pointer_mut(parent).expect("parent")[field] = value,
            Some((parent, field)) => drop(object.pointer_mut(parent).and_then(|p| p.as_object_mut()).map(|p| p.remove(field))),
            None => {}
        }
        object
    };
    let objects = [
        base.clone(),
        with("/status/phase", json!("Deleting")),
        with("/status/ready", serde_json::Value::Null),
        with("/status", serde_json::Value::Null),
        with("/status", json!({})),
        with("/status", json!("not an object")),
        with("/spec/replicas", json!(2)),
        with("/spec", json!(["a list"])),
        with("/metadata/finalizers", json!(["x", "y"])),
        with("/metadata/labels", serde_json::Value::Null),
        with("/metadata", json!({})),
        json!({}),
    ];
    let field = |name: &str| PathElement::Field(name.into());
    let prefixes = [vec![field("status")], vec![field("metadata"), field("finalizers")], vec![field("spec"), field("replicas")], vec![field("nothing"), field("here")]];
    for live in &objects {
        for new in &objects {
            let whole = compare(live, new, schema);
            for prefix in &prefixes {
                let under = compare_under(live, new, schema, prefix);
                let part = (whole.added.only_under(prefix), whole.modified.only_under(prefix), whole.removed.only_under(prefix));
                assert_eq!((under.added, under.modified, under.removed), part, "{live} → {new} under {}", display(prefix));
            }
        }
    }
}

/// A value on one side only (a create compares the object with nothing) reports its own path and every path
/// below it: each field, each list item, a repeated list element without what is under it, empty and null
/// fields as leaves.
#[test]
fn a_value_on_one_side_only_reports_every_path_it_holds() {
    use super::super::typed::compare;
    use super::fixture::test_types;
    let schema = test_types().view("test.Widget");
    let full = json!({
        "metadata": {"name": "w", "labels": {"a": "1", "b": "2"}, "finalizers": ["x", "x", "y"]},
        "spec": {"replicas": 1, "nested": {"b": {"c": "1"}}, "labels": {},
            "ports": [{"port": 80}, {"port": 80, "protocol": "TCP"}, {"port": 81, "protocol": "UDP", "name": "u"}],
            "containers": [{"name": "a", "image": "i", "env": [{"name": "E", "value": "1"}]}],
            "selector": {"k": "v"}, "args": ["a", "b"], "tags": [], "extra": {"deep": {"x": 1}}, "ref": {"kind": "K"}},
        "status": {"phase": null},
    });
    let expected = json!({
        "f:metadata": {"f:finalizers": {".": {}, "v:\"x\"": {}, "v:\"y\"": {}}, "f:labels": {".": {}, "f:a": {}, "f:b": {}}, "f:name": {}},
        "f:spec": {"f:args": {}, "f:extra": {".": {}, "f:deep": {".": {}, "f:x": {}}}, "f:labels": {},
            "f:containers": {".": {}, "k:{\"name\":\"a\"}": {".": {}, "f:env": {".": {}, "k:{\"name\":\"E\"}": {".": {}, "f:name": {}, "f:value": {}}},
                "f:image": {}, "f:name": {}}},
            "f:nested": {".": {}, "f:b": {".": {}, "f:c": {}}},
            "f:ports": {".": {}, "k:{\"port\":80,\"protocol\":\"TCP\"}": {},
                "k:{\"port\":81,\"protocol\":\"UDP\"}": {".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}}},
            "f:ref": {}, "f:replicas": {}, "f:selector": {}, "f:tags": {}},
        "f:status": {"f:phase": {}},
    });
    let nothing = json!({"metadata": {}, "spec": {}, "status": {}});
    let added = compare(&nothing, &full, schema);
    assert_eq!(added.added.to_fields_v1(), expected, "added: {}", added.added.to_fields_v1());
    assert!(added.modified.is_empty() && added.removed.is_empty());
    let removed = compare(&full, &nothing, schema);
    assert_eq!(removed.removed.to_fields_v1(), expected, "removed");
    assert!(removed.modified.is_empty() && removed.added.is_empty());
    // Under a field both sides have, the other side's fields are compared as before: only what differs.
    let mut changed = full.clone();
    changed["spec"]["ports"][2]["name"] = json!("v");
    changed["spec"]["nested"]["b"]["d"] = json!("2");
    let edit = compare(&full, &changed, schema);
    assert_eq!((edit.added.to_fields_v1(), edit.modified.to_fields_v1()), (json!({"f:spec": {"f:nested": {"f:b": {"f:d": {}}}}}),
        json!({"f:spec": {"f:ports": {"k:{\"port\":81,\"protocol\":\"UDP\"}": {"f:name": {}}}}})));
}

/// The comparison walks two objects' fields side by side in key order, so serde_json's maps must keep their keys
/// sorted (its `preserve_order` feature off, in every crate of the build).
#[test]
fn objects_keep_their_fields_in_key_order() {
    let object = json!({"b": 1, "a": 2, "c": 3});
    let keys: Vec<&String> = object.as_object().map(|o| o.keys().collect()).unwrap_or_default();
    assert_eq!(keys, ["a", "b", "c"]);
}

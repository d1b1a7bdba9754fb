//! The rows: one behaviour each, named for what it shows.

use serde_json::{json, Value};

use super::fixture::{NOW, OLD};
use super::{entry, owned, sub_entry, widget, Case, Expect, Op};

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
const CSA: &str = "kubectl-client-side-apply";

fn apply(manager: &'static str, fields: Value) -> Op {
    Op::Apply { manager, config: widget(fields), force: false }
}

fn force(manager: &'static str, fields: Value) -> Op {
    Op::Apply { manager, config: widget(fields), force: true }
}

fn update(manager: &'static str, new: Value) -> Op {
    Op::Update { manager, new }
}

fn done(object: Value, managed: Vec<Value>) -> Expect {
    Expect::Done { object, managed }
}

fn spec(fields: Value) -> Value {
    json!({"f:spec": fields})
}

/// An object last written by client-side apply: the annotation describes `replicas` and `name`.
fn client_side_applied(extra_spec: Value, extra_owned: Value) -> Value {
    let annotation = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"name": "n", "replicas": 1}});
    let mut spec_fields = json!({"replicas": 1, "name": "n"});
    super::merge_into(&mut spec_fields, extra_spec);
    let mut owned_spec = json!({"f:name": {}, "f:replicas": {}});
    super::merge_into(&mut owned_spec, extra_owned);
    owned(widget(json!({"metadata": {"annotations": {LAST_APPLIED: annotation.to_string()}}, "spec": spec_fields})), vec![
        entry(CSA, "Update", Some(OLD), json!({"f:metadata": {"f:annotations": {".": {}, format!("f:{LAST_APPLIED}"): {}}}, "f:spec": owned_spec})),
    ])
}

fn two_owners() -> Value {
    owned(widget(json!({"spec": {"replicas": 1, "name": "n"}})), vec![
        entry("a", "Apply", Some(OLD), spec(json!({"f:replicas": {}}))),
        entry("c", "Update", Some(OLD), spec(json!({"f:name": {}}))),
    ])
}

fn applied_by_a() -> Value {
    owned(widget(json!({"spec": {"replicas": 1, "name": "n"}})), vec![entry("a", "Apply", Some(OLD), spec(json!({"f:name": {}, "f:replicas": {}})))])
}

fn scalars_and_structs() -> Vec<Case> {
    vec![
        Case::new("apply creates: the applier owns exactly its configuration's fields", None,
            apply("a", json!({"spec": {"replicas": 1, "nested": {"a": "x"}}})),
            done(widget(json!({"spec": {"replicas": 1, "nested": {"a": "x"}}})),
                vec![entry("a", "Apply", Some(NOW), spec(json!({"f:nested": {"f:a": {}}, "f:replicas": {}})))])),
        Case::new("setting a field to the value it has is shared ownership, not a conflict",
            Some(owned(widget(json!({"spec": {"replicas": 1}})), vec![entry("a", "Apply", Some(OLD), spec(json!({"f:replicas": {}})))])),
            apply("b", json!({"spec": {"replicas": 1}})),
            done(widget(json!({"spec": {"replicas": 1}})), vec![
                entry("b", "Apply", None, spec(json!({"f:replicas": {}}))),
                entry("a", "Apply", Some(OLD), spec(json!({"f:replicas": {}}))),
            ])),
        Case::new("re-applying the same configuration changes nothing and keeps the entry's time",
            Some(owned(widget(json!({"spec": {"replicas": 1}})), vec![entry("a", "Apply", Some(OLD), spec(json!({"f:replicas": {}})))])),
            apply("a", json!({"spec": {"replicas": 1}})),
            done(widget(json!({"spec": {"replicas": 1}})), vec![entry("a", "Apply", Some(OLD), spec(json!({"f:replicas": {}})))])),
        Case::new("conflicts with two managers name each field and its manager", Some(two_owners()),
            apply("b", json!({"spec": {"replicas": 2, "name": "m"}})),
            Expect::Conflicts(&[(".spec.replicas", "conflict with \"a\""), (".spec.name", "conflict with \"c\" using example.com/v1")])),
        Case::new("force takes the conflicting fields from both managers", Some(two_owners()),
            force("b", json!({"spec": {"replicas": 2, "name": "m"}})),
            done(widget(json!({"spec": {"replicas": 2, "name": "m"}})), vec![entry("b", "Apply", Some(NOW), spec(json!({"f:name": {}, "f:replicas": {}})))])),
        Case::new("nested structs merge field by field",
            Some(owned(widget(json!({"spec": {"nested": {"a": "x", "b": {"c": "1"}}}})),
                vec![entry("u", "Update", Some(OLD), spec(json!({"f:nested": {"f:a": {}, "f:b": {"f:c": {}}}})))])),
            apply("a", json!({"spec": {"nested": {"b": {"d": "2"}}}})),
            done(widget(json!({"spec": {"nested": {"a": "x", "b": {"c": "1", "d": "2"}}}})), vec![
                entry("a", "Apply", Some(NOW), spec(json!({"f:nested": {"f:b": {"f:d": {}}}}))),
                entry("u", "Update", Some(OLD), spec(json!({"f:nested": {"f:a": {}, "f:b": {"f:c": {}}}}))),
            ])),
    ]
}

fn maps_and_lists() -> Vec<Case> {
    vec![
        Case::new("maps merge key by key",
            Some(owned(widget(json!({"spec": {"labels": {"x": "1", "y": "2"}}})), vec![
                entry("a", "Apply", Some(OLD), spec(json!({"f:labels": {"f:x": {}}}))),
                entry("b", "Apply", Some(OLD), spec(json!({"f:labels": {"f:y": {}}}))),
            ])),
            apply("a", json!({"spec": {"labels": {"x": "1", "z": "3"}}})),
            done(widget(json!({"spec": {"labels": {"x": "1", "y": "2", "z": "3"}}})), vec![
                entry("b", "Apply", Some(OLD), spec(json!({"f:labels": {"f:y": {}}}))),
                entry("a", "Apply", Some(NOW), spec(json!({"f:labels": {"f:x": {}, "f:z": {}}}))),
            ])),
        Case::new("an atomic map is one value: changing it conflicts with its owner",
            Some(owned(widget(json!({"spec": {"selector": {"a": "1", "b": "2"}}})), vec![entry("u", "Update", Some(OLD), spec(json!({"f:selector": {}})))])),
            apply("a", json!({"spec": {"selector": {"a": "1"}}})),
            Expect::Conflicts(&[(".spec.selector", "conflict with \"u\" using example.com/v1")])),
        Case::new("an atomic struct is replaced as a whole",
            Some(owned(widget(json!({"spec": {"ref": {"kind": "K", "name": "n"}}})), vec![entry("u", "Update", Some(OLD), spec(json!({"f:ref": {}})))])),
            force("a", json!({"spec": {"ref": {"kind": "K"}}})),
            done(widget(json!({"spec": {"ref": {"kind": "K"}}})), vec![entry("a", "Apply", Some(NOW), spec(json!({"f:ref": {}})))])),
        Case::new("a map list keyed by one field (from its patch strategy) merges items by key, in kube's order",
            Some(owned(widget(json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}]}})), vec![
                entry("u", "Update", Some(OLD), spec(json!({"f:containers": {
                    "k:{\"name\":\"a\"}": {".": {}, "f:image": {}, "f:name": {}},
                    "k:{\"name\":\"b\"}": {".": {}, "f:image": {}, "f:name": {}}}}))),
            ])),
            apply("x", json!({"spec": {"containers": [{"name": "b", "image": "2"}, {"name": "c", "image": "3"}]}})),
            done(widget(json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}, {"name": "c", "image": "3"}]}})), vec![
                entry("x", "Apply", Some(NOW), spec(json!({"f:containers": {
                    "k:{\"name\":\"b\"}": {".": {}, "f:image": {}, "f:name": {}},
                    "k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}))),
                entry("u", "Update", Some(OLD), spec(json!({"f:containers": {
                    "k:{\"name\":\"a\"}": {".": {}, "f:image": {}, "f:name": {}},
                    "k:{\"name\":\"b\"}": {".": {}, "f:image": {}, "f:name": {}}}}))),
            ])),
        Case::new("a map list keyed by two fields identifies an item that omits a key by the key's default",
            Some(owned(widget(json!({"spec": {"ports": [{"port": 80, "protocol": "TCP", "name": "http"}]}})), vec![
                entry("u", "Update", Some(OLD), spec(json!({"f:ports": {
                    "k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}}}}))),
            ])),
            apply("a", json!({"spec": {"ports": [{"port": 80, "name": "web"}]}})),
            Expect::Conflicts(&[(".spec.ports[port=80,protocol=\"TCP\"].name", "conflict with \"u\" using example.com/v1")])),
        Case::new("a set list merges by value; an item both apply is shared",
            Some(owned(widget(json!({"spec": {"tags": ["x", "y"]}})), vec![entry("u", "Update", Some(OLD), spec(json!({"f:tags": {"v:\"x\"": {}, "v:\"y\"": {}}})))])),
            apply("a", json!({"spec": {"tags": ["y", "z"]}})),
            done(widget(json!({"spec": {"tags": ["x", "y", "z"]}})), vec![
                entry("a", "Apply", Some(NOW), spec(json!({"f:tags": {"v:\"y\"": {}, "v:\"z\"": {}}}))),
                entry("u", "Update", Some(OLD), spec(json!({"f:tags": {"v:\"x\"": {}, "v:\"y\"": {}}}))),
            ])),
        Case::new("an atomic list is one value",
            Some(owned(widget(json!({"spec": {"args": ["a", "b"]}})), vec![entry("u", "Update", Some(OLD), spec(json!({"f:args": {}})))])),
            force("a", json!({"spec": {"args": ["c"]}})),
            done(widget(json!({"spec": {"args": ["c"]}})), vec![entry("a", "Apply", Some(NOW), spec(json!({"f:args": {}})))])),
        Case::new("untyped (preserved) fields: objects merge by key, lists are one value",
            Some(owned(widget(json!({"spec": {"extra": {"m": {"k1": "v1"}, "l": [1, 2]}}})),
                vec![entry("u", "Update", Some(OLD), spec(json!({"f:extra": {"f:l": {}, "f:m": {".": {}, "f:k1": {}}}})))])),
            force("a", json!({"spec": {"extra": {"m": {"k2": "v2"}, "l": [3]}}})),
            done(widget(json!({"spec": {"extra": {"m": {"k1": "v1", "k2": "v2"}, "l": [3]}}})), vec![
                entry("a", "Apply", Some(NOW), spec(json!({"f:extra": {"f:l": {}, "f:m": {".": {}, "f:k2": {}}}}))),
                entry("u", "Update", Some(OLD), spec(json!({"f:extra": {"f:m": {".": {}, "f:k1": {}}}}))),
            ])),
    ]
}

fn removal_and_updates() -> Vec<Case> {
    vec![
        Case::new("apply removes a field its applier no longer applies", Some(applied_by_a()),
            apply("a", json!({"spec": {"replicas": 1}})),
            done(widget(json!({"spec": {"replicas": 1}})), vec![entry("a", "Apply", Some(NOW), spec(json!({"f:replicas": {}})))])),
        Case::new("removal keeps a field another manager also owns; only the applier's ownership goes",
            Some(owned(widget(json!({"spec": {"replicas": 1, "name": "n"}})), vec![
                entry("a", "Apply", Some(OLD), spec(json!({"f:name": {}, "f:replicas": {}}))),
                entry("b", "Update", Some(OLD), spec(json!({"f:name": {}}))),
            ])),
            apply("a", json!({"spec": {"replicas": 1}})),
            done(widget(json!({"spec": {"replicas": 1, "name": "n"}})), vec![
                entry("a", "Apply", Some(OLD), spec(json!({"f:replicas": {}}))),
                entry("b", "Update", Some(OLD), spec(json!({"f:name": {}}))),
            ])),
        Case::new("an update takes the fields it changes from their owners", Some(applied_by_a()),
            update("u", widget(json!({"spec": {"replicas": 3, "name": "n"}}))),
            done(widget(json!({"spec": {"replicas": 3, "name": "n"}})), vec![
                entry("a", "Apply", Some(OLD), spec(json!({"f:name": {}}))),
                entry("u", "Update", Some(NOW), spec(json!({"f:replicas": {}}))),
            ])),
        Case::new("a field an update removes leaves every manager", Some(applied_by_a()),
            update("u", widget(json!({"spec": {"replicas": 1}}))),
            done(widget(json!({"spec": {"replicas": 1}})), vec![entry("a", "Apply", Some(OLD), spec(json!({"f:replicas": {}})))])),
        Case::new("an update merges into its manager's entry and renews its time",
            Some(owned(widget(json!({"spec": {"replicas": 1, "name": "n"}})), vec![entry("u", "Update", Some(OLD), spec(json!({"f:name": {}})))])),
            update("u", widget(json!({"spec": {"replicas": 2, "name": "n"}}))),
            done(widget(json!({"spec": {"replicas": 2, "name": "n"}})), vec![entry("u", "Update", Some(NOW), spec(json!({"f:name": {}, "f:replicas": {}})))])),
        Case::new("the entry of a create, in full: new maps and structs are owned as a whole too", None,
            update("u", widget(json!({"spec": {"replicas": 1, "labels": {"a": "x"}}}))),
            done(widget(json!({"spec": {"replicas": 1, "labels": {"a": "x"}}})),
                vec![json!({"manager": "u", "operation": "Update", "apiVersion": "example.com/v1", "time": NOW, "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {".": {}, "f:labels": {".": {}, "f:a": {}}, "f:replicas": {}}}})])),
        Case::new("a client's changed managedFields replace the stored ones", Some(applied_by_a()),
            update("u", owned(widget(json!({"spec": {"replicas": 1, "name": "m"}})), vec![entry("b", "Update", Some(OLD), spec(json!({"f:replicas": {}})))])),
            done(widget(json!({"spec": {"replicas": 1, "name": "m"}})), vec![
                entry("b", "Update", Some(OLD), spec(json!({"f:replicas": {}}))),
                entry("u", "Update", Some(NOW), spec(json!({"f:name": {}}))),
            ])),
        Case::new("managedFields: [{}] clears them, and the object stays untracked", Some(applied_by_a()),
            update("u", owned(widget(json!({"spec": {"replicas": 2, "name": "n"}})), vec![json!({})])),
            done(widget(json!({"spec": {"replicas": 2, "name": "n"}})), vec![])),
        Case::new("a status write owns only status, and says so", Some(owned(widget(json!({"spec": {"replicas": 1}})),
                vec![entry("a", "Apply", Some(OLD), spec(json!({"f:replicas": {}})))])),
            update("s", widget(json!({"spec": {"replicas": 1}, "status": {"phase": "Running"}}))),
            done(widget(json!({"spec": {"replicas": 1}, "status": {"phase": "Running"}})), vec![
                entry("a", "Apply", Some(OLD), spec(json!({"f:replicas": {}}))),
                sub_entry("s", "Update", Some(NOW), "status", json!({"f:status": {".": {}, "f:phase": {}}})),
            ])).status(),
        ten_updaters(),
    ]
}

/// Ten update entries, one label each, a second apart; an eleventh update merges the two oldest.
fn ten_updaters() -> Case {
    let time = |i: usize| format!("2024-01-01T00:00:{i:02}Z");
    let label = |i: usize| json!({"f:labels": {format!("f:l{i}"): {}}});
    let labels = |n: usize| Value::Object((0..n).map(|i| (format!("l{i}"), json!("v"))).collect());
    let entries = (0..10).map(|i| entry(&format!("m{i}"), "Update", Some(&time(i)), spec(label(i)))).collect();
    let mut expected = vec![entry("ancient-changes", "Update", Some(&time(1)), spec(json!({"f:labels": {"f:l0": {}, "f:l1": {}}})))];
    expected.extend((2..10).map(|i| entry(&format!("m{i}"), "Update", Some(&time(i)), spec(label(i)))));
    expected.push(entry("m10", "Update", Some(NOW), spec(label(10))));
    Case::new("more than ten update entries: the two oldest merge into ancient-changes",
        Some(owned(widget(json!({"spec": {"labels": labels(10)}})), entries)),
        update("m10", widget(json!({"spec": {"labels": labels(11)}}))),
        done(widget(json!({"spec": {"labels": labels(11)}})), expected))
}

fn upgrades_and_refusals() -> Vec<Case> {
    let upgraded_annotation = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"name": "n", "replicas": 2}});
    vec![
        Case::new("an object without managedFields is owned by before-first-apply when first applied to",
            Some(widget(json!({"spec": {"replicas": 1, "name": "n"}}))),
            apply("a", json!({"spec": {"replicas": 2}})),
            Expect::Conflicts(&[(".spec.replicas", "conflict with \"before-first-apply\" using example.com/v1")])),
        Case::new("forcing over before-first-apply leaves it the rest",
            Some(widget(json!({"spec": {"replicas": 1, "name": "n"}}))),
            force("a", json!({"spec": {"replicas": 2}})),
            done(widget(json!({"spec": {"replicas": 2, "name": "n"}})), vec![
                entry("a", "Apply", Some(NOW), spec(json!({"f:replicas": {}}))),
                entry("before-first-apply", "Update", Some(NOW), spec(json!({".": {}, "f:name": {}}))),
            ])),
        Case::new("kubectl takes over fields client-side apply owned without conflict, and rewrites the annotation",
            Some(client_side_applied(json!({}), json!({}))),
            apply("kubectl", json!({"spec": {"replicas": 2, "name": "n"}})),
            done(widget(json!({"metadata": {"annotations": {LAST_APPLIED: upgraded_annotation.to_string()}}, "spec": {"replicas": 2, "name": "n"}})), vec![
                entry("kubectl", "Apply", Some(NOW), spec(json!({"f:name": {}, "f:replicas": {}}))),
                entry(CSA, "Update", Some(OLD), json!({"f:metadata": {"f:annotations": {".": {}, format!("f:{LAST_APPLIED}"): {}}}, "f:spec": {"f:name": {}}})),
            ])),
        Case::new("kubectl still conflicts on a field the annotation does not describe",
            Some(client_side_applied(json!({"nested": {"a": "x"}}), json!({"f:nested": {"f:a": {}}}))),
            apply("kubectl", json!({"spec": {"replicas": 2, "name": "n", "nested": {"a": "y"}}})),
            Expect::Conflicts(&[(".spec.nested.a", "conflict with \"kubectl-client-side-apply\" using example.com/v1")])),
        Case::new("another field manager gets no upgrade from client-side apply",
            Some(client_side_applied(json!({}), json!({}))),
            apply("ops", json!({"spec": {"replicas": 2, "name": "n"}})),
            Expect::Conflicts(&[(".spec.replicas", "conflict with \"kubectl-client-side-apply\" using example.com/v1")])),
        Case::new("an applied configuration of another version is refused", None,
            Op::Apply { manager: "a", config: json!({"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "w"}}), force: false },
            Expect::Invalid("invalid object type: example.com/v2, Kind=Widget")),
        Case::new("an applied configuration with duplicate list keys is refused", None,
            apply("a", json!({"spec": {"containers": [{"name": "a"}, {"name": "a"}]}})),
            Expect::Invalid(".spec.containers: duplicate entries for key [name=\"a\"]")),
        Case::new("an applied configuration with managedFields is refused", None,
            apply("a", json!({"metadata": {"managedFields": []}})),
            Expect::Invalid("metadata.managedFields must be nil")),
    ]
}

fn custom_resources() -> Vec<Case> {
    let members = |fields: Value| spec(json!({"f:members": fields}));
    vec![
        Case::new("custom resource: map list items merge by their keys",
            Some(owned(widget(json!({"spec": {"members": [{"name": "a", "role": "x"}]}})),
                vec![entry("u", "Update", Some(OLD), members(json!({"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:role": {}}})))])),
            apply("a", json!({"spec": {"members": [{"name": "b", "role": "y"}]}})),
            done(widget(json!({"spec": {"members": [{"name": "a", "role": "x"}, {"name": "b", "role": "y"}]}})), vec![
                entry("a", "Apply", Some(NOW), members(json!({"k:{\"name\":\"b\"}": {".": {}, "f:name": {}, "f:role": {}}}))),
                entry("u", "Update", Some(OLD), members(json!({"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:role": {}}}))),
            ])).crd(),
        Case::new("custom resource: a list without a list type is atomic",
            Some(owned(widget(json!({"spec": {"hosts": ["h1"]}})), vec![entry("u", "Update", Some(OLD), spec(json!({"f:hosts": {}})))])),
            apply("a", json!({"spec": {"hosts": ["h2"]}})),
            Expect::Conflicts(&[(".spec.hosts", "conflict with \"u\" using example.com/v1")])).crd(),
        Case::new("custom resource: metadata is ObjectMeta, so finalizers are a set",
            Some(owned(widget(json!({"metadata": {"finalizers": ["f1"]}})), vec![entry("u", "Update", Some(OLD), json!({"f:metadata": {"f:finalizers": {"v:\"f1\"": {}}}}))])),
            apply("a", json!({"metadata": {"finalizers": ["f2"]}})),
            done(widget(json!({"metadata": {"finalizers": ["f1", "f2"]}})), vec![
                entry("a", "Apply", Some(NOW), json!({"f:metadata": {"f:finalizers": {"v:\"f2\"": {}}}})),
                entry("u", "Update", Some(OLD), json!({"f:metadata": {"f:finalizers": {"v:\"f1\"": {}}}})),
            ])).crd(),
        Case::new("custom resource: a finalizer its applier stops applying is removed, and the list with it",
            Some(owned(widget(json!({"metadata": {"finalizers": ["f2"]}, "spec": {"size": 1}})), vec![
                entry("a", "Apply", Some(OLD), json!({"f:metadata": {"f:finalizers": {"v:\"f2\"": {}}}})),
                entry("u", "Update", Some(OLD), spec(json!({"f:size": {}}))),
            ])),
            apply("a", json!({})),
            done(widget(json!({"spec": {"size": 1}})), vec![entry("u", "Update", Some(OLD), spec(json!({"f:size": {}})))])).crd(),
        Case::new("custom resource: an apply of status owns only status",
            Some(owned(widget(json!({"spec": {"size": 1}})), vec![entry("u", "Update", Some(OLD), spec(json!({"f:size": {}})))])),
            apply("c", json!({"spec": {"size": 5}, "status": {"observed": 1}})),
            done(widget(json!({"spec": {"size": 5}, "status": {"observed": 1}})), vec![
                sub_entry("c", "Apply", Some(NOW), "status", json!({"f:status": {"f:observed": {}}})),
                entry("u", "Update", Some(OLD), spec(json!({"f:size": {}}))),
            ])).crd().status(),
    ]
}

pub(super) fn rows() -> Vec<Case> {
    let mut rows = scalars_and_structs();
    rows.extend(maps_and_lists());
    rows.extend(removal_and_updates());
    rows.extend(upgrades_and_refusals());
    rows.extend(custom_resources());
    rows
}

//! The conversion's round trips, and that no conversion widens a claim or an acceptance.

use serde_json::{json, Value};

use super::*;

fn export_v1(claims: Value) -> Value {
    json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
        "metadata": {"name": "widgets", "annotations": {"kcp.io/cluster": "p1"}},
        "spec": {"latestResourceSchemas": ["v1.widgets.example.io", "v2.things.core"], "permissionClaims": claims},
        "status": {"identityHash": "abc"}})
}

fn binding_v1(claims: Value, applied: Value) -> Value {
    json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding",
        "metadata": {"name": "widgets", "annotations": {"kcp.io/cluster": "c1"}},
        "spec": {"reference": {"export": {"path": "root:p", "name": "widgets"}}, "permissionClaims": claims},
        "status": {"phase": "Bound", "exportPermissionClaims": applied.clone(), "appliedPermissionClaims": applied}})
}

fn annotation(object: &Value, key: &str) -> Option<Value> {
    object.pointer("/metadata/annotations").and_then(|a| a.get(key)).and_then(Value::as_str).and_then(|t| serde_json::from_str(t).ok())
}

#[test]
fn an_export_shows_resources_and_verbs_and_comes_back_unchanged() {
    let selected = json!({"resource": "secrets", "resourceSelector": [{"name": "a", "namespace": "ns"}]});
    let stored = export_v1(json!([{"resource": "configmaps", "all": true}, selected.clone()]));
    let mut view = stored.clone();
    export_to_v1alpha2(&mut view);
    assert_eq!(view["apiVersion"], "apis.kcp.io/v1alpha2");
    assert_eq!(view["spec"]["resources"], json!([
        {"name": "widgets", "group": "example.io", "schema": "v1.widgets.example.io", "storage": {"crd": {}}},
        {"name": "things", "group": "", "schema": "v2.things.core", "storage": {"crd": {}}}]));
    assert_eq!(view["spec"]["permissionClaims"], json!([{"resource": "configmaps", "verbs": ["*"]}, {"resource": "secrets", "verbs": ["*"]}]));
    assert_eq!(annotation(&view, "apis.v1alpha2.kcp.io/v1alpha1-permission-claims"), Some(json!([selected])));
    let mut back = view.clone();
    export_to_v1alpha1(&mut back);
    assert_eq!(back, stored);
    // A v1alpha1 field sent through v1alpha2 is not stored unchecked.
    let mut smuggled = view.clone();
    smuggled["spec"]["latestResourceSchemas"] = json!(["not a schema name"]);
    export_to_v1alpha1(&mut smuggled);
    assert_eq!(smuggled["spec"]["latestResourceSchemas"], stored["spec"]["latestResourceSchemas"]);
    // Without the annotation, the selected claim comes back as `v1alpha2` said it: every object.
    if let Some(annotations) = view["metadata"]["annotations"].as_object_mut() {
        annotations.remove("apis.v1alpha2.kcp.io/v1alpha1-permission-claims");
    }
    export_to_v1alpha1(&mut view);
    assert_eq!(view["spec"]["permissionClaims"][1], json!({"resource": "secrets", "all": true}));
}

#[test]
fn verbs_v1alpha1_cannot_say_are_kept_aside_and_not_in_effect() {
    let mut written = export_v1(json!(null));
    export_to_v1alpha2(&mut written);
    let narrow = json!({"resource": "configmaps", "verbs": ["get", "list"]});
    let suggested = json!({"resource": "secrets", "verbs": ["*"], "defaultSelector": {"matchLabels": {"a": "b"}}});
    written["spec"]["permissionClaims"] = json!([narrow.clone(), suggested.clone()]);
    let mut stored = written.clone();
    export_to_v1alpha1(&mut stored);
    assert_eq!(stored["spec"]["permissionClaims"], json!([{"resource": "secrets", "all": true}]), "only what v1alpha1 says is stored");
    assert_eq!(annotation(&stored, "apis.v1alpha2.kcp.io/permission-claims"), Some(json!([narrow, suggested])));
    let mut again = stored.clone();
    export_to_v1alpha2(&mut again);
    assert_eq!(again["spec"]["permissionClaims"], json!([suggested, narrow]));
    assert_eq!(again.pointer("/metadata/annotations"), Some(&json!({"kcp.io/cluster": "p1"})));
}

#[test]
fn a_binding_accepts_all_only_with_every_verb_and_match_all() {
    let claim = |verbs: Value, selector: Value| json!({"resource": "configmaps", "verbs": verbs, "selector": selector, "state": "Accepted"});
    for (sent, all) in [
        (claim(json!(["*"]), json!({"matchAll": true})), true),
        (claim(json!(["get"]), json!({"matchAll": true})), false),
        (claim(json!(["*"]), json!({"matchLabels": {"a": "b"}})), false),
        (claim(json!(["*"]), json!({"matchExpressions": [{"key": "a", "operator": "Exists"}]})), false),
    ] {
        let mut object = binding_v1(json!([]), json!(null));
        object["spec"]["permissionClaims"] = json!([sent.clone()]);
        binding_to_v1alpha1(&mut object, None);
        let stored = &object["spec"]["permissionClaims"];
        if all {
            assert_eq!(stored, &json!([{"resource": "configmaps", "all": true, "state": "Accepted"}]));
        } else {
            assert_eq!(stored, &json!([]), "{sent} is not stored as an acceptance");
            assert_eq!(annotation(&object, "apis.v1alpha2.kcp.io/acceptable-permission-claims"), Some(json!([sent.clone()])));
            binding_to_v1alpha2(&mut object);
            assert_eq!(object["spec"]["permissionClaims"], json!([sent]), "and shown again through v1alpha2");
        }
    }
}

#[test]
fn a_binding_round_trips_through_v1alpha2_and_its_status_stays_the_servers() {
    let selected = json!({"resource": "secrets", "resourceSelector": [{"name": "a"}], "state": "Accepted"});
    let applied = json!([{"resource": "secrets", "resourceSelector": [{"name": "a"}]}, {"resource": "configmaps", "all": true}]);
    let stored = binding_v1(json!([selected.clone(), {"resource": "configmaps", "all": true, "state": "Accepted"}]), applied.clone());
    let mut view = stored.clone();
    binding_to_v1alpha2(&mut view);
    assert_eq!(view["spec"]["permissionClaims"], json!([
        {"resource": "secrets", "verbs": ["*"], "selector": {"matchAll": true}, "state": "Accepted"},
        {"resource": "configmaps", "verbs": ["*"], "selector": {"matchAll": true}, "state": "Accepted"}]));
    assert_eq!(view["status"]["appliedPermissionClaims"][1], json!({"resource": "configmaps", "verbs": ["*"], "selector": {"matchAll": true}}));
    assert_eq!(view["status"]["exportPermissionClaims"][1], json!({"resource": "configmaps", "verbs": ["*"]}));
    let mut back = view.clone();
    binding_to_v1alpha1(&mut back, Some(&stored));
    assert_eq!(back, stored);
    // A client dropping the annotations gets no wider status than the server wrote.
    let mut bare = view.clone();
    bare["metadata"]["annotations"] = json!({"kcp.io/cluster": "c1"});
    binding_to_v1alpha1(&mut bare, Some(&stored));
    assert_eq!(bare["status"], stored["status"]);
    assert_eq!(bare["spec"]["permissionClaims"][0], json!({"resource": "secrets", "all": true, "state": "Accepted"}));
}

#[test]
fn v1alpha2_validation_names_v1alpha2_fields() {
    let mut causes = Vec::new();
    check_export(&json!({"spec": {"resources": [{"name": "widgets", "group": "example.io"}, {"name": "w", "group": "g.io", "schema": "v1.x.g.io"}],
        "permissionClaims": [{"resource": "configmaps"}, {"resource": "secrets", "verbs": []}]}}), &mut causes);
    let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(fields, ["spec.resources[0].schema", "spec.resources[1].schema", "spec.permissionClaims[0].verbs", "spec.permissionClaims[1].verbs"]);
    let mut causes = Vec::new();
    check_binding(&json!({"spec": {"permissionClaims": [{"resource": "configmaps", "verbs": ["*"], "state": "Accepted"},
        {"resource": "configmaps", "verbs": ["*"], "selector": {"matchAll": true, "matchLabels": {"a": "b"}}, "state": "Accepted"},
        {"resource": "configmaps", "verbs": ["*"], "selector": {"matchAll": true}}]}}), &mut causes);
    let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(fields, ["spec.permissionClaims[0].selector", "spec.permissionClaims[1]", "spec.permissionClaims[1].selector", "spec.permissionClaims[2]",
        "spec.permissionClaims[2].state"]);
    let mut causes = Vec::new();
    check_export(&json!({"spec": {"resources": [{"name": "w", "group": "g.io", "schema": "v1.w.g.io"}, {"name": "w", "group": "g.io", "schema": "v2.w.g.io"}]}}), &mut causes);
    assert_eq!(causes.iter().map(|c| (c.reason, c.field.as_str())).collect::<Vec<_>>(), [("FieldValueDuplicate", "spec.resources[1]")]);
}

//! `metadata.ownerReferences` and `metadata.finalizers`, checked as kube-apiserver 1.33's ObjectMeta validation
//! does: every reference names an apiVersion with a version, a kind, a name and a uid; at most one is the
//! controller; v1 Events cannot own anything; `orphan` and `foregroundDeletion` exclude each other.

use serde_json::Value;

use super::check_qualified_key;
use crate::registry::deletion::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
use crate::registry::ResourceInfo;
use crate::status::{ApiError, ApiResult, Cause};
use crate::registry::stored::at;

const FIELD: &str = "metadata.ownerReferences";

/// Checks the object's owner references and finalizers: 422 with every cause.
pub fn check(resource: &ResourceInfo, object: &Value) -> ApiResult<()> {
    let causes = causes(resource.definition.is_some(), object);
    if causes.is_empty() {
        return Ok(());
    }
    let name = at(object, "/metadata/name").and_then(Value::as_str).unwrap_or_default();
    Err(ApiError::invalid(&resource.group, &resource.kind, name, causes))
}

/// The causes for one object. `typed`: the kind has a k8s-openapi type, whose decoding answers 400 for a field
/// of the wrong type, so such fields are left to it; a custom resource's are read as empty, as kube's
/// unstructured accessors read them.
pub fn causes(typed: bool, object: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(references) = at(object, "/metadata/ownerReferences").and_then(Value::as_array) {
        check_references(typed, references, &mut causes);
    }
    if let Some(finalizers) = at(object, "/metadata/finalizers").and_then(Value::as_array) {
        check_finalizers(finalizers, &mut causes);
    }
    causes
}

fn check_references(typed: bool, references: &[Value], causes: &mut Vec<Cause>) {
    let mut first_controller: Option<String> = None;
    for reference in references.iter().filter(|r| r.is_object()) {
        let field = |name: &str| match reference.get(name) {
            None | Some(Value::Null) => Some(""),
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) if typed => None,
            Some(_) => Some(""),
        };
        let (api_version, kind) = (field("apiVersion"), field("kind"));
        let version = api_version.map(|v| version_of(v).1);
        require(version, api_version, "apiVersion", "version must not be empty", causes);
        require(kind, kind, "kind", "kind must not be empty", causes);
        require(field("name"), field("name"), "name", "name must not be empty", causes);
        require(field("uid"), field("uid"), "uid", "uid must not be empty", causes);
        if api_version.map(version_of) == Some(("", "v1")) && kind == Some("Event") {
            causes.push(invalid_json(FIELD, reference, "/v1, Kind=Event is disallowed from being an owner"));
        }
        if reference.get("controller") == Some(&Value::Bool(true)) {
            let current = format!("{}/{}", kind.unwrap_or_default(), field("name").unwrap_or_default());
            match &first_controller {
                Some(first) => causes.push(invalid_json(FIELD, &Value::Array(references.to_vec()), &format!(
                    "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"))),
                None => first_controller = Some(current),
            }
        }
    }
}

/// `<field>: Invalid value: "<value>": <why>` when `checked` is empty (`None`: wrongly typed, left to the decoder).
fn require(checked: Option<&str>, value: Option<&str>, name: &str, why: &str, causes: &mut Vec<Cause>) {
    if let (Some(""), Some(value)) = (checked, value) {
        causes.push(Cause::invalid(format!("{FIELD}.{name}"), value, why));
    }
}

/// `(group, version)` of an apiVersion as kube's `ParseGroupVersion` reads it; the version is empty when the
/// apiVersion does not parse (more than one `/`).
fn version_of(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        _ if api_version == "/" => ("", ""),
        None => ("", api_version),
        Some((_, version)) if version.contains('/') => ("", ""),
        Some((group, version)) => (group, version),
    }
}

/// An Invalid cause whose value is a structure, rendered as JSON.
fn invalid_json(field: &str, value: &Value, why: &str) -> Cause {
    Cause { reason: "FieldValueInvalid", message: format!("Invalid value: {value}: {why}"), field: field.to_owned() }
}

fn check_finalizers(finalizers: &[Value], causes: &mut Vec<Cause>) {
    let names: Vec<&str> = finalizers.iter().filter_map(Value::as_str).collect();
    for name in &names {
        check_qualified_key("metadata.finalizers", name, causes);
    }
    if names.contains(&ORPHAN_FINALIZER) && names.contains(&FOREGROUND_FINALIZER) {
        // kube renders a list value as JSON (apimachinery's field.Error).
        let listed = serde_json::to_string(&names).unwrap_or_default();
        causes.push(Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {listed}: finalizer {ORPHAN_FINALIZER} and {FOREGROUND_FINALIZER} cannot be both set"),
            field: "metadata.finalizers".to_owned(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(typed: bool, metadata: Value, expected: &[&str]) {
        let object = json!({"metadata": metadata});
        let got: Vec<String> = causes(typed, &object).iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(got, expected, "{object}");
    }

    #[test]
    fn owner_references() {
        let owner = |api_version: &str, kind: &str, name: &str, uid: &str| json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": uid});
        let controller = |name: &str| json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": "u", "controller": true});
        check(true, json!({"ownerReferences": [owner("apps/v1", "ReplicaSet", "rs", "u1"), owner("v1", "ConfigMap", "cm", "u2")]}), &[]);
        check(true, json!({"ownerReferences": [{}]}), &[
            "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty",
            "metadata.ownerReferences.kind: Invalid value: \"\": kind must not be empty",
            "metadata.ownerReferences.name: Invalid value: \"\": name must not be empty",
            "metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty",
        ]);
        check(true, json!({"ownerReferences": [owner("apps/", "ReplicaSet", "rs", "u")]}),
            &["metadata.ownerReferences.apiVersion: Invalid value: \"apps/\": version must not be empty"]);
        check(true, json!({"ownerReferences": [owner("a/b/c", "K", "n", "u")]}),
            &["metadata.ownerReferences.apiVersion: Invalid value: \"a/b/c\": version must not be empty"]);
        // Wrongly typed fields of built-in kinds are the decoder's (400); custom resources read them as empty.
        check(true, json!({"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": 5}]}), &[]);
        check(false, json!({"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": 5}]}),
            &["metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty"]);
        check(true, json!({"ownerReferences": [owner("v1", "Event", "e", "u")]}), &[
            "metadata.ownerReferences: Invalid value: {\"apiVersion\":\"v1\",\"kind\":\"Event\",\"name\":\"e\",\"uid\":\"u\"}: /v1, Kind=Event is disallowed from being an owner",
        ]);
        check(true, json!({"ownerReferences": [owner("events.k8s.io/v1", "Event", "e", "u")]}), &[]);
        check(true, json!({"ownerReferences": [controller("a"), owner("v1", "ConfigMap", "cm", "u")]}), &[]);
        let two = json!({"ownerReferences": [controller("a"), controller("b")]});
        let listed = two["ownerReferences"].to_string();
        check(true, two, &[&format!("metadata.ownerReferences: Invalid value: {listed}: Only one reference can have Controller set to true. \
            Found \"true\" in references for ReplicaSet/a and ReplicaSet/b")]);
    }

    #[test]
    fn finalizers() {
        check(true, json!({"finalizers": ["kubernetes", "example.com/cleanup", "orphan"]}), &[]);
        check(true, json!({"finalizers": ["orphan", "foregroundDeletion"]}), &[
            "metadata.finalizers: Invalid value: [\"orphan\",\"foregroundDeletion\"]: finalizer orphan and foregroundDeletion cannot be both set",
        ]);
        let bad = causes(true, &json!({"metadata": {"finalizers": ["bad name"]}}));
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert_eq!(bad[0].field, "metadata.finalizers");
    }
}

//! `apis.kcp.io/v1alpha2`, kcp's current version of APIExport and APIBinding, as a view of the stored
//! `v1alpha1` objects (the form the APIs controller, the claims cache and the virtual workspace read): a request
//! through `v1alpha2` is converted to `v1alpha1` before it is stored (`Strategy::to_storage`), and a stored object
//! to `v1alpha2` when read through it (`View::to_request`), following kcp's conversion
//! (`sdk/apis/apis/v1alpha2/types_api{export,binding}_conversion.go`):
//!
//! - an export's `spec.latestResourceSchemas: ["<version>.<plural>.<group>"]` is `spec.resources: [{name:
//!   <plural>, group: <group>, schema: ..., storage: {crd: {}}}]`;
//! - a claim with `all: true` is one with `verbs: ["*"]` (a binding's also `selector: {matchAll: true}`).
//!
//! What one version cannot say is kept in kcp's annotations, so that a round trip through the other loses nothing:
//! a `v1alpha1` `resourceSelector` in `apis.v1alpha2.kcp.io/v1alpha1-*` annotations of the `v1alpha2` view, and
//! `v1alpha2` claims with other verbs or a label selector in `apis.v1alpha2.kcp.io/*-permission-claims`
//! annotations of the stored object. Such a claim is not in the stored claims, so it is not in effect: kspaces
//! grants claims as `v1alpha1` states them (every verb, `all` or named objects), and a conversion never makes a
//! claim or an acceptance wider than what was sent.

use serde_json::{json, Map, Value};

use super::api_export::GROUP;
use crate::claims::same_resource;
use crate::status::Cause;

/// The version requests may use beside `v1alpha1`.
pub const V1ALPHA2: &str = "v1alpha2";

/// One list of claims and the annotations that keep what the other version cannot say of it.
struct ClaimList {
    pointer: &'static str,
    /// A binding's claims (and applied claims) have a `selector` in `v1alpha2`.
    scoped: bool,
    /// On the `v1alpha2` view: the `v1alpha1` claims with a `resourceSelector`.
    v1alpha1_only: &'static str,
    /// On the stored object: the `v1alpha2` claims `v1alpha1` cannot say.
    v1alpha2_only: &'static str,
}

const EXPORT_CLAIMS: ClaimList = ClaimList {
    pointer: "/spec/permissionClaims",
    scoped: false,
    v1alpha1_only: "apis.v1alpha2.kcp.io/v1alpha1-permission-claims",
    v1alpha2_only: "apis.v1alpha2.kcp.io/permission-claims",
};

const BINDING_LISTS: [ClaimList; 3] = [
    ClaimList {
        pointer: "/spec/permissionClaims",
        scoped: true,
        v1alpha1_only: "apis.v1alpha2.kcp.io/v1alpha1-permission-claims",
        v1alpha2_only: "apis.v1alpha2.kcp.io/acceptable-permission-claims",
    },
    ClaimList {
        pointer: "/status/exportPermissionClaims",
        scoped: false,
        v1alpha1_only: "apis.v1alpha2.kcp.io/v1alpha1-status-export-permission-claims",
        v1alpha2_only: "apis.v1alpha2.kcp.io/status-export-permission-claims",
    },
    ClaimList {
        pointer: "/status/appliedPermissionClaims",
        scoped: true,
        v1alpha1_only: "apis.v1alpha2.kcp.io/v1alpha1-status-applied-permission-claims",
        v1alpha2_only: "apis.v1alpha2.kcp.io/status-applied-permission-claims",
    },
];

/// Whether a request for `version` sees the `v1alpha2` form.
pub fn is_v1alpha2(version: &str) -> bool {
    version == V1ALPHA2
}

/// A stored (`v1alpha1`) APIExport as `v1alpha2` shows it.
pub fn export_to_v1alpha2(object: &mut Value) {
    set_api_version(object, V1ALPHA2);
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        if let Some(latest) = spec.remove("latestResourceSchemas") {
            let resources: Vec<Value> = latest.as_array().into_iter().flatten().filter_map(Value::as_str).filter_map(resource_of_schema).collect();
            spec.insert("resources".into(), json!(resources));
        }
    }
    claims_to_v1alpha2(object, &EXPORT_CLAIMS);
}

/// A `v1alpha2` APIExport in its stored (`v1alpha1`) form.
pub fn export_to_v1alpha1(object: &mut Value) {
    set_api_version(object, "v1alpha1");
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        // Not a `v1alpha2` field (its schema prunes it): the stored names are `resources`' alone, checked as such.
        spec.remove("latestResourceSchemas");
        if let Some(resources) = spec.remove("resources") {
            let latest: Vec<Value> = resources.as_array().into_iter().flatten().filter_map(|r| r.get("schema")).cloned().collect();
            if !latest.is_empty() {
                spec.insert("latestResourceSchemas".into(), json!(latest));
            }
        }
    }
    claims_to_v1alpha1(object, &EXPORT_CLAIMS);
}

/// A stored (`v1alpha1`) APIBinding as `v1alpha2` shows it.
pub fn binding_to_v1alpha2(object: &mut Value) {
    set_api_version(object, V1ALPHA2);
    for list in &BINDING_LISTS {
        claims_to_v1alpha2(object, list);
    }
}

/// A `v1alpha2` APIBinding in its stored (`v1alpha1`) form. Its `status` is the stored one when the request
/// left it as it was read (a write of the main resource keeps it): the server's status never depends on the
/// annotations a client sends back.
pub fn binding_to_v1alpha1(object: &mut Value, old: Option<&Value>) {
    set_api_version(object, "v1alpha1");
    let kept = old.filter(|old| {
        let mut seen = (*old).clone();
        binding_to_v1alpha2(&mut seen);
        seen.get("status") == object.get("status")
    }).and_then(|old| old.get("status").cloned());
    for list in &BINDING_LISTS {
        claims_to_v1alpha1(object, list);
    }
    if let (Some(status), Some(map)) = (kept, object.as_object_mut()) {
        map.insert("status".into(), status);
        for list in &BINDING_LISTS[1..] {
            take_annotation(object, list.v1alpha2_only);
        }
    }
}

fn set_api_version(object: &mut Value, version: &str) {
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), json!(format!("{GROUP}/{version}")));
    }
}

/// `<version>.<plural>.<group>` (group `core` for the core group) as a `v1alpha2` resource.
fn resource_of_schema(schema: &str) -> Option<Value> {
    let mut parts = schema.splitn(3, '.');
    let (_, plural, group) = (parts.next()?, parts.next()?, parts.next()?);
    let group = if group == "core" { "" } else { group };
    Some(json!({"name": plural, "group": group, "schema": schema, "storage": {"crd": {}}}))
}

/// Whether a `v1alpha1` claim names objects (`resourceSelector`), which `v1alpha2` cannot say.
fn has_resource_selector(claim: &Value) -> bool {
    claim.get("resourceSelector").and_then(Value::as_array).is_some_and(|s| !s.is_empty())
}

/// Whether a `v1alpha2` claim is one `v1alpha1` says with `all: true`: every verb and (a binding's) every object.
fn is_all(claim: &Value, scoped: bool) -> bool {
    let every_verb = claim.get("verbs").and_then(Value::as_array).is_some_and(|v| v.len() == 1 && v[0] == "*");
    every_verb && (!scoped || selector_is_match_all(claim.get("selector")))
}

/// `{matchAll: true}` and no label selector.
fn selector_is_match_all(selector: Option<&Value>) -> bool {
    let Some(selector) = selector else { return false };
    let empty = |key: &str| selector.get(key).is_none_or(|v| v.is_null() || v.as_object().is_some_and(Map::is_empty) || v.as_array().is_some_and(Vec::is_empty));
    selector.get("matchAll").and_then(Value::as_bool) == Some(true) && empty("matchLabels") && empty("matchExpressions")
}

/// The group, resource and identity hash of a claim, and its `state` when it has one.
fn claim_core(claim: &Value) -> Map<String, Value> {
    ["group", "resource", "identityHash", "state"].iter()
        .filter_map(|key| claim.get(*key).filter(|v| !v.is_null()).map(|v| ((*key).to_owned(), v.clone())))
        .collect()
}

fn claims_to_v1alpha2(object: &mut Value, list: &ClaimList) {
    let restored = take_annotation(object, list.v1alpha2_only);
    let Some(claims) = object.pointer(list.pointer).and_then(Value::as_array).cloned() else {
        return;
    };
    let mut converted = Vec::new();
    let mut v1alpha1_only = Vec::new();
    for claim in &claims {
        if has_resource_selector(claim) {
            v1alpha1_only.push(claim.clone());
        }
        let mut v2 = claim_core(claim);
        v2.insert("verbs".into(), json!(["*"]));
        if list.scoped {
            // kcp's: a `resourceSelector` claim shows as `matchAll` (the selector itself kept in the annotation).
            let all = claim.get("all").and_then(Value::as_bool) == Some(true) || has_resource_selector(claim);
            v2.insert("selector".into(), if all { json!({"matchAll": true}) } else { json!({}) });
        }
        converted.push(Value::Object(v2));
    }
    for claim in restored {
        match converted.iter_mut().find(|c| same_resource(c, &claim)) {
            // A claim `v1alpha1` holds as `all` with what only `v1alpha2` says beside it (an export's
            // `defaultSelector`).
            Some(held) if is_all(&claim, list.scoped) => *held = claim,
            Some(_) => {}
            // A claim only `v1alpha2` can say, not in the stored claims; one `v1alpha1` could say was removed there.
            None if !is_all(&claim, list.scoped) => converted.push(claim),
            None => {}
        }
    }
    if let Some(at) = object.pointer_mut(list.pointer) {
        *at = json!(converted);
    }
    if !v1alpha1_only.is_empty() {
        set_annotation(object, list.v1alpha1_only, &v1alpha1_only);
    }
}

fn claims_to_v1alpha1(object: &mut Value, list: &ClaimList) {
    let originals = take_annotation(object, list.v1alpha1_only);
    let Some(claims) = object.pointer(list.pointer).and_then(Value::as_array).cloned() else {
        return;
    };
    let mut converted = Vec::new();
    let mut v1alpha2_only = Vec::new();
    for claim in &claims {
        if !is_all(claim, list.scoped) {
            v1alpha2_only.push(claim.clone());
            continue;
        }
        if claim.get("defaultSelector").is_some_and(|s| !s.is_null()) {
            v1alpha2_only.push(claim.clone());
        }
        let mut v1 = claim_core(claim);
        // What the `v1alpha2` view showed as `matchAll` for a `resourceSelector`: that selector again, never wider.
        match originals.iter().find(|o| same_resource(o, claim) && has_resource_selector(o)) {
            Some(original) => v1.insert("resourceSelector".into(), original["resourceSelector"].clone()),
            None => v1.insert("all".into(), json!(true)),
        };
        converted.push(Value::Object(v1));
    }
    if let Some(at) = object.pointer_mut(list.pointer) {
        *at = json!(converted);
    }
    if !v1alpha2_only.is_empty() {
        set_annotation(object, list.v1alpha2_only, &v1alpha2_only);
    }
}

/// Removes annotation `key` and returns the claims it held (none if it was not a JSON list).
fn take_annotation(object: &mut Value, key: &str) -> Vec<Value> {
    let Some(annotations) = object.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) else { return Vec::new() };
    let taken = annotations.remove(key);
    if annotations.is_empty() {
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove("annotations");
        }
    }
    taken.as_ref().and_then(Value::as_str).and_then(|text| serde_json::from_str::<Vec<Value>>(text).ok()).unwrap_or_default()
}

fn set_annotation(object: &mut Value, key: &str, claims: &[Value]) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations[key] = json!(Value::Array(claims.to_vec()).to_string());
}

/// Checks a `v1alpha2` APIExport's `spec.resources` and `spec.permissionClaims`, as kcp's CRD schema does.
pub fn check_export(object: &Value, causes: &mut Vec<Cause>) {
    let mut seen = Vec::new();
    for (index, resource) in object.pointer("/spec/resources").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let field = format!("spec.resources[{index}]");
        let text = |key: &str| resource.get(key).and_then(Value::as_str).unwrap_or_default();
        if seen.contains(&(text("name"), text("group"))) {
            causes.push(duplicate(&field, &format!("{}.{}", text("name"), text("group"))));
        }
        seen.push((text("name"), text("group")));
        if text("name").is_empty() {
            causes.push(Cause::required(format!("{field}.name")));
        }
        let group = if text("group").is_empty() { "core" } else { text("group") };
        match resource.get("schema").and_then(Value::as_str) {
            None | Some("") => causes.push(Cause::required(format!("{field}.schema"))),
            Some(schema) if !schema.ends_with(&format!(".{}.{group}", text("name")))
                || !crate::registry::validate::is_dns_subdomain(schema) || schema.split('.').count() < 3 =>
            {
                causes.push(Cause::invalid(format!("{field}.schema"), schema, "must be the name of an APIResourceSchema: <prefix>.<name>.<group>"));
            }
            Some(_) => {}
        }
        if resource.pointer("/storage/virtual").is_some_and(|v| !v.is_null()) {
            causes.push(Cause::not_supported(format!("{field}.storage"), "virtual", &["crd"]));
        }
    }
    check_claims(object.pointer("/spec/permissionClaims"), false, causes);
}

/// Checks a `v1alpha2` APIBinding's `spec.permissionClaims`.
pub fn check_binding(object: &Value, causes: &mut Vec<Cause>) {
    check_claims(object.pointer("/spec/permissionClaims"), true, causes);
}

/// `v1alpha2` claims: a resource, at least one verb, and a binding's `selector` (exactly one of `matchAll`,
/// `matchLabels`, `matchExpressions`) and `state`.
fn check_claims(claims: Option<&Value>, binding: bool, causes: &mut Vec<Cause>) {
    let named = super::api_export::claims_named(claims, causes);
    for (index, (field, claim)) in named.iter().enumerate() {
        let (field, claim) = (field.as_str(), *claim);
        // kcp's list map keys: one claim per group, resource and identity hash.
        if named[..index].iter().any(|(_, earlier)| same_resource(earlier, claim)) {
            let text = |key: &str| claim.get(key).and_then(Value::as_str).unwrap_or_default();
            causes.push(duplicate(&field, &format!("{}.{}", text("resource"), text("group"))));
        }
        match claim.get("verbs").and_then(Value::as_array) {
            Some(verbs) if !verbs.is_empty() && verbs.iter().all(|v| v.as_str().is_some_and(|v| !v.is_empty())) => {}
            Some(verbs) if !verbs.is_empty() => causes.push(Cause::invalid(format!("{field}.verbs"), &Value::Array(verbs.clone()).to_string(), "must be verbs")),
            _ => causes.push(Cause::required(format!("{field}.verbs"))),
        }
        if !binding {
            continue;
        }
        check_selector(claim.get("selector"), &format!("{field}.selector"), causes);
        match claim.get("state").and_then(Value::as_str) {
            Some("Accepted" | "Rejected") => {}
            Some(other) => causes.push(Cause::not_supported(format!("{field}.state"), other, &["Accepted", "Rejected"])),
            None => causes.push(Cause::required(format!("{field}.state"))),
        }
    }
}

/// kube's `field.Duplicate`.
fn duplicate(field: &str, value: &str) -> Cause {
    Cause { reason: "FieldValueDuplicate", message: format!("Duplicate value: {value:?}"), field: field.to_owned() }
}

fn check_selector(selector: Option<&Value>, field: &str, causes: &mut Vec<Cause>) {
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        causes.push(Cause::required(field.to_owned()));
        return;
    };
    let set = |key: &str| selector.get(key).is_some_and(|v| v.as_object().is_some_and(|m| !m.is_empty()) || v.as_array().is_some_and(|a| !a.is_empty()));
    let match_all = selector.get("matchAll").and_then(Value::as_bool) == Some(true);
    match (match_all, set("matchLabels") || set("matchExpressions")) {
        (true, true) => causes.push(Cause::invalid(field.to_owned(), "", "either \"matchAll\" or \"matchLabels\"/\"matchExpressions\" must be set, not both")),
        (false, false) => causes.push(Cause::required(format!("{field}.matchAll"))),
        _ => {}
    }
}

#[cfg(test)]
mod tests;

//! APIExport (kcp's `apis.kcp.io/v1alpha1`, cluster-scoped): a provider's offer of the resources its
//! APIResourceSchemas define (`spec.latestResourceSchemas`), under an identity: the secret `kcp-system/<export>`
//! holds a random key, and `status.identityHash`, the hex SHA-256 of that key, is the storage identity of every
//! object made through a binding to the export (`docs/storage-keys.md`). The APIs controller
//! (`controllers/apis.rs`) makes the secret, sets the hash and makes the export's APIExportEndpointSlice.
//!
//! `status.virtualWorkspaces` is computed from the server's address when the object is read: the URL of the
//! APIExport virtual workspace, `<server>/services/apiexport/<logical cluster>/<export>`.
//!
//! Served in two versions of one stored object, as kcp serves it: `v1alpha1`, the stored form, and `v1alpha2`
//! (`spec.resources`, claims with `verbs`), converted by `api_conversion`. The preferred version is `v1alpha2`, as
//! in kcp (since v0.28 it stores `v1alpha2`, and its CRD discovery orders versions by kube's priority), by
//! `ResourceTable::groups`: kubectl 1.32 reads `kubectl get apiexports` through `v1alpha2`, and finds the kinds
//! that only `v1alpha1` has (schemas, endpoint slices) in `v1alpha1`.

use std::sync::Arc;

use kspaces_storage::SpaceName;
use serde_json::{json, Map, Value};

use super::api_conversion::{self, is_v1alpha2, V1ALPHA2};
use super::workspace::BaseUrl;
use super::workspace_type::is_path;
use super::{kcp_row, kind_schema, Context, Kind, Rules};
use crate::registry::strategy::{Strategy, View};
use crate::registry::ResourceInfo;
use crate::status::Cause;

/// `apis.kcp.io/v1alpha1 APIExport`: its row, definition and strategy.
pub const KIND: Kind = Kind { rows, definitions, rules };

/// kcp's API group of exports, bindings and schemas.
pub const GROUP: &str = crate::apis::kcp::APIS_GROUP;
pub const NAME: &str = "APIExport";
pub const PLURAL: &str = "apiexports";
const DEFINITION: &str = "io.kcp.apis.v1alpha1.APIExport";
const DEFINITION_V1ALPHA2: &str = "io.kcp.apis.v1alpha2.APIExport";
/// Where an export's identity secret is made, in the export's workspace.
pub const IDENTITY_NAMESPACE: &str = "kcp-system";
/// The identity secret's key (kcp's `SecretKeyAPIExportIdentity`).
pub const IDENTITY_KEY: &str = "key";

/// `v1alpha1` first: the stored form, the row the server's own readers and writers find by kind.
fn rows() -> Vec<ResourceInfo> {
    vec![kcp_row(GROUP, NAME, PLURAL, DEFINITION, true), v1alpha2_row(NAME, PLURAL, DEFINITION_V1ALPHA2)]
}

/// The `v1alpha2` row of one of kcp's kinds served in both versions.
pub(crate) fn v1alpha2_row(kind: &str, plural: &str, definition: &str) -> ResourceInfo {
    ResourceInfo { version: V1ALPHA2.into(), ..kcp_row(GROUP, kind, plural, definition, true) }
}

/// A `v1alpha2` permission claim (`scoped`: a binding's, with its selector and state).
pub(crate) fn claim_schema_v1alpha2(description: &str, scoped: bool) -> Value {
    let mut schema = json!({"type": "object", "description": description, "required": ["resource", "verbs"], "properties": {
        "group": {"type": "string", "description": "The claimed resource's group; empty for the core group."},
        "resource": {"type": "string", "description": "The claimed resource (plural)."},
        "identityHash": {"type": "string", "description": "The identity hash of the export the claimed resource comes from."},
        "verbs": {"type": "array", "minItems": 1, "items": {"type": "string"},
            "description": "The verbs claimed; [\"*\"] for every verb (only that is in effect in kspaces)."},
        "defaultSelector": selector_schema("The selector default bindings accept the claim with."),
    }});
    if scoped {
        schema["properties"]["selector"] = selector_schema("Which objects of the resource the claim covers: matchAll, or labels.");
        schema["properties"]["state"] = json!({"type": "string", "description": "Accepted or Rejected (bindings only)."});
    }
    schema
}

fn selector_schema(description: &str) -> Value {
    json!({"type": "object", "description": description, "properties": {
        "matchAll": {"type": "boolean", "description": "Every object of the resource."},
        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
        "matchExpressions": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
    }})
}

/// A permission claim, as exports and bindings write it.
pub(crate) fn claim_schema(description: &str) -> Value {
    json!({"type": "object", "description": description, "required": ["resource"], "properties": {
        "group": {"type": "string", "description": "The claimed resource's group; empty for the core group."},
        "resource": {"type": "string", "description": "The claimed resource (plural)."},
        "identityHash": {"type": "string", "description": "The identity hash of the export the claimed resource comes from."},
        "all": {"type": "boolean", "description": "Every object of the resource."},
        "resourceSelector": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "namespace": {"type": "string"}}}, "description": "Only these objects."},
        "state": {"type": "string", "description": "Accepted or Rejected (bindings only)."},
    }})
}

fn definitions() -> Map<String, Value> {
    let mut definitions = Map::new();
    definitions.insert(DEFINITION.into(), kind_schema(
        "APIExport registers an API and implementation to allow consumption by others through APIBindings.",
        json!({"type": "object", "description": "APIExportSpec defines the desired state of APIExport.", "properties": {
            "latestResourceSchemas": {"type": "array", "items": {"type": "string"},
                "description": "The APIResourceSchemas (names, in this workspace) of the exported resources."},
            "identity": {"type": "object", "properties": {"secretRef": {"type": "object", "properties": {
                "namespace": {"type": "string"}, "name": {"type": "string"}}}},
                "description": "The secret holding the export's identity key; made in kcp-system when unset."},
            "maximalPermissionPolicy": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "permissionClaims": {"type": "array", "items": claim_schema("A resource the provider claims access to in consumers' workspaces.")},
        }}),
        json!({"type": "object", "description": "APIExportStatus defines the observed state of APIExport.", "properties": {
            "identityHash": {"type": "string", "description": "The hex SHA-256 of the identity key."},
            "conditions": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            "virtualWorkspaces": {"type": "array", "items": {"type": "object", "properties": {"url": {"type": "string"}}}},
        }}),
    ));
    definitions.insert(DEFINITION_V1ALPHA2.into(), kind_schema(
        "APIExport registers an API and implementation to allow consumption by others through APIBindings.",
        json!({"type": "object", "description": "APIExportSpec defines the desired state of APIExport.", "properties": {
            "resources": {"type": "array", "description": "The exported resources, each from an APIResourceSchema of this workspace.",
                "items": {"type": "object", "required": ["name", "group", "schema"], "properties": {
                    "name": {"type": "string", "description": "The resource's plural name."},
                    "group": {"type": "string", "description": "The resource's group; empty for the core group."},
                    "schema": {"type": "string", "description": "The APIResourceSchema: <version>.<name>.<group>."},
                    "storage": {"type": "object", "description": "How objects are stored: crd (the only kind kspaces serves).",
                        "properties": {"crd": {"type": "object"}, "virtual": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
                }}},
            "identity": {"type": "object", "properties": {"secretRef": {"type": "object", "properties": {
                "namespace": {"type": "string"}, "name": {"type": "string"}}}},
                "description": "The secret holding the export's identity key; made in kcp-system when unset."},
            "maximalPermissionPolicy": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "permissionClaims": {"type": "array", "items": claim_schema_v1alpha2("A resource the provider claims access to in consumers' workspaces.", false)},
        }}),
        json!({"type": "object", "description": "APIExportStatus defines the observed state of APIExport.", "properties": {
            "identityHash": {"type": "string", "description": "The hex SHA-256 of the identity key."},
            "conditions": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            "virtualWorkspaces": {"type": "array", "items": {"type": "object", "properties": {"url": {"type": "string"}}}},
        }}),
    ));
    definitions
}

fn rules(context: &Context, rules: &mut Rules) {
    rules.strategy(GROUP, NAME, Arc::new(ExportStrategy { base_url: context.base_url.clone() }));
}

/// The names of the schemas an export serves (v1alpha1's `latestResourceSchemas`, v1alpha2's `resources[].schema`).
pub fn schemas(export: &Value) -> Vec<String> {
    let spec = export.get("spec");
    let latest = spec.and_then(|s| s.get("latestResourceSchemas")).and_then(Value::as_array).into_iter().flatten();
    let resources = spec.and_then(|s| s.get("resources")).and_then(Value::as_array).into_iter().flatten().filter_map(|r| r.get("schema"));
    latest.chain(resources).filter_map(Value::as_str).map(str::to_owned).collect()
}

/// The export's identity hash, once the controller set it.
pub fn identity_hash(export: &Value) -> Option<&str> {
    export.pointer("/status/identityHash").and_then(Value::as_str).filter(|h| !h.is_empty())
}

/// The URL of the APIExport virtual workspace of export `name` in logical cluster `cluster`.
pub fn virtual_workspace_url(base: &str, cluster: &str, name: &str) -> String {
    format!("{base}/services/apiexport/{cluster}/{name}")
}

pub struct ExportStrategy {
    base_url: Arc<BaseUrl>,
}

impl Strategy for ExportStrategy {
    fn view(&self) -> Option<&dyn View> {
        Some(self)
    }

    fn validate(&self, resource: &ResourceInfo, object: &Value, _old: Option<&Value>, causes: &mut Vec<Cause>) {
        if is_v1alpha2(&resource.version) {
            return api_conversion::check_export(object, causes);
        }
        for (index, schema) in object.pointer("/spec/latestResourceSchemas").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let field = format!("spec.latestResourceSchemas[{index}]");
            match schema.as_str() {
                Some(name) if name.split('.').count() >= 3 && crate::registry::validate::is_dns_subdomain(name) => {}
                _ => causes.push(Cause::invalid(field, &schema.to_string(), "must be the name of an APIResourceSchema: <prefix>.<plural>.<group>")),
            }
        }
        check_claims(object.pointer("/spec/permissionClaims"), false, causes);
    }

    /// A `v1alpha2` export is stored as `v1alpha1`.
    fn to_storage(&self, resource: &ResourceInfo, _space: &SpaceName, object: &mut Value, _old: Option<&Value>) {
        if is_v1alpha2(&resource.version) {
            api_conversion::export_to_v1alpha1(object);
        }
    }
}

impl View for ExportStrategy {
    fn to_request(&self, resource: &ResourceInfo, object: &mut Value) {
        if is_v1alpha2(&resource.version) {
            api_conversion::export_to_v1alpha2(object);
        }
        let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str).map(str::to_owned);
        let (Some(cluster), Some(name)) = (text("/metadata/annotations/kcp.io~1cluster"), text("/metadata/name")) else { return };
        if !object.get("status").is_some_and(Value::is_object) {
            object["status"] = json!({});
        }
        object["status"]["virtualWorkspaces"] = json!([{"url": virtual_workspace_url(&self.base_url.get(), &cluster, &name)}]);
    }
}

/// Checks a `{path, name}` reference to an APIExport at `field` (`spec.reference.export` of a binding), and that
/// `whole` (the reference, or the field holding it) is what `old` had: it never changes once written.
pub(crate) fn check_export_reference(object: &Value, old: Option<&Value>, field: &str, whole: &str, causes: &mut Vec<Cause>) {
    let pointer = |field: &str| format!("/{}", field.replace('.', "/"));
    match object.pointer(&format!("{}/name", pointer(field))).and_then(Value::as_str) {
        // Export names are DNS subdomains, as kcp's own (`tenancy.kcp.io`).
        Some(name) if crate::registry::validate::is_dns_subdomain(name) => {}
        Some(name) => causes.push(Cause::invalid(format!("{field}.name"), name,
            "must be an APIExport's name: a DNS subdomain (lowercase letters, digits, '-' and '.')")),
        None => causes.push(Cause::required(format!("{field}.name"))),
    }
    if let Some(path) = object.pointer(&format!("{}/path", pointer(field))).and_then(Value::as_str).filter(|p| !p.is_empty() && !is_path(p)) {
        causes.push(Cause::invalid(format!("{field}.path"), path, "must be a workspace path: DNS labels joined by ':'"));
    }
    if old.is_some_and(|old| old.pointer(&pointer(whole)) != object.pointer(&pointer(whole))) {
        causes.push(Cause::invalid(whole, "", "APIExport reference must not be changed"));
    }
}

/// The claims at `spec.permissionClaims` with their field paths, each naming a resource (a list that is not one,
/// or a claim without a resource, is reported in `causes`); shared by both versions' checks.
pub(crate) fn claims_named<'a>(claims: Option<&'a Value>, causes: &mut Vec<Cause>) -> Vec<(String, &'a Value)> {
    let Some(claims) = claims.filter(|c| !c.is_null()) else { return Vec::new() };
    let Some(claims) = claims.as_array() else {
        causes.push(Cause::invalid("spec.permissionClaims", &claims.to_string(), "must be a list"));
        return Vec::new();
    };
    claims.iter().enumerate().map(|(index, claim)| {
        let field = format!("spec.permissionClaims[{index}]");
        if claim.get("resource").and_then(Value::as_str).is_none_or(str::is_empty) {
            causes.push(Cause::required(format!("{field}.resource")));
        }
        (field, claim)
    }).collect()
}

/// Checks permission claims at `spec.permissionClaims`: a resource, and exactly one of `all: true` or a
/// `resourceSelector`; a binding's also a `state` of Accepted or Rejected.
pub(crate) fn check_claims(claims: Option<&Value>, binding: bool, causes: &mut Vec<Cause>) {
    for (field, claim) in claims_named(claims, causes) {
        let all = claim.get("all").and_then(Value::as_bool).unwrap_or(false);
        let selector = claim.get("resourceSelector").and_then(Value::as_array).is_some_and(|s| !s.is_empty());
        match (all, selector) {
            (true, true) => causes.push(Cause::invalid(format!("{field}.resourceSelector"), "", "either \"all\" or \"resourceSelector\" must be set, not both")),
            (false, false) => causes.push(Cause::required(format!("{field}.all"))),
            _ => {}
        }
        for (at, selector) in claim.get("resourceSelector").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let empty = |key: &str| selector.get(key).and_then(Value::as_str).is_none_or(str::is_empty);
            if empty("name") && empty("namespace") {
                causes.push(Cause::required(format!("{field}.resourceSelector[{at}].name")));
            }
        }
        if binding {
            match claim.get("state").and_then(Value::as_str) {
                Some("Accepted" | "Rejected") => {}
                Some(other) => causes.push(Cause::not_supported(format!("{field}.state"), other, &["Accepted", "Rejected"])),
                None => causes.push(Cause::required(format!("{field}.state"))),
            }
        }
    }
}

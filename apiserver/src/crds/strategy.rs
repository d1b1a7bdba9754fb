//! Create and update rules of CustomResourceDefinition objects, and of the custom resources they define.
//!
//! A CRD gets kube's defaults, the cleanup finalizer and a status whose `NamesAccepted` and `Established`
//! conditions are true as soon as it is stored (the server serves it from that moment, see `Crds`). A tenant
//! may not create, change or delete a CRD whose name a forced system CRD in its range holds.

use kspaces_crd::definition::{self, Definition, CLEANUP_FINALIZER};
use kspaces_crd::FieldError;
use kspaces_storage::SpaceName;
use serde_json::{json, Value};

use crate::registry::store::{now, Part};
use crate::registry::{ResourceInfo, Subresource};
use crate::state::ApiServer;
use crate::status::{ApiError, ApiResult, Cause};

pub fn is_crd(resource: &ResourceInfo) -> bool {
    resource.is("apiextensions.k8s.io", "CustomResourceDefinition")
}

impl From<FieldError> for Cause {
    fn from(error: FieldError) -> Cause {
        Cause { reason: error.reason, message: error.message, field: error.field }
    }
}

/// Defaults, the cleanup finalizer and the initial status of a new CRD.
pub fn prepare_create(resource: &ResourceInfo, object: &mut Value) {
    if !is_crd(resource) || !object.is_object() {
        return;
    }
    definition::defaults(object);
    let finalizers = object["metadata"].get("finalizers").and_then(Value::as_array).cloned().unwrap_or_default();
    if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
        let mut finalizers = finalizers;
        finalizers.push(json!(CLEANUP_FINALIZER));
        object["metadata"]["finalizers"] = json!(finalizers);
    }
    let time = now();
    let condition = |kind: &str, reason: &str, message: &str| {
        json!({"type": kind, "status": "True", "lastTransitionTime": time, "reason": reason, "message": message})
    };
    object["status"] = json!({
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "acceptedNames": accepted_names(object),
        "storedVersions": storage_version(object).into_iter().collect::<Vec<_>>(),
    });
}

/// Keeps a CRD's status in step with its spec: accepted names, and every version ever stored.
pub fn prepare_update(resource: &ResourceInfo, new: &mut Value, part: Part) {
    if !is_crd(resource) || !new.is_object() || part == Part::Finalize {
        return;
    }
    definition::defaults(new);
    if !new.get("status").is_some_and(Value::is_object) {
        new["status"] = json!({});
    }
    new["status"]["acceptedNames"] = accepted_names(new);
    let mut stored: Vec<Value> = new["status"].get("storedVersions").and_then(Value::as_array).cloned().unwrap_or_default();
    if let Some(version) = storage_version(new) {
        if !stored.iter().any(|v| v == version.as_str()) {
            stored.push(json!(version));
        }
    }
    new["status"]["storedVersions"] = json!(stored);
}

fn accepted_names(crd: &Value) -> Value {
    let mut names = crd.pointer("/spec/names").cloned().unwrap_or_else(|| json!({}));
    if let Some(names) = names.as_object_mut() {
        names.retain(|k, _| ["plural", "singular", "kind", "listKind", "shortNames", "categories"].contains(&k.as_str()));
    }
    names
}

fn storage_version(crd: &Value) -> Option<String> {
    crd.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").and_then(Value::as_str))
        .map(str::to_owned)
}

/// A CRD's validation causes (kube's `ValidateCustomResourceDefinition`, see `kspaces_crd::definition`).
pub fn check(resource: &ResourceInfo, object: &Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
    if !is_crd(resource) {
        return;
    }
    if let Err(errors) = Definition::parse(object) {
        causes.extend(errors.into_iter().map(Cause::from));
    }
    if let Some(old) = old {
        for (pointer, field) in [("/spec/group", "spec.group"), ("/spec/names/plural", "spec.names.plural")] {
            if old.pointer(pointer) != object.pointer(pointer) {
                causes.push(Cause::invalid(field, object.pointer(pointer).and_then(Value::as_str).unwrap_or_default(), "field is immutable"));
            }
        }
        let scope = |v: &Value| v.pointer("/spec/scope").and_then(Value::as_str).map(|s| if s == "Tenant" { "Cluster" } else { s }).map(str::to_owned);
        if scope(old) != scope(object) {
            causes.push(Cause::invalid("spec.scope", &scope(object).unwrap_or_default(), "field is immutable"));
        }
    }
}

/// Refuses a tenant's write or delete of a CRD named like a forced system CRD in its range (Arktos answers 500
/// here; kube's shape for a refused write is 403).
pub fn admit(server: &ApiServer, resource: &ResourceInfo, space: &SpaceName, name: &str) -> ApiResult<()> {
    if !is_crd(resource) || name.is_empty() {
        return Ok(());
    }
    match server.crds.forced_on(space, name) {
        Some(forced) => Err(ApiError::forbidden(format!(
            "customresourcedefinitions.apiextensions.k8s.io \"{name}\" is forbidden: the system CRD {} is forced on this tenant \
             (label arktos.futurewei.com/crd-sharing-policy: forced); a tenant cannot create, change or delete a CRD of that name",
            forced.name))),
        None => Ok(()),
    }
}

/// Refuses creating objects of a CRD being deleted, as kube does.
pub fn admit_custom_create(resource: &ResourceInfo) -> ApiResult<()> {
    match &resource.custom {
        Some(custom) if custom.definition.terminating => Err(ApiError::new(
            405,
            "MethodNotAllowed",
            "create not allowed while custom resource definition is terminating",
        )),
        _ => Ok(()),
    }
}

/// Custom resources: on create, `status` is the status subresource's alone (dropped from the body).
pub fn prepare_custom_create(resource: &ResourceInfo, object: &mut Value) {
    if resource.custom.is_some() && resource.has_subresource(Subresource::Status) {
        if let Some(object) = object.as_object_mut() {
            object.remove("status");
        }
    }
}

/// Custom resources: pruned, defaulted and validated against the request version's schema, then stored with
/// the storage version's `apiVersion` (conversion `None` changes nothing else).
pub fn check_custom(resource: &ResourceInfo, object: &mut Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
    let Some(custom) = &resource.custom else { return };
    let Some(version) = custom.version() else { return };
    version.schema.prune(object);
    version.schema.default(object);
    causes.extend(version.schema.validate(object, old).into_iter().map(Cause::from));
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), json!(custom.storage_api_version()));
    }
}

/// The `generation` rule of custom resources: bumped by any change but to `metadata` (and to `status`, when
/// it is a subresource).
pub fn custom_spec_changed(resource: &ResourceInfo, old: &Value, new: &Value) -> bool {
    let status = resource.has_subresource(Subresource::Status);
    let strip = |v: &Value| -> Value {
        let mut v = v.clone();
        if let Some(map) = v.as_object_mut() {
            map.remove("metadata");
            map.remove("apiVersion");
            map.remove("kind");
            if status {
                map.remove("status");
            }
        }
        v
    };
    strip(old) != strip(new)
}

/// True when a stored custom resource is in another version than the request's.
pub fn needs_conversion(resource: &ResourceInfo, object: &Value) -> bool {
    resource.custom.as_ref().is_some_and(|custom| {
        let stored = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
        stored.strip_prefix(custom.definition.group.as_str()).and_then(|v| v.strip_prefix('/')) != Some(resource.version.as_str())
    })
}

/// Rewrites a stored custom resource to the version the request asked for (conversion strategy `None`).
pub fn convert(resource: &ResourceInfo, object: &mut Value) {
    if needs_conversion(resource, object) {
        if let Some(map) = object.as_object_mut() {
            map.insert("apiVersion".into(), json!(resource.api_version()));
        }
    }
}

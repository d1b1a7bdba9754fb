//! Custom resources (every version of every CRD): pruned, defaulted and validated against the request version's
//! structural schema, stored with the storage version's `apiVersion` (conversion `None` changes nothing else),
//! and shown in the version a request asks for. On create, `status` is the status subresource's alone.
//!
//! Admission: no new objects while their CRD is being deleted (kube's 405).

use std::sync::Arc;

use async_trait::async_trait;
use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::{json, Value};

use super::{Context, Kind, Rules};
use crate::registry::admission::{Admission, Attributes, Operation};
use crate::registry::strategy::{Part, Strategy, View};
use crate::registry::{GenericStore, ResourceInfo, Subresource};
use crate::status::{ApiError, ApiResult, Cause};

/// Every custom resource: its strategy, and no creates while its CRD terminates.
pub const KIND: Kind = Kind::rules(|_: &Context, rules: &mut Rules| {
    rules.custom(Arc::new(CustomResourceStrategy));
    rules.admit(Arc::new(TerminatingDefinition));
});

/// The rules of every custom resource.
pub struct CustomResourceStrategy;

/// Prunes fields the schema does not declare and fills in its defaults.
fn prune_and_default(resource: &ResourceInfo, object: &mut Value) {
    if let Some(version) = resource.custom.as_ref().and_then(|c| c.version()) {
        version.schema.prune(object);
        version.schema.default(object);
    }
}

#[async_trait]
impl Strategy for CustomResourceStrategy {
    fn view(&self) -> Option<&dyn View> {
        Some(self)
    }

    fn prepare_create(&self, resource: &ResourceInfo, _space: &SpaceName, _caller: Option<&Caller>, object: &mut Value) {
        if resource.has_subresource(Subresource::Status) {
            if let Some(object) = object.as_object_mut() {
                object.remove("status");
            }
        }
        prune_and_default(resource, object);
    }

    fn prepare_update(&self, resource: &ResourceInfo, _space: &SpaceName, _old: &Value, new: &mut Value, _part: Part) {
        prune_and_default(resource, new);
    }

    fn validate(&self, resource: &ResourceInfo, object: &Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
        if let Some(version) = resource.custom.as_ref().and_then(|c| c.version()) {
            causes.extend(version.schema.validate(object, old).into_iter().map(Cause::from));
        }
    }

    /// Bumped by any change but to `metadata` (and to `status`, when it is a subresource).
    fn generation_changed(&self, resource: &ResourceInfo, old: &Value, new: &Value) -> bool {
        let status = resource.has_subresource(Subresource::Status);
        let counted = |key: &String| !(matches!(key.as_str(), "metadata" | "apiVersion" | "kind") || (status && key == "status"));
        match (old.as_object(), new.as_object()) {
            (Some(old), Some(new)) => {
                old.iter().filter(|(k, _)| counted(k)).any(|(k, v)| new.get(k) != Some(v))
                    || new.keys().filter(|k| counted(k)).any(|k| !old.contains_key(k))
            }
            _ => old != new,
        }
    }

    fn to_storage(&self, resource: &ResourceInfo, _space: &SpaceName, object: &mut Value, _old: Option<&Value>) {
        if let (Some(custom), Some(map)) = (&resource.custom, object.as_object_mut()) {
            map.insert("apiVersion".into(), json!(custom.storage_api_version()));
        }
    }
}

impl View for CustomResourceStrategy {
    /// A stored object in another version than the request's gets the request's `apiVersion` (conversion `None`).
    fn to_request(&self, resource: &ResourceInfo, object: &mut Value) {
        let Some(custom) = &resource.custom else { return };
        let stored = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
        if stored.strip_prefix(custom.definition.group.as_str()).and_then(|v| v.strip_prefix('/')) != Some(resource.version.as_str()) {
            if let Some(map) = object.as_object_mut() {
                map.insert("apiVersion".into(), json!(resource.api_version()));
            }
        }
    }
}

/// Refuses creating objects of a CRD being deleted, as kube does.
pub struct TerminatingDefinition;

#[async_trait]
impl Admission for TerminatingDefinition {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        operation == Operation::Create && resource.custom.as_ref().is_some_and(|c| c.definition.terminating)
    }

    async fn admit(&self, _registry: &GenericStore, _attributes: &Attributes<'_>) -> ApiResult<()> {
        Err(ApiError::new(405, "MethodNotAllowed", "create not allowed while custom resource definition is terminating"))
    }
}

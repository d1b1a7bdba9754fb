//! Custom resources (every version of every CRD): pruned, defaulted and validated against the request version's
//! structural schema, stored with the storage version's `apiVersion` (conversion `None` changes nothing else),
//! and shown in the version a request asks for. On create, `status` is the status subresource's alone.
//!
//! CEL rules: an object whose rules' estimated cost is past kube's runtime budget is refused before they run
//! (see `kspaces_crd::cost`); rules past a small estimate run on tokio's blocking pool, at most
//! `COSTLY_PER_SPACE` at once per space, so the threads that serve requests keep serving.
//!
//! Admission: no new objects while their CRD is being deleted (kube's 405).
//!
//! Conversion `Webhook`: `conversion` calls the CRD's webhook; `to_request` leaves those objects to it.

mod conversion;

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::{json, Value};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{Context, Kind, Rules};
use crate::registry::admission::{Admission, Attributes, Operation};
use crate::registry::strategy::{Part, Strategy, View};
use crate::registry::{GenericStore, ResourceInfo, Subresource};
use crate::status::{ApiError, ApiResult, Cause};

/// Every custom resource: its strategy, and no creates while its CRD terminates.
pub const KIND: Kind = Kind::rules(|context: &Context, rules: &mut Rules| {
    let client = crate::kinds::admission_webhook::endpoint::Client::new(context);
    rules.custom(Arc::new(CustomResourceStrategy { converter: conversion::Converter::new(client, context.resolver.clone()) }));
    rules.admit(Arc::new(TerminatingDefinition));
});

/// The rules of every custom resource; `converter` calls conversion webhooks.
pub struct CustomResourceStrategy {
    converter: conversion::Converter,
}

/// Whether `resource`'s CRD converts through a webhook.
fn webhook_converted(resource: &ResourceInfo) -> bool {
    resource.custom.as_ref().is_some_and(|c| matches!(c.definition.conversion, kspaces_crd::definition::Conversion::Webhook { .. }))
}

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

    /// The OpenAPI checks, the CEL cost bound, and CEL rules cheap enough to run here (`validate_costly` runs
    /// the others).
    fn validate(&self, resource: &ResourceInfo, object: &Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
        if let Some(version) = resource.custom.as_ref().and_then(|c| c.version()) {
            let (errors, _pending) = version.schema.validate_inline(object, old, INLINE_CEL_COST);
            causes.extend(errors.into_iter().map(Cause::from));
        }
    }

    /// CEL rules past `INLINE_CEL_COST` (within kube's runtime budget, which `validate` checked), on the
    /// blocking pool.
    async fn validate_costly(&self, resource: &ResourceInfo, space: &SpaceName, object: &Value, old: Option<&Value>) -> ApiResult<()> {
        let Some(version) = resource.custom.as_ref().and_then(|c| c.version()) else { return Ok(()) };
        if !version.schema.rules_pending(object, old, INLINE_CEL_COST) {
            return Ok(());
        }
        let permit = costly_permit(space).await?;
        let (schema, object, old) = (version.schema.clone(), object.clone(), old.cloned());
        let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_owned();
        let errors = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            schema.validate_rules(&object, old.as_ref())
        })
        .await
        .map_err(|_| ApiError::internal("CEL validation did not finish"))?;
        if errors.is_empty() {
            return Ok(());
        }
        Err(ApiError::invalid(&resource.group, &resource.kind, &name, errors.into_iter().map(Cause::from).collect()))
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

    fn converts(&self, resource: &ResourceInfo) -> bool {
        webhook_converted(resource)
    }

    async fn convert(&self, registry: &GenericStore, resource: &ResourceInfo, space: &SpaceName, objects: &mut [Value], to_storage: bool) -> ApiResult<()> {
        self.converter.convert(registry, resource, space, objects, to_storage).await
    }

    fn to_storage(&self, resource: &ResourceInfo, _space: &SpaceName, object: &mut Value, _old: Option<&Value>) {
        if let (Some(custom), Some(map)) = (&resource.custom, object.as_object_mut()) {
            map.insert("apiVersion".into(), json!(custom.storage_api_version()));
        }
    }
}

impl View for CustomResourceStrategy {
    /// A stored object in another version than the request's gets the request's `apiVersion` (conversion `None`;
    /// a webhook's conversion is `Strategy::convert`'s).
    fn to_request(&self, resource: &ResourceInfo, object: &mut Value) {
        let Some(custom) = resource.custom.as_ref().filter(|_| !webhook_converted(resource)) else { return };
        let stored = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
        if stored.strip_prefix(custom.definition.group.as_str()).and_then(|v| v.strip_prefix('/')) != Some(resource.version.as_str()) {
            if let Some(map) = object.as_object_mut() {
                map.insert("apiVersion".into(), json!(resource.api_version()));
            }
        }
    }
}

/// The estimated CEL cost (kube's cost units) past which an object's rules leave the serving thread: about a
/// millisecond of work; common rules on common objects cost far less and run inline.
const INLINE_CEL_COST: u64 = 10_000;
/// How many costly CEL validations may run at once per space (spaces share `BUCKETS` semaphores by hash).
const COSTLY_PER_SPACE: usize = 2;
const BUCKETS: usize = 64;

/// A seat for one costly CEL validation of `space`'s objects.
async fn costly_permit(space: &SpaceName) -> ApiResult<OwnedSemaphorePermit> {
    static SEATS: OnceLock<Vec<Arc<Semaphore>>> = OnceLock::new();
    let seats = SEATS.get_or_init(|| (0..BUCKETS).map(|_| Arc::new(Semaphore::new(COSTLY_PER_SPACE))).collect());
    let mut hasher = DefaultHasher::new();
    space.as_str().hash(&mut hasher);
    let seat = seats[(hasher.finish() % BUCKETS as u64) as usize].clone();
    seat.acquire_owned().await.map_err(|_| ApiError::internal("CEL validation seats closed"))
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

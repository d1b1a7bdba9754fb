//! `Strategy`: what one kind does differently from every other, as kube's `rest.RESTCreateStrategy`,
//! `RESTUpdateStrategy` and `RESTDeleteStrategy` say it for kube-apiserver's generic store. `GenericStore` asks
//! the `Strategies` table for a resource's strategy at each write; it never tests a kind itself.
//!
//! A kind that needs nothing of its own uses the default: no defaults, no validation beyond the generic
//! metadata and typed checks, `generation` counted by `spec`. The implementations live in `crate::kinds`, one
//! file per kind.

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::Value;

use super::{GenericStore, ResourceInfo};
use crate::status::{ApiResult, Cause};

/// Which part of an object a write changes: the main resource, `/status`, or `/finalize` (the content
/// finalizers in `spec.finalizers` of resources with that subresource: namespaces, tenants).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Main,
    Status,
    Finalize,
    /// `/approval`: `status.conditions` only.
    Approval,
}

impl Part {
    pub fn of_subresource(subresource: &str) -> Part {
        match subresource {
            "status" => Part::Status,
            "finalize" => Part::Finalize,
            "approval" => Part::Approval,
            _ => Part::Main,
        }
    }
}

/// Held from reading what a write is checked against until the write is applied (see `Strategy::begin_write`).
pub type WriteGuard = Box<dyn Any + Send>;

/// One kind's rules for the generic store. Every method has the behaviour of a kind with no rules of its own.
#[async_trait]
pub trait Strategy: Send + Sync {
    /// How a request sees this kind's stored objects, when not exactly as they are stored (see `View`). A kind
    /// without one has its stored bytes sent as they are (lists stream them).
    fn view(&self) -> Option<&dyn View> {
        None
    }

    /// Completes a new object before it is validated: defaults and the fields the server sets (kube's
    /// `PrepareForCreate`, with the kind's defaulting). `caller` is `None` for the server's own writes.
    fn prepare_create(&self, _resource: &ResourceInfo, _space: &SpaceName, _caller: Option<&Caller>, _object: &mut Value) {}

    /// Keeps what a write of `part` may not change and recomputes what the server manages (kube's
    /// `PrepareForUpdate`). `old` is the object the write replaces, in the request's form.
    fn prepare_update(&self, _resource: &ResourceInfo, _space: &SpaceName, _old: &Value, _new: &mut Value, _part: Part) {}

    /// Whether `prepare_update` computes the status from the state of other objects (CRDs: which names are free),
    /// so that a write asking for no change may still change it: the server's no-op status writes are then not
    /// cut short.
    fn status_from_elsewhere(&self) -> bool {
        false
    }

    /// The kind's validation (kube's `Validate` and `ValidateUpdate`): every problem as a field cause. It
    /// never changes the object.
    fn validate(&self, _resource: &ResourceInfo, _object: &Value, _old: Option<&Value>, _causes: &mut Vec<Cause>) {}

    /// Validation too costly for a thread that serves other requests (custom resources' CEL rules past a small
    /// estimated cost), run once `validate` found nothing: it may run on the blocking pool. Its problems are one
    /// 422, as `validate`'s.
    async fn validate_costly(&self, _resource: &ResourceInfo, _space: &SpaceName, _object: &Value, _old: Option<&Value>) -> ApiResult<()> {
        Ok(())
    }

    /// Whether an update changed what `metadata.generation` counts: by default, a change of `spec`.
    fn generation_changed(&self, _resource: &ResourceInfo, old: &Value, new: &Value) -> bool {
        old.get("spec") != new.get("spec") && new.get("spec").is_some()
    }

    /// Turns a validated object into the form it is stored in (custom resources: the storage version; a view: the
    /// viewed kind; `View::to_request` turns it back). `old` is the stored object it replaces.
    fn to_storage(&self, _resource: &ResourceInfo, _space: &SpaceName, _object: &mut Value, _old: Option<&Value>) {}

    /// Whether this kind's objects change version through a call outside the server (CRD conversion webhooks):
    /// the store then has `convert` show them in the request's version and store them in the storage version.
    fn converts(&self, _resource: &ResourceInfo) -> bool {
        false
    }

    /// Converts `objects` of `space` to the request's version (`to_storage`: to the storage version), one call
    /// for the batch. Only called when `converts`.
    async fn convert(&self, _registry: &GenericStore, _resource: &ResourceInfo, _space: &SpaceName, _objects: &mut [Value], _to_storage: bool) -> ApiResult<()> {
        Ok(())
    }

    /// Taken before a create or update reads what it is checked against, and held until the write is applied
    /// to the caches that check it (CRDs: two CRDs cannot claim one name at once).
    async fn begin_write(&self, _resource: &ResourceInfo) -> Option<WriteGuard> {
        None
    }

    /// Whether an object may be deleted gracefully (pods: a bound pod waits for its kubelet).
    fn graceful_delete(&self) -> bool {
        false
    }

    /// Runs once a create is durable, before it is answered (a Tenant's space is made here, so its users can
    /// start at once). Not run for dry runs.
    async fn after_create(&self, _registry: &GenericStore, _space: &SpaceName, _object: &Value) -> ApiResult<()> {
        Ok(())
    }
}

/// How requests see a kind's stored objects when that is not as they are stored: another kind's objects (in root,
/// Workspaces are Tenants), another version (custom resources), fields computed when read (URLs from the server's
/// address). Kept apart from `Strategy` so that a kind without one is known to show its stored bytes unchanged.
pub trait View: Send + Sync {
    /// The row whose keys hold this kind's objects in `space`, when it is not the kind's own: the kind is then a
    /// view of another's stored objects. `to_request` shows a stored object in this kind's form,
    /// `Strategy::to_storage` turns one back.
    fn stored_as(&self, _resource: &ResourceInfo, _space: &SpaceName) -> Option<Arc<ResourceInfo>> {
        None
    }

    /// Turns a stored object into the form a request for `resource` sees (custom resources: its version).
    fn to_request(&self, _resource: &ResourceInfo, _object: &mut Value) {}

    /// Whether a request sees this stored object at all (root's Workspaces are the tenants but `system`).
    fn visible(&self, _resource: &ResourceInfo, _stored: &Value) -> bool {
        true
    }
}

/// The strategy of a kind with no rules of its own.
pub struct Plain;

impl Strategy for Plain {}

/// Which strategy serves which kind: one row per built-in kind with rules of its own, one strategy for every
/// custom resource, and `Plain` for the rest.
#[derive(Clone)]
pub struct Strategies {
    /// By group, then kind.
    by_kind: HashMap<String, HashMap<String, Arc<dyn Strategy>>>,
    custom: Arc<dyn Strategy>,
    plain: Arc<dyn Strategy>,
}

impl Default for Strategies {
    fn default() -> Strategies {
        Strategies { by_kind: HashMap::new(), custom: Arc::new(Plain), plain: Arc::new(Plain) }
    }
}

impl Strategies {
    /// Adds the strategy of `group`/`kind`.
    pub fn add(&mut self, group: &str, kind: &str, strategy: Arc<dyn Strategy>) {
        self.by_kind.entry(group.to_owned()).or_default().insert(kind.to_owned(), strategy);
    }

    /// Sets the strategy of every custom resource.
    pub fn set_custom(&mut self, strategy: Arc<dyn Strategy>) {
        self.custom = strategy;
    }

    /// The strategy of `resource`.
    pub fn of(&self, resource: &ResourceInfo) -> &dyn Strategy {
        if resource.custom.is_some() {
            return &*self.custom;
        }
        match self.by_kind.get(resource.group.as_str()).and_then(|kinds| kinds.get(resource.kind.as_str())) {
            Some(strategy) => &**strategy,
            None => &*self.plain,
        }
    }
}

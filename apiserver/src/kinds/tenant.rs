//! Tenant (Arktos' `pkg/registry/core/tenant/strategy.go`): `spec.storageClusterId` defaults to "0" and must be
//! an integer 0-63 given as a string; `spec.finalizers` starts as `[arktos]` and, with `storageClusterId`, cannot
//! be changed through the main resource (only through `/finalize`); `status.phase` is Active until the tenant
//! has a deletion timestamp, then Terminating. A new tenant's space is made before the create is answered, so
//! its users can start at once.
//!
//! Admission (Arktos' tenant lifecycle): nothing new is created in the space of a Terminating tenant, and the
//! system tenant cannot be deleted.

use std::sync::Arc;

use async_trait::async_trait;
use kspaces_authz::Caller;
use kspaces_storage::{ClusterId, SpaceName};
use serde_json::{json, Map, Value};

use super::{kind_schema, string, verbs, Context, Kind, Rules};
use crate::registry::admission::{Admission, Attributes, Operation, Question};
use crate::registry::strategy::{Part, Strategy, View};
use crate::tenancy::tree::is_home_root;
use crate::registry::{GenericStore, ResourceInfo, ResourceTable, Subresource};
use crate::status::{ApiError, ApiResult, Cause};
use crate::tenancy::{self, Phase, TenantCache, ALL};

/// `v1 Tenant`: its row, definition, strategy and lifecycle admission.
pub const KIND: Kind = Kind { rows, definitions, rules };

/// The OpenAPI definition name of Tenant (k8s-openapi has none).
pub const DEFINITION: &str = "io.k8s.api.core.v1.Tenant";

fn rows() -> Vec<ResourceInfo> {
    vec![
        ResourceInfo {
            group: String::new(),
            version: "v1".into(),
            kind: "Tenant".into(),
            plural: "tenants".into(),
            singular: "tenant".into(),
            short_names: vec![],
            categories: vec![],
            namespaced: false,
            subresources: vec![Subresource::Status, Subresource::Finalize],
            // Arktos serves no deletecollection on tenants.
            verbs: verbs(&["create", "delete", "get", "list", "patch", "update", "watch"]),
            definition: Some(DEFINITION.into()),
            system_only: true,
            custom: None,
        },
    ]
}

fn definitions() -> Map<String, Value> {
    let mut definitions = Map::new();
    definitions.insert(DEFINITION.into(), kind_schema(
        "Tenant is an Arktos tenant: a space of its own (namespaces, cluster-scoped objects, CRDs), reached at \
         /api/v1/tenants/<name>/... and /clusters/root:<name>/...",
        json!({"type": "object", "description": "TenantSpec describes a tenant.", "properties": {
            "storageClusterId": string("The storage cluster of the tenant, an integer 0-63 given as a string. Default \"0\"."),
            "finalizers": {"type": "array", "items": {"type": "string", "default": ""},
                "description": "Finalizers must be empty before the tenant is removed from storage."},
        }}),
        json!({"type": "object", "description": "TenantStatus is the observed state of a tenant.", "properties": {
            "phase": string("Active or Terminating."),
        }}),
    ));
    definitions
}

fn rules(context: &Context, rules: &mut Rules) {
    rules.strategy("", "Tenant", Arc::new(TenantStrategy {
        resources: context.resources.clone(),
        tree: context.tree.clone(),
        types: context.types.clone(),
        storage_clusters: context.storage_clusters.clone(),
    }));
    rules.admit(Arc::new(TenantLifecycle { tenants: context.tenants.clone() }));
}

/// The finalizer a tenant keeps until its space is empty (Arktos' `FinalizerArktos`).
pub const TENANT_FINALIZER: &str = "arktos";

/// The Tenant kind's rules; `resources` are the rows a new space's objects are created through; `tree` knows the
/// nested workspaces' logical clusters, whose names a new tenant's space may not take.
pub struct TenantStrategy {
    pub resources: ResourceTable,
    pub tree: Arc<crate::tenancy::Tree>,
    /// The storage clusters this server has (a new tenant must name one).
    pub storage_clusters: Arc<[ClusterId]>,
    /// The type's terminators, for the tenant's LogicalCluster.
    pub types: Arc<crate::tenancy::types::WorkspaceTypes>,
}

/// Root's home root (`root:users`) is stored as a Tenant, as every workspace of root is, but is no tenant.
impl View for TenantStrategy {
    fn visible(&self, _resource: &ResourceInfo, stored: &Value) -> bool {
        !is_home_root(stored)
    }
}

#[async_trait]
impl Strategy for TenantStrategy {
    fn view(&self) -> Option<&dyn View> {
        Some(self)
    }

    fn prepare_create(&self, _resource: &ResourceInfo, _space: &SpaceName, _caller: Option<&Caller>, object: &mut Value) {
        let Some(map) = object.as_object_mut() else { return };
        let spec = map.entry("spec").or_insert_with(|| json!({}));
        if !spec.is_object() {
            return; // validation reports it
        }
        if spec.get("storageClusterId").is_none_or(|id| id.is_null() || id == "") {
            spec["storageClusterId"] = json!("0");
        }
        spec["finalizers"] = json!([TENANT_FINALIZER]);
        map.insert("status".into(), json!({"phase": "Active"}));
    }

    /// The main resource cannot change `spec.storageClusterId` or `spec.finalizers`.
    fn prepare_update(&self, _resource: &ResourceInfo, _space: &SpaceName, old: &Value, new: &mut Value, part: Part) {
        if part != Part::Main || !new.is_object() {
            return;
        }
        if !new.get("spec").is_some_and(Value::is_object) {
            new["spec"] = json!({});
        }
        for field in ["storageClusterId", "finalizers"] {
            match old.pointer(&format!("/spec/{field}")) {
                Some(value) => new["spec"][field] = value.clone(),
                None => {
                    if let Some(spec) = new["spec"].as_object_mut() {
                        spec.remove(field);
                    }
                }
            }
        }
    }

    fn validate(&self, _resource: &ResourceInfo, object: &Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
        check_tenant(object, causes);
        // A tenant's space is named after it: a nested workspace's logical cluster of that name would be shared.
        let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        let nested = SpaceName::new(name).ok().and_then(|space| self.tree.cluster(&space)).is_some_and(|node| node.path.matches(':').count() > 1);
        if old.is_none() && nested {
            causes.push(Cause::invalid("metadata.name", name, "a logical cluster of this name already exists"));
        }
        // A new tenant's space goes to its storage cluster: one this server has.
        if let Some(id) = crate::tenancy::cache::storage_cluster_id(object).filter(|id| old.is_none() && !self.storage_clusters.contains(id)) {
            causes.push(Cause::invalid("spec.storageClusterId", &id.to_string(),
                &format!("no storage cluster {id} is configured on this server (kspaces serve --storage-cluster {id}=URLS)")));
        }
    }

    async fn after_create(&self, registry: &GenericStore, _space: &SpaceName, object: &Value) -> ApiResult<()> {
        let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        tenancy::space::initialize(registry, &self.resources, &self.types, &self.tree, name).await
    }
}

/// Arktos' tenant lifecycle admission.
pub struct TenantLifecycle {
    pub tenants: Arc<TenantCache>,
}

#[async_trait]
impl Admission for TenantLifecycle {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        operation == Operation::Create || (operation == Operation::Delete && resource.is("", "Tenant"))
    }

    fn refuses(&self, _registry: &GenericStore, question: &Question<'_>) -> Option<String> {
        (question.name == tenancy::SYSTEM && question.verb_in(&["delete"]) && question.covers("", "tenants"))
            .then(|| format!("tenants \"{}\" may not be deleted", question.name))
    }

    async fn admit(&self, registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<()> {
        if attributes.caller.is_none() {
            return Ok(());
        }
        // Root's home root has no Tenant view: what a Tenant request would change there is not found.
        if attributes.resource.is("", "Tenant") && attributes.old.is_some_and(is_home_root) {
            return Err(ApiError::not_found("", "tenants", attributes.name));
        }
        if attributes.operation == Operation::Delete {
            if attributes.name == tenancy::SYSTEM {
                return Err(ApiError::forbidden(format!("tenants \"{}\" is forbidden: this tenant may not be deleted", attributes.name)));
            }
            return Ok(());
        }
        let tenant = registry.tenant_of(attributes.space);
        if self.tenants.phase(&tenant) == Some(Phase::Terminating) {
            return Err(ApiError::forbidden(format!(
                "{} is forbidden: unable to create new content in tenant {tenant} because it is being terminated",
                attributes.resource.plural)));
        }
        Ok(())
    }
}

fn check_tenant(object: &Value, causes: &mut Vec<Cause>) {
    if object.pointer("/metadata/name").and_then(Value::as_str) == Some(ALL) {
        causes.push(Cause::invalid("metadata.name", ALL, "\"all\" is reserved: it names every tenant in /api/v1/tenants/all/..."));
    }
    if object.pointer("/metadata/name").and_then(Value::as_str) == Some(tenancy::HOME_ROOT) && !is_home_root(object) {
        causes.push(Cause::invalid("metadata.name", tenancy::HOME_ROOT,
            "\"users\" is reserved: root:users holds the system users' home workspaces"));
    }
    if let Some(spec) = object.get("spec").filter(|spec| !spec.is_object()) {
        causes.push(Cause::invalid("spec", &spec.to_string(), "must be an object"));
        return;
    }
    match object.pointer("/spec/storageClusterId") {
        Some(Value::String(id)) if id.parse::<u8>().is_ok_and(|n| n <= 63) && !id.starts_with('+') => {}
        Some(Value::String(id)) => causes.push(Cause::invalid("spec.storageClusterId", id, "must be integer 0-63")),
        Some(other) => causes.push(Cause::invalid("spec.storageClusterId", &other.to_string(), "must be a string holding an integer 0-63")),
        None => causes.push(Cause { message: "Required value: must specify storage cluster id".into(), ..Cause::required("spec.storageClusterId") }),
    }
    let deleting = object.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null());
    let expected = if deleting { "Terminating" } else { "Active" };
    match object.pointer("/status/phase").and_then(Value::as_str) {
        Some(phase) if phase == expected => {}
        Some(phase) => causes.push(Cause::invalid("status.phase", phase,
            &format!("must be {expected} (Terminating exactly when the tenant is being deleted)"))),
        None => {}
    }
}


//! LogicalCluster (kcp's `core.kcp.io/v1alpha1`): one per space, named `cluster`, made by the server with the
//! space; users may only change `spec.crdPolicy`, one of the CRD sharing policies. A tenant's or system space's
//! is `Ready` at once; a nested workspace's names its initializers (`spec.initializers`) and starts
//! `Initializing` with them in `status.initializers`, then becomes `Ready` once none is left
//! (`tenancy::space::initialize_workspace`). A deleted workspace (or tenant) whose type has terminators
//! (`spec.terminators`, copied to `status.terminators`) is `Terminating` until none is left. While its space is
//! emptied it is `Deleting`, and it goes last. Its labels follow its status (kcp's phase and entry labels, which
//! the virtual workspaces select by). Callers may only remove entries of `status.initializers` and
//! `status.terminators` (`LifecycleAdmission`), each with the verb `initialize` or `terminate` on the workspace
//! type it names; a virtual workspace's caller only its own entry.

use std::sync::Arc;

use async_trait::async_trait;
use kspaces_authz::rbac::Attributes as RbacAttributes;
use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::{json, Map, Value};

use super::{kind_schema, string, verbs, Context, Kind, Rules};
use crate::authorization::Authorizer;
use crate::registry::admission::{Admission, AdmissionPhase, Attributes, Operation};
use crate::quota::{parse_limit, Quotas, LIMIT_ANNOTATIONS};
use crate::registry::store::{space_of_cluster, CLUSTER_ANNOTATION};
use crate::registry::strategy::{Part, Strategy, View};
use crate::registry::{GenericStore, ResourceInfo, Subresource};
use crate::status::{ApiError, ApiResult, Cause};
use crate::apis::lifecycle::{label_logical_cluster, Lifecycle};
use crate::tenancy::types::lifecycle_type;
use crate::tenancy::Tree;
use crate::registry::stored::at;

/// `core.kcp.io/v1alpha1 LogicalCluster`: its row, definition and strategy.
pub const KIND: Kind = Kind { rows, definitions, rules };

/// The OpenAPI definition name of LogicalCluster.
pub const DEFINITION: &str = "io.kcp.core.v1alpha1.LogicalCluster";
pub use crate::apis::kcp::{BOUND_RESOURCES, DEFAULT_CRD_POLICY, LOGICAL_CLUSTER_NAME};
/// The CRD policies a space may choose (`LogicalCluster.spec.crdPolicy`).
pub const CRD_POLICIES: [&str; 3] = ["NeverUseSystemCRDUnlessForced", "SystemCRDFirst", "LocalCRDFirst"];

fn rows() -> Vec<ResourceInfo> {
    vec![
        ResourceInfo {
            group: "core.kcp.io".into(),
            version: "v1alpha1".into(),
            kind: "LogicalCluster".into(),
            plural: "logicalclusters".into(),
            singular: "logicalcluster".into(),
            short_names: vec![],
            categories: vec![],
            namespaced: false,
            subresources: vec![Subresource::Status],
            // One per space, made and removed by the server; its admins may only change `spec.crdPolicy`.
            verbs: verbs(&["get", "list", "patch", "update", "watch"]),
            definition: Some(DEFINITION.into()),
            system_only: false,
            custom: None,
        },
    ]
}

fn definitions() -> Map<String, Value> {
    let mut definitions = Map::new();
    definitions.insert(DEFINITION.into(), kind_schema(
        "LogicalCluster describes a space (kcp's logical cluster). There is exactly one per space, named `cluster`.",
        json!({"type": "object", "description": "LogicalClusterSpec holds the space's settings.", "properties": {
            "crdPolicy": {"type": "string", "enum": CRD_POLICIES,
                "description": "How the space resolves a resource defined both by a system CRD and by its own CRD."},
            "owner": {"type": "object", "description": "The Workspace this logical cluster belongs to (set by the system).",
                "x-kubernetes-preserve-unknown-fields": true},
            "createdBy": {"type": "object", "description": "The user who created the workspace (set by the system).",
                "x-kubernetes-preserve-unknown-fields": true},
            "initializers": {"type": "array", "items": {"type": "string", "default": ""},
                "description": "The initializers that must finish before the workspace is Ready (set by the system)."},
            "terminators": {"type": "array", "items": {"type": "string", "default": ""},
                "description": "The terminators that must finish before a deleted workspace's content is removed (set by the system)."},
        }}),
        json!({"type": "object", "description": "LogicalClusterStatus is the observed state of the space.", "properties": {
            "phase": string("Initializing, Ready, Terminating (deleted, terminators left) or Deleting while the space is emptied."),
            "initializers": {"type": "array", "items": {"type": "string", "default": ""},
                "description": "The initializers that have not finished yet."},
            "terminators": {"type": "array", "items": {"type": "string", "default": ""},
                "description": "The terminators that have not finished yet."},
            "boundResources": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "description": "Every resource an APIBinding ever bound in the space, kept so that emptying the space finds objects made through a binding since deleted (set by the system)."},
        }}),
    ));
    definitions
}

fn rules(context: &Context, rules: &mut Rules) {
    rules.strategy("core.kcp.io", "LogicalCluster", Arc::new(LogicalClusterStrategy { quotas: context.quotas.clone() }));
    rules.admit(Arc::new(LifecycleAdmission { tree: context.tree.clone(), authorizer: context.authorizer.clone() }));
    rules.admit(Arc::new(LimitsAdmission));
}

/// A space's limits (`quota::LIMIT_ANNOTATIONS`) are set by system users only: a tenant may not lift its own.
pub struct LimitsAdmission;

#[async_trait]
impl Admission for LimitsAdmission {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        resource.is("core.kcp.io", "LogicalCluster") && operation == Operation::Update
    }

    async fn admit(&self, _registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<()> {
        let (Some(object), Some(old), Some(caller)) = (attributes.object, attributes.old, attributes.caller) else { return Ok(()) };
        if caller.system {
            return Ok(());
        }
        let annotation = |o: &'_ Value, name: &str| at(o, "/metadata/annotations").and_then(|a| a.get(name)).cloned();
        match LIMIT_ANNOTATIONS.into_iter().find(|name| annotation(object, name) != annotation(old, name)) {
            Some(name) => Err(ApiError::forbidden_object("core.kcp.io", "logicalclusters", attributes.name,
                &format!("the annotation {name} can only be set by system users"))),
            None => Ok(()),
        }
    }
}

/// kcp's rules for a caller's write of a LogicalCluster's status: the phase is the system's, and the lists of
/// initializers and terminators only shrink, each entry removed by a caller allowed to `initialize` (or
/// `terminate`) with the workspace type it names, in the workspace holding the type.
pub struct LifecycleAdmission {
    tree: Arc<Tree>,
    authorizer: Arc<Authorizer>,
}

#[async_trait]
impl Admission for LifecycleAdmission {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        resource.is("core.kcp.io", "LogicalCluster") && operation == Operation::Update
    }

    fn phase(&self) -> AdmissionPhase {
        AdmissionPhase::Validating
    }

    async fn admit(&self, _registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<()> {
        let (Some(object), Some(old), Some(caller)) = (attributes.object, attributes.old, attributes.caller) else { return Ok(()) };
        let forbidden = |why: String| ApiError::forbidden_object("core.kcp.io", "logicalclusters", attributes.name, &why);
        let phase = |o: &Value| at(o, "/status/phase").cloned();
        if phase(object) != phase(old) {
            return Err(forbidden("status.phase is set by the system".into()));
        }
        if at(object, BOUND_RESOURCES) != at(old, BOUND_RESOURCES) {
            return Err(forbidden("status.boundResources is set by the system".into()));
        }
        // A virtual workspace's caller (its synthetic group) may remove its own entry and nothing else.
        let through = Lifecycle::ALL.into_iter()
            .find_map(|l| caller.user.groups.iter().find_map(|g| l.entry_of_group(g)).map(|entry| (l, entry)));
        for lifecycle in Lifecycle::ALL {
            let field = lifecycle.field();
            let (now, before) = (lifecycle.entries(object), lifecycle.entries(old));
            if let Some(added) = now.iter().find(|n| !before.contains(n)) {
                return Err(forbidden(format!("status.{field} can only be removed, not added: {added}")));
            }
            let removed: Vec<&str> = before.iter().copied().filter(|b| !now.contains(b)).collect();
            if let Some((served, entry)) = through {
                if !removed.is_empty() && (served != lifecycle || removed != [entry]) {
                    let why = format!("only removing the {entry:?} {} is supported", served.noun());
                    let value = serde_json::to_string(&now).unwrap_or_default();
                    return Err(ApiError::invalid("core.kcp.io", "LogicalCluster", attributes.name, vec![Cause::invalid(format!("status.{field}"), &value, &why)]));
                }
            }
            for removed in removed {
                check_entry(&self.authorizer, &self.tree, caller, lifecycle, removed).await
                    .map_err(|why| forbidden(format!("cannot remove {removed} from status.{field}: {why}")))?;
            }
        }
        Ok(())
    }
}

/// Whether `caller` may act for the initializer or terminator `entry`: the verb `initialize` (`terminate`) on the
/// workspace type it names, in the workspace holding the type. As with `use`, a tenant's users are judged in their
/// own tenant's workspaces only.
pub async fn check_entry(authorizer: &Authorizer, tree: &Tree, caller: &Caller, lifecycle: Lifecycle, entry: &str) -> Result<(), String> {
    let verb = lifecycle.verb();
    let missing = || format!("missing verb='{verb}' permission on workspacetypes");
    let (holder, kind) = lifecycle_type(entry).ok_or_else(missing)?;
    if !caller.system && tree.tenant_of(&holder) != caller.tenant.as_deref().unwrap_or_default() {
        return Err(missing());
    }
    let attributes = RbacAttributes::Resource {
        verb: verb.into(),
        group: "tenancy.kcp.io".into(),
        resource: "workspacetypes".into(),
        subresource: String::new(),
        name: kind,
        namespace: None,
    };
    match authorizer.authorize(caller, &holder, &attributes).await {
        Ok(decision) if decision.allowed => Ok(()),
        Ok(_) => Err(missing()),
        Err(err) => Err(err.message),
    }
}

/// LogicalCluster's rules; its `status.quota` (the space's limits and usage) is shown on read, never stored.
pub struct LogicalClusterStrategy {
    quotas: Arc<Quotas>,
}

impl View for LogicalClusterStrategy {
    fn to_request(&self, _resource: &ResourceInfo, object: &mut Value) {
        let cluster = at(object, "/metadata/annotations").and_then(|a| a.get(CLUSTER_ANNOTATION)).and_then(Value::as_str);
        if let Some(space) = cluster.and_then(space_of_cluster) {
            self.quotas.show(&space, object);
        }
    }
}

fn forget_quota(object: &mut Value) {
    if let Some(status) = object.get_mut("status").and_then(Value::as_object_mut) {
        status.remove("quota");
    }
}

impl Strategy for LogicalClusterStrategy {
    fn view(&self) -> Option<&dyn View> {
        Some(self)
    }

    fn prepare_create(&self, _resource: &ResourceInfo, _space: &SpaceName, _caller: Option<&Caller>, object: &mut Value) {
        object["status"] = match at(object, "/spec/initializers") {
            Some(initializers) => json!({"phase": "Initializing", "initializers": initializers}),
            None => json!({"phase": "Ready"}),
        };
        if let Some(terminators) = at(object, "/spec/terminators").cloned() {
            object["status"]["terminators"] = terminators;
        }
        label_logical_cluster(object);
    }

    /// Only `spec.crdPolicy` is the user's to change; the phase and lifecycle labels follow the status.
    fn prepare_update(&self, _resource: &ResourceInfo, _space: &SpaceName, old: &Value, new: &mut Value, part: Part) {
        forget_quota(new);
        label_logical_cluster(new);
        if part != Part::Main || !new.is_object() {
            return;
        }
        let policy = at(new, "/spec/crdPolicy").cloned();
        let mut spec = old.get("spec").cloned().unwrap_or_else(|| json!({}));
        match policy {
            Some(policy) if spec.is_object() => spec["crdPolicy"] = policy,
            _ => {
                if let Some(spec) = spec.as_object_mut() {
                    spec.remove("crdPolicy");
                }
            }
        }
        new["spec"] = spec;
    }

    fn validate(&self, _resource: &ResourceInfo, object: &Value, _old: Option<&Value>, causes: &mut Vec<Cause>) {
        check_logical_cluster(object, causes);
    }
}

fn check_logical_cluster(object: &Value, causes: &mut Vec<Cause>) {
    if let Some(name) = at(object, "/metadata/name").and_then(Value::as_str).filter(|n| *n != LOGICAL_CLUSTER_NAME) {
        causes.push(Cause::invalid("metadata.name", name, "must be \"cluster\": a space has exactly one LogicalCluster"));
    }
    match at(object, "/spec/crdPolicy") {
        None | Some(Value::Null) => {}
        Some(Value::String(policy)) if CRD_POLICIES.contains(&policy.as_str()) => {}
        Some(policy) => causes.push(Cause::not_supported("spec.crdPolicy", policy.as_str().unwrap_or(&policy.to_string()), &CRD_POLICIES)),
    }
    let annotations = at(object, "/metadata/annotations").and_then(Value::as_object);
    for name in LIMIT_ANNOTATIONS {
        match annotations.and_then(|a| a.get(name)) {
            None => {}
            Some(Value::String(value)) if parse_limit(value).is_some() => {}
            Some(value) => causes.push(Cause::invalid(format!("metadata.annotations[{name}]"), value.as_str().unwrap_or(&value.to_string()),
                "must be a non-negative integer")),
        }
    }
}


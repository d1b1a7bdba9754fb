//! What a space starts with, created when its tenant is: namespaces `default`, `kube-system` and `kube-public`;
//! ClusterRole `admin-role` bound by ClusterRoleBinding `admin-role-binding` to the tenant's user `admin` (as
//! Arktos' tenant controller does); Kubernetes' bootstrap RBAC roles and bindings (`kspaces_authz::bootstrap`);
//! and the `LogicalCluster` named `cluster` that carries the space's settings.
//! The LogicalCluster is made last, so its presence means the space is complete. Root also holds the built-in
//! WorkspaceTypes.
//!
//! A nested workspace's logical cluster starts leaner (`workspace_objects`): kcp's universal initializer's
//! namespaces, the creator's `workspace-admin` binding to `cluster-admin` and its LogicalCluster, made side by side
//! (its Workspace's phase, not the LogicalCluster, says how far it got); Kubernetes' bootstrap roles are read from the
//! bootstrap set rather than copied into every workspace (`authorization.rs`).

use kspaces_storage::SpaceName;
use serde_json::{json, Value};

use super::tree::{Tree, HOME_ROOT_TYPE, TENANT_DEFAULT_TYPE};
use super::types::WorkspaceTypes;
use super::{space_of, SYSTEM};
use crate::apis::kcp::{DEFAULT_CRD_POLICY, LOGICAL_CLUSTER_NAME, OWNER_ANNOTATION, PATH_ANNOTATION};
use crate::registry::deletion::DeleteOptions;
use crate::registry::store::DeleteOutcome;
use crate::registry::{is_deleting, GenericStore, Part, ResourceInfo, ResourceTable, Scope, WriteContext, SERVER_MANAGER};
use crate::status::{ApiError, ApiResult};
use crate::registry::stored::at;

/// The namespaces of a tenant space (the system space also has `kube-node-lease`).
/// The Workspace annotation listing the exports (`[{"path", "export"}]`, JSON) its type's `defaultAPIBindings`
/// name, fixed when the workspace is made.
pub const DEFAULT_BINDINGS_ANNOTATION: &str = "internal.kspaces.io/default-api-bindings";
pub const TENANT_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];
/// The namespaces of the system space.
pub const SYSTEM_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];
/// The tenant administrator's ClusterRole and its binding.
pub const ADMIN_ROLE: &str = "admin-role";
pub const ADMIN_ROLE_BINDING: &str = "admin-role-binding";
/// The user a tenant's `admin-role-binding` names.
pub const TENANT_ADMIN: &str = "admin";

/// The objects a new space holds, in creation order; `home_root`: root's workspace of system users' homes, which
/// has no tenant administrator.
pub fn initial_objects(tenant: &str, home_root: bool) -> Vec<Value> {
    let system = tenant == SYSTEM;
    let namespaces: &[&str] = if system { &SYSTEM_NAMESPACES } else { &TENANT_NAMESPACES };
    let mut objects: Vec<Value> = namespaces
        .iter()
        .map(|name| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}))
        .collect();
    if !system && !home_root {
        objects.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": ADMIN_ROLE},
            "rules": [
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]},
            ],
        }));
        objects.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": ADMIN_ROLE_BINDING},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ADMIN_ROLE},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": TENANT_ADMIN}],
        }));
    }
    objects.extend(kspaces_authz::bootstrap::bootstrap_objects(system));
    if system {
        objects.extend(super::types::builtin_types());
    }
    let kind = if system { "root:root" } else { TENANT_DEFAULT_TYPE };
    let mut logical_cluster = json!({
        "apiVersion": "core.kcp.io/v1alpha1",
        "kind": "LogicalCluster",
        "metadata": {"name": LOGICAL_CLUSTER_NAME, "annotations": {PATH_ANNOTATION: workspace_path(tenant), TYPE_ANNOTATION: kind}},
        "spec": {},
    });
    if !system {
        logical_cluster["spec"]["crdPolicy"] = json!(DEFAULT_CRD_POLICY);
    }
    objects.push(logical_cluster);
    objects
}

/// The workspace path of a tenant's space: `root` or `root:<tenant>`.
pub fn workspace_path(tenant: &str) -> String {
    if tenant == SYSTEM { "root".to_owned() } else { format!("root:{tenant}") }
}

pub use crate::apis::kcp::TYPE_ANNOTATION;
/// The binding that makes a workspace's creator its administrator.
pub const WORKSPACE_ADMIN: &str = "workspace-admin";
/// The namespaces a nested workspace starts with (kcp's universal initializer's).
pub const WORKSPACE_NAMESPACES: [&str; 2] = ["default", "kube-system"];

/// The objects a nested workspace's logical cluster starts with, in creation order: the namespaces, the creator's
/// `workspace-admin` binding (when the workspace names its owner), and its LogicalCluster (last).
/// The APIBindings a new workspace gets from its type's `defaultAPIBindings`, as its Workspace's annotation
/// `DEFAULT_BINDINGS_ANNOTATION` fixed them when it was made: one per export, named after it (`-2`, `-3`, ...
/// when two exports share a name).
fn default_bindings(workspace: &Value) -> Vec<Value> {
    let pointer = format!("/metadata/annotations/{}", DEFAULT_BINDINGS_ANNOTATION.replace('/', "~1"));
    let listed: Vec<Value> = at(workspace, &pointer).and_then(Value::as_str)
        .and_then(|text| serde_json::from_str(text).ok()).unwrap_or_default();
    let mut names: Vec<String> = Vec::new();
    listed.iter().filter_map(|entry| {
        let export = entry.get("export").and_then(Value::as_str)?;
        let path = entry.get("path").and_then(Value::as_str).unwrap_or_default();
        let mut name = export.to_owned();
        let mut n = 1;
        while names.contains(&name) {
            n += 1;
            name = format!("{export}-{n}");
        }
        names.push(name.clone());
        Some(json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": name},
            "spec": {"reference": {"export": {"path": path, "name": export}}}}))
    }).collect()
}

pub fn workspace_objects(path: &str, workspace: &Value, parent: &SpaceName) -> Vec<Value> {
    let mut objects: Vec<Value> = WORKSPACE_NAMESPACES
        .iter()
        .map(|name| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}))
        .collect();
    let owner_pointer = format!("/metadata/annotations/{}", OWNER_ANNOTATION.replace('/', "~1"));
    let owner = at(workspace, &owner_pointer).and_then(Value::as_str).and_then(|o| serde_json::from_str::<Value>(o).ok());
    if let Some(user) = owner.as_ref().and_then(|o| o.get("username")).and_then(Value::as_str) {
        objects.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": WORKSPACE_ADMIN},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        }));
    }
    objects.extend(default_bindings(workspace));
    let text = |pointer: &str| at(workspace, pointer).and_then(Value::as_str).unwrap_or_default();
    let mut logical_cluster = json!({
        "apiVersion": "core.kcp.io/v1alpha1",
        "kind": "LogicalCluster",
        "metadata": {"name": LOGICAL_CLUSTER_NAME, "annotations": {PATH_ANNOTATION: path, TYPE_ANNOTATION: super::tree::type_of(workspace)}},
        "spec": {
            "crdPolicy": DEFAULT_CRD_POLICY,
            "initializers": at(workspace, "/status/initializers").cloned().unwrap_or_else(|| json!([])),
            "owner": {"apiVersion": "tenancy.kcp.io/v1alpha1", "resource": "workspaces", "name": text("/metadata/name"),
                "cluster": crate::registry::store::cluster_name(parent), "uid": text("/metadata/uid")},
        },
    });
    if let Some(owner) = owner {
        logical_cluster["spec"]["createdBy"] = owner;
    }
    if let Some(terminators) = at(workspace, "/status/terminators") {
        logical_cluster["spec"]["terminators"] = terminators.clone();
    }
    objects.push(logical_cluster);
    objects
}

/// Where a workspace's initialization starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Initialization {
    /// The request that created the workspace, with a logical cluster name no space has: nothing of it is there.
    Fresh,
    /// The workspace controller, completing a creation a crash or a failure cut short.
    Resumed,
}

/// Makes a nested workspace's logical cluster, then moves the workspace on as far as it can go
/// (`advance_workspace`). Its objects (namespaces, the admin binding, default APIBindings, the LogicalCluster) are
/// made side by side, each kept if it is there. Until the Workspace has been shown `Initializing`, whatever of them is
/// missing is made; after, the LogicalCluster alone is looked for, so that what its users removed since stays
/// removed. Idempotent: the workspace controller completes a creation a crash interrupted. True while it waits for
/// initializers.
pub async fn initialize_workspace(registry: &GenericStore, resources: &ResourceTable, tree: &Tree, parent: &SpaceName, workspace: &Value,
    start: Initialization) -> ApiResult<bool> {
    let name = at(workspace, "/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let cluster = at(workspace, "/spec/cluster").and_then(Value::as_str)
        .ok_or_else(|| ApiError::internal(format!("workspace {name} has no logical cluster")))?;
    let space = SpaceName::new(cluster).map_err(|e| ApiError::internal(e.to_string()))?;
    let logical_clusters = row(resources, "core.kcp.io", "LogicalCluster")?;
    let scope = Scope::one(space.clone(), None);
    let shown = !matches!(phase_of(workspace), "" | "Scheduling");
    let existing = match start {
        Initialization::Resumed if shown => match registry.reader().get(&logical_clusters, &scope, LOGICAL_CLUSTER_NAME).await {
            Ok(logical_cluster) => Some(logical_cluster),
            Err(ApiError { code: 404, .. }) => None,
            Err(err) => return Err(err),
        },
        _ => None,
    };
    let logical_cluster = match existing {
        Some(logical_cluster) => logical_cluster,
        None => {
            let parent_path = tree.cluster(parent).map(|n| n.path).ok_or_else(|| ApiError::not_found("tenancy.kcp.io", "workspaces", parent.as_str()))?;
            let objects = workspace_objects(&format!("{parent_path}:{name}"), workspace, parent);
            let mut created = futures::future::try_join_all(objects.into_iter().map(|object| create(registry, resources, &space, object))).await?;
            // The LogicalCluster is the last of them; an answer of `None` says it was there already.
            match created.pop().flatten() {
                Some(logical_cluster) => logical_cluster,
                None => registry.reader().get(&logical_clusters, &scope, LOGICAL_CLUSTER_NAME).await?,
            }
        }
    };
    advance_workspace(registry, resources, parent, name, &logical_clusters, &scope, logical_cluster).await
}

/// Moves a workspace being created on, as kcp's phases go: the Workspace mirrors its LogicalCluster's phase and
/// initializers (`Initializing`); a LogicalCluster with no initializers left becomes `Ready`, and the Workspace
/// with it. Writes only what changes. True while initializers are left.
///
/// The Workspace's `Initializing` and the LogicalCluster's `Ready` are written side by side: each object still goes
/// through every phase in order, and the Workspace follows its LogicalCluster as kcp's controller does, a step behind.
async fn advance_workspace(registry: &GenericStore, resources: &ResourceTable, parent: &SpaceName, name: &str,
    logical_clusters: &ResourceInfo, scope: &Scope, logical_cluster: Value) -> ApiResult<bool> {
    let initializers_left = at(&logical_cluster, "/status/initializers").and_then(Value::as_array).is_some_and(|i| !i.is_empty());
    if phase_of(&logical_cluster) != "Initializing" || initializers_left {
        mirror_phase(registry, resources, parent, name, &logical_cluster).await?;
        return Ok(initializers_left && phase_of(&logical_cluster) == "Initializing");
    }
    let ready = set_status(registry, logical_clusters, scope, LOGICAL_CLUSTER_NAME, |status| {
        status["phase"] = json!("Ready");
    });
    let (_, ready) = futures::future::try_join(mirror_phase(registry, resources, parent, name, &logical_cluster), ready).await?;
    mirror_phase(registry, resources, parent, name, &ready).await?;
    Ok(false)
}

/// For a deleted workspace: true while its LogicalCluster still lists terminators, the LogicalCluster and the
/// Workspace then `Terminating`; false once none is left (or there is no LogicalCluster), for the deletion to go on.
pub async fn await_terminators(registry: &GenericStore, resources: &ResourceTable, parent: &SpaceName, name: &str, space: &SpaceName) -> ApiResult<bool> {
    match hold_for_terminators(registry, resources, space).await? {
        Some(logical_cluster) => {
            mirror_phase(registry, resources, parent, name, &logical_cluster).await?;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// The finalizer that keeps a deleted space's LogicalCluster, with its `deletionTimestamp`, until everything else
/// in the space is gone (`controllers::empty_space` lifts it last, which removes it).
pub const LOGICAL_CLUSTER_FINALIZER: &str = "tenancy.kspaces.io/logical-cluster";

/// The LogicalCluster of `space`, made `Terminating`, while it lists terminators; `None` once none is left (or
/// there is none). A deleted tenant waits on this alone: its Tenant is already Arktos' `Terminating`. The
/// LogicalCluster of a deleted space carries a `deletionTimestamp` from the first call on (kcp's terminators
/// select by it).
pub async fn hold_for_terminators(registry: &GenericStore, resources: &ResourceTable, space: &SpaceName) -> ApiResult<Option<Value>> {
    let logical_clusters = row(resources, "core.kcp.io", "LogicalCluster")?;
    let scope = Scope::one(space.clone(), None);
    let logical_cluster = match registry.reader().get(&logical_clusters, &scope, LOGICAL_CLUSTER_NAME).await {
        Ok(logical_cluster) => logical_cluster,
        Err(ApiError { code: 404, .. }) => return Ok(None),
        Err(err) => return Err(err),
    };
    let logical_cluster = if is_deleting(&logical_cluster) {
        logical_cluster
    } else {
        match mark_deleted(registry, &logical_clusters, &scope).await? {
            Some(marked) => marked,
            None => return Ok(None),
        }
    };
    let left = at(&logical_cluster, "/status/terminators").and_then(Value::as_array).is_some_and(|t| !t.is_empty());
    if !left {
        return Ok(None);
    }
    if phase_of(&logical_cluster) == "Terminating" {
        return Ok(Some(logical_cluster));
    }
    set_status(registry, &logical_clusters, &scope, LOGICAL_CLUSTER_NAME, |status| status["phase"] = json!("Terminating")).await.map(Some)
}

/// Deletes a space's LogicalCluster as kube deletes an object held by a finalizer: it gets its
/// `deletionTimestamp` and stays. `None` if it is gone.
async fn mark_deleted(registry: &GenericStore, logical_clusters: &ResourceInfo, scope: &Scope) -> ApiResult<Option<Value>> {
    let write = WriteContext::server(SERVER_MANAGER, "");
    let held = registry.guaranteed_update(logical_clusters, scope, LOGICAL_CLUSTER_NAME, Part::Main, &write, |current| {
        let mut held = current.clone();
        let finalizers = held["metadata"].as_object_mut().map(|m| m.entry("finalizers").or_insert_with(|| json!([])));
        if let Some(list) = finalizers.and_then(Value::as_array_mut) {
            if !list.iter().any(|f| f == LOGICAL_CLUSTER_FINALIZER) {
                list.push(json!(LOGICAL_CLUSTER_FINALIZER));
            }
        }
        Ok(held)
    }).await;
    match held {
        Ok(_) => {}
        Err(ApiError { code: 404, .. }) => return Ok(None),
        Err(err) => return Err(err),
    }
    // The finalizer holds it: the delete only marks it, and answers the marked object.
    match registry.delete(logical_clusters, scope, LOGICAL_CLUSTER_NAME, &DeleteOptions::default(), None).await {
        Ok(DeleteOutcome::Pending(marked)) => Ok(Some(marked)),
        Ok(DeleteOutcome::Deleted(_)) | Err(ApiError { code: 404, .. }) => Ok(None),
        Err(err) => Err(err),
    }
}

/// Sets a Workspace's `status.phase`, `status.initializers` and `status.terminators` to its LogicalCluster's
/// (an empty list is left out).
pub async fn mirror_phase(registry: &GenericStore, resources: &ResourceTable, parent: &SpaceName, name: &str, logical_cluster: &Value) -> ApiResult<()> {
    let phase = phase_of(logical_cluster).to_owned();
    let lists = ["initializers", "terminators"].map(|field| {
        let list = at(logical_cluster, &format!("/status/{field}")).filter(|l| l.as_array().is_some_and(|l| !l.is_empty())).cloned();
        (field, list)
    });
    let workspaces = row(resources, "tenancy.kcp.io", "Workspace")?;
    set_status(registry, &workspaces, &Scope::one(parent.clone(), None), name, |status| {
        status["phase"] = json!(phase);
        for (field, list) in &lists {
            match list {
                Some(list) => status[*field] = list.clone(),
                None => drop(status.as_object_mut().map(|s| s.remove(*field))),
            }
        }
    }).await.map(drop)
}

fn phase_of(object: &Value) -> &str {
    at(object, "/status/phase").and_then(Value::as_str).unwrap_or_default()
}

fn row(resources: &ResourceTable, group: &str, kind: &str) -> ApiResult<std::sync::Arc<ResourceInfo>> {
    resources.by_kind(group, kind).cloned().ok_or_else(|| ApiError::internal(format!("no {group}/{kind} resource")))
}

/// A status write by the server: `change` edits the current `status` (an object).
async fn set_status(registry: &GenericStore, resource: &ResourceInfo, scope: &Scope, name: &str, change: impl Fn(&mut Value)) -> ApiResult<Value> {
    let write = WriteContext::server(SERVER_MANAGER, "status");
    registry.guaranteed_update(resource, scope, name, Part::Status, &write, |current| {
        let mut desired = current.clone();
        if !desired.get("status").is_some_and(Value::is_object) {
            desired["status"] = json!({});
        }
        change(&mut desired["status"]);
        Ok(desired)
    }).await
}

/// Makes what a system workspace (`system:admin`) lacks: its namespaces and its LogicalCluster. System workspaces
/// have no Workspace object (kcp's).
pub async fn initialize_system_workspace(registry: &GenericStore, resources: &ResourceTable, name: &str) -> ApiResult<()> {
    let space = SpaceName::new(name).map_err(|e| ApiError::internal(e.to_string()))?;
    let mut objects = workspace_objects(name, &json!({"metadata": {"name": name}, "spec": {"type": {"name": "universal", "path": "root"}}}), &SpaceName::system());
    if let Some(logical_cluster) = objects.last_mut() {
        if let Some(spec) = logical_cluster["spec"].as_object_mut() {
            spec.remove("owner");
            spec.remove("initializers");
        }
    }
    for object in objects {
        create(registry, resources, &space, object).await?;
    }
    Ok(())
}

/// Sets a Workspace's `status.phase` (a status write by the server).
pub async fn set_phase(registry: &GenericStore, resources: &ResourceTable, parent: &SpaceName, name: &str, phase: &str) -> ApiResult<()> {
    let workspaces = row(resources, "tenancy.kcp.io", "Workspace")?;
    set_status(registry, &workspaces, &Scope::one(parent.clone(), None), name, |status| status["phase"] = json!(phase)).await.map(drop)
}

/// Sets the `status.phase` of a space's LogicalCluster (`Deleting` while the space is emptied); a space without
/// one is left as it is.
pub async fn set_logical_cluster_phase(registry: &GenericStore, resources: &ResourceTable, space: &SpaceName, phase: &str) -> ApiResult<()> {
    let logical_clusters = row(resources, "core.kcp.io", "LogicalCluster")?;
    let scope = Scope::one(space.clone(), None);
    match set_status(registry, &logical_clusters, &scope, LOGICAL_CLUSTER_NAME, |status| status["phase"] = json!(phase)).await {
        Ok(_) | Err(ApiError { code: 404, .. }) => Ok(()),
        Err(err) => Err(err),
    }
}

/// Creates whatever of the initial objects the space lacks. Idempotent. Everything but the LogicalCluster is
/// written at once (one group commit, not one per object); the LogicalCluster goes last.
pub async fn initialize(registry: &GenericStore, resources: &ResourceTable, types: &WorkspaceTypes, tree: &Tree, tenant: &str) -> ApiResult<()> {
    let space = space_of(tenant)?;
    // A tenant made as a root Workspace of another type than organization says so in its annotation.
    let kind = tenant_type(registry, resources, tenant).await?;
    let mut objects = initial_objects(tenant, kind.as_deref() == Some(HOME_ROOT_TYPE));
    let last = objects.pop();
    futures::future::try_join_all(objects.into_iter().map(|object| create(registry, resources, &space, object))).await?;
    if let Some(mut logical_cluster) = last {
        if let Some(kind) = &kind {
            logical_cluster["metadata"]["annotations"][TYPE_ANNOTATION] = json!(kind);
        }
        // Its type's terminators hold its deletion, as a nested workspace's do (the tenant controller waits).
        let terminators = if tenant == SYSTEM { Vec::new() } else { types.tenant_terminators(tree, kind.as_deref().unwrap_or(TENANT_DEFAULT_TYPE)) };
        if !terminators.is_empty() {
            logical_cluster["spec"]["terminators"] = json!(terminators);
        }
        create(registry, resources, &space, logical_cluster).await?;
    }
    Ok(())
}

/// The workspace type a stored Tenant names in its annotation, if it names one.
async fn tenant_type(registry: &GenericStore, resources: &ResourceTable, tenant: &str) -> ApiResult<Option<String>> {
    let Some(tenants) = resources.by_kind("", "Tenant") else { return Ok(None) };
    if tenant == SYSTEM {
        return Ok(None);
    }
    let stored = match registry.reader().get(tenants, &Scope::one(SpaceName::system(), None), tenant).await {
        Ok(stored) => stored,
        Err(ApiError { code: 404, .. }) => return Ok(None),
        Err(err) => return Err(err),
    };
    let pointer = format!("/metadata/annotations/{}", super::tree::TENANT_TYPE_ANNOTATION.replace('/', "~1"));
    Ok(at(&stored, &pointer).and_then(Value::as_str).map(str::to_owned))
}

/// Creates one initial object, giving it back as stored; one that exists already is fine (`None`).
async fn create(registry: &GenericStore, resources: &ResourceTable, space: &kspaces_storage::SpaceName, object: Value) -> ApiResult<Option<Value>> {
    let kind = object["kind"].as_str().unwrap_or_default();
    let group = object["apiVersion"].as_str().and_then(|v| v.rsplit_once('/')).map_or("", |(g, _)| g);
    let resource = resources.by_kind(group, kind).cloned()
        .ok_or_else(|| ApiError::internal(format!("no resource for {group}/{kind}")))?;
    let scope = Scope::one(space.clone(), None);
    match registry.create(&resource, &scope, object, &WriteContext::server(SERVER_MANAGER, "")).await {
        Ok(created) => Ok(Some(created)),
        Err(ApiError { code: 409, .. }) => Ok(None),
        Err(err) => Err(err),
    }
}

/// True once the space's LogicalCluster exists (the last object `initialize` makes).
pub async fn is_initialized(registry: &GenericStore, resources: &ResourceTable, tenant: &str) -> ApiResult<bool> {
    let Some(resource) = resources.by_kind("core.kcp.io", "LogicalCluster").cloned() else { return Ok(false) };
    let scope = Scope::one(space_of(tenant)?, None);
    match registry.reader().get(&resource, &scope, LOGICAL_CLUSTER_NAME).await {
        Ok(_) => Ok(true),
        Err(ApiError { code: 404, .. }) => Ok(false),
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_spaces_get_arktos_admin_objects_and_a_logical_cluster() {
        let objects = initial_objects("t1", false);
        let names: Vec<String> = objects.iter().map(|o| format!("{}/{}", o["kind"].as_str().unwrap_or(""), o["metadata"]["name"].as_str().unwrap_or(""))).collect();
        assert_eq!(names[..5], ["Namespace/default", "Namespace/kube-system", "Namespace/kube-public", "ClusterRole/admin-role",
            "ClusterRoleBinding/admin-role-binding"]);
        for role in ["ClusterRole/cluster-admin", "ClusterRole/admin", "ClusterRole/edit", "ClusterRole/view", "ClusterRoleBinding/system:discovery"] {
            assert!(names.iter().any(|n| n == role), "{role} in {names:?}");
        }
        assert!(!names.iter().any(|n| n == "ClusterRoleBinding/cluster-admin"), "system:masters is powerless in a tenant space");
        let last = objects.last().expect("objects");
        assert_eq!(last["kind"], "LogicalCluster", "the LogicalCluster comes last: its presence means the space is complete");
        assert_eq!(last["spec"]["crdPolicy"], "LocalCRDFirst");
        assert_eq!(last["metadata"]["annotations"]["kcp.io/path"], "root:t1");
        let system = initial_objects("system", false);
        let system_names: Vec<String> = system.iter().map(|o| format!("{}/{}", o["kind"].as_str().unwrap_or(""), o["metadata"]["name"].as_str().unwrap_or(""))).collect();
        assert!(system_names.iter().any(|n| n == "ClusterRoleBinding/cluster-admin"));
        assert!(!system_names.iter().any(|n| n == "ClusterRole/admin-role"));
        assert_eq!(system.last().expect("objects")["metadata"]["annotations"]["kcp.io/path"], "root");
        let homes = initial_objects("users", true);
        assert!(!homes.iter().any(|o| o["metadata"]["name"] == "admin-role" || o["metadata"]["name"] == "admin-role-binding"),
            "root's home root has no tenant administrator");
    }
}

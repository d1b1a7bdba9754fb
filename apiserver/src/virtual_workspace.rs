//! kcp's initializing and terminating virtual workspaces, served in process:
//! `/services/initializingworkspaces/<initializer>/clusters/<x>/...` (and `terminatingworkspaces/<terminator>`).
//!
//! The caller needs the verb `initialize` (`terminate`) on `workspacetypes/<type>` in the workspace holding the
//! type the entry names. Then, as kcp serves them:
//! - `/clusters/*`: list and watch `logicalclusters` across every space, narrowed by labels to those in the phase
//!   (`Initializing`, `Terminating`) that still carry the entry; one that stops matching is a `DELETED` event.
//! - `/clusters/<logical cluster name>`: `get` of its `LogicalCluster` and `get`/`update`/`patch` of its status,
//!   only while it matches; the caller acts with the synthetic group `system:kcp:initializer:<entry>`, by which the
//!   LogicalCluster's admission lets it remove that one entry and nothing else.
//! - any other request in that logical cluster, only while it matches: if the type lists `initializerPermissions`
//!   (`terminatorPermissions`), the request is judged by those rules here and made as the caller plus the
//!   synthetic group; otherwise it is made as the workspace's creator (`spec.createdBy`) and judged by the
//!   workspace's RBAC.
//!
//! `api_export.rs` serves kcp's APIExport virtual workspace the same way.
//!
//! What follows is the ordinary request path: this only decides who the request acts as, in which space, whether
//! RBAC is still to be asked, and which labels a list or watch is narrowed to.

mod api_export;

pub use api_export::exported_row;

use std::sync::Arc;

use kspaces_authz::rbac::{rule_allows, Attributes, PolicyRule};
use kspaces_authz::{Caller, UserInfo, MASTERS};
use kspaces_storage::SpaceName;
use serde_json::Value;

use crate::authorization::{self, Authorizer};
use crate::apis::request_info::{RequestInfo, SpacePath};
use crate::kinds::logical_cluster::{check_entry, LOGICAL_CLUSTER_NAME};
use crate::registry::selector::LabelSelector;
use crate::claims::Claims;
use crate::resolver::Resolver;
use crate::registry::{GenericStore, ObjectFilter, ResourceInfo, ResourceTable, Scope, Spaces};
use crate::status::{ApiError, ApiResult};
use crate::apis::lifecycle::{Lifecycle, PHASE_LABEL};
use crate::tenancy::types::{lifecycle_type, WorkspaceTypes};
use crate::tenancy::{self, Tree, ALL};

const GROUP: &str = "core.kcp.io";
const RESOURCE: &str = "logicalclusters";

/// What the virtual workspaces read: the LogicalClusters, the tree, the types and RBAC.
pub struct VirtualWorkspaces {
    pub registry: GenericStore,
    pub logical_clusters: Arc<ResourceInfo>,
    pub tree: Arc<Tree>,
    pub types: Arc<WorkspaceTypes>,
    pub authorizer: Arc<Authorizer>,
    /// The tenant of callers whose credentials name none (`--default-tenant`), for the creator acted as.
    pub default_tenant: Option<String>,
    /// The exports' schemas compiled, and what each workspace binds (the APIExport virtual workspace).
    pub resolver: Arc<Resolver>,
    pub exports: Arc<ResourceInfo>,
    /// APIBindings as stored (`v1alpha1`).
    pub bindings: Arc<ResourceInfo>,
    /// The APIBinding rows the export's virtual workspace serves read-only: every version.
    pub binding_versions: Vec<Arc<ResourceInfo>>,
    /// The claims each workspace accepted, and the built-in resources a claim may name.
    pub claims: Arc<Claims>,
    pub resources: ResourceTable,
}

/// How a request through a virtual workspace goes on along the ordinary path.
#[derive(Debug)]
pub struct Access {
    /// Who the request acts as from here on.
    pub caller: Caller,
    pub spaces: Spaces,
    /// Already judged here: the space's RBAC is not asked.
    pub authorized: bool,
    /// The labels a list or watch is narrowed to.
    pub labels: Option<LabelSelector>,
    /// The resources served (an export's), instead of the space's own; `None`: the space's.
    pub resources: Option<Vec<Arc<ResourceInfo>>>,
    /// What a list or watch across every space may see beyond labels (an export's: workspaces that bind it).
    pub only: Option<ObjectFilter>,
}

impl VirtualWorkspaces {
    /// Decides how `info` (a request under `/services/<lifecycle>/<entry>`) goes on, or refuses it.
    pub async fn admit(&self, info: &RequestInfo, lifecycle: Lifecycle, entry: &str, caller: Caller) -> ApiResult<Access> {
        if let Err(why) = check_entry(&self.authorizer, &self.tree, &caller, lifecycle, entry).await {
            let kind = lifecycle_type(entry).map(|(_, kind)| kind).unwrap_or_default();
            let attributes = Attributes::Resource { verb: lifecycle.verb().into(), group: "tenancy.kcp.io".into(),
                resource: "workspacetypes".into(), subresource: String::new(), name: kind, namespace: None };
            return Err(authorization::forbidden(&caller.user, &attributes, &why));
        }
        let target = match &info.space {
            SpacePath::Workspace(target) => target.as_str(),
            _ => return Err(ApiError::no_route()),
        };
        let is_logical_cluster = info.is_resource && info.group == GROUP && info.resource == RESOURCE;
        if target == ALL || target == "*" {
            // Only the LogicalClusters that wait for this entry, across every space, and only to list and watch;
            // discovery shows the built-in resources.
            if !info.is_resource {
                return Ok(Access { caller: acting(caller, lifecycle, entry), spaces: Spaces::All, authorized: true, labels: None, resources: None, only: None });
            }
            if !is_logical_cluster || !matches!(info.verb.as_str(), "list" | "watch") {
                return Err(ApiError::no_route());
            }
            return Ok(Access { caller: acting(caller, lifecycle, entry), spaces: Spaces::All, authorized: true, labels: Some(selector(lifecycle, entry)?), resources: None, only: None });
        }
        // One logical cluster, by its name (kcp takes no path here).
        let space = SpaceName::new(target).ok().filter(|_| !target.contains(':'))
            .filter(|space| self.tree.cluster(space).is_some())
            .ok_or_else(|| ApiError::not_found(GROUP, RESOURCE, LOGICAL_CLUSTER_NAME))?;
        let logical_cluster = self.registry.get(&self.logical_clusters, &Scope::one(space.clone(), None), LOGICAL_CLUSTER_NAME).await
            .map_err(|err| if err.code == 404 { ApiError::not_found(GROUP, RESOURCE, LOGICAL_CLUSTER_NAME) } else { err })?;
        let waits = logical_cluster.pointer("/status/phase").and_then(Value::as_str) == Some(lifecycle.phase())
            && lifecycle.entries(&logical_cluster).contains(&entry);
        if is_logical_cluster {
            let allowed = matches!((info.verb.as_str(), info.subresource.as_str()), ("get", "" | "status") | ("update" | "patch", "status"));
            if !allowed {
                let what = if info.subresource.is_empty() { RESOURCE.to_owned() } else { format!("{RESOURCE}/{}", info.subresource) };
                return Err(ApiError::method_not_supported(&info.verb, &what));
            }
            if !waits || info.name != LOGICAL_CLUSTER_NAME {
                return Err(ApiError::not_found(GROUP, RESOURCE, &info.name));
            }
            return Ok(Access { caller: acting(caller, lifecycle, entry), spaces: Spaces::One(space), authorized: true, labels: None, resources: None, only: None });
        }
        if !waits {
            return Err(ApiError::forbidden(format!("{} {entry:?} cannot access this workspace", lifecycle.noun())));
        }
        let permissions = self.permissions(lifecycle, entry)?;
        if !permissions.is_empty() {
            // Discovery is not content: the rules speak of what the controller may read and write.
            let attributes = authorization::attributes(info);
            let discovery = !info.is_resource && crate::apis::route::route(&info.path).is_discovery();
            if !discovery && !permissions.iter().any(|rule| rule_allows(rule, &attributes)) {
                return Err(ApiError::forbidden(format!("{} {entry:?} denied by {}: no rule allows {}", lifecycle.noun(),
                    lifecycle.permissions(), describe(&attributes))));
            }
            return Ok(Access { caller: acting(caller, lifecycle, entry), spaces: Spaces::One(space), authorized: true, labels: None, resources: None, only: None });
        }
        let creator = self.creator(&logical_cluster, &space)?;
        Ok(Access { caller: creator, spaces: Spaces::One(space), authorized: false, labels: None, resources: None, only: None })
    }

    /// The type's `initializerPermissions` (`terminatorPermissions`). A type that no longer exists serves nobody
    /// (kcp's 503: nothing to fall back to without knowing what the type allows).
    fn permissions(&self, lifecycle: Lifecycle, entry: &str) -> ApiResult<Vec<PolicyRule>> {
        let spec = lifecycle_type(entry).and_then(|(holder, kind)| self.types.get(&holder, &kind)).ok_or_else(|| {
            ApiError::new(503, "ServiceUnavailable", format!("{} {entry:?}: its WorkspaceType was not found", lifecycle.noun()))
        })?;
        Ok(match lifecycle {
            Lifecycle::Initializing => spec.initializer_permissions,
            Lifecycle::Terminating => spec.terminator_permissions,
        })
    }

    /// The workspace's creator, as `spec.createdBy` records them, in the workspace's tenant (or the system's, for
    /// `system:masters`).
    fn creator(&self, logical_cluster: &Value, space: &SpaceName) -> ApiResult<Caller> {
        let created_by = logical_cluster.pointer("/spec/createdBy").filter(|c| c.is_object());
        let name = created_by.and_then(|c| c.get("username")).and_then(Value::as_str).filter(|n| !n.is_empty()).ok_or_else(|| {
            ApiError::forbidden(format!("LogicalCluster {}|{LOGICAL_CLUSTER_NAME} has no createdBy recorded: its type must set {}",
                crate::registry::store::cluster_name(space), "initializerPermissions or terminatorPermissions"))
        })?;
        let text = |key: &str| created_by.and_then(|c| c.get(key)).and_then(Value::as_str).unwrap_or_default().to_owned();
        let groups: Vec<String> = created_by.and_then(|c| c.get("groups")).and_then(Value::as_array).into_iter().flatten()
            .filter_map(|g| g.as_str().map(str::to_owned)).collect();
        let tenant = (!groups.iter().any(|g| g == MASTERS)).then(|| self.tree.tenant_of(space));
        let user = UserInfo::authenticated(name.to_owned(), text("uid"), groups, tenant);
        Ok(tenancy::caller(user, self.default_tenant.as_deref()))
    }
}

/// The caller with the synthetic group of `entry`.
fn acting(mut caller: Caller, lifecycle: Lifecycle, entry: &str) -> Caller {
    caller.user.groups.push(lifecycle.group(entry));
    caller
}

/// The LogicalClusters waiting for `entry`: in the lifecycle's phase, with the entry's label.
fn selector(lifecycle: Lifecycle, entry: &str) -> ApiResult<LabelSelector> {
    let (key, value) = lifecycle.label(entry);
    LabelSelector::parse(&format!("{PHASE_LABEL}={},{key}={value}", lifecycle.phase()))
}

/// kcp's words for what a rule did not allow: `core/configmaps (x) in namespace default`.
fn describe(attributes: &Attributes) -> String {
    match attributes {
        Attributes::NonResource { verb, path } => format!("{verb} on {path}"),
        Attributes::Resource { verb, group, resource, subresource, name, namespace } => {
            let mut out = format!("{verb} on {}/{resource}", if group.is_empty() { "core" } else { group });
            if !subresource.is_empty() {
                out += &format!("/{subresource}");
            }
            if !name.is_empty() {
                out += &format!(" ({name})");
            }
            if let Some(namespace) = namespace.as_deref().filter(|n| !n.is_empty()) {
                out += &format!(" in namespace {namespace}");
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_read_as_kcps() {
        let attributes = Attributes::Resource { verb: "create".into(), group: String::new(), resource: "configmaps".into(),
            subresource: String::new(), name: String::new(), namespace: Some("default".into()) };
        assert_eq!(describe(&attributes), "create on core/configmaps in namespace default");
        let attributes = Attributes::Resource { verb: "patch".into(), group: GROUP.into(), resource: RESOURCE.into(),
            subresource: "status".into(), name: "cluster".into(), namespace: None };
        assert_eq!(describe(&attributes), "patch on core.kcp.io/logicalclusters/status (cluster)");
    }

    #[test]
    fn the_wildcard_selects_the_phase_and_the_entry() {
        let initializing = selector(Lifecycle::Initializing, "root:org").expect("a selector");
        let mut waiting = serde_json::json!({"metadata": {}, "status": {"phase": "Initializing", "initializers": ["root:org"]}});
        crate::apis::lifecycle::label_logical_cluster(&mut waiting);
        assert!(initializing.matches(&waiting));
        let mut other = serde_json::json!({"metadata": {}, "status": {"phase": "Initializing", "initializers": ["root:team"]}});
        crate::apis::lifecycle::label_logical_cluster(&mut other);
        assert!(!initializing.matches(&other));
        let mut terminating = serde_json::json!({"metadata": {}, "status": {"phase": "Ready", "terminators": ["root:org"]}});
        crate::apis::lifecycle::label_logical_cluster(&mut terminating);
        assert!(!selector(Lifecycle::Terminating, "root:org").expect("a selector").matches(&terminating), "not deleted yet");
        terminating["status"]["phase"] = "Terminating".into();
        crate::apis::lifecycle::label_logical_cluster(&mut terminating);
        assert!(selector(Lifecycle::Terminating, "root:org").expect("a selector").matches(&terminating));
    }
}

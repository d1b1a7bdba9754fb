//! kcp's APIExport virtual workspace: `/services/apiexport/<cluster>/<export>/clusters/<x>/...`, where one
//! controller serves an export to every workspace that binds it.
//!
//! The caller needs the request's verb on `apiexports/content` (name: the export) in the export's workspace, which
//! must be in root or in the caller's own tenant. Then:
//! - the exported resources, compiled from the export's schemas under its identity hash: `/clusters/*` lists and
//!   watches them across every workspace that binds the export now (objects stay stored under the identity in a
//!   workspace whose binding went, and are filtered out); `/clusters/<logical cluster>` serves every verb in one workspace that binds the
//!   export (kcp's "could not find suitable APIBinding" otherwise);
//! - `apibindings`, read only, narrowed to the bindings to this export by their `internal.apis.kcp.io/export`
//!   label;
//! - the resources the export claims, only where a binding accepted the claim and only the objects it covers
//!   (selected by the claim label `claims::ClaimLabels` keeps; in one workspace, a named object, and the object a
//!   create makes, must be covered);
//! - discovery shows the exported resources.
//!
//! The request then goes on as the caller, with RBAC already judged here.

use std::sync::Arc;

use kspaces_authz::rbac::Attributes;
use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::Value;

use super::{Access, VirtualWorkspaces};
use crate::authorization;
use crate::apis::request_info::{RequestInfo, SpacePath};
use crate::claims::label_key;
use crate::kinds::api_binding::{self, export_hash, EXPORT_LABEL};
use crate::kinds::api_export::{self, identity_hash, GROUP};
use crate::registry::selector::LabelSelector;
use crate::registry::store::space_of_cluster;
use crate::registry::{ObjectFilter, ResourceInfo, Scope, Spaces};
use crate::status::{ApiError, ApiResult};
use crate::tenancy::ALL;

impl VirtualWorkspaces {
    /// Decides how `info`, a request under `/services/apiexport/<cluster>/<export>`, goes on, or refuses it.
    pub async fn admit_export(&self, info: &RequestInfo, cluster: &str, export: &str, caller: Caller) -> ApiResult<Access> {
        let attributes = Attributes::Resource {
            verb: if info.is_resource { info.verb.clone() } else { "get".into() },
            group: GROUP.into(),
            resource: api_export::PLURAL.into(),
            subresource: "content".into(),
            name: export.to_owned(),
            namespace: None,
        };
        let denied = |why: &str| authorization::forbidden(&caller.user, &attributes, why);
        let holder = space_of_cluster(cluster).and_then(|space| self.tree.cluster(&space));
        // Another tenant's exports are as absent as missing ones.
        let Some(holder) = holder.filter(|h| caller.system || h.path == "root" || caller.tenant.as_deref() == Some(h.tenant.as_str())) else {
            return Err(denied("the export's workspace is not within the caller's reach"));
        };
        let decision = self.authorizer.authorize(&caller, &holder.cluster, &attributes).await?;
        if !decision.allowed {
            return Err(denied(&decision.reason));
        }
        let export_object = self.registry.get(&self.exports, &Scope::one(holder.cluster.clone(), None), export).await
            .map_err(|err| if err.code == 404 { ApiError::not_found(GROUP, api_export::PLURAL, export) } else { err })?;
        let Some(identity) = identity_hash(&export_object) else {
            return Err(ApiError::new(503, "ServiceUnavailable", format!("APIExport {export} has no identity yet")));
        };
        let exported = self.resolver.exported(&holder.cluster, &api_export::schemas(&export_object), identity);
        let claimed = self.claimed(&export_object, &exported);
        let target = match &info.space {
            SpacePath::Workspace(target) => target.as_str(),
            _ => return Err(ApiError::no_route()),
        };
        let bindings_label = || LabelSelector::parse(&format!("{EXPORT_LABEL}={}", export_hash(cluster, export)));
        let is_bindings = info.is_resource && info.group == GROUP && info.resource == api_binding::PLURAL;
        if is_bindings && !matches!(info.verb.as_str(), "get" | "list" | "watch") {
            return Err(ApiError::method_not_supported(&info.verb, api_binding::PLURAL));
        }
        // A claimed resource: only objects a binding's accepted claim covers (their claim label says so).
        let claimed_row = claimed.iter().find(|r| info.is_resource && r.group == info.group && r.plural == info.resource).cloned();
        let claim_label = || LabelSelector::parse(&label_key(cluster, export));
        let served: Vec<Arc<ResourceInfo>> = exported.iter().chain(&claimed).cloned().collect();
        let access = |spaces: Spaces, labels: Option<LabelSelector>, only: Option<ObjectFilter>| Access {
            caller: caller.clone(),
            spaces,
            authorized: true,
            labels,
            resources: Some(served.clone()),
            only,
        };
        if target == ALL || target == "*" {
            if info.is_resource && !matches!(info.verb.as_str(), "list" | "watch") {
                return Err(ApiError::bad_request(format!("{} across every workspace is not supported: name one logical cluster", info.verb)));
            }
            let labels = if is_bindings { Some(bindings_label()?) } else if claimed_row.is_some() { Some(claim_label()?) } else { None };
            // The exported resource's objects are stored under the export's identity in every workspace that ever
            // bound it: only those of workspaces that bind it now.
            let exported_resource = info.is_resource && exported.iter().any(|r| r.group == info.group && r.plural == info.resource);
            let only = exported_resource.then(|| self.still_bound(format!("{}.{}", info.resource, info.group), identity.to_owned()));
            return Ok(access(Spaces::All, labels, only));
        }
        // One logical cluster, by its name, that binds this export.
        let space = SpaceName::new(target).ok().filter(|_| !target.contains(':')).filter(|space| self.tree.cluster(space).is_some());
        let binds = |space: &SpaceName| exported.iter().any(|row| self.resolver.binds(space, &format!("{}.{}", row.plural, row.group), identity));
        let space = match space {
            Some(space) if binds(&space) || self.binds_by_label(&space, cluster, export).await? => space,
            _ => return Err(ApiError::forbidden(format!("could not find suitable APIBinding in target logical cluster {target:?} for APIExport {cluster}:{export}"))),
        };
        if let Some(row) = &claimed_row {
            let what = if row.group.is_empty() { row.plural.clone() } else { format!("{}.{}", row.plural, row.group) };
            let claim = self.claims.accepted(&space, (cluster, export), row).ok_or_else(|| ApiError::forbidden(format!(
                "the permission claim of APIExport {cluster}:{export} on {what} is not accepted in logical cluster {target:?}")))?;
            let namespace = info.namespace.as_deref().unwrap_or_default();
            if !info.name.is_empty() && !claim.covers(&info.name, namespace) {
                return Err(ApiError::forbidden(format!(
                    "the permission claim of APIExport {cluster}:{export} on {what} does not cover {:?} in logical cluster {target:?}", info.name)));
            }
            // What a create makes must be covered too (its name is only in the body).
            let covered = ObjectFilter(Arc::new(move |object: &Value| {
                let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
                claim.covers(text("/metadata/name"), text("/metadata/namespace"))
            }));
            return Ok(access(Spaces::One(space), Some(claim_label()?), Some(covered)));
        }
        let labels = if is_bindings { Some(bindings_label()?) } else { None };
        Ok(access(Spaces::One(space), labels, None))
    }

    /// The objects of resource `name` (`<plural>.<group>`) whose workspace binds it under `identity` now.
    fn still_bound(&self, name: String, identity: String) -> ObjectFilter {
        let resolver = self.resolver.clone();
        ObjectFilter(Arc::new(move |object: &Value| {
            let cluster = object.pointer("/metadata/annotations/kcp.io~1cluster").and_then(Value::as_str).unwrap_or_default();
            space_of_cluster(cluster).is_some_and(|space| resolver.binds(&space, &name, &identity))
        }))
    }

    /// The rows of the resources the export claims (`spec.permissionClaims`): built-in ones by group and
    /// resource, another export's by identity hash; a claim on the export's own resources is ignored (kcp's).
    fn claimed(&self, export: &Value, exported: &[Arc<ResourceInfo>]) -> Vec<Arc<ResourceInfo>> {
        let claims = export.pointer("/spec/permissionClaims").and_then(Value::as_array).into_iter().flatten();
        let mut rows = Vec::new();
        for claim in claims {
            let text = |key: &str| claim.get(key).and_then(Value::as_str).unwrap_or_default();
            let (group, resource, identity) = (text("group"), text("resource"), text("identityHash"));
            if exported.iter().any(|r| r.group == group && r.plural == resource) {
                continue;
            }
            if identity.is_empty() {
                rows.extend(self.resources.all().iter().filter(|r| r.group == group && r.plural == resource && r.custom.is_none() && !r.system_only).cloned());
            } else {
                rows.extend(self.resolver.identity_row(identity, group, resource));
            }
        }
        rows
    }

    /// Whether `space` holds an APIBinding to the export (one not bound yet, or an export with no resources).
    async fn binds_by_label(&self, space: &SpaceName, cluster: &str, export: &str) -> ApiResult<bool> {
        let hash = export_hash(cluster, export);
        let (items, _) = self.registry.list(&self.bindings, &Scope::one(space.clone(), None), &Default::default()).await?;
        Ok(items.iter().any(|b| b.pointer(&format!("/metadata/labels/{}", EXPORT_LABEL.replace('/', "~1"))).and_then(Value::as_str) == Some(hash.as_str())))
    }
}

/// The row a request through an export's virtual workspace reaches among `exported`, or the bindings' own.
pub fn exported_row(exported: &[Arc<ResourceInfo>], bindings: &[Arc<ResourceInfo>], group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
    bindings.iter().chain(exported).find(|r| r.group == group && r.version == version && r.plural == plural).cloned()
}

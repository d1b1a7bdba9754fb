//! The tenant controller: deletes everything in the space of a Terminating tenant (object finalizers are
//! honoured: such objects stay until their finalizers are removed; the space's cluster-wide RBAC goes last), then
//! lifts the tenant's `arktos`
//! finalizer, which removes the Tenant. A tenant re-created with the same name therefore starts empty.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use super::delete_content;
use crate::authorization::RBAC_GROUP;
use crate::registry::{ResourceInfo, Scope};
use crate::state::ApiServer;
use crate::status::{ApiError, ApiResult};
use crate::tenancy::{self, space_of};

/// Runs forever, checking the Terminating tenants every `interval`.
pub async fn run(server: Arc<ApiServer>, interval: Duration) {
    let mut ticker = tokio::time::interval(interval);
    // Tenants already Terminating when the server starts need one empty pass only: the creates the second pass
    // waits for were admitted by the process that stopped, and none survives it.
    let mut empty_before: HashSet<String> = server.tenants.terminating().into_iter().collect();
    loop {
        ticker.tick().await;
        let terminating = server.tenants.terminating();
        empty_before.retain(|t| terminating.contains(t));
        for tenant in terminating {
            match empty_space(&server, &tenant).await {
                // A create admitted just before the tenant turned Terminating may still be landing: finalize only
                // after two empty passes in a row, `interval` apart.
                Ok(true) if empty_before.contains(&tenant) => {
                    if let Err(err) = finalize(&server, &tenant).await {
                        tracing::warn!(%err, tenant, "tenant controller");
                    }
                }
                Ok(true) => {
                    empty_before.insert(tenant);
                }
                Ok(false) => {
                    empty_before.remove(&tenant);
                }
                Err(err) => tracing::warn!(%err, tenant, "tenant controller"),
            }
        }
    }
}

/// One pass over a Terminating tenant's space: deletes what is left; true if nothing was left. ClusterRoles and
/// ClusterRoleBindings go last, once everything else is gone, so the tenant's administrators keep their access
/// while the space drains (e.g. to lift a finalizer that holds the deletion up).
pub async fn empty_space(server: &ApiServer, tenant: &str) -> ApiResult<bool> {
    let space = Scope::one(space_of(tenant)?, None);
    let cluster_rbac = |r: &ResourceInfo| r.is(RBAC_GROUP, "ClusterRole") || r.is(RBAC_GROUP, "ClusterRoleBinding");
    // Custom resources too: of the space's own CRDs and of system CRDs, whichever definition serves them now.
    let custom = server.crds.stored_in(space.space()?);
    let content = server.resources.all().iter().filter(|r| !r.system_only && !cluster_rbac(r)).chain(&custom).map(|r| &**r);
    if !delete_content(server, content, &space).await? {
        return Ok(false);
    }
    delete_content(server, server.resources.all().iter().filter(|r| cluster_rbac(r)).map(|r| &**r), &space).await
}

/// Lifts the tenant's content finalizer, which removes the Tenant (it is already being deleted).
pub async fn finalize(server: &ApiServer, tenant: &str) -> ApiResult<()> {
    let tenants = server.resources.by_kind("", "Tenant").cloned().ok_or_else(|| ApiError::internal("no Tenant resource"))?;
    match super::finalize(server, &tenants, &Scope::one(space_of(tenancy::SYSTEM)?, None), tenant).await {
        Ok(()) | Err(ApiError { code: 404, .. }) => Ok(()),
        Err(err) => Err(err),
    }
}

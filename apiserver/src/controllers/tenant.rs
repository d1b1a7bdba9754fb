//! The tenant controller: deletes everything in the space of a Terminating tenant (object finalizers are
//! honoured: such objects stay until their finalizers are removed; the space's cluster-wide RBAC goes last), then
//! lifts the tenant's `arktos` finalizer, which removes the Tenant. A tenant re-created with the same name
//! therefore starts empty. At startup it also completes the space of any Active tenant whose creation was
//! interrupted before its space was made.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use crate::registry::{GenericStore, ResourceTable, Scope};
use crate::resolver::Resolver;
use crate::status::{ApiError, ApiResult};
use crate::tenancy::types::WorkspaceTypes;
use crate::tenancy::{self, space_of, Phase, TenantCache, Tree};

/// The tenant controller: what it reads and writes through.
#[derive(Clone)]
pub struct TenantController {
    pub registry: GenericStore,
    /// The built-in resources (a space's content, and the Tenant row).
    pub resources: ResourceTable,
    /// The custom resources a space may hold.
    pub resolver: Arc<Resolver>,
    /// Which tenants are Terminating.
    pub tenants: Arc<TenantCache>,
    /// A new tenant's type and its terminators (completing an interrupted space).
    pub types: Arc<WorkspaceTypes>,
    pub tree: Arc<Tree>,
}

impl TenantController {
    /// Completes interrupted spaces, then runs forever, checking the Terminating tenants every `interval`.
    pub async fn run(self, interval: Duration) {
        self.complete_spaces().await;
        let mut ticker = tokio::time::interval(interval);
        // Tenants already Terminating when the server starts need one empty pass only: the creates the second pass
        // waits for were admitted by the process that stopped, and none survives it.
        let mut empty_before: HashSet<String> = self.tenants.terminating().into_iter().collect();
        loop {
            ticker.tick().await;
            let terminating = self.tenants.terminating();
            empty_before.retain(|t| terminating.contains(t));
            for tenant in terminating {
                // Its type's terminators first (kcp's Terminating): the space stays as it is until they are gone.
                match self.held(&tenant).await {
                    Ok(false) => {}
                    Ok(true) => {
                        empty_before.remove(&tenant);
                        continue;
                    }
                    Err(err) => {
                        tracing::warn!(%err, tenant, "tenant controller");
                        continue;
                    }
                }
                match self.empty_space(&tenant).await {
                    // A create admitted just before the tenant turned Terminating may still be landing: finalize
                    // only after two empty passes in a row, `interval` apart.
                    Ok(true) if empty_before.contains(&tenant) => {
                        if let Err(err) = self.finalize(&tenant).await {
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

    /// Completes the space of any Active tenant whose creation was interrupted before its space was made.
    async fn complete_spaces(&self) {
        for (tenant, phase) in self.tenants.tenants() {
            if phase != Phase::Active {
                continue;
            }
            let done = tenancy::space::is_initialized(&self.registry, &self.resources, &tenant).await;
            if let Err(err) = match done {
                Ok(true) => Ok(()),
                Ok(false) => tenancy::space::initialize(&self.registry, &self.resources, &self.types, &self.tree, &tenant).await,
                Err(err) => Err(err),
            } {
                tracing::warn!(%err, tenant, "completing a tenant space");
            }
        }
    }

    /// True while the tenant's LogicalCluster lists terminators (it is then `Terminating`).
    async fn held(&self, tenant: &str) -> ApiResult<bool> {
        Ok(tenancy::space::hold_for_terminators(&self.registry, &self.resources, &space_of(tenant)?).await?.is_some())
    }

    /// One pass over a Terminating tenant's space: deletes what is left; true if nothing was left. ClusterRoles
    /// and ClusterRoleBindings go last, once everything else is gone, so the tenant's administrators keep their
    /// access while the space drains (e.g. to lift a finalizer that holds the deletion up).
    pub async fn empty_space(&self, tenant: &str) -> ApiResult<bool> {
        super::empty_space(&self.registry, &self.resources, &self.resolver, &space_of(tenant)?).await
    }

    /// Lifts the tenant's content finalizer, which removes the Tenant (it is already being deleted).
    pub async fn finalize(&self, tenant: &str) -> ApiResult<()> {
        let tenants = self.resources.by_kind("", "Tenant").ok_or_else(|| ApiError::internal("no Tenant resource"))?;
        match super::finalize(&self.registry, tenants, &Scope::one(space_of(tenancy::SYSTEM)?, None), tenant).await {
            Ok(()) | Err(ApiError { code: 404, .. }) => Ok(()),
            Err(err) => Err(err),
        }
    }
}

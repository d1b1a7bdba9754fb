//! Where each space is stored, with storage clusters (`kspaces serve --storage-cluster ID=URLS`): a tenant's
//! space, and every workspace under it, on the cluster its Tenant's `spec.storageClusterId` names; root and the
//! system workspaces on the default cluster. Read from the tenant cache and the workspace tree, so no storage read.

use std::sync::Arc;

use kspaces_storage::{ClusterId, Placement, SpaceName};

use super::{TenantCache, Tree};

/// The placement of spaces by their tenant.
pub struct ByTenant {
    pub tenants: Arc<TenantCache>,
    pub tree: Arc<Tree>,
}

impl Placement for ByTenant {
    /// A space this server knows no tenant for yet (a replica not yet told of a tenant another replica made) has
    /// no cluster: nothing of it is read or written until it is known, never on a guessed cluster.
    fn cluster_of(&self, space: &str) -> Option<ClusterId> {
        let space = SpaceName::new(space).ok()?;
        let tenant = self.tree.tenant_of(&space);
        if tenant == super::SYSTEM {
            return Some(ClusterId::DEFAULT);
        }
        self.tenants.storage_cluster(&tenant)
    }
}

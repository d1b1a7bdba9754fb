//! `ApiServer`: the state every request handler shares.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use kspaces_authz::UserInfo;
use kspaces_storage::{SpaceName, Store};

use crate::controllers::namespace::TerminatingNamespaces;
use crate::filters::authenticate::TokenFile;
use crate::metrics::Metrics;
use crate::openapi::OpenApi;
use crate::registry::{GenericStore, ResourceInfo, ResourceTable};
use crate::tenancy::{self, TenantCache};

/// Shared server state.
pub struct ApiServer {
    pub registry: GenericStore,
    /// Every resource served.
    pub resources: ResourceTable,
    /// What tenant users discover: `resources` without the system-only ones.
    pub tenant_resources: ResourceTable,
    pub tokens: TokenFile,
    /// Every tenant's phase, kept current by the registry.
    pub tenants: Arc<TenantCache>,
    /// `--default-tenant`: where callers whose credentials name no tenant go.
    pub default_tenant: Option<String>,
    pub terminating_namespaces: Arc<TerminatingNamespaces>,
    pub metrics: Metrics,
    pub started: Instant,
    openapi: OnceLock<OpenApi>,
}

impl ApiServer {
    pub fn new(store: Store, resources: ResourceTable, tokens: TokenFile, default_tenant: Option<String>) -> Arc<ApiServer> {
        let tenants = Arc::new(TenantCache::default());
        let terminating_namespaces = Arc::new(TerminatingNamespaces::default());
        let tenant_resources = ResourceTable::new(resources.all().iter().filter(|r| !r.system_only).map(|r| (**r).clone()).collect());
        Arc::new(ApiServer {
            registry: GenericStore::new(store, vec![tenants.clone(), terminating_namespaces.clone()]),
            resources,
            tenant_resources,
            tokens,
            tenants,
            default_tenant,
            terminating_namespaces,
            metrics: Metrics::default(),
            started: Instant::now(),
            openapi: OnceLock::new(),
        })
    }

    /// The OpenAPI documents, built on first use (about 50-80 ms once; see `server.rs`).
    pub fn openapi(&self) -> &OpenApi {
        self.openapi.get_or_init(|| {
            let resources: Vec<ResourceInfo> = self.resources.all().iter().map(|r| (**r).clone()).collect();
            OpenApi::build_with(&resources, tenancy::schemas::definitions())
        })
    }

    /// True for users of the system tenant.
    pub fn is_system_user(&self, user: &UserInfo) -> bool {
        tenancy::is_system_user(user, self.default_tenant.as_deref())
    }

    /// The resources `user` may discover.
    pub fn resources_for(&self, user: Option<&UserInfo>) -> &ResourceTable {
        match user {
            Some(user) if self.is_system_user(user) => &self.resources,
            _ => &self.tenant_resources,
        }
    }

    /// The `Namespace` resource (namespaced creates check their namespace through it).
    pub fn namespaces(&self) -> Arc<ResourceInfo> {
        self.resources.lookup("", "v1", "namespaces").cloned().unwrap_or_else(|| {
            Arc::new(ResourceInfo {
                group: String::new(),
                version: "v1".into(),
                kind: "Namespace".into(),
                plural: "namespaces".into(),
                singular: "namespace".into(),
                short_names: vec!["ns".into()],
                categories: vec![],
                namespaced: false,
                subresources: vec![],
                verbs: vec![],
                definition: None,
                system_only: false,
            })
        })
    }

    /// The system space: tenant `system`, workspace `root`.
    pub fn system_space(&self) -> SpaceName {
        SpaceName::system()
    }
}

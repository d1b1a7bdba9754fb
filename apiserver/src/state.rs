//! `ApiServer`: the state every request handler shares.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use kspaces_authz::UserInfo;
use kspaces_storage::{SpaceName, Store};

use crate::audit::Auditor;
use crate::authorization::Authorizer;
use crate::config::AuthorizationMode;
use crate::controllers::aggregation::AggregationQueue;
use crate::controllers::gc::GarbageCollector;
use crate::controllers::namespace::TerminatingNamespaces;
use crate::crds::Crds;
use crate::filters::authenticate::TokenFile;
use crate::filters::serviceaccount::TokenIssuer;
use crate::metrics::Metrics;
use crate::openapi::OpenApi;
use crate::registry::store::WriteObserver;
use crate::registry::{GenericStore, Spaces, ResourceInfo, ResourceTable};
use crate::tenancy::{self, TenantCache};

/// Shared server state.
pub struct ApiServer {
    pub registry: GenericStore,
    /// Every resource served.
    pub resources: ResourceTable,
    /// Every space's CRDs, and which custom resources a space serves.
    pub crds: Arc<Crds>,
    pub tokens: TokenFile,
    /// Signs and verifies service-account tokens.
    pub service_accounts: TokenIssuer,
    pub authorizer: Arc<Authorizer>,
    pub auditor: Auditor,
    /// Every tenant's phase, kept current by the registry.
    pub tenants: Arc<TenantCache>,
    /// `--default-tenant`: where callers whose credentials name no tenant go.
    pub default_tenant: Option<String>,
    pub terminating_namespaces: Arc<TerminatingNamespaces>,
    /// Spaces whose aggregated ClusterRoles need recomputing.
    pub aggregation: Arc<AggregationQueue>,
    /// The garbage collector's graph and queue (fed by every write).
    pub gc: Arc<GarbageCollector>,
    pub metrics: Metrics,
    pub started: Instant,
    openapi: OnceLock<OpenApi>,
}

/// What a server is made with, besides its store and resources.
pub struct Settings {
    pub tokens: TokenFile,
    pub service_accounts: TokenIssuer,
    pub default_tenant: Option<String>,
    pub authorization_modes: Vec<AuthorizationMode>,
    pub auditor: Auditor,
}

impl ApiServer {
    pub fn new(store: Store, resources: ResourceTable, settings: Settings) -> Arc<ApiServer> {
        let tenants = Arc::new(TenantCache::default());
        let terminating_namespaces = Arc::new(TerminatingNamespaces::default());
        let authorizer = Arc::new(Authorizer::new(settings.authorization_modes));
        let aggregation = Arc::new(AggregationQueue::default());
        let crds = Arc::new(Crds::new(resources.clone()));
        let gc = Arc::new(GarbageCollector::default());
        // The collector comes after `crds`: a CRD write is resolvable by the time it retries owners waiting for it.
        let observers: Vec<Arc<dyn WriteObserver>> =
            vec![tenants.clone(), terminating_namespaces.clone(), authorizer.clone(), aggregation.clone(), crds.clone(), gc.clone()];
        Arc::new(ApiServer {
            registry: GenericStore::new(store, observers, Some(crds.clone())),
            resources,
            crds,
            tokens: settings.tokens,
            service_accounts: settings.service_accounts,
            authorizer,
            auditor: settings.auditor,
            tenants,
            default_tenant: settings.default_tenant,
            terminating_namespaces,
            aggregation,
            gc,
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

    /// The built-in resources `user` may discover.
    pub fn resources_for(&self, user: Option<&UserInfo>) -> &ResourceTable {
        let builtin = self.crds.builtin_view();
        match user {
            Some(user) if self.is_system_user(user) => &builtin.system,
            _ => &builtin.tenant,
        }
    }

    /// The resource a request for `group/version/plural` in `spaces` reaches: built-in, or custom (see `Crds`).
    pub fn resource(&self, spaces: &Spaces, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.crds.lookup(spaces, group, version, plural)
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
            custom: None,
            })
        })
    }

    /// The system space: tenant `system`, workspace `root`.
    pub fn system_space(&self) -> SpaceName {
        SpaceName::system()
    }
}

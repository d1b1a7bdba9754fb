//! `ApiServer`: what the request path shares, made once by `server::wire`: the registry, and the narrow handles the
//! chain's stages and the handlers use.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use kspaces_authz::{Caller, UserInfo};

use crate::audit::Auditor;
use crate::authorization::Authorizer;
use crate::filters::authenticate::Authenticator;
use crate::flowcontrol::FlowControl;
use crate::kinds::workspace::BaseUrl;
use crate::metrics::Metrics;
use crate::openapi::OpenApi;
use crate::registry::{GenericStore, ResourceInfo, ResourceTable, Spaces};
use crate::resolver::Resolver;
use crate::tenancy::home::HomeConfig;
use crate::tenancy::{self, TenantCache, Tree};
use crate::virtual_workspace::VirtualWorkspaces;
use crate::kinds;

/// What the request path shares: the registry, and the narrow handles each stage uses.
pub struct ApiServer {
    pub registry: GenericStore,
    /// The built-in resources.
    pub resources: ResourceTable,
    /// Which resource a request reaches in a space, and what each space discovers.
    pub resolver: Arc<Resolver>,
    pub authenticator: Authenticator,
    pub authorizer: Arc<Authorizer>,
    pub auditor: Auditor,
    /// Every tenant's phase.
    pub tenants: Arc<TenantCache>,
    /// The workspace tree: paths and logical clusters.
    pub tree: Arc<Tree>,
    /// `--default-tenant`: where callers whose credentials name no tenant go.
    pub default_tenant: Option<String>,
    /// Where the server is reached (set once the listener is bound).
    pub base_url: Arc<BaseUrl>,
    /// `~`: who gets a home workspace, and where.
    pub homes: HomeConfig,
    /// `/services/initializingworkspaces/...` and `/services/terminatingworkspaces/...`.
    pub virtual_workspaces: VirtualWorkspaces,
    /// API Priority and Fairness: classification and seats.
    pub flowcontrol: Arc<FlowControl>,
    /// `--request-timeout`: how long a request that is not long-running may take, reading its body included.
    pub request_timeout: Duration,
    pub metrics: Metrics,
    /// `--data-dir`: where the PKI an online snapshot carries is.
    pub data_dir: std::path::PathBuf,
    /// The APIServices' group-versions: proxied, and merged into discovery.
    pub aggregator: Arc<crate::aggregator::Aggregator>,
    pub(crate) openapi: OnceLock<OpenApi>,
}

impl ApiServer {
    /// The OpenAPI documents of the built-in resources, built on first use (about 50-80 ms once; see `run`).
    pub fn openapi(&self) -> &OpenApi {
        self.openapi.get_or_init(|| {
            let resources: Vec<ResourceInfo> = self.resources.all().iter().map(|r| (**r).clone()).collect();
            OpenApi::build_with(&resources, kinds::definitions())
        })
    }

    /// The caller `user` is (its tenant, whether it is a system user).
    pub fn caller(&self, user: UserInfo) -> Caller {
        tenancy::caller(user, self.default_tenant.as_deref())
    }

    /// The built-in resources `caller` may discover.
    pub fn resources_for(&self, caller: Option<&Caller>) -> &ResourceTable {
        let builtin = self.resolver.builtin_view();
        match caller {
            Some(caller) if caller.system => &builtin.system,
            _ => &builtin.tenant,
        }
    }

    /// The resource a request for `group/version/plural` in `spaces` reaches: built-in, or custom (see
    /// `Resolver`).
    pub fn resource(&self, spaces: &Spaces, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.resolver.lookup(spaces, group, version, plural)
    }
}

//! `kspaces serve`: open the store, make the PKI and admin kubeconfig, wire the server, bootstrap, and serve
//! HTTPS. This is the one place that wires things: the caches, the kinds' strategies and admission, the
//! registry, the request path's handles (`ApiServer`) and the controllers, each given what it uses.

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use actix_web::{middleware, web, App, HttpServer};
use kspaces_storage::sled::SledConfig;
use kspaces_storage::{ClusterId, Clusters, KeyLayout, SpaceName, Store, StoreConfig};
use prometheus_client::metrics::gauge::Gauge;
use serde_json::json;
use tokio::task::JoinHandle;

use crate::api_server::ApiServer;
use crate::audit::Auditor;
use crate::authorization::{Authorizer, PolicySource};
use crate::config::{AuthorizationMode, ServeArgs, StorageBackend};
use crate::controllers::aggregation::{AggregationController, AggregationQueue};
use crate::controllers::space_defaults::{Serving, SpaceDefaultsController, SpaceDefaultsQueue};
use crate::claims::Claims;
use crate::quota::Quotas;
use crate::controllers::apis::{ApisController, ApisQueue};
use crate::controllers::type_checking::{TypeCheckingController, TypeCheckingQueue};
use crate::controllers::crd::CrdController;
use crate::controllers::gc::{GarbageCollector, GcController};
use crate::controllers::leader::{self, Elector, Stepdown, Timing};
use crate::controllers::namespace::{NamespaceController, TerminatingNamespaces};
use crate::controllers::tenant::TenantController;
use crate::controllers::workspace::{PendingWorkspaces, WorkspaceController};
use crate::filters::authenticate::{from_certificate, Authenticator, PeerIdentity, TokenFile};
use crate::filters::request_header::{FrontProxy, RequestHeader};
use crate::filters::token_issuer::{TokenIssuer, TokenOptions};
use crate::flowcontrol::FlowControl;
use crate::metrics::Metrics;
use crate::pki::{self, CertificateAuthority, PkiPaths};
use crate::registry::feed::Feed;
use crate::registry::observe::WriteObserver;
use crate::filters::oidc::config::OidcFlags;
use crate::filters::oidc::{self, OidcAuthenticator};
use crate::registry::{GenericStore, ResourceTable, Scope, Wiring, WriteContext, SERVER_MANAGER};
use crate::kinds::workspace::BaseUrl;
use crate::resolver::Resolver;
use crate::status::{ApiError, ApiResult};
use crate::tenancy::home::HomeConfig;
use crate::tenancy::types::WorkspaceTypes;
use crate::tenancy::{self, TenantCache, Tree};
use crate::virtual_workspace::VirtualWorkspaces;
use crate::{chain, controllers, kinds};

#[cfg(test)]
mod tests;

/// What a server is made of, besides its store.
pub struct Settings {
    pub tokens: TokenFile,
    pub issuer: TokenIssuer,
    /// The OIDC issuers whose ID tokens authenticate users (`--oidc-*`).
    pub oidc: Arc<OidcAuthenticator>,
    /// `--authentication-token-webhook-config-file`.
    pub token_webhook: Option<Arc<crate::filters::token_webhook::TokenWebhook>>,
    /// `--authorization-webhook-config-file`.
    pub authorization_webhook: Option<Arc<crate::authorization::webhook::AuthorizationWebhook>>,
    pub default_tenant: Option<String>,
    pub authorization_modes: Vec<AuthorizationMode>,
    pub auditor: Auditor,
    pub homes: HomeConfig,
    /// The controllers' Lease, when replicas share the store.
    pub leader_election: Timing,
    pub flowcontrol: crate::flowcontrol::Settings,
    /// `--request-timeout`.
    pub request_timeout: Duration,
    /// `--service-cluster-ip-range` and `--service-node-port-range`.
    pub service_ranges: crate::kinds::service::Ranges,
    /// The CA that signs approved `kubernetes.io/kube-apiserver-client` requests: the server's own, when it is also
    /// the client CA (not with `--client-ca-file`).
    pub signing_ca: Option<CertificateAuthority>,
    /// `--tenant-webhook-allowed-cidrs` (empty: any address).
    pub webhook_cidrs: Vec<crate::kinds::admission_webhook::reach::Cidr>,
    /// `--data-dir`: the identity files an online snapshot carries.
    pub data_dir: PathBuf,
    /// `--requestheader-*`: front proxies and the headers naming their users.
    pub request_header: Option<Arc<crate::filters::request_header::RequestHeader>>,
    /// `--proxy-client-cert-file` and `--proxy-client-key-file`: what the aggregator presents to APIServices' servers.
    pub proxy_identity: Option<kinds::api_service::Identity>,
}

/// The controllers of one server, made with what each uses; `start` runs them.
pub struct Controllers {
    namespace: NamespaceController,
    tenant: TenantController,
    workspace: WorkspaceController,
    crd: CrdController,
    aggregation: AggregationController,
    gc: Arc<GcController>,
    apis: ApisController,
    space_defaults: SpaceDefaultsController,
    type_checking: TypeCheckingController,
    store: Clusters,
    /// With a store other replicas share: the controllers run only while this replica holds their Lease.
    elector: Option<Elector>,
    /// 1 while the controllers run here.
    leading: Gauge,
    /// APIServices' availability, checked on every replica (each serves discovery from its own checks).
    availability: Option<crate::aggregator::available::Availability>,
}

impl Controllers {
    /// Tells the controllers where the server listens and the CA its clients trust (what the `kubernetes`
    /// Service's endpoints and every namespace's `kube-root-ca.crt` say).
    pub fn serving(&mut self, serving: Serving) {
        self.space_defaults.serving = Some(Arc::new(serving));
    }

    /// Starts the controllers on the current runtime: at once, or, when replicas share the store, whenever this
    /// replica wins their Lease (and stops them when it loses it; the `Stepdown` gives the Lease up on a graceful
    /// shutdown). The garbage collector's graph is loaded on every replica: it is a cache.
    pub fn start(mut self) -> Option<Stepdown> {
        actix_web::rt::spawn(controllers::gc::load(self.gc.clone()));
        if let Some(availability) = self.availability.take() {
            actix_web::rt::spawn(availability.run(AVAILABILITY_INTERVAL));
        }
        match self.elector.take() {
            Some(elector) => {
                let leading = self.leading.clone();
                let (stepdown, stop) = Elector::stepdown();
                actix_web::rt::spawn(elector.run(leading, move || self.spawn(), stop));
                Some(stepdown)
            }
            None => {
                self.leading.set(1);
                self.spawn();
                None
            }
        }
    }

    /// Spawns every controller loop, as a freshly started process would run them.
    fn spawn(&self) -> Vec<JoinHandle<()>> {
        vec![
            actix_web::rt::spawn(self.namespace.clone().run(Duration::from_millis(500))),
            actix_web::rt::spawn(self.tenant.clone().run(Duration::from_millis(500))),
            actix_web::rt::spawn(self.workspace.clone().run(Duration::from_millis(200))),
            actix_web::rt::spawn(self.crd.clone().run(Duration::from_millis(200))),
            actix_web::rt::spawn(self.aggregation.clone().run(Duration::from_millis(50))),
            actix_web::rt::spawn(controllers::gc::work(self.gc.clone())),
            actix_web::rt::spawn(self.apis.clone().run()),
            actix_web::rt::spawn(self.space_defaults.clone().run(Duration::from_millis(500))),
            actix_web::rt::spawn(self.type_checking.clone().run(Duration::from_millis(50))),
            actix_web::rt::spawn(controllers::compaction::run(self.store.clone(), COMPACTION_INTERVAL)),
        ]
    }
}

/// The registry and the caches its writes feed, wired together (what `wire` builds the server on, and what the
/// registry's in-process tests run against).
pub struct Core {
    pub registry: GenericStore,
    /// The built-in resources.
    pub resources: ResourceTable,
    pub tenants: Arc<TenantCache>,
    pub tree: Arc<Tree>,
    pub types: Arc<WorkspaceTypes>,
    /// Where the server is reached, for workspaces' `spec.URL` (set once the listener is bound).
    pub base_url: Arc<BaseUrl>,
    pub resolver: Arc<Resolver>,
    pub authorizer: Arc<Authorizer>,
    pub terminating_namespaces: Arc<TerminatingNamespaces>,
    pub pending_workspaces: Arc<PendingWorkspaces>,
    pub aggregation: Arc<AggregationQueue>,
    /// Namespaces whose default objects are to be looked at.
    pub space_defaults: Arc<SpaceDefaultsQueue>,
    pub gc: Arc<GarbageCollector>,
    pub apis: Arc<ApisQueue>,
    /// ValidatingAdmissionPolicies whose status is behind their spec.
    pub type_checking: Arc<TypeCheckingQueue>,
    pub claims: Arc<Claims>,
    /// Each limited space's usage (the registry's limits).
    pub quotas: Arc<Quotas>,
    pub flowcontrol: Arc<FlowControl>,
    /// What each space's Services hold of the service ranges.
    pub services: Arc<crate::kinds::service::ServiceAllocations>,
    /// The CA approved client CertificateSigningRequests are signed with.
    pub csr_signer: Arc<crate::kinds::certificate_signing_request::CsrSigner>,
    /// Where tenants' admission webhooks may call (`--tenant-webhook-allowed-cidrs`).
    pub webhook_reach: Arc<crate::kinds::admission_webhook::reach::Reach>,
    /// The tenants' own issuers (WorkspaceAuthenticationConfigurations), for the authenticator.
    pub workspace_issuers: Arc<crate::filters::oidc::workspace::WorkspaceIssuers>,
    /// The APIServices (the aggregator's).
    pub api_services: Arc<kinds::api_service::ApiServices>,
    /// The kinds' own caches that follow every stored object of a kind (the admission webhooks' configurations).
    pub kind_caches: Vec<Arc<dyn WriteObserver>>,
}

impl Core {
    /// Wires the registry over `store`: the caches, the kinds' strategies and admission, the observers. The
    /// caches start empty: `prime` fills them from the store.
    pub fn new(store: impl Into<Clusters>, authorization_modes: Vec<AuthorizationMode>) -> Core {
        let store: Clusters = store.into();
        let resources = ResourceTable::new(kinds::resources());
        let tenants = Arc::new(TenantCache::default());
        let tree = Arc::new(Tree::default());
        store.place_with(Arc::new(tenancy::placement::ByTenant { tenants: tenants.clone(), tree: tree.clone() }));
        let types = Arc::new(WorkspaceTypes::default());
        let base_url = Arc::new(BaseUrl::default());
        let resolver = Arc::new(Resolver::new(resources.clone(), tenants.clone(), tree.clone()).with_definitions(kinds::definitions()));
        let policies = PolicySource::new(crate::registry::Reader::new(store.clone()), &resources, tree.clone());
        let authorizer = Arc::new(Authorizer::new(authorization_modes, policies));
        let pending_workspaces = Arc::new(PendingWorkspaces::default());
        let waiting = pending_workspaces.clone();
        let terminating_namespaces = Arc::new(TerminatingNamespaces::notifying(Box::new(move |space| waiting.namespace_removed(space))));
        let aggregation = Arc::new(AggregationQueue::default());
        let space_defaults = Arc::new(SpaceDefaultsQueue::default());
        let gc = Arc::new(GarbageCollector::default());
        let apis = Arc::new(ApisQueue::default());
        let type_checking = Arc::new(TypeCheckingQueue::default());
        let claims = Arc::new(Claims::default());
        let quotas = Quotas::new(crate::registry::Reader::new(store.clone()));
        let flowcontrol = Arc::new(FlowControl::default());
        let services = Arc::new(kinds::service::ServiceAllocations::default());
        let csr_signer = Arc::new(kinds::certificate_signing_request::CsrSigner::default());
        let webhook_reach = Arc::new(kinds::admission_webhook::reach::Reach::new(base_url.clone()));
        let reach = webhook_reach.clone();
        let workspace_issuers = Arc::new(crate::filters::oidc::workspace::WorkspaceIssuers::new(Arc::new(move |space, address| reach.may_call(space, address))));
        let api_services = Arc::new(kinds::api_service::ApiServices::default());
        let context = kinds::Context {
            resolver: resolver.clone(),
            tenants: tenants.clone(),
            tree: tree.clone(),
            types: types.clone(),
            authorizer: authorizer.clone(),
            resources: resources.clone(),
            base_url: base_url.clone(),
            claims: claims.clone(),
            quotas: quotas.clone(),
            flowcontrol: flowcontrol.clone(),
            storage_clusters: store.ids().collect(),
            services: services.clone(),
            csr_signer: csr_signer.clone(),
            webhook_reach: webhook_reach.clone(),
            workspace_issuers: workspace_issuers.clone(),
            api_services: api_services.clone(),
        };
        // The tenant cache and the tree come before the resolver (which reads tenants' labels and spaces'
        // tenants), and the collector after the resolver: a CRD write is resolvable by the time it retries owners
        // waiting for it.
        let kinds = kinds::rules(&context);
        let mut observers: Vec<Arc<dyn WriteObserver>> = vec![tenants.clone(), tree.clone(), types.clone(), terminating_namespaces.clone(),
            pending_workspaces.clone(), authorizer.clone(), aggregation.clone(), resolver.clone(), gc.clone(), apis.clone(), claims.clone(),
            quotas.clone(), flowcontrol.clone(), services.clone(), space_defaults.clone(), type_checking.clone()];
        // The kinds' caches that start from every stored object of a kind are primed (and fed) with the server's.
        let kind_caches: Vec<Arc<dyn WriteObserver>> = kinds.observers.iter().filter(|o| !o.follows().is_empty()).cloned().collect();
        observers.extend(kinds.observers);
        let registry = GenericStore::new(store, Wiring {
            strategies: kinds.strategies,
            admission: kinds.admission,
            observers,
            tenants: tree.clone(),
            limits: quotas.clone(),
        });
        Core { registry, resources, tenants, tree, types, base_url, resolver, authorizer, terminating_namespaces, pending_workspaces, aggregation, space_defaults, gc, apis, type_checking, claims,
            quotas, flowcontrol, services, csr_signer, webhook_reach, workspace_issuers, api_services, kind_caches }
    }

    /// Primes the caches the request path reads (tenants, the workspace tree and types, CRDs and policies,
    /// schemas and bindings, exports' maximal permission policies, accepted claims) from the store, and the APIs controller's queue
    /// (every export and binding).
    pub async fn prime(&self) -> ApiResult<()> {
        self.registry.prime(&self.primed(), &self.resources).await
    }

    fn primed(&self) -> Vec<Arc<dyn WriteObserver>> {
        let caches: Vec<Arc<dyn WriteObserver>> = vec![self.tenants.clone(), self.tree.clone(), self.types.clone(), self.resolver.clone(), self.apis.clone(), self.authorizer.clone(),
            self.claims.clone(), self.quotas.clone(), self.flowcontrol.clone(), self.services.clone()];
        caches.into_iter().chain(self.kind_caches.iter().cloned()).collect()
    }

    /// Primes the caches, then, when other processes write the store too (replicas on one etcd), keeps every
    /// observer following the store's watch from before the priming read (`registry::feed`).
    pub async fn prime_and_follow(&self) -> ApiResult<()> {
        let clusters = self.registry.reader().clusters().clone();
        let mut from = Vec::new();
        for (_, store) in clusters.members() {
            from.push(store.current_revision().await?);
        }
        self.prime().await?;
        if clusters.shared() {
            for ((_, store), from) in clusters.members().iter().zip(from) {
                let feed = Feed { store: store.clone(), registry: self.registry.clone(), rows: self.resolver.clone(), primed: self.primed(), table: self.resources.clone() };
                actix_web::rt::spawn(feed.run(from));
            }
        }
        Ok(())
    }
}

/// Wires a server over `store`: the registry and its caches (primed from the store), the request path's
/// handles, and the controllers (not started).
pub async fn wire(store: impl Into<Clusters>, settings: Settings) -> Result<(Arc<ApiServer>, Controllers), ServeError> {
    let store: Clusters = store.into();
    let core = Core::new(store.clone(), settings.authorization_modes);
    core.services.set_ranges(settings.service_ranges);
    core.webhook_reach.allow(settings.webhook_cidrs);
    if let Some(identity) = settings.proxy_identity {
        core.api_services.set_identity(identity);
    }
    if let Some(webhook) = settings.authorization_webhook {
        core.authorizer.set_webhook(webhook);
    }
    if let Some(ca) = settings.signing_ca {
        core.csr_signer.set(ca);
    }
    // A tenant restore a kill -9 stopped is undone before any cache reads the store (one process's store only:
    // on a shared one, another replica's restore may be under way; the next restore of that tenant undoes it).
    if !store.shared() {
        crate::snapshot::clean_half_restores(store.default_store()).await.map_err(|err| ServeError::Bootstrap(err.to_string()))?;
    }
    core.prime_and_follow().await.map_err(|err| ServeError::Bootstrap(err.message))?;
    let Core { registry, resources, tenants, tree, types, base_url, resolver, authorizer, terminating_namespaces, pending_workspaces, aggregation, space_defaults, gc, apis, type_checking, claims,
        quotas: _, flowcontrol, services: _, csr_signer: _, webhook_reach: _, workspace_issuers, api_services, kind_caches: _ } = core;
    let row = |group: &str, kind: &str| resources.by_kind(group, kind).cloned().ok_or_else(|| ServeError::Bootstrap(format!("no {kind} resource")));
    let mut metrics = Metrics::default();
    flowcontrol.configure(settings.flowcontrol);
    flowcontrol.metrics().register(metrics.registry_mut());
    registry.admission_metrics().register(metrics.registry_mut());
    let aggregator = Arc::new(crate::aggregator::Aggregator {
        apis: api_services,
        endpoints: kinds::service::endpoints::Endpoints::new(&resources),
        registry: registry.clone(),
        tree: tree.clone(),
    });
    let leading = metrics.leading();
    let controllers = Controllers {
        availability: Some(crate::aggregator::available::Availability {
            aggregator: aggregator.clone(),
            api_services: row(kinds::api_service::GROUP, kinds::api_service::NAME)?,
            leading: leading.clone(),
        }),
        namespace: NamespaceController {
            registry: registry.clone(),
            resources: resources.clone(),
            resolver: resolver.clone(),
            queue: terminating_namespaces,
            tree: tree.clone(),
        },
        tenant: TenantController {
            registry: registry.clone(),
            resources: resources.clone(),
            resolver: resolver.clone(),
            tenants: tenants.clone(),
            types: types.clone(),
            tree: tree.clone(),
        },
        workspace: WorkspaceController {
            registry: registry.clone(),
            resources: resources.clone(),
            resolver: resolver.clone(),
            tree: tree.clone(),
            queue: pending_workspaces,
        },
        crd: CrdController { registry: registry.clone(), resolver: resolver.clone(), crds: row(kinds::crd::GROUP, kinds::crd::NAME)? },
        aggregation: AggregationController { registry: registry.clone(), cluster_roles: row(crate::authorization::RBAC_GROUP, "ClusterRole")?, queue: aggregation },
        gc: Arc::new(GcController { registry: registry.clone(), resources: resources.clone(), resolver: resolver.clone(), state: gc,
            loaded: tokio::sync::watch::channel(false).0 }),
        apis: ApisController { registry: registry.clone(), resources: resources.clone(), resolver: resolver.clone(), tree: tree.clone(), claims: claims.clone(), queue: apis },
        space_defaults: SpaceDefaultsController { registry: registry.clone(), resources: resources.clone(), queue: space_defaults,
            tenants: tenants.clone(), serving: None },
        type_checking: TypeCheckingController { registry: registry.clone(), resolver: resolver.clone(), queue: type_checking,
            policies: row(kinds::admission_policy::matching::GROUP, "ValidatingAdmissionPolicy")? },
        elector: match registry.reader().shared() {
            true => Some(Elector {
                registry: registry.clone(),
                leases: row("coordination.k8s.io", "Lease")?,
                space: SpaceName::new(tenancy::SYSTEM_ADMIN).map_err(|err| ServeError::Bootstrap(err.to_string()))?,
                identity: leader::identity(),
                timing: settings.leader_election,
            }),
            false => None,
        },
        leading,
        store,
    };
    let authenticator = Authenticator {
        tokens: settings.tokens,
        issuer: settings.issuer,
        oidc: settings.oidc,
        webhook: settings.token_webhook,
        tenants: tenants.clone(),
        tree: tree.clone(),
        reader: registry.reader().clone(),
        resources: resources.clone(),
        types: types.clone(),
        workspace_issuers,
        request_header: settings.request_header,
    };
    let virtual_workspaces = VirtualWorkspaces {
        registry: registry.clone(),
        logical_clusters: row("core.kcp.io", "LogicalCluster")?,
        tree: tree.clone(),
        types,
        authorizer: authorizer.clone(),
        default_tenant: settings.default_tenant.clone(),
        resolver: resolver.clone(),
        exports: row(kinds::api_export::GROUP, kinds::api_export::NAME)?,
        bindings: row(kinds::api_export::GROUP, kinds::api_binding::NAME)?,
        binding_versions: resources.all().iter().filter(|r| r.is(kinds::api_export::GROUP, kinds::api_binding::NAME)).cloned().collect(),
        claims,
        resources: resources.clone(),
    };
    let server = Arc::new(ApiServer {
        registry,
        resources,
        resolver,
        authenticator,
        authorizer,
        auditor: settings.auditor,
        tenants,
        tree,
        base_url,
        homes: settings.homes,
        virtual_workspaces,
        default_tenant: settings.default_tenant,
        flowcontrol,
        request_timeout: settings.request_timeout,
        metrics,
        data_dir: settings.data_dir,
        aggregator,
        openapi: OnceLock::new(),
    });
    Ok((server, controllers))
}

/// `--requestheader-*`, when `--requestheader-client-ca-file` is given.
fn request_header(args: &ServeArgs, client_ca: &str) -> Result<Option<Arc<RequestHeader>>, ServeError> {
    let Some(path) = &args.requestheader_client_ca_file else { return Ok(None) };
    let ca = crate::filters::request_header::pem_of(path).map_err(ServeError::Config)?;
    let settings = RequestHeader::new(ca, client_ca, args.requestheader_allowed_names.clone(), args.requestheader_username_headers.clone(),
        args.requestheader_group_headers.clone(), args.requestheader_extra_headers_prefix.clone()).map_err(ServeError::Config)?;
    Ok(Some(Arc::new(settings)))
}

/// `--proxy-client-cert-file` and `--proxy-client-key-file`, read (both or neither).
fn proxy_identity(args: &ServeArgs) -> Result<Option<kinds::api_service::Identity>, ServeError> {
    match (&args.proxy_client_cert_file, &args.proxy_client_key_file) {
        (None, None) => Ok(None),
        (Some(certificate), Some(key)) => {
            let identity = kinds::api_service::Identity {
                certificate: std::fs::read(certificate).map_err(io_err(certificate))?,
                key: std::fs::read(key).map_err(io_err(key))?,
            };
            crate::outbound::Tls::insecure(Some((&identity.certificate, &identity.key)))
                .map_err(|why| ServeError::Config(format!("--proxy-client-cert-file and --proxy-client-key-file: {why}")))?;
            Ok(Some(identity))
        }
        _ => Err(ServeError::Config("--proxy-client-cert-file and --proxy-client-key-file go together".into())),
    }
}

/// The OIDC issuers of the `--oidc-*` flags or of `--authentication-config` (with the file's text, to see when it
/// changes).
fn oidc_authenticator(args: &ServeArgs) -> Result<(OidcAuthenticator, Option<String>), ServeError> {
    let flags = OidcFlags {
        issuer_url: args.oidc_issuer_url.clone(),
        client_id: args.oidc_client_id.clone(),
        username_claim: args.oidc_username_claim.clone(),
        username_prefix: args.oidc_username_prefix.clone(),
        groups_claim: args.oidc_groups_claim.clone(),
        groups_prefix: args.oidc_groups_prefix.clone(),
        ca_file: args.oidc_ca_file.clone(),
        required_claims: args.oidc_required_claims.clone(),
        signing_algs: args.oidc_signing_algs.clone(),
    };
    if let Some(path) = &args.authentication_config {
        if flags.issuer_url.is_some() || flags.any_given() {
            return Err(ServeError::Config(oidc::config::MUTUALLY_EXCLUSIVE.into()));
        }
        let (text, issuers) = oidc::config::load_authentication_config(path).map_err(ServeError::Config)?;
        return Ok((OidcAuthenticator::new(issuers), Some(text)));
    }
    if flags.issuer_url.is_none() && flags.any_given() {
        return Err(ServeError::Config("the --oidc-* flags need --oidc-issuer-url".into()));
    }
    let issuer = flags.issuer().map_err(ServeError::Config)?;
    Ok((OidcAuthenticator::new(issuer.into_iter().collect()), None))
}

/// How long a call to the token or authorization webhook may take.
const AUTH_WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// The token webhook and the authorization webhook of their kubeconfig-format files (`v1` reviews only).
#[allow(clippy::type_complexity)]
fn auth_webhooks(args: &ServeArgs) -> Result<(Option<Arc<crate::filters::token_webhook::TokenWebhook>>,
    Option<Arc<crate::authorization::webhook::AuthorizationWebhook>>), ServeError> {
    use crate::outbound::kubeconfig::Endpoint;
    for (flag, version) in [("--authentication-token-webhook-version", &args.authentication_token_webhook_version),
        ("--authorization-webhook-version", &args.authorization_webhook_version)] {
        if version != "v1" {
            return Err(ServeError::Config(format!("{flag} {version:?}: only v1 is supported")));
        }
    }
    let token = match &args.authentication_token_webhook_config_file {
        Some(path) => {
            let endpoint = Endpoint::load("--authentication-token-webhook-config-file", path, AUTH_WEBHOOK_TIMEOUT).map_err(ServeError::Config)?;
            Some(Arc::new(crate::filters::token_webhook::TokenWebhook::new(endpoint, args.authentication_token_webhook_cache_ttl)))
        }
        None => None,
    };
    let mode = args.authorization_mode.contains(&AuthorizationMode::Webhook);
    let authorization = match (&args.authorization_webhook_config_file, mode) {
        (Some(path), true) => {
            let endpoint = Endpoint::load("--authorization-webhook-config-file", path, AUTH_WEBHOOK_TIMEOUT).map_err(ServeError::Config)?;
            Some(Arc::new(crate::authorization::webhook::AuthorizationWebhook::new(endpoint,
                args.authorization_webhook_cache_authorized_ttl, args.authorization_webhook_cache_unauthorized_ttl)))
        }
        (None, false) => None,
        (None, true) => return Err(ServeError::Config("--authorization-mode Webhook needs --authorization-webhook-config-file".into())),
        (Some(_), false) => return Err(ServeError::Config(
            "--authorization-webhook-config-file is used only with Webhook in --authorization-mode (e.g. RBAC,Webhook)".into())),
    };
    Ok((token, authorization))
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Pki(#[from] pki::PkiError),
    #[error("storage: {0}")]
    Storage(#[from] kspaces_storage::StorageError),
    #[error(transparent)]
    Tokens(#[from] crate::filters::authenticate::TokenFileError),
    #[error("service-account keys: {0}")]
    ServiceAccounts(#[from] crate::filters::token_issuer::TokenError),
    #[error("audit: {0}")]
    Audit(#[from] crate::audit::AuditError),
    #[error("bootstrap: {0}")]
    Bootstrap(String),
    #[error("{0}")]
    Config(String),
}

/// How long a graceful shutdown waits to give the controllers' Lease up.
const STEPDOWN_WITHIN: Duration = Duration::from_secs(5);

/// How often storage history is compacted (kube-apiserver's default).
const COMPACTION_INTERVAL: Duration = Duration::from_secs(300);

/// How often every APIService's server is asked whether it is there (and at once when one is written).
const AVAILABILITY_INTERVAL: Duration = Duration::from_secs(5);

async fn open_store(args: &ServeArgs) -> Result<Clusters, ServeError> {
    let layout = KeyLayout::new(&args.etcd_prefix)?;
    let config = StoreConfig { layout, ..StoreConfig::default() };
    let default = match args.storage_backend {
        StorageBackend::Sled => Store::open_sled(&SledConfig::new(args.data_dir.join("db")), config.clone())?,
        StorageBackend::Etcd => {
            if args.etcd_servers.is_empty() {
                return Err(ServeError::Config("--storage-backend etcd needs --etcd-servers".into()));
            }
            let etcd = kspaces_storage::etcd::EtcdConfig::new(args.etcd_servers.clone());
            let store = Store::open_etcd(&etcd, config.clone()).await?;
            if store.get(&crate::snapshot::restore_marker(store.layout())?).await?.is_some() {
                return Err(ServeError::Config(format!("{}/ in etcd holds a snapshot restore that did not finish: remove its keys \
                    (etcdctl del --prefix '{}/') and restore again", args.etcd_prefix.trim_end_matches('/'), args.etcd_prefix.trim_end_matches('/'))));
            }
            store
        }
    };
    if !args.storage_clusters.is_empty() && args.storage_backend != StorageBackend::Etcd {
        return Err(ServeError::Config("--storage-cluster needs --storage-backend etcd: storage clusters are etcd clusters beside --etcd-servers".into()));
    }
    let mut others = Vec::new();
    for cluster in &args.storage_clusters {
        let id = ClusterId::new(cluster.id).ok_or_else(|| ServeError::Config(format!("storage cluster id {} is above 63", cluster.id)))?;
        if others.iter().any(|(seen, _)| *seen == id) {
            return Err(ServeError::Config(format!("--storage-cluster {id} is given twice")));
        }
        let etcd = kspaces_storage::etcd::EtcdConfig::new(cluster.endpoints.clone());
        others.push((id, Store::open_etcd(&etcd, config.clone()).await?));
    }
    Ok(Clusters::new(default, others))
}

/// Makes sure the system tenant, the system space and the default tenant exist.
async fn bootstrap(server: &ApiServer) -> Result<(), ServeError> {
    let failed = |err: ApiError| ServeError::Bootstrap(err.message);
    let tenants = server.resources.by_kind("", "Tenant").cloned().ok_or_else(|| ServeError::Bootstrap("no Tenant resource".into()))?;
    let system = Scope::one(SpaceName::system(), None);
    // `root:users` holds the system users' homes and is no tenant: a tenant of that name made by an earlier
    // version is refused rather than silently given system users' homes (docs/workspaces.md).
    match server.registry.reader().get(&tenants, &system, tenancy::HOME_ROOT).await {
        Ok(tenant) if !tenancy::tree::is_home_root(&tenant) => return Err(ServeError::Bootstrap(format!(
            "a tenant named {:?} exists, but root:{} holds the system users' home workspaces and is no tenant: move its \
             objects to another tenant and delete it with an earlier kspaces, then start again",
            tenancy::HOME_ROOT, tenancy::HOME_ROOT))),
        Ok(_) | Err(ApiError { code: 404, .. }) => {}
        Err(err) => return Err(failed(err)),
    }
    let mut wanted = vec![tenancy::SYSTEM.to_owned()];
    wanted.extend(server.default_tenant.clone());
    for name in wanted {
        let tenant = json!({"apiVersion": "v1", "kind": "Tenant", "metadata": {"name": name}});
        match server.registry.create(&tenants, &system, tenant, &WriteContext::server(SERVER_MANAGER, "")).await {
            Ok(_) => {}
            // Made by an earlier run; its space may not be complete.
            Err(ApiError { code: 409, .. }) => {
                let spaces = &server.virtual_workspaces;
                tenancy::space::initialize(&server.registry, &server.resources, &spaces.types, &server.tree, &name).await.map_err(failed)?
            }
            Err(err) => return Err(failed(err)),
        }
    }
    tenancy::space::initialize_system_workspace(&server.registry, &server.resources, tenancy::SYSTEM_ADMIN).await.map_err(failed)?;
    server.flowcontrol.bootstrap(&server.registry, &server.resources).await.map_err(failed)
}

/// `kube-system/extension-apiserver-authentication` in the system space, as kube-apiserver keeps it: the client CA
/// and the `--requestheader-*` settings, which servers built on `k8s.io/apiserver` (aggregated APIs) read to trust
/// the requests this server proxies to them.
async fn publish_authentication(server: &ApiServer, client_ca: &str, request_header: Option<&RequestHeader>) -> Result<(), ServeError> {
    let failed = |err: ApiError| ServeError::Bootstrap(err.message);
    let configmaps = server.resources.by_kind("", "ConfigMap").cloned().ok_or_else(|| ServeError::Bootstrap("no ConfigMap resource".into()))?;
    let mut data = serde_json::Map::new();
    data.insert("client-ca-file".into(), json!(client_ca));
    if let Some(settings) = request_header {
        let list = |items: &[String]| json!(serde_json::to_string(items).unwrap_or_default());
        data.insert("requestheader-client-ca-file".into(), json!(settings.ca_pem));
        data.insert("requestheader-allowed-names".into(), list(&settings.allowed_names));
        data.insert("requestheader-username-headers".into(), list(&settings.username_headers));
        data.insert("requestheader-group-headers".into(), list(&settings.group_headers));
        data.insert("requestheader-extra-headers-prefix".into(), list(&settings.extra_prefixes));
    }
    let data = serde_json::Value::Object(data);
    let name = "extension-apiserver-authentication";
    let scope = Scope::one(SpaceName::system(), Some("kube-system".to_owned()));
    let write = WriteContext::server(SERVER_MANAGER, "");
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "kube-system"}, "data": data});
    match server.registry.create(&configmaps, &scope, object, &write).await {
        Ok(_) => Ok(()),
        Err(ApiError { code: 409, .. }) => {
            server.registry.guaranteed_update(&configmaps, &scope, name, crate::registry::Part::Main, &write, |old| {
                let mut new = old.clone();
                new["data"] = data.clone();
                Ok(new)
            }).await.map(|_| ()).map_err(failed)
        }
        Err(err) => Err(failed(err)),
    }
}

fn server_url(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        ip if ip.is_unspecified() => IpAddr::from([127, 0, 0, 1]),
        ip => ip,
    };
    match ip {
        IpAddr::V6(v6) => format!("https://[{v6}]:{}", addr.port()),
        IpAddr::V4(v4) => format!("https://{v4}:{}", addr.port()),
    }
}

/// Replaces `path` with `contents` in one step (a file beside it, renamed over it): replicas sharing a data dir
/// rewrite `admin.kubeconfig` as they start, and a reader never sees half of one. The file is made with `mode`
/// (`0o600` for the admin kubeconfig, which holds the system administrator's key), never readable by others
/// even for a moment.
fn write_whole(path: &std::path::Path, contents: &[u8], mode: u32) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut partial = path.as_os_str().to_owned();
    partial.push(format!(".{}.tmp", std::process::id()));
    let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(mode).open(&partial)?;
    file.write_all(contents)?;
    drop(file);
    std::fs::rename(&partial, path)
}

fn io_err(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> ServeError + '_ {
    move |source| ServeError::Io { path: path.to_owned(), source }
}

/// The listener `kspaces serve` serves on: `--bind-address` and `--secure-port` (0 for any free port).
pub fn bind(args: &ServeArgs) -> Result<TcpListener, ServeError> {
    TcpListener::bind((args.bind_address, args.secure_port)).map_err(io_err(std::path::Path::new("--bind-address/--secure-port")))
}

/// How the server stops: draining its connections for up to actix's shutdown timeout, or at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Graceful,
    Now,
}

/// What `kspaces serve` stops on, as actix-web's own signal handling: SIGTERM drains, SIGINT and SIGQUIT do not.
pub async fn signals() -> Stop {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int), Ok(mut quit)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()), signal(SignalKind::quit())) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => Stop::Graceful,
        _ = int.recv() => Stop::Now,
        _ = quit.recv() => Stop::Now,
    }
}

/// Serves on `listener` with `args` until `shutdown` completes (mini-redis' `server::run`): `main` passes the
/// process's signals, a test a channel of its own. Must run inside an actix system (`actix_web::rt::System`).
pub async fn run(listener: TcpListener, args: ServeArgs, shutdown: impl Future<Output = Stop> + 'static) -> Result<(), ServeError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    if args.data_dir.join(crate::snapshot::RESTORE_MARKER).exists() {
        return Err(ServeError::Config(format!("{} holds a snapshot restore that did not finish: run `kspaces snapshot restore` again",
            args.data_dir.display())));
    }
    std::fs::create_dir_all(&args.data_dir).map_err(io_err(&args.data_dir))?;
    // What tenant restores a kill -9 stopped had received (the restores themselves are undone in `wire`).
    for entry in std::fs::read_dir(&args.data_dir).map_err(io_err(&args.data_dir))?.flatten() {
        if entry.file_name().to_string_lossy().starts_with(crate::snapshot::RECEIVED_PREFIX) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    // Replicas sharing a data dir may start at the same moment: the first makes the CA, the serving certificate and
    // the service-account key while holding this lock, and the others then read them.
    let keys_lock_path = args.data_dir.join("keys.lock");
    let keys_lock = std::fs::File::create(&keys_lock_path).map_err(io_err(&keys_lock_path))?;
    keys_lock.lock().map_err(io_err(&keys_lock_path))?;
    let paths = PkiPaths::new(&args.data_dir);
    let ca = CertificateAuthority::load_or_create(&paths)?;
    let (cert_file, key_file) = match (&args.tls_cert_file, &args.tls_private_key_file) {
        (Some(cert), Some(key)) => (cert.clone(), key.clone()),
        _ => {
            pki::ensure_serving_cert(&ca, &paths)?;
            (paths.serving_cert.clone(), paths.serving_key.clone())
        }
    };
    let client_ca = match &args.client_ca_file {
        Some(path) => std::fs::read_to_string(path).map_err(io_err(path))?,
        None => ca.cert_pem.clone(),
    };
    let request_header = request_header(&args, &client_ca)?;
    // The handshake accepts the front proxies' certificates too; `on_connect` tells them from users'.
    let client_cas = match &request_header {
        Some(settings) => format!("{client_ca}\n{}", settings.ca_pem),
        None => client_ca.clone(),
    };
    let tls = pki::server_config(&cert_file, &key_file, &client_cas)?;
    let tokens = match &args.token_auth_file {
        Some(path) => TokenFile::load(path)?,
        None => TokenFile::default(),
    };
    let service_accounts = TokenIssuer::load_or_create(&args.data_dir, TokenOptions {
        issuer: args.service_account_issuer.clone(),
        api_audiences: args.api_audiences.clone(),
        signing_key_file: args.service_account_signing_key_file.clone(),
        key_files: args.service_account_key_file.clone(),
        max_expiration: args.service_account_max_token_expiration,
    })?;
    drop(keys_lock);
    let (oidc, authentication_config) = oidc_authenticator(&args)?;
    let oidc = Arc::new(oidc);
    let auditor = match &args.audit_log_path {
        Some(path) => Auditor::open(path, args.audit_policy_file.as_deref())?,
        None => Auditor::disabled(),
    };
    if let Some(tenant) = &args.default_tenant {
        if tenant == tenancy::SYSTEM || tenancy::RESERVED_IN_CREDENTIALS.contains(&tenant.as_str()) || !crate::registry::validate::is_dns_label(tenant) {
            return Err(ServeError::Config(format!(
                "--default-tenant {tenant:?}: must be a DNS label other than \"system\", \"all\" and \"users\"")));
        }
    }
    if !(args.leader_elect_retry_period < args.leader_elect_renew_deadline && args.leader_elect_renew_deadline < args.leader_elect_lease_duration) {
        return Err(ServeError::Config(
            "--leader-elect-retry-period must be shorter than --leader-elect-renew-deadline, and that shorter than --leader-elect-lease-duration".into()));
    }
    if args.request_timeout.is_zero() {
        return Err(ServeError::Config("--request-timeout must be longer than 0s".into()));
    }
    let homes = HomeConfig::new(args.enable_home_workspaces, &args.home_workspaces_root_prefix, args.home_workspaces_bucket_levels,
        args.home_workspaces_bucket_size, args.home_workspaces_home_creator_groups.clone()).map_err(ServeError::Config)?;
    let (token_webhook, authorization_webhook) = auth_webhooks(&args)?;
    let store = open_store(&args).await?;
    let settings = Settings {
        tokens,
        issuer: service_accounts,
        oidc: oidc.clone(),
        token_webhook,
        authorization_webhook,
        default_tenant: args.default_tenant.clone(),
        authorization_modes: args.authorization_mode.clone(),
        auditor,
        homes,
        leader_election: Timing {
            lease_duration: args.leader_elect_lease_duration,
            renew_deadline: args.leader_elect_renew_deadline,
            retry_period: args.leader_elect_retry_period,
        },
        flowcontrol: crate::flowcontrol::Settings {
            enabled: args.enable_priority_and_fairness,
            total_seats: args.max_requests_inflight.saturating_add(args.max_mutating_requests_inflight).max(1),
            // kube's: a request waits in its queue for at most a quarter of its timeout.
            wait_limit: args.request_timeout / 4,
        },
        request_timeout: args.request_timeout,
        service_ranges: crate::kinds::service::Ranges::parse(&args.service_cluster_ip_range, &args.service_node_port_range)
            .map_err(ServeError::Config)?,
        webhook_cidrs: crate::kinds::admission_webhook::reach::Cidr::parse_list(&args.tenant_webhook_allowed_cidrs).map_err(ServeError::Config)?,
        signing_ca: match args.client_ca_file {
            None => Some(CertificateAuthority::load_or_create(&PkiPaths::new(&args.data_dir))?),
            Some(_) => None,
        },
        data_dir: args.data_dir.clone(),
        proxy_identity: proxy_identity(&args)?,
        request_header: request_header.clone(),
    };
    let (server, mut controllers) = wire(store, settings).await?;
    if let (Some(path), Some(text)) = (&args.authentication_config, authentication_config) {
        actix_web::rt::spawn(oidc::config::reload_forever(path.clone(), text, oidc));
    }
    bootstrap(&server).await?;
    publish_authentication(&server, &client_ca, request_header.as_deref()).await?;

    let addr = listener.local_addr().map_err(io_err(std::path::Path::new("listener")))?;
    let url = server_url(addr);
    server.base_url.set(&url);
    controllers.serving(Serving { ca_pem: ca.cert_pem.clone(), address: addr });
    // The system administrator: group system:masters, tenant system (so a --default-tenant never captures it).
    let admin_groups = ["system:masters".to_owned(), format!("tenant:{}", tenancy::SYSTEM)];
    let (admin_cert, admin_key) = ca.client_cert("kubernetes-admin", &admin_groups)?;
    let kubeconfig = pki::kubeconfig(&url, &ca.cert_pem, "kspaces", "kubernetes-admin", &admin_cert, &admin_key);
    let kubeconfig_path = args.data_dir.join("admin.kubeconfig");
    write_whole(&kubeconfig_path, kubeconfig.as_bytes(), 0o600).map_err(io_err(&kubeconfig_path))?;
    let _ = write_whole(&args.data_dir.join("server-url"), url.as_bytes(), 0o644);

    // The OpenAPI documents (about 30 MB of schema trees) are built on the first request that needs them
    // (kubectl explain/apply/create, a strategic merge patch), not at startup: idle memory stays small.
    // When `shutdown` completes, the controllers' Lease is given up at once, while the server drains its connections
    // (watches may hold it for its whole shutdown timeout): another replica takes the controllers over at its next
    // try.
    let stepdown = controllers.start();

    println!("kspaces serving on {url} (admin kubeconfig: {})", kubeconfig_path.display());
    let data = web::Data::new(server);
    let serving = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .wrap(middleware::Compress::default())
            .default_service(web::to(chain::handle))
    })
    .on_connect(move |connection, extensions| {
        use actix_tls::accept::rustls_0_23::TlsStream;
        if let Some(tls) = connection.downcast_ref::<TlsStream<actix_web::rt::net::TcpStream>>() {
            let (_, session) = tls.get_ref();
            let chain = session.peer_certificates().unwrap_or_default();
            // A front proxy's certificate is that only: never a user of its own (allowed or not).
            match request_header.as_ref().and_then(|settings| settings.front_proxy(chain)) {
                Some(true) => {
                    extensions.insert(FrontProxy);
                }
                Some(false) => {}
                // Verified by rustls during the handshake; parsed once here rather than on every request.
                None => {
                    if let Some(user) = chain.first().and_then(|cert| from_certificate(cert)) {
                        extensions.insert(PeerIdentity(user));
                    }
                }
            }
        }
    })
    // One HTTP worker per core the process may run on (its CPU affinity and cgroup quota, as
    // `available_parallelism` reads them). Confined to one core, two workers took turns on it, each waiting out
    // the other's time slice with requests ready: a light tenant's p99 under a flood was 8-9 ms, 5-7 with one
    // (docs/benchmarks.md, "One HTTP worker per core").
    .workers(std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get))
    // Without it, an HTTP/2 answer written as several TLS records waits on the client's delayed ACK (40 ms on
    // Linux) under Nagle's algorithm: kubectl's and client-go's requests each took 40-50 ms.
    .tcp_nodelay(true)
    .disable_signals()
    .listen_rustls_0_23(listener, tls)
    .map_err(io_err(std::path::Path::new("listener")))?
    .run();
    let handle = serving.handle();
    let (released, given_up) = tokio::sync::oneshot::channel::<()>();
    actix_web::rt::spawn(async move {
        let stop = shutdown.await;
        let release = async {
            if let Some(stepdown) = stepdown {
                stepdown.release(STEPDOWN_WITHIN).await;
            }
            let _ = released.send(());
        };
        futures::join!(release, handle.stop(stop == Stop::Graceful));
    });
    let served = serving.await.map_err(io_err(std::path::Path::new("server")));
    // The drain may end first (no connection open): `run` returns once the Lease is given up too, as another
    // replica may otherwise wait out the lease.
    let _ = tokio::time::timeout(STEPDOWN_WITHIN, given_up).await;
    served
}

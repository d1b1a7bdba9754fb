//! `kspaces serve`: open the store, make the PKI and admin kubeconfig, bootstrap, and serve HTTPS.

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix_web::{middleware, web, App, HttpServer};
use kspaces_storage::sled::SledConfig;
use kspaces_storage::{KeyLayout, Store, StoreConfig};
use serde_json::{json, Value};

use crate::config::{ServeArgs, StorageBackend};
use crate::audit::Auditor;
use crate::filters::authenticate::{from_certificate, PeerIdentity, TokenFile};
use crate::filters::serviceaccount::{TokenIssuer, TokenOptions};
use crate::pki::{self, CertificateAuthority, PkiPaths};
use crate::registry::builtin::builtin_resources;
use crate::registry::managed::SERVER_MANAGER;
use crate::registry::{ResourceTable, Scope, WriteContext};
use crate::state::{ApiServer, Settings};
use crate::status::{ApiError, ApiResult};
use crate::tenancy::{self, Phase};
use crate::{chain, controllers};

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
    ServiceAccounts(#[from] crate::filters::serviceaccount::TokenError),
    #[error("audit: {0}")]
    Audit(#[from] crate::audit::AuditError),
    #[error("bootstrap: {0}")]
    Bootstrap(String),
    #[error("{0}")]
    Config(String),
}

/// How often storage history is compacted (kube-apiserver's default).
const COMPACTION_INTERVAL: Duration = Duration::from_secs(300);

async fn open_store(args: &ServeArgs) -> Result<Store, ServeError> {
    let layout = KeyLayout::new(&args.etcd_prefix)?;
    let config = StoreConfig { layout, ..StoreConfig::default() };
    match args.storage_backend {
        StorageBackend::Sled => Ok(Store::open_sled(&SledConfig::new(args.data_dir.join("db")), config)?),
        #[cfg(feature = "etcd")]
        StorageBackend::Etcd => {
            if args.etcd_servers.is_empty() {
                return Err(ServeError::Config("--storage-backend etcd needs --etcd-servers".into()));
            }
            let etcd = kspaces_storage::etcd::EtcdConfig::new(args.etcd_servers.clone());
            Ok(Store::open_etcd(&etcd, config).await?)
        }
        #[cfg(not(feature = "etcd"))]
        StorageBackend::Etcd => Err(ServeError::Config(
            "this kspaces was built without etcd support; rebuild with `--features etcd`".into(),
        )),
    }
}

/// Loads every tenant into the cache and makes sure the system tenant, the system space and the default tenant
/// exist.
async fn bootstrap(server: &ApiServer) -> Result<(), ServeError> {
    let failed = |err: ApiError| ServeError::Bootstrap(err.message);
    load_tenants(server).await.map_err(failed)?;
    crate::crds::load(server).await.map_err(failed)?;
    let tenants = server.resources.by_kind("", "Tenant").cloned().ok_or_else(|| ServeError::Bootstrap("no Tenant resource".into()))?;
    let system = Scope::one(server.system_space(), None);
    let namespaces = server.namespaces();
    let mut wanted = vec![tenancy::SYSTEM.to_owned()];
    wanted.extend(server.default_tenant.clone());
    for name in wanted {
        let tenant = json!({"apiVersion": "v1", "kind": "Tenant", "metadata": {"name": name}});
        match server.registry.create(&tenants, &system, tenant, &namespaces, &WriteContext::server(SERVER_MANAGER, "")).await {
            Ok(_) | Err(ApiError { code: 409, .. }) => {}
            Err(err) => return Err(failed(err)),
        }
        tenancy::space::initialize(server, &name).await.map_err(failed)?;
    }
    Ok(())
}

/// Reads every Tenant (paged) into the tenant cache.
async fn load_tenants(server: &ApiServer) -> ApiResult<()> {
    let Some(tenants) = server.resources.by_kind("", "Tenant").cloned() else { return Ok(()) };
    let scope = Scope::one(server.system_space(), None);
    server.registry.for_each(&tenants, &scope, 1000, |tenant| {
        let name = tenant.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        let revision = tenant.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|rv| rv.parse().ok());
        server.tenants.apply(name, Some(Phase::of(tenant)), revision.unwrap_or_default());
    }).await
}

/// Completes the space of any Active tenant whose creation was interrupted before its space was made.
async fn complete_spaces(server: Arc<ApiServer>) {
    for (tenant, phase) in server.tenants.tenants() {
        if phase != Phase::Active {
            continue;
        }
        let done = tenancy::space::is_initialized(&server, &tenant).await;
        if let Err(err) = match done {
            Ok(true) => Ok(()),
            Ok(false) => tenancy::space::initialize(&server, &tenant).await,
            Err(err) => Err(err),
        } {
            tracing::warn!(%err, tenant, "completing a tenant space");
        }
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

fn io_err(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> ServeError + '_ {
    move |source| ServeError::Io { path: path.to_owned(), source }
}

/// Runs the server until it is stopped (SIGINT/SIGTERM).
pub async fn run(args: ServeArgs) -> Result<(), ServeError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    std::fs::create_dir_all(&args.data_dir).map_err(io_err(&args.data_dir))?;
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
    let tls = pki::server_config(&cert_file, &key_file, &client_ca)?;
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
    let auditor = match &args.audit_log_path {
        Some(path) => Auditor::open(path, args.audit_policy_file.as_deref())?,
        None => Auditor::disabled(),
    };
    if let Some(tenant) = &args.default_tenant {
        if tenant == tenancy::SYSTEM || tenant == tenancy::ALL || !crate::registry::validate::is_dns_label(tenant) {
            return Err(ServeError::Config(format!(
                "--default-tenant {tenant:?}: must be a DNS label other than \"system\" and \"all\"")));
        }
    }
    let store = open_store(&args).await?;
    let mut resources = builtin_resources();
    resources.extend(tenancy::schemas::resources());
    let settings = Settings {
        tokens,
        service_accounts,
        default_tenant: args.default_tenant.clone(),
        authorization_modes: args.authorization_mode.clone(),
        auditor,
    };
    let server = ApiServer::new(store, ResourceTable::new(resources), settings);
    bootstrap(&server).await?;

    let listener = TcpListener::bind((args.bind_address, args.secure_port))
        .map_err(io_err(std::path::Path::new("--bind-address/--secure-port")))?;
    let addr = listener.local_addr().map_err(io_err(std::path::Path::new("listener")))?;
    let url = server_url(addr);
    // The system administrator: group system:masters, tenant system (so a --default-tenant never captures it).
    let admin_groups = ["system:masters".to_owned(), format!("tenant:{}", tenancy::SYSTEM)];
    let (admin_cert, admin_key) = ca.client_cert("kubernetes-admin", &admin_groups)?;
    let kubeconfig = pki::kubeconfig(&url, &ca.cert_pem, "kspaces", "kubernetes-admin", &admin_cert, &admin_key);
    let kubeconfig_path = args.data_dir.join("admin.kubeconfig");
    std::fs::write(&kubeconfig_path, kubeconfig).map_err(io_err(&kubeconfig_path))?;
    let _ = std::fs::write(args.data_dir.join("server-url"), &url);

    // The OpenAPI documents (about 30 MB of schema trees) are built on the first request that needs them
    // (kubectl explain/apply/create, a strategic merge patch), not at startup: idle memory stays small.
    actix_web::rt::spawn(controllers::namespace::run(server.clone(), Duration::from_millis(500)));
    actix_web::rt::spawn(controllers::tenant::run(server.clone(), Duration::from_millis(500)));
    actix_web::rt::spawn(controllers::crd::run(server.clone(), Duration::from_millis(200)));
    actix_web::rt::spawn(controllers::aggregation::run(server.clone(), Duration::from_millis(50)));
    actix_web::rt::spawn(controllers::gc::run(server.clone()));
    actix_web::rt::spawn(complete_spaces(server.clone()));
    actix_web::rt::spawn(controllers::compaction::run(server.registry.storage().clone(), COMPACTION_INTERVAL));

    println!("kspaces serving on {url} (admin kubeconfig: {})", kubeconfig_path.display());
    let data = web::Data::new(server);
    HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .wrap(middleware::Compress::default())
            .default_service(web::to(chain::handle))
    })
    .on_connect(|connection, extensions| {
        use actix_tls::accept::rustls_0_23::TlsStream;
        if let Some(tls) = connection.downcast_ref::<TlsStream<actix_web::rt::net::TcpStream>>() {
            let (_, session) = tls.get_ref();
            // Verified by rustls during the handshake; parsed once here rather than on every request.
            if let Some(user) = session.peer_certificates().and_then(|certs| certs.first()).and_then(|cert| from_certificate(cert)) {
                extensions.insert(PeerIdentity(user));
            }
        }
    })
    .workers(2)
    .listen_rustls_0_23(listener, tls)
    .map_err(io_err(std::path::Path::new("listener")))?
    .run()
    .await
    .map_err(io_err(std::path::Path::new("server")))
}

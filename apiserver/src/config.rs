//! Command-line interface: `kspaces serve`, `kspaces kubeconfig` and `kspaces snapshot`, with kube-apiserver's and
//! etcdctl's flag names.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(name = "kspaces", version, about = "A tenant-native, Kubernetes-compatible API server")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the API server.
    Serve(Box<ServeArgs>),
    /// Print a kubeconfig with a client certificate signed by the server's CA.
    Kubeconfig(KubeconfigArgs),
    /// Save a store to a file, check such a file, or make a new data dir from it (docs/operations.md).
    #[command(subcommand)]
    Snapshot(SnapshotCommand),
    /// Move a stopped server's sled store into an empty etcd prefix; the data dir keeps its PKI.
    Migrate(MigrateArgs),
}

#[derive(Clone, Debug, Args)]
pub struct MigrateArgs {
    #[arg(long, default_value = "./kspaces-data")]
    pub data_dir: PathBuf,
    /// etcd endpoints, comma separated.
    #[arg(long, value_delimiter = ',', required = true)]
    pub to_etcd: Vec<String>,
    #[arg(long, default_value = "/registry")]
    pub etcd_prefix: String,
    /// No progress display; only the summary line.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Debug, Subcommand)]
pub enum SnapshotCommand {
    /// Save a store at one revision, with the data dir's PKI: a stopped server's, or a running one's (--kubeconfig).
    Save(SnapshotSaveArgs),
    /// Make a new data dir from a snapshot: all or nothing.
    Restore(SnapshotRestoreArgs),
    /// Check a snapshot and print what it holds: revision, spaces, objects, bytes, checksum.
    Inspect(SnapshotInspectArgs),
}

#[derive(Clone, Debug, Args)]
pub struct SnapshotSaveArgs {
    pub file: PathBuf,
    /// The data dir of the stopped server: its store (sled) and its PKI.
    #[arg(long, default_value = "./kspaces-data")]
    pub data_dir: PathBuf,
    #[arg(long, value_enum, default_value_t = StorageBackend::Sled)]
    pub storage_backend: StorageBackend,
    /// etcd endpoints for `--storage-backend etcd`, comma separated.
    #[arg(long, value_delimiter = ',')]
    pub etcd_servers: Vec<String>,
    #[arg(long, default_value = "/registry")]
    pub etcd_prefix: String,
    /// Save from the running server this kubeconfig reaches (a system user's), while it serves.
    #[arg(long, conflicts_with_all = ["storage_backend", "etcd_servers"])]
    pub kubeconfig: Option<PathBuf>,
    /// Save one tenant only: its Tenant and every space of its workspace tree (bound objects included).
    #[arg(long)]
    pub tenant: Option<String>,
    /// No progress display; only the summary line.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Clone, Debug, Args)]
pub struct SnapshotRestoreArgs {
    pub file: PathBuf,
    /// The new data dir: must not exist, or be empty. It gets the PKI, and on sled the store.
    #[arg(long, required_unless_present = "tenant", conflicts_with_all = ["tenant", "kubeconfig"])]
    pub data_dir: Option<PathBuf>,
    /// Put this one tenant (the snapshot's, from `save --tenant`) back into the running server `--kubeconfig`
    /// reaches; the tenant must not exist there.
    #[arg(long, requires = "kubeconfig")]
    pub tenant: Option<String>,
    /// A system user's kubeconfig for the running server a tenant is restored into.
    #[arg(long, requires = "tenant", conflicts_with_all = ["storage_backend", "etcd_servers"])]
    pub kubeconfig: Option<PathBuf>,
    /// Where the store goes: a sled store in the data dir, or an empty prefix in etcd.
    #[arg(long, value_enum, default_value_t = StorageBackend::Sled)]
    pub storage_backend: StorageBackend,
    /// etcd endpoints for `--storage-backend etcd`, comma separated.
    #[arg(long, value_delimiter = ',')]
    pub etcd_servers: Vec<String>,
    #[arg(long, default_value = "/registry")]
    pub etcd_prefix: String,
    /// No progress display; only the summary line.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Clone, Debug, Args)]
pub struct SnapshotInspectArgs {
    pub file: PathBuf,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum StorageBackend {
    Sled,
    Etcd,
}

#[derive(Clone, Debug, Args)]
pub struct ServeArgs {
    /// Directory for the sled database, the generated PKI and admin.kubeconfig.
    #[arg(long, default_value = "./kspaces-data")]
    pub data_dir: PathBuf,
    #[arg(long, default_value = "127.0.0.1")]
    pub bind_address: IpAddr,
    /// HTTPS port; 0 picks a free port (printed at start).
    #[arg(long, default_value_t = 6443)]
    pub secure_port: u16,
    /// Serving certificate (PEM); generated under the data dir when not given.
    #[arg(long, requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    #[arg(long, requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,
    /// CA that signs client certificates; the generated CA when not given.
    #[arg(long)]
    pub client_ca_file: Option<PathBuf>,
    /// Static tokens: `token,user,uid,"group1,group2"` (Arktos: `...,,TENANT`).
    #[arg(long)]
    pub token_auth_file: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = StorageBackend::Sled)]
    pub storage_backend: StorageBackend,
    /// etcd endpoints for `--storage-backend etcd`, comma separated.
    #[arg(long, value_delimiter = ',')]
    pub etcd_servers: Vec<String>,
    /// Key prefix of every object, on sled and on etcd.
    #[arg(long, default_value = "/registry")]
    pub etcd_prefix: String,
    /// Another etcd cluster for tenants' data (Arktos' storage clusters): `ID=URLS`, ID 1-63, URLS comma
    /// separated; repeatable. A Tenant's `spec.storageClusterId` places its spaces there; 0 is `--etcd-servers`.
    #[arg(long = "storage-cluster", value_parser = parse_storage_cluster)]
    pub storage_clusters: Vec<StorageClusterArg>,
    /// Tenant for users whose credentials name none (created at startup if missing).
    #[arg(long)]
    pub default_tenant: Option<String>,
    /// Authorizers, in order, comma separated: `RBAC` (default), `Webhook` and `AlwaysAllow`.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "RBAC", ignore_case = true)]
    pub authorization_mode: Vec<AuthorizationMode>,
    /// `iss` of service-account tokens.
    #[arg(long, default_value = "https://kubernetes.default.svc.cluster.local")]
    pub service_account_issuer: String,
    /// OIDC: the issuer whose ID tokens authenticate users (https; its discovery document and keys are fetched
    /// from it). kube-apiserver's flag.
    #[arg(long)]
    pub oidc_issuer_url: Option<String>,
    /// OIDC: the audience (`aud`) the ID tokens must name.
    #[arg(long)]
    pub oidc_client_id: Option<String>,
    /// OIDC: the claim that is the username.
    #[arg(long, default_value = "sub")]
    pub oidc_username_claim: String,
    /// OIDC: put before every username; `-` for none. Default: the issuer URL and `#`, except for the `email` claim.
    #[arg(long)]
    pub oidc_username_prefix: Option<String>,
    /// OIDC: the claim holding the user's groups (a string or a list of strings).
    #[arg(long)]
    pub oidc_groups_claim: Option<String>,
    /// OIDC: put before every group.
    #[arg(long)]
    pub oidc_groups_prefix: Option<String>,
    /// OIDC: the CA (PEM) that signed the issuer's serving certificate; the system's roots when not given.
    #[arg(long)]
    pub oidc_ca_file: Option<PathBuf>,
    /// OIDC: `key=value`, a claim every ID token must hold with that value; repeatable.
    #[arg(long = "oidc-required-claim", value_parser = parse_key_value)]
    pub oidc_required_claims: Vec<(String, String)>,
    /// OIDC: the signing algorithms accepted, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "RS256")]
    pub oidc_signing_algs: Vec<String>,
    /// An `apiserver.config.k8s.io/v1 AuthenticationConfiguration` (its `jwt` list: several OIDC issuers, CEL
    /// claim mappings and validation rules), re-read when it changes; not with the `--oidc-*` flags.
    #[arg(long)]
    pub authentication_config: Option<PathBuf>,
    /// A kubeconfig-format file naming the endpoint asked (TokenReview, `authentication.k8s.io/v1`) about bearer
    /// tokens no other authenticator accepts.
    #[arg(long)]
    pub authentication_token_webhook_config_file: Option<PathBuf>,
    /// How long the token webhook's answers are remembered.
    #[arg(long, value_parser = parse_duration, default_value = "2m")]
    pub authentication_token_webhook_cache_ttl: Duration,
    /// The TokenReview version sent: `v1` only.
    #[arg(long, default_value = "v1")]
    pub authentication_token_webhook_version: String,
    /// A kubeconfig-format file naming the endpoint the `Webhook` authorization mode asks (SubjectAccessReview,
    /// `authorization.k8s.io/v1`).
    #[arg(long)]
    pub authorization_webhook_config_file: Option<PathBuf>,
    /// How long the authorization webhook's allows are remembered.
    #[arg(long, value_parser = parse_duration, default_value = "5m")]
    pub authorization_webhook_cache_authorized_ttl: Duration,
    /// How long the authorization webhook's refusals are remembered.
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub authorization_webhook_cache_unauthorized_ttl: Duration,
    /// The SubjectAccessReview version sent: `v1` only.
    #[arg(long, default_value = "v1")]
    pub authorization_webhook_version: String,
    /// Audiences tokens must name, comma separated; the issuer when empty.
    #[arg(long, value_delimiter = ',')]
    pub api_audiences: Vec<String>,
    /// Key that signs service-account tokens (PEM, EC P-256); generated as DIR/sa.key when not given.
    #[arg(long)]
    pub service_account_signing_key_file: Option<PathBuf>,
    /// More keys accepted when verifying service-account tokens (PEM).
    #[arg(long)]
    pub service_account_key_file: Vec<PathBuf>,
    /// The longest lifetime a TokenRequest gets, e.g. `24h`, `3600s`; unlimited when not given.
    #[arg(long, value_parser = parse_duration)]
    pub service_account_max_token_expiration: Option<Duration>,
    /// Write one `audit.k8s.io/v1` Event per request to this file, as JSON lines.
    #[arg(long)]
    pub audit_log_path: Option<PathBuf>,
    /// Which requests the audit log records and at what level (an `audit.k8s.io/v1` Policy); every request at
    /// `Metadata` when not given.
    #[arg(long, requires = "audit_log_path")]
    pub audit_policy_file: Option<PathBuf>,
    /// Serve users' home workspaces at `~` (made on first access).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub enable_home_workspaces: bool,
    /// The path the home workspaces hang from; a tenant user's leading `root` is its tenant's workspace.
    #[arg(long, default_value = "root:users")]
    pub home_workspaces_root_prefix: String,
    /// How many levels of buckets are between the prefix and a home (the seed's "depth").
    #[arg(long, default_value_t = 2)]
    pub home_workspaces_bucket_levels: usize,
    /// How many letters each bucket's name has (the seed's "length").
    #[arg(long, default_value_t = 2)]
    pub home_workspaces_bucket_size: usize,
    /// The IPv4 range Services' cluster IPs come from, in every space (each space is a cluster of its own).
    #[arg(long, default_value = "10.0.0.0/24")]
    pub service_cluster_ip_range: String,
    /// The address ranges (comma-separated CIDRs) tenants' admission webhooks may call; empty, the default: any
    /// address. The system space's webhooks may call anywhere; no tenant's may call this server.
    #[arg(long, default_value = "")]
    pub tenant_webhook_allowed_cidrs: String,
    /// The CA (PEM) whose client certificates are front proxies': their requests are for the user their headers
    /// name. It may not hold a certificate of the client CA.
    #[arg(long)]
    pub requestheader_client_ca_file: Option<PathBuf>,
    /// The common names a front proxy's certificate may have (empty: any the CA signed).
    #[arg(long, value_delimiter = ',')]
    pub requestheader_allowed_names: Vec<String>,
    /// The headers naming the user, the first present wins (kubeadm's value by default).
    #[arg(long, value_delimiter = ',', default_value = "X-Remote-User")]
    pub requestheader_username_headers: Vec<String>,
    /// The headers naming the user's groups.
    #[arg(long, value_delimiter = ',', default_value = "X-Remote-Group")]
    pub requestheader_group_headers: Vec<String>,
    /// The prefixes of the headers naming the user's extra (the rest of the name is the key, percent-encoded).
    #[arg(long, value_delimiter = ',', default_value = "X-Remote-Extra-")]
    pub requestheader_extra_headers_prefix: Vec<String>,
    /// The client certificate (PEM) the aggregator presents to the servers APIServices name.
    #[arg(long)]
    pub proxy_client_cert_file: Option<PathBuf>,
    /// Its private key (PEM).
    #[arg(long)]
    pub proxy_client_key_file: Option<PathBuf>,
    /// The ports NodePort and LoadBalancer Services' node ports come from.
    #[arg(long, default_value = "30000-32767")]
    pub service_node_port_range: String,
    /// Users in one of these groups get a home workspace.
    #[arg(long, value_delimiter = ',', default_value = "system:authenticated")]
    pub home_workspaces_home_creator_groups: Vec<String>,
    /// With a store other replicas share (etcd): how long the controllers' Lease holds once not renewed.
    #[arg(long, value_parser = parse_duration, default_value = "15s")]
    pub leader_elect_lease_duration: Duration,
    /// How long the leader keeps trying to renew its Lease before it stops its controllers.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub leader_elect_renew_deadline: Duration,
    /// How often the Lease is renewed, or tried for.
    #[arg(long, value_parser = parse_duration, default_value = "2s")]
    pub leader_elect_retry_period: Duration,
    /// API Priority and Fairness: requests are classified by FlowSchema and wait for a seat of their priority
    /// level in their flow's queue (the tenant is part of every flow). `false`: no queuing, no limit.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub enable_priority_and_fairness: bool,
    /// Read-only seats; with the mutating ones, the seats the priority levels share (kube's default). A durable
    /// write holds its seat while it waits for its commit, so fewer seats cap writes, not only CPU: at 40 + 20
    /// (tenant users: 5 seats) tenant workspace creation fell from 838 to 540 per second.
    #[arg(long, default_value_t = 400)]
    pub max_requests_inflight: u32,
    /// Mutating seats, added to `--max-requests-inflight` (kube's default).
    #[arg(long, default_value_t = 200)]
    pub max_mutating_requests_inflight: u32,
    /// How long a request that is not long-running (not a watch, nor exec, attach, port-forward, log or proxy)
    /// may take, reading its body included: past it the answer is 504 `Timeout` (kube's flag and default). A
    /// request waits for a seat of its priority level for at most a quarter of it, as in kube.
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
    pub request_timeout: Duration,
}

/// `--authorization-mode` values (kube-apiserver's spelling).
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum AuthorizationMode {
    #[value(name = "RBAC")]
    Rbac,
    #[value(name = "AlwaysAllow")]
    AlwaysAllow,
    /// Asks `--authorization-webhook-config-file`'s endpoint.
    #[value(name = "Webhook")]
    Webhook,
}

/// A Go-style duration: a number followed by `h`, `m`, `s` or `ms` (`24h`, `90m`, `3600s`, `500ms`), or bare
/// seconds.
/// `key=value`.
fn parse_key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("{text:?}: expected key=value")),
    }
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let value: u64 = number.parse().map_err(|_| format!("invalid duration {text:?}"))?;
    let millis = match unit {
        "h" => value.checked_mul(3_600_000),
        "m" => value.checked_mul(60_000),
        "s" => value.checked_mul(1000),
        "ms" => Some(value),
        _ => return Err(format!("invalid duration {text:?}: use h, m, s or ms")),
    };
    millis.map(Duration::from_millis).ok_or_else(|| format!("invalid duration {text:?}: too long"))
}

#[derive(Clone, Debug, Args)]
pub struct KubeconfigArgs {
    #[arg(long, default_value = "./kspaces-data")]
    pub data_dir: PathBuf,
    #[arg(long)]
    pub tenant: String,
    #[arg(long)]
    pub user: String,
    #[arg(long = "group")]
    pub groups: Vec<String>,
    /// Server URL; defaults to the URL recorded by the last `serve` in the data dir.
    #[arg(long)]
    pub server: Option<String>,
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::parse_duration;

    #[test]
    fn durations_are_read_as_go_writes_them() {
        assert_eq!(parse_duration("24h"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("90m"), Ok(Duration::from_secs(5_400)));
        assert_eq!(parse_duration("15s"), Ok(Duration::from_secs(15)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)), "bare seconds");
        assert!(parse_duration("2d").is_err_and(|e| e.contains("use h, m, s or ms")));
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("99999999999999999h").is_err_and(|e| e.contains("too long")));
    }
}

/// One `--storage-cluster ID=URLS`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageClusterArg {
    pub id: u8,
    pub endpoints: Vec<String>,
}

fn parse_storage_cluster(text: &str) -> Result<StorageClusterArg, String> {
    let (id, urls) = text.split_once('=').ok_or_else(|| format!("{text:?} is not ID=URLS (e.g. 1=http://127.0.0.1:2479)"))?;
    let id = id.trim().parse::<u8>().ok().filter(|id| (1..=63).contains(id))
        .ok_or_else(|| format!("storage cluster id {id:?} must be an integer 1-63 (0 is the default cluster, --etcd-servers)"))?;
    let endpoints: Vec<String> = urls.split(',').map(str::trim).filter(|url| !url.is_empty()).map(str::to_owned).collect();
    if endpoints.is_empty() {
        return Err(format!("storage cluster {id} names no etcd endpoint"));
    }
    Ok(StorageClusterArg { id, endpoints })
}

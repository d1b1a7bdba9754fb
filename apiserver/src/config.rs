//! Command-line interface: `kspaces serve` and `kspaces kubeconfig`, with kube-apiserver's flag names.

use std::net::IpAddr;
use std::path::PathBuf;

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
    Serve(ServeArgs),
    /// Print a kubeconfig with a client certificate signed by the server's CA.
    Kubeconfig(KubeconfigArgs),
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
    /// Tenant for users whose credentials name none (created at startup if missing).
    #[arg(long)]
    pub default_tenant: Option<String>,
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

//! kcp's kubectl plugins as kspaces binaries, so kcp users' habits work unchanged: `kubectl ws` (`kubectl-ws`),
//! `kubectl create workspace` (`kubectl-create-workspace`) and `kubectl kcp` (`kubectl-kcp`). The binaries in
//! `src/bin/` are thin; the commands live here, one module each ([`ws`], [`create`], [`kcp`]), over the kubeconfig
//! edits ([`kubeconfig`]), the workspace path arithmetic ([`path`]) and the HTTP calls ([`client`]).
//!
//! The plugins are clients of the server's HTTP API and nothing else: `plugins/` names nothing of the server
//! (the tidy test enforces it). They behave and speak as kcp's plugins do (kcp-dev/kcp,
//! `staging/src/github.com/kcp-dev/cli`); `docs/kubectl-plugins.md` lists where they differ and why.

pub mod api;
pub mod client;
pub mod create;
pub mod kcp;
pub mod kubeconfig;
pub mod path;
pub mod ws;
pub mod yaml;

use std::ffi::OsString;
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use client::{ClientError, KcpClient};
use kubeconfig::{KubeconfigError, KubeconfigFile};
use path::{ClusterUrl, PathError};

/// Why a plugin command failed; printed as kcp's plugins print errors.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error(transparent)]
    Kubeconfig(#[from] KubeconfigError),
    #[error(transparent)]
    Path(#[from] PathError),
    #[error(transparent)]
    Api(#[from] ClientError),
    /// A command's own failure, in kcp's words where kcp has them.
    #[error("{0}")]
    Failed(String),
    #[error("cannot write output: {0}")]
    Output(#[from] std::io::Error),
}

pub type PluginResult<T = ()> = Result<T, PluginError>;

fn failed<T>(message: impl Into<String>) -> PluginResult<T> {
    Err(PluginError::Failed(message.into()))
}

/// Where a command writes: stdout for results, stderr for notes and warnings (as kcp's plugins split them).
pub struct Io<'a> {
    pub out: &'a mut dyn Write,
    pub err: &'a mut dyn Write,
}

/// kubectl's connection flags the plugins honour (they come after the plugin's name: kubectl refuses flags before
/// it, so `kubectl ws . --kubeconfig k`, or `KUBECONFIG=k kubectl ws .`).
#[derive(Clone, Debug, Default, clap::Args)]
pub struct ConnectionArgs {
    /// Path to the kubeconfig file
    #[arg(long, global = true, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The name of the kubeconfig context to use
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
}

/// The kubeconfig a plugin reads and edits: `--kubeconfig`, else `$KUBECONFIG` if it names one file, else
/// `~/.kube/config`. A `$KUBECONFIG` listing several files is refused: a switch edits one file, and which of the
/// merged files an entry came from is not tracked (kubectl's `ModifyConfig` does).
pub fn kubeconfig_path(explicit: Option<&Path>, env: Option<OsString>, home: Option<PathBuf>) -> PluginResult<PathBuf> {
    if let Some(path) = explicit {
        return Ok(path.to_owned());
    }
    let listed: Vec<PathBuf> = env.as_deref().map(|v| std::env::split_paths(v).filter(|p| !p.as_os_str().is_empty()).collect()).unwrap_or_default();
    match listed.as_slice() {
        [one] => Ok(one.clone()),
        [] => match home {
            Some(home) => Ok(home.join(".kube").join("config")),
            None => failed("no kubeconfig: set KUBECONFIG or pass --kubeconfig"),
        },
        several => failed(format!("KUBECONFIG lists {} files; kspaces' plugins read and edit one kubeconfig: pass --kubeconfig", several.len())),
    }
}

/// One run's view of the kubeconfig: the file, the context in use and its server URL.
pub struct Session {
    pub file: KubeconfigFile,
    pub context: String,
}

impl Session {
    /// Reads the kubeconfig `args` name (see [`kubeconfig_path`]) and picks `--context` or its current context.
    pub fn open(args: &ConnectionArgs) -> PluginResult<Session> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let path = kubeconfig_path(args.kubeconfig.as_deref(), std::env::var_os("KUBECONFIG"), home)?;
        let file = KubeconfigFile::load(&path)?;
        let context = match &args.context {
            Some(context) => context.clone(),
            None => file.current_context().unwrap_or_default().to_owned(),
        };
        Ok(Session { file, context })
    }

    /// The server URL of the context in use.
    pub fn server(&self) -> PluginResult<String> {
        Ok(self.file.server_of(&self.context)?.to_owned())
    }

    /// The workspace the context points at: the path in its URL (`<base>/clusters/<path>`), as kcp reads it. A
    /// URL without one is a kspaces short path, which reaches the caller's own space: the server is asked which
    /// workspace that is (the `kcp.io/path` annotation of its LogicalCluster `cluster`), and its workspaces are
    /// then reached at `<server URL>/clusters/<path>`. kcp's error when neither names a workspace.
    pub async fn workspace(&self) -> PluginResult<ClusterUrl> {
        self.workspace_or(|server| format!("current URL {server:?} does not point to a workspace")).await
    }

    /// [`Session::workspace`] with the command's own words for a URL that names no workspace (kcp's `bind` and
    /// `claims` say "does not point to workspace").
    pub async fn workspace_or(&self, message: impl FnOnce(&str) -> String) -> PluginResult<ClusterUrl> {
        let server = self.server()?;
        if let Some(url) = ClusterUrl::parse(&server) {
            return Ok(url);
        }
        let client = self.client().await?;
        match client.short_path_workspace().await {
            Ok(Some(path)) => Ok(ClusterUrl { base: server.trim_end_matches('/').to_owned(), path }),
            Ok(None) | Err(_) => failed(message(&server)),
        }
    }

    /// A client for the server the context points at, with its credentials and TLS settings (read by kube's
    /// kubeconfig loader), addressing workspaces by absolute `/clusters/<path>/...` paths.
    pub async fn client(&self) -> PluginResult<KcpClient> {
        let server = self.server()?;
        let base = match ClusterUrl::parse(&server) {
            Some(url) => url.base,
            None => server.trim_end_matches('/').to_owned(),
        };
        Ok(KcpClient::connect(self.file.path(), &self.context, &base).await?)
    }
}

/// Runs a plugin command to completion on a single-threaded runtime (the plugins do one request at a time).
pub fn block_on(command: impl Future<Output = PluginResult>) -> PluginResult {
    // kube's rustls client wants one process-wide crypto provider; ring is the workspace's.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(command)
}

/// The exit of a plugin binary: the error on stderr after `prefix` (kcp's `kubectl-ws` and
/// `kubectl-create-workspace` print cobra's `Error: `, `kubectl-kcp` prints `error: `), and status 1.
pub fn exit(prefix: &str, result: PluginResult) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{prefix}: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_kubeconfig() {
        let home = Some(PathBuf::from("/home/alice"));
        let rows: [(Option<&str>, Option<&str>, &str); 6] = [
            (Some("/explicit"), Some("/a:/b"), "/explicit"),
            (None, Some("/env"), "/env"),
            (None, Some(":/env:"), "/env"),
            (None, Some(""), "/home/alice/.kube/config"),
            (None, None, "/home/alice/.kube/config"),
            (None, Some("/a:/b"), "KUBECONFIG lists 2 files; kspaces' plugins read and edit one kubeconfig: pass --kubeconfig"),
        ];
        for (explicit, env, expected) in rows {
            let got = match kubeconfig_path(explicit.map(Path::new), env.map(OsString::from), home.clone()) {
                Ok(path) => path.display().to_string(),
                Err(error) => error.to_string(),
            };
            assert_eq!(got, expected, "{explicit:?} {env:?}");
        }
    }
}

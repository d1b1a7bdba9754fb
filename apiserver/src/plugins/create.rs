//! `kubectl create workspace NAME [--type [path:]T] [--enter] [--ignore-existing] [--create-context NAME]`: POST a
//! `Workspace` in the current workspace, wait until it is `Ready` (a minute at most, as kcp), then optionally enter
//! it or save a context for it.

use std::time::Duration;

use clap::Parser;
use serde_json::json;
use tokio::time::{sleep, Instant};

use super::api::{TypeRef, Workspace};
use super::client::KcpClient;
use super::path::WorkspacePath;
use super::{failed, ws, ConnectionArgs, Io, PluginResult, Session};

/// How long kcp waits for a new workspace to be Ready.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long kcp waits for a created workspace to be readable (its informer-based virtual workspace lags).
const VISIBLE_TIMEOUT: Duration = Duration::from_secs(5);

/// `kubectl create workspace`, as kcp's `kubectl-create-workspace` parses it.
#[derive(Debug, Parser)]
#[command(name = "kubectl create workspace", about = "Creates a new workspace")]
pub struct CreateCli {
    #[command(flatten)]
    pub connection: ConnectionArgs,
    #[command(flatten)]
    pub args: CreateArgs,
}

#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    /// The new workspace's name
    pub name: String,
    /// A workspace type, [path:]name. The default type depends on where this child workspace is created.
    #[arg(long = "type", value_name = "TYPE")]
    pub type_ref: Option<String>,
    /// Immediately enter the created workspace
    #[arg(long)]
    pub enter: bool,
    /// Ignore if the workspace already exists. Requires none or absolute type path. Overwrites the context if
    /// --create-context is set.
    #[arg(long)]
    pub ignore_existing: bool,
    /// Create a kubeconfig context for the new workspace with the given name.
    #[arg(long, value_name = "NAME")]
    pub create_context: Option<String>,
}

/// Runs `kubectl create workspace`.
pub async fn run(connection: &ConnectionArgs, args: CreateArgs, io: &mut Io<'_>) -> PluginResult {
    let session = Session::open(connection)?;
    let current = session.workspace().await?;
    let requested = args.type_ref.as_deref().map(TypeRef::parse);
    if let (true, Some(flag)) = (args.ignore_existing, &args.type_ref) {
        if flag != "root" && !flag.starts_with("root:") {
            return failed("--ignore-existing must not be used with non-absolute type path");
        }
    }
    let client = session.client().await?;
    let (workspace, existed) = create_or_get(&client, &current.path, &args, requested.as_ref()).await?;
    let found = workspace.spec.type_ref.clone().unwrap_or_default();
    let reference = match &workspace.spec.type_ref {
        Some(type_ref) => format!("Workspace {:?} (type {type_ref})", args.name),
        None => format!("Workspace {:?}", args.name),
    };
    if existed {
        if let Some(requested) = requested.as_ref().filter(|r| (!found.name.is_empty() && found.name != r.name) || found.path != r.path) {
            return failed(format!(
                "workspace {:?} cannot be created with type {requested}, it already exists with different type {found}",
                args.name
            ));
        }
        let waiting = if workspace.is_ready() { "" } else { " Waiting for it to be ready..." };
        writeln!(io.out, "{reference} already exists.{waiting}")?;
    } else if !workspace.is_ready() {
        writeln!(io.out, "{reference} created. Waiting for it to be ready...")?;
    }
    let workspace = wait_until_ready(&client, &current.path, workspace, &reference).await?;
    writeln!(io.out, "{reference} is ready to use.")?;
    if let Some(context) = &args.create_context {
        let server = Some(workspace.spec.url.as_str()).filter(|url| !url.is_empty());
        return ws::create_context(&session, Some(context), server, args.ignore_existing, !args.enter, io);
    }
    if args.enter {
        return ws::use_workspace(connection, Some(&workspace.metadata.name), false, io).await;
    }
    Ok(())
}

/// POSTs the workspace; with `--ignore-existing`, an AlreadyExists answer reads the existing one instead.
async fn create_or_get(client: &KcpClient, parent: &WorkspacePath, args: &CreateArgs, requested: Option<&TypeRef>) -> PluginResult<(Workspace, bool)> {
    let mut body = json!({
        "apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace",
        "metadata": {"name": args.name},
        "spec": {},
    });
    if let Some(type_ref) = requested {
        let mut type_json = json!({"name": type_ref.name});
        if !type_ref.path.is_empty() {
            type_json["path"] = json!(type_ref.path);
        }
        body["spec"]["type"] = type_json;
    }
    match client.create_workspace(parent, &body).await {
        Ok(workspace) => Ok((workspace, false)),
        Err(error) if error.is_already_exists() && args.ignore_existing => Ok((client.workspace(parent, &args.name).await?, true)),
        Err(error) => Err(error.into()),
    }
}

/// kcp's two waits: until the workspace can be read back (every 100ms, 5s at most: 404s are retried), then until
/// it is `Ready` (every 500ms, a minute at most); any other error ends the wait.
async fn wait_until_ready(client: &KcpClient, parent: &WorkspacePath, mut workspace: Workspace, reference: &str) -> PluginResult<Workspace> {
    let name = workspace.metadata.name.clone();
    let deadline = Instant::now() + VISIBLE_TIMEOUT;
    loop {
        match client.workspace(parent, &name).await {
            Ok(_) => break,
            Err(error) if error.is_not_found() && Instant::now() < deadline => sleep(Duration::from_millis(100)).await,
            Err(error) if error.is_not_found() => return failed(format!("{reference} was created but cannot be read back: {error}")),
            Err(error) => return Err(error.into()),
        }
    }
    let deadline = Instant::now() + READY_TIMEOUT;
    while !workspace.is_ready() {
        workspace = client.workspace(parent, &name).await?;
        if workspace.is_ready() {
            break;
        }
        if Instant::now() >= deadline {
            return failed(format!("timed out waiting for {reference} to be ready (phase {:?})", workspace.status.phase));
        }
        sleep(Duration::from_millis(500)).await;
    }
    Ok(workspace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines() {
        let cli = CreateCli::try_parse_from(["kubectl-create-workspace", "dev", "--type", "root:team", "--enter", "--kubeconfig", "/k"])
            .expect("parses");
        assert_eq!(cli.args.name, "dev");
        assert_eq!(cli.args.type_ref.as_deref(), Some("root:team"));
        assert!(cli.args.enter && !cli.args.ignore_existing);
        assert_eq!(cli.connection.kubeconfig.as_deref(), Some(std::path::Path::new("/k")));
        assert!(CreateCli::try_parse_from(["kubectl-create-workspace"]).is_err(), "a name is required");
    }
}

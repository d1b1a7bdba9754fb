//! `kubectl ws [use] <workspace>`: resolve the argument, check the target as kcp does, switch the kubeconfig.

use super::{print_current, quoted};
use crate::plugins::api::TypeRef;
use crate::plugins::client::KcpClient;
use crate::plugins::path::{self, Argument, ClusterUrl, Target, WorkspacePath};
use crate::plugins::{failed, ConnectionArgs, Io, PluginResult, Session};

const LEGACY_ROOT_NOTE: &str =
    "Note: Using 'root:' to define an absolute path is no longer supported. Instead, use ':root' to specify an absolute path.";
const HOME_NOTE: &str = "Note: 'kubectl ws' now matches 'cd' semantics: go to home workspace. 'kubectl ws -' to go back. 'kubectl ws .' to print current workspace.";

/// Moves the kubeconfig to the workspace `arg` names (none: home), printing where it now points.
pub async fn use_workspace(connection: &ConnectionArgs, arg: Option<&str>, short: bool, io: &mut Io<'_>) -> PluginResult {
    let home_dir = std::env::var("HOME").ok();
    let argument = Argument::parse(arg, home_dir.as_deref());
    if argument.legacy_root && !short {
        writeln!(io.err, "{LEGACY_ROOT_NOTE}")?;
    }
    let mut session = Session::open(connection)?;
    let original = arg.unwrap_or_default();
    let name = match argument.target {
        Target::Previous => {
            let server = session.file.swap_with_previous(&session.context)?;
            session.file.save()?;
            return print_current(io, &server, short, None);
        }
        Target::Current => return print_current(io, &session.server()?, short, None),
        Target::Root => {
            let current = session.workspace().await?;
            return commit(&mut session, &current.url_of(&current.path.top()), None, short, io);
        }
        Target::Home { rest } => {
            let home = home_path(&session.client().await?).await?;
            format!(":{home}{rest}")
        }
        Target::Path(name) => name,
    };
    let current = session.workspace().await?;
    let target = path::resolve(&current.path, &name, original)?;
    let type_ref = check_reachable(&session.client().await?, &target).await?;
    commit(&mut session, &current.url_of(&target), type_ref.as_ref(), short, io)?;
    if argument.defaulted_home && !short {
        writeln!(io.err, "{HOME_NOTE}")?;
    }
    Ok(())
}

/// Points the kubeconfig at `url` and says so.
fn commit(session: &mut Session, url: &str, type_ref: Option<&TypeRef>, short: bool, io: &mut Io<'_>) -> PluginResult {
    session.file.switch_to(&session.context, url)?;
    session.file.save()?;
    print_current(io, url, short, type_ref)
}

/// The caller's home: the path in the `spec.URL` of the Workspace `~` in `root`.
async fn home_path(client: &KcpClient) -> PluginResult<WorkspacePath> {
    let home = client.workspace(&WorkspacePath::root(), "~").await?;
    match ClusterUrl::parse(&home.spec.url) {
        Some(url) => Ok(url.path),
        None => failed(format!("invalid home workspace URL {:?}", home.spec.url)),
    }
}

/// kcp's check before a switch: discovery in the target tells whether it can be entered (403, a 404 or no API
/// groups: not), the Workspace in its parent whether it exists (404: not). Not enterable and missing is "not
/// found", not enterable but there (or its parent unreadable) is "denied"; enterable is fine even when the
/// parent cannot be read. Returns the workspace's type when the parent told it.
async fn check_reachable(client: &KcpClient, target: &WorkspacePath) -> PluginResult<Option<TypeRef>> {
    let denied = match client.api_group_count(target).await {
        Ok(groups) => groups == 0,
        Err(error) if error.is_forbidden() || error.is_not_found() => true,
        Err(error) => return Err(error.into()),
    };
    let (type_ref, not_found) = if *target == WorkspacePath::root() {
        (Some(TypeRef { name: "root".to_owned(), path: String::new() }), false)
    } else {
        match target.split() {
            Some((parent, name)) => match client.workspace(&parent, name).await {
                Ok(workspace) => (workspace.spec.type_ref, false),
                Err(error) => (None, error.is_not_found()),
            },
            None => (None, false),
        }
    };
    match (denied, not_found) {
        (true, true) => failed(format!("workspace {} not found", quoted(target))),
        (true, false) => failed(format!("access to workspace {} denied", quoted(target))),
        (false, _) => Ok(type_ref),
    }
}

//! `kubectl ws`: move between workspaces (`use`, also the default), print the current one (`current`, `.`), print
//! the tree below it (`tree`), save it as a context (`create-context`); `create` is kept, deprecated, as in kcp.

mod navigate;
mod tree;

use clap::{Parser, Subcommand};

use super::path::{ClusterUrl, WorkspacePath};
use super::{api::TypeRef, create, failed, ConnectionArgs, Io, PluginResult, Session};

pub use navigate::use_workspace;

const EXAMPLES: &str = "Examples:
  kubectl ws .                      # print the current workspace
  kubectl ws use my-workspace       # enter a workspace (edits the current KUBECONFIG)
  kubectl ws my-workspace           # the same
  kubectl ws :root:org:team         # an absolute path
  kubectl ws some:nested:workspace  # a relative path
  kubectl ws ..                     # the parent workspace
  kubectl ws ..:..                  # the grandparent workspace
  kubectl ws -                      # the previous workspace
  kubectl ws :                      # the root of the current tree
  kubectl ws                        # the home workspace (also ~, ~:sub)
  kubectl ws tree                   # the workspaces below the current one
  kubectl ws create-context         # a kubeconfig context for the current workspace";

/// `kubectl ws`, as kcp's `kubectl-ws` parses it.
#[derive(Debug, Parser)]
#[command(name = "kubectl ws", about = "Manages kcp workspaces", after_help = EXAMPLES)]
pub struct WsCli {
    #[command(flatten)]
    pub args: WsArgs,
}

/// The arguments of `kubectl ws` (also `kubectl kcp ws`).
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct WsArgs {
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// Print only the name of the workspace, e.g. for integration into the shell prompt
    #[arg(long)]
    pub short: bool,
    /// Interactive workspace tree browser (not in kspaces' kubectl-ws)
    #[arg(short = 'i', long)]
    pub interactive: bool,
    /// <workspace>|..|.|-|~|:|<:root:absolute:workspace>
    pub workspace: Option<String>,
    #[command(subcommand)]
    pub command: Option<WsCommand>,
}

#[derive(Debug, Subcommand)]
pub enum WsCommand {
    /// Uses the given workspace as the current workspace. Using - means previous workspace, .. means parent
    /// workspace, . means current, ~ means home workspace
    #[command(visible_alias = "cd")]
    Use {
        /// <workspace>|..|.|-|~|:|<:root:absolute:workspace>|<relative:workspace>
        workspace: String,
        /// Print only the name of the workspace
        #[arg(long)]
        short: bool,
    },
    /// Print the current workspace. Same as 'kubectl ws .'.
    Current {
        /// Print only the name of the workspace
        #[arg(long)]
        short: bool,
    },
    /// Print the current workspace tree.
    Tree {
        /// Show full workspace names
        #[arg(short = 'f', long)]
        full: bool,
    },
    /// Creates a new workspace (deprecated: use 'kubectl create workspace')
    Create(create::CreateArgs),
    /// Create a kubeconfig context for the current workspace
    CreateContext {
        /// The context's name (default: the workspace's path)
        name: Option<String>,
        /// Overwrite the context if it already exists
        #[arg(long)]
        overwrite: bool,
    },
}

/// Runs `kubectl ws`.
pub async fn run(args: WsArgs, io: &mut Io<'_>) -> PluginResult {
    if args.interactive {
        return failed("the interactive workspace browser (-i) is not part of kspaces' kubectl-ws: use 'kubectl ws tree'");
    }
    let connection = &args.connection;
    match args.command {
        None => use_workspace(connection, args.workspace.as_deref(), args.short, io).await,
        Some(WsCommand::Use { workspace, short }) => use_workspace(connection, Some(&workspace), short || args.short, io).await,
        Some(WsCommand::Current { short }) => current(connection, short || args.short, io),
        Some(WsCommand::Tree { full }) => tree::print(connection, full, io).await,
        Some(WsCommand::Create(create)) => {
            writeln!(io.err, "Command \"create\" is deprecated, install the 'kubectl create workspace' plugin instead")?;
            create::run(connection, create, io).await
        }
        Some(WsCommand::CreateContext { name, overwrite }) => {
            create_context(&Session::open(connection)?, name.as_deref(), None, overwrite, false, io)
        }
    }
}

/// `kubectl ws current` and `kubectl ws .`: the workspace the kubeconfig points at, read from its URL.
pub fn current(connection: &ConnectionArgs, short: bool, io: &mut Io<'_>) -> PluginResult {
    let session = Session::open(connection)?;
    print_current(io, &session.server()?, short, None)
}

/// kcp's report of where a kubeconfig points: `Current workspace is 'root:org' (type root:organization).`, only
/// the path with `--short`, the URL itself when it names no workspace.
pub fn print_current(io: &mut Io<'_>, server: &str, short: bool, type_ref: Option<&TypeRef>) -> PluginResult {
    let Some(url) = ClusterUrl::parse(server) else {
        if !short {
            writeln!(io.out, "Current workspace is the URL {server:?}.")?;
        }
        return Ok(());
    };
    match (short, type_ref) {
        (true, _) => writeln!(io.out, "{}", url.path)?,
        (false, Some(type_ref)) => writeln!(io.out, "Current workspace is '{}' (type {type_ref}).", url.path)?,
        (false, None) => writeln!(io.out, "Current workspace is '{}'.", url.path)?,
    }
    Ok(())
}

/// `kubectl ws create-context [name] [--overwrite]` (and `kubectl create workspace --create-context`): a context
/// named `name` (default: the workspace path) for the current workspace, or for `server` if given.
pub fn create_context(
    session: &Session,
    name: Option<&str>,
    server: Option<&str>,
    overwrite: bool,
    keep_current: bool,
    io: &mut Io<'_>,
) -> PluginResult {
    let mut file = session.file.clone();
    let from = session.context.as_str();
    let Some(context) = file.context(from) else {
        return failed(format!("current context {from:?} is not found in kubeconfig"));
    };
    let cluster_name = context.get_str("cluster").unwrap_or_default().to_owned();
    let Some(cluster_server) = file.cluster(&cluster_name).map(|c| c.get_str("server").unwrap_or_default().to_owned()) else {
        return failed(format!("current cluster {cluster_name:?} is not found in kubeconfig"));
    };
    let Some(current) = ClusterUrl::parse(&cluster_server) else {
        return failed(format!("current URL {cluster_server:?} does not point to a workspace"));
    };
    let name = name.map_or_else(|| current.path.to_string(), str::to_owned);
    let existed = file.create_context(from, &name, server, overwrite, keep_current)?;
    file.save()?;
    let verb = if existed { "Updated" } else { "Created" };
    if keep_current || session.file.current_context() == Some(name.as_str()) {
        writeln!(io.out, "{verb} context {name:?}.")?;
    } else {
        writeln!(io.out, "{verb} context {name:?} and switched to it.")?;
    }
    Ok(())
}

/// The workspace a path names, for messages.
fn quoted(path: &WorkspacePath) -> String {
    format!("{:?}", path.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How kubectl's arguments after `ws` are read: one row per command line.
    #[test]
    fn command_lines() {
        let rows = [
            ("", "use None short=false"),
            ("-", "use Some(\"-\") short=false"),
            ("..", "use Some(\"..\") short=false"),
            (". --short", "use Some(\".\") short=true"),
            (":root:a", "use Some(\":root:a\") short=false"),
            ("~", "use Some(\"~\") short=false"),
            ("use team", "Use { workspace: \"team\", short: false }"),
            ("cd - --short", "Use { workspace: \"-\", short: true }"),
            ("current --short", "Current { short: true }"),
            ("tree -f", "Tree { full: true }"),
            ("create-context dev --overwrite", "CreateContext { name: Some(\"dev\"), overwrite: true }"),
            ("a --kubeconfig /k --context c", "use Some(\"a\") short=false /k c"),
            ("tree --kubeconfig /k", "Tree { full: false } /k"),
        ];
        for (line, expected) in rows {
            let argv = std::iter::once("kubectl-ws").chain(line.split_whitespace());
            let cli = WsCli::try_parse_from(argv).unwrap_or_else(|e| panic!("{line}: {e}"));
            let args = cli.args;
            let mut got = match &args.command {
                None => format!("use {:?} short={}", args.workspace, args.short),
                Some(command) => format!("{command:?}"),
            };
            if let Some(path) = &args.connection.kubeconfig {
                got.push_str(&format!(" {}", path.display()));
            }
            if let Some(context) = &args.connection.context {
                got.push_str(&format!(" {context}"));
            }
            assert_eq!(got, expected, "{line}");
        }
        assert!(WsCli::try_parse_from(["kubectl-ws", "a", "b"]).is_err());
    }
}

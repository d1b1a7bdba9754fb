//! `kubectl kcp`: `bind apiexport`, `claims get|accept|reject` and `workspace` (= `kubectl ws`); kcp's other
//! subcommands (`crd`, `quickstart`, ...) are refused with a message naming what this plugin has.

mod bind;
mod claims;

use clap::{Parser, Subcommand};

use super::{failed, ws, Io, PluginResult};

pub use bind::BindArgs;
pub use claims::{ClaimsGetArgs, ClaimsUpdateArgs};

/// `kubectl kcp`, as kcp's `kubectl-kcp` parses it.
#[derive(Debug, Parser)]
#[command(name = "kubectl kcp", about = "kubectl plugin for kcp: kcp-specific subcommands for kubectl", arg_required_else_help = true)]
pub struct KcpCli {
    #[command(subcommand)]
    pub command: KcpCommand,
}

#[derive(Debug, Subcommand)]
pub enum KcpCommand {
    /// Manages kcp workspaces (the same as 'kubectl ws')
    #[command(visible_aliases = ["ws", "workspaces"])]
    Workspace(ws::WsArgs),
    /// Bind different types into current workspace.
    Bind {
        #[command(subcommand)]
        what: BindCommand,
    },
    /// Operations related to viewing or updating permission claims
    Claims {
        #[command(subcommand)]
        what: ClaimsCommand,
    },
    /// Any other subcommand: refused.
    #[command(external_subcommand)]
    Other(Vec<String>),
}

#[derive(Debug, Subcommand)]
pub enum BindCommand {
    /// Bind to an APIExport
    Apiexport(BindArgs),
}

#[derive(Debug, Subcommand)]
pub enum ClaimsCommand {
    /// Operations related to fetching APIs with respect to permission claims
    Get {
        #[command(subcommand)]
        what: ClaimsGetCommand,
    },
    /// Accept permission claims of an APIBinding
    Accept(ClaimsUpdateArgs),
    /// Reject permission claims of an APIBinding
    Reject(ClaimsUpdateArgs),
}

#[derive(Debug, Subcommand)]
pub enum ClaimsGetCommand {
    /// Get claims related to apibinding (every binding of the workspace without a name)
    Apibinding(ClaimsGetArgs),
}

/// Runs `kubectl kcp`.
pub async fn run(cli: KcpCli, io: &mut Io<'_>) -> PluginResult {
    match cli.command {
        KcpCommand::Workspace(args) => ws::run(args, io).await,
        KcpCommand::Bind { what: BindCommand::Apiexport(args) } => bind::run(args, io).await,
        KcpCommand::Claims { what: ClaimsCommand::Get { what: ClaimsGetCommand::Apibinding(args) } } => claims::get(args, io).await,
        KcpCommand::Claims { what: ClaimsCommand::Accept(args) } => claims::update(args, claims::Decision::Accept, io).await,
        KcpCommand::Claims { what: ClaimsCommand::Reject(args) } => claims::update(args, claims::Decision::Reject, io).await,
        KcpCommand::Other(words) => failed(format!(
            "\"kubectl kcp {}\" is not part of kspaces' kubectl-kcp, which has: bind apiexport, claims (get apibinding, accept, reject), workspace",
            words.first().map(String::as_str).unwrap_or_default()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<KcpCli, clap::Error> {
        KcpCli::try_parse_from(std::iter::once("kubectl-kcp").chain(line.split_whitespace()))
    }

    #[test]
    fn command_lines() {
        let rows = [
            "bind apiexport root:provider:widgets --name w --accept-permission-claim secrets.core,configmaps.core --reject-permission-claim pods.core --timeout 5s",
            "claims get apibinding widgets",
            "claims get apibinding",
            "claims accept widgets --resource secrets.core",
            "claims reject widgets --identity-hash abc",
            "ws ..",
            "workspace tree --full",
            "crd snapshot -f x",
        ];
        let got: Vec<String> = rows.iter().map(|line| format!("{:?}", parse(line).map(|cli| cli.command).map_err(|e| e.kind()))).collect();
        expect_test::expect![[r#"
            [
                "Ok(Bind { what: Apiexport(BindArgs { connection: ConnectionArgs { kubeconfig: None, context: None }, export: Some(\"root:provider:widgets\"), name: Some(\"w\"), timeout: \"5s\", accept_permission_claim: [\"secrets.core\", \"configmaps.core\"], reject_permission_claim: [\"pods.core\"], accept_all_permission_claims: false, reject_all_permission_claims: false }) })",
                "Ok(Claims { what: Get { what: Apibinding(ClaimsGetArgs { connection: ConnectionArgs { kubeconfig: None, context: None }, name: Some(\"widgets\") }) } })",
                "Ok(Claims { what: Get { what: Apibinding(ClaimsGetArgs { connection: ConnectionArgs { kubeconfig: None, context: None }, name: None }) } })",
                "Ok(Claims { what: Accept(ClaimsUpdateArgs { connection: ConnectionArgs { kubeconfig: None, context: None }, name: Some(\"widgets\"), resource: Some(\"secrets.core\"), identity_hash: None }) })",
                "Ok(Claims { what: Reject(ClaimsUpdateArgs { connection: ConnectionArgs { kubeconfig: None, context: None }, name: Some(\"widgets\"), resource: None, identity_hash: Some(\"abc\") }) })",
                "Ok(Workspace(WsArgs { connection: ConnectionArgs { kubeconfig: None, context: None }, short: false, interactive: false, workspace: Some(\"..\"), command: None }))",
                "Ok(Workspace(WsArgs { connection: ConnectionArgs { kubeconfig: None, context: None }, short: false, interactive: false, workspace: None, command: Some(Tree { full: true }) }))",
                "Ok(Other([\"crd\", \"snapshot\", \"-f\", \"x\"]))",
            ]
        "#]]
        .assert_debug_eq(&got);
    }
}

//! `kubectl kcp bind apiexport <path>:<export>`: POST an `apis.kcp.io/v1alpha1` `APIBinding` in the current
//! workspace (claims accepted or rejected as the flags say, each for all objects), then wait for `Bound`.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::{sleep, Instant};

use crate::plugins::api::PermissionClaim;
use crate::plugins::path::WorkspacePath;
use crate::plugins::{failed, ConnectionArgs, Io, PluginError, PluginResult, Session};

#[derive(Debug, clap::Args)]
pub struct BindArgs {
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// <workspace_path:apiexport-name>, e.g. root:my-service:my-export
    pub export: Option<String>,
    /// Name of the APIBinding to create (default: the export's name).
    #[arg(long)]
    pub name: Option<String>,
    /// Duration to wait for APIBinding to be created successfully.
    #[arg(long, default_value = "30s")]
    pub timeout: String,
    /// Accepted permission claims, resource.group (core for the core group), repeated or comma-separated.
    #[arg(long, value_name = "RESOURCE.GROUP", value_delimiter = ',')]
    pub accept_permission_claim: Vec<String>,
    /// Rejected permission claims, resource.group, repeated or comma-separated.
    #[arg(long, value_name = "RESOURCE.GROUP", value_delimiter = ',')]
    pub reject_permission_claim: Vec<String>,
    /// Accept all permission claims from the APIExport.
    #[arg(long)]
    pub accept_all_permission_claims: bool,
    /// Reject all permission claims from the APIExport.
    #[arg(long)]
    pub reject_all_permission_claims: bool,
}

/// What a valid `bind` command line asks for.
#[derive(Debug, PartialEq)]
pub struct Plan {
    pub binding: String,
    pub export_path: WorkspacePath,
    pub export: String,
    /// The claims named by flags, with their state.
    pub claims: Vec<PermissionClaim>,
    /// `Accepted` or `Rejected` for every claim of the export.
    pub all: Option<&'static str>,
    pub timeout: Duration,
}

/// Checks a command line as kcp does, in kcp's words.
pub fn plan(args: &BindArgs) -> PluginResult<Plan> {
    let Some(reference) = args.export.as_deref() else {
        return failed("`root:ws:apiexport_object` reference to bind is required as an argument");
    };
    let (accept_all, reject_all) = (args.accept_all_permission_claims, args.reject_all_permission_claims);
    let (accepted, rejected) = (!args.accept_permission_claim.is_empty(), !args.reject_permission_claim.is_empty());
    let conflict = match () {
        _ if accept_all && reject_all => Some("cannot use both --accept-all-permission-claims and --reject-all-permission-claims"),
        _ if accept_all && accepted => Some("cannot use --accept-all-permission-claims with --accept-permission-claim"),
        _ if accept_all && rejected => Some("cannot use --accept-all-permission-claims together with --reject-permission-claim"),
        _ if reject_all && rejected => Some("cannot use --reject-all-permission-claims with --reject-permission-claim"),
        _ if reject_all && accepted => Some("cannot use --reject-all-permission-claims together with --accept-permission-claim"),
        _ => None,
    };
    if let Some(message) = conflict {
        return failed(message);
    }
    let (export_path, export) = match reference.rsplit_once(':').map(|(path, name)| (WorkspacePath::parse(path), name)) {
        Some((Some(path), name)) if !name.is_empty() => (path, name.to_owned()),
        _ => return failed("fully qualified reference to workspace where APIExport exists is required. The format is `<logical-cluster-name>:<apiexport>` or `<full>:<path>:<to>:<apiexport>`"),
    };
    let mut claims = parse_claims(&args.accept_permission_claim, "Accepted", "accepted")?;
    let rejected_claims = parse_claims(&args.reject_permission_claim, "Rejected", "rejected")?;
    for accepted in &claims {
        if let Some(rejected) = rejected_claims.iter().find(|r| r.group == accepted.group && r.resource == accepted.resource) {
            return failed(format!(
                "accepted permission claim {} conflicts with rejected permission claim {}",
                accepted.group_resource(),
                rejected.group_resource()
            ));
        }
    }
    claims.extend(rejected_claims);
    let Some(timeout) = parse_duration(&args.timeout) else {
        return failed(format!("invalid argument {:?} for \"--timeout\" flag: time: invalid duration {:?}", args.timeout, args.timeout));
    };
    let all = if accept_all { Some("Accepted") } else if reject_all { Some("Rejected") } else { None };
    Ok(Plan { binding: args.name.clone().unwrap_or_else(|| export.clone()), export_path, export, claims, all, timeout })
}

/// `resource.group` flags (split at the first `.`; group `core` is the core group) as claims in `state`.
fn parse_claims(flags: &[String], state: &str, which: &str) -> PluginResult<Vec<PermissionClaim>> {
    let mut claims = Vec::new();
    let mut errors = Vec::new();
    for flag in flags {
        match flag.split_once('.') {
            Some((resource, group)) => claims.push(PermissionClaim {
                group: if group == "core" { String::new() } else { group.to_owned() },
                resource: resource.to_owned(),
                state: state.to_owned(),
                ..PermissionClaim::default()
            }),
            None => errors.push(format!("invalid permission claim {flag:?}")),
        }
    }
    if errors.is_empty() {
        Ok(claims)
    } else {
        failed(format!("invalid {which} permission claims: [{}]", errors.join(" ")))
    }
}

/// A Go duration (`30s`, `1m30s`, `500ms`, `2h`, `0`), as `--timeout` takes it in kcp.
pub fn parse_duration(text: &str) -> Option<Duration> {
    if text == "0" {
        return Some(Duration::ZERO);
    }
    let mut rest = text;
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !c.is_ascii_digit() && c != '.')?;
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let seconds = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += number * seconds;
        rest = &rest[unit_end..];
    }
    (!text.is_empty()).then(|| Duration::from_secs_f64(total))
}

/// The APIBinding for `apis.kcp.io/v1alpha1`: each claim with the scope the export claims (its
/// `resourceSelector`), else for all objects (`all: true`, as kcp's plugin sends every claim); empty group and
/// identity hash left out.
pub fn binding_body(plan: &Plan, claims: &[PermissionClaim]) -> Value {
    let claims: Vec<Value> = claims
        .iter()
        .map(|claim| {
            let mut json = json!({"resource": claim.resource, "state": claim.state});
            if claim.resource_selector.is_empty() {
                json["all"] = json!(true);
            } else {
                json["resourceSelector"] = json!(claim.resource_selector);
            }
            if !claim.group.is_empty() {
                json["group"] = json!(claim.group);
            }
            if !claim.identity_hash.is_empty() {
                json["identityHash"] = json!(claim.identity_hash);
            }
            json
        })
        .collect();
    let mut spec = json!({"reference": {"export": {"path": plan.export_path.as_str(), "name": plan.export}}});
    if !claims.is_empty() {
        spec["permissionClaims"] = Value::Array(claims);
    }
    json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": plan.binding}, "spec": spec})
}

/// `claim` with the scope (and identity hash) of the export's claim on the same resource, if it makes one.
fn with_export_scope(claim: PermissionClaim, export_claims: &[PermissionClaim]) -> PermissionClaim {
    let same = |e: &&PermissionClaim| e.group == claim.group && e.resource == claim.resource
        && (claim.identity_hash.is_empty() || e.identity_hash == claim.identity_hash);
    match export_claims.iter().find(same) {
        Some(export) => PermissionClaim { state: claim.state, ..export.clone() },
        None => claim,
    }
}

/// Runs `kubectl kcp bind apiexport`.
pub async fn run(args: BindArgs, io: &mut Io<'_>) -> PluginResult {
    let plan = plan(&args)?;
    let session = Session::open(&args.connection)?;
    let current = session.workspace_or(|server| format!("current URL {server:?} does not point to workspace")).await?;
    let client = session.client().await?;
    let mut claims = plan.claims.clone();
    if let Some(state) = plan.all {
        let export = client
            .api_export(&plan.export_path, &plan.export)
            .await
            .map_err(|e| PluginError::Failed(format!("failed to get APIExport {:?}: {e}", plan.export)))?;
        claims = export.spec.permission_claims.into_iter().map(|claim| PermissionClaim { state: state.to_owned(), ..claim }).collect();
    } else if !claims.is_empty() {
        // A claim is accepted with the scope the export claims (the server applies nothing wider); an export the
        // caller cannot read leaves kcp's `all: true`.
        if let Ok(export) = client.api_export(&plan.export_path, &plan.export).await {
            claims = claims.into_iter().map(|claim| with_export_scope(claim, &export.spec.permission_claims)).collect();
        }
    }
    let created = client
        .create_api_binding(&current.path, &binding_body(&plan, &claims))
        .await
        .map_err(|e| PluginError::Failed(format!("failed to create APIBinding: {e}")))?;
    let name = if created.metadata.name.is_empty() { plan.binding.clone() } else { created.metadata.name.clone() };
    writeln!(io.out, "apibinding {name} created. Waiting to successfully bind ...")?;
    let deadline = Instant::now() + plan.timeout;
    let mut phase = created.status.phase;
    while phase != "Bound" {
        phase = client.api_binding(&current.path, &name).await.map_err(|e| PluginError::Failed(format!("could not bind {name}: {e}")))?.status.phase;
        if phase == "Bound" {
            break;
        }
        if Instant::now() >= deadline {
            return failed(format!("could not bind {name}: not Bound after {} (phase {phase:?})", args.timeout));
        }
        sleep(Duration::from_millis(500)).await;
    }
    writeln!(io.out, "{name} created and bound.")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: BindArgs,
    }

    /// One row per command line: the binding it sends, or kcp's refusal.
    #[test]
    fn command_lines() {
        let rows = [
            "root:provider:widgets",
            "root:provider:widgets --name mine --accept-permission-claim secrets.core,configmaps.core --reject-permission-claim gateways.networking.istio.io",
            "root:provider:widgets --accept-permission-claim things.example.com --accept-permission-claim secrets",
            "root:provider:widgets --accept-permission-claim secrets.core --reject-permission-claim secrets.core",
            "root:provider:widgets --accept-all-permission-claims --reject-all-permission-claims",
            "root:provider:widgets --accept-all-permission-claims --accept-permission-claim a.b",
            "root:provider:widgets --reject-all-permission-claims --accept-permission-claim a.b",
            "root:provider:widgets --timeout soon",
            "widgets",
            "Root:x:widgets",
            "root:provider:",
            "",
        ];
        let mut out = String::new();
        for line in rows {
            let cli = Cli::try_parse_from(std::iter::once("bind").chain(line.split_whitespace())).expect("parses");
            let shown = match plan(&cli.args) {
                Ok(plan) => format!("{} timeout={:?} all={:?}", binding_body(&plan, &plan.claims), plan.timeout, plan.all),
                Err(error) => format!("error: {error}"),
            };
            out.push_str(&format!("{line}\n  {shown}\n"));
        }
        expect_test::expect![[r#"
            root:provider:widgets
              {"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIBinding","metadata":{"name":"widgets"},"spec":{"reference":{"export":{"name":"widgets","path":"root:provider"}}}} timeout=30s all=None
            root:provider:widgets --name mine --accept-permission-claim secrets.core,configmaps.core --reject-permission-claim gateways.networking.istio.io
              {"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIBinding","metadata":{"name":"mine"},"spec":{"permissionClaims":[{"all":true,"resource":"secrets","state":"Accepted"},{"all":true,"resource":"configmaps","state":"Accepted"},{"all":true,"group":"networking.istio.io","resource":"gateways","state":"Rejected"}],"reference":{"export":{"name":"widgets","path":"root:provider"}}}} timeout=30s all=None
            root:provider:widgets --accept-permission-claim things.example.com --accept-permission-claim secrets
              error: invalid accepted permission claims: [invalid permission claim "secrets"]
            root:provider:widgets --accept-permission-claim secrets.core --reject-permission-claim secrets.core
              error: accepted permission claim secrets conflicts with rejected permission claim secrets
            root:provider:widgets --accept-all-permission-claims --reject-all-permission-claims
              error: cannot use both --accept-all-permission-claims and --reject-all-permission-claims
            root:provider:widgets --accept-all-permission-claims --accept-permission-claim a.b
              error: cannot use --accept-all-permission-claims with --accept-permission-claim
            root:provider:widgets --reject-all-permission-claims --accept-permission-claim a.b
              error: cannot use --reject-all-permission-claims together with --accept-permission-claim
            root:provider:widgets --timeout soon
              error: invalid argument "soon" for "--timeout" flag: time: invalid duration "soon"
            widgets
              error: fully qualified reference to workspace where APIExport exists is required. The format is `<logical-cluster-name>:<apiexport>` or `<full>:<path>:<to>:<apiexport>`
            Root:x:widgets
              error: fully qualified reference to workspace where APIExport exists is required. The format is `<logical-cluster-name>:<apiexport>` or `<full>:<path>:<to>:<apiexport>`
            root:provider:
              error: fully qualified reference to workspace where APIExport exists is required. The format is `<logical-cluster-name>:<apiexport>` or `<full>:<path>:<to>:<apiexport>`
            
              error: `root:ws:apiexport_object` reference to bind is required as an argument
        "#]]
        .assert_eq(&out);
    }

    #[test]
    fn go_durations() {
        let rows = [("30s", Some(30.0)), ("1m30s", Some(90.0)), ("500ms", Some(0.5)), ("1.5h", Some(5400.0)), ("0", Some(0.0)), ("30", None), ("", None), ("5x", None), ("s", None)];
        for (text, seconds) in rows {
            assert_eq!(parse_duration(text).map(|d| d.as_secs_f64()), seconds, "{text}");
        }
    }
}

//! `kubectl kcp claims get apibinding [name]` (the claims table) and `kubectl kcp claims accept|reject <binding>
//! --resource R.G | --identity-hash H` (a claim's state changed and the binding PUT back).

use serde_json::Value;

use crate::plugins::api::ApiBinding;
use crate::plugins::{failed, ConnectionArgs, Io, PluginError, PluginResult, Session};

#[derive(Debug, clap::Args)]
pub struct ClaimsGetArgs {
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// The APIBinding (default: every APIBinding of the workspace)
    pub name: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct ClaimsUpdateArgs {
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// The APIBinding
    pub name: Option<String>,
    /// Resource group of permission claim. Format: --resource resource.group
    #[arg(long)]
    pub resource: Option<String>,
    /// Identity hash of the resource. Format: --identity-hash id
    #[arg(long)]
    pub identity_hash: Option<String>,
}

#[derive(Clone, Copy, Debug)]
pub enum Decision {
    Accept,
    Reject,
}

impl Decision {
    fn state(self) -> &'static str {
        match self {
            Decision::Accept => "Accepted",
            Decision::Reject => "Rejected",
        }
    }
    fn verb(self) -> &'static str {
        match self {
            Decision::Accept => "accepted",
            Decision::Reject => "rejected",
        }
    }
}

/// Prints the claims of one binding, or of every binding in the workspace.
pub async fn get(args: ClaimsGetArgs, io: &mut Io<'_>) -> PluginResult {
    let session = Session::open(&args.connection)?;
    let current = session.workspace_or(|server| format!("current URL {server:?} does not point to workspace")).await?;
    let client = session.client().await?;
    let bindings = match &args.name {
        Some(name) => {
            vec![client.api_binding(&current.path, name).await.map_err(|e| PluginError::Failed(format!("error finding APIBinding: {e}")))?]
        }
        None => client
            .api_bindings(&current.path)
            .await
            .map_err(|e| PluginError::Failed(format!("error listing APIBindings in {:?} workspace: {e}", current.path.as_str())))?,
    };
    write!(io.out, "{}", claims_table(&bindings))?;
    Ok(())
}

/// kcp's table (`APIBINDING  GROUP-RESOURCE  STATUS`, one row per claim), aligned as kubectl's tab writer aligns.
pub fn claims_table(bindings: &[ApiBinding]) -> String {
    let mut rows = vec![["APIBINDING".to_owned(), "GROUP-RESOURCE".to_owned(), "STATUS".to_owned()]];
    for binding in bindings {
        for claim in &binding.spec.permission_claims {
            rows.push([binding.metadata.name.clone(), claim.group_resource(), claim.state.clone()]);
        }
    }
    align(&rows)
}

/// Go's `tabwriter` as kubectl configures it (minimum width 6, padding 3): every column but the last is padded to
/// its widest cell plus three spaces.
fn align<const N: usize>(rows: &[[String; N]]) -> String {
    let mut widths = [0usize; N];
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count() + 3).max(6);
        }
    }
    let mut out = String::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            out.push_str(cell);
            if i + 1 < N {
                out.push_str(&" ".repeat(widths[i] - cell.chars().count()));
            }
        }
        out.push('\n');
    }
    out
}

/// Sets the state of the matching claims of a binding and PUTs it back: the first claim with `--identity-hash`,
/// every claim of the group and resource with `--resource`.
pub async fn update(args: ClaimsUpdateArgs, decision: Decision, io: &mut Io<'_>) -> PluginResult {
    let Some(name) = args.name.as_deref() else { return failed("error APIBinding name is missing") };
    let session = Session::open(&args.connection)?;
    let current = session.workspace_or(|server| format!("current URL {server:?} does not point to workspace")).await?;
    let client = session.client().await?;
    let updating = |e: &dyn std::fmt::Display| PluginError::Failed(format!("error updating permission claim for APIBinding {name:?}: {e}"));
    let mut binding = client.api_binding_object(&current.path, name).await.map_err(|e| updating(&e))?;
    set_states(&mut binding, args.identity_hash.as_deref(), args.resource.as_deref(), decision.state());
    client.replace_api_binding(&current.path, name, &binding).await.map_err(|e| updating(&e))?;
    let subject = match (&args.resource, &args.identity_hash) {
        (Some(resource), _) => format!("claim {resource:?} "),
        (None, Some(hash)) => format!("claim with identity hash {hash:?} "),
        (None, None) => String::new(),
    };
    writeln!(io.out, "{subject}on APIBinding {name:?} is {}", decision.verb())?;
    Ok(())
}

fn set_states(binding: &mut Value, identity_hash: Option<&str>, resource: Option<&str>, state: &str) {
    let Some(claims) = binding.pointer_mut("/spec/permissionClaims").and_then(Value::as_array_mut) else { return };
    if let Some(hash) = identity_hash.filter(|h| !h.is_empty()) {
        if let Some(claim) = claims.iter_mut().find(|c| c["identityHash"].as_str() == Some(hash)) {
            claim["state"] = Value::from(state);
        }
        return;
    }
    let Some(resource) = resource.filter(|r| !r.is_empty()) else { return };
    let (resource, group) = resource.split_once('.').unwrap_or((resource, ""));
    let group = if group == "core" { "" } else { group };
    for claim in claims.iter_mut() {
        if claim["resource"].as_str() == Some(resource) && claim["group"].as_str().unwrap_or_default() == group {
            claim["state"] = Value::from(state);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_claims_table() {
        let bindings: Vec<ApiBinding> = serde_json::from_value(json!([
            {"metadata": {"name": "widgets"}, "spec": {"permissionClaims": [
                {"resource": "secrets", "all": true, "state": "Accepted"},
                {"group": "networking.istio.io", "resource": "gateways", "all": true, "state": "Rejected"}]}},
            {"metadata": {"name": "w"}, "spec": {"permissionClaims": [{"resource": "configmaps", "state": "Accepted"}]}},
            {"metadata": {"name": "no-claims"}},
        ]))
        .expect("bindings");
        expect_test::expect![[r#"
            APIBINDING   GROUP-RESOURCE                 STATUS
            widgets      secrets                        Accepted
            widgets      gateways.networking.istio.io   Rejected
            w            configmaps                     Accepted
        "#]]
        .assert_eq(&claims_table(&bindings));
        assert_eq!(claims_table(&[]), "APIBINDING   GROUP-RESOURCE   STATUS\n");
    }

    #[test]
    fn accepting_and_rejecting() {
        let original = json!({"spec": {"permissionClaims": [
            {"resource": "secrets", "all": true, "state": "Rejected"},
            {"group": "example.com", "resource": "things", "identityHash": "h1", "all": true},
            {"group": "example.com", "resource": "things", "identityHash": "h2", "all": true}]}, "status": {"phase": "Bound"}});
        let states = |binding: &Value| -> Vec<String> {
            binding["spec"]["permissionClaims"].as_array().expect("claims").iter().map(|c| c["state"].as_str().unwrap_or("-").to_owned()).collect()
        };
        let mut binding = original.clone();
        set_states(&mut binding, None, Some("secrets.core"), "Accepted");
        assert_eq!(states(&binding), ["Accepted", "-", "-"]);
        set_states(&mut binding, Some("h2"), Some("secrets.core"), "Rejected");
        assert_eq!(states(&binding), ["Accepted", "-", "Rejected"], "the identity hash wins over the resource");
        set_states(&mut binding, None, Some("things.example.com"), "Accepted");
        assert_eq!(states(&binding), ["Accepted", "Accepted", "Accepted"]);
        assert_eq!(binding["status"], original["status"], "the rest of the binding is sent back as read");
    }
}

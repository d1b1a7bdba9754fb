//! WorkspaceAuthenticationConfiguration (kcp's `tenancy.kcp.io/v1alpha1`, cluster-scoped): a tenant's own
//! identity providers, a `jwt` list as in kube's `AuthenticationConfiguration`, checked as kube checks that file
//! (422 with each field's problem), and a tenant's issuer and discovery URLs held to `--tenant-webhook-allowed-cidrs`
//! as its webhooks are. Workspaces whose type names the configuration admit its issuers' users, always as plain
//! users of the tenant (`filters::oidc::workspace`, `docs/authentication.md`).

use std::sync::Arc;

use async_trait::async_trait;
use kspaces_storage::SpaceName;
use serde_json::{json, Map, Value};

use super::admission_webhook::reach::Reach;
use super::{kcp_row, kind_schema, string, Context, Kind, Rules};
use crate::filters::oidc::config::parse_jwt_list;
use crate::filters::oidc::workspace::{GROUP, KIND as NAME};
use crate::registry::strategy::Strategy;
use crate::registry::ResourceInfo;
use crate::status::{ApiError, ApiResult, Cause};

pub const KIND: Kind = Kind { rows, definitions, rules };

const DEFINITION: &str = "io.kcp.tenancy.v1alpha1.WorkspaceAuthenticationConfiguration";

fn rows() -> Vec<ResourceInfo> {
    vec![kcp_row(GROUP, NAME, "workspaceauthenticationconfigurations", DEFINITION, false)]
}

fn definitions() -> Map<String, Value> {
    let mut definitions = Map::new();
    definitions.insert(DEFINITION.into(), kind_schema(
        "WorkspaceAuthenticationConfiguration names JWT issuers whose users workspaces of the types referencing it admit.",
        json!({"type": "object", "required": ["jwt"], "properties": {
            "jwt": {"type": "array", "description": "The JWT authenticators, as in kube's AuthenticationConfiguration.",
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
                    "issuer": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                        "properties": {"url": string("The issuer's URL, https."), "audiences": {"type": "array", "items": {"type": "string"}}}},
                }}},
        }}),
        json!({"type": "object", "properties": {}}),
    ));
    definitions
}

fn rules(context: &Context, rules: &mut Rules) {
    rules.strategy(GROUP, NAME, Arc::new(ConfigurationStrategy { reach: context.webhook_reach.clone() }));
    rules.observe(context.workspace_issuers.clone());
}

struct ConfigurationStrategy {
    reach: Arc<Reach>,
}

#[async_trait]
impl Strategy for ConfigurationStrategy {
    fn validate(&self, _: &ResourceInfo, object: &Value, _: Option<&Value>, causes: &mut Vec<Cause>) {
        match object.pointer("/spec/jwt") {
            None | Some(Value::Null) => causes.push(Cause::required("spec.jwt")),
            Some(Value::Array(list)) if list.is_empty() => causes.push(Cause::required("spec.jwt")),
            Some(list) => {
                if let Err(errors) = parse_jwt_list(list, "spec.jwt") {
                    causes.extend(errors);
                }
            }
        }
    }

    async fn validate_costly(&self, resource: &ResourceInfo, space: &SpaceName, object: &Value, _: Option<&Value>) -> ApiResult<()> {
        let list = object.pointer("/spec/jwt").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let causes: Vec<Cause> = list.iter().enumerate().flat_map(|(i, jwt)| {
            ["url", "discoveryURL"].into_iter().filter_map(move |key| {
                let text = jwt.pointer(&format!("/issuer/{key}")).and_then(Value::as_str)?;
                self.reach.check_url(space, &format!("spec.jwt[{i}].issuer.{key}"), text)
            })
        }).collect();
        let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        match causes.is_empty() {
            true => Ok(()),
            false => Err(ApiError::invalid(&resource.group, &resource.kind, name, causes)),
        }
    }
}

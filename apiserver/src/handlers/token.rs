//! `POST .../serviceaccounts/<name>/token`: a TokenRequest (`kubectl create token <sa>`). The token names the
//! space's tenant and, for a nested workspace, its logical cluster (kcp's `kubernetes.io.clusterName`), so the
//! service account's short paths reach its own space.

use actix_web::HttpResponse;
use bytes::Bytes;
use serde_json::{json, Value};

use super::Ctx;
use crate::filters::token_issuer::{BoundObject, BoundServiceAccount, TokenError};
use crate::status::{ApiError, ApiResult, Cause};
use crate::tenancy;

const KIND: &str = "TokenRequest";
const API_VERSION: &str = "authentication.k8s.io/v1";

pub async fn create(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let mut request = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        ctx.decode_untyped(&body)?
    };
    if !request.is_object() || request.get("kind").and_then(Value::as_str).is_some_and(|k| k != KIND) {
        return Err(ApiError::bad_request("the body must be a TokenRequest"));
    }
    let name = ctx.info.name.clone();
    let invalid = |field: &str, value: &str, why: &str| ApiError::invalid("authentication.k8s.io", KIND, &name, vec![Cause::invalid(field, value, why)]);
    let space = ctx.scope.space()?.clone();
    let account = ctx.server.registry.get(&ctx.resource, &ctx.scope, &name).await?;
    let namespace = ctx.scope.namespace.clone().unwrap_or_default();
    let tenant = ctx.server.tree.tenant_of(&space);
    // An account of a nested workspace (or a system workspace) names its logical cluster as well.
    let cluster = (tenancy::space_of(&tenant).ok().as_ref() != Some(&space)).then(|| space.as_str().to_owned());
    let account = BoundServiceAccount {
        tenant,
        cluster,
        namespace: namespace.clone(),
        name: name.clone(),
        uid: account.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_owned(),
    };
    let spec = request.get("spec").cloned().unwrap_or_else(|| json!({}));
    let audiences: Vec<String> = spec.get("audiences").and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    let expiration = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => None,
        Some(value) => Some(value.as_i64().ok_or_else(|| invalid("spec.expirationSeconds", &value.to_string(), "must be an integer"))?),
    };
    let bound = match spec.get("boundObjectRef").filter(|v| v.is_object()) {
        Some(reference) => Some(bound_object(&ctx, reference).await?),
        None => None,
    };
    let now = chrono::Utc::now();
    let issued = ctx.server.authenticator.issuer.issue(&account, &audiences, expiration, bound.as_ref()).map_err(|err| match err {
        TokenError::InvalidRequest(why) => invalid("spec.expirationSeconds", &expiration.unwrap_or_default().to_string(), &why),
        other => ApiError::internal(other.to_string()),
    })?;
    let granted = ((issued.expiration - now).num_milliseconds() + 500) / 1000;
    let audiences = if audiences.is_empty() { ctx.server.authenticator.issuer.api_audiences().to_vec() } else { audiences };
    request["kind"] = json!(KIND);
    request["apiVersion"] = json!(API_VERSION);
    request["metadata"] = json!({"name": name, "namespace": namespace, "creationTimestamp": null});
    request["spec"]["audiences"] = json!(audiences);
    request["spec"]["expirationSeconds"] = json!(granted);
    request["status"] = json!({
        "token": issued.token,
        "expirationTimestamp": issued.expiration.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    });
    ctx.respond_object(201, &request)
}

/// The Pod or Secret (in the account's namespace) a token is bound to; it must exist, with the given uid if any.
async fn bound_object(ctx: &Ctx, reference: &Value) -> ApiResult<BoundObject> {
    let kind = reference.get("kind").and_then(Value::as_str).unwrap_or_default();
    let name = reference.get("name").and_then(Value::as_str).unwrap_or_default();
    let plural = match kind {
        "Pod" => "pods",
        "Secret" => "secrets",
        _ => {
            return Err(ApiError::invalid("authentication.k8s.io", KIND, &ctx.info.name, vec![Cause::not_supported(
                "spec.boundObjectRef.kind", kind, &["Pod", "Secret"])]));
        }
    };
    let resource = ctx.server.resources.lookup("", "v1", plural).cloned().ok_or_else(ApiError::no_route)?;
    let object = ctx.server.registry.get(&resource, &ctx.scope, name).await?;
    let uid = object.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_owned();
    if let Some(asked) = reference.get("uid").and_then(Value::as_str).filter(|u| !u.is_empty()) {
        if asked != uid {
            return Err(ApiError::conflict("", plural, name, &format!("the UID in the bound object reference ({asked}) does not match the object's ({uid})")));
        }
    }
    Ok(BoundObject { kind: kind.to_owned(), name: name.to_owned(), uid })
}

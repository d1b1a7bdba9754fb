//! The `scale` subresource: an `autoscaling/v1 Scale` view of `.spec.replicas`.

use actix_web::HttpResponse;
use bytes::Bytes;
use serde_json::{json, Value};

use super::patch::Patch;
use super::Ctx;
use crate::negotiate;
use crate::registry::store::Part;
use crate::status::{ApiError, ApiResult};

/// The Scale view of a workload.
pub fn to_scale(object: &Value) -> Value {
    let metadata = object.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let selector = object.pointer("/spec/selector/matchLabels").and_then(Value::as_object).map(|labels| {
        labels.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect::<Vec<_>>().join(",")
    });
    let mut status = json!({"replicas": object.pointer("/status/replicas").cloned().unwrap_or(json!(0))});
    if let Some(selector) = selector {
        status["selector"] = json!(selector);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": metadata.get("name"),
            "namespace": metadata.get("namespace"),
            "uid": metadata.get("uid"),
            "resourceVersion": metadata.get("resourceVersion"),
            "creationTimestamp": metadata.get("creationTimestamp"),
        },
        "spec": {"replicas": object.pointer("/spec/replicas").cloned().unwrap_or(json!(0))},
        "status": status,
    })
}

fn respond_scale(object: &Value) -> ApiResult<HttpResponse> {
    Ok(HttpResponse::Ok().content_type("application/json").body(to_scale(object).to_string()))
}

pub async fn get(ctx: Ctx) -> ApiResult<HttpResponse> {
    let object = ctx.server.registry.get(&ctx.resource, &ctx.scope, &ctx.info.name).await?;
    respond_scale(&object)
}

/// PUT or PATCH of the Scale: the new `spec.replicas` is written to the object.
pub async fn write(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let patch = if ctx.info.verb == "patch" {
        Some(Patch::parse(negotiate::patch_kind(ctx.content_type.as_deref())?, &body)?)
    } else {
        None
    };
    let replacement = match &patch {
        None => Some(negotiate::decode_body(negotiate::body_format(ctx.content_type.as_deref())?, &body)?),
        Some(_) => None,
    };
    let server = ctx.server.clone();
    let resource = ctx.resource.clone();
    let updated = server.registry.guaranteed_update(&resource, &ctx.scope, &ctx.info.name, Part::Main, ctx.dry_run()?, |current| {
        let scale = to_scale(current);
        let desired = match (&patch, &replacement) {
            (Some(patch), _) => patch.apply(&server, None, &scale)?,
            (None, Some(replacement)) => replacement.clone(),
            (None, None) => scale,
        };
        let replicas = desired.pointer("/spec/replicas").and_then(Value::as_i64).filter(|r| *r >= 0).ok_or_else(|| {
            ApiError::invalid("autoscaling", "Scale", current.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default(),
                vec![crate::status::Cause::invalid("spec.replicas", &desired.pointer("/spec/replicas").map(|v| v.to_string()).unwrap_or_default(), "must be greater than or equal to 0")])
        })?;
        if let Some(rv) = desired.pointer("/metadata/resourceVersion").and_then(Value::as_str).filter(|rv| !rv.is_empty()) {
            if Some(rv) != current.pointer("/metadata/resourceVersion").and_then(Value::as_str) {
                return Err(ApiError::stale(&resource.group, &resource.plural, current.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default()));
            }
        }
        let mut new = current.clone();
        new["spec"]["replicas"] = json!(replicas);
        Ok(new)
    }).await?;
    respond_scale(&updated)
}

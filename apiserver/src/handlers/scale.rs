//! The `scale` subresource: an `autoscaling/v1 Scale` view of `.spec.replicas` (of a CRD's `specReplicasPath`,
//! `statusReplicasPath` and `labelSelectorPath` for custom resources).

use actix_web::HttpResponse;
use bytes::Bytes;
use serde_json::{json, Value};

use super::patch::Patch;
use super::{manager, Ctx};
use crate::negotiate;
use crate::registry::ResourceInfo;
use crate::registry::store::Part;
use crate::status::{ApiError, ApiResult};

/// Where a resource keeps what its Scale shows, as JSON pointers.
struct Paths {
    spec_replicas: String,
    status_replicas: String,
    /// A custom resource's selector string; built-in workloads' `spec.selector.matchLabels` when `None`.
    label_selector: Option<String>,
}

/// `.spec.replicas` → `/spec/replicas` (CRD scale paths are simple dotted paths).
fn pointer(path: &str) -> String {
    path.split('.').filter(|s| !s.is_empty()).fold(String::new(), |mut p, s| {
        p.push('/');
        p.push_str(s);
        p
    })
}

fn paths(resource: &ResourceInfo) -> Paths {
    match resource.custom.as_ref().and_then(|c| c.scale()) {
        Some(scale) => Paths {
            spec_replicas: pointer(&scale.spec_replicas),
            status_replicas: pointer(&scale.status_replicas),
            label_selector: scale.label_selector.as_deref().map(pointer),
        },
        None => Paths { spec_replicas: "/spec/replicas".into(), status_replicas: "/status/replicas".into(), label_selector: None },
    }
}

/// The Scale view of a workload.
fn to_scale(resource: &ResourceInfo, object: &Value) -> Value {
    let paths = paths(resource);
    let metadata = object.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let selector = match &paths.label_selector {
        Some(path) => object.pointer(path).and_then(Value::as_str).map(str::to_owned),
        None => object.pointer("/spec/selector/matchLabels").and_then(Value::as_object).map(|labels| {
            labels.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect::<Vec<_>>().join(",")
        }),
    };
    let mut status = json!({"replicas": object.pointer(&paths.status_replicas).cloned().unwrap_or(json!(0))});
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
        "spec": {"replicas": object.pointer(&paths.spec_replicas).cloned().unwrap_or(json!(0))},
        "status": status,
    })
}

fn respond_scale(resource: &ResourceInfo, object: &Value) -> ApiResult<HttpResponse> {
    Ok(HttpResponse::Ok().content_type("application/json").body(to_scale(resource, object).to_string()))
}

pub async fn get(ctx: Ctx) -> ApiResult<HttpResponse> {
    let object = ctx.server.registry.get(&ctx.resource, &ctx.scope, &ctx.info.name).await?;
    respond_scale(&ctx.resource, &object)
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
    let write = manager::update_write(&ctx, if patch.is_some() { "PatchOptions" } else { "UpdateOptions" })?;
    let server = ctx.server.clone();
    let resource = ctx.resource.clone();
    let updated = server.registry.guaranteed_update(&resource, &ctx.scope, &ctx.info.name, Part::Main, &write, |current| {
        let scale = to_scale(&resource, current);
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
        set_pointer(&mut new, &paths(&resource).spec_replicas, json!(replicas));
        Ok(new)
    }).await?;
    respond_scale(&resource, &updated)
}

/// Sets the value at `pointer`, making the objects on the way.
fn set_pointer(object: &mut Value, pointer: &str, value: Value) {
    let mut at = object;
    let segments: Vec<&str> = pointer.split('/').skip(1).collect();
    for (i, segment) in segments.iter().enumerate() {
        if !at.is_object() {
            *at = json!({});
        }
        let Some(map) = at.as_object_mut() else { return };
        if i + 1 == segments.len() {
            map.insert((*segment).to_owned(), value);
            return;
        }
        at = map.entry((*segment).to_owned()).or_insert_with(|| json!({}));
    }
}

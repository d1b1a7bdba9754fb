//! The `scale` subresource: an `autoscaling/v1 Scale` view of `.spec.replicas` (of a CRD's `specReplicasPath`,
//! `statusReplicasPath` and `labelSelectorPath` for custom resources).

use actix_web::HttpResponse;
use bytes::Bytes;
use serde_json::{json, Value};

use super::patch::Patch;
use super::{field_manager, respond, Ctx};
use crate::decode::schema::Problem;
use crate::decode::{FieldValidation, PatchCheck, Purpose, Schema};
use crate::negotiate::{self, Endpoint, Output, Target};
use crate::registry::ResourceInfo;
use crate::registry::Part;
use crate::status::{ApiError, ApiResult};

/// The definition of the `scale` subresource's body.
const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";

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

/// The Scale in the format the client asks for: JSON, YAML or protobuf (an `autoscaling/v1 Scale` has a protobuf
/// form whatever it scales, custom resources included, as in kube); no Table or metadata-only conversion.
fn respond_scale(ctx: &Ctx, object: &Value) -> ApiResult<HttpResponse> {
    let output = negotiate::choose(ctx.accept.as_deref(), Endpoint { protobuf: true, tables: false })?;
    respond(200, Output { format: output.format, target: Target::Object }, &to_scale(&ctx.resource, object))
}

pub async fn get(ctx: Ctx) -> ApiResult<HttpResponse> {
    let object = ctx.server.registry.get(&ctx.resource, &ctx.scope, &ctx.info.name).await?;
    respond_scale(&ctx, &object)
}

/// PUT or PATCH of the Scale: the new `spec.replicas` is written to the object. The body's fields are checked
/// against `autoscaling/v1 Scale`.
pub async fn write(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let write_options = ctx.write_options()?;
    let (change, problems) = change(&ctx, write_options.field_validation, &body)?;
    let write = field_manager::update_write(&ctx, if ctx.info.verb == "patch" { "PatchOptions" } else { "UpdateOptions" })?;
    let server = ctx.server.clone();
    let resource = ctx.resource.clone();
    let check = PatchCheck::new(write_options.field_validation, Schema::definition(server.openapi(), SCALE), problems);
    let updated = server.registry.guaranteed_update(&resource, &ctx.scope, &ctx.info.name, Part::Main, &write, |current| {
        let scale = to_scale(&resource, current);
        let desired = match &change {
            Change::Patch(patch) => {
                let mut desired = patch.apply(|| server.openapi().definitions(), None, &scale)?;
                check.check(&mut desired, |desired| patch.shown(desired))?;
                desired
            }
            Change::Replace(replacement) => replacement.clone(),
        };
        scaled(&resource, current, &desired)
    }).await?;
    check.warn(|text| ctx.warn(text));
    respond_scale(&ctx, &updated)
}

/// What a write does to the Scale: a patch, or a whole new Scale.
enum Change {
    Patch(Patch),
    Replace(Value),
}

/// The write's change; a replacement's problems are acted on here, a patch's once it is applied.
fn change(ctx: &Ctx, validation: FieldValidation, body: &[u8]) -> ApiResult<(Change, Vec<Problem>)> {
    if ctx.info.verb == "patch" {
        let (patch, problems) = Patch::parse_checked(negotiate::patch_kind(ctx.content_type.as_deref())?, body, validation)?;
        return Ok((Change::Patch(patch), problems));
    }
    let schema = Schema::definition(ctx.server.openapi(), SCALE);
    let decoded = ctx.decode(body, validation, Purpose::Object { schema, kind: "Scale", version: "v1" })?;
    Ok((Change::Replace(decoded.value), Vec::new()))
}

/// The object with the desired Scale's replicas, checked (non-negative; a stale `resourceVersion` is a conflict).
fn scaled(resource: &ResourceInfo, current: &Value, desired: &Value) -> ApiResult<Value> {
    let name = current.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let replicas = desired.pointer("/spec/replicas").and_then(Value::as_i64).filter(|r| *r >= 0).ok_or_else(|| {
        ApiError::invalid("autoscaling", "Scale", name,
            vec![crate::status::Cause::invalid("spec.replicas", &desired.pointer("/spec/replicas").map(|v| v.to_string()).unwrap_or_default(), "must be greater than or equal to 0")])
    })?;
    if let Some(rv) = desired.pointer("/metadata/resourceVersion").and_then(Value::as_str).filter(|rv| !rv.is_empty()) {
        if Some(rv) != current.pointer("/metadata/resourceVersion").and_then(Value::as_str) {
            return Err(ApiError::stale(&resource.group, &resource.plural, name));
        }
    }
    let mut new = current.clone();
    set_pointer(&mut new, &paths(resource).spec_replicas, json!(replicas));
    Ok(new)
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

//! PATCH: JSON patch, JSON merge patch and strategic merge patch, applied in a read-modify-write loop.

use actix_web::HttpResponse;
use bytes::Bytes;
use serde_json::Value;

use super::{apply, manager, Ctx};
use crate::admission::escalation;
use crate::negotiate::{self, PatchKind};
use crate::registry::store::Part;
use crate::patch::strategic::{apply_strategic_merge_patch, DefinitionsSchema, UnknownSchema};
use crate::state::ApiServer;
use crate::status::{ApiError, ApiResult};

/// A parsed patch, ready to apply to any current object.
pub enum Patch {
    Json(json_patch::Patch),
    Merge(Value),
    Strategic(Value),
}

impl Patch {
    /// Custom resources have no strategic merge patch: 415, as kube answers, so kubectl and helm fall back
    /// to a merge patch.
    pub fn parse_for(resource: &crate::registry::ResourceInfo, kind: PatchKind, body: &[u8]) -> ApiResult<Patch> {
        if resource.custom.is_some() && kind == PatchKind::Strategic {
            return Err(ApiError::new(415, "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, \
                 application/merge-patch+json, application/apply-patch+yaml"));
        }
        Patch::parse(kind, body)
    }

    pub fn parse(kind: PatchKind, body: &[u8]) -> ApiResult<Patch> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|err| ApiError::bad_request(format!("the patch is not valid JSON: {err}")))?;
        match kind {
            PatchKind::Json => serde_json::from_value(value)
                .map(Patch::Json)
                .map_err(|err| ApiError::bad_request(format!("the JSON patch is invalid: {err}"))),
            PatchKind::Merge => Ok(Patch::Merge(value)),
            PatchKind::Strategic => Ok(Patch::Strategic(value)),
            PatchKind::Apply => Err(ApiError::unsupported_media_type("application/apply-patch+yaml")),
        }
    }

    /// Applies the patch to `current`, returning the patched object.
    pub fn apply(&self, server: &ApiServer, definition: Option<&str>, current: &Value) -> ApiResult<Value> {
        let mut patched = current.clone();
        match self {
            Patch::Json(patch) => json_patch::patch(&mut patched, patch).map_err(|err| {
                ApiError::new(422, "Invalid", format!("the JSON patch could not be applied: {err}"))
            })?,
            Patch::Merge(patch) => {
                if !patch.is_object() {
                    return Err(ApiError::bad_request("a merge patch must be a JSON object"));
                }
                json_patch::merge(&mut patched, patch)
            }
            Patch::Strategic(patch) => {
                let definitions = server.openapi().definitions();
                let result = match definition.map(|d| DefinitionsSchema::new(definitions, d)) {
                    Some(Ok(schema)) => apply_strategic_merge_patch(current, patch, &schema),
                    _ => apply_strategic_merge_patch(current, patch, &UnknownSchema),
                };
                patched = result.map_err(|err| ApiError::bad_request(format!("the strategic merge patch could not be applied: {err}")))?;
            }
        }
        Ok(patched)
    }
}

pub async fn handle(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let kind = negotiate::patch_kind(ctx.content_type.as_deref())?;
    if kind == PatchKind::Apply {
        return apply::handle(ctx, body).await;
    }
    let write = manager::update_write(&ctx, "PatchOptions")?;
    let patch = Patch::parse_for(&ctx.resource, kind, &body)?;
    let part = Part::of_subresource(&ctx.info.subresource);
    let server = ctx.server.clone();
    let resource = ctx.resource.clone();
    let escalation = escalation::for_write(&server, &ctx.user, &resource, ctx.scope.space()?).await?;
    let namespace = ctx.scope.namespace.as_deref();
    let updated = server.registry.guaranteed_update(&resource, &ctx.scope, &ctx.info.name, part, &write, |current| {
        let patched = patch.apply(&server, resource.definition.as_deref(), current)?;
        if let Some(escalation) = &escalation {
            escalation.check(&resource, namespace, &patched, Some(current))?;
        }
        Ok(patched)
    }).await?;
    ctx.respond_object(200, &updated)
}

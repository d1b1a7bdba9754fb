//! PATCH: JSON patch, JSON merge patch and strategic merge patch, applied in a read-modify-write loop.

use actix_web::HttpResponse;
use bytes::Bytes;
use serde_json::{Map, Value};

use super::{apply, field_manager, Ctx};
use crate::decode::schema::Problem;
use crate::decode::{self, FieldValidation, PatchCheck, Purpose};
use crate::negotiate::{self, PatchKind};
use crate::patch::strategic::{apply_strategic_merge_patch, DefinitionsSchema, UnknownSchema};
use crate::registry::Part;
use crate::status::{ApiError, ApiResult};

/// A parsed patch, ready to apply to any current object.
pub enum Patch {
    Json(json_patch::Patch),
    Merge(Value),
    Strategic(Value),
}

impl Patch {
    pub fn parse(kind: PatchKind, body: &[u8]) -> ApiResult<Patch> {
        Patch::parse_checked(kind, body, FieldValidation::Ignore).map(|(patch, _)| patch)
    }

    /// Parses a patch with the one decoder, noting its own problems unless they are ignored: duplicate keys, and
    /// a JSON patch's undeclared operation fields (`json patch unknown field "[0].foo"`), as kube does.
    pub fn parse_checked(kind: PatchKind, body: &[u8], validation: FieldValidation) -> ApiResult<(Patch, Vec<Problem>)> {
        let decoded = decode::decode(body, None, validation, Purpose::Patch(kind), &mut |_| {})?;
        let (value, problems) = (decoded.value, decoded.pending);
        match kind {
            PatchKind::Json => {
                let patch = serde_json::from_value(value)
                    .map_err(|err| ApiError::bad_request(format!("the JSON patch is invalid: {err}")))?;
                crate::patch::json::check_operations(&patch)?;
                Ok((Patch::Json(patch), problems))
            }
            PatchKind::Merge => Ok((Patch::Merge(value), problems)),
            PatchKind::Strategic => Ok((Patch::Strategic(value), problems)),
            PatchKind::Apply => Err(ApiError::unsupported_media_type("application/apply-patch+yaml")),
        }
    }

    /// How kube shows a patch it refuses for its fields: the patched object's JSON, or a strategic merge patch
    /// as Go prints the map it decoded.
    pub fn shown(&self, patched: &Value) -> String {
        match self {
            Patch::Strategic(patch) => decode::go_format(patch),
            Patch::Json(_) | Patch::Merge(_) => patched.to_string(),
        }
    }

    /// Applies the patch to `current`, returning the patched object; a strategic merge patch reads its merge rules
    /// from `definition` in `definitions()` (the server's OpenAPI definitions, built on first use: only a strategic
    /// merge patch asks for them).
    pub fn apply<'d>(&self, definitions: impl FnOnce() -> &'d Map<String, Value>, definition: Option<&str>, current: &Value) -> ApiResult<Value> {
        let mut patched = current.clone();
        match self {
            Patch::Json(patch) => crate::patch::json::apply(&mut patched, patch)?,
            Patch::Merge(patch) => {
                if !patch.is_object() {
                    return Err(ApiError::bad_request("a merge patch must be a JSON object"));
                }
                json_patch::merge(&mut patched, patch)
            }
            Patch::Strategic(patch) => {
                let definitions = definitions();
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

/// Custom resources have no strategic merge patch: 415, as kube answers, so kubectl and helm fall back to a
/// merge patch.
fn refuse_strategic_for_custom(resource: &crate::registry::ResourceInfo, kind: PatchKind) -> ApiResult<()> {
    if resource.custom.is_some() && kind == PatchKind::Strategic {
        return Err(ApiError::new(415, "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, \
             application/merge-patch+json, application/apply-patch+yaml"));
    }
    Ok(())
}

pub async fn handle(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let kind = negotiate::patch_kind(ctx.content_type.as_deref())?;
    if kind == PatchKind::Apply {
        return apply::handle(ctx, body).await;
    }
    let validation = ctx.write_options()?.field_validation;
    let write = field_manager::update_write(&ctx, "PatchOptions")?;
    refuse_strategic_for_custom(&ctx.resource, kind)?;
    let (patch, problems) = Patch::parse_checked(kind, &body, validation)?;
    let part = Part::of_subresource(&ctx.info.subresource);
    let server = ctx.server.clone();
    let resource = ctx.resource.clone();
    let check = PatchCheck::new(validation, ctx.schema(), problems);
    let updated = server.registry.guaranteed_update(&resource, &ctx.scope, &ctx.info.name, part, &write, |current| {
        let mut patched = patch.apply(|| server.openapi().definitions(), resource.definition.as_deref(), current)?;
        check.check(&mut patched, |patched| patch.shown(patched))?;
        Ok(patched)
    }).await?;
    check.warn(|text| ctx.warn(text));
    ctx.respond_object(200, &updated)
}

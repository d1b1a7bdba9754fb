//! PUT: replace an object, its `status`, or (for namespaces and tenants) its `finalize` subresource.

use actix_web::HttpResponse;
use bytes::Bytes;

use super::{field_manager, Ctx};
use crate::registry::Part;
use crate::status::ApiResult;

pub async fn handle(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let validation = ctx.write_options()?.field_validation;
    let write = field_manager::update_write(&ctx, "UpdateOptions")?;
    let object = ctx.decode_object(&body, validation)?;
    let part = Part::of_subresource(&ctx.info.subresource);
    let updated = ctx.server.registry.update(&ctx.resource, &ctx.scope, &ctx.info.name, object, part, &write).await?;
    ctx.respond_object(200, &updated)
}

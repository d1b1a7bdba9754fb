//! PUT: replace an object, its `status`, or (for namespaces and tenants) its `finalize` subresource.

use actix_web::HttpResponse;
use bytes::Bytes;

use super::{manager, options, Ctx};
use crate::admission::escalation;
use crate::registry::store::Part;
use crate::status::ApiResult;

pub async fn handle(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let validation = ctx.write_options()?.field_validation;
    let write = manager::update_write(&ctx, "UpdateOptions")?;
    let object = options::decode_object(&ctx, validation, &body)?;
    let part = Part::of_subresource(&ctx.info.subresource);
    if let Some(escalation) = escalation::for_write(&ctx.server, &ctx.user, &ctx.resource, ctx.scope.space()?).await? {
        let current = ctx.server.registry.get(&ctx.resource, &ctx.scope, &ctx.info.name).await?;
        escalation.check(&ctx.resource, ctx.scope.namespace.as_deref(), &object, Some(&current))?;
    }
    let updated = ctx.server.registry.update(&ctx.resource, &ctx.scope, &ctx.info.name, object, part, &write).await?;
    ctx.respond_object(200, &updated)
}

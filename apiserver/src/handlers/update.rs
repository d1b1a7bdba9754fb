//! PUT: replace an object, its `status`, or (for namespaces and tenants) its `finalize` subresource.

use actix_web::HttpResponse;
use bytes::Bytes;

use super::options;
use super::Ctx;
use crate::admission::escalation;
use crate::registry::store::Part;
use crate::status::ApiResult;

pub async fn handle(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let write = ctx.write_options()?;
    let object = options::decode_object(&ctx, write.field_validation, &body)?;
    let part = Part::of_subresource(&ctx.info.subresource);
    if let Some(escalation) = escalation::for_write(&ctx.server, &ctx.user, &ctx.resource, ctx.scope.space()?).await? {
        let current = ctx.server.registry.get(&ctx.resource, &ctx.scope, &ctx.info.name).await?;
        escalation.check(&ctx.resource, ctx.scope.namespace.as_deref(), &object, Some(&current))?;
    }
    let updated = ctx.server.registry.update(&ctx.resource, &ctx.scope, &ctx.info.name, object, part, write.dry_run).await?;
    ctx.respond_object(200, &updated)
}

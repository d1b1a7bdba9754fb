//! POST: create an object.

use actix_web::HttpResponse;
use bytes::Bytes;

use super::Ctx;
use crate::negotiate;
use crate::status::ApiResult;

pub async fn handle(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let object = negotiate::decode_body(negotiate::body_format(ctx.content_type.as_deref())?, &body)?;
    let namespaces = ctx.server.namespaces();
    let created = ctx.server.registry.create(&ctx.resource, &ctx.scope, object, &namespaces, ctx.dry_run()?).await?;
    ctx.respond_object(201, &created)
}

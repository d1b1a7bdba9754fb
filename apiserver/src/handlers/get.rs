//! GET of one object (and of its `status`).

use actix_web::HttpResponse;

use super::Ctx;
use crate::status::ApiResult;

pub async fn handle(ctx: Ctx) -> ApiResult<HttpResponse> {
    let object = ctx.server.registry.get(&ctx.resource, &ctx.scope, &ctx.info.name).await?;
    ctx.respond_object(200, &object)
}

//! GET of one object (and of its `status`).

use actix_web::HttpResponse;

use super::{list, Ctx};
use crate::status::ApiResult;

pub async fn handle(ctx: Ctx) -> ApiResult<HttpResponse> {
    // A valid `resourceVersion` is answered with the current object; one that does not parse is refused, as
    // kube's storage refuses it.
    if let Some(resource_version) = ctx.param("resourceVersion") {
        list::parse_resource_version(resource_version)?;
    }
    let object = ctx.server.registry.get(&ctx.resource, &ctx.scope, &ctx.info.name).await?;
    ctx.respond_object(200, &object)
}

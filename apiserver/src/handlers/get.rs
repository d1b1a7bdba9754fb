//! GET of one object (and of its `status`).

use actix_web::HttpResponse;

use super::{list, Ctx};
use crate::negotiate::Output;
use crate::registry::stored::write_as_read;
use crate::status::ApiResult;

pub async fn handle(ctx: Ctx) -> ApiResult<HttpResponse> {
    // A valid `resourceVersion` is answered with the current object; one that does not parse is refused, as
    // kube's storage refuses it.
    if let Some(resource_version) = ctx.param("resourceVersion") {
        list::parse_position(resource_version)?;
    }
    // JSON of a kind nothing transforms: the stored bytes, with the version written in.
    if ctx.output(true)? == Output::JSON {
        if let Some(record) = ctx.server.registry.get_as_stored(&ctx.resource, &ctx.scope, &ctx.info.name).await? {
            let mut body = Vec::with_capacity(record.value.len() + 40);
            write_as_read(&record, &mut body)?;
            return Ok(HttpResponse::Ok().content_type("application/json").body(body));
        }
    }
    let object = ctx.server.registry.get(&ctx.resource, &ctx.scope, &ctx.info.name).await?;
    ctx.respond_object(200, &object)
}

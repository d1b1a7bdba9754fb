//! PUT: replace an object, its `status`, or (for namespaces) its `finalize` subresource.

use actix_web::HttpResponse;
use bytes::Bytes;

use super::Ctx;
use crate::negotiate;
use crate::status::ApiResult;

pub async fn handle(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let object = negotiate::decode_body(negotiate::body_format(ctx.content_type.as_deref())?, &body)?;
    let status_only = ctx.info.subresource == "status";
    let updated = if ctx.info.subresource == "finalize" {
        let finalizers = object.pointer("/spec/finalizers").cloned().unwrap_or(serde_json::Value::Array(vec![]));
        ctx.server.registry.guaranteed_update(&ctx.resource, &ctx.scope, &ctx.info.name, false, ctx.dry_run()?, move |old| {
            let mut new = old.clone();
            new["spec"]["finalizers"] = finalizers.clone();
            Ok(new)
        }).await?
    } else {
        ctx.server.registry.update(&ctx.resource, &ctx.scope, &ctx.info.name, object, status_only, ctx.dry_run()?).await?
    };
    ctx.respond_object(200, &updated)
}

//! POST: create an object. The registry admits, completes, validates and stores it (a new Tenant's space is
//! made before the response, so its users can start at once).

use actix_web::HttpResponse;
use bytes::Bytes;
use serde_json::Value;

use super::{field_manager, options, Ctx};
use crate::registry::WriteContext;
use crate::status::ApiResult;

pub async fn handle(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let validation = ctx.write_options()?.field_validation;
    let write = field_manager::update_write(&ctx, "CreateOptions")?;
    let object = options::decode_object(&ctx, validation, &body)?;
    let created = create_object(&ctx, object, &write).await?;
    ctx.respond_object(201, &created)
}

/// Stores a new object (a POST, or an apply of an object that is not there yet).
pub async fn create_object(ctx: &Ctx, object: Value, write: &WriteContext) -> ApiResult<Value> {
    ctx.server.registry.create(&ctx.resource, &ctx.scope, object, write).await
}

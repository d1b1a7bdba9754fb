//! POST: create an object. The registry admits, completes, validates and stores it (a new Tenant's space is
//! made before the response, so its users can start at once).

use actix_web::HttpResponse;
use bytes::Bytes;
use serde_json::Value;

use super::{field_manager, Ctx};
use crate::registry::WriteContext;
use crate::status::{ApiError, ApiResult};

pub async fn handle(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let validation = ctx.write_options()?.field_validation;
    let write = field_manager::update_write(&ctx, "CreateOptions")?;
    let object = ctx.decode_object(&body, validation)?;
    let created = create_object(&ctx, object, &write).await?;
    ctx.respond_object(201, &created)
}

/// Stores a new object (a POST, or an apply of an object that is not there yet).
pub async fn create_object(ctx: &Ctx, object: Value, write: &WriteContext) -> ApiResult<Value> {
    // A virtual workspace that reaches only some objects (a permission claim's) creates only those.
    if ctx.only.as_ref().is_some_and(|only| !(only.0)(&object)) {
        let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        return Err(ApiError::forbidden(format!("{} {name:?} is not within what this virtual workspace may reach", ctx.resource.plural)));
    }
    ctx.server.registry.create(&ctx.resource, &ctx.scope, object, write).await
}

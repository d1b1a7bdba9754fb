//! POST: create an object. A new Tenant's space is made before the response, so its users can start at once.

use actix_web::HttpResponse;
use bytes::Bytes;
use serde_json::Value;

use super::{manager, options, Ctx};
use crate::admission::{self, escalation};
use crate::crds;
use crate::registry::WriteContext;
use crate::status::ApiResult;
use crate::tenancy;

pub async fn handle(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let validation = ctx.write_options()?.field_validation;
    let write = manager::update_write(&ctx, "CreateOptions")?;
    let object = options::decode_object(&ctx, validation, &body)?;
    let created = create_object(&ctx, object, &write).await?;
    ctx.respond_object(201, &created)
}

/// Admits and stores a new object (a POST, or an apply of an object that is not there yet).
pub async fn create_object(ctx: &Ctx, object: Value, write: &WriteContext) -> ApiResult<Value> {
    let namespaces = ctx.server.namespaces();
    admission::check_create(&ctx.server, &ctx.resource, &ctx.scope)?;
    crds::strategy::admit_custom_create(&ctx.resource)?;
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    crds::strategy::admit(&ctx.server, &ctx.resource, ctx.scope.space()?, name)?;
    if let Some(escalation) = escalation::for_write(&ctx.server, &ctx.user, &ctx.resource, ctx.scope.space()?).await? {
        escalation.check(&ctx.resource, ctx.scope.namespace.as_deref(), &object, None)?;
    }
    let created = ctx.server.registry.create(&ctx.resource, &ctx.scope, object, &namespaces, write).await?;
    if ctx.resource.is("", "Tenant") && !write.dry_run {
        let name = created.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        tenancy::space::initialize(&ctx.server, name).await?;
    }
    Ok(created)
}

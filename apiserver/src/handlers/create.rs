//! POST: create an object. A new Tenant's space is made before the response, so its users can start at once.

use actix_web::HttpResponse;
use bytes::Bytes;
use serde_json::Value;

use super::options;
use super::Ctx;
use crate::admission::{self, escalation};
use crate::crds;
use crate::status::ApiResult;
use crate::tenancy;

pub async fn handle(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let write = ctx.write_options()?;
    let object = options::decode_object(&ctx, write.field_validation, &body)?;
    let namespaces = ctx.server.namespaces();
    let dry_run = write.dry_run;
    admission::check_create(&ctx.server, &ctx.resource, &ctx.scope)?;
    crds::strategy::admit_custom_create(&ctx.resource)?;
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    crds::strategy::admit(&ctx.server, &ctx.resource, ctx.scope.space()?, name)?;
    if let Some(escalation) = escalation::for_write(&ctx.server, &ctx.user, &ctx.resource, ctx.scope.space()?).await? {
        escalation.check(&ctx.resource, ctx.scope.namespace.as_deref(), &object, None)?;
    }
    let created = ctx.server.registry.create(&ctx.resource, &ctx.scope, object, &namespaces, dry_run).await?;
    if ctx.resource.is("", "Tenant") && !dry_run {
        let name = created.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        tenancy::space::initialize(&ctx.server, name).await?;
    }
    ctx.respond_object(201, &created)
}

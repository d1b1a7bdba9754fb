//! PUT: replace an object, its `status`, or (for namespaces and tenants) its `finalize` subresource.

use actix_web::HttpResponse;
use bytes::Bytes;

use serde_json::Value;

use super::{manager, options, Ctx};
use crate::admission::escalation;
use crate::registry::store::Part;
use crate::registry::{ResourceInfo, Scope};
use crate::status::{ApiError, ApiResult};

/// kube's `EnsureObjectNamespaceMatchesRequestNamespace` on an update or patch: the object's `metadata.namespace`,
/// when set, must be the URL's for a namespaced resource (400); an unset one is the URL's, and a cluster-scoped
/// resource's is dropped (by the registry).
pub fn check_namespace(resource: &ResourceInfo, scope: &Scope, object: &Value) -> ApiResult<()> {
    let given = object.pointer("/metadata/namespace").and_then(Value::as_str).filter(|ns| !ns.is_empty());
    match (given, scope.namespace.as_deref()) {
        (Some(given), Some(url)) if resource.namespaced && given != url => {
            Err(ApiError::bad_request("the namespace of the provided object does not match the namespace sent on the request"))
        }
        _ => Ok(()),
    }
}

pub async fn handle(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let validation = ctx.write_options()?.field_validation;
    let write = manager::update_write(&ctx, "UpdateOptions")?;
    let object = options::decode_object(&ctx, validation, &body)?;
    check_namespace(&ctx.resource, &ctx.scope, &object)?;
    let part = Part::of_subresource(&ctx.info.subresource);
    if let Some(escalation) = escalation::for_write(&ctx.server, &ctx.user, &ctx.resource, ctx.scope.space()?).await? {
        let current = ctx.server.registry.get(&ctx.resource, &ctx.scope, &ctx.info.name).await?;
        escalation.check(&ctx.resource, ctx.scope.namespace.as_deref(), &object, Some(&current))?;
    }
    let updated = ctx.server.registry.update(&ctx.resource, &ctx.scope, &ctx.info.name, object, part, &write).await?;
    ctx.respond_object(200, &updated)
}

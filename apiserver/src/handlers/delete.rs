//! DELETE of one object, and DELETE of a collection (with selectors).

use actix_web::HttpResponse;
use bytes::Bytes;
use serde_json::{json, Value};

use super::{list, partial, respond, Ctx};
use crate::negotiate::{self, Target};
use crate::registry::store::{DeleteOptions, DeleteOutcome};
use crate::status::ApiResult;

/// DeleteOptions from the body (preconditions, dryRun) and the query.
fn options(ctx: &Ctx, body: &Bytes) -> ApiResult<DeleteOptions> {
    let mut options = DeleteOptions { dry_run: ctx.dry_run()?, ..DeleteOptions::default() };
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(options);
    }
    let value = negotiate::decode_body(negotiate::body_format(ctx.content_type.as_deref())?, body)?;
    if let Some(uid) = value.pointer("/preconditions/uid").and_then(Value::as_str) {
        options.precondition_uid = Some(uid.to_owned());
    }
    if let Some(rv) = value.pointer("/preconditions/resourceVersion").and_then(Value::as_str) {
        options.precondition_revision = Some(list::parse_revision(rv)?);
    }
    if value.get("dryRun").and_then(Value::as_array).is_some_and(|d| d.iter().any(|v| v == "All")) {
        options.dry_run = true;
    }
    Ok(options)
}

pub async fn handle(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    crate::admission::check_delete(&ctx.resource, &ctx.info.name)?;
    let options = options(&ctx, &body)?;
    let outcome = ctx.server.registry.delete(&ctx.resource, &ctx.scope, &ctx.info.name, &options).await?;
    let (DeleteOutcome::Deleted(object) | DeleteOutcome::Pending(object)) = &outcome;
    ctx.respond_object(200, object)
}

pub async fn collection(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let output = ctx.output(false)?;
    let delete_options = options(&ctx, &body)?;
    let mut list_options = list::options(&ctx)?;
    list_options.limit = None;
    let (items, meta) = ctx.server.registry.list(&ctx.resource, &ctx.scope, &list_options).await?;
    let mut deleted = Vec::new();
    for item in items {
        let Some(name) = item.pointer("/metadata/name").and_then(Value::as_str) else { continue };
        if crate::admission::check_delete(&ctx.resource, name).is_err() {
            continue;
        }
        let mut scope = ctx.scope.clone();
        if ctx.resource.namespaced {
            scope.namespace = item.pointer("/metadata/namespace").and_then(Value::as_str).map(str::to_owned);
        }
        match ctx.server.registry.delete(&ctx.resource, &scope, name, &delete_options).await {
            Ok(DeleteOutcome::Deleted(object) | DeleteOutcome::Pending(object)) => deleted.push(object),
            Err(err) if err.code == 404 => {}
            Err(err) => return Err(err),
        }
    }
    let metadata = json!({"resourceVersion": meta.resource_version.to_string()});
    let body = match output.target {
        Target::MetadataList(version) => partial::list(&deleted, metadata, version),
        Target::Metadata(_) => return Err(partial::a_list(&ctx.resource)),
        Target::Object | Target::Table => json!({
            "kind": ctx.resource.list_kind(),
            "apiVersion": ctx.resource.api_version(),
            "metadata": metadata,
            "items": deleted,
        }),
    };
    respond(200, output, &body)
}

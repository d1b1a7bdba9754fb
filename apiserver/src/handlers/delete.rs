//! DELETE of one object, and DELETE of a collection (with selectors), with kube's DeleteOptions.

use actix_web::HttpResponse;
use bytes::Bytes;
use serde_json::{json, Value};

use super::{list, partial, respond, Ctx};
use crate::negotiate::Target;
use crate::registry::DeleteOutcome;
use crate::status::{ApiError, ApiResult};

pub mod options;

/// DeleteOptions from the body when there is one, else from the query (as kube-apiserver reads them).
fn options(ctx: &Ctx, body: &Bytes) -> ApiResult<options::Requested> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return options::from_query(&ctx.query);
    }
    let value = ctx.decode_untyped(body)?;
    options::from_body(&value)
}

pub async fn handle(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let requested = options(&ctx, &body)?;
    if requested.options.ignore_store_read_error {
        // kube asks for this verb on the resource too (`system:masters` has it).
        ctx.authorize_also("unsafe-delete-ignore-read-errors").await?;
    }
    let outcome = ctx.server.registry.delete_by(&ctx.resource, &ctx.scope, &ctx.info.name, &requested.options, &ctx.caller, &ctx.warnings).await?;
    // kube answers 202 only when the object stays and the legacy orphanDependents=false asked for a cascade.
    let code = match (&outcome, requested.orphan_dependents) {
        (DeleteOutcome::Pending(_), Some(false)) => 202,
        _ => 200,
    };
    match &outcome {
        DeleteOutcome::Deleted(object) if !ctx.resource.returns_deleted_object() => ctx.respond_object(code, &deleted_status(&ctx, object)),
        DeleteOutcome::Deleted(object) | DeleteOutcome::Pending(object) => ctx.respond_object(code, object),
    }
}

/// What kube answers for an object that is gone at once: a `Success` Status naming it (`details.kind` is the
/// resource, as in kube), so that a client can tell it from a delete still waiting on finalizers.
fn deleted_status(ctx: &Ctx, object: &Value) -> Value {
    let mut details = json!({"name": ctx.info.name, "kind": ctx.resource.plural});
    if !ctx.resource.group.is_empty() {
        details["group"] = json!(ctx.resource.group);
    }
    if let Some(uid) = object.pointer("/metadata/uid") {
        details["uid"] = uid.clone();
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}

pub async fn collection(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let output = ctx.output(false)?;
    // Like kube, the list options are read (and refused) before the delete options; a limit deletes one page,
    // without one every match goes.
    let list_options = list::options(&ctx)?;
    let delete_options = options(&ctx, &body)?.options;
    if delete_options.ignore_store_read_error {
        return Err(ApiError::bad_request(format!("{} is not supported when deleting a collection", options::IGNORE_READ_ERROR)));
    }
    let (items, meta) = ctx.server.registry.list(&ctx.resource, &ctx.scope, &list_options).await?;
    let mut deleted = Vec::new();
    for item in items {
        let Some(name) = item.pointer("/metadata/name").and_then(Value::as_str) else { continue };
        let mut scope = ctx.scope.clone();
        if ctx.resource.namespaced {
            scope.namespace = item.pointer("/metadata/namespace").and_then(Value::as_str).map(str::to_owned);
        }
        match ctx.server.registry.delete_by(&ctx.resource, &scope, name, &delete_options, &ctx.caller, &ctx.warnings).await {
            Ok(DeleteOutcome::Deleted(object) | DeleteOutcome::Pending(object)) => deleted.push(object),
            // Gone meanwhile, or one admission keeps (as a protected name): the rest of the collection goes.
            Err(err) if err.code == 404 || err.code == 403 => {}
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

//! PATCH with `application/apply-patch+yaml`: server-side apply. The configuration is merged into the live
//! object by the field manager (`registry::managed_fields::apply`) inside the registry's read-modify-write loop;
//! when there is no object yet it is created through the create path (201), which also needs `create`
//! permission, as in kube.

use actix_web::HttpResponse;
use bytes::Bytes;
use serde_json::Value;

use super::{create, field_manager, Ctx};
use crate::decode::schema::Problem;
use crate::decode::{self, Purpose};
use crate::registry::{managed_fields, Part};
use crate::status::{ApiError, ApiResult};

/// How often a create that lost a race with another create is retried as an update.
const ATTEMPTS: usize = 3;

pub async fn handle(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let validation = ctx.write_options()?.field_validation;
    let write = field_manager::apply_write(&ctx)?;
    let force = force(&ctx)?;
    let config = ctx.decode(&body, validation, Purpose::Apply)?.value;
    let config = check_identity(&ctx, config)?;
    check_declared(&ctx, &config)?;
    let part = Part::of_subresource(&ctx.info.subresource);
    let server = ctx.server.clone();
    let resource = ctx.resource.clone();
    for _attempt in 0..ATTEMPTS {
        let updated = server.registry.guaranteed_update(&resource, &ctx.scope, &ctx.info.name, part, &write, |current| {
            managed_fields::apply(&resource, &write, Some(current), &config, force)
        }).await;
        match updated {
            Ok(object) => return ctx.respond_object(200, &object),
            Err(err) if err.code == 404 && part == Part::Main => {}
            Err(err) => return Err(err),
        }
        // kube asks for `create` permission too when an apply creates the object.
        ctx.authorize_also("create").await?;
        let object = managed_fields::apply(&resource, &write, None, &config, force)?;
        match create::create_object(&ctx, object, &write).await {
            Ok(created) => return ctx.respond_object(201, &created),
            Err(err) if err.reason == "AlreadyExists" => continue,
            Err(err) => return Err(err),
        }
    }
    Err(ApiError::stale(&resource.group, &resource.plural, &ctx.info.name))
}

/// `force`, an apimachinery query bool as kube decodes PatchOptions: anything but `0` and `false` is true.
fn force(ctx: &Ctx) -> ApiResult<bool> {
    Ok(ctx.query.get("force").is_some_and(|value| crate::apis::query::go_query_bool(value)))
}

/// An applied configuration may only set fields its kind declares: kube cannot make a typed object of it and
/// answers `failed to create typed patch object (...): .spec.foo: field not declared in schema` (as a 500;
/// here it is the client's error, 400), whatever `fieldValidation` says.
fn check_declared(ctx: &Ctx, config: &Value) -> ApiResult<()> {
    let undeclared: Vec<String> = decode::unknown_fields(ctx.schema(), config)
        .into_iter()
        .filter_map(|problem| match problem {
            Problem::Unknown(path) => Some(format!(".{path}: field not declared in schema")),
            _ => None,
        })
        .collect();
    if undeclared.is_empty() {
        return Ok(());
    }
    let object = match ctx.scope.namespace.as_deref().filter(|_| ctx.resource.namespaced) {
        Some(namespace) => format!("{namespace}/{}", ctx.info.name),
        None => ctx.info.name.clone(),
    };
    let errors = match undeclared.as_slice() {
        [one] => one.clone(),
        many => format!("errors:\n  {}", many.join("\n  ")),
    };
    Err(ApiError::bad_request(format!(
        "failed to create typed patch object ({object}; {}, Kind={}): {errors}", ctx.resource.api_version(), ctx.resource.kind)))
}

/// The configuration's name and namespace must be the request's; a missing name is the URL's.
fn check_identity(ctx: &Ctx, mut config: Value) -> ApiResult<Value> {
    let text = |config: &Value, pointer: &str| config.pointer(pointer).and_then(Value::as_str).map(str::to_owned);
    match text(&config, "/metadata/name") {
        Some(name) if name != ctx.info.name => {
            return Err(ApiError::bad_request(format!("the name of the object ({name}) does not match the name on the URL ({})", ctx.info.name)));
        }
        Some(_) => {}
        None => {
            if !config.get("metadata").is_some_and(Value::is_object) {
                config["metadata"] = serde_json::json!({});
            }
            config["metadata"]["name"] = Value::String(ctx.info.name.clone());
        }
    }
    if let (Some(given), Some(url)) = (text(&config, "/metadata/namespace"), ctx.scope.namespace.as_deref()) {
        if ctx.resource.namespaced && given != url {
            return Err(ApiError::bad_request("the namespace of the provided object does not match the namespace sent on the request"));
        }
    }
    Ok(config)
}


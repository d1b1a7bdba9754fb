//! LIST: selectors, `limit`/`continue`, `resourceVersion`/`resourceVersionMatch`, and Tables.

use actix_web::HttpResponse;
use kspaces_storage::Revision;
use serde_json::{json, Value};

use super::{respond, Ctx};
use crate::negotiate::{self, Output};
use crate::registry::selector::{FieldSelector, LabelSelector};
use crate::registry::store::{ListMeta, ListOptions};
use crate::status::{ApiError, ApiResult};
use crate::table;

/// Parses the list parameters shared by list and watch.
pub fn options(ctx: &Ctx) -> ApiResult<ListOptions> {
    let labels = LabelSelector::parse(ctx.param("labelSelector").unwrap_or_default())?;
    let fields = FieldSelector::parse(ctx.param("fieldSelector").unwrap_or_default(), &ctx.resource.kind)?;
    let limit = match ctx.param("limit") {
        None => None,
        Some(limit) => Some(limit.parse::<i64>().map_err(|_| ApiError::bad_request(format!("invalid limit {limit:?}")))?)
            .filter(|l| *l > 0)
            .map(|l| l as usize),
    };
    let continue_token = ctx.param("continue").map(str::to_owned);
    let resource_version = ctx.param("resourceVersion");
    let exact_revision = match (ctx.param("resourceVersionMatch"), resource_version) {
        (Some("Exact"), Some(rv)) => Some(parse_revision(rv)?),
        (Some("Exact"), None) => return Err(ApiError::bad_request("resourceVersionMatch Exact requires a resourceVersion")),
        (Some("NotOlderThan") | None, _) => None,
        (Some(other), _) => return Err(ApiError::bad_request(format!("unsupported resourceVersionMatch {other:?}"))),
    };
    if continue_token.is_some() && exact_revision.is_some() {
        return Err(ApiError::bad_request("specifying resource version is not allowed when using continue"));
    }
    Ok(ListOptions { labels, fields, limit, continue_token, exact_revision })
}

pub fn parse_revision(rv: &str) -> ApiResult<Revision> {
    rv.parse().map_err(|_| ApiError::bad_request(format!("invalid resource version {rv:?}")))
}

pub fn list_metadata(meta: &ListMeta) -> Value {
    let mut metadata = json!({"resourceVersion": meta.resource_version.to_string()});
    if let Some(token) = &meta.continue_token {
        metadata["continue"] = json!(token);
    }
    if let Some(remaining) = meta.remaining.filter(|_| meta.continue_token.is_some()) {
        metadata["remainingItemCount"] = json!(remaining);
    }
    metadata
}

pub async fn handle(ctx: Ctx) -> ApiResult<HttpResponse> {
    let output = negotiate::choose(ctx.accept.as_deref(), true)?;
    let options = options(&ctx)?;
    let (mut items, meta) = ctx.server.registry.list(&ctx.resource, &ctx.scope, &options).await?;
    if ctx.resource.custom.is_some() {
        items.iter_mut().for_each(|item| crate::crds::strategy::convert(&ctx.resource, item));
    }
    let metadata = list_metadata(&meta);
    let body = match output {
        Output::Table => table::build_table(&ctx.resource, &items, metadata, ctx.include_object()?, chrono::Utc::now()),
        _ => json!({
            "kind": ctx.resource.list_kind(),
            "apiVersion": ctx.resource.api_version(),
            "metadata": metadata,
            "items": items,
        }),
    };
    respond(200, output, &body)
}

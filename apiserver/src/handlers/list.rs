//! LIST: selectors, `limit`/`continue`, `resourceVersion`/`resourceVersionMatch`, and the forms a client may ask
//! for: Tables, `PartialObjectMetadataList`, protobuf.

use actix_web::HttpResponse;
use kspaces_storage::Revision;
use serde_json::{json, Value};

use super::{partial, respond, Ctx};
use crate::negotiate::Target;
use crate::registry::selector::{FieldSelector, LabelSelector};
use crate::registry::{ListMeta, ListOptions};
use crate::status::{ApiError, ApiResult, Cause};
use crate::table;

/// Parses the label and field selectors (what list and watch share).
pub fn selectors(ctx: &Ctx) -> ApiResult<ListOptions> {
    let labels = LabelSelector::parse(ctx.param("labelSelector").unwrap_or_default())?;
    let fields = FieldSelector::parse(ctx.param("fieldSelector").unwrap_or_default(), &ctx.resource.kind)?;
    Ok(ListOptions { labels, fields, ..ListOptions::default() })
}

/// Parses a list's parameters: selectors, `limit`/`continue`, `resourceVersion`/`resourceVersionMatch`.
pub fn options(ctx: &Ctx) -> ApiResult<ListOptions> {
    let selectors = selectors(ctx)?;
    validate(ctx.param("resourceVersion"), ctx.param("resourceVersionMatch"), ctx.param("continue").is_some(),
        ctx.param("sendInitialEvents").is_some())?;
    let limit = match ctx.param("limit") {
        None => None,
        Some(limit) => Some(limit.parse::<i64>().map_err(|_| ApiError::bad_request(format!("invalid limit {limit:?}")))?)
            .filter(|l| *l > 0)
            .map(|l| l as usize),
    };
    let continue_token = ctx.param("continue").map(str::to_owned);
    let exact_revision = match (ctx.param("resourceVersionMatch"), ctx.param("resourceVersion")) {
        (Some("Exact"), Some(rv)) => Some(parse_revision(rv)?),
        _ => None,
    };
    if continue_token.is_some() && exact_revision.is_some() {
        return Err(ApiError::bad_request("specifying resource version is not allowed when using continue"));
    }
    Ok(ListOptions { limit, continue_token, exact_revision, ..selectors })
}

/// kube's `ValidateListOptions` for a list (not a watch): 422 `ListOptions` with every cause.
fn validate(resource_version: Option<&str>, matching: Option<&str>, has_continue: bool, send_initial_events: bool) -> ApiResult<()> {
    let mut causes = Vec::new();
    if let Some(matching) = matching {
        if resource_version.is_none() {
            causes.push(Cause::forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"));
        }
        if has_continue {
            causes.push(Cause::forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"));
        }
        if !matches!(matching, "Exact" | "NotOlderThan") {
            causes.push(Cause::not_supported("resourceVersionMatch", matching, &["Exact", "NotOlderThan", ""]));
        }
        if matching == "Exact" && resource_version == Some("0") {
            causes.push(Cause::forbidden("resourceVersionMatch", "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""));
        }
    }
    if send_initial_events {
        causes.push(Cause::forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
    }
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid_options("ListOptions", causes))
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
    let output = ctx.output(true)?;
    let options = options(&ctx)?;
    let (items, meta) = ctx.server.registry.list(&ctx.resource, &ctx.scope, &options).await?;
    let metadata = list_metadata(&meta);
    let body = match output.target {
        Target::Table => table::build_table(&ctx.resource, &items, metadata, ctx.include_object()?, chrono::Utc::now()),
        Target::MetadataList(version) => partial::list(&items, metadata, version),
        Target::Metadata(_) => return Err(partial::a_list(&ctx.resource)),
        Target::Object => json!({
            "kind": ctx.resource.list_kind(),
            "apiVersion": ctx.resource.api_version(),
            "metadata": metadata,
            "items": items,
        }),
    };
    respond(200, output, &body)
}

#[cfg(test)]
mod tests {
    use super::validate;

    #[test]
    fn list_options_are_validated_as_kube_does() {
        let message = |rv, matching, has_continue, initial| validate(rv, matching, has_continue, initial).map_err(|e| (e.code, e.message));
        assert_eq!(message(Some("5"), Some("Exact"), false, false), Ok(()));
        assert_eq!(message(Some("0"), Some("NotOlderThan"), false, false), Ok(()));
        assert_eq!(message(None, None, true, false), Ok(()));
        let invalid = |detail: &str| Err((422, format!("ListOptions.meta.k8s.io \"\" is invalid: {detail}")));
        assert_eq!(message(None, Some("Exact"), false, false),
            invalid("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"));
        assert_eq!(message(Some("0"), Some("Exact"), false, false),
            invalid("resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""));
        assert_eq!(message(Some("1"), Some("Newest"), true, false), invalid(
            "[resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided, resourceVersionMatch: Unsupported value: \"Newest\": supported values: \"Exact\", \"NotOlderThan\", \"\"]"));
        assert_eq!(message(None, None, false, true), invalid("sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"));
    }
}

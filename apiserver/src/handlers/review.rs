//! Reviews: objects that are created, answered and never stored.
//! - `SelfSubjectReview`: who the server thinks the caller is (`kubectl auth whoami`), with their tenant as the
//!   extra `kspaces.io/tenant`.
//! - `SelfSubjectAccessReview`, `SubjectAccessReview`, `LocalSubjectAccessReview`: may someone do something in
//!   this space (`kubectl auth can-i`), answered by the same authorizer requests go through, after the rules
//!   besides RBAC that refuse a request whatever the roles (`refusals.rs`), so a review agrees with the request.
//! - `SelfSubjectRulesReview`: what the caller may do in a namespace (`kubectl auth can-i --list`), less what
//!   those rules refuse.
//! - `TokenReview`: who a bearer token authenticates as, if it belongs to this space's tenant.

use actix_web::HttpResponse;
use bytes::Bytes;
use kspaces_authz::rbac::{Attributes, PolicyRule};
use kspaces_authz::{UserInfo, TENANT_EXTRA};
use kspaces_storage::ApiIdentity;
use serde_json::{json, Value};

mod refusals;

use super::Ctx;
use crate::status::{ApiError, ApiResult, Cause};
use crate::tenancy;


/// Decodes a review body of `kind` (an empty body is an empty review).
fn decode(ctx: &Ctx, body: &Bytes) -> ApiResult<Value> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    let review = ctx.decode_untyped(body)?;
    if review.get("kind").and_then(Value::as_str).is_some_and(|k| k != ctx.resource.kind) {
        return Err(ApiError::bad_request(format!("the body must be a {}", ctx.resource.kind)));
    }
    if !review.is_object() {
        return Err(ApiError::bad_request(format!("the body must be a {}", ctx.resource.kind)));
    }
    Ok(review)
}

/// The answer: the review as sent, with kind, apiVersion and `status`.
fn answer(ctx: &Ctx, mut review: Value, status: Value) -> ApiResult<HttpResponse> {
    review["kind"] = json!(ctx.resource.kind);
    review["apiVersion"] = json!(ctx.resource.api_version());
    let metadata = review.get("metadata").filter(|m| m.is_object()).cloned().unwrap_or_else(|| json!({}));
    review["metadata"] = metadata;
    if review["metadata"].get("creationTimestamp").is_none() {
        review["metadata"]["creationTimestamp"] = Value::Null;
    }
    if review.get("spec").is_none() {
        review["spec"] = json!({});
    }
    review["status"] = status;
    ctx.respond_object(201, &review)
}

fn user_info(server: &crate::api_server::ApiServer, user: &UserInfo) -> Value {
    let mut info = json!({"username": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        info["uid"] = json!(user.uid);
    }
    let mut extra: serde_json::Map<String, Value> = user.extra.iter().map(|(key, values)| (key.clone(), json!(values))).collect();
    if let Some(tenant) = tenancy::home_tenant(user, server.default_tenant.as_deref()) {
        extra.insert(TENANT_EXTRA.to_owned(), json!([tenant]));
    }
    if !extra.is_empty() {
        info["extra"] = Value::Object(extra);
    }
    info
}

/// `POST /apis/authentication.k8s.io/v1/selfsubjectreviews`.
pub fn self_subject(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let review = decode(&ctx, &body)?;
    let status = json!({"userInfo": user_info(&ctx.server, &ctx.caller.user)});
    answer(&ctx, review, status)
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value.and_then(Value::as_array).map(|items| items.iter().filter_map(Value::as_str).map(str::to_owned).collect()).unwrap_or_default()
}

fn text<'a>(value: &'a Value, field: &str) -> &'a str {
    value.get(field).and_then(Value::as_str).unwrap_or_default()
}

/// The request a review's `spec` asks about: exactly one of `resourceAttributes` and `nonResourceAttributes`.
fn review_attributes(ctx: &Ctx, spec: &Value) -> ApiResult<Attributes> {
    let invalid = |field: &str, why: &str| {
        ApiError::invalid(&ctx.resource.group, &ctx.resource.kind, "", vec![Cause::invalid(field, "", why)])
    };
    match (spec.get("resourceAttributes").filter(|v| v.is_object()), spec.get("nonResourceAttributes").filter(|v| v.is_object())) {
        (Some(attributes), None) => {
            let namespace = text(attributes, "namespace");
            Ok(Attributes::Resource {
                verb: text(attributes, "verb").to_owned(),
                group: text(attributes, "group").to_owned(),
                resource: text(attributes, "resource").to_owned(),
                subresource: text(attributes, "subresource").to_owned(),
                name: text(attributes, "name").to_owned(),
                namespace: (!namespace.is_empty()).then(|| namespace.to_owned()),
            })
        }
        (None, Some(attributes)) => Ok(Attributes::NonResource {
            verb: text(attributes, "verb").to_owned(),
            path: text(attributes, "path").to_owned(),
        }),
        (Some(_), Some(_)) => Err(invalid("spec.nonResourceAttributes", "cannot be specified in combination with resourceAttributes")),
        (None, None) => Err(invalid("spec.resourceAttributes", "exactly one of nonResourceAttributes or resourceAttributes must be specified")),
    }
}

/// `SelfSubjectAccessReview`, `SubjectAccessReview` and `LocalSubjectAccessReview`, answered in the request's space.
pub async fn access(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let review = decode(&ctx, &body)?;
    let spec = review.get("spec").cloned().unwrap_or_else(|| json!({}));
    let attributes = review_attributes(&ctx, &spec)?;
    let space = ctx.scope.space()?.clone();
    let subject = match ctx.resource.kind.as_str() {
        "SelfSubjectAccessReview" => ctx.caller.user.clone(),
        _ => {
            let user = text(&spec, "user").to_owned();
            let groups = strings(spec.get("groups"));
            if user.is_empty() && groups.is_empty() {
                return Err(ApiError::invalid(&ctx.resource.group, &ctx.resource.kind, "", vec![Cause::invalid(
                    "spec.user", "", "at least one of user or group must be specified")]));
            }
            // The subject is a user of this space's tenant: a review never speaks for another tenant's users.
            UserInfo { name: user, uid: text(&spec, "uid").to_owned(), groups, tenant: Some(ctx.server.tree.tenant_of(&space)), cluster: None, extra: Default::default() }
        }
    };
    if ctx.resource.kind == "LocalSubjectAccessReview" {
        let requested = match &attributes {
            Attributes::Resource { namespace, .. } => namespace.as_deref(),
            Attributes::NonResource { .. } => None,
        };
        if requested != ctx.scope.namespace.as_deref() {
            return Err(ApiError::bad_request(format!(
                "spec.resourceAttributes.namespace must match the namespace of the request ({})",
                ctx.scope.namespace.as_deref().unwrap_or_default())));
        }
    }
    let subject = ctx.server.caller(subject);
    let refusals = refusals::Subject { server: &ctx.server, space: &space, system_user: subject.system };
    if let Some(reason) = refusals.refusal(&attributes) {
        return answer(&ctx, review, json!({"allowed": false, "denied": true, "reason": reason}));
    }
    let judged_in = refusals.judged_in(&attributes);
    let mut decision = ctx.server.authorizer.authorize(&subject, &judged_in, &attributes).await?;
    // A resource bound from an export with a maximal permission policy: as its requests are, bounded by it.
    if let (true, Attributes::Resource { group, resource, .. }) = (decision.allowed, &attributes) {
        if let Some(ApiIdentity::Shared(identity)) = ctx.server.resolver.identity_in(&space, group, resource) {
            if let Some(bounded) = ctx.server.authorizer.maximal_permission(&subject, &identity, &attributes).await? {
                decision = bounded;
            }
        }
    }
    let mut status = json!({"allowed": decision.allowed});
    if !decision.reason.is_empty() {
        status["reason"] = json!(decision.reason);
    }
    answer(&ctx, review, status)
}

/// `SelfSubjectRulesReview`: the caller's rules in `spec.namespace` of the request's space.
pub async fn rules(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let review = decode(&ctx, &body)?;
    let namespace = review.pointer("/spec/namespace").and_then(Value::as_str).filter(|ns| !ns.is_empty()).map(str::to_owned);
    let space = ctx.scope.space()?.clone();
    let rules = ctx.server.authorizer.rules_for(&ctx.caller, &space, namespace.as_deref()).await?;
    let rules = rules.unwrap_or_else(|| vec![
        PolicyRule { verbs: vec!["*".into()], api_groups: vec!["*".into()], resources: vec!["*".into()], ..PolicyRule::default() },
        PolicyRule { verbs: vec!["*".into()], non_resource_urls: vec!["*".into()], ..PolicyRule::default() },
    ]);
    let refusals = refusals::Subject { server: &ctx.server, space: &space, system_user: ctx.caller.system };
    let rules = refusals.trim(rules);
    let (non_resource, resource): (Vec<PolicyRule>, Vec<PolicyRule>) = rules.into_iter().partition(|r| !r.non_resource_urls.is_empty());
    let resource_rules: Vec<Value> = resource.iter().map(|rule| {
        let mut entry = json!({"verbs": rule.verbs, "apiGroups": rule.api_groups, "resources": rule.resources});
        if !rule.resource_names.is_empty() {
            entry["resourceNames"] = json!(rule.resource_names);
        }
        entry
    }).collect();
    let non_resource_rules: Vec<Value> = non_resource.iter()
        .map(|rule| json!({"verbs": rule.verbs, "nonResourceURLs": rule.non_resource_urls}))
        .collect();
    let status = json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": false});
    answer(&ctx, review, status)
}

/// `TokenReview`: authenticates `spec.token` as a request would. A token of another tenant's user is reported as
/// unauthenticated, with the same error as an unknown token, so a review reveals nothing about other tenants.
pub async fn token(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let review = decode(&ctx, &body)?;
    let token = review.pointer("/spec/token").and_then(Value::as_str).unwrap_or_default().to_owned();
    let audiences = strings(review.pointer("/spec/audiences"));
    let space = ctx.scope.space()?.clone();
    let audiences_asked = (!audiences.is_empty()).then_some(audiences.as_slice());
    let outcome = ctx.server.authenticator.bearer(&token, audiences_asked).await;
    let status = match outcome {
        Ok(authenticated) => {
            let user = &authenticated.user;
            let home = tenancy::home_tenant(user, ctx.server.default_tenant.as_deref());
            if space.is_system() || home == Some(ctx.server.tree.tenant_of(&space).as_str()) {
                json!({"authenticated": true, "user": user_info(&ctx.server, user), "audiences": authenticated.audiences})
            } else {
                json!({"authenticated": false, "error": "invalid bearer token"})
            }
        }
        Err(why) => json!({"authenticated": false, "error": why}),
    };
    answer(&ctx, review, status)
}

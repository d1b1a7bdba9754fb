//! Reviews: objects that are created, answered and never stored. `SelfSubjectReview` tells callers who the
//! server thinks they are (`kubectl auth whoami`), with their tenant as the extra `kspaces.io/tenant`.

use actix_web::HttpResponse;
use bytes::Bytes;
use serde_json::{json, Value};

use super::Ctx;
use crate::negotiate;
use crate::status::{ApiError, ApiResult};
use crate::tenancy;

/// The `extra` key that carries the caller's tenant (the one their short paths reach).
pub const TENANT_EXTRA: &str = "kspaces.io/tenant";

/// `POST /apis/authentication.k8s.io/v1/selfsubjectreviews`.
pub fn self_subject(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    if !body.iter().all(u8::is_ascii_whitespace) {
        let review = negotiate::decode_body(negotiate::body_format(ctx.content_type.as_deref())?, &body)?;
        if review.get("kind").and_then(Value::as_str).is_some_and(|k| k != "SelfSubjectReview") {
            return Err(ApiError::bad_request("the body must be a SelfSubjectReview"));
        }
    }
    let user = &ctx.user;
    let mut info = json!({"username": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        info["uid"] = json!(user.uid);
    }
    if let Some(tenant) = tenancy::home_tenant(user, ctx.server.default_tenant.as_deref()) {
        info["extra"] = json!({TENANT_EXTRA: [tenant]});
    }
    let review = json!({
        "kind": "SelfSubjectReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": null},
        "status": {"userInfo": info},
    });
    ctx.respond_object(201, &review)
}

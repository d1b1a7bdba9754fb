//! The handler chain, one line per stage, in order: authenticate → parse the request → resolve the space →
//! authorize → resolve the resource → decode, admit, validate (in the verb handler) → storage.

use std::sync::Arc;
use std::time::Instant;

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use kspaces_authz::UserInfo;
use kspaces_storage::SpaceName;

use crate::filters::authenticate::PeerIdentity;
use crate::filters::request_info::{self, RequestInfo, SpacePath};
use crate::handlers::{self, Ctx};
use crate::metrics::RequestLabels;
use crate::registry::Scope;
use crate::routes;
use crate::state::ApiServer;
use crate::status::{ApiError, ApiResult};

/// The single entry point for every request.
pub async fn handle(req: HttpRequest, payload: web::Payload, server: web::Data<Arc<ApiServer>>) -> HttpResponse {
    let started = Instant::now();
    let server = server.get_ref().clone();
    server.metrics.start();
    let info = request_info::parse(req.method().as_str(), req.path(), req.query_string());
    let response = match serve(&req, payload, server.clone(), &info).await {
        Ok(response) => response,
        Err(err) => err.error_response(),
    };
    let labels = RequestLabels {
        verb: info.verb.to_ascii_uppercase(),
        group: info.group.clone(),
        version: info.version.clone(),
        resource: info.resource.clone(),
        subresource: info.subresource.clone(),
        scope: if !info.is_resource { "" } else if !info.name.is_empty() { "resource" } else if info.namespace.is_some() { "namespace" } else { "cluster" },
    };
    server.metrics.finish(labels, response.status().as_u16(), started.elapsed().as_secs_f64());
    response
}

async fn serve(req: &HttpRequest, payload: web::Payload, server: Arc<ApiServer>, info: &RequestInfo) -> ApiResult<HttpResponse> {
    let user = authenticate(req, &server)?;
    if !info.is_resource {
        let route = routes::route(&info.path);
        if user.is_none() && !route.is_public() {
            return Err(ApiError::unauthorized());
        }
        let accept = req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok());
        let host = req.connection_info().host().to_owned();
        return routes::serve(&server, route, accept, req.query_string(), &host);
    }
    let user = user.ok_or_else(ApiError::unauthorized)?;
    let space = resolve_space(&info.space, &user)?;
    authorize(&user, info)?;
    let resource = server
        .resources
        .lookup(&info.group, &info.version, &info.resource)
        .cloned()
        .ok_or_else(ApiError::no_route)?;
    if resource.namespaced && info.namespace.is_none() && !matches!(info.verb.as_str(), "list" | "watch") {
        return Err(ApiError::no_route());
    }
    let scope = Scope { space, namespace: if resource.namespaced { info.namespace.clone() } else { None } };
    let ctx = Ctx::new(server, req, info.clone(), resource, scope, user);
    handlers::dispatch(ctx, payload).await
}

/// Bearer token first, then the verified client certificate; `None` is anonymous; a bad token is 401.
fn authenticate(req: &HttpRequest, server: &ApiServer) -> ApiResult<Option<UserInfo>> {
    if let Some(value) = req.headers().get(header::AUTHORIZATION) {
        let token = value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ")).map(str::trim).unwrap_or_default();
        return server.tokens.authenticate(token).cloned().map(Some).ok_or_else(ApiError::unauthorized);
    }
    Ok(req.conn_data::<PeerIdentity>().map(|identity| identity.0.clone()))
}

/// The space a request reaches. Until tenancy lands, only the system space exists: short paths,
/// `/api/v1/tenants/system/...` and `/clusters/root/...` reach it.
fn resolve_space(path: &SpacePath, _user: &UserInfo) -> ApiResult<SpaceName> {
    match path {
        SpacePath::Short => Ok(SpaceName::system()),
        SpacePath::Tenant(t) if t == "system" => Ok(SpaceName::system()),
        SpacePath::Workspace(w) if w == "root" => Ok(SpaceName::system()),
        SpacePath::Tenant(t) | SpacePath::Workspace(t) => Err(ApiError::not_found("", "tenants", t)),
    }
}

/// Authorization: every authenticated user is allowed until RBAC lands (`--authorization-mode=AlwaysAllow`).
fn authorize(_user: &UserInfo, _info: &RequestInfo) -> ApiResult<()> {
    Ok(())
}

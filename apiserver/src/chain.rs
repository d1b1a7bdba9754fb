//! The handler chain, one line per stage, in order: authenticate → parse the request → resolve the space →
//! authorize → resolve the resource → admit the request (tenancy rules) → decode, admit, validate (in the verb
//! handler) → storage.

use std::sync::Arc;
use std::time::Instant;

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use kspaces_authz::UserInfo;

use crate::filters::authenticate::PeerIdentity;
use crate::filters::request_info::{self, RequestInfo, SpacePath};
use crate::handlers::{self, Ctx};
use crate::metrics::RequestLabels;
use crate::registry::{Scope, Spaces};
use crate::routes;
use crate::{admission, tenancy};
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
        if let Some(user) = &user {
            if info.space != SpacePath::Short {
                // Discovery and OpenAPI under `/clusters/<ws>/...` or a tenant path: the caller must reach that space.
                resolve_space(&server, info, user, "get", "")?;
            }
        }
        let accept = req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok());
        let host = req.connection_info().host().to_owned();
        return routes::serve(&server, server.resources_for(user.as_ref()), route, accept, req.query_string(), &host);
    }
    let user = user.ok_or_else(ApiError::unauthorized)?;
    let spaces = resolve_space(&server, info, &user, &info.verb, &info.resource)?;
    authorize(&user, info)?;
    let resource = server
        .resources
        .lookup(&info.group, &info.version, &info.resource)
        .cloned()
        .ok_or_else(ApiError::no_route)?;
    if resource.namespaced && info.namespace.is_none() && !matches!(info.verb.as_str(), "list" | "watch") {
        return Err(ApiError::no_route());
    }
    let request = tenancy::Request { user: &user, verb: &info.verb, resource: &info.resource, path: &info.space };
    let spaces = tenancy::check_resource(&request, &resource, spaces, server.is_system_user(&user))?;
    let scope = Scope { spaces, namespace: if resource.namespaced { info.namespace.clone() } else { None } };
    admission::check_request(&resource, &scope, info)?;
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

/// The space(s) a request reaches (see `tenancy::resolve`); `all` only for lists and watches.
fn resolve_space(server: &ApiServer, info: &RequestInfo, user: &UserInfo, verb: &str, resource: &str) -> ApiResult<Spaces> {
    let request = tenancy::Request { user, verb, resource, path: &info.space };
    let spaces = tenancy::resolve(&request, &server.tenants, server.default_tenant.as_deref())?;
    if spaces == Spaces::All && info.is_resource && !matches!(verb, "list" | "watch") {
        return Err(ApiError::bad_request("tenant \"all\" may only be used to list and watch"));
    }
    Ok(spaces)
}

/// Authorization: every authenticated user is allowed until RBAC lands (`--authorization-mode=AlwaysAllow`).
fn authorize(_user: &UserInfo, _info: &RequestInfo) -> ApiResult<()> {
    Ok(())
}

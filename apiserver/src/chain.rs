//! The handler chain: `handle` parses the request and sets its deadline (not for long-running ones), `serve` runs
//! the stages, one line each, in order: reject an invalid path → authenticate → impersonate (the `Caller`, computed
//! once) → read the body (before a seat is taken) → priority and fairness (a seat, or 429) → a virtual workspace
//! (who, where, whether RBAC is still asked), a home, an APIService's group-version (proxied once authorized), or a
//! non-resource path answer here; else resolve the space → authorize → resolve the resource → an export's maximal
//! permission → system-only resources → the audit body → the verb handler (decode, then the registry: admission,
//! the kind's strategy, validation, storage). Then `handle` writes the audit event and the request's metrics.

use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use actix_web::http::header;
use actix_web::body::{BoxBody, MessageBody};
use actix_web::{web, HttpRequest, HttpResponse};
use futures::FutureExt;
use kspaces_authz::policy::Decision;
use kspaces_authz::rbac::Attributes;
use kspaces_authz::{Caller, UserInfo};
use kspaces_storage::{ApiIdentity, SpaceName};
use serde_json::Value;

use crate::audit::{AuditOutcome, AuditRequest, Level};
use crate::filters::authenticate::PeerIdentity;
use crate::filters::impersonate;
use crate::filters::request_header::FrontProxy;
use crate::apis::request_info::{self, RequestInfo, SpacePath, VirtualPath};
use crate::handlers::{self, Body, Ctx, Unread};
use crate::metrics::{self, RequestLabels};
use crate::registry::selector::LabelSelector;
use crate::registry::{ObjectFilter, ResourceInfo, ResourceTable, Scope, Spaces};
use crate::api_server::ApiServer;
use crate::status::{ApiError, ApiResult};
use crate::{authorization, flowcontrol, negotiate, routes, tenancy, virtual_workspace};

/// What the chain learned about a request, for the audit log.
#[derive(Default)]
struct Trail {
    /// The identity the request acts as (the impersonated one, when impersonating).
    user: Option<UserInfo>,
    impersonator: Option<UserInfo>,
    tenant: Option<String>,
    decision: Option<Decision>,
    /// The `Status` of a failed request.
    status: Option<Value>,
    /// The audit level, once known.
    level: Option<Level>,
    /// The request body, read early when the audit level records it.
    body: Option<bytes::Bytes>,
    /// The served resource the request reached (its metrics name it; nothing else may).
    resource: Option<Arc<ResourceInfo>>,
    /// Its FlowSchema and priority level, named by the response headers.
    flow: Option<flowcontrol::Classified>,
    /// What the handler's admission annotated for the audit event.
    admission: Option<handlers::Warnings>,
}

/// The single entry point for every request.
pub async fn handle(req: HttpRequest, payload: web::Payload, server: web::Data<Arc<ApiServer>>) -> HttpResponse {
    let started = Instant::now();
    let received = chrono::Utc::now();
    let server = server.get_ref().clone();
    let info = Rc::new(request_info::parse(req.method().as_str(), req.path(), req.query_string()));
    server.metrics.start(&info);
    let payload = Unread::new(payload);
    // kube's WithTimeoutForNonLongRunningRequests: every request but a watch or a stream ends by its deadline.
    let deadline = (!info.is_long_running()).then(|| tokio::time::Instant::now() + server.request_timeout);
    let (served, mut trail) = serve_within(req.clone(), payload.clone(), server.clone(), info.clone(), deadline).await;
    // HTTP/1.1 copes with an unread body on its own (and draining would answer an `Expect: 100-continue`).
    if req.version() == actix_web::http::Version::HTTP_2 {
        payload.drain().await;
    }
    let mut response = match served {
        Ok(response) => response,
        Err(err) => {
            if server.auditor.enabled() {
                trail.status = Some(err.to_status());
            }
            negotiate::respond::error_response(&err, req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok()))
        }
    };
    if let Some(flow) = &trail.flow {
        flow.set_headers(response.headers_mut());
    }
    if server.auditor.enabled() {
        response = audit(&server, &req, &info, &trail, response, received);
    }
    let content_type = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    let request = metrics::Request { method: req.method().as_str(), info: &info, resource: trail.resource.as_deref(), query: req.query_string(), content_type };
    server.metrics.finish(&info, RequestLabels::of(&request), response.status().as_u16(), started.elapsed().as_secs_f64());
    response
}

/// Serves the request, until `deadline` when it has one; past it the answer is 504 while the work goes on unseen
/// (as kube's handler goroutine does), so that a write cut off by the deadline is finished, never left half done.
async fn serve_within(req: HttpRequest, payload: Unread, server: Arc<ApiServer>, info: Rc<RequestInfo>, deadline: Option<tokio::time::Instant>)
    -> (ApiResult<HttpResponse>, Trail) {
    let work = async move {
        let mut trail = Trail::default();
        // kube's WithPanicRecovery: a bug met by one request is that request's 500, never a reset connection.
        let served = AssertUnwindSafe(serve(&req, payload, server, &info, &mut trail, deadline)).catch_unwind().await;
        let served = served.unwrap_or_else(|_| {
            tracing::error!(method = %req.method(), path = %req.path(), "a request panicked");
            Err(ApiError::internal(format!("an internal error occurred handling {} {}", req.method(), req.path())))
        });
        (served, trail)
    };
    let Some(deadline) = deadline else { return work.await };
    let mut work = Box::pin(work);
    match tokio::time::timeout_at(deadline, &mut work).await {
        Ok(done) => done,
        Err(_) => {
            actix_web::rt::spawn(work);
            (Err(ApiError::request_timeout()), Trail::default())
        }
    }
}

/// The stages, one line each, in the order they run. Each is a function of the request and what it needs; a stage
/// that answers the request itself (a virtual workspace, a home, a non-resource path) ends the list there.
async fn serve(req: &HttpRequest, payload: Unread, server: Arc<ApiServer>, info: &RequestInfo, trail: &mut Trail,
    deadline: Option<tokio::time::Instant>) -> ApiResult<HttpResponse> {
    reject_invalid_path(info)?;
    let caller = authenticate(req, &server, info, trail).await?;
    let caller = impersonate(req, &server, trail, caller).await?;
    let body = read_body(req, info, caller.as_ref(), payload, deadline).await?;
    // Held until the response starts: a watch's or a streamed list's body does not keep its seat.
    let _seat = priority_and_fairness(&server, trail, caller.as_ref(), info).await?;
    if let Some(path) = &info.virtual_workspace {
        return virtual_workspace(req, body, server, info, trail, path, caller).await;
    }
    if let Some(answer) = home(req, &server, info, caller.as_ref()).await? {
        return Ok(answer);
    }
    if let Some(api) = server.aggregator.proxied(info) {
        return aggregated(req, body, &server, info, trail, caller, &api).await;
    }
    if !info.is_resource {
        return non_resource(req, body, &server, info, trail, caller.as_ref()).await;
    }
    let caller = caller.ok_or_else(ApiError::unauthorized)?;
    let spaces = resolve_space(&server, info, &caller, &info.verb, &info.resource)?;
    authorize(&server, trail, &caller, &spaces, info).await?;
    serve_resource(req, body, server, info, trail, caller, Served::own(spaces)).await
}

/// A group-version an APIService proxies (`aggregator`): its space resolved and the request authorized here as
/// any other, then proxied to the APIService's server as the caller.
async fn aggregated(req: &HttpRequest, body: Body, server: &ApiServer, info: &RequestInfo, trail: &mut Trail, caller: Option<Caller>,
    api: &crate::kinds::api_service::ApiService) -> ApiResult<HttpResponse> {
    let caller = caller.ok_or_else(ApiError::unauthorized)?;
    let (verb, resource) = if info.is_resource { (info.verb.as_str(), info.resource.as_str()) } else { ("get", "") };
    let spaces = resolve_space(server, info, &caller, verb, resource)?;
    authorize(server, trail, &caller, &spaces, info).await?;
    let body = handlers::read_body(body).await?;
    server.aggregator.proxy(req, info, &caller, &spaces, api, body).await
}

/// A resource request, its caller and spaces known and authorized: the rest of the stages, then the verb's
/// handler (decode, then the registry: admission, the kind's strategy, validation, storage).
async fn serve_resource(req: &HttpRequest, body: Body, server: Arc<ApiServer>, info: &RequestInfo, trail: &mut Trail,
    caller: Caller, served: Served) -> ApiResult<HttpResponse> {
    let resource = resolve_resource(&server, info, trail, &served)?;
    maximal_permission(&server, info, &caller, &resource, &served).await?;
    let scope = system_only(info, &caller, &resource, served.spaces)?;
    let (body, audit_body) = audit_body(req, &server, info, trail, body).await?;
    let mut ctx = Ctx::new(server, req, info.clone(), resource, scope, caller);
    (ctx.narrowed, ctx.only, ctx.audit_body) = (served.narrowed, served.only, audit_body);
    trail.admission = Some(ctx.warnings.clone());
    handlers::dispatch(ctx, body).await
}

/// A path kube refuses to parse (a `..` segment, a name that is no path segment): 400.
fn reject_invalid_path(info: &RequestInfo) -> ApiResult<()> {
    match &info.invalid_path {
        Some(why) => Err(ApiError::bad_request(why.clone())),
        None => Ok(()),
    }
}

/// A front proxy's headers (`--requestheader-*`), else the verified client certificate, else a bearer token (the
/// token file, service-account tokens, OIDC, then the tenant issuers of the workspace the path names), in kube's
/// union authenticator's order (request headers, then x509, then tokens):
/// a request with a certificate runs as its user whatever token it carries. `None` is anonymous; a bad token
/// without a certificate is 401, and so are credentials naming a reserved tenant.
async fn authenticate(req: &HttpRequest, server: &ApiServer, info: &RequestInfo, trail: &mut Trail) -> ApiResult<Option<Caller>> {
    let user = credentials(req, server, info).await?;
    if let Some(why) = user.as_ref().and_then(|user| tenancy::reserved_tenant(user, &server.tree)) {
        tracing::debug!(why, "credentials refused");
        return Err(ApiError::unauthorized());
    }
    trail.user = user.clone();
    Ok(user.map(|user| server.caller(user)))
}

/// `Impersonate-*` headers: the caller the request acts as, when the authenticated one may impersonate it (the
/// `Caller` is computed once, here).
async fn impersonate(req: &HttpRequest, server: &ApiServer, trail: &mut Trail, caller: Option<Caller>) -> ApiResult<Option<Caller>> {
    let Some(requested) = impersonate::requested(req.headers())? else { return Ok(caller) };
    let impersonator = caller.ok_or_else(ApiError::unauthorized)?;
    let impersonated = impersonate::impersonate(&server.authorizer, &server.tenants, &impersonator, requested).await?;
    if let Some(why) = tenancy::reserved_tenant(&impersonated, &server.tree) {
        return Err(ApiError::forbidden(format!("User \"{}\" cannot impersonate: {why}", impersonator.user.name)));
    }
    trail.impersonator = Some(impersonator.user);
    trail.user = Some(impersonated.clone());
    Ok(Some(server.caller(impersonated)))
}

/// Reads a write's body before a seat is taken (bounded in size and by the deadline); an anonymous request reads
/// none: it reaches no handler that would.
async fn read_body(req: &HttpRequest, info: &RequestInfo, caller: Option<&Caller>, payload: Unread, deadline: Option<tokio::time::Instant>)
    -> ApiResult<Body> {
    match caller {
        Some(_) => handlers::read_before_admission(req.method(), info, payload, deadline).await,
        None => Ok(Body::Stream(payload)),
    }
}

/// A virtual workspace decides who the request acts as, where, and whether RBAC is still to be asked; then its
/// discovery, OpenAPI or resource is served.
async fn virtual_workspace(req: &HttpRequest, body: Body, server: Arc<ApiServer>, info: &RequestInfo, trail: &mut Trail,
    path: &VirtualPath, caller: Option<Caller>) -> ApiResult<HttpResponse> {
    let caller = caller.ok_or_else(ApiError::unauthorized)?;
    let user = caller.user.clone();
    let (access, kind) = match path {
        VirtualPath::Lifecycle(lifecycle, entry) => (server.virtual_workspaces.admit(info, *lifecycle, entry, caller).await?, lifecycle.kind()),
        VirtualPath::ApiExport { cluster, export } => (server.virtual_workspaces.admit_export(info, cluster, export, caller).await?, "apiexport"),
    };
    // Acting as the workspace's creator: the audit log names the controller as the impersonator.
    if access.caller.user.name != user.name {
        trail.impersonator = Some(user);
    }
    trail.user = Some(access.caller.user.clone());
    if access.authorized {
        if let Spaces::One(space) = &access.spaces {
            trail.tenant = Some(server.tree.tenant_of(space));
        }
        trail.decision = Some(Decision { allowed: true, reason: format!("{kind} virtual workspace") });
    } else {
        authorize(&server, trail, &access.caller, &access.spaces, info).await?;
    }
    serve_virtual(req, body, server, info, trail, access).await
}

/// `~` answers with the caller's home workspace; any other request by its owner to a home's path makes the home
/// first (kubectl's discovery comes first).
async fn home(req: &HttpRequest, server: &Arc<ApiServer>, info: &RequestInfo, caller: Option<&Caller>) -> ApiResult<Option<HttpResponse>> {
    if handlers::home::is_home_request(info) {
        let caller = caller.ok_or_else(ApiError::unauthorized)?;
        return handlers::home::get(server.clone(), req, info, caller.clone()).await.map(Some);
    }
    if let Some(caller) = caller {
        handlers::home::first_access(server, info, caller).await?;
    }
    Ok(None)
}

/// Discovery, OpenAPI, health, `/version` and the server-wide paths: who may reach the route, then the route.
async fn non_resource(req: &HttpRequest, body: Body, server: &ApiServer, info: &RequestInfo, trail: &mut Trail, caller: Option<&Caller>)
    -> ApiResult<HttpResponse> {
    let route = routes::route(&info.path);
    let mut space = None;
    match caller {
        None if !route.is_public() => return Err(ApiError::unauthorized()),
        None => {}
        Some(caller) if route.is_server_wide() => {
            authorize_server_wide(server, trail, caller, info).await?;
            if route == routes::Route::Snapshot {
                let handles = crate::snapshot::Handles { registry: &server.registry, rows: server.resolver.clone(), table: &server.resources,
                    data_dir: &server.data_dir };
                return crate::snapshot::serve(req, body, handles).await;
            }
        }
        Some(caller) => match resolve_space(server, info, caller, "get", "") {
            Ok(spaces) => {
                authorize(server, trail, caller, &spaces, info).await?;
                space = match spaces {
                    Spaces::One(space) => Some(space),
                    Spaces::All => None,
                };
            }
            // A caller with no space (no tenant, no --default-tenant) still reaches /version, health and
            // discovery, so kubectl gets as far as the resource request and its explanation.
            Err(_) if (route.is_public() || route.is_discovery()) && info.space == SpacePath::Short => {}
            // A path is refused as kube refuses one: `cannot get path "/api"`.
            Err(err) if err.code == 403 => {
                let attributes = Attributes::NonResource { verb: info.verb.clone(), path: info.path.clone() };
                return Err(authorization::forbidden(&caller.user, &attributes, "a user may only reach their own tenant"));
            }
            Err(err) => return Err(err),
        },
    }
    serve_non_resource(req, server, caller, space, route)
}

/// The resource the request reaches in its spaces (built-in or custom), or in a virtual workspace's export; 404 if
/// none.
fn resolve_resource(server: &ApiServer, info: &RequestInfo, trail: &mut Trail, served: &Served) -> ApiResult<Arc<ResourceInfo>> {
    let resource = match &served.resources {
        Some(exported) => virtual_workspace::exported_row(exported, &server.virtual_workspaces.binding_versions, &info.group, &info.version, &info.resource),
        None => server.resource(&served.spaces, &info.group, &info.version, &info.resource),
    };
    let resource = resource.ok_or_else(ApiError::no_route)?;
    trail.resource = Some(resource.clone());
    Ok(resource)
}

/// A bound resource in a consumer's workspace: the export's maximal permission policy bounds it too (its
/// provider's virtual workspace is not bounded by it). 403 if it denies.
async fn maximal_permission(server: &ApiServer, info: &RequestInfo, caller: &Caller, resource: &ResourceInfo, served: &Served) -> ApiResult<()> {
    let (None, Some(ApiIdentity::Shared(identity))) = (&served.resources, resource.custom.as_ref().map(|c| &c.identity)) else { return Ok(()) };
    let attributes = authorization::attributes(info);
    match server.authorizer.maximal_permission(caller, identity, &attributes).await? {
        Some(decision) if !decision.allowed => {
            let why = format!("denied by the maximal permission policy of the APIExport bound here: {}", decision.reason);
            Err(authorization::forbidden(&caller.user, &attributes, why.trim_end_matches(": ")))
        }
        _ => Ok(()),
    }
}

/// Tenancy's last word on the resource: system-only resources, and whether a tenant's request may reach it in
/// these spaces (see `tenancy::check_resource`). A namespaced resource needs its namespace but to list and watch.
fn system_only(info: &RequestInfo, caller: &Caller, resource: &ResourceInfo, spaces: Spaces) -> ApiResult<Scope> {
    if resource.namespaced && info.namespace.is_none() && !matches!(info.verb.as_str(), "list" | "watch") {
        return Err(ApiError::no_route());
    }
    let request = tenancy::Request { caller, verb: &info.verb, resource: &info.resource, path: &info.space };
    let spaces = tenancy::check_resource(&request, resource, spaces)?;
    Ok(Scope { spaces, namespace: if resource.namespaced { info.namespace.clone() } else { None } })
}

/// The audit policy's level for a write or list, known before the handler runs: at `Request` and above a write's
/// body is read now, for the event; the second value says whether the response's objects are logged too.
async fn audit_body(req: &HttpRequest, server: &ApiServer, info: &RequestInfo, trail: &mut Trail, body: Body) -> ApiResult<(Body, bool)> {
    if !server.auditor.enabled() || !matches!(info.verb.as_str(), "create" | "update" | "patch" | "list") {
        return Ok((body, false));
    }
    let level = audit_level(server, req, info, trail, &audit_request_uri(req));
    trail.level = Some(level);
    if level < Level::Request || info.verb == "list" {
        return Ok((body, level >= Level::RequestResponse));
    }
    let bytes = handlers::read_body(body).await?;
    trail.body = Some(bytes.clone());
    Ok((Body::Read(bytes), level >= Level::RequestResponse))
}

/// API Priority and Fairness: classifies the request (its FlowSchema and priority level, which the response
/// headers name) and waits for a seat of the level in the flow's queue (the tenant is part of the flow); 429 when
/// the queue is full or the wait too long. An exempt level (system:masters, health checks) never waits.
async fn priority_and_fairness(server: &ApiServer, trail: &mut Trail, caller: Option<&Caller>, info: &RequestInfo) -> ApiResult<Option<flowcontrol::Admitted>> {
    let Some(classified) = server.flowcontrol.classify(caller, info) else { return Ok(None) };
    let tenant = flowcontrol::tenant_of(caller, &info.space, &server.tree);
    let admitted = server.flowcontrol.admit(&classified, caller, &tenant, info).await;
    trail.flow = Some(classified);
    admitted.map(Some)
}

/// Where a resource request is served: its spaces, the labels a list or watch is narrowed to (a virtual
/// workspace's selection), and the resources it may reach when not the space's own (an export's).
struct Served {
    spaces: Spaces,
    narrowed: Option<LabelSelector>,
    resources: Option<Vec<Arc<ResourceInfo>>>,
    only: Option<ObjectFilter>,
}

impl Served {
    /// A request in its own spaces, not through a virtual workspace.
    fn own(spaces: Spaces) -> Served {
        Served { spaces, narrowed: None, resources: None, only: None }
    }
}

/// A request through a virtual workspace, once admitted: discovery and OpenAPI of its space, or a resource.
async fn serve_virtual(req: &HttpRequest, body: Body, server: Arc<ApiServer>, info: &RequestInfo, trail: &mut Trail,
    access: virtual_workspace::Access) -> ApiResult<HttpResponse> {
    if info.is_resource {
        let served = Served { spaces: access.spaces, narrowed: access.labels, resources: access.resources, only: access.only };
        return serve_resource(req, body, server, info, trail, access.caller, served).await;
    }
    let route = routes::route(&info.path);
    if route.is_server_wide() {
        return Err(ApiError::no_route());
    }
    // An export's virtual workspace discovers the exported resources and the bindings, nothing else.
    if let Some(exported) = &access.resources {
        let table = ResourceTable::shared(exported.iter().chain(&server.virtual_workspaces.binding_versions).cloned().collect());
        let accept = req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok());
        let host = req.connection_info().host().to_owned();
        return routes::serve(&server, &table, server.openapi(), route, accept, req.query_string(), &host);
    }
    let space = match access.spaces {
        Spaces::One(space) => Some(space),
        Spaces::All => None,
    };
    serve_non_resource(req, &server, Some(&access.caller), space, route)
}

/// Discovery, OpenAPI and the other non-resource routes, as `space` shows them (its resources: the built-in ones
/// and its resolved CRDs).
fn serve_non_resource(req: &HttpRequest, server: &ApiServer, caller: Option<&Caller>, space: Option<SpaceName>, route: routes::Route) -> ApiResult<HttpResponse> {
    let accept = req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let host = req.connection_info().host().to_owned();
    let system_user = caller.is_some_and(|c| c.system);
    let view = space.as_ref().map(|space| server.resolver.view(space));
    let table = match &view {
        Some(view) if system_user => &view.system,
        Some(view) => &view.tenant,
        None => server.resources_for(caller),
    };
    let openapi = match route {
        routes::Route::OpenApiV2 | routes::Route::OpenApiV3Index | routes::Route::OpenApiV3(_) => space.as_ref().and_then(|s| server.resolver.openapi(s)),
        _ => None,
    };
    let openapi = openapi.as_deref().unwrap_or_else(|| server.openapi());
    routes::serve(server, table, openapi, route, accept, req.query_string(), &host)
}

/// The user the request's credentials name (see `authenticate`).
async fn credentials(req: &HttpRequest, server: &ApiServer, info: &RequestInfo) -> ApiResult<Option<UserInfo>> {
    if req.conn_data::<FrontProxy>().is_some() {
        if let Some(user) = server.authenticator.request_header.as_ref().and_then(|settings| settings.user(req.headers())) {
            return Ok(Some(user));
        }
    }
    if let Some(identity) = req.conn_data::<PeerIdentity>() {
        return Ok(Some(identity.0.clone()));
    }
    if let Some(value) = req.headers().get(header::AUTHORIZATION) {
        let token = value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ")).map(str::trim).unwrap_or_default();
        let why = match server.authenticator.bearer(token, None).await {
            Ok(authenticated) => return Ok(Some(authenticated.user)),
            Err(why) => why,
        };
        return match server.authenticator.in_workspace(token, &info.space).await {
            Some(Ok(user)) => Ok(Some(user)),
            workspace => {
                tracing::debug!(why, workspace_why = workspace.and_then(Result::err), "bearer token rejected");
                Err(ApiError::unauthorized())
            }
        };
    }
    Ok(None)
}

/// The space(s) a request reaches (see `tenancy::resolve`); `all` only for lists and watches.
fn resolve_space(server: &ApiServer, info: &RequestInfo, caller: &Caller, verb: &str, resource: &str) -> ApiResult<Spaces> {
    let request = tenancy::Request { caller, verb, resource, path: &info.space };
    let spaces = tenancy::resolve(&request, &server.tenants, &server.tree)?;
    if spaces == Spaces::All && info.is_resource && !matches!(verb, "list" | "watch") {
        return Err(ApiError::bad_request("tenant \"all\" may only be used to list and watch"));
    }
    Ok(spaces)
}

/// Asks the authorizer (`--authorization-mode`) whether `caller` may make this request in `spaces` (a request
/// across every space is judged in the system space, whose users alone may make one). 403 if not.
async fn authorize(server: &ApiServer, trail: &mut Trail, caller: &Caller, spaces: &Spaces, info: &RequestInfo) -> ApiResult<()> {
    let space = match spaces {
        Spaces::One(space) => space.clone(),
        Spaces::All => SpaceName::system(),
    };
    trail.tenant = Some(server.tree.tenant_of(&space));
    let attributes = authorization::attributes(info);
    let decision = server.authorizer.authorize_version(caller, &space, &attributes, &info.version).await?;
    let denied = (!decision.allowed).then(|| authorization::forbidden(&caller.user, &attributes, &decision.reason));
    trail.decision = Some(decision);
    denied.map_or(Ok(()), Err)
}

/// Server-wide endpoints (`/metrics`, `/debug/*`) show every tenant's activity: only system users reach them,
/// judged by the system space's RBAC; anyone else is refused, whatever their own space grants them.
async fn authorize_server_wide(server: &ApiServer, trail: &mut Trail, caller: &Caller, info: &RequestInfo) -> ApiResult<()> {
    if caller.system {
        return authorize(server, trail, caller, &Spaces::One(SpaceName::system()), info).await;
    }
    let reason = routes::SERVER_WIDE_REASON.to_owned();
    let denied = authorization::forbidden(&caller.user, &authorization::attributes(info), &reason);
    trail.decision = Some(Decision { allowed: false, reason });
    Err(denied)
}

fn audit_request_uri(req: &HttpRequest) -> String {
    match req.query_string() {
        "" => req.path().to_owned(),
        query => format!("{}?{query}", req.path()),
    }
}

/// The audit event's view of a request.
fn audit_request<'a>(req: &'a HttpRequest, info: &'a RequestInfo, trail: &'a Trail, audit_id: &'a str, request_uri: &'a str,
    source_ip: Option<&'a str>, received: chrono::DateTime<chrono::Utc>) -> AuditRequest<'a> {
    AuditRequest {
        audit_id,
        user: trail.user.as_ref(),
        impersonator: trail.impersonator.as_ref(),
        tenant: trail.tenant.as_deref(),
        verb: &info.verb,
        is_resource: info.is_resource,
        api_group: &info.group,
        api_version: &info.version,
        resource: &info.resource,
        subresource: &info.subresource,
        namespace: info.namespace.as_deref(),
        name: &info.name,
        path: &info.path,
        request_uri,
        source_ip,
        user_agent: req.headers().get(header::USER_AGENT).and_then(|v| v.to_str().ok()),
        received,
        watch: info.verb == "watch",
    }
}

/// The audit policy's level for a request.
fn audit_level(server: &ApiServer, req: &HttpRequest, info: &RequestInfo, trail: &Trail, request_uri: &str) -> Level {
    server.auditor.level(&audit_request(req, info, trail, "", request_uri, None, chrono::Utc::now()))
}

/// Writes the request's audit event and sets the `Audit-Id` response header. At `RequestResponse`, a response
/// whose body is already complete (not a watch stream) is logged too.
fn audit(server: &ApiServer, req: &HttpRequest, info: &RequestInfo, trail: &Trail, response: HttpResponse, received: chrono::DateTime<chrono::Utc>) -> HttpResponse {
    let audit_id = uuid::Uuid::new_v4().to_string();
    let connection = req.connection_info();
    let request_uri = audit_request_uri(req);
    let request = audit_request(req, info, trail, &audit_id, &request_uri, connection.peer_addr(), received);
    let level = trail.level.unwrap_or_else(|| server.auditor.level(&request));
    let mut response = response;
    if level != Level::None {
        let mut response_body = None;
        if level >= Level::RequestResponse {
            let (head, body) = response.into_parts();
            let body = match body.try_into_bytes() {
                Ok(bytes) => {
                    response_body = Some(bytes.clone());
                    BoxBody::new(bytes)
                }
                Err(body) => body,
            };
            response = head.set_body(body);
        }
        let admission = trail.admission.as_ref().map(|notes| notes.annotations()).unwrap_or_default();
        let outcome = AuditOutcome {
            admission: &admission,
            code: response.status().as_u16(),
            decision: trail.decision.as_ref().map(|d| d.allowed),
            reason: trail.decision.as_ref().map_or("", |d| d.reason.as_str()),
            status: trail.status.as_ref(),
            request_body: trail.body.as_deref(),
            response_body: response_body.as_deref(),
        };
        server.auditor.log(level, &request, &outcome);
    }
    if let Ok(value) = header::HeaderValue::from_str(&audit_id) {
        response.headers_mut().insert(header::HeaderName::from_static("audit-id"), value);
    }
    response
}

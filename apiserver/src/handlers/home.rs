//! `GET .../tenancy.kcp.io/v1alpha1/workspaces/~`: the caller's home workspace (`tenancy::home`), made on first
//! access, answered in root and in the caller's own tenant workspace (where a tenant user's home lives).

use std::sync::Arc;

use actix_web::{HttpRequest, HttpResponse};
use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::json;

use super::Ctx;
use crate::apis::request_info::{RequestInfo, SpacePath};
use crate::kinds::workspace::OWNER_ANNOTATION;
use crate::registry::{Scope, WriteContext, SERVER_MANAGER};
use crate::api_server::ApiServer;
use crate::status::{ApiError, ApiResult};
use crate::tenancy::{self, ROOT, SYSTEM};

/// Whether a request asks for `~`.
pub fn is_home_request(info: &RequestInfo) -> bool {
    info.is_resource && info.verb == "get" && info.group == "tenancy.kcp.io" && info.resource == "workspaces" && info.name == "~"
        && info.subresource.is_empty()
}

/// The caller's home, made if it is not there yet.
pub async fn get(server: Arc<ApiServer>, req: &HttpRequest, info: &RequestInfo, caller: Caller) -> ApiResult<HttpResponse> {
    let tenant = caller.tenant.clone().ok_or_else(|| forbidden(&caller, "the user's credentials name no tenant"))?;
    let asked_where_homes_are = match &info.space {
        SpacePath::Short => true,
        SpacePath::Workspace(path) => path == ROOT || *path == format!("{ROOT}:{tenant}"),
        SpacePath::Tenant(t) => *t == tenant,
    };
    if !asked_where_homes_are {
        return Err(ApiError::not_found("tenancy.kcp.io", "workspaces", "~"));
    }
    let config = &server.homes;
    if !config.enabled {
        // As kcp without home workspaces: `~` is a name like any other, and no workspace has it.
        return Err(ApiError::not_found("tenancy.kcp.io", "workspaces", "~"));
    }
    let (parent, home_name) = ensure(&server, &caller).await?;
    let workspaces = server.resources.by_kind("tenancy.kcp.io", "Workspace").cloned()
        .ok_or_else(|| ApiError::internal("no Workspace resource"))?;
    let scope = Scope::one(parent, None);
    let home = server.registry.get(&workspaces, &scope, &home_name).await?;
    let ctx = Ctx::new(server, req, info.clone(), workspaces, scope, caller);
    ctx.respond_object(200, &home)
}

/// The path of `caller`'s home (`root[:<tenant>]:<prefix>:<buckets>:<user>`), if it may have one.
fn home_path(server: &ApiServer, caller: &Caller) -> Option<String> {
    let tenant = caller.tenant.as_deref()?;
    let config = &server.homes;
    if !config.may_have_home(caller) {
        return None;
    }
    let names = config.home_names(&caller.user.name)?;
    let top = if tenant == SYSTEM { ROOT.to_owned() } else { format!("{ROOT}:{tenant}") };
    Some(format!("{top}:{}", names.join(":")))
}

/// A request to `/clusters/<path>` under a home root (`root[:<tenant>]:users:...`). The caller's own home is made
/// on its owner's first request (seed 001), as `~` makes it. A home is its owner's: a tenant's user other than the
/// owner is refused in it and below it whether it exists or not, in RBAC's words, so nothing tells whether it
/// exists (a bucket on the way to the caller's own home is left to RBAC). System users reach every home.
pub async fn first_access(server: &Arc<ApiServer>, info: &RequestInfo, caller: &Caller) -> ApiResult<()> {
    let SpacePath::Workspace(path) = &info.space else { return Ok(()) };
    let Some(tenant) = caller.tenant.as_deref().filter(|_| server.homes.enabled) else { return Ok(()) };
    let top = if tenant == SYSTEM { ROOT.to_owned() } else { format!("{ROOT}:{tenant}") };
    let Some(below_home_root) = path.strip_prefix(&top).and_then(|rest| rest.strip_prefix(':'))
        .and_then(|rest| rest.strip_prefix(server.homes.prefix.join(":").as_str())).and_then(|rest| rest.strip_prefix(':')) else {
        return Ok(());
    };
    if below_home_root.is_empty() {
        return Ok(());
    }
    let own = home_path(server, caller);
    if own.as_deref() == Some(path.as_str()) {
        if server.tree.resolve(path).is_none() {
            ensure(server, caller).await?;
        }
        return Ok(());
    }
    let in_own = own.as_deref().is_some_and(|own| path.starts_with(&format!("{own}:")) || own.starts_with(&format!("{path}:")));
    if caller.system || in_own {
        return Ok(());
    }
    // Word for word what RBAC answers where the caller has no grant.
    Err(crate::authorization::forbidden(&caller.user, &crate::authorization::attributes(info), ""))
}

/// Makes `caller`'s home if it is not there yet: its parent space and its name.
async fn ensure(server: &Arc<ApiServer>, caller: &Caller) -> ApiResult<(SpaceName, String)> {
    let tenant = caller.tenant.clone().ok_or_else(|| forbidden(caller, "the user's credentials name no tenant"))?;
    let config = &server.homes;
    if !config.may_have_home(caller) {
        return Err(forbidden(caller, "home workspaces are for the home-creator groups only"));
    }
    let names = config.home_names(&caller.user.name).ok_or_else(|| forbidden(caller, "the user's name makes no workspace name"))?;
    let workspaces = server.resources.by_kind("tenancy.kcp.io", "Workspace").cloned()
        .ok_or_else(|| ApiError::internal("no Workspace resource"))?;
    let mut parent = if tenant == SYSTEM { SpaceName::system() } else { tenancy::space_of(&tenant)? };
    let mut path = if tenant == SYSTEM { ROOT.to_owned() } else { format!("{ROOT}:{tenant}") };
    let homeroot = config.prefix.len() - 1;
    for (depth, name) in names.iter().enumerate() {
        let kind = match depth {
            d if d < homeroot => "universal",
            d if d == homeroot => "homeroot",
            d if d < names.len() - 1 => "homebucket",
            _ => "home",
        };
        let child_path = format!("{path}:{name}");
        if server.tree.resolve(&child_path).is_none() {
            let mut workspace = json!({
                "apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
                "metadata": {"name": name}, "spec": {"type": {"name": kind, "path": ROOT}},
            });
            if kind == "home" {
                let owner = json!({"username": caller.user.name, "uid": caller.user.uid, "groups": caller.user.groups});
                workspace["metadata"]["annotations"] = json!({OWNER_ANNOTATION: owner.to_string()});
            }
            let write = WriteContext::server(SERVER_MANAGER, "");
            match server.registry.create(&workspaces, &Scope::one(parent.clone(), None), workspace, &write).await {
                Ok(_) | Err(ApiError { code: 409, .. }) => {}
                Err(err) => return Err(err),
            }
        }
        let node = server.tree.resolve(&child_path)
            .ok_or_else(|| ApiError::too_many_requests("Creating the home workspace", 1))?;
        if depth + 1 < names.len() {
            parent = node.cluster;
            path = child_path;
        }
    }
    Ok((parent, names.last().cloned().unwrap_or_default()))
}

fn forbidden(caller: &Caller, why: &str) -> ApiError {
    ApiError::forbidden_object("tenancy.kcp.io", "workspaces", "~", &format!("User {:?} has no home workspace: {why}", caller.user.name))
}

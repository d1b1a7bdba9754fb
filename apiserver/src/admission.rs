//! Admission: rules that hold across resources, checked before a write reaches the registry.

pub mod escalation;

use crate::filters::request_info::RequestInfo;
use crate::registry::{ResourceInfo, Scope, Spaces};
use crate::state::ApiServer;
use crate::status::{ApiError, ApiResult};
use crate::tenancy::{self, Phase};

/// Namespaces that can never be deleted (kube-apiserver's NamespaceLifecycle admission). In a tenant space
/// they go only with the tenant (the tenant controller deletes them directly).
pub const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// Checks a request against its space, before its body is read.
pub fn check_request(resource: &ResourceInfo, scope: &Scope, info: &RequestInfo) -> ApiResult<()> {
    let Spaces::One(space) = &scope.spaces else { return Ok(()) };
    let tenant = tenancy::tenant_of(space);
    let writes = matches!(info.verb.as_str(), "create" | "update" | "patch");
    if writes && resource.is("apps", "DaemonSet") && !space.is_system() {
        // Arktos' SystemDaemonSet admission: daemons run on every node, which only the system tenant owns.
        return Err(ApiError::forbidden(format!(
            "daemonsets.apps is forbidden: only the system tenant may have DaemonSets (tenant {tenant})")));
    }
    Ok(())
}

/// Refuses creates in a Terminating tenant. Checked by the create handler once the body is decoded, just before
/// the write, as kube-apiserver's lifecycle admission runs after decoding (a slow body cannot slip past the start
/// of a deletion).
pub fn check_create(server: &ApiServer, resource: &ResourceInfo, scope: &Scope) -> ApiResult<()> {
    let Spaces::One(space) = &scope.spaces else { return Ok(()) };
    let tenant = tenancy::tenant_of(space);
    if server.tenants.phase(tenant) == Some(Phase::Terminating) {
        return Err(ApiError::forbidden(format!(
            "{} is forbidden: unable to create new content in tenant {tenant} because it is being terminated",
            resource.plural)));
    }
    Ok(())
}

/// Checks a delete of `name`.
pub fn check_delete(resource: &ResourceInfo, name: &str) -> ApiResult<()> {
    if resource.is("", "Namespace") && IMMORTAL_NAMESPACES.contains(&name) {
        return Err(ApiError::forbidden(format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")));
    }
    if resource.is("", "Tenant") && name == tenancy::SYSTEM {
        return Err(ApiError::forbidden(format!("tenants \"{name}\" is forbidden: this tenant may not be deleted")));
    }
    Ok(())
}

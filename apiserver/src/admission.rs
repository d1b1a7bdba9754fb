//! Admission: rules that hold across resources, checked before a write reaches the registry.

use crate::registry::ResourceInfo;
use crate::status::{ApiError, ApiResult};

/// Namespaces that can never be deleted (kube-apiserver's NamespaceLifecycle admission).
pub const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// Checks a delete of `name`.
pub fn check_delete(resource: &ResourceInfo, name: &str) -> ApiResult<()> {
    if resource.group.is_empty() && resource.kind == "Namespace" && IMMORTAL_NAMESPACES.contains(&name) {
        return Err(ApiError::forbidden(format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")));
    }
    Ok(())
}

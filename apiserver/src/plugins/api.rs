//! The fields of kcp's objects the plugins read, and nothing more (lenient: every field defaults, unknown fields are
//! ignored). This is the plugins' side of the server contract: `tenancy.kcp.io/v1alpha1` `Workspace` and
//! `apis.kcp.io/v1alpha1` `APIBinding` / `APIExport`.

use std::fmt;

use serde::Deserialize;

/// `metadata`, as far as the plugins care.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Metadata {
    pub name: String,
    pub deletion_timestamp: Option<String>,
}

/// A list's items.
#[derive(Clone, Debug, Deserialize)]
#[serde(bound = "T: Deserialize<'de>")]
pub struct List<T> {
    #[serde(default = "Vec::new")]
    pub items: Vec<T>,
}

/// `tenancy.kcp.io/v1alpha1` `Workspace`, read in its parent workspace.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Workspace {
    pub metadata: Metadata,
    pub spec: WorkspaceSpec,
    pub status: WorkspaceStatus,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct WorkspaceSpec {
    #[serde(rename = "type")]
    pub type_ref: Option<TypeRef>,
    /// The logical cluster name.
    pub cluster: String,
    /// `https://host/clusters/<parent>:<name>`: where the workspace is reached (`tree` and `~` read the path from it).
    #[serde(rename = "URL")]
    pub url: String,
    /// Set on mounted workspaces, whose content another server serves (`tree` shows them as leaves).
    pub mount: Option<serde_json::Value>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct WorkspaceStatus {
    /// `Scheduling`, `Initializing`, `Ready`, ...
    pub phase: String,
}

impl Workspace {
    pub fn is_ready(&self) -> bool {
        self.status.phase == "Ready"
    }
}

/// `spec.type`: a WorkspaceType's name and the path of the workspace defining it (empty: resolved by the server).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct TypeRef {
    pub name: String,
    pub path: String,
}

impl TypeRef {
    /// `--type [path:]name` as kcp reads it: split at the last `:`, the name lower-cased.
    pub fn parse(text: &str) -> TypeRef {
        match text.rsplit_once(':') {
            Some((path, name)) => TypeRef { name: name.to_lowercase(), path: path.to_owned() },
            None => TypeRef { name: text.to_lowercase(), path: String::new() },
        }
    }
}

/// `root:universal`, or `universal` without a path.
impl fmt::Display for TypeRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.path.as_str() {
            "" => f.write_str(&self.name),
            path => write!(f, "{path}:{}", self.name),
        }
    }
}

/// `apis.kcp.io/v1alpha1` `APIBinding`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ApiBinding {
    pub metadata: Metadata,
    pub spec: ApiBindingSpec,
    pub status: ApiBindingStatus,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ApiBindingSpec {
    pub permission_claims: Vec<PermissionClaim>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ApiBindingStatus {
    /// `Binding`, then `Bound`.
    pub phase: String,
}

/// A permission claim of a binding (with its `state`) or of an export (without).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PermissionClaim {
    pub group: String,
    pub resource: String,
    pub identity_hash: String,
    /// `Accepted` or `Rejected`.
    pub state: String,
    /// Every object of the resource (v1alpha1).
    pub all: bool,
    /// The objects claimed, by name and namespace, when not `all` (v1alpha1).
    pub resource_selector: Vec<serde_json::Value>,
}

impl PermissionClaim {
    /// `resource.group` as Kubernetes prints a GroupResource (`secrets` for the core group).
    pub fn group_resource(&self) -> String {
        match self.group.as_str() {
            "" => self.resource.clone(),
            group => format!("{}.{group}", self.resource),
        }
    }
}

/// `apis.kcp.io/v1alpha1` `APIExport`: its claims, for `--accept-all-permission-claims`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ApiExport {
    pub spec: ApiExportSpec,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ApiExportSpec {
    pub permission_claims: Vec<PermissionClaim>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_flags() {
        let rows = [("universal", "universal"), ("root:team", "root:team"), ("Root:Org:Team", "Root:Org:team"), (":x", "x")];
        for (flag, shown) in rows {
            assert_eq!(TypeRef::parse(flag).to_string(), shown, "{flag}");
        }
        assert_eq!(TypeRef::parse("root:org:team"), TypeRef { name: "team".into(), path: "root:org".into() });
    }
}

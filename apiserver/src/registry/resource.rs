//! `ResourceInfo`: one row of the resource table that drives routing, discovery, OpenAPI and tables.

use kspaces_storage::GroupResource;

/// Subresources the generic registry knows how to serve.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Subresource {
    /// `/status`: writes only `.status`; the main resource ignores `.status` changes.
    Status,
    /// `/scale`: an `autoscaling/v1 Scale` view of `.spec.replicas`.
    Scale,
}

/// Everything the server needs to know to serve one resource (built-in or, later, from a CRD).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group; `""` for the legacy core group.
    pub group: String,
    pub version: String,
    pub kind: String,
    /// URL segment, e.g. `deployments`.
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub namespaced: bool,
    pub subresources: Vec<Subresource>,
    /// Discovery verbs: get, list, watch, create, update, patch, delete, deletecollection.
    pub verbs: Vec<String>,
    /// OpenAPI definition name of the kind, e.g. `io.k8s.api.core.v1.ConfigMap`.
    pub definition: Option<String>,
    /// Lives only in the system space and only system users reach it (Arktos' non-tenanted resources:
    /// tenants, nodes, priorityclasses, ...). Discovery hides it from tenant users.
    pub system_only: bool,
}

impl ResourceInfo {
    /// `v1` for the core group, `group/version` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(self.group.clone(), self.plural.clone())
    }

    /// True for `group`/`kind` (e.g. `("", "Namespace")`).
    pub fn is(&self, group: &str, kind: &str) -> bool {
        self.group == group && self.kind == kind
    }

    pub fn has_subresource(&self, subresource: Subresource) -> bool {
        self.subresources.contains(&subresource)
    }
}

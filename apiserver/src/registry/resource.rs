//! `ResourceInfo`: one row of the resource table that drives routing, discovery, OpenAPI and tables.

use std::sync::Arc;

use kspaces_crd::definition::{Definition, ScalePaths, Version};
use kspaces_storage::{ApiIdentity, GroupResource};

use kspaces_crd::columns::CustomColumns;

/// Subresources the generic registry knows how to serve.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Subresource {
    /// `/status`: writes only `.status`; the main resource ignores `.status` changes.
    Status,
    /// `/scale`: an `autoscaling/v1 Scale` view of `.spec.replicas`.
    Scale,
    /// `/finalize`: writes only `spec.finalizers`, the content finalizers that hold a namespace or tenant
    /// Terminating until its content is gone.
    Finalize,
    /// `/approval` (CertificateSigningRequests): writes only `status.conditions`.
    Approval,
}

/// Everything the server needs to know to serve one resource (built-in, or one version of a CRD).
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
    /// Served from a CustomResourceDefinition (one of its versions); `None` for built-in resources.
    pub custom: Option<Arc<Custom>>,
}

/// What serving one version of a CRD needs beyond the table row.
#[derive(Debug)]
pub struct Custom {
    pub definition: Arc<Definition>,
    /// Index of the served version in `definition.versions`.
    pub version: usize,
    /// `Local` for a CRD of the request's own space; a shared identity for a system CRD used in a tenant space.
    pub identity: ApiIdentity,
    /// The version's printer columns, parsed once (`None`: unusable, kube's default table instead).
    pub columns: Option<CustomColumns>,
}

impl Custom {
    pub fn version(&self) -> Option<&Version> {
        self.definition.versions.get(self.version)
    }

    /// `<group>/<storage version>`: the apiVersion objects are stored with.
    pub fn storage_api_version(&self) -> String {
        let version = self.definition.storage_version().map_or("", |v| v.name.as_str());
        format!("{}/{version}", self.definition.group)
    }

    pub fn scale(&self) -> Option<&ScalePaths> {
        self.version().and_then(|v| v.scale.as_ref())
    }
}

/// Two rows serve the same custom resource when they come from the same parsed CRD, version and identity.
impl PartialEq for Custom {
    fn eq(&self, other: &Custom) -> bool {
        Arc::ptr_eq(&self.definition, &other.definition) && self.version == other.version && self.identity == other.identity
    }
}

impl Eq for Custom {}

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

    /// Whether a delete that removed the object at once answers with the object, as kube-apiserver's registries
    /// with `ReturnDeletedObject` do (pods, services, service accounts, namespaces, storage classes). Every
    /// other resource answers a `Status` of kind `Success`.
    pub fn returns_deleted_object(&self) -> bool {
        matches!(
            (self.group.as_str(), self.kind.as_str()),
            ("", "Pod" | "Service" | "ServiceAccount" | "Namespace") | ("storage.k8s.io", "StorageClass")
        )
    }

    pub fn has_subresource(&self, subresource: Subresource) -> bool {
        self.subresources.contains(&subresource)
    }

    /// Which definition the objects' keys belong to.
    pub fn identity(&self) -> ApiIdentity {
        self.custom.as_ref().map_or(ApiIdentity::BuiltIn, |c| c.identity.clone())
    }
}

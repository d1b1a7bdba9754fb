//! The tenancy kinds: `v1 Tenant` (Arktos) and `core.kcp.io/v1alpha1 LogicalCluster` (kcp), as resource-table
//! rows and OpenAPI definitions (k8s-openapi has neither).

use serde_json::{json, Map, Value};

use crate::registry::{ResourceInfo, Subresource};

pub const TENANT_DEFINITION: &str = "io.k8s.api.core.v1.Tenant";
pub const LOGICAL_CLUSTER_DEFINITION: &str = "io.kcp.core.v1alpha1.LogicalCluster";

/// The CRD policies a space may choose (`LogicalCluster.spec.crdPolicy`).
pub const CRD_POLICIES: [&str; 3] = ["NeverUseSystemCRDUnlessForced", "SystemCRDFirst", "LocalCRDFirst"];
/// The policy a new tenant space starts with.
pub const DEFAULT_CRD_POLICY: &str = "LocalCRDFirst";

fn verbs(list: &[&str]) -> Vec<String> {
    list.iter().map(|v| v.to_string()).collect()
}

/// The rows of the tenancy kinds in the resource table.
pub fn resources() -> Vec<ResourceInfo> {
    vec![
        ResourceInfo {
            group: String::new(),
            version: "v1".into(),
            kind: "Tenant".into(),
            plural: "tenants".into(),
            singular: "tenant".into(),
            short_names: vec![],
            categories: vec![],
            namespaced: false,
            subresources: vec![Subresource::Status],
            // Arktos serves no deletecollection on tenants.
            verbs: verbs(&["create", "delete", "get", "list", "patch", "update", "watch"]),
            definition: Some(TENANT_DEFINITION.into()),
            system_only: true,
            custom: None,
        },
        ResourceInfo {
            group: "core.kcp.io".into(),
            version: "v1alpha1".into(),
            kind: "LogicalCluster".into(),
            plural: "logicalclusters".into(),
            singular: "logicalcluster".into(),
            short_names: vec![],
            categories: vec![],
            namespaced: false,
            subresources: vec![Subresource::Status],
            // One per space, made and removed by the server; its admins may only change `spec.crdPolicy`.
            verbs: verbs(&["get", "list", "patch", "update", "watch"]),
            definition: Some(LOGICAL_CLUSTER_DEFINITION.into()),
            system_only: false,
            custom: None,
        },
    ]
}

const OBJECT_META: &str = "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn kind_schema(description: &str, spec: Value, status: Value) -> Value {
    json!({
        "type": "object",
        "description": description,
        "properties": {
            "apiVersion": string("APIVersion defines the versioned schema of this representation of an object."),
            "kind": string("Kind is a string value representing the REST resource this object represents."),
            "metadata": {"allOf": [{"$ref": OBJECT_META}], "default": {},
                "description": "Standard object's metadata. `metadata.tenant` is the tenant whose space holds the object."},
            "spec": spec,
            "status": status,
        },
    })
}

/// OpenAPI 3.0 definitions of the tenancy kinds, for `OpenApi::build_with`.
pub fn definitions() -> Map<String, Value> {
    let mut definitions = Map::new();
    definitions.insert(TENANT_DEFINITION.into(), kind_schema(
        "Tenant is an Arktos tenant: a space of its own (namespaces, cluster-scoped objects, CRDs), reached at \
         /api/v1/tenants/<name>/... and /clusters/root:<name>/...",
        json!({"type": "object", "description": "TenantSpec describes a tenant.", "properties": {
            "storageClusterId": string("The storage cluster of the tenant, an integer 0-63 given as a string. Default \"0\"."),
            "finalizers": {"type": "array", "items": {"type": "string", "default": ""},
                "description": "Finalizers must be empty before the tenant is removed from storage."},
        }}),
        json!({"type": "object", "description": "TenantStatus is the observed state of a tenant.", "properties": {
            "phase": string("Active or Terminating."),
        }}),
    ));
    definitions.insert(LOGICAL_CLUSTER_DEFINITION.into(), kind_schema(
        "LogicalCluster describes a space (kcp's logical cluster). There is exactly one per space, named `cluster`.",
        json!({"type": "object", "description": "LogicalClusterSpec holds the space's settings.", "properties": {
            "crdPolicy": {"type": "string", "enum": CRD_POLICIES,
                "description": "How the space resolves a resource defined both by a system CRD and by its own CRD."},
        }}),
        json!({"type": "object", "description": "LogicalClusterStatus is the observed state of the space.", "properties": {
            "phase": string("Ready, or Terminating while the space is being deleted."),
        }}),
    ));
    definitions
}

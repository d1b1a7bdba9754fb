//! The kinds with something of their own, one file each: kspaces' own kinds bring their resource row and OpenAPI
//! definition; a kind with rules brings its `Strategy` and its admission plugins. `KINDS` is the table: a new
//! kind is a file here plus one line in it, and the generic store does not change.

pub mod admission_policy;
pub mod admission_webhook;
pub mod api_binding;
pub mod api_conversion;
pub mod api_export;
pub mod api_export_endpoint_slice;
pub mod api_resource_schema;
pub mod api_service;
pub mod certificate_signing_request;
pub mod crd;
pub mod custom_resource;
pub mod defaults;
pub mod flowcontrol;
pub mod horizontal_pod_autoscaler;
pub mod limit_range;
pub mod logical_cluster;
pub mod mutating_admission_policy;
pub mod namespace;
pub mod pod;
pub mod pod_admission;
pub mod pod_disruption_budget;
mod pod_template;
pub mod rbac;
pub mod resource_quota;
mod roles;
pub mod secret;
pub mod server_annotations;
pub mod service;
pub mod tenant;
pub mod volume_attachment;
#[cfg(test)]
mod tests;
pub mod workloads;
pub mod workspace;
pub mod workspace_authentication;
pub mod workspace_type;

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::authorization::Authorizer;
use crate::registry::admission::{Admission, AdmissionChain};
use crate::registry::builtin::builtin_resources;
use crate::registry::observe::WriteObserver;
use crate::registry::strategy::{Strategies, Strategy};
use crate::registry::{ResourceInfo, ResourceTable};
use crate::resolver::Resolver;
use crate::tenancy::types::WorkspaceTypes;
use crate::tenancy::{TenantCache, Tree};
use workspace::BaseUrl;

/// What one kind brings: resource rows and OpenAPI definitions (kspaces' own kinds), and rules.
pub struct Kind {
    pub rows: fn() -> Vec<ResourceInfo>,
    pub definitions: fn() -> Map<String, Value>,
    pub rules: fn(&Context, &mut Rules),
}

impl Kind {
    /// A kind whose row and definition are Kubernetes' own (in `registry::builtin`): rules only.
    pub const fn rules(rules: fn(&Context, &mut Rules)) -> Kind {
        Kind { rows: Vec::new, definitions: Map::new, rules }
    }
}

/// Every kind with something of its own. Admission runs in this order: lifecycles first (is there a place for
/// the object at all), then the rules about what may be written there.
const KINDS: &[Kind] = &[
    tenant::KIND,
    workspace::KIND,
    workspace_type::KIND,
    workspace_authentication::KIND,
    logical_cluster::KIND,
    namespace::KIND,
    custom_resource::KIND,
    workloads::KIND,
    horizontal_pod_autoscaler::KIND,
    crd::KIND,
    api_resource_schema::KIND,
    api_export::KIND,
    api_export_endpoint_slice::KIND,
    api_binding::KIND,
    api_service::KIND,
    rbac::KIND,
    pod::KIND,
    certificate_signing_request::KIND,
    pod_disruption_budget::KIND,
    volume_attachment::KIND,
    service::KIND,
    secret::KIND,
    defaults::KIND,
    limit_range::KIND,
    pod_admission::KIND,
    resource_quota::KIND,
    flowcontrol::KIND,
    server_annotations::KIND,
    // Last: kube runs admission policies and calls webhooks after its built-in admission: mutating policies before
    // mutating webhooks, validating ones on the final object.
    mutating_admission_policy::KIND,
    admission_policy::KIND,
    admission_webhook::KIND,
];

/// What the kinds' rules read: the CRDs (names in use, forced names), the tenants' phases, the workspace tree and
/// types, RBAC, the built-in resource rows, where the server is reached, and the accepted permission claims.
pub struct Context {
    pub resolver: Arc<Resolver>,
    pub tenants: Arc<TenantCache>,
    pub tree: Arc<Tree>,
    pub types: Arc<WorkspaceTypes>,
    pub authorizer: Arc<Authorizer>,
    pub resources: ResourceTable,
    pub base_url: Arc<BaseUrl>,
    /// The permission claims each workspace's bindings accepted.
    pub claims: Arc<crate::claims::Claims>,
    /// Each space's limits and usage.
    pub quotas: Arc<crate::quota::Quotas>,
    /// The priority levels that exist (a FlowSchema's `Dangling` condition).
    pub flowcontrol: Arc<crate::flowcontrol::FlowControl>,
    /// The storage clusters this server has (`--storage-cluster`; 0, the default, always).
    pub storage_clusters: Arc<[kspaces_storage::ClusterId]>,
    /// What each space's Services hold of the service ranges.
    pub services: Arc<service::ServiceAllocations>,
    /// The CA approved client CertificateSigningRequests are signed with.
    pub csr_signer: Arc<certificate_signing_request::CsrSigner>,
    /// Where tenants' admission webhooks may call.
    pub webhook_reach: Arc<admission_webhook::reach::Reach>,
    pub workspace_issuers: Arc<crate::filters::oidc::workspace::WorkspaceIssuers>,
    /// The APIServices the aggregator proxies by.
    pub api_services: Arc<api_service::ApiServices>,
}

/// The kinds' strategies, admission plugins and the caches those plugins keep, as they register them.
#[derive(Default)]
pub struct Rules {
    strategies: Strategies,
    admission: Vec<Arc<dyn Admission>>,
    observers: Vec<Arc<dyn WriteObserver>>,
}

impl Rules {
    /// `group`/`kind`'s strategy.
    pub fn strategy(&mut self, group: &str, kind: &str, strategy: Arc<dyn Strategy>) {
        self.strategies.add(group, kind, strategy);
    }

    /// Every custom resource's strategy.
    pub fn custom(&mut self, strategy: Arc<dyn Strategy>) {
        self.strategies.set_custom(strategy);
    }

    /// An admission plugin, after those registered before it.
    pub fn admit(&mut self, plugin: Arc<dyn Admission>) {
        self.admission.push(plugin);
    }

    /// A cache of a kind's own, told of every write (after the server's caches).
    pub fn observe(&mut self, observer: Arc<dyn WriteObserver>) {
        self.observers.push(observer);
    }
}

/// What the kinds registered: their strategies, the admission chain, and their caches.
pub struct Registered {
    pub strategies: Strategies,
    pub admission: AdmissionChain,
    pub observers: Vec<Arc<dyn WriteObserver>>,
}

/// Every built-in resource: Kubernetes' and kspaces' own kinds'.
pub fn resources() -> Vec<ResourceInfo> {
    builtin_resources().into_iter().chain(KINDS.iter().flat_map(|kind| (kind.rows)())).collect()
}

/// The OpenAPI definitions of kspaces' own kinds (k8s-openapi has Kubernetes').
pub fn definitions() -> Map<String, Value> {
    KINDS.iter().flat_map(|kind| (kind.definitions)()).collect()
}

/// Every kind's strategy, the admission chain, and the kinds' caches.
pub fn rules(context: &Context) -> Registered {
    let mut rules = Rules::default();
    for kind in KINDS {
        (kind.rules)(context, &mut rules);
    }
    Registered { strategies: rules.strategies, admission: AdmissionChain::new(rules.admission), observers: rules.observers }
}

/// The row of one of kcp's cluster-scoped kinds: `v1alpha1`, every verb, category `kcp`, its singular the kind in
/// lower case, and a `status` subresource when `status`.
pub(crate) fn kcp_row(group: &str, kind: &str, plural: &str, definition: &str, status: bool) -> ResourceInfo {
    ResourceInfo {
        group: group.into(),
        version: "v1alpha1".into(),
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_ascii_lowercase(),
        short_names: vec![],
        categories: vec!["kcp".into()],
        namespaced: false,
        subresources: if status { vec![crate::registry::Subresource::Status] } else { vec![] },
        verbs: verbs(&["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]),
        definition: Some(definition.into()),
        system_only: false,
        custom: None,
    }
}

/// Discovery verbs from a list.
pub(crate) fn verbs(list: &[&str]) -> Vec<String> {
    list.iter().map(|v| v.to_string()).collect()
}

const OBJECT_META: &str = "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// An OpenAPI string property.
pub(crate) fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

/// The OpenAPI definition of one of kspaces' own kinds: type meta, object meta, `spec` and `status`.
pub(crate) fn kind_schema(description: &str, spec: Value, status: Value) -> Value {
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

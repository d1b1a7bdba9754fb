//! APIBinding (kcp's `apis.kcp.io/v1alpha1`, cluster-scoped): a consumer workspace's use of an APIExport
//! (`spec.reference.export{path, name}`; an empty path is the binding's own workspace). The APIs controller
//! (`controllers/apis.rs`) moves it from `Binding` to `Bound` and lists what it binds in `status.boundResources`
//! (schema name, uid, and the export's identity hash); the resolver then serves those resources in the workspace,
//! stored under the export's identity.
//!
//! Admission (kcp's): creating a binding, or changing its claims, needs the verb `bind` on `apiexports/<name>` in
//! the export's workspace; the export must be in root or in the caller's own tenant (a binding across tenants is
//! 403 whatever exists), and it must exist. The reference never changes once written. The label
//! `internal.apis.kcp.io/export` names the export by kcp's hash, so the export's virtual workspace can select the
//! bindings to it. The claims a binding accepts label the objects they cover (`claims::ClaimLabels`).
//!
//! Served as `v1alpha1` (stored) and `v1alpha2` (claims with `verbs` and a `selector`), one stored object
//! (`api_conversion`); see `api_export` for the preferred version.

use std::sync::Arc;

use async_trait::async_trait;
use kspaces_authz::rbac::Attributes as RbacAttributes;
use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::{json, Map, Value};

use super::api_conversion::{self, is_v1alpha2};
use super::api_export::{self, check_claims, check_export_reference, claim_schema, claim_schema_v1alpha2, v1alpha2_row, GROUP};
use super::{kcp_row, kind_schema, Context, Kind, Rules};
use crate::authorization::{self, Authorizer};
use crate::claims::ClaimLabels;
use crate::registry::admission::{Admission, AdmissionPhase, Attributes, Operation};
use crate::registry::store::cluster_name;
use crate::registry::strategy::{Part, Strategy, View};
use crate::registry::{GenericStore, ResourceInfo, Scope};
use crate::resolver::Resolver;
use crate::status::{ApiError, ApiResult, Cause};
use crate::tenancy::tree::Node;
use crate::tenancy::Tree;

/// `apis.kcp.io/v1alpha1 APIBinding`: its row, definition, strategy and admission.
pub const KIND: Kind = Kind { rows, definitions, rules };

pub const NAME: &str = "APIBinding";
pub const PLURAL: &str = "apibindings";
const DEFINITION: &str = "io.kcp.apis.v1alpha1.APIBinding";
const DEFINITION_V1ALPHA2: &str = "io.kcp.apis.v1alpha2.APIBinding";
/// The label naming a binding's export: `Base62(Sha224("<export cluster>:<export name>"))`.
pub const EXPORT_LABEL: &str = "internal.apis.kcp.io/export";

/// `v1alpha1` first: the stored form, the row the server's own readers and writers find by kind.
fn rows() -> Vec<ResourceInfo> {
    vec![kcp_row(GROUP, NAME, PLURAL, DEFINITION, true), v1alpha2_row(NAME, PLURAL, DEFINITION_V1ALPHA2)]
}

fn definitions() -> Map<String, Value> {
    let mut definitions = Map::new();
    let reference = json!({"type": "object", "required": ["export"], "properties": {"export": {"type": "object", "required": ["name"], "properties": {
        "path": {"type": "string", "description": "The workspace of the export; empty: this one."},
        "name": {"type": "string", "description": "The export's name."}}}}});
    let schema = |claim: &dyn Fn(&str, bool) -> Value| kind_schema(
        "APIBinding enables a set of resources and their behaviour through an external service provider in this workspace.",
        json!({"type": "object", "required": ["reference"], "properties": {
            "reference": reference.clone(),
            "permissionClaims": {"type": "array", "items": claim("A claim of the export, accepted or rejected.", true)},
        }}),
        json!({"type": "object", "properties": {
            "apiExportClusterName": {"type": "string", "description": "The logical cluster of the bound export."},
            "phase": {"type": "string", "description": "Binding, then Bound."},
            "boundResources": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            "conditions": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            "exportPermissionClaims": {"type": "array", "items": claim("A claim the export makes.", false)},
            "appliedPermissionClaims": {"type": "array", "items": claim("A claim in effect.", true)},
        }}),
    );
    definitions.insert(DEFINITION.into(), schema(&|description, _| claim_schema(description)));
    definitions.insert(DEFINITION_V1ALPHA2.into(), schema(&claim_schema_v1alpha2));
    definitions
}

fn rules(context: &Context, rules: &mut Rules) {
    rules.strategy(GROUP, NAME, Arc::new(BindingStrategy { tree: context.tree.clone() }));
    if let Some(exports) = context.resources.by_kind(GROUP, api_export::NAME) {
        rules.admit(Arc::new(BindAdmission { tree: context.tree.clone(), authorizer: context.authorizer.clone(), exports: exports.clone() }));
    }
    rules.admit(Arc::new(BoundNames { resolver: context.resolver.clone() }));
    rules.admit(Arc::new(ClaimLabels { claims: context.claims.clone() }));
}

/// Where a binding's export is: its space, its logical cluster's name (`root` for root) and its name; `None`
/// when the path names no workspace.
pub fn export_of(tree: &Tree, space: &SpaceName, binding: &Value) -> Option<(SpaceName, String, String)> {
    let name = binding.pointer("/spec/reference/export/name").and_then(Value::as_str)?.to_owned();
    let path = binding.pointer("/spec/reference/export/path").and_then(Value::as_str).unwrap_or_default();
    let space = if path.is_empty() { space.clone() } else { tree.resolve(path)?.cluster };
    let cluster = cluster_name(&space).to_owned();
    Some((space, cluster, name))
}

pub use crate::apis::kcp::export_hash;

pub struct BindingStrategy {
    tree: Arc<Tree>,
}

impl BindingStrategy {
    fn label(&self, space: &SpaceName, object: &mut Value) {
        let Some((_, cluster, name)) = export_of(&self.tree, space, object) else { return };
        let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else { return };
        let labels = metadata.entry("labels").or_insert_with(|| json!({}));
        if !labels.is_object() {
            *labels = json!({});
        }
        labels[EXPORT_LABEL] = json!(export_hash(&cluster, &name));
    }
}

impl Strategy for BindingStrategy {
    fn view(&self) -> Option<&dyn View> {
        Some(self)
    }

    fn prepare_create(&self, _resource: &ResourceInfo, space: &SpaceName, _caller: Option<&Caller>, object: &mut Value) {
        self.label(space, object);
    }

    fn prepare_update(&self, _resource: &ResourceInfo, space: &SpaceName, _old: &Value, new: &mut Value, _part: Part) {
        self.label(space, new);
    }

    fn validate(&self, resource: &ResourceInfo, object: &Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
        check_export_reference(object, old, "spec.reference.export", "spec.reference", causes);
        if is_v1alpha2(&resource.version) {
            api_conversion::check_binding(object, causes);
        } else {
            check_claims(object.pointer("/spec/permissionClaims"), true, causes);
        }
    }

    /// A `v1alpha2` binding is stored as `v1alpha1`.
    fn to_storage(&self, resource: &ResourceInfo, _space: &SpaceName, object: &mut Value, old: Option<&Value>) {
        if is_v1alpha2(&resource.version) {
            api_conversion::binding_to_v1alpha1(object, old);
        }
    }
}

impl View for BindingStrategy {
    fn to_request(&self, resource: &ResourceInfo, object: &mut Value) {
        if is_v1alpha2(&resource.version) {
            api_conversion::binding_to_v1alpha2(object);
        }
    }
}

/// kcp's `bind` check of export `path:name` (an empty path: `space`) for `caller`: the export's workspace must be
/// root or in the caller's own tenant (anything else is as absent as it is forbidden), and RBAC there must allow
/// `bind` on `apiexports/<name>`. The export's workspace, or the refusal as the export's `path:name`.
pub async fn check_bind(authorizer: &Authorizer, tree: &Tree, caller: &Caller, space: &SpaceName, path: &str, name: &str) -> ApiResult<Result<Node, String>> {
    let holder = if path.is_empty() { tree.cluster(space) } else { tree.resolve(path) };
    let own = tree.cluster(space).map(|node| node.path).unwrap_or_default();
    let shown = format!("{}:{name}", if path.is_empty() { own.as_str() } else { path });
    let Some(holder) = holder.filter(|h| caller.system || h.path == "root" || caller.tenant.as_deref() == Some(h.tenant.as_str())) else {
        return Ok(Err(shown));
    };
    let rbac = RbacAttributes::Resource {
        verb: "bind".into(),
        group: GROUP.into(),
        resource: api_export::PLURAL.into(),
        subresource: String::new(),
        name: name.to_owned(),
        namespace: None,
    };
    let decision = authorizer.authorize(caller, &holder.cluster, &rbac).await?;
    if !decision.allowed {
        let _ = authorization::forbidden(&caller.user, &rbac, &decision.reason);
        return Ok(Err(shown));
    }
    Ok(Ok(holder))
}

/// kcp's binding admission: `bind` on the export, within the caller's reach, and an export that exists.
pub struct BindAdmission {
    tree: Arc<Tree>,
    authorizer: Arc<Authorizer>,
    exports: Arc<ResourceInfo>,
}

#[async_trait]
impl Admission for BindAdmission {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        resource.is(GROUP, NAME) && matches!(operation, Operation::Create | Operation::Update)
    }

    fn phase(&self) -> AdmissionPhase {
        AdmissionPhase::Validating
    }

    async fn admit(&self, registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<()> {
        let (Some(object), Some(caller)) = (attributes.object, attributes.caller) else { return Ok(()) };
        // What a binding binds is the server's to say: the resolver serves what its status names.
        if attributes.part == Part::Status && !caller.system {
            return Err(ApiError::forbidden_object(GROUP, "apibindings/status", attributes.name, "the status of an APIBinding is written by the server"));
        }
        if attributes.part != Part::Main {
            return Ok(());
        }
        if let Some(old) = attributes.old {
            let unchanged = |pointer: &str| old.pointer(pointer) == object.pointer(pointer);
            if unchanged("/spec/reference") && unchanged("/spec/permissionClaims") {
                return Ok(());
            }
        }
        let verb = if attributes.old.is_some() { "update" } else { "create" };
        let path = object.pointer("/spec/reference/export/path").and_then(Value::as_str).unwrap_or_default();
        let name = object.pointer("/spec/reference/export/name").and_then(Value::as_str).unwrap_or_default();
        let holder = check_bind(&self.authorizer, &self.tree, caller, attributes.space, path, name).await?
            .map_err(|shown| ApiError::forbidden_object(GROUP, PLURAL, attributes.name,
                &format!("unable to {verb} APIBinding: no permission to bind to export {shown}")))?;
        let shown = format!("{}:{name}", holder.path);
        match registry.get(&self.exports, &Scope::one(holder.cluster.clone(), None), name).await {
            Ok(_) => Ok(()),
            Err(ApiError { code: 404, .. }) => Err(ApiError::invalid(GROUP, NAME, attributes.name, vec![Cause {
                reason: "FieldValueNotFound",
                message: format!("Not found: \"{shown}\": APIExport {name} does not exist in workspace {}", holder.path),
                field: "spec.reference.export.name".into(),
            }])),
            Err(err) => Err(err),
        }
    }
}

/// A CustomResourceDefinition may not take a name an APIBinding of its workspace binds (the binding wins; a CRD
/// that could never be served is refused rather than stored).
pub struct BoundNames {
    resolver: Arc<Resolver>,
}

#[async_trait]
impl Admission for BoundNames {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        resource.is("apiextensions.k8s.io", "CustomResourceDefinition") && operation == Operation::Create
    }

    async fn admit(&self, _registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<()> {
        match self.resolver.bound_by(attributes.space, attributes.name) {
            Some((binding, _)) => Err(ApiError::invalid("apiextensions.k8s.io", "CustomResourceDefinition", attributes.name, vec![Cause::invalid(
                "metadata.name", attributes.name, &format!("the resource is bound in this workspace by APIBinding {binding:?}; delete the binding first"))])),
            None => Ok(()),
        }
    }
}

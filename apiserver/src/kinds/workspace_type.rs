//! WorkspaceType (kcp's `tenancy.kcp.io/v1alpha1`, cluster-scoped): what a workspace may be. A type may extend
//! others (`extend.with`, additive: an extending type counts as each type it extends), limit its parents and
//! children (checked both ways when a workspace is created), name the type a parent's children get by default,
//! and make new and deleted workspaces wait for initializers and terminators.
//!
//! Validation here is of one object (names, references, `none` beside `types`, a type extending itself); the
//! `ExtensionChain` admission refuses a user's type whose `extend` chain misses a base or loops when it is written
//! (kcp finds out only when a workspace uses the type), and `tenancy::types` judges the chain again at use.

use std::sync::Arc;

use async_trait::async_trait;
use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::{json, Map, Value};

use super::{kcp_row, kind_schema, string, Context, Kind, Rules};
use crate::registry::admission::{Admission, AdmissionPhase, Attributes, Operation};
use crate::registry::strategy::{Part, Strategy, View};
use crate::registry::{GenericStore, ResourceInfo};
use crate::status::{ApiError, ApiResult, Cause};
use crate::kinds::workspace::BaseUrl;
use crate::apis::lifecycle::virtual_workspaces;
use crate::tenancy::types::{TypeName, TypeSpec, WorkspaceTypes};
use crate::authorization::Authorizer;
use crate::kinds::api_binding::check_bind;
use crate::tenancy::Tree;

/// `tenancy.kcp.io/v1alpha1 WorkspaceType`: its row, definition and strategy.
pub const KIND: Kind = Kind { rows, definitions, rules };

pub const GROUP: &str = "tenancy.kcp.io";
pub const NAME: &str = "WorkspaceType";
/// The OpenAPI definition name of WorkspaceType.
pub const DEFINITION: &str = "io.kcp.tenancy.v1alpha1.WorkspaceType";

/// Names no type may have (kcp's reserved names admission).
pub const RESERVED: [&str; 2] = ["any", "system"];

fn rows() -> Vec<ResourceInfo> {
    vec![kcp_row(GROUP, NAME, "workspacetypes", DEFINITION, true)]
}

/// A `{name, path}` reference to a WorkspaceType.
fn type_reference(description: &str) -> Value {
    json!({"type": "object", "description": description, "required": ["name"], "properties": {
        "name": string("The name of the WorkspaceType, lower case."),
        "path": string("The workspace path holding the WorkspaceType; empty: the workspace's own, then its ancestors, then root."),
    }})
}

fn limits(description: &str) -> Value {
    json!({"type": "object", "description": description, "properties": {
        "none": {"type": "boolean", "description": "No workspace at all."},
        "types": {"type": "array", "items": type_reference("One allowed type."), "description": "The allowed types (or types extending them)."},
    }})
}

fn policy_rules(description: &str) -> Value {
    json!({"type": "array", "description": description,
        "items": {"$ref": "#/components/schemas/io.k8s.api.rbac.v1.PolicyRule"}})
}

fn definitions() -> Map<String, Value> {
    let mut definitions = Map::new();
    definitions.insert(DEFINITION.into(), kind_schema(
        "WorkspaceType specifies behaviour of workspaces of this type.",
        json!({"type": "object", "description": "WorkspaceTypeSpec defines the desired state of a WorkspaceType.", "properties": {
            "initializer": {"type": "boolean", "description": "New workspaces of this type wait for the initializer <cluster>:<name>."},
            "terminator": {"type": "boolean", "description": "Deleted workspaces of this type wait for the terminator <cluster>:<name>."},
            "extend": {"type": "object", "description": "What this type extends.", "properties": {
                "with": {"type": "array", "items": type_reference("An extended type."), "description": "The types this one extends (additively)."},
            }},
            "additionalWorkspaceLabels": {"type": "object", "additionalProperties": {"type": "string", "default": ""},
                "description": "Labels added to workspaces of this type."},
            "defaultChildWorkspaceType": type_reference("The type of a child workspace that names none."),
            "limitAllowedChildren": limits("The types a child of a workspace of this type may have."),
            "limitAllowedParents": limits("The types the parent of a workspace of this type may have."),
            "defaultAPIBindings": {"type": "array", "description": "APIExports bound in new workspaces of this type.",
                "items": {"type": "object", "properties": {"path": string("The export's workspace."), "export": string("The export's name.")}}},
            "defaultAPIBindingLifecycle": string("InitializeOnly or Maintain."),
            "authenticationConfigurations": {"type": "array", "items": {"type": "object", "properties": {"name": string("A configuration's name.")}}},
            "initializerPermissions": policy_rules("What the initializer may do in a workspace it initializes."),
            "terminatorPermissions": policy_rules("What the terminator may do in a workspace it terminates."),
        }}),
        json!({"type": "object", "description": "WorkspaceTypeStatus defines the observed state of WorkspaceType.", "properties": {
            "conditions": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            "virtualWorkspaces": {"type": "array", "items": {"type": "object", "properties": {
                "url": string("The URL of a virtual workspace of this type."),
                "type": string("initializing or terminating."),
            }}},
        }}),
    ));
    definitions
}

fn rules(context: &Context, rules: &mut Rules) {
    rules.strategy(GROUP, NAME, Arc::new(WorkspaceTypeStrategy { base_url: context.base_url.clone() }));
    rules.admit(Arc::new(ExtensionChain { tree: context.tree.clone(), types: context.types.clone() }));
    rules.admit(Arc::new(DefaultBindings { tree: context.tree.clone(), authorizer: context.authorizer.clone() }));
}

/// A type that adds `defaultAPIBindings` needs `bind` on each export it adds (kcp's WorkspaceType admission): its
/// workspaces would otherwise bind what its author may not.
pub struct DefaultBindings {
    tree: Arc<Tree>,
    authorizer: Arc<Authorizer>,
}

#[async_trait]
impl Admission for DefaultBindings {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        resource.is(GROUP, NAME) && operation != Operation::Delete
    }

    fn phase(&self) -> AdmissionPhase {
        AdmissionPhase::Validating
    }

    async fn admit(&self, _registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<()> {
        let (Some(object), Some(caller)) = (attributes.object, attributes.caller) else { return Ok(()) };
        let before = attributes.old.map(|old| TypeSpec::of(old).default_bindings).unwrap_or_default();
        for (path, export) in TypeSpec::of(object).default_bindings.iter().filter(|b| !before.contains(b)) {
            if let Err(shown) = check_bind(&self.authorizer, &self.tree, caller, attributes.space, path, export).await? {
                return Err(ApiError::forbidden_object(GROUP, "workspacetypes", attributes.name,
                    &format!("unable to add defaultAPIBindings: no permission to bind to export {shown}")));
            }
        }
        Ok(())
    }
}

/// A type whose `extend` chain would not resolve (a base that does not exist, or a chain back to itself) is
/// refused when a user writes it, so that no unusable type is stored.
pub struct ExtensionChain {
    tree: Arc<Tree>,
    types: Arc<WorkspaceTypes>,
}

#[async_trait]
impl Admission for ExtensionChain {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        resource.is(GROUP, NAME) && operation != Operation::Delete
    }

    fn phase(&self) -> AdmissionPhase {
        AdmissionPhase::Validating
    }

    async fn admit(&self, _registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<()> {
        // The server's own writes (root's built-in types, written together at bootstrap) are not checked.
        let (Some(object), Some(_)) = (attributes.object, attributes.caller) else { return Ok(()) };
        let Some(holder) = self.tree.cluster(attributes.space) else { return Ok(()) };
        let this = TypeName::new(&holder.path, attributes.name);
        let spec = TypeSpec::of(object);
        let invalid = |why: String| ApiError::invalid(GROUP, NAME, attributes.name, vec![Cause::invalid("spec.extend.with", "", &why)]);
        for (path, name) in &spec.extends {
            let (base, _) = self.types.find(&self.tree, &holder, path, name).map_err(|err| invalid(format!("{err}")))?;
            if base == this {
                return Err(invalid(format!("{this} cannot extend itself")));
            }
            let resolved = self.types.resolve(&self.tree, &holder, &base.path, &base.name).map_err(|err| invalid(format!("{err}")))?;
            if resolved.aliases.iter().any(|(alias, _)| *alias == this) {
                return Err(invalid(format!("the extension chain of {this} has a cycle: {base} extends it")));
            }
        }
        Ok(())
    }
}

pub struct WorkspaceTypeStrategy {
    base_url: Arc<BaseUrl>,
}

/// The spec every stored type has: kcp's CRD defaults `defaultChildWorkspaceType` to `root:universal`, so a
/// workspace made without a type inside a workspace of any type is universal unless its type says otherwise.
fn default_spec(object: &mut Value) {
    let Some(map) = object.as_object_mut() else { return };
    let spec = map.entry("spec").or_insert_with(|| json!({}));
    if let Some(spec) = spec.as_object_mut() {
        if spec.get("defaultChildWorkspaceType").is_none_or(Value::is_null) {
            spec.insert("defaultChildWorkspaceType".into(), json!({"name": "universal", "path": "root"}));
        }
    }
}

impl Strategy for WorkspaceTypeStrategy {
    fn view(&self) -> Option<&dyn View> {
        Some(self)
    }

    fn prepare_create(&self, _resource: &ResourceInfo, _space: &SpaceName, _caller: Option<&Caller>, object: &mut Value) {
        default_spec(object);
    }

    fn prepare_update(&self, _resource: &ResourceInfo, _space: &SpaceName, _old: &Value, new: &mut Value, _part: Part) {
        default_spec(new);
    }

    fn validate(&self, _resource: &ResourceInfo, object: &Value, _old: Option<&Value>, causes: &mut Vec<Cause>) {
        check(object, causes);
    }
}

impl View for WorkspaceTypeStrategy {
    /// `status.virtualWorkspaces` (and kcp's `VirtualWorkspaceURLsReady`) from the server's address, when read:
    /// the URL of the initializing and terminating virtual workspace of this type's entry.
    fn to_request(&self, _resource: &ResourceInfo, object: &mut Value) {
        let cluster = object.pointer("/metadata/annotations/kcp.io~1cluster").and_then(Value::as_str).map(str::to_owned);
        let name = object.pointer("/metadata/name").and_then(Value::as_str).map(str::to_owned);
        let (Some(cluster), Some(name), Some(spec)) = (cluster, name, object.get("spec").and_then(Value::as_object)) else { return };
        let urls = virtual_workspaces(&self.base_url.get(), &format!("{cluster}:{name}"), spec);
        if !object.get("status").is_some_and(Value::is_object) {
            object["status"] = json!({});
        }
        let created = object.pointer("/metadata/creationTimestamp").cloned().unwrap_or(Value::Null);
        object["status"]["conditions"] = json!([{"type": "VirtualWorkspaceURLsReady", "status": "True", "lastTransitionTime": created}]);
        object["status"]["virtualWorkspaces"] = json!(urls);
    }
}

/// kcp's name pattern of a WorkspaceType (and of a type reference's name).
pub fn is_type_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_lowercase()
        && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.last().is_some_and(|b| *b != b'-')
}

/// kcp's pattern of a workspace path: `:`-joined DNS labels.
pub fn is_path(path: &str) -> bool {
    !path.is_empty() && path.split(':').all(crate::registry::validate::is_dns_label)
}

/// Checks one `{name, path}` reference at `field`.
pub fn check_reference(reference: &Value, field: &str, causes: &mut Vec<Cause>) {
    let Some(reference) = reference.as_object() else {
        causes.push(Cause::invalid(field, &reference.to_string(), "must be an object with a name"));
        return;
    };
    match reference.get("name").and_then(Value::as_str) {
        Some(name) if is_type_name(name) => {}
        Some(name) => causes.push(Cause::invalid(format!("{field}.name"), name,
            "must match ^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$")),
        None => causes.push(Cause::required(format!("{field}.name"))),
    }
    match reference.get("path") {
        None | Some(Value::Null) => {}
        Some(Value::String(path)) if path.is_empty() || is_path(path) => {}
        Some(path) => causes.push(Cause::invalid(format!("{field}.path"), path.as_str().unwrap_or(&path.to_string()),
            "must be a workspace path: DNS labels joined by ':'")),
    }
}

fn check(object: &Value, causes: &mut Vec<Cause>) {
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    if RESERVED.contains(&name) {
        causes.push(Cause::invalid("metadata.name", name, &format!("{name:?} is a reserved name")));
    } else if !name.is_empty() && !is_type_name(name) {
        causes.push(Cause::invalid("metadata.name", name, "must match ^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$"));
    }
    let Some(spec) = object.get("spec").filter(|s| !s.is_null()) else { return };
    if !spec.is_object() {
        causes.push(Cause::invalid("spec", &spec.to_string(), "must be an object"));
        return;
    }
    for (index, base) in spec.pointer("/extend/with").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let field = format!("spec.extend.with[{index}]");
        check_reference(base, &field, causes);
        let path = base.get("path").and_then(Value::as_str).unwrap_or_default();
        if base.get("name").and_then(Value::as_str) == Some(name) && path.is_empty() {
            causes.push(Cause::invalid(field, name, "a type cannot extend itself"));
        }
    }
    if let Some(default) = spec.get("defaultChildWorkspaceType").filter(|d| !d.is_null()) {
        check_reference(default, "spec.defaultChildWorkspaceType", causes);
    }
    for limit in ["limitAllowedChildren", "limitAllowedParents"] {
        let Some(value) = spec.get(limit).filter(|l| !l.is_null()) else { continue };
        let types = value.get("types").and_then(Value::as_array);
        if value.get("none").and_then(Value::as_bool) == Some(true) && types.is_some_and(|t| !t.is_empty()) {
            causes.push(Cause::invalid(format!("spec.{limit}.types"), "", "must be empty when none is true"));
        }
        for (index, allowed) in types.into_iter().flatten().enumerate() {
            check_reference(allowed, &format!("spec.{limit}.types[{index}]"), causes);
        }
    }
    for permissions in ["initializerPermissions", "terminatorPermissions"] {
        super::roles::check_rules(spec.get(permissions), &format!("spec.{permissions}"), false, causes);
    }
}

//! Workspace (kcp's `tenancy.kcp.io/v1alpha1`, cluster-scoped, short name `ws`): a child workspace, held by its
//! parent. Its content lives in its own logical cluster (`spec.cluster`, a space of its own), made when the
//! Workspace is created (`after_create`: the LogicalCluster, namespaces, the creator's `workspace-admin`
//! binding), then the Workspace is `Ready`. Deleting it deletes its subtree and content first
//! (`controllers::workspace`), held by the `core.kcp.io/logicalcluster` finalizer.
//!
//! The workspaces directly under root are the tenants: in root, a Workspace is a view of the Tenant of its name
//! (one stored truth: the Tenant; `stored_as`), so creating, listing, watching or deleting either shows in the
//! other. `spec.URL` is computed when the object is read, from the tree.
//!
//! Admission (after the strategy completed the object, as kcp's workspace type admission runs): the type must
//! resolve (its `extend` chain without cycles or missing bases), the caller needs `use` on it and every type it
//! extends, the parent's and the child's limits must allow each other, and only a system administrator may set
//! `spec.cluster` or `spec.URL`.

use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use kspaces_authz::rbac::Attributes as RbacAttributes;
use kspaces_authz::{Caller, MASTERS};
use kspaces_storage::SpaceName;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha224};

use super::{kind_schema, string, verbs, Context, Kind, Rules};
use crate::authorization::{self, Authorizer};
use crate::registry::admission::{Admission, AdmissionPhase, Attributes, Operation};
use crate::registry::strategy::{Part, Strategy, View};
use crate::registry::{GenericStore, ResourceInfo, ResourceTable, Subresource};
use crate::status::{ApiError, ApiResult, Cause};
use crate::apis::lifecycle::PHASE_LABEL;
use crate::tenancy::tree::{Node, Tree, ROOT, TENANT_DEFAULT_TYPE, TENANT_TYPE_ANNOTATION};
use crate::tenancy::types::{is_home_type, Resolved, TypeError, TypeName, WorkspaceTypes, USABLE_BY_EVERYONE};
use crate::tenancy::{space, ALL, SYSTEM};
use crate::registry::stored::at;

/// `tenancy.kcp.io/v1alpha1 Workspace`: its row, definition, strategy and type admission.
pub const KIND: Kind = Kind { rows, definitions, rules };

pub const GROUP: &str = "tenancy.kcp.io";
pub const NAME: &str = "Workspace";
/// The OpenAPI definition name of Workspace.
pub const DEFINITION: &str = "io.kcp.tenancy.v1alpha1.Workspace";
/// Holds a Workspace until its subtree and content are gone.
pub const FINALIZER: &str = "core.kcp.io/logicalcluster";
pub use crate::apis::kcp::{base36, base62, OWNER_ANNOTATION};

/// Where the server is reached (`https://host:port`), for `spec.URL`; set once the listener is bound.
#[derive(Debug, Default)]
pub struct BaseUrl(RwLock<String>);

impl BaseUrl {
    pub fn set(&self, url: &str) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = url.trim_end_matches('/').to_owned();
    }

    pub fn get(&self) -> String {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

fn rows() -> Vec<ResourceInfo> {
    vec![ResourceInfo {
        group: GROUP.into(),
        version: "v1alpha1".into(),
        kind: NAME.into(),
        plural: "workspaces".into(),
        singular: "workspace".into(),
        short_names: vec!["ws".into()],
        categories: vec!["kcp".into()],
        namespaced: false,
        subresources: vec![Subresource::Status],
        verbs: verbs(&["create", "delete", "get", "list", "patch", "update", "watch"]),
        definition: Some(DEFINITION.into()),
        system_only: false,
        custom: None,
    }]
}

fn definitions() -> Map<String, Value> {
    let mut definitions = Map::new();
    let reference = json!({"type": "object", "required": ["name"], "properties": {
        "name": string("The name of the WorkspaceType."),
        "path": string("The workspace path holding the WorkspaceType."),
    }});
    definitions.insert(DEFINITION.into(), kind_schema(
        "Workspace defines a generic Kubernetes-cluster-like endpoint, with standard Kubernetes discovery, OpenAPI and \
         resource API endpoints.",
        json!({"type": "object", "description": "WorkspaceSpec holds the desired state of the Workspace.", "properties": {
            "type": reference,
            "location": {"type": "object", "properties": {"selector": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"}}},
            "cluster": string("The logical cluster of the workspace; set by the system."),
            "URL": string("The address of the workspace; set by the system."),
            "mount": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        }}),
        json!({"type": "object", "description": "WorkspaceStatus communicates the observed state of the Workspace.", "properties": {
            "phase": string("Scheduling, Initializing, Ready, Terminating or Deleting."),
            "conditions": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            "initializers": {"type": "array", "items": {"type": "string", "default": ""}},
            "terminators": {"type": "array", "items": {"type": "string", "default": ""}},
        }}),
    ));
    definitions
}

fn rules(context: &Context, rules: &mut Rules) {
    let strategy = Arc::new(WorkspaceStrategy {
        tree: context.tree.clone(),
        types: context.types.clone(),
        resources: context.resources.clone(),
        base_url: context.base_url.clone(),
    });
    rules.strategy(GROUP, NAME, strategy);
    rules.admit(Arc::new(SystemFields));
    rules.admit(Arc::new(WorkspaceAdmission {
        tree: context.tree.clone(),
        types: context.types.clone(),
        authorizer: context.authorizer.clone(),
    }));
}

/// The Workspace kind's rules.
pub struct WorkspaceStrategy {
    tree: Arc<Tree>,
    types: Arc<WorkspaceTypes>,
    resources: ResourceTable,
    base_url: Arc<BaseUrl>,
}

/// A new logical cluster's name: kcp's, 16 base-36 characters of the SHA-224 of 32 random bytes.
pub fn random_cluster_name() -> String {
    use rand::RngCore;
    let mut seed = [0u8; 32];
    rand::rng().fill_bytes(&mut seed);
    base36(&Sha224::digest(seed)).chars().take(16).collect()
}

impl WorkspaceStrategy {
    /// A new workspace's `spec.cluster` (given by a system administrator, or made up) names a logical cluster that
    /// is not there yet: a DNS label that no tenant or workspace has.
    fn check_new_cluster(&self, object: &Value, causes: &mut Vec<Cause>) {
        let Some(cluster) = at(object, "/spec/cluster").filter(|c| !c.is_null()) else { return };
        let Some(name) = cluster.as_str().filter(|c| crate::registry::validate::is_dns_label(c)) else {
            causes.push(Cause::invalid("spec.cluster", &cluster.to_string(), "must be a logical cluster name: a lower case DNS label"));
            return;
        };
        let taken = name == SYSTEM || name == ROOT || SpaceName::new(name).map_or(true, |space| self.tree.cluster(&space).is_some());
        if taken {
            causes.push(Cause::invalid("spec.cluster", name, "logical cluster already exists"));
        }
    }

    /// The type a new workspace in `parent` gets: its own (completed with the path it resolves at), else the
    /// parent type's default child type; with it, the type resolved with everything it extends when it can be.
    fn type_of_new(&self, parent: &SpaceName, object: &Value) -> Option<(TypeName, Option<Resolved>)> {
        let parent = self.tree.cluster(parent)?;
        let (path, name) = match at(object, "/spec/type") {
            Some(given) if !given.is_object() => return None,
            Some(given) => (given.get("path").and_then(Value::as_str).unwrap_or_default().to_owned(),
                given.get("name").and_then(Value::as_str)?.to_owned()),
            None => {
                let parent_type = self.types.of_workspace(&self.tree, &parent).ok()?;
                parent_type.spec.default_child?
            }
        };
        let (found, _) = self.types.find(&self.tree, &parent, &path, &name).ok()?;
        let resolved = self.types.resolve(&self.tree, &parent, &found.path, &found.name).ok();
        Some((found, resolved))
    }
}

#[async_trait]
impl Strategy for WorkspaceStrategy {
    fn view(&self) -> Option<&dyn View> {
        Some(self)
    }

    fn prepare_create(&self, _resource: &ResourceInfo, space: &SpaceName, caller: Option<&Caller>, object: &mut Value) {
        if !object.is_object() {
            return;
        }
        // A spec that is no object is left as written, for `validate` to refuse.
        let mut status = json!({"phase": "Scheduling"});
        if object.get("spec").is_none_or(Value::is_object) {
            if let Some((kind, resolved)) = self.type_of_new(space, object) {
                object["spec"]["type"] = kind.to_json();
                // What the new workspace will wait for, until its LogicalCluster holds the lists (kcp's
                // `spec.initializers`, `spec.terminators`).
                for (field, names) in resolved.iter().flat_map(|r| [("initializers", r.initializers(&self.tree)), ("terminators", r.terminators(&self.tree))]) {
                    if !names.is_empty() && !space.is_system() {
                        status[field] = json!(names);
                    }
                }
                // The exports the new workspace binds, fixed when it is made (its content is made from them).
                let bindings = resolved.map(|r| r.default_bindings()).unwrap_or_default();
                if !bindings.is_empty() && !space.is_system() {
                    let listed: Vec<Value> = bindings.iter().map(|(path, export)| json!({"path": path, "export": export})).collect();
                    let metadata = &mut object["metadata"];
                    if !metadata.get("annotations").is_some_and(Value::is_object) {
                        metadata["annotations"] = json!({});
                    }
                    metadata["annotations"][space::DEFAULT_BINDINGS_ANNOTATION] = json!(Value::Array(listed).to_string());
                }
            }
        }
        let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else { return };
        spec.remove("URL");
        if !space.is_system() {
            spec.entry("cluster").or_insert_with(|| json!(random_cluster_name()));
        }
        object["status"] = status;
        let metadata = &mut object["metadata"];
        let mut finalizers = metadata.get("finalizers").and_then(Value::as_array).cloned().unwrap_or_default();
        if !space.is_system() && !finalizers.iter().any(|f| f == FINALIZER) {
            finalizers.push(json!(FINALIZER));
            metadata["finalizers"] = json!(finalizers);
        }
        if let Some(caller) = caller {
            if !metadata.get("annotations").is_some_and(Value::is_object) {
                metadata["annotations"] = json!({});
            }
            let owner = json!({"username": caller.user.name, "uid": caller.user.uid, "groups": caller.user.groups});
            metadata["annotations"][OWNER_ANNOTATION] = json!(owner.to_string());
        }
        label_phase(object);
    }

    /// `spec.type` and `spec.cluster` never change; the owner stays; the phase label follows the phase.
    fn prepare_update(&self, _resource: &ResourceInfo, _space: &SpaceName, old: &Value, new: &mut Value, part: Part) {
        label_phase(new);
        if part != Part::Main || !new.is_object() {
            return;
        }
        if !new.get("spec").is_some_and(Value::is_object) {
            new["spec"] = json!({});
        }
        for field in ["type", "cluster"] {
            if let Some(value) = at(old, &format!("/spec/{field}")) {
                new["spec"][field] = value.clone();
            }
        }
        if let Some(spec) = new["spec"].as_object_mut() {
            spec.remove("URL");
        }
        let owner = format!("/metadata/annotations/{}", OWNER_ANNOTATION.replace('/', "~1"));
        if let Some(owner) = at(old, &owner).cloned() {
            if !new["metadata"].get("annotations").is_some_and(Value::is_object) {
                new["metadata"]["annotations"] = json!({});
            }
            new["metadata"]["annotations"][OWNER_ANNOTATION] = owner;
        }
    }

    fn validate(&self, _resource: &ResourceInfo, object: &Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
        let name = at(object, "/metadata/name").and_then(Value::as_str).unwrap_or_default();
        if name == ALL || name == SYSTEM || name == "any" {
            causes.push(Cause::invalid("metadata.name", name, &format!("{name:?} is a reserved name")));
        }
        match object.get("spec") {
            Some(spec) if !spec.is_object() => {
                causes.push(Cause::invalid("spec", &spec.to_string(), "must be an object"));
                return;
            }
            _ => {}
        }
        if old.is_none() {
            self.check_new_cluster(object, causes);
        }
        match at(object, "/spec/type") {
            Some(kind) if kind.is_object() => super::workspace_type::check_reference(kind, "spec.type", causes),
            Some(kind) => causes.push(Cause::invalid("spec.type", &kind.to_string(), "must be an object with a name and a path")),
            None => causes.push(Cause { message: "Required value: the workspace's type could not be determined: name one in spec.type, or \
                give the parent's type a defaultChildWorkspaceType".into(), ..Cause::required("spec.type") }),
        }
    }

    /// The Tenant a Workspace in root is written as (a new tenant: Arktos' defaults; an existing one keeps what only
    /// Tenants show).
    fn to_storage(&self, _resource: &ResourceInfo, space: &SpaceName, object: &mut Value, old: Option<&Value>) {
        if space.is_system() {
            *object = tenant_of_workspace(object, old);
        }
    }

    /// The new workspace's logical cluster and content, then `Ready` (a crash in between is completed by the
    /// workspace controller). In root: the tenant's space.
    async fn after_create(&self, registry: &GenericStore, parent: &SpaceName, object: &Value) -> ApiResult<()> {
        let name = at(object, "/metadata/name").and_then(Value::as_str).unwrap_or_default();
        if parent.is_system() {
            return space::initialize(registry, &self.resources, &self.types, &self.tree, name).await;
        }
        space::initialize_workspace(registry, &self.resources, &self.tree, parent, object, space::Initialization::Fresh).await.map(|_waiting| ())
    }
}

impl View for WorkspaceStrategy {
    /// In root, Workspaces are Tenants.
    fn stored_as(&self, _resource: &ResourceInfo, space: &SpaceName) -> Option<Arc<ResourceInfo>> {
        space.is_system().then(|| self.resources.by_kind("", "Tenant").cloned()).flatten()
    }

    /// Root is no child of itself.
    fn visible(&self, _resource: &ResourceInfo, stored: &Value) -> bool {
        !(stored.get("kind").and_then(Value::as_str) == Some("Tenant") && at(stored, "/metadata/name").and_then(Value::as_str) == Some(SYSTEM))
    }

    /// `spec.URL` from the tree; in root, the Workspace a Tenant is.
    fn to_request(&self, _resource: &ResourceInfo, object: &mut Value) {
        if object.get("kind").and_then(Value::as_str) == Some("Tenant") {
            *object = workspace_of_tenant(object);
        }
        let cluster = at(object, "/spec/cluster").and_then(Value::as_str).and_then(|c| SpaceName::new(c).ok());
        if let Some(node) = cluster.and_then(|c| self.tree.cluster(&c)) {
            object["spec"]["URL"] = json!(format!("{}/clusters/{}", self.base_url.get(), node.path));
        }
    }
}

/// Sets kcp's phase label (`tenancy.kcp.io/phase`, so `-l tenancy.kcp.io/phase=Ready` selects) from `status.phase` (nothing when either is missing or malformed: validation speaks).
fn label_phase(object: &mut Value) {
    let Some(phase) = at(object, "/status/phase").and_then(Value::as_str).map(str::to_owned) else { return };
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    let labels = metadata.entry("labels").or_insert_with(|| json!({}));
    if let Some(labels) = labels.as_object_mut() {
        labels.insert(PHASE_LABEL.into(), json!(phase));
    }
}

/// The Workspace a stored Tenant is: its metadata, its type from the annotation, its logical cluster (its own
/// name), and its phase (`Ready` while Active).
pub fn workspace_of_tenant(tenant: &Value) -> Value {
    let mut metadata = tenant.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let annotation_pointer = format!("/annotations/{}", TENANT_TYPE_ANNOTATION.replace('/', "~1"));
    let kind = at(&metadata, &annotation_pointer).and_then(Value::as_str).unwrap_or(TENANT_DEFAULT_TYPE).to_owned();
    if let Some(annotations) = metadata.get_mut("annotations").and_then(Value::as_object_mut) {
        annotations.remove(TENANT_TYPE_ANNOTATION);
        if annotations.is_empty() {
            metadata.as_object_mut().map(|m| m.remove("annotations"));
        }
    }
    let name = metadata.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
    let kind = TypeName::parse(&kind).unwrap_or_else(|| TypeName::new(ROOT, "organization"));
    let terminating = at(tenant, "/status/phase").and_then(Value::as_str) == Some("Terminating");
    let mut workspace = json!({
        "apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": NAME,
        "metadata": metadata,
        "spec": {"type": kind.to_json(), "cluster": name},
        "status": {"phase": if terminating { "Terminating" } else { "Ready" }},
    });
    label_phase(&mut workspace);
    workspace
}

/// The Tenant a Workspace written in root is stored as: its metadata, its type as an annotation, and what only a
/// Tenant has (storage cluster, content finalizer, phase) from the Tenant it replaces or Arktos' defaults.
pub fn tenant_of_workspace(workspace: &Value, old: Option<&Value>) -> Value {
    let mut metadata = workspace.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let kind = crate::tenancy::tree::type_of(workspace);
    // The phase label is the view's (from the Tenant's phase), never a Tenant's label.
    if let Some(labels) = metadata.get_mut("labels").and_then(Value::as_object_mut) {
        labels.remove(PHASE_LABEL);
        if labels.is_empty() {
            metadata.as_object_mut().map(|m| m.remove("labels"));
        }
    }
    if !metadata.get("annotations").is_some_and(Value::is_object) {
        metadata["annotations"] = json!({});
    }
    if kind != TENANT_DEFAULT_TYPE || old.is_some_and(|o| at(o, "/metadata/annotations").is_some_and(|a| a.get(TENANT_TYPE_ANNOTATION).is_some())) {
        metadata["annotations"][TENANT_TYPE_ANNOTATION] = json!(kind);
    }
    if metadata["annotations"].as_object().is_some_and(Map::is_empty) {
        metadata.as_object_mut().map(|m| m.remove("annotations"));
    }
    let spec = old.and_then(|o| o.get("spec")).cloned()
        .unwrap_or_else(|| json!({"storageClusterId": "0", "finalizers": [crate::kinds::tenant::TENANT_FINALIZER]}));
    let status = old.and_then(|o| o.get("status")).cloned().unwrap_or_else(|| json!({"phase": "Active"}));
    json!({"apiVersion": "v1", "kind": "Tenant", "metadata": metadata, "spec": spec, "status": status})
}

/// kcp's workspace type admission, and who may set what only the system sets.
pub struct WorkspaceAdmission {
    tree: Arc<Tree>,
    types: Arc<WorkspaceTypes>,
    authorizer: Arc<Authorizer>,
}

fn forbidden(name: &str, why: &str) -> ApiError {
    ApiError::forbidden_object(GROUP, "workspaces", name, why)
}

#[async_trait]
impl Admission for WorkspaceAdmission {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        resource.is(GROUP, NAME) && operation == Operation::Create
    }

    fn phase(&self) -> AdmissionPhase {
        AdmissionPhase::Validating
    }

    async fn admit(&self, _registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<()> {
        let (Some(object), Some(caller)) = (attributes.object, attributes.caller) else { return Ok(()) };
        let name = attributes.name;
        let parent = self.tree.cluster(attributes.space)
            .ok_or_else(|| ApiError::not_found(GROUP, "workspaces", attributes.space.as_str()))?;
        if parent.deleting {
            return Err(forbidden(name, &format!("unable to create a workspace in {} because it is being deleted", parent.path)));
        }
        // In root a workspace is a tenant, whose space is named after it: not after a nested logical cluster.
        let nested = |node: Node| node.path.matches(':').count() > 1;
        if attributes.space.is_system() && SpaceName::new(name).ok().and_then(|space| self.tree.cluster(&space)).is_some_and(nested) {
            return Err(ApiError::invalid(GROUP, NAME, name, vec![Cause::invalid("metadata.name", name, "a logical cluster of this name already exists")]));
        }
        let kind = at(object, "/spec/type").cloned().unwrap_or(Value::Null);
        let path = kind.get("path").and_then(Value::as_str).unwrap_or_default();
        let type_name = kind.get("name").and_then(Value::as_str).unwrap_or_default();
        // Another tenant's types are as absent to a tenant's users as types that are not there.
        let foreign = |node: Node| caller.tenant.as_deref() != Some(node.tenant.as_str());
        if !caller.system && !path.is_empty() && path != ROOT && self.tree.resolve(path).is_some_and(foreign) {
            return Err(forbidden(name, &format!("workspace type {path}:{type_name} not found")));
        }
        let child = self.types.resolve(&self.tree, &parent, path, type_name).map_err(|err| match err {
            TypeError::NotFound(why) | TypeError::Unusable(why) => forbidden(name, &why),
        })?;
        for (alias, _) in &child.aliases {
            self.check_use(caller, alias).await?;
        }
        let parent_type = self.types.of_workspace(&self.tree, &parent)
            .map_err(|err| forbidden(name, &format!("the parent workspace's type cannot be used: {err}")))?;
        self.types.allowed(&self.tree, &parent, &parent_type, &child).map_err(|why| forbidden(name, &why))?;
        // decisions.md: homes hang from root or from a tenant's workspace, never deeper (the type's parent limit
        // names universal, which nearly every type extends).
        if child.is_a(&[TypeName::new(ROOT, "homeroot")]) && parent.path.matches(':').count() > 1 {
            return Err(forbidden(name, &format!("workspace type root:homeroot is allowed only in root or a tenant's workspace, not in {}", parent.path)));
        }
        // In root, `users` is the system users' home root, never a tenant.
        if attributes.space.is_system() && name == crate::tenancy::HOME_ROOT && !child.is_a(&[TypeName::new(ROOT, "homeroot")]) {
            return Err(ApiError::invalid(GROUP, NAME, name, vec![Cause::invalid("metadata.name", name,
                "\"users\" is reserved in root: root:users holds the system users' home workspaces")]));
        }
        Ok(())
    }
}

/// Only a system administrator (`system:masters` of the system tenant) sets `spec.cluster` and `spec.URL` of a new workspace, or
/// changes `spec.cluster` (checked on the object as written, before the strategy fills them in).
pub struct SystemFields;

#[async_trait]
impl Admission for SystemFields {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        resource.is(GROUP, NAME) && operation != Operation::Delete
    }

    async fn admit(&self, _registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<()> {
        let (Some(object), Some(caller)) = (attributes.object, attributes.caller) else { return Ok(()) };
        // `system:masters` counts only in the system's own credentials, never in a tenant's.
        if caller.system && caller.user.in_group(MASTERS) {
            return Ok(());
        }
        let field = |o: &Value, f: &str| at(o, &format!("/spec/{f}")).filter(|v| !v.is_null()).cloned();
        let refused = match attributes.old {
            None => ["cluster", "URL"].into_iter().find(|f| field(object, f).is_some()),
            Some(old) => ["cluster"].into_iter().find(|f| field(object, f).is_some() && field(object, f) != field(old, f)),
        };
        match refused {
            Some(f) => Err(forbidden(attributes.name, &format!("spec.{f} can only be set by system:masters"))),
            None => Ok(()),
        }
    }
}

impl WorkspaceAdmission {
    /// kcp's `use` check: verb `use` on `workspacetypes/<name>` in the workspace holding the type.
    async fn check_use(&self, caller: &Caller, kind: &TypeName) -> ApiResult<()> {
        if USABLE_BY_EVERYONE.contains(&kind.to_string().as_str()) || (caller.system && is_home_type(kind)) {
            return Ok(());
        }
        let denied = || ApiError::forbidden(format!(
            "unable to use workspace type {}:{}: missing verb='use' permission on workspacetype", kind.path, kind.name));
        let holder = self.tree.resolve(&kind.path).ok_or_else(denied)?;
        let attributes = RbacAttributes::Resource {
            verb: "use".into(),
            group: GROUP.into(),
            resource: "workspacetypes".into(),
            subresource: String::new(),
            name: kind.name.clone(),
            namespace: None,
        };
        // A tenant's users are judged in their own tenant's workspaces; root's types are everyone's to ask about.
        if !caller.system && holder.tenant != caller.tenant.as_deref().unwrap_or_default() {
            return Err(denied());
        }
        let decision = self.authorizer.authorize(caller, &holder.cluster, &attributes).await?;
        if !decision.allowed {
            let _ = authorization::forbidden(&caller.user, &attributes, &decision.reason);
            return Err(denied());
        }
        Ok(())
    }
}

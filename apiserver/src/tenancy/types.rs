//! Workspace types: every WorkspaceType in memory (a primed write observer), and kcp's rules for using them: which
//! type a new workspace gets (its own, or its parent type's `defaultChildWorkspaceType`; a name without a path is
//! looked up in the parent, its ancestors, then root), the types it counts as (itself and every type it extends,
//! transitively; a cycle or a missing base makes it unusable), and the parent/child limits, checked both ways.

use std::collections::{BTreeSet, HashMap};
use std::sync::RwLock;

use kspaces_authz::rbac::PolicyRule;
use kspaces_storage::{Revision, SpaceName};
use serde_json::{json, Value};

use super::tree::{Node, Tree, ROOT};
use crate::registry::observe::{RevisionMap, WriteObserver};
use crate::registry::store::space_of_cluster;
use crate::registry::ResourceInfo;

/// A WorkspaceType by the path of the workspace holding it and its name: `root:universal`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TypeName {
    pub path: String,
    pub name: String,
}

impl TypeName {
    pub fn new(path: &str, name: &str) -> TypeName {
        TypeName { path: path.to_owned(), name: name.to_owned() }
    }

    /// Parses `path:name` (the last segment is the name).
    pub fn parse(text: &str) -> Option<TypeName> {
        let (path, name) = text.rsplit_once(':')?;
        Some(TypeName::new(path, name))
    }

    /// `{"name": ..., "path": ...}`, as `spec.type` holds it.
    pub fn to_json(&self) -> Value {
        json!({"name": self.name, "path": self.path})
    }
}

impl std::fmt::Display for TypeName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.path, self.name)
    }
}

/// What a workspace type says, as far as the tree's rules go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TypeSpec {
    /// `extend.with`, as written (paths may be empty).
    pub extends: Vec<(String, String)>,
    /// `limitAllowedChildren`: `None` unlimited; `Some(empty)` none at all.
    pub children: Option<Vec<(String, String)>>,
    pub parents: Option<Vec<(String, String)>>,
    pub default_child: Option<(String, String)>,
    pub initializer: bool,
    pub terminator: bool,
    /// `initializerPermissions`: what its initializer may do inside a workspace it initializes, through the
    /// initializing virtual workspace (empty: act as the workspace's creator).
    pub initializer_permissions: Vec<PolicyRule>,
    /// `terminatorPermissions`, likewise for the terminating virtual workspace.
    pub terminator_permissions: Vec<PolicyRule>,
    /// `defaultAPIBindings`: the exports, as (path, name), a new workspace of this type binds.
    pub default_bindings: Vec<(String, String)>,
    /// `authenticationConfigurations`: the names of the WorkspaceAuthenticationConfigurations (held beside the
    /// type) whose issuers' tokens admit users into workspaces of this type.
    pub authentication: Vec<String>,
}

fn rules(value: Option<&Value>) -> Vec<PolicyRule> {
    value.and_then(Value::as_array).into_iter().flatten().filter_map(PolicyRule::from_json).collect()
}

fn reference(value: &Value) -> Option<(String, String)> {
    let name = value.get("name").and_then(Value::as_str)?;
    let path = value.get("path").and_then(Value::as_str).unwrap_or_default();
    Some((path.to_owned(), name.to_owned()))
}

fn references(value: Option<&Value>) -> Vec<(String, String)> {
    value.and_then(Value::as_array).into_iter().flatten().filter_map(reference).collect()
}

fn limit(spec: &Value, key: &str) -> Option<Vec<(String, String)>> {
    let limit = spec.get(key).filter(|l| l.is_object())?;
    if limit.get("none").and_then(Value::as_bool) == Some(true) {
        return Some(Vec::new());
    }
    let types = references(limit.get("types"));
    (!types.is_empty()).then_some(types)
}

impl TypeSpec {
    pub fn of(object: &Value) -> TypeSpec {
        let spec = object.get("spec").cloned().unwrap_or_else(|| json!({}));
        TypeSpec {
            extends: references(spec.pointer("/extend/with")),
            children: limit(&spec, "limitAllowedChildren"),
            parents: limit(&spec, "limitAllowedParents"),
            // kcp's CRD defaults the field to `root:universal`; types stored before the default was filled in get it here.
            default_child: spec.get("defaultChildWorkspaceType").and_then(reference).or_else(|| Some((ROOT.to_owned(), "universal".to_owned()))),
            initializer: spec.get("initializer").and_then(Value::as_bool).unwrap_or(false),
            terminator: spec.get("terminator").and_then(Value::as_bool).unwrap_or(false),
            initializer_permissions: rules(spec.get("initializerPermissions")),
            terminator_permissions: rules(spec.get("terminatorPermissions")),
            default_bindings: spec.get("defaultAPIBindings").and_then(Value::as_array).into_iter().flatten().filter_map(|b| {
                let export = b.get("export").and_then(Value::as_str).filter(|e| !e.is_empty())?;
                Some((b.get("path").and_then(Value::as_str).unwrap_or_default().to_owned(), export.to_owned()))
            }).collect(),
            authentication: spec.get("authenticationConfigurations").and_then(Value::as_array).into_iter().flatten()
                .filter_map(|c| c.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()).map(str::to_owned)).collect(),
        }
    }
}

/// Why a type cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeError {
    /// No such type where its reference points.
    NotFound(String),
    /// Its `extend` chain comes back to it, or names a type that does not exist.
    Unusable(String),
}

impl std::fmt::Display for TypeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TypeError::NotFound(why) | TypeError::Unusable(why) => f.write_str(why),
        }
    }
}

/// A type with everything it counts as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub name: TypeName,
    pub spec: TypeSpec,
    /// Itself and every type it extends, transitively, each with its spec.
    pub aliases: Vec<(TypeName, TypeSpec)>,
}

/// kcp's initializer of workspaces whose type has `defaultAPIBindings`: removed once every binding is `Bound`.
pub const API_BINDINGS_INITIALIZER: &str = "system:apibindings";

/// An initializer or terminator as kcp names it: `<logical cluster holding the type>:<type name>` (`root:universal`
/// for root's types; a tenant's `t-a:<name>`; a nested workspace's `<16-character id>:<name>`).
pub fn lifecycle_name(tree: &Tree, kind: &TypeName) -> Option<String> {
    if kind.path == ROOT {
        return Some(format!("{ROOT}:{}", kind.name));
    }
    tree.resolve(&kind.path).map(|holder| format!("{}:{}", holder.cluster, kind.name))
}

/// The logical cluster holding the type an initializer or terminator names, and the type's name; `None` for a
/// name of no such form.
pub fn lifecycle_type(name: &str) -> Option<(SpaceName, String)> {
    let (cluster, kind) = name.rsplit_once(':')?;
    let holder = space_of_cluster(cluster)?;
    (!kind.is_empty()).then(|| (holder, kind.to_owned()))
}

impl Resolved {
    /// The initializers a new workspace of this type waits for: one per type it counts as with `initializer: true`.
    pub fn initializers(&self, tree: &Tree) -> Vec<String> {
        let mut initializers: Vec<String> =
            self.aliases.iter().filter(|(_, spec)| spec.initializer).filter_map(|(kind, _)| lifecycle_name(tree, kind)).collect();
        // kcp's: a type with default bindings holds its workspaces until they are bound (the APIs controller).
        if self.aliases.iter().any(|(_, spec)| !spec.default_bindings.is_empty()) {
            initializers.push(API_BINDINGS_INITIALIZER.to_owned());
        }
        initializers
    }

    /// The terminators a deleted workspace of this type waits for (inherited through `extend.with` as well).
    pub fn terminators(&self, tree: &Tree) -> Vec<String> {
        self.aliases.iter().filter(|(_, spec)| spec.terminator).filter_map(|(kind, _)| lifecycle_name(tree, kind)).collect()
    }

    /// The exports a new workspace of this type binds (`defaultAPIBindings`, inherited through `extend.with`),
    /// as (path, name); an empty path is the workspace holding the type that names it.
    pub fn default_bindings(&self) -> Vec<(String, String)> {
        let mut found: Vec<(String, String)> = Vec::new();
        for (kind, spec) in &self.aliases {
            for (path, export) in &spec.default_bindings {
                let path = if path.is_empty() { kind.path.clone() } else { path.clone() };
                if !found.contains(&(path.clone(), export.clone())) {
                    found.push((path, export.clone()));
                }
            }
        }
        found
    }

    /// True if this type is, or extends, one of `allowed`.
    pub fn is_a(&self, allowed: &[TypeName]) -> bool {
        self.aliases.iter().any(|(alias, _)| allowed.contains(alias))
    }
}

/// Every WorkspaceType, by the logical cluster holding it and its name.
#[derive(Default)]
pub struct WorkspaceTypes {
    types: RwLock<RevisionMap<(SpaceName, String), TypeSpec>>,
}

impl std::fmt::Debug for WorkspaceTypes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkspaceTypes").finish_non_exhaustive()
    }
}

impl WorkspaceTypes {
    /// The type `name` held by the logical cluster `cluster`.
    pub fn get(&self, cluster: &SpaceName, name: &str) -> Option<TypeSpec> {
        self.types.read().unwrap_or_else(|e| e.into_inner()).get(&(cluster.clone(), name.to_owned())).cloned()
    }

    /// Records a WorkspaceType as of `revision` (`None`: gone).
    pub fn apply(&self, cluster: &SpaceName, name: &str, spec: Option<TypeSpec>, revision: Revision) {
        self.types.write().unwrap_or_else(|e| e.into_inner()).apply((cluster.clone(), name.to_owned()), spec, revision);
    }

    /// Finds the type `(path, name)` as seen from the workspace `from`: an empty path looks in `from`, then its
    /// ancestors, then root.
    pub fn find(&self, tree: &Tree, from: &Node, path: &str, name: &str) -> Result<(TypeName, TypeSpec), TypeError> {
        if !path.is_empty() {
            let holder = tree.resolve(path).ok_or_else(|| TypeError::NotFound(format!("workspace type {path}:{name} not found")))?;
            let spec = self.get(&holder.cluster, name).ok_or_else(|| TypeError::NotFound(format!("workspace type {path}:{name} not found")))?;
            return Ok((TypeName::new(path, name), spec));
        }
        let mut candidate = Some(from.path.clone());
        while let Some(path) = candidate {
            if let Some(holder) = tree.resolve(&path) {
                if let Some(spec) = self.get(&holder.cluster, name) {
                    return Ok((TypeName::new(&path, name), spec));
                }
            }
            candidate = path.rsplit_once(':').map(|(parent, _)| parent.to_owned());
        }
        Err(TypeError::NotFound(format!("workspace type {name:?} not found in {} or its ancestors", from.path)))
    }

    /// The type `(path, name)` with every type it extends (from `from`'s point of view for empty paths).
    pub fn resolve(&self, tree: &Tree, from: &Node, path: &str, name: &str) -> Result<Resolved, TypeError> {
        let (type_name, spec) = self.find(tree, from, path, name)?;
        let mut aliases = vec![(type_name.clone(), spec.clone())];
        let mut seen = BTreeSet::from([type_name.clone()]);
        let mut pending: Vec<(TypeName, TypeSpec)> = vec![(type_name.clone(), spec.clone())];
        while let Some((current, current_spec)) = pending.pop() {
            let holder = tree.resolve(&current.path).unwrap_or_else(|| from.clone());
            for (base_path, base_name) in &current_spec.extends {
                let (base, base_spec) = self.find(tree, &holder, base_path, base_name).map_err(|err| {
                    TypeError::Unusable(format!("workspace type {type_name} cannot be used: {current} extends {err}"))
                })?;
                if base == type_name || !seen.insert(base.clone()) {
                    if base == type_name {
                        return Err(TypeError::Unusable(format!("workspace type {type_name} cannot be used: its extension chain has a cycle")));
                    }
                    continue;
                }
                aliases.push((base.clone(), base_spec.clone()));
                pending.push((base, base_spec));
            }
        }
        Ok(Resolved { name: type_name, spec, aliases })
    }

    /// The terminators a tenant (a workspace in root) of type `kind` (`root:<name>`) waits for when deleted; none
    /// for a type that does not resolve.
    pub fn tenant_terminators(&self, tree: &Tree, kind: &str) -> Vec<String> {
        let Some(kind) = TypeName::parse(kind) else { return Vec::new() };
        let Some(root) = tree.resolve(ROOT) else { return Vec::new() };
        self.resolve(tree, &root, &kind.path, &kind.name).map(|resolved| resolved.terminators(tree)).unwrap_or_default()
    }

    /// The type of the workspace `node` itself (`root:root` for root).
    pub fn of_workspace(&self, tree: &Tree, node: &Node) -> Result<Resolved, TypeError> {
        let kind = TypeName::parse(&node.kind).unwrap_or_else(|| TypeName::new(ROOT, "universal"));
        let root = tree.resolve(ROOT).unwrap_or_else(|| node.clone());
        self.resolve(tree, &root, &kind.path, &kind.name)
    }

    /// Whether a child of type `child` may live in a parent of type `parent`: the parent's types must allow the
    /// child (if any limits its children) and the child's types must allow the parent (if any limits its parents).
    pub fn allowed(&self, tree: &Tree, from: &Node, parent: &Resolved, child: &Resolved) -> Result<(), String> {
        for (alias, spec) in &parent.aliases {
            if let Some(children) = &spec.children {
                let allowed = self.names(tree, from, children);
                if !child.is_a(&allowed) {
                    return Err(format!("workspace type {} does not allow children of type {}", alias, child.name));
                }
            }
        }
        for (alias, spec) in &child.aliases {
            if let Some(parents) = &spec.parents {
                let allowed = self.names(tree, from, parents);
                if !parent.is_a(&allowed) {
                    return Err(format!("workspace type {} does not allow parents of type {}", alias, parent.name));
                }
            }
        }
        Ok(())
    }

    /// The types `references` name, resolved from `from` (references that resolve to nothing are left out).
    fn names(&self, tree: &Tree, from: &Node, references: &[(String, String)]) -> Vec<TypeName> {
        references.iter().filter_map(|(path, name)| self.find(tree, from, path, name).ok().map(|(n, _)| n)).collect()
    }
}

impl WriteObserver for WorkspaceTypes {
    fn follows(&self) -> &[(&'static str, &'static str)] {
        &[("tenancy.kcp.io", "WorkspaceType")]
    }

    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision) {
        if resource.is("tenancy.kcp.io", "WorkspaceType") {
            self.apply(space, name, object.map(TypeSpec::of), revision);
        }
    }

    fn holds(&self, resource: &ResourceInfo) -> Vec<(SpaceName, String)> {
        match resource.is("tenancy.kcp.io", "WorkspaceType") {
            true => self.types.read().unwrap_or_else(|e| e.into_inner()).keys().cloned().collect(),
            false => Vec::new(),
        }
    }
}

/// The built-in types root holds, with the parent and child limits of the seed documents: `root` (a singleton),
/// `universal` (no limits), `organization` (only under root), `team` (only under an organization), `homeroot`
/// (under root, or under a tenant's workspace, which kspaces reads as the seed's root; only homebuckets below),
/// `homebucket` (under a homeroot or a homebucket; homebuckets and homes below) and `home` (only under a
/// homebucket).
pub fn builtin_types() -> Vec<Value> {
    let reference = |name: &str| json!({"name": name, "path": ROOT});
    let universal = json!({"with": [reference("universal")]});
    let types = [
        ("root", json!({"extend": universal, "limitAllowedParents": {"none": true}, "defaultChildWorkspaceType": reference("organization")})),
        ("universal", json!({})),
        ("organization", json!({"extend": universal, "limitAllowedParents": {"types": [reference("root")]},
            "defaultChildWorkspaceType": reference("universal")})),
        ("team", json!({"extend": universal, "limitAllowedParents": {"types": [reference("organization")]},
            "defaultChildWorkspaceType": reference("universal")})),
        ("homeroot", json!({"limitAllowedParents": {"types": [reference("root"), reference("organization"), reference("universal")]},
            "limitAllowedChildren": {"types": [reference("homebucket")]}, "defaultChildWorkspaceType": reference("homebucket")})),
        ("homebucket", json!({"limitAllowedParents": {"types": [reference("homeroot"), reference("homebucket")]},
            "limitAllowedChildren": {"types": [reference("homebucket"), reference("home")]}})),
        ("home", json!({"extend": universal, "limitAllowedParents": {"types": [reference("homebucket")]},
            "defaultChildWorkspaceType": reference("universal")})),
    ];
    types
        .into_iter()
        .map(|(name, spec)| json!({
            "apiVersion": "tenancy.kcp.io/v1alpha1",
            "kind": "WorkspaceType",
            "metadata": {"name": name, "annotations": {"bootstrap.kcp.io/create-only": "true"}},
            "spec": spec,
        }))
        .collect()
}

/// The types every authenticated user may `use` (kcp's `system:kcp:universal-workspacetype-use`).
pub const USABLE_BY_EVERYONE: [&str; 3] = ["root:universal", "root:organization", "root:team"];

/// The types the server itself may use for users' homes.
pub fn is_home_type(name: &TypeName) -> bool {
    name.path == ROOT && matches!(name.name.as_str(), "homeroot" | "homebucket" | "home")
}

/// Every type root holds, by name (for the tests and the benchmarks).
pub fn builtin_specs() -> HashMap<String, TypeSpec> {
    builtin_types().iter().map(|t| (t["metadata"]["name"].as_str().unwrap_or_default().to_owned(), TypeSpec::of(t))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::super::tree::Edge;

    fn space(name: &str) -> SpaceName {
        SpaceName::new(name).unwrap_or_else(|e| panic!("{e}"))
    }

    /// root, tenant t (an organization) holding a custom type, and its team workspace.
    fn world() -> (Tree, WorkspaceTypes) {
        let tree = Tree::default();
        let edge = |cluster: &str, kind: &str| Some(Edge { cluster: space(cluster), kind: kind.into(), phase: "Ready".into(), deleting: false });
        tree.apply(&SpaceName::system(), "t", edge("t", "root:organization"), Revision(1));
        tree.apply(&space("t"), "dev", edge("c1", "root:team"), Revision(2));
        let types = WorkspaceTypes::default();
        for (i, (name, spec)) in builtin_specs().into_iter().enumerate() {
            types.apply(&SpaceName::system(), &name, Some(spec), Revision(10 + i as u64));
        }
        let custom = |extends: &[(&str, &str)]| TypeSpec { extends: extends.iter().map(|(p, n)| (p.to_string(), n.to_string())).collect(), ..TypeSpec::default() };
        types.apply(&space("t"), "analytics", Some(custom(&[("", "team")])), Revision(30));
        types.apply(&space("t"), "loop-a", Some(custom(&[("", "loop-b")])), Revision(31));
        types.apply(&space("t"), "loop-b", Some(custom(&[("", "loop-a")])), Revision(32));
        types.apply(&space("t"), "orphan", Some(custom(&[("root:t", "missing")])), Revision(33));
        (tree, types)
    }

    #[test]
    fn types_resolve_through_ancestors_and_extensions() {
        let (tree, types) = world();
        let dev = tree.resolve("root:t:dev").unwrap_or_else(|| panic!("dev"));
        let analytics = types.resolve(&tree, &dev, "", "analytics").unwrap_or_else(|e| panic!("{e}"));
        let aliases: Vec<String> = analytics.aliases.iter().map(|(n, _)| n.to_string()).collect();
        assert_eq!(aliases, ["root:t:analytics", "root:team", "root:universal"]);
        assert!(matches!(types.resolve(&tree, &dev, "", "loop-a"), Err(TypeError::Unusable(why)) if why.contains("cycle")));
        assert!(matches!(types.resolve(&tree, &dev, "", "orphan"), Err(TypeError::Unusable(why)) if why.contains("not found")));
        assert!(matches!(types.resolve(&tree, &dev, "", "nope"), Err(TypeError::NotFound(_))));
    }

    #[test]
    fn limits_are_checked_both_ways() {
        let (tree, types) = world();
        let root = tree.resolve("root").unwrap_or_else(|| panic!("root"));
        let t = tree.resolve("root:t").unwrap_or_else(|| panic!("t"));
        let kind = |from: &Node, name: &str| types.resolve(&tree, from, "root", name).unwrap_or_else(|e| panic!("{e}"));
        let check = |parent: &str, child: &str| {
            let parent = kind(&root, parent);
            types.allowed(&tree, &t, &parent, &kind(&root, child)).map_err(|e| e.split(':').next().unwrap_or_default().to_owned())
        };
        assert_eq!(check("root", "organization"), Ok(()));
        assert_eq!(check("organization", "team"), Ok(()));
        assert_eq!(check("organization", "homeroot"), Ok(()), "a tenant may hold homes");
        assert!(check("universal", "team").is_err(), "a team needs an organization");
        assert!(check("organization", "organization").is_err(), "organizations live under root only");
        assert!(check("homeroot", "universal").is_err(), "homeroot holds only buckets");
        assert_eq!(check("homebucket", "home"), Ok(()));
        assert!(check("root", "home").is_err());
        assert!(check("universal", "root").is_err(), "root has no parent");
    }
}

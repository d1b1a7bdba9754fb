//! `Tree`: the workspace tree in memory: every logical cluster with its parent, its name there, its type and its
//! phase, so that a path (`root:t-a:team:dev`) or a logical cluster name resolves without a storage read, and
//! every space knows its tenant (the workspace directly under root at the top of its path).
//!
//! Fed like every cache (primed, then told of every durable write): a Tenant is the workspace of that name under
//! root (its logical cluster has the tenant's name); a Workspace object in space P is a child of P, its logical
//! cluster is `spec.cluster`. Edges are kept by (parent, name) in a `RevisionMap`, so news observed out of order
//! never moves the tree backwards; a path is resolved by walking from root one name at a time.

use std::collections::HashMap;
use std::sync::RwLock;

use kspaces_storage::{Revision, SpaceName};
use serde_json::Value;

use crate::registry::observe::{RevisionMap, WriteObserver};
use crate::registry::{is_deleting, ResourceInfo};

/// The path of the system space.
pub const ROOT: &str = "root";
/// The annotation a Tenant keeps its workspace type in (a Tenant is the workspace of its name under root).
pub const TENANT_TYPE_ANNOTATION: &str = "tenancy.kspaces.io/workspace-type";
/// The type of tenants that name none (tenants made through `/api/v1/tenants`).
pub const TENANT_DEFAULT_TYPE: &str = "root:organization";

/// One workspace, as its parent holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    /// Its logical cluster (the space its content lives in).
    pub cluster: SpaceName,
    /// Its type, `<path>:<name>`.
    pub kind: String,
    /// `status.phase`.
    pub phase: String,
    pub deleting: bool,
}

/// One resolved workspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub cluster: SpaceName,
    /// `root:a:b`.
    pub path: String,
    /// The tenant at the top of its path (`system` for root and the system workspaces).
    pub tenant: String,
    /// Its type, `<path>:<name>` (`root:root` for root).
    pub kind: String,
    pub phase: String,
    pub deleting: bool,
}

#[derive(Default)]
struct Inner {
    /// Children by (parent cluster, name).
    edges: RevisionMap<(SpaceName, String), Edge>,
    /// Each live cluster's parent and name there.
    parents: HashMap<SpaceName, (SpaceName, String)>,
}

/// The workspace tree.
#[derive(Default)]
pub struct Tree {
    inner: RwLock<Inner>,
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tree").finish_non_exhaustive()
    }
}

impl Inner {
    fn child(&self, parent: &SpaceName, name: &str) -> Option<&Edge> {
        // A borrowed (SpaceName, String) key would need an allocation; the map is keyed by owned pairs.
        self.edges.get(&(parent.clone(), name.to_owned()))
    }

    /// The names from root down to `cluster`, or `None` if it hangs from nothing known.
    fn names(&self, cluster: &SpaceName) -> Option<Vec<&str>> {
        let mut names = Vec::new();
        let mut current = cluster;
        while !current.is_system() {
            let (parent, name) = self.parents.get(current)?;
            names.push(name.as_str());
            current = parent;
            if names.len() > 64 {
                return None;
            }
        }
        names.reverse();
        Some(names)
    }
}

impl Tree {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Records the workspace `name` under `parent` as of `revision` (`None`: gone).
    pub fn apply(&self, parent: &SpaceName, name: &str, edge: Option<Edge>, revision: Revision) {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let key = (parent.clone(), name.to_owned());
        let before = inner.edges.get(&key).map(|e| e.cluster.clone());
        let after = edge.as_ref().map(|e| e.cluster.clone());
        if !inner.edges.apply(key, edge, revision) {
            return;
        }
        if let Some(cluster) = before.filter(|b| Some(b) != after.as_ref()) {
            inner.parents.remove(&cluster);
        }
        if let Some(cluster) = after {
            inner.parents.insert(cluster, (parent.clone(), name.to_owned()));
        }
    }

    /// The workspace at `path` (`root`, `root:a:b`).
    pub fn resolve(&self, path: &str) -> Option<Node> {
        let mut names = path.split(':');
        if names.next() != Some(ROOT) {
            return None;
        }
        let inner = self.read();
        let mut cluster = SpaceName::system();
        let mut tenant = None;
        let mut edge = None;
        for name in names {
            let child = inner.child(&cluster, name)?;
            tenant.get_or_insert_with(|| name.to_owned());
            cluster = child.cluster.clone();
            edge = Some(child);
        }
        Some(node(cluster, path.to_owned(), tenant, edge))
    }

    /// The workspace whose logical cluster is `cluster` (root for the system space).
    pub fn cluster(&self, cluster: &SpaceName) -> Option<Node> {
        let inner = self.read();
        let names = inner.names(cluster)?;
        let path = std::iter::once(ROOT).chain(names.iter().copied()).collect::<Vec<_>>().join(":");
        let tenant = names.first().map(|t| t.to_string());
        let edge = match inner.parents.get(cluster) {
            Some((parent, name)) => inner.child(parent, name),
            None => None,
        };
        Some(node(cluster.clone(), path, tenant, edge))
    }

    /// The tenant a space belongs to: the workspace directly under root at the top of its path. Spaces the tree
    /// does not hold (tenant spaces as they are made, `system:*` workspaces) are their own name's.
    pub fn tenant_of(&self, space: &SpaceName) -> String {
        if space.is_system() || space.as_str().starts_with("system:") {
            return "system".to_owned();
        }
        let inner = self.read();
        // Up to the workspace whose parent is root, without collecting the path.
        let mut current = space;
        for _ in 0..64 {
            match inner.parents.get(current) {
                Some((parent, name)) if parent.is_system() => return name.clone(),
                Some((parent, _)) => current = parent,
                None => break,
            }
        }
        space.as_str().to_owned()
    }

    /// The children of `cluster`: name, logical cluster, type and phase.
    pub fn children(&self, cluster: &SpaceName) -> Vec<(String, Edge)> {
        let inner = self.read();
        let mut children: Vec<(String, Edge)> = inner
            .edges
            .iter()
            .filter(|((parent, _), _)| parent == cluster)
            .map(|((_, name), edge)| (name.clone(), edge.clone()))
            .collect();
        children.sort_by(|a, b| a.0.cmp(&b.0));
        children
    }

    /// How many workspaces the tree holds.
    pub fn len(&self) -> usize {
        self.read().parents.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn node(cluster: SpaceName, path: String, tenant: Option<String>, edge: Option<&Edge>) -> Node {
    Node {
        tenant: tenant.unwrap_or_else(|| "system".to_owned()),
        kind: edge.map_or_else(|| "root:root".to_owned(), |e| e.kind.clone()),
        phase: edge.map_or_else(|| "Ready".to_owned(), |e| e.phase.clone()),
        deleting: edge.is_some_and(|e| e.deleting),
        cluster,
        path,
    }
}

/// The workspace type a Workspace's `spec.type` names, as `<path>:<name>`.
pub fn type_of(workspace: &Value) -> String {
    let name = workspace.pointer("/spec/type/name").and_then(Value::as_str).unwrap_or("universal");
    let path = workspace.pointer("/spec/type/path").and_then(Value::as_str).filter(|p| !p.is_empty()).unwrap_or(ROOT);
    format!("{path}:{name}")
}

/// The edge a stored Tenant or Workspace is.
fn edge(resource: &ResourceInfo, name: &str, object: &Value) -> Option<Edge> {
    if resource.is("", "Tenant") {
        let kind = object.pointer(&format!("/metadata/annotations/{}", TENANT_TYPE_ANNOTATION.replace('/', "~1")))
            .and_then(Value::as_str).unwrap_or(TENANT_DEFAULT_TYPE).to_owned();
        let phase = object.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Active");
        let phase = if phase == "Terminating" { "Terminating" } else { "Ready" }.to_owned();
        return Some(Edge { cluster: SpaceName::new(name).ok()?, kind, phase, deleting: is_deleting(object) });
    }
    let cluster = object.pointer("/spec/cluster").and_then(Value::as_str)?;
    Some(Edge {
        cluster: SpaceName::new(cluster).ok()?,
        kind: type_of(object),
        phase: object.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Scheduling").to_owned(),
        deleting: is_deleting(object),
    })
}

impl WriteObserver for Tree {
    fn follows(&self) -> &[(&'static str, &'static str)] {
        &[("", "Tenant"), ("tenancy.kcp.io", "Workspace")]
    }

    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision) {
        let parent = if resource.is("", "Tenant") {
            if name == "system" {
                return;
            }
            SpaceName::system()
        } else if resource.is("tenancy.kcp.io", "Workspace") {
            space.clone()
        } else {
            return;
        };
        self.apply(&parent, name, object.and_then(|object| edge(resource, name, object)), revision);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space(name: &str) -> SpaceName {
        SpaceName::new(name).unwrap_or_else(|e| panic!("{e}"))
    }

    fn edge(cluster: &str) -> Option<Edge> {
        Some(Edge { cluster: space(cluster), kind: "root:universal".into(), phase: "Ready".into(), deleting: false })
    }

    #[test]
    fn paths_and_clusters_resolve_both_ways() {
        let tree = Tree::default();
        tree.apply(&SpaceName::system(), "t-a", edge("t-a"), Revision(1));
        tree.apply(&space("t-a"), "team", edge("x1"), Revision(2));
        tree.apply(&space("x1"), "dev", edge("x2"), Revision(3));
        let dev = tree.resolve("root:t-a:team:dev").unwrap_or_else(|| panic!("resolves"));
        assert_eq!((dev.cluster.as_str(), dev.tenant.as_str()), ("x2", "t-a"));
        assert_eq!(tree.cluster(&space("x2")).map(|n| n.path), Some("root:t-a:team:dev".to_owned()));
        assert_eq!(tree.resolve("root").map(|n| (n.cluster, n.tenant)), Some((SpaceName::system(), "system".to_owned())));
        assert_eq!(tree.tenant_of(&space("x2")), "t-a");
        assert!(tree.resolve("root:t-a:nope").is_none() && tree.resolve("t-a").is_none());
        // A late, older write does not undo a delete; the subtree below a deleted edge no longer resolves.
        tree.apply(&space("t-a"), "team", None, Revision(5));
        tree.apply(&space("t-a"), "team", edge("x1"), Revision(4));
        assert!(tree.resolve("root:t-a:team:dev").is_none());
        assert!(tree.cluster(&space("x2")).is_none(), "x2 hangs from nothing known");
        assert_eq!(tree.children(&space("t-a")), vec![]);
    }
}

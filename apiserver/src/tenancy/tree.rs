//! `Tree`: the workspace tree in memory: every logical cluster with its parent, its name there, its type and its
//! phase, so that a path (`root:t-a:team:dev`) or a logical cluster name resolves without a storage read, and
//! every space knows its tenant (the workspace directly under root at the top of its path).
//!
//! Fed like every cache (primed, then told of every durable write): a Tenant is the workspace of that name under
//! root (its logical cluster has the tenant's name); a Workspace object in space P is a child of P, its logical
//! cluster is `spec.cluster`. Edges are kept by (parent, name) in a `RevisionMap`, so news observed out of order
//! never moves the tree backwards; a path is resolved by walking from root one name at a time. Every name is kept
//! inline (`CompactString`) and the maps hash with foldhash: a level of the walk costs one lookup that allocates
//! nothing and reads nothing outside the map (a depth-5 path in about 1 µs among 100,000 workspaces).

use std::collections::HashMap;
use std::sync::RwLock;

use compact_str::CompactString;
use kspaces_storage::{Revision, SpaceName};
use serde_json::Value;

use crate::registry::observe::{RevisionMap, WriteObserver};
use crate::registry::{is_deleting, ResourceInfo};
use crate::registry::stored::at;

/// The path of the system space.
pub const ROOT: &str = "root";
/// The annotation a Tenant keeps its workspace type in (a Tenant is the workspace of its name under root).
pub const TENANT_TYPE_ANNOTATION: &str = "tenancy.kspaces.io/workspace-type";
/// The type of tenants that name none (tenants made through `/api/v1/tenants`).
pub const TENANT_DEFAULT_TYPE: &str = "root:organization";
/// The type of root's workspace holding system users' homes (`root:users`): stored as a Tenant like every
/// workspace of root, but no tenant (no Tenant view, no admin, no credential names it).
pub const HOME_ROOT_TYPE: &str = "root:homeroot";

/// Whether a stored Tenant is root's home root, not a tenant.
pub fn is_home_root(tenant: &Value) -> bool {
    at(tenant, &format!("/metadata/annotations/{}", TENANT_TYPE_ANNOTATION.replace('/', "~1"))).and_then(Value::as_str) == Some(HOME_ROOT_TYPE)
}

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

/// A logical cluster or workspace name as the tree keeps it: inline up to 24 bytes (a 16-character logical cluster
/// name, a workspace name), so a lookup neither allocates a key nor follows a pointer to compare one.
type Name = CompactString;

/// One edge as the tree stores it, every field inline (in the map's own memory, so the walk down and the answer
/// touch nothing else).
struct Stored {
    cluster: Name,
    kind: Name,
    phase: Name,
    deleting: bool,
}

impl Stored {
    fn of(edge: &Edge) -> Stored {
        Stored { cluster: Name::new(edge.cluster.as_str()), kind: Name::new(&edge.kind), phase: Name::new(&edge.phase), deleting: edge.deleting }
    }

    fn space(&self) -> Option<SpaceName> {
        SpaceName::new(self.cluster.as_str()).ok()
    }

    fn edge(&self) -> Option<Edge> {
        Some(Edge { cluster: self.space()?, kind: self.kind.to_string(), phase: self.phase.to_string(), deleting: self.deleting })
    }
}

/// The maps' hasher: foldhash, seeded per map (every `/clusters/...` request walks them, one lookup per level).
type Hasher = foldhash::quality::RandomState;

#[derive(Default)]
struct Inner {
    /// Children by (parent cluster, name).
    edges: RevisionMap<(Name, Name), Stored, Hasher>,
    /// Each live cluster's parent and name there.
    parents: HashMap<Name, (Name, Name), Hasher>,
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

/// The system space's name, as the tree keys root.
const SYSTEM_SPACE: &str = "system";

impl Inner {
    fn child(&self, parent: &str, name: &str) -> Option<&Stored> {
        self.edges.get(&(Name::new(parent), Name::new(name)))
    }

    /// The names from root down to `cluster`, or `None` if it hangs from nothing known.
    fn names<'a>(&'a self, cluster: &'a str) -> Option<Vec<&'a str>> {
        let mut names = Vec::new();
        let mut current = cluster;
        while current != SYSTEM_SPACE {
            let (parent, name) = self.parents.get(current)?;
            names.push(name.as_str());
            current = parent.as_str();
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
        let key = (Name::new(parent.as_str()), Name::new(name));
        let before = inner.edges.get(&key).map(|e| e.cluster.clone());
        let after = edge.as_ref().map(|e| Name::new(e.cluster.as_str()));
        let stored = edge.as_ref().map(Stored::of);
        if !inner.edges.apply(key.clone(), stored, revision) {
            return;
        }
        if let Some(cluster) = before.filter(|b| Some(b) != after.as_ref()) {
            inner.parents.remove(&cluster);
        }
        if let Some(cluster) = after {
            inner.parents.insert(cluster, key);
        }
    }

    /// The workspace at `path` (`root`, `root:a:b`).
    pub fn resolve(&self, path: &str) -> Option<Node> {
        let mut names = path.split(':');
        if names.next() != Some(ROOT) {
            return None;
        }
        let inner = self.read();
        let mut cluster = SYSTEM_SPACE;
        let mut tenant = None;
        let mut last: Option<&Stored> = None;
        for name in names {
            let child = inner.child(cluster, name)?;
            tenant.get_or_insert(name);
            cluster = child.cluster.as_str();
            last = Some(child);
        }
        let cluster = match last {
            Some(stored) => stored.space()?,
            None => SpaceName::system(),
        };
        Some(node(cluster, path.to_owned(), tenant.map(str::to_owned), last))
    }

    /// The workspace whose logical cluster is `cluster` (root for the system space).
    pub fn cluster(&self, cluster: &SpaceName) -> Option<Node> {
        let inner = self.read();
        let names = inner.names(cluster.as_str())?;
        let path = std::iter::once(ROOT).chain(names.iter().copied()).collect::<Vec<_>>().join(":");
        let tenant = names.first().map(|t| t.to_string());
        let stored = match inner.parents.get(cluster.as_str()) {
            Some((parent, name)) => inner.child(parent, name),
            None => None,
        };
        Some(node(cluster.clone(), path, tenant, stored))
    }

    /// The tenant a space belongs to: the workspace directly under root at the top of its path. Spaces the tree
    /// does not hold (tenant spaces as they are made, `system:*` workspaces) are their own name's.
    pub fn tenant_of(&self, space: &SpaceName) -> String {
        if space.is_system() || space.as_str().starts_with("system:") {
            return "system".to_owned();
        }
        let inner = self.read();
        // Up to the workspace whose parent is root, without collecting the path.
        let mut current = space.as_str();
        for _ in 0..64 {
            match inner.parents.get(current) {
                Some((parent, name)) if parent == SYSTEM_SPACE => return name.to_string(),
                Some((parent, _)) => current = parent.as_str(),
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
            .filter(|((parent, _), _)| parent == cluster.as_str())
            .filter_map(|((_, name), stored)| Some((name.to_string(), stored.edge()?)))
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

fn node(cluster: SpaceName, path: String, tenant: Option<String>, edge: Option<&Stored>) -> Node {
    Node {
        tenant: tenant.unwrap_or_else(|| "system".to_owned()),
        kind: edge.map_or_else(|| "root:root".to_owned(), |e| e.kind.to_string()),
        phase: edge.map_or_else(|| "Ready".to_owned(), |e| e.phase.to_string()),
        deleting: edge.is_some_and(|e| e.deleting),
        cluster,
        path,
    }
}

/// The workspace type a Workspace's `spec.type` names, as `<path>:<name>`.
pub fn type_of(workspace: &Value) -> String {
    let name = at(workspace, "/spec/type/name").and_then(Value::as_str).unwrap_or("universal");
    let path = at(workspace, "/spec/type/path").and_then(Value::as_str).filter(|p| !p.is_empty()).unwrap_or(ROOT);
    format!("{path}:{name}")
}

/// The edge a stored Tenant or Workspace is.
fn edge(resource: &ResourceInfo, name: &str, object: &Value) -> Option<Edge> {
    if resource.is("", "Tenant") {
        let kind = at(object, &format!("/metadata/annotations/{}", TENANT_TYPE_ANNOTATION.replace('/', "~1")))
            .and_then(Value::as_str).unwrap_or(TENANT_DEFAULT_TYPE).to_owned();
        let phase = at(object, "/status/phase").and_then(Value::as_str).unwrap_or("Active");
        let phase = if phase == "Terminating" { "Terminating" } else { "Ready" }.to_owned();
        return Some(Edge { cluster: SpaceName::new(name).ok()?, kind, phase, deleting: is_deleting(object) });
    }
    let cluster = at(object, "/spec/cluster").and_then(Value::as_str)?;
    Some(Edge {
        cluster: SpaceName::new(cluster).ok()?,
        kind: type_of(object),
        phase: at(object, "/status/phase").and_then(Value::as_str).unwrap_or("Scheduling").to_owned(),
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

    /// Tenants are root's children; Workspaces are stored in their parents' spaces.
    fn holds(&self, resource: &ResourceInfo) -> Vec<(SpaceName, String)> {
        let tenants = resource.is("", "Tenant");
        if !tenants && !resource.is("tenancy.kcp.io", "Workspace") {
            return Vec::new();
        }
        let inner = self.read();
        let held = inner.edges.keys().filter(|(parent, _)| (parent.as_str() == SYSTEM_SPACE) == tenants);
        held.filter_map(|(parent, name)| Some((SpaceName::new(parent.as_str()).ok()?, name.to_string()))).collect()
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

//! The collector's in-memory graph (pure), per space: every object that has ownerReferences (by uid, with where it
//! lives and which owners it names), each owner uid's dependents, and the owners waiting on the collector (being
//! deleted with the `orphan` or `foregroundDeletion` finalizer). Objects without ownerReferences are not held, so
//! memory follows the number of dependents, not of objects.
//!
//! Every change returns the work it causes (see `queue::Work`), as kube's graph builder enqueues items.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use kspaces_storage::{ApiIdentity, SpaceName};
use serde_json::Value;

use super::classify::references;
use super::queue::Work;
use crate::registry::deletion::{self, FOREGROUND_FINALIZER, ORPHAN_FINALIZER};

/// An object's uid. Server-made uids are lowercase hyphenated UUIDs, held as 16 bytes; anything else (a client's
/// made-up owner uid) as text. Equal exactly when the strings are equal.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Uid {
    Uuid(u128),
    Other(Box<str>),
}

impl Uid {
    pub fn parse(text: &str) -> Uid {
        let mut canonical = [0u8; uuid::fmt::Hyphenated::LENGTH];
        match uuid::Uuid::try_parse(text) {
            Ok(parsed) if parsed.as_hyphenated().encode_lower(&mut canonical).as_bytes() == text.as_bytes() => Uid::Uuid(parsed.as_u128()),
            _ => Uid::Other(text.into()),
        }
    }
}

impl fmt::Display for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Uid::Uuid(value) => write!(f, "{}", uuid::Uuid::from_u128(*value).as_hyphenated()),
            Uid::Other(text) => f.write_str(text),
        }
    }
}

/// A resource as storage names it: group, plural and the identity of its definition.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResourceKey {
    pub group: String,
    pub plural: String,
    pub identity: ApiIdentity,
}

/// Where an object lives in its space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectKey {
    pub resource: Arc<ResourceKey>,
    pub namespace: Option<Box<str>>,
    pub name: Box<str>,
}

/// One owner reference as the graph keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub uid: Uid,
    pub block: bool,
}

/// Which garbage-collection finalizer a deleting object waits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waiting {
    Orphan,
    Foreground,
}

/// What one write says about an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    pub uid: Uid,
    pub namespace: Option<Box<str>>,
    pub name: Box<str>,
    pub owners: Vec<Owner>,
    pub deleting: bool,
    pub waiting: Option<Waiting>,
}

impl Observed {
    /// Reads an object's metadata; `None` without a uid or name. `namespaced` keeps its namespace.
    pub fn of(object: &Value, namespaced: bool) -> Option<Observed> {
        let text = |field: &str| object.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_str);
        let mut owners: Vec<Owner> = Vec::new();
        for reference in references(object) {
            let uid = Uid::parse(&reference.uid);
            match owners.iter_mut().find(|o| o.uid == uid) {
                Some(known) => known.block |= reference.block,
                None => owners.push(Owner { uid, block: reference.block }),
            }
        }
        let deleting = deletion::is_deleting(object);
        let waiting = match deleting {
            true if deletion::has_finalizer(object, ORPHAN_FINALIZER) => Some(Waiting::Orphan),
            true if deletion::has_finalizer(object, FOREGROUND_FINALIZER) => Some(Waiting::Foreground),
            _ => None,
        };
        Some(Observed {
            uid: Uid::parse(text("uid")?),
            namespace: text("namespace").filter(|_| namespaced).map(Into::into),
            name: text("name")?.into(),
            owners,
            deleting,
            waiting,
        })
    }

    /// True if the graph has to hold this object (or may forget it, if it held it before).
    pub fn matters(&self) -> bool {
        !self.owners.is_empty() || self.waiting.is_some()
    }
}

/// An object with ownerReferences.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub key: ObjectKey,
    pub owners: Vec<Owner>,
    pub deleting: bool,
}

#[derive(Debug, Default)]
struct Space {
    nodes: HashMap<Uid, Node>,
    /// Owner uid → the uids of the nodes naming it (the owner itself need not be a node, nor exist).
    dependents: HashMap<Uid, UidSet>,
    /// Objects being deleted with a GC finalizer.
    waiting: HashMap<Uid, (ObjectKey, Waiting)>,
}

/// A set of uids: a short list while small (most owners have a few dependents), a hash set when large (so
/// removing one of an owner's 100 000 dependents stays cheap).
#[derive(Clone, Debug)]
pub enum UidSet {
    Few(Vec<Uid>),
    Many(HashSet<Uid>),
}

impl Default for UidSet {
    fn default() -> UidSet {
        UidSet::Few(Vec::new())
    }
}

impl UidSet {
    const FEW: usize = 32;

    pub fn insert(&mut self, uid: Uid) {
        match self {
            UidSet::Few(list) if list.contains(&uid) => {}
            UidSet::Few(list) if list.len() < Self::FEW => list.push(uid),
            UidSet::Few(list) => {
                let mut set: HashSet<Uid> = list.drain(..).collect();
                set.insert(uid);
                *self = UidSet::Many(set);
            }
            UidSet::Many(set) => {
                set.insert(uid);
            }
        }
    }

    pub fn remove(&mut self, uid: &Uid) {
        match self {
            UidSet::Few(list) => list.retain(|u| u != uid),
            UidSet::Many(set) => {
                set.remove(uid);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        match self {
            UidSet::Few(list) => list.is_empty(),
            UidSet::Many(set) => set.is_empty(),
        }
    }

    pub fn iter(&self) -> Box<dyn Iterator<Item = &Uid> + '_> {
        match self {
            UidSet::Few(list) => Box::new(list.iter()),
            UidSet::Many(set) => Box::new(set.iter()),
        }
    }
}

/// Sizes, for logs and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub nodes: usize,
    pub owners: usize,
    pub waiting: usize,
}

/// Every space's graph.
#[derive(Debug, Default)]
pub struct Graph {
    spaces: HashMap<SpaceName, Space>,
    /// One shared copy of each resource key.
    resources: HashSet<Arc<ResourceKey>>,
    /// While the startup scan runs: the objects live writes already told about (the scan must not override them).
    loading: Option<HashSet<(SpaceName, Uid)>>,
}

impl Graph {
    /// A graph that is being filled by a startup scan (see [`Graph::load`] and [`Graph::finish_load`]).
    pub fn loading() -> Graph {
        Graph { loading: Some(HashSet::new()), ..Graph::default() }
    }

    #[cfg(test)]
    pub fn is_loading(&self) -> bool {
        self.loading.is_some()
    }

    /// A live write of an object: updates the graph and returns the work it causes.
    pub fn apply(&mut self, space: &SpaceName, resource: ResourceKey, observed: Observed) -> Vec<Work> {
        self.touch(space, &observed.uid);
        let mut work = Vec::new();
        self.update(space, resource, observed, &mut work);
        work
    }

    /// A live delete of the object `uid`: forgets it; its dependents are checked, and its owners waiting for their
    /// dependents to go are looked at again.
    pub fn remove(&mut self, space: &SpaceName, uid: &Uid) -> Vec<Work> {
        self.touch(space, uid);
        let mut work = Vec::new();
        if let Some(space_graph) = self.spaces.get_mut(space) {
            space_graph.waiting.remove(uid);
            if let Some(node) = space_graph.nodes.remove(uid) {
                for owner in &node.owners {
                    space_graph.release(uid, &owner.uid, true, space, &mut work);
                }
            }
            let dependents = space_graph.dependents.get(uid).into_iter().flat_map(UidSet::iter);
            work.extend(dependents.map(|d| Work::Dependent(space.clone(), d.clone())));
        }
        self.drop_if_empty(space);
        work
    }

    /// An object read by the startup scan, unless a live write told about it already.
    pub fn load(&mut self, space: &SpaceName, resource: ResourceKey, observed: Observed) {
        if self.loading.as_ref().is_some_and(|seen| seen.contains(&(space.clone(), observed.uid.clone()))) {
            return;
        }
        self.update(space, resource, observed, &mut Vec::new());
    }

    /// Ends the startup scan: the work that checks what the scan found (one live dependent per owner, so an owner
    /// deleted while the server was down is noticed; every waiting owner).
    pub fn finish_load(&mut self) -> Vec<Work> {
        self.loading = None;
        let mut work = Vec::new();
        for (space, graph) in &self.spaces {
            for dependents in graph.dependents.values() {
                let live = dependents.iter().find(|d| graph.nodes.get(*d).is_some_and(|n| !n.deleting));
                work.extend(live.map(|d| Work::Dependent(space.clone(), d.clone())));
            }
            work.extend(graph.waiting.keys().map(|uid| Work::Owner(space.clone(), uid.clone())));
        }
        work
    }

    pub fn node(&self, space: &SpaceName, uid: &Uid) -> Option<&Node> {
        self.spaces.get(space)?.nodes.get(uid)
    }

    /// The object `uid` if it waits on the collector.
    pub fn waiting(&self, space: &SpaceName, uid: &Uid) -> Option<(&ObjectKey, Waiting)> {
        self.spaces.get(space)?.waiting.get(uid).map(|(key, waiting)| (key, *waiting))
    }

    /// The dependents of `owner` (nodes naming it).
    pub fn dependents<'a>(&'a self, space: &SpaceName, owner: &Uid) -> Vec<(&'a Uid, &'a Node)> {
        let Some(graph) = self.spaces.get(space) else { return Vec::new() };
        let uids = graph.dependents.get(owner).into_iter().flat_map(UidSet::iter);
        uids.filter_map(|uid| graph.nodes.get(uid).map(|node| (uid, node))).collect()
    }

    /// The dependents that name `owner` with `blockOwnerDeletion: true`, and whether each is itself waiting for
    /// its own dependents.
    pub fn blocking(&self, space: &SpaceName, owner: &Uid) -> Vec<(Uid, bool)> {
        self.dependents(space, owner).into_iter()
            .filter(|(_, node)| node.owners.iter().any(|o| o.uid == *owner && o.block))
            .map(|(uid, _)| (uid.clone(), self.is_deleting_dependents(space, uid)))
            .collect()
    }

    /// True while `uid` is being deleted in the foreground.
    pub fn is_deleting_dependents(&self, space: &SpaceName, uid: &Uid) -> bool {
        self.waiting(space, uid).is_some_and(|(_, w)| w == Waiting::Foreground)
    }

    pub fn counts(&self) -> Counts {
        let mut counts = Counts::default();
        for graph in self.spaces.values() {
            counts.nodes += graph.nodes.len();
            counts.owners += graph.dependents.len();
            counts.waiting += graph.waiting.len();
        }
        counts
    }

    fn touch(&mut self, space: &SpaceName, uid: &Uid) {
        if let Some(seen) = self.loading.as_mut() {
            seen.insert((space.clone(), uid.clone()));
        }
    }

    fn intern(&mut self, resource: ResourceKey) -> Arc<ResourceKey> {
        if let Some(known) = self.resources.get(&resource) {
            return known.clone();
        }
        let shared = Arc::new(resource);
        self.resources.insert(shared.clone());
        shared
    }

    fn update(&mut self, space: &SpaceName, resource: ResourceKey, observed: Observed, work: &mut Vec<Work>) {
        let known = self.spaces.get(space).is_some_and(|g| g.nodes.contains_key(&observed.uid) || g.waiting.contains_key(&observed.uid));
        if !observed.matters() && !known {
            return;
        }
        let key = ObjectKey { resource: self.intern(resource), namespace: observed.namespace.clone(), name: observed.name.clone() };
        let graph = self.spaces.entry(space.clone()).or_default();
        graph.update_waiting(space, &key, &observed, work);
        graph.update_node(space, key, observed, work);
        self.drop_if_empty(space);
    }

    fn drop_if_empty(&mut self, space: &SpaceName) {
        if self.spaces.get(space).is_some_and(|g| g.nodes.is_empty() && g.dependents.is_empty() && g.waiting.is_empty()) {
            self.spaces.remove(space);
        }
    }
}

impl Space {
    /// A node's owner list changed (or the node came or went): links and unlinks it, and asks for the work kube's
    /// graph builder would: a new or re-parented node is checked; owners in foreground deletion it stops
    /// blocking are looked at again.
    fn update_node(&mut self, space: &SpaceName, key: ObjectKey, observed: Observed, work: &mut Vec<Work>) {
        let Observed { uid, owners, deleting, .. } = observed;
        let old_owners = self.nodes.remove(&uid).map(|n| n.owners).unwrap_or_default();
        for old in &old_owners {
            match owners.iter().find(|new| new.uid == old.uid) {
                None => self.release(&uid, &old.uid, true, space, work),
                Some(new) if old.block && !new.block => self.release(&uid, &old.uid, false, space, work),
                Some(_) => {}
            }
        }
        let mut added = false;
        for owner in owners.iter().filter(|new| !old_owners.iter().any(|old| old.uid == new.uid)) {
            self.dependents.entry(owner.uid.clone()).or_default().insert(uid.clone());
            added = true;
        }
        if owners.is_empty() {
            return;
        }
        if added {
            work.push(Work::Dependent(space.clone(), uid.clone()));
        }
        self.nodes.insert(uid, Node { key, owners, deleting });
    }

    /// `dependent` stops blocking `owner` (`forget`: stops naming it); an owner waiting for its dependents to go is
    /// looked at again.
    fn release(&mut self, dependent: &Uid, owner: &Uid, forget: bool, space: &SpaceName, work: &mut Vec<Work>) {
        if self.waiting.get(owner).is_some_and(|(_, w)| *w == Waiting::Foreground) {
            work.push(Work::Owner(space.clone(), owner.clone()));
        }
        if let (true, Some(dependents)) = (forget, self.dependents.get_mut(owner)) {
            dependents.remove(dependent);
            if dependents.is_empty() {
                self.dependents.remove(owner);
            }
        }
    }

    /// An object starts or stops waiting on the collector. Starting a foreground deletion checks every dependent.
    fn update_waiting(&mut self, space: &SpaceName, key: &ObjectKey, observed: &Observed, work: &mut Vec<Work>) {
        let uid = &observed.uid;
        let Some(waiting) = observed.waiting else {
            self.waiting.remove(uid);
            return;
        };
        if self.waiting.get(uid).is_some_and(|(_, known)| *known == waiting) {
            return;
        }
        self.waiting.insert(uid.clone(), (key.clone(), waiting));
        work.push(Work::Owner(space.clone(), uid.clone()));
        if waiting == Waiting::Foreground {
            let dependents = self.dependents.get(uid).into_iter().flat_map(UidSet::iter);
            work.extend(dependents.map(|d| Work::Dependent(space.clone(), d.clone())));
        }
    }
}

#[cfg(test)]
mod tests;

//! The garbage collector: kube-controller-manager's garbage collector, inside the server and inside each space.
//! It follows `metadata.ownerReferences`: a dependent whose owners are all gone is deleted (Background); the
//! dependents of an owner deleted with `orphan` lose their reference to it, then the finalizer is lifted; an
//! owner deleted with `foregroundDeletion` stays until its blocking dependents are gone. References resolve in
//! the dependent's space only, so two tenants never touch each other's objects, whatever uids they name.
//!
//! It learns of every durable write through the registry's `WriteObserver` and keeps a graph of the objects
//! that have owners (`graph.rs`) and a work queue (`queue.rs`). At startup one background scan of the store
//! fills the graph (`load.rs`, through the registry's reader); the workers start once it is done (kube's collector waits for its informers
//! the same way), while the server already serves. Decisions are kube's (`classify.rs`); every write goes
//! through `GenericStore` (`collect.rs`), so finalizers, watch events and durability rules hold.
//! `docs/garbage-collection.md` is the user's view.

mod classify;
mod collect;
mod graph;
mod load;
mod queue;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use kspaces_storage::{Revision, SpaceName};
use serde_json::Value;
use tokio::sync::{Notify, Semaphore};

use self::graph::{Counts, Graph, Node, ObjectKey, Observed, ResourceKey, Uid, Waiting};
use self::queue::{Work, WorkQueue};
use crate::registry::observe::WriteObserver;
use crate::registry::{GenericStore, ResourceInfo, ResourceTable};
use crate::resolver::Resolver;

/// How many items are processed at once (their writes share the store's group commits).
const WORKERS: usize = 8;
/// How many owners found missing are remembered (then the memory starts over).
const ABSENT_OWNERS: usize = 10_000;

/// An owner found missing, by the coordinates a reference names it with (the namespace only for namespaced
/// kinds), as kube's `absentOwnerCache` keeps them: a uid never comes back, so the verdict stays true.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AbsentOwner {
    pub space: SpaceName,
    pub group: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub uid: String,
}

/// The collector's shared state: written by the registry's observer, read by the workers.
pub struct GarbageCollector {
    state: Mutex<State>,
    wake: Notify,
}

struct State {
    graph: Graph,
    queue: WorkQueue,
    absent: HashSet<AbsentOwner>,
}

impl Default for GarbageCollector {
    fn default() -> GarbageCollector {
        let state = State { graph: Graph::loading(), queue: WorkQueue::default(), absent: HashSet::new() };
        GarbageCollector { state: Mutex::new(state), wake: Notify::new() }
    }
}

impl std::fmt::Debug for GarbageCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GarbageCollector").finish_non_exhaustive()
    }
}

fn resource_key(resource: &ResourceInfo) -> ResourceKey {
    ResourceKey { group: resource.group.clone(), plural: resource.plural.clone(), identity: resource.identity() }
}

impl GarbageCollector {
    /// The lock is only ever held for in-memory work, never across a store call (the store calls the observer).
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn enqueue(&self, work: Vec<Work>) {
        if work.is_empty() {
            return;
        }
        let mut state = self.lock();
        for item in work {
            state.queue.add(item);
        }
        drop(state);
        self.wake.notify_one();
    }

    /// A durable write of `object`.
    fn observe(&self, resource: &ResourceInfo, space: &SpaceName, object: &Value) {
        let Some(observed) = Observed::of(object, resource.namespaced) else { return };
        let work = {
            let mut state = self.lock();
            if !observed.matters() && state.graph.node(space, &observed.uid).is_none() && state.graph.waiting(space, &observed.uid).is_none() {
                return;
            }
            state.graph.apply(space, resource_key(resource), observed)
        };
        self.enqueue(work);
    }

    /// A durable delete; `last` is the object's last state. If it owned anything, it is remembered as missing.
    fn observe_removal(&self, resource: &ResourceInfo, space: &SpaceName, last: &Value) {
        let text = |field: &str| last.pointer(&format!("/metadata/{field}")).and_then(Value::as_str);
        let Some(uid) = text("uid") else { return };
        let parsed = Uid::parse(uid);
        let work = {
            let mut state = self.lock();
            if !state.graph.dependents(space, &parsed).is_empty() {
                let absent = AbsentOwner {
                    space: space.clone(),
                    group: resource.group.clone(),
                    kind: resource.kind.clone(),
                    namespace: text("namespace").filter(|_| resource.namespaced).map(str::to_owned),
                    name: text("name").unwrap_or_default().to_owned(),
                    uid: uid.to_owned(),
                };
                remember(&mut state.absent, absent);
            }
            state.graph.remove(space, &parsed)
        };
        self.enqueue(work);
    }

    /// Forgets an object the graph held but the store no longer has (or has under another uid).
    fn forget(&self, space: &SpaceName, uid: &Uid) {
        let work = self.lock().graph.remove(space, uid);
        self.enqueue(work);
    }

    fn node(&self, space: &SpaceName, uid: &Uid) -> Option<Node> {
        self.lock().graph.node(space, uid).cloned()
    }

    fn waiting(&self, space: &SpaceName, uid: &Uid) -> Option<(ObjectKey, Waiting)> {
        self.lock().graph.waiting(space, uid).map(|(key, waiting)| (key.clone(), waiting))
    }

    fn is_deleting_dependents(&self, space: &SpaceName, uid: &Uid) -> bool {
        self.lock().graph.is_deleting_dependents(space, uid)
    }

    /// The dependents of `owner`, with where they live.
    fn dependents(&self, space: &SpaceName, owner: &Uid) -> Vec<(Uid, ObjectKey)> {
        self.lock().graph.dependents(space, owner).into_iter().map(|(uid, node)| (uid.clone(), node.key.clone())).collect()
    }

    /// Whether `uid` has dependents, and whether one of them is deleting in the foreground.
    fn dependents_summary(&self, space: &SpaceName, uid: &Uid) -> (bool, bool) {
        let state = self.lock();
        let dependents = state.graph.dependents(space, uid);
        let in_foreground = dependents.iter().any(|(d, _)| state.graph.is_deleting_dependents(space, d));
        (!dependents.is_empty(), in_foreground)
    }

    fn blocking(&self, space: &SpaceName, owner: &Uid) -> Vec<(Uid, bool)> {
        self.lock().graph.blocking(space, owner)
    }

    fn is_absent(&self, owner: &AbsentOwner) -> bool {
        self.lock().absent.contains(owner)
    }

    /// Remembers an owner found missing; the first time, every dependent of its uid is checked (kube's virtual
    /// delete event), so one lookup serves them all.
    fn mark_absent(&self, owner: AbsentOwner) {
        let work = {
            let mut state = self.lock();
            let uid = Uid::parse(&owner.uid);
            let space = owner.space.clone();
            if !remember(&mut state.absent, owner) {
                return;
            }
            state.graph.dependents(&space, &uid).into_iter().map(|(d, _)| Work::Dependent(space.clone(), d.clone())).collect()
        };
        self.enqueue(work);
    }

    /// Adds the scan's findings to the graph.
    fn load(&self, found: Vec<(SpaceName, ResourceKey, Observed)>) {
        let mut state = self.lock();
        for (space, resource, observed) in found {
            state.graph.load(&space, resource, observed);
        }
    }

    /// Ends the startup scan: queues the checks of what it found.
    fn finish_load(&self) -> Counts {
        let (work, counts) = {
            let mut state = self.lock();
            (state.graph.finish_load(), state.graph.counts())
        };
        self.enqueue(work);
        counts
    }

    /// Waits for the next item (or the next retry that falls due).
    async fn next(&self) -> Work {
        loop {
            let due = {
                let mut state = self.lock();
                state.queue.promote(Instant::now());
                if let Some(work) = state.queue.pop() {
                    return work;
                }
                state.queue.next_due()
            };
            match due {
                Some(at) => {
                    let _ = tokio::time::timeout_at(at.into(), self.wake.notified()).await;
                }
                None => self.wake.notified().await,
            }
        }
    }

    /// Ends an item: done, to do again at once (more of it is left), or to retry after a backoff.
    fn finish(&self, work: Work, outcome: collect::Outcome) {
        let mut state = self.lock();
        state.queue.done(&work);
        match outcome {
            collect::Outcome::Done => state.queue.forget(&work),
            collect::Outcome::Again => {
                state.queue.forget(&work);
                state.queue.add(work);
            }
            collect::Outcome::Retry => state.queue.retry(work, Instant::now()),
        }
        drop(state);
        self.wake.notify_one();
    }

    /// Items queued or waiting for a retry (for tests and logs).
    pub fn backlog(&self) -> usize {
        self.lock().queue.len()
    }
}

/// Adds to the bounded memory of missing owners; false if it was known.
fn remember(absent: &mut HashSet<AbsentOwner>, owner: AbsentOwner) -> bool {
    if absent.contains(&owner) {
        return false;
    }
    if absent.len() >= ABSENT_OWNERS {
        absent.clear();
    }
    absent.insert(owner)
}

impl WriteObserver for GarbageCollector {
    fn written(&self, resource: &ResourceInfo, space: &SpaceName, _name: &str, object: Option<&Value>, _revision: Revision) {
        self.crd_changed(resource, space);
        if let Some(object) = object {
            self.observe(resource, space, object);
        }
    }

    fn deleted(&self, resource: &ResourceInfo, space: &SpaceName, _name: &str, last: &Value, _revision: Revision) {
        self.crd_changed(resource, space);
        self.observe_removal(resource, space, last);
    }
}

impl GarbageCollector {
    /// A CRD changed: items waiting for an owner kind the space did not serve are retried at once (a system CRD
    /// may serve every space).
    fn crd_changed(&self, resource: &ResourceInfo, space: &SpaceName) {
        if resource.is("apiextensions.k8s.io", "CustomResourceDefinition") {
            self.lock().queue.promote_space(Some(space).filter(|s| !s.is_system()));
            self.wake.notify_one();
        }
    }
}

/// The garbage collector's workers: what they read and write through.
pub struct GcController {
    pub registry: GenericStore,
    /// The built-in resources (owners' and dependents' rows).
    pub resources: ResourceTable,
    /// The custom resources each space serves.
    pub resolver: Arc<Resolver>,
    /// The graph and queue the registry's writes feed.
    pub state: Arc<GarbageCollector>,
    /// Set once the startup scan has filled the graph.
    pub loaded: tokio::sync::watch::Sender<bool>,
}

/// Fills the graph from storage, retrying until it can. Every replica keeps the graph (a cache its writes and the
/// store's watch feed); only the leader runs the workers (`work`).
pub async fn load(collector: Arc<GcController>) {
    let started = Instant::now();
    loop {
        match load::scan(&collector.registry, &collector.state).await {
            Ok(scanned) => {
                let counts = collector.state.finish_load();
                tracing::info!(objects = scanned.objects, dependents = counts.nodes, owners = counts.owners,
                    waiting = counts.waiting, millis = started.elapsed().as_millis() as u64, "garbage collector: graph loaded");
                collector.loaded.send_replace(true);
                return;
            }
            Err(err) => {
                tracing::warn!(%err, "garbage collector: scanning the store; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Once the graph is loaded, runs the workers forever.
pub async fn work(collector: Arc<GcController>) {
    if collector.loaded.subscribe().wait_for(|loaded| *loaded).await.is_err() {
        return;
    }
    let slots = Arc::new(Semaphore::new(WORKERS));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else { return };
        let work = collector.state.next().await;
        let collector = collector.clone();
        actix_web::rt::spawn(async move {
            let outcome = collect::process(&collector, &work).await;
            collector.state.finish(work, outcome);
            drop(slot);
        });
    }
}

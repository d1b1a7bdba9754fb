//! The workspace controller: completes the creation of workspaces a crash interrupted (their logical cluster and
//! content), moves them from `Initializing` to `Ready` once their initializers are gone, and deletes deleted
//! workspaces: `Terminating` while terminators are left, then `Deleting`: their subtree and content first (each
//! child workspace is content, deleted the same way), then the `core.kcp.io/logicalcluster` finalizer is lifted,
//! which removes the Workspace. It learns of such workspaces from the registry's write observer, and at startup
//! from one priming scan, so a deletion in flight resumes after a restart. A workspace that waits for initializers
//! or terminators is set aside (no work while it waits, however many wait) until its LogicalCluster's last entry
//! goes; the LogicalCluster's `spec.owner` names the workspace to take back.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kspaces_storage::{Revision, SpaceName};
use serde_json::Value;
use tokio::sync::Notify;

use super::empty_space;
use crate::kinds::workspace::FINALIZER;
use crate::registry::observe::WriteObserver;
use crate::registry::store::space_of_cluster;
use crate::registry::{is_deleting, GenericStore, ResourceInfo, ResourceTable, Scope, WriteContext, SERVER_MANAGER};
use crate::resolver::Resolver;
use crate::status::{ApiError, ApiResult};
use crate::apis::lifecycle::Lifecycle;
use crate::tenancy::{space, Tree};
use crate::registry::stored::at;

/// How many workspaces are reconciled at once (on the controllers' threads, `super::pool`).
const CONCURRENCY: usize = 128;

/// A workspace: its parent space and its name.
type Key = (SpaceName, String);

/// The pending workspaces, each with the count of the write that made it pending and the moment before which the
/// controller leaves it alone (a creation the request that made it is still completing), and the last count given.
type Pending = (BTreeMap<Key, (u64, Option<Instant>)>, u64);

/// How long a workspace being created is left to the request that created it (its `after_create` makes the
/// logical cluster and moves it to `Ready`, normally within milliseconds) before the controller completes it,
/// which it then does only if a crash or a failure cut that short. Without this the two raced on every create,
/// doing the same reads and no-op writes twice.
const CREATION_GRACE: Duration = Duration::from_secs(2);

/// How long a deleted workspace whose content is still going waits before its next look, if nothing is removed
/// from its logical cluster meanwhile (what it waits for may go without a removal: a pod's grace period).
const CONTENT_RECHECK: Duration = Duration::from_secs(1);

/// How long after the first removal from a deleted workspace's logical cluster it looks again, so that the removals
/// of its children, deleted side by side, bring it back once (a parent of ten looked again up to ten times).
const COALESCE: Duration = Duration::from_millis(20);

/// Where a deleted workspace emptying its logical cluster is.
#[derive(Debug)]
enum Emptying {
    /// Its reconcile runs; `removed`: something left the cluster since it started.
    Running { removed: bool },
    /// It waits for something to leave the cluster.
    Waiting,
}

/// Workspaces being created or deleted, by (parent space, name), each with the count of the last write that made
/// it pending (a workspace set aside while it waits comes back only if nothing made it pending meanwhile).
#[derive(Debug, Default)]
pub struct PendingWorkspaces {
    pending: Mutex<Pending>,
    /// Deleted workspaces waiting for their content to go, by their logical cluster: something removed from it
    /// brings the workspace back `COALESCE` later (else it comes back after `CONTENT_RECHECK`).
    emptying: Mutex<HashMap<SpaceName, (Key, Emptying)>>,
    wake: Notify,
    /// A waiting LogicalCluster's initializers or terminators changed, a deleted workspace or a Terminating namespace
    /// is gone: what waited for it moves on now, not at the next tick.
    advance: Notify,
}

impl PendingWorkspaces {
    /// A Terminating namespace of `space` is gone (the namespace controller says so): the deleted workspace
    /// waiting for it to empty is due now.
    pub fn namespace_removed(&self, space: &SpaceName) {
        self.removed_from(space);
        self.advance.notify_one();
    }

    /// Marks a workspace pending (or not); `not_before` defers the controller's work on it.
    fn set(&self, parent: &SpaceName, name: &str, pending: bool, not_before: Option<Instant>) {
        let mut guard = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let (set, count) = &mut *guard;
        let key = (parent.clone(), name.to_owned());
        if pending {
            *count += 1;
            let was_empty = set.is_empty();
            set.insert(key, (*count, not_before));
            drop(guard);
            // A deferred workspace (one being created) needs no wake-up while others are pending: the controller
            // looks at the pending set again when one of those ends or rests, or every interval while some are
            // deferred. Waking its thread costs a cross-thread wake on every Workspace write of a create.
            if not_before.is_none() || was_empty {
                self.wake.notify_one();
            }
        } else {
            set.remove(&key);
        }
    }

    /// The count a reconcile starts from (0: not pending).
    fn seen(&self, parent: &SpaceName, name: &str) -> u64 {
        let guard = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        guard.0.get(&(parent.clone(), name.to_owned())).map_or(0, |(count, _)| *count)
    }

    /// Sets a waiting workspace aside, unless a write made it pending again since `seen`.
    fn set_aside(&self, parent: &SpaceName, name: &str, seen: u64) {
        let mut guard = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let key = (parent.clone(), name.to_owned());
        if guard.0.get(&key).is_some_and(|(count, _)| *count == seen) {
            guard.0.remove(&key);
        }
    }

    /// A deleted workspace's reconcile is about to delete content of its logical cluster `cluster`: a removal from
    /// it from now on counts, even one made before the reconcile ends and waits (a child deleted by this pass may
    /// be gone before its parent's pass is over).
    fn emptying_starts(&self, parent: &SpaceName, name: &str, cluster: &SpaceName) {
        let owner = (parent.clone(), name.to_owned());
        self.emptying.lock().unwrap_or_else(|e| e.into_inner()).insert(cluster.clone(), (owner, Emptying::Running { removed: false }));
    }

    /// The workspace emptying `cluster` is done with it (its content is gone).
    fn emptying_ends(&self, cluster: &SpaceName) {
        self.emptying.lock().unwrap_or_else(|e| e.into_inner()).remove(cluster);
    }

    /// A deleted workspace whose content is not gone yet waits until something is removed from its logical
    /// cluster `cluster` (a namespace, a child workspace, an object whose finalizer was lifted), or for
    /// `CONTENT_RECHECK`, unless a write made it pending again since `seen`; if something was removed while its
    /// reconcile ran, it comes back `COALESCE` later. The controller then skips it instead of reading its content
    /// again while its children are still going.
    fn wait_for_content(&self, parent: &SpaceName, name: &str, cluster: &SpaceName, seen: u64) {
        let mut guard = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let mut emptying = self.emptying.lock().unwrap_or_else(|e| e.into_inner());
        let Some(entry) = guard.0.get_mut(&(parent.clone(), name.to_owned())).filter(|(count, _)| *count == seen) else {
            emptying.remove(cluster);
            return;
        };
        let removed = matches!(emptying.get(cluster), Some((_, Emptying::Running { removed: true })));
        if removed {
            emptying.remove(cluster);
            entry.1 = Some(Instant::now() + COALESCE);
        } else {
            emptying.insert(cluster.clone(), ((parent.clone(), name.to_owned()), Emptying::Waiting));
            entry.1 = Some(Instant::now() + CONTENT_RECHECK);
        }
    }

    /// Something was removed from `space`: the deleted workspace waiting for it to empty is due `COALESCE` later,
    /// so that what its pass deleted together (its children, side by side) brings it back once, not once each;
    /// one whose reconcile is still running notes it.
    fn removed_from(&self, space: &SpaceName) {
        let owner = {
            let mut emptying = self.emptying.lock().unwrap_or_else(|e| e.into_inner());
            match emptying.get_mut(space) {
                None => return,
                Some((_, Emptying::Running { removed })) => {
                    *removed = true;
                    return;
                }
                Some((_, Emptying::Waiting)) => emptying.remove(space).map(|(owner, _)| owner),
            }
        };
        let Some(owner) = owner else { return };
        let mut guard = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = guard.0.get_mut(&owner) {
            let soon = Instant::now() + COALESCE;
            entry.1 = Some(entry.1.map_or(soon, |at| at.min(soon)));
            drop(guard);
            self.wake.notify_one();
        }
    }

    /// Defers a pending workspace until `until`, unless a write made it pending again since `seen`.
    fn defer(&self, key: &Key, seen: u64, until: Instant) {
        let mut guard = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = guard.0.get_mut(key).filter(|(count, _)| *count == seen) {
            entry.1 = Some(until);
        }
    }

    /// The count of a workspace's pending entry if it is due now.
    fn due_now(&self, key: &Key, now: Instant) -> Option<u64> {
        let guard = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        guard.0.get(key).filter(|(_, not_before)| not_before.is_none_or(|at| at <= now)).map(|(count, _)| *count)
    }

    /// Whether any workspace is pending.
    fn any(&self) -> bool {
        !self.pending.lock().unwrap_or_else(|e| e.into_inner()).0.is_empty()
    }

    /// The pending workspaces due now, and when the next deferred one is due.
    fn due(&self, now: Instant) -> (Vec<Key>, Option<Instant>) {
        let guard = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let mut next: Option<Instant> = None;
        let due = guard.0.iter().filter_map(|(key, (_, not_before))| match not_before {
            Some(at) if *at > now => {
                next = Some(next.map_or(*at, |next| next.min(*at)));
                None
            }
            _ => Some(key.clone()),
        }).collect();
        (due, next)
    }
}

impl WriteObserver for PendingWorkspaces {
    fn follows(&self) -> &[(&'static str, &'static str)] {
        &[("tenancy.kcp.io", "Workspace"), ("core.kcp.io", "LogicalCluster")]
    }

    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, _revision: Revision) {
        if object.is_none() {
            self.removed_from(space);
        }
        if resource.is("tenancy.kcp.io", "Workspace") {
            let deleting = object.is_some_and(is_deleting);
            let creating = !deleting && object.is_some_and(|o| at(o, "/status/phase").and_then(Value::as_str) != Some("Ready"));
            self.set(space, name, deleting || creating, creating.then(|| Instant::now() + CREATION_GRACE));
            if object.is_none() {
                // Its parent, being deleted, may be waiting for it.
                self.advance.notify_one();
            }
        } else if let Some(object) = object.filter(|_| resource.is("core.kcp.io", "LogicalCluster")) {
            // Its workspace (`spec.owner`) was set aside while it waited; it moves on now. One that never had an
            // entry to wait for (an empty `spec.initializers`) is being moved on by the request that made it.
            let done = Lifecycle::ALL.into_iter().any(|l| {
                let had_entries = at(object, &format!("/spec/{}", l.field())).and_then(Value::as_array).is_some_and(|e| !e.is_empty());
                at(object, "/status/phase").and_then(Value::as_str) == Some(l.phase()) && l.entries(object).is_empty() && had_entries
            });
            // While it waits, every entry removed is mirrored to the Workspace, not only the last.
            let removed = Lifecycle::ALL.into_iter().any(|l| {
                let had = at(object, &format!("/spec/{}", l.field())).and_then(Value::as_array).map_or(0, Vec::len);
                at(object, "/status/phase").and_then(Value::as_str) == Some(l.phase()) && l.entries(object).len() < had
            });
            if let Some((parent, name)) = owner(object).filter(|_| done || removed) {
                self.set(&parent, &name, true, None);
                self.advance.notify_one();
            }
        }
    }
}

/// The Workspace a nested workspace's LogicalCluster belongs to: its parent space and name (`spec.owner`).
fn owner(logical_cluster: &Value) -> Option<(SpaceName, String)> {
    let owner = at(logical_cluster, "/spec/owner")?;
    let parent = space_of_cluster(owner.get("cluster").and_then(Value::as_str)?)?;
    Some((parent, owner.get("name").and_then(Value::as_str)?.to_owned()))
}

/// The workspace controller: what it reads and writes through.
#[derive(Clone)]
pub struct WorkspaceController {
    pub registry: GenericStore,
    /// The built-in resources (a workspace's content, and the Workspace row).
    pub resources: ResourceTable,
    /// The custom resources a space may hold.
    pub resolver: Arc<Resolver>,
    pub tree: Arc<Tree>,
    pub queue: Arc<PendingWorkspaces>,
}

impl WorkspaceController {
    /// Finds the workspaces left pending by the previous run, then runs forever, up to `CONCURRENCY` reconciles at
    /// once on the controllers' threads, each started as soon as a slot is free: a workspace made pending (a child
    /// just marked deleted) starts without waiting for the slowest of the others, as a work queue does. One whose
    /// reconcile ended with nothing new since it started rests until something moves on (`advance`) or
    /// `interval` passes, one that failed waits `interval`; a workspace is never reconciled twice at once.
    pub async fn run(self, interval: Duration) {
        let queue: Arc<dyn WriteObserver> = self.queue.clone();
        while let Err(err) = self.registry.prime(std::slice::from_ref(&queue), &self.resources).await {
            tracing::warn!(%err, "workspace controller: scanning for pending workspaces");
            tokio::time::sleep(interval).await;
        }
        let mut running = tokio::task::JoinSet::new();
        let mut in_flight: HashMap<tokio::task::Id, (Key, u64)> = HashMap::new();
        let mut busy: HashSet<Key> = HashSet::new();
        let mut resting: HashMap<Key, u64> = HashMap::new();
        // The due workspaces not yet looked at, and whether the pending set changed since they were taken.
        let mut due = Vec::new().into_iter();
        let mut changed = true;
        // When the next deferred workspace is due (as of the last look at the pending set).
        let mut deferred: Option<Instant> = None;
        let mut tick = Instant::now() + interval;
        loop {
            while running.len() < CONCURRENCY {
                let key = match due.next() {
                    Some(key) => key,
                    None if changed => {
                        let (now_due, next) = self.queue.due(Instant::now());
                        (changed, due, deferred) = (false, now_due.into_iter(), next);
                        continue;
                    }
                    None => break,
                };
                if busy.contains(&key) {
                    continue;
                }
                // The list of due workspaces is taken once and worked through as slots free up: one of them may
                // have been reconciled and gone meanwhile (it was running when the list was taken), or deferred.
                let Some(count) = self.queue.due_now(&key, Instant::now()) else { continue };
                if resting.get(&key) == Some(&count) {
                    continue;
                }
                let controller = self.clone();
                let (parent, name) = key.clone();
                let task = running.spawn_on(async move {
                    let failed = controller.reconcile(&parent, &name).await.err();
                    if let Some(err) = &failed {
                        tracing::warn!(%err, %parent, %name, "workspace controller");
                    }
                    failed.is_some()
                }, super::pool());
                busy.insert(key.clone());
                in_flight.insert(task.id(), (key, count));
            }
            // Whatever is pending is looked at again at least every `interval` (a deferred workspace, one resting,
            // one made pending without a wake-up, see `set`).
            let anything_pending = self.queue.any();
            tokio::select! {
                Some(joined) = running.join_next_with_id(), if !running.is_empty() => {
                    let (id, failed) = match &joined {
                        Ok((id, failed)) => (*id, *failed),
                        Err(err) => {
                            tracing::error!(%err, "workspace controller: a reconcile panicked");
                            (err.id(), true)
                        }
                    };
                    let Some((key, count)) = in_flight.remove(&id) else { continue };
                    busy.remove(&key);
                    match self.queue.seen(&key.0, &key.1) {
                        0 => {}
                        // A failure is retried `interval` later, however often other workspaces move on meanwhile.
                        now if now == count && failed => self.queue.defer(&key, count, Instant::now() + interval),
                        now if now == count => drop(resting.insert(key, count)),
                        _ => changed = true,
                    }
                }
                () = self.queue.wake.notified() => changed = true,
                () = self.queue.advance.notified() => {
                    resting.clear();
                    changed = true;
                }
                () = tokio::time::sleep_until(tick.into()), if anything_pending => {
                    resting.clear();
                    changed = true;
                    tick = Instant::now() + interval;
                }
                () = tokio::time::sleep_until(deferred.unwrap_or(tick).into()), if deferred.is_some_and(|at| at < tick) => {
                    deferred = None;
                    changed = true;
                }
            }
            if !anything_pending {
                tick = Instant::now() + interval;
            }
        }
    }

    fn workspaces(&self) -> ApiResult<&Arc<ResourceInfo>> {
        self.resources.by_kind("tenancy.kcp.io", "Workspace").ok_or_else(|| ApiError::internal("no Workspace resource"))
    }

    /// One step for one workspace: complete its creation, or move its deletion on.
    pub async fn reconcile(&self, parent: &SpaceName, name: &str) -> ApiResult<()> {
        let seen = self.queue.seen(parent, name);
        tracing::debug!(%parent, name, seen, "workspace controller: reconcile");
        let scope = Scope::one(parent.clone(), None);
        let workspace = match self.registry.reader().get(self.workspaces()?, &scope, name).await {
            Ok(workspace) => workspace,
            Err(ApiError { code: 404, .. }) => {
                self.queue.set(parent, name, false, None);
                return Ok(());
            }
            Err(err) => return Err(err),
        };
        // A workspace waiting for its initializers or terminators is set aside until its LogicalCluster changes.
        if !is_deleting(&workspace) {
            if space::initialize_workspace(&self.registry, &self.resources, &self.tree, parent, &workspace, space::Initialization::Resumed).await? {
                self.queue.set_aside(parent, name, seen);
            }
            return Ok(());
        }
        let cluster = at(&workspace, "/spec/cluster").and_then(Value::as_str).and_then(|c| SpaceName::new(c).ok());
        // Terminating while terminators are left (kcp's phase), with the LogicalCluster and mirrored.
        if let Some(cluster) = &cluster {
            if space::await_terminators(&self.registry, &self.resources, parent, name, cluster).await? {
                self.queue.set_aside(parent, name, seen);
                return Ok(());
            }
        }
        // `Deleting` while its content goes; one whose logical cluster goes in the first pass (nothing but what the
        // server made in it) goes without.
        if let Some(cluster) = cluster {
            self.queue.emptying_starts(parent, name, &cluster);
            if !empty_space(&self.registry, &self.resources, &self.resolver, &cluster).await? {
                if at(&workspace, "/status/phase").and_then(Value::as_str) != Some("Deleting") {
                    space::set_phase(&self.registry, &self.resources, parent, name, "Deleting").await?;
                }
                self.queue.wait_for_content(parent, name, &cluster, seen);
                return Ok(());
            }
            self.queue.emptying_ends(&cluster);
        }
        self.finalize(&scope, name).await
    }

    /// Lifts the workspace's finalizer, which removes it (it is already being deleted).
    async fn finalize(&self, scope: &Scope, name: &str) -> ApiResult<()> {
        let write = WriteContext::server(SERVER_MANAGER, "");
        let lifted = self.registry.lift_finalizer(self.workspaces()?, scope, name, &write, FINALIZER).await;
        match lifted {
            Ok(_) | Err(ApiError { code: 404, .. }) => Ok(()),
            Err(err) => Err(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space(name: &str) -> SpaceName {
        SpaceName::new(name).unwrap_or_else(|err| panic!("{name}: {err}"))
    }

    /// A deleted workspace waiting for its content is left alone until something leaves its logical cluster: a
    /// namespace the namespace controller removed counts (it used to wake the controller without making the
    /// workspace due, so every leaf of a deleted tree waited for the recheck).
    #[test]
    fn a_namespace_removed_from_its_cluster_makes_the_waiting_workspace_due() {
        let queue = PendingWorkspaces::default();
        let (parent, cluster, other) = (space("t-a"), space("c0123456789abcde"), space("c9999999999abcde"));
        queue.set(&parent, "leaf", true, None);
        let seen = queue.seen(&parent, "leaf");
        queue.wait_for_content(&parent, "leaf", &cluster, seen);
        let due = |queue: &PendingWorkspaces, at: Instant| queue.due(at).0;
        assert!(due(&queue, Instant::now()).is_empty(), "it waits");
        queue.namespace_removed(&other);
        assert!(due(&queue, Instant::now() + COALESCE).is_empty(), "another cluster's namespace changes nothing");
        queue.namespace_removed(&cluster);
        assert_eq!(due(&queue, Instant::now() + COALESCE), [(parent.clone(), "leaf".to_owned())], "due once the removals around it are in");
        assert!(queue.due(Instant::now()).1.is_some_and(|at| at <= Instant::now() + COALESCE), "and the controller knows when");
    }

    /// A failed reconcile waits before its retry, unless a write made the workspace pending again.
    #[test]
    fn a_failure_is_retried_later() {
        let queue = PendingWorkspaces::default();
        let parent = space("t-a");
        let key = (parent.clone(), "ws".to_owned());
        queue.set(&parent, "ws", true, None);
        let seen = queue.seen(&parent, "ws");
        let later = Instant::now() + Duration::from_millis(200);
        queue.defer(&key, seen, later);
        assert!(queue.due(Instant::now()).0.is_empty(), "not retried at once");
        assert_eq!(queue.due(later).0, std::slice::from_ref(&key), "retried later");
        queue.defer(&key, seen + 1, Instant::now() + Duration::from_secs(60));
        assert_eq!(queue.due(later).0, std::slice::from_ref(&key), "a stale count defers nothing");
        queue.set(&parent, "ws", true, None);
        assert_eq!(queue.due(Instant::now()).0, [key], "a new write makes it due at once");
    }

    /// A child removed while its parent's reconcile still runs (the pass that deleted it is not over) brings the
    /// parent back soon, not after `CONTENT_RECHECK`: the parent was not waiting yet when the removal came.
    #[test]
    fn a_removal_during_the_reconcile_is_not_missed() {
        let queue = PendingWorkspaces::default();
        let (parent, cluster) = (space("t-a"), space("c0123456789abcde"));
        queue.set(&parent, "mid", true, None);
        let seen = queue.seen(&parent, "mid");
        queue.emptying_starts(&parent, "mid", &cluster);
        queue.removed_from(&cluster);
        queue.wait_for_content(&parent, "mid", &cluster, seen);
        let next = queue.due(Instant::now()).1;
        assert!(next.is_some_and(|at| at <= Instant::now() + COALESCE), "due within {COALESCE:?}: {next:?}");
        // Without a removal meanwhile it waits for one (or the recheck).
        queue.set(&parent, "other", true, None);
        let seen = queue.seen(&parent, "other");
        let other_cluster = space("c9999999999abcde");
        queue.emptying_starts(&parent, "other", &other_cluster);
        queue.wait_for_content(&parent, "other", &other_cluster, seen);
        assert!(!queue.due(Instant::now() + COALESCE).0.contains(&(parent.clone(), "other".to_owned())), "it waits");
        queue.removed_from(&other_cluster);
        assert!(queue.due(Instant::now() + COALESCE).0.contains(&(parent, "other".to_owned())), "until something leaves");
    }
}

//! The namespace controller: empties Terminating namespaces of every space (honouring finalizers), then
//! removes them. It learns of namespaces being deleted from the registry's write observer (and, at startup,
//! from one priming scan in the background), so an idle server with many spaces does no work.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kspaces_storage::{Revision, SpaceName};
use serde_json::Value;
use tokio::sync::Notify;

use super::{delete_content, finalize};
use crate::registry::observe::WriteObserver;
use crate::registry::{is_deleting, GenericStore, ResourceInfo, ResourceTable, Scope};
use crate::resolver::Resolver;
use crate::status::{ApiError, ApiResult};
use crate::tenancy::Tree;

/// Told of the space a Terminating namespace was removed from.
pub type Removed = Box<dyn Fn(&SpaceName) + Send + Sync>;

/// Namespaces with a deletion timestamp, by (space, name).
#[derive(Default)]
pub struct TerminatingNamespaces {
    pending: Mutex<BTreeSet<(SpaceName, String)>>,
    /// A namespace became Terminating: the controller runs now, not at its next tick.
    wake: Notify,
    /// Told when a Terminating namespace is gone (the workspace controller: a deleted workspace waiting for its
    /// namespaces goes on at once).
    removed: Option<Removed>,
}

impl TerminatingNamespaces {
    /// Calls `removed` whenever a Terminating namespace is gone.
    pub fn notifying(removed: Removed) -> TerminatingNamespaces {
        TerminatingNamespaces { removed: Some(removed), ..TerminatingNamespaces::default() }
    }

    fn set(&self, space: &SpaceName, name: &str, deleting: bool) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if deleting {
            if pending.insert((space.clone(), name.to_owned())) {
                self.wake.notify_one();
            }
        } else if pending.remove(&(space.clone(), name.to_owned())) {
            drop(pending);
            if let Some(removed) = &self.removed {
                removed(space);
            }
        }
    }

    /// Still Terminating (not removed since the pass's snapshot, e.g. by the workspace controller emptying its
    /// space, which removes a space's namespaces itself).
    fn contains(&self, space: &SpaceName, name: &str) -> bool {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).contains(&(space.clone(), name.to_owned()))
    }

    fn snapshot(&self) -> Vec<(SpaceName, String)> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()
    }
}

impl WriteObserver for TerminatingNamespaces {
    fn follows(&self) -> &[(&'static str, &'static str)] {
        &[("", "Namespace")]
    }

    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, _revision: Revision) {
        if resource.is("", "Namespace") {
            self.set(space, name, object.is_some_and(is_deleting));
        }
    }
}

/// How many Terminating namespaces one pass empties at once. A pass reads every namespaced resource of each
/// namespace, so many namespaces at once (a tenant's, or all of them after a restart) would otherwise be bound
/// by the store's round trips (etcd), one after the other.
const PARALLEL: usize = 16;

/// The namespace controller: what it reads and writes through.
#[derive(Clone)]
pub struct NamespaceController {
    pub registry: GenericStore,
    /// The built-in resources (the namespaced ones are a namespace's content).
    pub resources: ResourceTable,
    /// The custom resources a space may hold.
    pub resolver: Arc<Resolver>,
    pub queue: Arc<TerminatingNamespaces>,
    /// The workspaces: a namespace of one being emptied is the workspace (or tenant) controller's.
    pub tree: Arc<Tree>,
}

impl NamespaceController {
    /// Finds the namespaces left Terminating by the previous run, then runs forever, checking the Terminating
    /// namespaces every `interval`, and at once when a namespace becomes Terminating.
    pub async fn run(self, interval: Duration) {
        let queue: Arc<dyn WriteObserver> = self.queue.clone();
        while let Err(err) = self.registry.prime(std::slice::from_ref(&queue), &self.resources).await {
            tracing::warn!(%err, "namespace controller: scanning for Terminating namespaces");
            tokio::time::sleep(interval).await;
        }
        let mut ticker = tokio::time::interval(interval);
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                () = self.queue.wake.notified() => {}
            }
            if let Err(err) = self.reconcile().await {
                tracing::warn!(%err, "namespace controller");
            }
        }
    }

    /// One pass over every Terminating namespace, `PARALLEL` at a time (spread over the controllers' threads,
    /// `super::pool`); the first failure is reported once all are done (one namespace's failure does not hold the
    /// others up).
    pub async fn reconcile(&self) -> ApiResult<()> {
        let Some(namespaces) = self.resources.by_kind("", "Namespace").cloned() else { return Ok(()) };
        let mut outcome = Ok(());
        let pass = |(space, name): (SpaceName, String)| {
            let (controller, namespaces) = (self.clone(), namespaces.clone());
            async move { controller.reconcile_one(&namespaces, space, name).await }
        };
        super::spread(self.queue.snapshot(), PARALLEL, pass, |joined| match joined {
            Ok(Err(err)) if outcome.is_ok() => outcome = Err(err),
            Err(err) if outcome.is_ok() => outcome = Err(ApiError::internal(format!("namespace controller: {err}"))),
            _ => {}
        }).await;
        outcome
    }

    /// Empties one Terminating namespace; once nothing is left, removes it.
    async fn reconcile_one(&self, namespaces: &ResourceInfo, space: SpaceName, name: String) -> ApiResult<()> {
        if !self.queue.contains(&space, &name) {
            return Ok(());
        }
        // The space of a workspace (or tenant) being emptied is emptied whole by its controller (`empty_space`),
        // its Terminating namespaces included: working on them here too would only race it.
        if self.tree.cluster(&space).is_some_and(|workspace| workspace.phase == "Deleting") {
            return Ok(());
        }
        let cluster = Scope::one(space.clone(), None);
        let content = Scope::one(space.clone(), Some(name.clone()));
        let custom = self.resolver.stored_in(&space);
        let namespaced = self.resources.all().iter().chain(&custom).filter(|r| r.namespaced).map(|r| &**r);
        if !delete_content(&self.registry, namespaced, &content).await? {
            return Ok(());
        }
        match finalize(&self.registry, namespaces, &cluster, &name).await {
            Ok(_) => Ok(()),
            Err(ApiError { code: 404, .. }) => {
                self.queue.set(&space, &name, false);
                Ok(())
            }
            Err(err) => Err(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The queue names the space a Terminating namespace left, once, and nothing for a namespace never Terminating.
    #[test]
    fn a_terminating_namespace_gone_names_its_space() {
        let told = Arc::new(Mutex::new(Vec::new()));
        let record = told.clone();
        let queue = TerminatingNamespaces::notifying(Box::new(move |space: &SpaceName| {
            record.lock().unwrap_or_else(|e| e.into_inner()).push(space.to_string());
        }));
        let space = SpaceName::new("c0123456789abcde").unwrap_or_else(|err| panic!("{err}"));
        queue.set(&space, "never-deleted", false);
        queue.set(&space, "default", true);
        assert!(queue.contains(&space, "default"));
        queue.set(&space, "default", false);
        queue.set(&space, "default", false);
        assert!(!queue.contains(&space, "default"));
        assert_eq!(*told.lock().unwrap_or_else(|e| e.into_inner()), ["c0123456789abcde"]);
    }
}

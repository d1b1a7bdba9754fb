//! The namespace controller: empties Terminating namespaces of every space (honouring finalizers), then
//! removes them. It learns of namespaces being deleted from the registry's write observer (and, at startup,
//! from one paged scan), so an idle server with many spaces does no work.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kspaces_storage::{Revision, SpaceName};
use serde_json::Value;

use super::{delete_content, finalize};
use crate::registry::store::{is_deleting, WriteObserver};
use crate::registry::{ResourceInfo, Scope, Spaces};
use crate::state::ApiServer;
use crate::status::{ApiError, ApiResult};

/// Namespaces with a deletion timestamp, by (space, name).
#[derive(Debug, Default)]
pub struct TerminatingNamespaces {
    pending: Mutex<BTreeSet<(SpaceName, String)>>,
}

impl TerminatingNamespaces {
    fn set(&self, space: &SpaceName, name: &str, deleting: bool) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if deleting {
            pending.insert((space.clone(), name.to_owned()));
        } else {
            pending.remove(&(space.clone(), name.to_owned()));
        }
    }

    fn snapshot(&self) -> Vec<(SpaceName, String)> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()
    }
}

impl WriteObserver for TerminatingNamespaces {
    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, _revision: Revision) {
        if resource.is("", "Namespace") {
            self.set(space, name, object.is_some_and(is_deleting));
        }
    }
}

/// Finds the namespaces already Terminating when the server starts (one paged scan of every space).
pub async fn seed(server: &ApiServer) -> ApiResult<()> {
    let scope = Scope { spaces: Spaces::All, namespace: None };
    server.registry.for_each(&server.namespaces(), &scope, 500, |namespace| {
        if !is_deleting(namespace) {
            return;
        }
        let tenant = namespace.pointer("/metadata/tenant").and_then(Value::as_str).unwrap_or(crate::tenancy::SYSTEM);
        let name = namespace.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        if let Ok(space) = crate::tenancy::space_of(tenant) {
            server.terminating_namespaces.set(&space, name, true);
        }
    }).await
}

/// Finds the namespaces left Terminating by the previous run, then runs forever, checking the Terminating
/// namespaces every `interval`.
pub async fn run(server: Arc<ApiServer>, interval: Duration) {
    while let Err(err) = seed(&server).await {
        tracing::warn!(%err, "namespace controller: scanning for Terminating namespaces");
        tokio::time::sleep(interval).await;
    }
    let mut ticker = tokio::time::interval(interval);
    loop {
        ticker.tick().await;
        if let Err(err) = reconcile(&server).await {
            tracing::warn!(%err, "namespace controller");
        }
    }
}

/// How many Terminating namespaces one pass empties at once. A pass reads every namespaced resource of each
/// namespace, so many namespaces at once (a tenant's, or all of them after a restart) would otherwise be bound
/// by the store's round trips (etcd), one after the other.
const PARALLEL: usize = 16;

/// One pass over every Terminating namespace, `PARALLEL` at a time; the first failure is reported once all are
/// done (one namespace's failure does not hold the others up).
pub async fn reconcile(server: &ApiServer) -> ApiResult<()> {
    let namespaces = server.namespaces();
    let passes = futures::stream::iter(server.terminating_namespaces.snapshot())
        .map(|(space, name)| reconcile_one(server, &namespaces, space, name))
        .buffer_unordered(PARALLEL);
    let outcomes: Vec<ApiResult<()>> = passes.collect().await;
    outcomes.into_iter().collect()
}

/// Empties one Terminating namespace; once nothing is left, removes it.
async fn reconcile_one(server: &ApiServer, namespaces: &ResourceInfo, space: SpaceName, name: String) -> ApiResult<()> {
    let cluster = Scope::one(space.clone(), None);
    let content = Scope::one(space.clone(), Some(name.clone()));
    let custom = server.crds.stored_in(&space);
    let namespaced = server.resources.all().iter().chain(&custom).filter(|r| r.namespaced).map(|r| &**r);
    if !delete_content(server, namespaced, &content).await? {
        return Ok(());
    }
    match finalize(server, namespaces, &cluster, &name).await {
        Ok(_) => Ok(()),
        Err(ApiError { code: 404, .. }) => {
            server.terminating_namespaces.set(&space, &name, false);
            Ok(())
        }
        Err(err) => Err(err),
    }
}

//! The caches' feed from the store's watch. When other processes write the same store (kspaces replicas sharing
//! one etcd), a cache told only of this process's writes goes stale: `Feed::run` tells every write observer of
//! each write any process makes, from one watch of the whole store, in revision order, as kube's informers are
//! fed. This process's own writes still reach the observers synchronously, before they are answered (a client
//! reads its own writes through the replica it wrote through); the feed tells them again a moment later, which
//! the revision-guarded caches (`RevisionMap`) ignore and the controllers' queues take as one more look.
//!
//! A watch that breaks resumes after the last revision it delivered. One that cannot (its history compacted away
//! while this process was cut off from the store) primes the caches again from a fresh list, as a reflector
//! re-lists and replaces: objects created or changed meanwhile are caught up, and what a cache holds that the list
//! no longer shows is told deleted (`GenericStore::relist`); what was read on demand (RBAC policies) is dropped
//! and read again (`WriteObserver::resync`).

use std::sync::Arc;
use std::time::Duration;

use kspaces_storage::{Event, EventKind, KeyParts, Revision, SpaceName, StorageError, WatchFrom, WatchItem, WatchOptions};
use serde_json::Value;

use super::observe::WriteObserver;
use super::stored::set_resource_version;
use super::{GenericStore, ResourceInfo, ResourceTable};

/// Which resource row serves the objects stored under a key: a built-in, or a CRD or bound API this process
/// knows of (by the feed's order, a CRD's own write is delivered before its objects').
pub trait Rows: Send + Sync {
    fn row(&self, space: &SpaceName, parts: &KeyParts<'_>) -> Option<Arc<ResourceInfo>>;
}

/// What the feed delivers to, and how it primes again. One feed follows one storage cluster: each cluster has its
/// own revisions, and a key is on one cluster only, so the feeds of several clusters tell the caches of
/// different objects and need no order between them.
#[derive(Clone)]
pub struct Feed {
    /// The storage cluster followed.
    pub store: kspaces_storage::Store,
    pub registry: GenericStore,
    pub rows: Arc<dyn Rows>,
    /// The caches primed from a list at startup (`GenericStore::prime`), primed again when the watch cannot
    /// resume.
    pub primed: Vec<Arc<dyn WriteObserver>>,
    pub table: ResourceTable,
}

/// The longest wait between two attempts to watch again.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

impl Feed {
    /// Delivers every write after `after` to the observers, forever (until the store shuts down).
    pub async fn run(self, after: Revision) {
        let store = self.store.clone();
        let everything = store.layout().everything();
        let mut last = after;
        let mut backoff = Duration::from_millis(50);
        loop {
            let mut watcher = match store.watch(&everything, WatchFrom::After(last), WatchOptions { bookmarks: true }).await {
                Ok(watcher) => watcher,
                Err(StorageError::Compacted { compacted, .. }) => {
                    tracing::error!(%last, %compacted, "the caches' feed cannot resume below the compacted revision; priming them again");
                    last = self.prime_again().await;
                    continue;
                }
                Err(err) => {
                    tracing::warn!(%err, %last, "the caches' feed cannot watch the store; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            };
            loop {
                match watcher.next().await {
                    Some(Ok(WatchItem::Event(event))) => {
                        self.deliver(&event, &store);
                        last = event.revision;
                        backoff = Duration::from_millis(50);
                    }
                    Some(Ok(WatchItem::Bookmark(revision))) => last = last.max(revision),
                    Some(Err(StorageError::Compacted { compacted, .. })) => {
                        tracing::error!(%last, %compacted, "the caches' feed lost history to compaction; priming them again");
                        last = self.prime_again().await;
                        break;
                    }
                    Some(Err(err)) => {
                        tracing::warn!(%err, %last, "the caches' feed broke; resuming");
                        break;
                    }
                    None => return,
                }
            }
        }
    }

    /// Tells the observers of one write.
    pub(crate) fn deliver(&self, event: &Event, store: &kspaces_storage::Store) {
        let Ok(parts) = event.key.parts(store.layout()) else { return };
        let Ok(space) = SpaceName::new(parts.space) else { return };
        // No row serves them (a custom resource whose CRD is gone): no cache follows them.
        let Some(row) = self.rows.row(&space, &parts) else { return };
        let Ok(mut object) = serde_json::from_slice::<Value>(&event.value) else {
            tracing::warn!(key = %event.key, "the caches' feed skips a stored object that is not JSON");
            return;
        };
        set_resource_version(&mut object, event.revision);
        match event.kind {
            EventKind::Deleted => self.registry.notify_deleted(&row, &space, parts.name, &object, event.revision),
            EventKind::Added | EventKind::Modified => self.registry.notify(&row, &space, parts.name, Some(&object), event.revision),
        }
    }

    /// Primes the caches again from a fresh list, what the list no longer shows told deleted (a reflector's
    /// replace), retrying until it can; returns the revision to watch after.
    pub(crate) async fn prime_again(&self) -> Revision {
        self.registry.resync_observers();
        let mut backoff = Duration::from_millis(50);
        loop {
            let listed = async {
                let at = self.store.current_revision().await?;
                self.registry.relist(&self.primed, &self.table).await?;
                Ok::<_, crate::status::ApiError>(at)
            };
            match listed.await {
                Ok(at) => return at,
                Err(err) => {
                    tracing::warn!(err = %err.message, "priming the caches again failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }
}

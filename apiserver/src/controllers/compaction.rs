//! The compactor: like kube-apiserver, every interval it compacts storage history to the revision it saw one
//! interval earlier, so watches and continue tokens stay resumable for at least one interval.

use std::time::Duration;

use kspaces_storage::{Revision, Store};

/// Runs forever.
pub async fn run(store: Store, interval: Duration) {
    let mut ticker = tokio::time::interval(interval);
    let mut previous: Option<Revision> = None;
    loop {
        ticker.tick().await;
        if let Some(revision) = previous {
            if let Err(err) = store.compact(revision).await {
                tracing::warn!(%err, %revision, "compaction failed");
            }
        }
        match store.current_revision().await {
            Ok(revision) => previous = Some(revision),
            Err(err) => tracing::warn!(%err, "cannot read the current revision"),
        }
    }
}

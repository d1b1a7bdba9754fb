//! The compactor: like kube-apiserver, every interval it compacts storage history to the revision it saw one
//! interval earlier, so watches and continue tokens stay resumable for at least one interval.

use std::time::Duration;

use kspaces_storage::{Clusters, Revision, Store};

/// Runs forever, on every storage cluster (each has its own revisions).
pub async fn run(clusters: Clusters, interval: Duration) {
    let members: Vec<Store> = clusters.members().iter().map(|(_, store)| store.clone()).collect();
    futures::future::join_all(members.into_iter().map(|store| compact(store, interval))).await;
}

async fn compact(store: Store, interval: Duration) {
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

//! The namespace controller: empties Terminating namespaces (honouring finalizers), then removes them.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::registry::store::{DeleteOptions, ListOptions};
use crate::registry::Scope;
use crate::state::ApiServer;
use crate::status::ApiResult;

/// Runs forever, checking for Terminating namespaces every `interval`.
pub async fn run(server: Arc<ApiServer>, interval: Duration) {
    let mut ticker = tokio::time::interval(interval);
    loop {
        ticker.tick().await;
        if let Err(err) = reconcile(&server).await {
            tracing::warn!(%err, "namespace controller");
        }
    }
}

/// One pass over every Terminating namespace of the system space.
pub async fn reconcile(server: &ApiServer) -> ApiResult<()> {
    let namespaces = server.namespaces();
    let cluster = Scope { space: server.system_space(), namespace: None };
    let (items, _) = server.registry.list(&namespaces, &cluster, &ListOptions::default()).await?;
    for namespace in items.iter().filter(|ns| ns.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())) {
        let Some(name) = namespace.pointer("/metadata/name").and_then(Value::as_str) else { continue };
        if empty_namespace(server, name).await? {
            server.registry.guaranteed_update(&namespaces, &cluster, name, false, false, |old| {
                let mut new = old.clone();
                new["spec"]["finalizers"] = json!([]);
                Ok(new)
            }).await?;
        }
    }
    Ok(())
}

/// Deletes everything in the namespace; true once nothing is left.
async fn empty_namespace(server: &ApiServer, namespace: &str) -> ApiResult<bool> {
    let scope = Scope { space: server.system_space(), namespace: Some(namespace.to_owned()) };
    let mut empty = true;
    for resource in server.resources.all().iter().filter(|r| r.namespaced) {
        let (items, _) = server.registry.list(resource, &scope, &ListOptions::default()).await?;
        for item in &items {
            empty = false;
            let Some(name) = item.pointer("/metadata/name").and_then(Value::as_str) else { continue };
            if let Err(err) = server.registry.delete(resource, &scope, name, &DeleteOptions::default()).await {
                if err.code != 404 {
                    return Err(err);
                }
            }
        }
    }
    Ok(empty)
}

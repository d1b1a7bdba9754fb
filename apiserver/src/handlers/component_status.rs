//! `componentstatuses`, answered as kube-apiserver answers it (computed on each request, never stored), but only
//! with the components kspaces has: its storage. kube 1.32 lists `scheduler`, `controller-manager` and `etcd-0`;
//! kspaces runs no scheduler, and its controllers run inside the API server rather than as a controller-manager
//! process, so neither is listed. Each storage cluster is one component: `etcd-<n>` on etcd, `sled-<n>` on the
//! sled store (`n` the storage cluster's number), healthy when it answers a read of its current revision.

use actix_web::HttpResponse;
use serde_json::{json, Value};

use super::{respond, Ctx};
use crate::negotiate::{Output, Target};
use crate::table;
use crate::status::{ApiError, ApiResult};

/// The components and their health, now.
async fn components(ctx: &Ctx) -> Vec<Value> {
    let clusters = ctx.server.registry.reader().clusters().clone();
    let mut items = Vec::new();
    for (id, store) in clusters.members() {
        let name = format!("{}-{id}", if store.shared() { "etcd" } else { "sled" });
        let condition = match store.current_revision().await {
            Ok(_) => json!({"type": "Healthy", "status": "True", "message": "ok"}),
            Err(err) => json!({"type": "Healthy", "status": "False", "error": err.to_string()}),
        };
        items.push(json!({"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": name, "creationTimestamp": null}, "conditions": [condition]}));
    }
    items
}

/// GET of one component or the list.
pub async fn handle(ctx: Ctx) -> ApiResult<HttpResponse> {
    let items = components(&ctx).await;
    match ctx.info.verb.as_str() {
        "get" => {
            let item = items.into_iter().find(|item| item.pointer("/metadata/name").and_then(Value::as_str) == Some(ctx.info.name.as_str()))
                .ok_or_else(|| ApiError::not_found("", "componentstatuses", &ctx.info.name))?;
            ctx.respond_object(200, &item)
        }
        "list" => {
            let output = ctx.output(true)?;
            match output.target {
                Target::Table => {
                    let table = table::build_table(&ctx.resource, &items, json!({}), ctx.include_object()?, chrono::Utc::now());
                    respond(200, output, &table)
                }
                _ => {
                    let list = json!({"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": items});
                    respond(200, Output { format: output.format, target: Target::Object }, &list)
                }
            }
        }
        verb => Err(ApiError::method_not_supported(verb, "componentstatuses")),
    }
}

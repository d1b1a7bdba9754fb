//! The CRD controller: a deleted CRD's objects are deleted (for a system CRD, also those tenants made through
//! it, in every space), then its cleanup finalizer is lifted, which removes the CRD. Until then the CRD stays
//! `Terminating`: its objects are still served, but no new ones can be created.
//!
//! It also accepts the names of a CRD refused them (`NamesAccepted=False`) once the CRD holding them is gone or
//! renamed, as kube's naming controller does: the CRD is written again, and the write's status
//! (`crds::strategy`) accepts its names and establishes it.

use std::sync::Arc;
use std::time::Duration;

use kspaces_crd::definition::CLEANUP_FINALIZER;
use kspaces_storage::{ApiIdentity, SpaceName};
use serde_json::Value;

use super::BATCH;
use crate::registry::store::{DeleteOptions, ListOptions, Part};
use crate::registry::managed::SERVER_MANAGER;
use crate::registry::{ResourceInfo, Scope, Spaces, WriteContext};
use crate::state::ApiServer;
use crate::status::{ApiError, ApiResult};
use crate::tenancy;

/// Runs forever, checking the Terminating CRDs every `interval`.
pub async fn run(server: Arc<ApiServer>, interval: Duration) {
    let mut ticker = tokio::time::interval(interval);
    loop {
        ticker.tick().await;
        for (space, name) in server.crds.terminating() {
            if let Err(err) = reconcile(&server, &space, &name).await {
                tracing::warn!(%err, %space, name, "CRD controller");
            }
        }
        for (space, name) in server.crds.unaccepted() {
            if server.crds.names_freed(&space, &name) {
                if let Err(err) = accept_names(&server, &space, &name).await {
                    tracing::warn!(%err, %space, name, "CRD naming");
                }
            }
        }
    }
}

/// One pass over a Terminating CRD: deletes a batch of its objects, or lifts its finalizer when none are left.
pub async fn reconcile(server: &ApiServer, space: &SpaceName, name: &str) -> ApiResult<()> {
    let mut empty = true;
    for row in server.crds.storage_rows(space, name) {
        empty &= delete_objects(server, &row, space).await?;
    }
    if !empty {
        return Ok(());
    }
    let crds = server.resources.by_kind("apiextensions.k8s.io", "CustomResourceDefinition").cloned()
        .ok_or_else(|| ApiError::internal("no CustomResourceDefinition resource"))?;
    let lifted = server.registry.guaranteed_update(&crds, &Scope::one(space.clone(), None), name, Part::Main, &WriteContext::server(SERVER_MANAGER, ""), |old| {
        let mut new = old.clone();
        if let Some(finalizers) = new.pointer_mut("/metadata/finalizers").and_then(Value::as_array_mut) {
            finalizers.retain(|f| f != CLEANUP_FINALIZER);
        }
        Ok(new)
    }).await;
    match lifted {
        Ok(_) | Err(ApiError { code: 404, .. }) => Ok(()),
        Err(err) => Err(err),
    }
}

/// Writes CRD `name` again, unchanged: its status is computed anew at the write, with the names now free.
async fn accept_names(server: &ApiServer, space: &SpaceName, name: &str) -> ApiResult<()> {
    let crds = server.resources.by_kind("apiextensions.k8s.io", "CustomResourceDefinition").cloned()
        .ok_or_else(|| ApiError::internal("no CustomResourceDefinition resource"))?;
    let written = server.registry.guaranteed_update(&crds, &Scope::one(space.clone(), None), name, Part::Status, &WriteContext::server(SERVER_MANAGER, "status"), |old| Ok(old.clone())).await;
    match written {
        Ok(_) | Err(ApiError { code: 404, .. }) => Ok(()),
        Err(err) => Err(err),
    }
}

/// Deletes up to a batch of one identity's objects: the CRD's own space's (`local`), or every space's (a system
/// CRD's shared identity). True if none were left.
async fn delete_objects(server: &ApiServer, row: &ResourceInfo, space: &SpaceName) -> ApiResult<bool> {
    let shared = row.custom.as_ref().is_some_and(|c| c.identity != ApiIdentity::Local);
    let scope = if shared { Scope { spaces: Spaces::All, namespace: None } } else { Scope::one(space.clone(), None) };
    let options = ListOptions { limit: Some(BATCH), ..ListOptions::default() };
    let (items, _) = server.registry.list(row, &scope, &options).await?;
    for item in &items {
        let text = |pointer: &str| item.pointer(pointer).and_then(Value::as_str);
        let Some(name) = text("/metadata/name") else { continue };
        let item_space = match text("/metadata/tenant") {
            Some(tenant) if shared => tenancy::space_of(tenant)?,
            _ => space.clone(),
        };
        let namespace = text("/metadata/namespace").filter(|_| row.namespaced).map(str::to_owned);
        match server.registry.delete(row, &Scope::one(item_space, namespace), name, &DeleteOptions::default()).await {
            Ok(_) | Err(ApiError { code: 404 | 409, .. }) => {}
            Err(err) => return Err(err),
        }
    }
    Ok(items.is_empty())
}

//! The CRD controller: a deleted CRD's objects are deleted (for a system CRD, also those tenants made through
//! it, in every space), then its cleanup finalizer is lifted, which removes the CRD. Until then the CRD stays
//! `Terminating`: its objects are still served, but no new ones can be created.
//!
//! It also accepts the names of a CRD refused them (`NamesAccepted=False`) once the CRD holding them is gone or
//! renamed, as kube's naming controller does: the CRD is written again, and the write's status
//! (`kinds::crd`) accepts its names and establishes it.

use std::sync::Arc;
use std::time::Duration;

use kspaces_crd::definition::CLEANUP_FINALIZER;
use kspaces_storage::{ApiIdentity, SpaceName};
use serde_json::Value;

use super::BATCH;
use crate::registry::{DeleteOptions, GenericStore, Part, ResourceInfo, Scope, Spaces, WriteContext, SERVER_MANAGER};
use crate::resolver::Resolver;
use crate::status::{ApiError, ApiResult};

/// The CRD controller: what it reads and writes through.
#[derive(Clone)]
pub struct CrdController {
    pub registry: GenericStore,
    /// Which CRDs are Terminating or waiting for names, and their objects' rows.
    pub resolver: Arc<Resolver>,
    /// The CustomResourceDefinition resource.
    pub crds: Arc<ResourceInfo>,
}

impl CrdController {
    /// Runs forever, checking the Terminating CRDs and those waiting for names every `interval`.
    pub async fn run(self, interval: Duration) {
        let mut ticker = tokio::time::interval(interval);
        loop {
            ticker.tick().await;
            for (space, name) in self.resolver.terminating() {
                if let Err(err) = self.reconcile(&space, &name).await {
                    tracing::warn!(%err, %space, name, "CRD controller");
                }
            }
            for (space, name) in self.resolver.unaccepted() {
                if self.resolver.names_freed(&space, &name) {
                    if let Err(err) = self.accept_names(&space, &name).await {
                        tracing::warn!(%err, %space, name, "CRD naming");
                    }
                }
            }
        }
    }

    /// One pass over a Terminating CRD: deletes a batch of its objects, or lifts its finalizer when none are
    /// left.
    pub async fn reconcile(&self, space: &SpaceName, name: &str) -> ApiResult<()> {
        let mut empty = true;
        for row in self.resolver.storage_rows(space, name) {
            empty &= self.delete_objects(&row, space).await?;
        }
        if !empty {
            return Ok(());
        }
        let scope = Scope::one(space.clone(), None);
        let lifted = self.registry.guaranteed_update(&self.crds, &scope, name, Part::Main, &WriteContext::server(SERVER_MANAGER, ""), |old| {
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
    async fn accept_names(&self, space: &SpaceName, name: &str) -> ApiResult<()> {
        let scope = Scope::one(space.clone(), None);
        let written = self.registry.guaranteed_update(&self.crds, &scope, name, Part::Status, &WriteContext::server(SERVER_MANAGER, "status"), |old| Ok(old.clone())).await;
        match written {
            Ok(_) | Err(ApiError { code: 404, .. }) => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// Deletes up to a batch of one identity's objects: the CRD's own space's (`local`), or every space's (a
    /// system CRD's shared identity). True if none were left.
    async fn delete_objects(&self, row: &ResourceInfo, space: &SpaceName) -> ApiResult<bool> {
        let shared = row.custom.as_ref().is_some_and(|c| c.identity != ApiIdentity::Local);
        let scope = if shared { Scope { spaces: Spaces::All, namespace: None } } else { Scope::one(space.clone(), None) };
        let items = self.registry.reader().first(row, &scope, BATCH).await?;
        for (item_space, item) in &items {
            let text = |pointer: &str| item.pointer(pointer).and_then(Value::as_str);
            let Some(name) = text("/metadata/name") else { continue };
            let namespace = text("/metadata/namespace").filter(|_| row.namespaced).map(str::to_owned);
            match self.registry.delete(row, &Scope::one(item_space.clone(), namespace), name, &DeleteOptions::default(), None).await {
                Ok(_) | Err(ApiError { code: 404 | 409, .. }) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(items.is_empty())
    }
}

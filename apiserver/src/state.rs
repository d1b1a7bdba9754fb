//! `ApiServer`: the state every request handler shares.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use kspaces_storage::{SpaceName, Store};

use crate::filters::authenticate::TokenFile;
use crate::metrics::Metrics;
use crate::openapi::OpenApi;
use crate::registry::{GenericStore, ResourceInfo, ResourceTable};

/// Shared server state.
pub struct ApiServer {
    pub registry: GenericStore,
    pub resources: ResourceTable,
    pub tokens: TokenFile,
    pub metrics: Metrics,
    pub started: Instant,
    openapi: OnceLock<OpenApi>,
}

impl ApiServer {
    pub fn new(store: Store, resources: ResourceTable, tokens: TokenFile) -> Arc<ApiServer> {
        Arc::new(ApiServer {
            registry: GenericStore::new(store),
            resources,
            tokens,
            metrics: Metrics::default(),
            started: Instant::now(),
            openapi: OnceLock::new(),
        })
    }

    /// The OpenAPI documents, built on first use (about 50-80 ms once; see `server.rs`).
    pub fn openapi(&self) -> &OpenApi {
        self.openapi.get_or_init(|| {
            let resources: Vec<ResourceInfo> = self.resources.all().iter().map(|r| (**r).clone()).collect();
            OpenApi::build(&resources)
        })
    }

    /// The `Namespace` resource (namespaced creates check their namespace through it).
    pub fn namespaces(&self) -> Arc<ResourceInfo> {
        self.resources.lookup("", "v1", "namespaces").cloned().unwrap_or_else(|| {
            Arc::new(ResourceInfo {
                group: String::new(),
                version: "v1".into(),
                kind: "Namespace".into(),
                plural: "namespaces".into(),
                singular: "namespace".into(),
                short_names: vec!["ns".into()],
                categories: vec![],
                namespaced: false,
                subresources: vec![],
                verbs: vec![],
                definition: None,
            })
        })
    }

    /// The system space: tenant `system`, workspace `root`.
    pub fn system_space(&self) -> SpaceName {
        SpaceName::system()
    }
}

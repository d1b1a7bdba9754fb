//! The conformance suite against the in-memory reference backend.

use async_trait::async_trait;
use kspaces_storage::conformance::Factory;
use kspaces_storage::{Store, StoreConfig};

struct Memory;

#[async_trait]
impl Factory for Memory {
    async fn fresh(&self, config: StoreConfig) -> Store {
        Store::memory(config)
    }

    fn exclusive_revisions(&self) -> bool {
        true
    }
}

kspaces_storage::conformance_tests!(Memory);

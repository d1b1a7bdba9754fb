//! The conformance suite against a real etcd: one etcd per test binary, one key prefix per store.
#![cfg(feature = "etcd")]

#[path = "support/etcd.rs"]
mod etcd_support;

use async_trait::async_trait;
use kspaces_storage::conformance::Factory;
use kspaces_storage::{Store, StoreConfig};

struct Etcd;

#[async_trait]
impl Factory for Etcd {
    async fn fresh(&self, config: StoreConfig) -> Store {
        let server = etcd_support::shared();
        let config = StoreConfig { layout: etcd_support::unique_layout(), ..config };
        Store::open_etcd(&server.config(), config).await.expect("open an etcd store")
    }
}

kspaces_storage::conformance_tests!(Etcd);

//! The conformance suite against a real etcd: one etcd per test binary, one key prefix per store; checks that
//! compact get an etcd of their own (compaction is global in etcd).

#[path = "support/etcd.rs"]
mod etcd_support;

use std::sync::Mutex;

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

    /// Compaction is global in etcd: a check that compacts gets an etcd of its own, kept until the process ends.
    async fn fresh_for_compaction(&self, config: StoreConfig) -> Store {
        static OWN: Mutex<Vec<etcd_support::EtcdServer>> = Mutex::new(Vec::new());
        let server = etcd_support::EtcdServer::start();
        let etcd = server.config();
        OWN.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(server);
        let config = StoreConfig { layout: etcd_support::unique_layout(), ..config };
        Store::open_etcd(&etcd, config).await.expect("open an etcd store")
    }
}

kspaces_storage::conformance_tests!(Etcd);

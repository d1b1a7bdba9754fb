//! The conformance suite against the sled backend, each store in its own temporary directory.

use async_trait::async_trait;
use kspaces_storage::conformance::Factory;
use kspaces_storage::sled::SledConfig;
use kspaces_storage::{Store, StoreConfig};

struct Sled {
    dirs: std::sync::Mutex<Vec<tempfile::TempDir>>,
}

#[async_trait]
impl Factory for Sled {
    async fn fresh(&self, config: StoreConfig) -> Store {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open_sled(&SledConfig::new(dir.path().join("db")), config).expect("open sled");
        self.dirs.lock().expect("lock").push(dir);
        store
    }

    fn exclusive_revisions(&self) -> bool {
        true
    }
}

kspaces_storage::conformance_tests!(Sled { dirs: Default::default() });

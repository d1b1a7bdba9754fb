//! The conformance suite every backend passes. Each check is named after the guarantee it checks
//! (`docs/watch-guarantees.md` lists them); [`conformance_tests!`](crate::conformance_tests) turns the whole
//! suite into one `#[tokio::test]` per check for a given [`Factory`].
//!
//! Checks never assume revisions start at 1 or are contiguous: on etcd other tests share the revision counter.

use async_trait::async_trait;
use bytes::Bytes;

use crate::key::{ApiIdentity, GroupResource, Key, ResourceKeys, SpaceName};
use crate::{Conflict, Store, StoreConfig};

/// Opens fresh, empty stores for the suite.
#[async_trait]
pub trait Factory: Send + Sync {
    /// A new store that shares no keys with any store opened before.
    async fn fresh(&self, config: StoreConfig) -> Store;
}

/// A test store configuration: no bookmark ticker (checks send progress themselves).
pub fn test_config() -> StoreConfig {
    StoreConfig { bookmark_interval: None, ..StoreConfig::default() }
}

/// `core/configmaps` keys in the store's layout.
pub fn configmaps(store: &Store) -> ResourceKeys {
    store.layout().resource(&GroupResource::new("", "configmaps"), &ApiIdentity::BuiltIn).expect("valid resource")
}

pub fn space(name: &str) -> SpaceName {
    SpaceName::new(name).expect("valid space")
}

pub fn key(store: &Store, space_name: &str, namespace: &str, name: &str) -> Key {
    configmaps(store).object(&space(space_name), Some(namespace), name).expect("valid key")
}

pub fn value(text: &str) -> Bytes {
    Bytes::from(text.to_owned())
}

/// create returns a record whose revision is new; get returns it.
pub async fn create_then_get(factory: &dyn Factory) {
    let store = factory.fresh(test_config()).await;
    let before = store.current_revision().await.expect("revision");
    let k = key(&store, "t1", "default", "a");
    let created = store.create(&k, value("one")).await.expect("no error").expect("created");
    assert!(created.revision > before);
    assert_eq!(created.create_revision, created.revision);
    let got = store.get(&k).await.expect("no error").expect("present");
    assert_eq!(got, created);
}

/// create of an existing key fails and returns the current record.
pub async fn create_existing_conflicts(factory: &dyn Factory) {
    let store = factory.fresh(test_config()).await;
    let k = key(&store, "t1", "default", "a");
    let created = store.create(&k, value("one")).await.expect("no error").expect("created");
    match store.create(&k, value("two")).await.expect("no error") {
        Err(Conflict::AlreadyExists(existing)) => assert_eq!(existing, created),
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
}

/// Generates one `#[tokio::test]` per check of the suite for `$factory` (an expression of a type that
/// implements [`Factory`]).
#[macro_export]
macro_rules! conformance_tests {
    ($factory:expr; $($check:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                let factory = $factory;
                $crate::conformance::$check(&factory).await;
            }
        )*
    };
    ($factory:expr) => {
        $crate::conformance_tests!($factory;
            create_then_get,
            create_existing_conflicts,
        );
    };
}

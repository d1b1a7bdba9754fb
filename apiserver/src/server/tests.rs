//! Two servers' registries over one store, as two replicas over one etcd: what one writes reaches the other's
//! caches through the store's watch (`registry::feed`), deletions included.

use std::time::Duration;

use kspaces_storage::{SpaceName, Store, StoreConfig};
use serde_json::json;

use super::Core;
use crate::config::AuthorizationMode;
use crate::registry::feed::Feed;
use crate::registry::{Scope, Spaces, WriteContext, SERVER_MANAGER};

async fn replica(store: &Store) -> Core {
    let core = Core::new(store.clone(), vec![AuthorizationMode::Rbac]);
    core.prime().await.unwrap_or_else(|e| panic!("{e}"));
    core
}

/// Waits (up to 5 s) until `probe` holds.
async fn eventually(what: &str, probe: impl Fn() -> bool) {
    for _ in 0..500 {
        if probe() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what}: not seen within 5 s");
}

#[tokio::test]
async fn a_replica_follows_what_another_writes_to_the_store() {
    let store = Store::memory(StoreConfig { bookmark_interval: None, ..StoreConfig::default() });
    let one = replica(&store).await;
    let other = replica(&store).await;
    let from = store.current_revision().await.unwrap_or_else(|e| panic!("{e}"));
    let feed = Feed { store: store.clone(), registry: one.registry.clone(), rows: one.resolver.clone(), primed: one.primed(), table: one.resources.clone() };
    tokio::spawn(feed.run(from));
    let write = WriteContext::server(SERVER_MANAGER, "");
    let system = Scope::one(SpaceName::system(), None);
    let row = |group: &str, kind: &str| other.resources.by_kind(group, kind).cloned().unwrap_or_else(|| panic!("no {kind}"));

    for tenant in ["system", "t1"] {
        other.registry.create(&row("", "Tenant"), &system, json!({"metadata": {"name": tenant}}), &write).await.unwrap_or_else(|e| panic!("{e}"));
    }
    eventually("a tenant the other replica made", || one.tenants.phase("t1").is_some()).await;
    let t1 = SpaceName::new("t1").unwrap_or_else(|e| panic!("{e}"));
    eventually("its space in the tree", || one.tree.tenant_of(&t1) == "t1").await;

    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}}]},
    });
    let in_t1 = Scope::one(t1.clone(), None);
    other.registry.create(&row("apiextensions.k8s.io", "CustomResourceDefinition"), &in_t1, crd, &write).await.unwrap_or_else(|e| panic!("{e}"));
    let serves = || one.resolver.lookup(&Spaces::One(t1.clone()), "example.com", "v1", "widgets").is_some();
    eventually("a CRD the other replica made", serves).await;

    let types = row("tenancy.kcp.io", "WorkspaceType");
    let team = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType", "metadata": {"name": "team"}, "spec": {}});
    other.registry.create(&types, &in_t1, team, &write).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("a WorkspaceType the other replica made", || one.types.get(&t1, "team").is_some()).await;
    other.registry.delete(&types, &in_t1, "team", &Default::default(), None).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("its deletion", || one.types.get(&t1, "team").is_none()).await;
}

#[tokio::test]
async fn after_a_gap_in_the_feed_a_relist_forgets_what_was_deleted_meanwhile() {
    let store = Store::memory(StoreConfig { bookmark_interval: None, ..StoreConfig::default() });
    let one = replica(&store).await;
    let other = replica(&store).await;
    let write = WriteContext::server(SERVER_MANAGER, "");
    let row = |group: &str, kind: &str| other.resources.by_kind(group, kind).cloned().unwrap_or_else(|| panic!("no {kind}"));
    let system = Scope::one(SpaceName::system(), None);
    for tenant in ["system", "t1", "t2"] {
        other.registry.create(&row("", "Tenant"), &system, json!({"metadata": {"name": tenant}}), &write).await.unwrap_or_else(|e| panic!("{e}"));
    }
    let t1 = SpaceName::new("t1").unwrap_or_else(|e| panic!("{e}"));
    let types = row("tenancy.kcp.io", "WorkspaceType");
    let in_t1 = Scope::one(t1.clone(), None);
    for name in ["kept", "gone"] {
        let object = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType", "metadata": {"name": name}, "spec": {}});
        other.registry.create(&types, &in_t1, object, &write).await.unwrap_or_else(|e| panic!("{e}"));
    }
    one.prime().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(one.types.get(&t1, "gone").is_some() && one.tenants.phase("t2").is_some(), "primed with both");

    // Written while `one` hears nothing (its feed cut off, the history compacted away).
    other.registry.delete(&types, &in_t1, "gone", &Default::default(), None).await.unwrap_or_else(|e| panic!("{e}"));
    let added = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType", "metadata": {"name": "new"}, "spec": {}});
    other.registry.create(&types, &in_t1, added, &write).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(one.types.get(&t1, "gone").is_some(), "not heard of yet");

    let feed = Feed { store: store.clone(), registry: one.registry.clone(), rows: one.resolver.clone(), primed: one.primed(), table: one.resources.clone() };
    feed.prime_again().await;
    assert!(one.types.get(&t1, "gone").is_none(), "deleted during the gap: forgotten by the re-list");
    assert!(one.types.get(&t1, "kept").is_some() && one.types.get(&t1, "new").is_some(), "the others listed");
    assert!(one.tenants.phase("t2").is_some() && one.tree.tenant_of(&t1) == "t1", "what is still there stays");
}

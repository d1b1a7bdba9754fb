//! The sled store across a clean restart: data, revisions, watch history and compaction all survive.

use std::path::Path;
use std::time::Duration;

use kspaces_storage::conformance::{configmaps, key, put_new, put_over, space, test_config, value};
use kspaces_storage::sled::{check_path, SledConfig};
use kspaces_storage::{
    EventKind, HubConfig, ListRequest, Revision, StorageError, Store, StoreConfig, WatchFrom, WatchItem, WatchOptions,
    Watcher,
};

fn open(path: &Path) -> Store {
    Store::open_sled(&SledConfig::new(path), test_config()).expect("open sled")
}

async fn next_event(watcher: &mut Watcher) -> (EventKind, String, bytes::Bytes, Revision) {
    match tokio::time::timeout(Duration::from_secs(10), watcher.next()).await.expect("an item in time") {
        Some(Ok(WatchItem::Event(e))) => (e.kind, e.key.as_str().to_owned(), e.value.clone(), e.revision),
        other => panic!("expected an event, got {other:?}"),
    }
}

#[tokio::test]
async fn data_and_revisions_survive_reopen() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (a, b, kept, revision) = {
        let store = open(dir.path());
        let a = put_new(&store, &key(&store, "t1", "default", "a"), "a1").await;
        let a = put_over(&store, &key(&store, "t1", "default", "a"), "a2").await.revision.max(a.revision);
        let b = put_new(&store, &key(&store, "t1", "default", "b"), "b1").await;
        store.delete(&key(&store, "t1", "default", "b"), None).await.expect("no error").expect("deleted");
        let kept = put_new(&store, &key(&store, "t10", "default", "c"), "c1").await;
        (a, b, kept, store.current_revision().await.expect("revision"))
    };
    assert!(check_path(dir.path()).expect("check").is_empty(), "a clean shutdown leaves a consistent store");
    let store = open(dir.path());
    assert_eq!(store.current_revision().await.expect("revision"), revision);
    let got_a = store.get(&key(&store, "t1", "default", "a")).await.expect("get").expect("a survives");
    assert_eq!((got_a.value, got_a.revision), (value("a2"), a));
    assert_eq!(store.get(&key(&store, "t1", "default", "b")).await.expect("get"), None, "deletes survive");
    assert_eq!(store.get(&kept.key).await.expect("get"), Some(kept));
    let past = ListRequest { revision: Some(b.revision), ..Default::default() };
    let old = store.list(&configmaps(&store).space(&space("t1")), &past).await.expect("list at a past revision");
    assert_eq!(old.items.len(), 2, "history survives: a and b existed at b's revision");
    let next = put_new(&store, &key(&store, "t1", "default", "d"), "d1").await;
    assert_eq!(next.revision, revision.next(), "revisions continue where they stopped");
}

#[tokio::test]
async fn watch_resumes_from_persisted_history_after_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let k = |store: &Store| key(store, "t1", "default", "a");
    let (from, written) = {
        let store = open(dir.path());
        let from = put_new(&store, &k(&store), "v0").await.revision;
        let mut written = vec![put_over(&store, &k(&store), "v1").await.revision];
        written.push(store.delete(&k(&store), None).await.expect("no error").expect("deleted").revision);
        written.push(put_new(&store, &k(&store), "v2").await.revision);
        (from, written)
    };
    let config = StoreConfig { hub: HubConfig { window: 2, ..HubConfig::default() }, ..test_config() };
    let store = Store::open_sled(&SledConfig::new(dir.path()), config).expect("reopen");
    let range = configmaps(&store).space(&space("t1"));
    let mut watcher = store.watch(&range, WatchFrom::After(from), WatchOptions::default()).await.expect("watch");
    let key_text = k(&store).as_str().to_owned();
    let expected = [
        (EventKind::Modified, value("v1"), written[0]),
        (EventKind::Deleted, value("v1"), written[1]),
        (EventKind::Added, value("v2"), written[2]),
    ];
    for (kind, object, revision) in expected {
        assert_eq!(next_event(&mut watcher).await, (kind, key_text.clone(), object, revision));
    }
    let live = put_over(&store, &k(&store), "v3").await;
    assert_eq!(next_event(&mut watcher).await.3, live.revision, "live events follow the replayed history");
}

#[tokio::test]
async fn compaction_survives_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (old, compacted_at) = {
        let store = open(dir.path());
        let old = put_new(&store, &key(&store, "t1", "default", "a"), "a1").await.revision;
        put_over(&store, &key(&store, "t1", "default", "a"), "a2").await;
        put_new(&store, &key(&store, "t1", "default", "b"), "b1").await;
        let at = store.current_revision().await.expect("revision");
        store.compact(at).await.expect("compact");
        put_over(&store, &key(&store, "t1", "default", "b"), "b2").await;
        (old, at)
    };
    assert!(check_path(dir.path()).expect("check").is_empty());
    let store = open(dir.path());
    assert_eq!(store.compacted_revision().await.expect("compacted"), compacted_at);
    let range = configmaps(&store).space(&space("t1"));
    let past = ListRequest { revision: Some(old), ..Default::default() };
    assert!(matches!(store.list(&range, &past).await, Err(StorageError::Compacted { .. })));
    assert!(matches!(
        store.watch(&range, WatchFrom::After(old), WatchOptions::default()).await,
        Err(StorageError::Compacted { .. })
    ));
    let at = ListRequest { revision: Some(compacted_at), ..Default::default() };
    let items = store.list(&range, &at).await.expect("list at the compaction point").items;
    assert_eq!(items.iter().map(|r| r.value.clone()).collect::<Vec<_>>(), [value("a2"), value("b1")]);
    let mut watcher = store.watch(&range, WatchFrom::After(compacted_at), WatchOptions::default()).await.expect("watch");
    assert_eq!(next_event(&mut watcher).await.2, value("b2"), "history after the compaction point survives");
}

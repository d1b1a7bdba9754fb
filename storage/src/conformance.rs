//! The conformance suite every backend passes. Each check is named after the guarantee it checks
//! (`docs/watch-guarantees.md` lists the watch ones); [`conformance_tests!`](crate::conformance_tests) turns the
//! whole suite into one `#[tokio::test]` per check for a given [`Factory`].
//!
//! Checks never assume revisions start at 1 or are contiguous: on etcd other tests share the revision counter.
//! Where a check would like to say "equal to the current revision", it says so only when the factory promises
//! [`Factory::exclusive_revisions`], and "at least" otherwise.

mod watch;

use async_trait::async_trait;
use base64::Engine;
use bytes::Bytes;

pub use watch::*;

use crate::key::{ApiIdentity, GroupResource, Key, ResourceKeys, SpaceName};
use crate::{Conflict, ListPage, ListRequest, Record, Revision, StorageError, Store, StoreConfig};

/// Opens fresh, empty stores for the suite.
#[async_trait]
pub trait Factory: Send + Sync {
    /// A new store that shares no keys with any store opened before.
    async fn fresh(&self, config: StoreConfig) -> Store;

    /// A new store for a check that compacts. Where compaction reaches beyond one store's keys (etcd compacts
    /// the whole cluster, so a store whose watch feed is just starting on the same etcd would find its start
    /// compacted away), this store shares nothing with the stores other checks run on at the same time.
    async fn fresh_for_compaction(&self, config: StoreConfig) -> Store {
        self.fresh(config).await
    }

    /// True if nothing but the store under test moves its revision counter (memory, sled), so checks may
    /// compare revisions for equality. Stores that share a counter (etcd) keep the default.
    fn exclusive_revisions(&self) -> bool {
        false
    }
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

/// Creates `key` with `text`, which must not exist yet.
pub async fn put_new(store: &Store, key: &Key, text: &str) -> Record {
    store.create(key, value(text)).await.expect("no error").expect("created")
}

/// Replaces `key` with `text` whatever its revision.
pub async fn put_over(store: &Store, key: &Key, text: &str) -> Record {
    store.update(key, value(text), None).await.expect("no error").expect("updated")
}

/// Every page of a list, following continue tokens from `first`.
pub async fn list_all(store: &Store, range: &crate::KeyRange, first: ListRequest) -> Vec<ListPage> {
    let mut pages = vec![store.list(range, &first).await.expect("first page")];
    while let Some(token) = pages.last().and_then(|page| page.continue_token.clone()) {
        let request = ListRequest { continue_token: Some(token), limit: first.limit, ..ListRequest::default() };
        pages.push(store.list(range, &request).await.expect("next page"));
        assert!(pages.len() < 10_000, "pagination does not end");
    }
    pages
}

fn names(records: &[Record]) -> Vec<String> {
    records.iter().map(|r| r.key.as_str().rsplit('/').next().unwrap_or_default().to_owned()).collect()
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
    assert_eq!(store.get(&key(&store, "t1", "default", "b")).await.expect("no error"), None);
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
    assert_eq!(store.get(&k).await.expect("no error"), Some(created), "a failed create changes nothing");
}

/// update with the current revision succeeds; a stale one returns the current record; a missing key is
/// `NotFound` with or without a revision; an unguarded update of an existing key succeeds.
pub async fn update_guarded(factory: &dyn Factory) {
    let store = factory.fresh(test_config()).await;
    let k = key(&store, "t1", "default", "a");
    let created = put_new(&store, &k, "one").await;
    let updated = store.update(&k, value("two"), Some(created.revision)).await.expect("no error").expect("updated");
    assert!(updated.revision > created.revision);
    assert_eq!((updated.create_revision, updated.value.clone()), (created.create_revision, value("two")));
    match store.update(&k, value("stale"), Some(created.revision)).await.expect("no error") {
        Err(Conflict::RevisionMismatch(current)) => assert_eq!(current, updated),
        other => panic!("expected RevisionMismatch, got {other:?}"),
    }
    let missing = key(&store, "t1", "default", "missing");
    for expected in [None, Some(updated.revision)] {
        let outcome = store.update(&missing, value("x"), expected).await.expect("no error");
        assert_eq!(outcome, Err(Conflict::NotFound), "update of a missing key with {expected:?}");
    }
    assert_eq!(store.get(&missing).await.expect("no error"), None, "a failed update creates nothing");
    let unguarded = put_over(&store, &k, "three").await;
    assert!(unguarded.revision > updated.revision);
    assert_eq!(store.get(&k).await.expect("no error"), Some(unguarded));
}

/// delete with a stale revision returns the current record; with the current one it removes the key and
/// returns the previous record and the delete's revision; a missing key is `NotFound`.
pub async fn delete_guarded(factory: &dyn Factory) {
    let store = factory.fresh(test_config()).await;
    let k = key(&store, "t1", "default", "a");
    let created = put_new(&store, &k, "one").await;
    let updated = put_over(&store, &k, "two").await;
    match store.delete(&k, Some(created.revision)).await.expect("no error") {
        Err(Conflict::RevisionMismatch(current)) => assert_eq!(current, updated),
        other => panic!("expected RevisionMismatch, got {other:?}"),
    }
    let deleted = store.delete(&k, Some(updated.revision)).await.expect("no error").expect("deleted");
    assert_eq!(deleted.prev, updated);
    assert!(deleted.revision > updated.revision);
    assert_eq!(store.get(&k).await.expect("no error"), None);
    for expected in [None, Some(updated.revision)] {
        assert_eq!(store.delete(&k, expected).await.expect("no error"), Err(Conflict::NotFound));
    }
    let other = key(&store, "t1", "default", "b");
    let b = put_new(&store, &other, "b").await;
    let deleted = store.delete(&other, None).await.expect("no error").expect("unguarded delete");
    assert_eq!(deleted.prev, b);
    assert!(deleted.revision > b.revision);
}

/// Every write gets a new revision, higher than every earlier one and visible as the current revision.
pub async fn every_write_gets_a_new_revision(factory: &dyn Factory) {
    let store = factory.fresh(test_config()).await;
    let mut last = store.current_revision().await.expect("revision");
    let k = key(&store, "t1", "default", "a");
    let mut revisions = vec![put_new(&store, &k, "1").await.revision, put_over(&store, &k, "2").await.revision];
    revisions.push(store.delete(&k, None).await.expect("no error").expect("deleted").revision);
    revisions.push(put_new(&store, &k, "3").await.revision);
    let _conflict = store.create(&k, value("dup")).await.expect("no error").expect_err("exists");
    revisions.push(put_over(&store, &k, "4").await.revision);
    for revision in revisions {
        assert!(revision > last, "revision {revision} is not above {last}");
        last = revision;
    }
    let current = store.current_revision().await.expect("revision");
    if factory.exclusive_revisions() {
        assert_eq!(current, last, "the current revision is the last write's");
    } else {
        assert!(current >= last);
    }
}

/// A key created again after a delete gets a new create revision.
pub async fn recreate_gets_new_create_revision(factory: &dyn Factory) {
    let store = factory.fresh(test_config()).await;
    let k = key(&store, "t1", "default", "a");
    let first = put_new(&store, &k, "one").await;
    store.delete(&k, None).await.expect("no error").expect("deleted");
    let second = put_new(&store, &k, "two").await;
    assert!(second.create_revision > first.create_revision);
    assert_eq!(second.create_revision, second.revision);
}

/// A list at the current revision sees the latest state; at an older revision, the state then, including keys
/// deleted since and values overwritten since.
pub async fn list_at_current_and_past_revision(factory: &dyn Factory) {
    let store = factory.fresh(test_config()).await;
    let range = configmaps(&store).namespace(&space("t1"), Some("default")).expect("range");
    let [a, b, c, d] = ["a", "b", "c", "d"].map(|n| key(&store, "t1", "default", n));
    let old = vec![put_new(&store, &a, "a1").await, put_new(&store, &b, "b1").await, put_new(&store, &c, "c1").await];
    let then = store.current_revision().await.expect("revision");
    let a2 = put_over(&store, &a, "a2").await;
    store.delete(&b, None).await.expect("no error").expect("deleted");
    let d1 = put_new(&store, &d, "d1").await;
    let now = store.list(&range, &ListRequest::default()).await.expect("list");
    assert!(now.revision >= d1.revision);
    assert_eq!(now.items, vec![a2, old[2].clone(), d1]);
    let past = store.list(&range, &ListRequest { revision: Some(then), ..Default::default() }).await.expect("list");
    assert_eq!(past.items, old);
    assert_eq!(past.revision, then);
}

/// Pages of a list come from one snapshot: writes between pages do not show, nothing repeats or goes missing.
pub async fn list_paginates_one_snapshot(factory: &dyn Factory) {
    let store = factory.fresh(test_config()).await;
    let range = configmaps(&store).namespace(&space("t1"), Some("default")).expect("range");
    for name in ["a", "c", "e", "g", "i"] {
        put_new(&store, &key(&store, "t1", "default", name), name).await;
    }
    let snapshot = store.list(&range, &ListRequest::default()).await.expect("full list");
    let first = store.list(&range, &ListRequest { limit: Some(2), ..Default::default() }).await.expect("page");
    assert_eq!(names(&first.items), ["a", "c"]);
    put_new(&store, &key(&store, "t1", "default", "d"), "d").await;
    store.delete(&key(&store, "t1", "default", "e"), None).await.expect("no error").expect("deleted");
    put_over(&store, &key(&store, "t1", "default", "g"), "g2").await;
    let mut items = first.items.clone();
    let mut token = first.continue_token.clone();
    while let Some(continue_token) = token {
        let request = ListRequest { limit: Some(2), continue_token: Some(continue_token), ..ListRequest::default() };
        let page = store.list(&range, &request).await.expect("next page");
        assert_eq!(page.revision, first.revision, "every page is read at the first page's snapshot");
        assert!(page.items.len() <= 2);
        items.extend(page.items);
        token = page.continue_token;
    }
    assert_eq!(items, snapshot.items, "the pages together are the snapshot, each key once");
    let whole = list_all(&store, &range, ListRequest { limit: Some(1), ..Default::default() }).await;
    let latest: Vec<Record> = whole.into_iter().flat_map(|page| page.items).collect();
    assert_eq!(names(&latest), ["a", "c", "d", "g", "i"]);
}

/// A continue token whose snapshot has been compacted fails with `Expired`.
pub async fn continue_after_compaction_expired(factory: &dyn Factory) {
    let store = factory.fresh_for_compaction(test_config()).await;
    let range = configmaps(&store).space(&space("t1"));
    for name in ["a", "b", "c"] {
        put_new(&store, &key(&store, "t1", "default", name), name).await;
    }
    let first = store.list(&range, &ListRequest { limit: Some(1), ..Default::default() }).await.expect("page");
    let token = first.continue_token.expect("more pages");
    put_over(&store, &key(&store, "t1", "default", "b"), "b2").await;
    let now = store.current_revision().await.expect("revision");
    store.compact(now).await.expect("compact");
    let request = ListRequest { continue_token: Some(token), ..Default::default() };
    match store.list(&range, &request).await {
        Err(StorageError::Expired { requested, .. }) => assert_eq!(requested, first.revision),
        other => panic!("expected Expired, got {other:?}"),
    }
}

/// A list at a revision older than the compaction point fails with `Compacted`; at or after it, it works.
pub async fn list_at_compacted_revision(factory: &dyn Factory) {
    let store = factory.fresh_for_compaction(test_config()).await;
    let range = configmaps(&store).space(&space("t1"));
    let k = key(&store, "t1", "default", "a");
    let old = put_new(&store, &k, "one").await;
    let newer = put_over(&store, &k, "two").await;
    store.compact(newer.revision).await.expect("compact");
    assert!(store.compacted_revision().await.expect("compacted") >= newer.revision);
    match store.list(&range, &ListRequest { revision: Some(old.revision), ..Default::default() }).await {
        Err(StorageError::Compacted { requested, .. }) => assert_eq!(requested, old.revision),
        other => panic!("expected Compacted, got {other:?}"),
    }
    let at = store.list(&range, &ListRequest { revision: Some(newer.revision), ..Default::default() }).await;
    assert_eq!(at.expect("list at the compaction point").items, vec![newer.clone()]);
    assert_eq!(store.get(&k).await.expect("get"), Some(newer), "compaction keeps the latest version");
    store.compact(old.revision).await.expect("compacting to an older revision is a no-op");
}

/// Compaction drops deleted keys and old versions but keeps every key's latest version.
pub async fn compaction_keeps_latest_versions(factory: &dyn Factory) {
    let store = factory.fresh_for_compaction(test_config()).await;
    let range = configmaps(&store).space(&space("t1"));
    let [a, b, c] = ["a", "b", "c"].map(|n| key(&store, "t1", "default", n));
    put_new(&store, &a, "a1").await;
    let a2 = put_over(&store, &a, "a2").await;
    put_new(&store, &b, "b1").await;
    store.delete(&b, None).await.expect("no error").expect("deleted");
    let c1 = put_new(&store, &c, "c1").await;
    let before = store.list(&range, &ListRequest::default()).await.expect("list");
    store.compact(store.current_revision().await.expect("revision")).await.expect("compact");
    let after = store.list(&range, &ListRequest::default()).await.expect("list");
    assert_eq!(after.items, before.items);
    assert_eq!(after.items, vec![a2, c1]);
    assert_eq!(store.get(&b).await.expect("get"), None);
    let b2 = put_new(&store, &b, "b2").await;
    assert_eq!(b2.create_revision, b2.revision, "a key deleted before compaction can be created again");
}

fn forged_token(revision: Revision, start: &str) -> String {
    let json = serde_json::json!({ "v": 1, "rv": revision.0, "start": start }).to_string();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
}

/// Garbage and forged continue tokens fail with `InvalidContinue`, and no token reaches outside its range.
pub async fn continue_token_garbage_invalid(factory: &dyn Factory) {
    let store = factory.fresh(test_config()).await;
    let keys = configmaps(&store);
    for (space_name, ns, name) in [("t1", "default", "a"), ("t1", "default", "b"), ("t1", "other", "c"), ("t10", "default", "d")] {
        put_new(&store, &key(&store, space_name, ns, name), name).await;
    }
    let range = keys.namespace(&space("t1"), Some("default")).expect("range");
    let current = store.current_revision().await.expect("revision");
    let b64 = |raw: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw);
    let garbage = [
        String::new(),
        "!!!not base64!!!".to_owned(),
        b64("not json"),
        b64(r#"{"v":2,"rv":1,"start":"a"}"#),
        b64(r#"{"v":1,"rv":0,"start":"a"}"#),
        b64(r#"{"v":1,"rv":1,"start":""}"#),
        forged_token(Revision(current.0 + 1_000_000), "a"),
    ];
    for token in garbage {
        let request = ListRequest { continue_token: Some(token.clone()), ..Default::default() };
        match store.list(&range, &request).await {
            Err(StorageError::InvalidContinue(_)) => {}
            other => panic!("token {token:?}: expected InvalidContinue, got {other:?}"),
        }
    }
    let escapes = ["../../t10/default/", "../other/", "\u{10FFFF}", "/", "a\0"];
    for start in escapes {
        let request = ListRequest { continue_token: Some(forged_token(current, start)), ..Default::default() };
        let page = store.list(&range, &request).await.expect("a well-formed token lists");
        for item in &page.items {
            assert!(range.contains(item.key.as_str()), "token start {start:?} escaped to {}", item.key);
        }
    }
    let first = store.list(&range, &ListRequest { limit: Some(1), ..Default::default() }).await.expect("page");
    let other = keys.namespace(&space("t1"), Some("other")).expect("range");
    let request = ListRequest { continue_token: first.continue_token, ..Default::default() };
    let page = store.list(&other, &request).await.expect("a token used with another range stays in that range");
    assert!(page.items.iter().all(|item| other.contains(item.key.as_str())));
}

/// Space `t1` never matches `t10`; a namespace never looks like a name; cluster-scoped objects (`_`) are their
/// own range; one resource across all spaces is one range.
pub async fn range_isolation(factory: &dyn Factory) {
    let store = factory.fresh(test_config()).await;
    let keys = configmaps(&store);
    let cluster = |s: &str, name: &str| keys.object(&space(s), None, name).expect("key");
    let all = [
        key(&store, "t1", "x", "y"),
        key(&store, "t1", "default", "a"),
        cluster("t1", "x"),
        key(&store, "t10", "default", "a"),
        cluster("t10", "x"),
        key(&store, "t2", "default", "a"),
    ];
    for k in &all {
        put_new(&store, k, k.as_str()).await;
    }
    let other_resource = store.layout().resource(&GroupResource::new("", "secrets"), &ApiIdentity::BuiltIn);
    let secret = other_resource.expect("range").object(&space("t1"), Some("default"), "a").expect("key");
    put_new(&store, &secret, "secret").await;
    let listed = |range: crate::KeyRange| {
        let store = store.clone();
        async move {
            let page = store.list(&range, &ListRequest::default()).await.expect("list");
            let mut keys: Vec<String> = page.items.into_iter().map(|r| r.key.as_str().to_owned()).collect();
            keys.sort();
            keys
        }
    };
    let expect = |picks: &[usize]| {
        let mut keys: Vec<String> = picks.iter().map(|i| all[*i].as_str().to_owned()).collect();
        keys.sort();
        keys
    };
    assert_eq!(listed(keys.space(&space("t1"))).await, expect(&[0, 1, 2]), "t1 never matches t10");
    assert_eq!(listed(keys.space(&space("t10"))).await, expect(&[3, 4]));
    assert_eq!(listed(keys.namespace(&space("t1"), None).expect("range")).await, expect(&[2]));
    assert_eq!(listed(keys.namespace(&space("t1"), Some("x")).expect("range")).await, expect(&[0]), "ns x is not name x");
    assert_eq!(listed(keys.all_spaces()).await, expect(&[0, 1, 2, 3, 4, 5]), "other resources stay out");
}

/// `occupied` says which ranges hold a live key now: a deleted key leaves its range empty, a neighbour's
/// space (`t10` beside `t1`) does not count, and the answers come back in the order asked.
pub async fn occupied_ranges(factory: &dyn Factory) {
    let store = factory.fresh(test_config()).await;
    let keys = configmaps(&store);
    put_new(&store, &key(&store, "t10", "default", "a"), "a").await;
    let gone = put_new(&store, &key(&store, "t1", "old", "a"), "a").await;
    store.delete(&gone.key, None).await.expect("delete").expect("deleted");
    put_new(&store, &key(&store, "t1", "default", "a"), "a").await;
    let ranges = [
        keys.namespace(&space("t1"), Some("old")).expect("range"),
        keys.namespace(&space("t1"), Some("default")).expect("range"),
        keys.namespace(&space("t1"), None).expect("range"),
        keys.space(&space("t1")),
        keys.space(&space("t2")),
        keys.all_spaces(),
    ];
    assert_eq!(store.occupied(&ranges).await.expect("occupied"), [false, true, false, true, false, true]);
    assert_eq!(store.occupied(&[]).await.expect("occupied"), Vec::<bool>::new());
}

/// A value over `max_value_bytes` fails with `ValueTooLarge` on create and update and writes nothing.
pub async fn value_too_large(factory: &dyn Factory) {
    let store = factory.fresh(StoreConfig { max_value_bytes: 1024, ..test_config() }).await;
    let k = key(&store, "t1", "default", "a");
    let big = Bytes::from(vec![b'x'; 1025]);
    let before = store.current_revision().await.expect("revision");
    assert_eq!(
        store.create(&k, big.clone()).await,
        Err(StorageError::ValueTooLarge { size: 1025, limit: 1024 })
    );
    let fits = store.create(&k, Bytes::from(vec![b'x'; 1024])).await.expect("no error").expect("created");
    assert!(fits.revision > before);
    assert!(matches!(store.update(&k, big, None).await, Err(StorageError::ValueTooLarge { .. })));
    assert_eq!(store.get(&k).await.expect("get"), Some(fits));
    let default_store = factory.fresh(test_config()).await;
    let over = Bytes::from(vec![0u8; crate::DEFAULT_MAX_VALUE_BYTES + 1]);
    let outcome = default_store.create(&key(&default_store, "t1", "default", "big"), over).await;
    assert!(matches!(outcome, Err(StorageError::ValueTooLarge { .. })), "3 MiB is the default limit");
}

/// Invalid key segments are typed `InvalidKey` errors, never panics, and the store keeps working.
pub async fn invalid_key_segments(factory: &dyn Factory) {
    let store = factory.fresh(test_config()).await;
    let keys = configmaps(&store);
    let t1 = space("t1");
    let long = "n".repeat(513);
    for bad in ["", ".", "..", "a/b", "a b", "a\nb", "_", long.as_str()] {
        assert!(matches!(keys.object(&t1, Some(bad), "x"), Err(StorageError::InvalidKey { .. })), "namespace {bad:?}");
        if bad != "_" {
            assert!(matches!(keys.object(&t1, None, bad), Err(StorageError::InvalidKey { .. })), "name {bad:?}");
        }
        assert!(matches!(SpaceName::new(bad), Err(StorageError::InvalidKey { .. })), "space {bad:?}");
    }
    let bad_resource = store.layout().resource(&GroupResource::new("", "a/b"), &ApiIdentity::BuiltIn);
    assert!(matches!(bad_resource, Err(StorageError::InvalidKey { .. })));
    assert!(matches!(Key::parse(store.layout(), "/registry/../x"), Err(StorageError::InvalidKey { .. })));
    put_new(&store, &key(&store, "t1", "default", "still-works"), "ok").await;
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
            update_guarded,
            delete_guarded,
            every_write_gets_a_new_revision,
            recreate_gets_new_create_revision,
            list_at_current_and_past_revision,
            list_paginates_one_snapshot,
            continue_after_compaction_expired,
            list_at_compacted_revision,
            compaction_keeps_latest_versions,
            continue_token_garbage_invalid,
            range_isolation,
            occupied_ranges,
            value_too_large,
            invalid_key_segments,
            watch_ordered,
            watch_unique,
            watch_complete,
            watch_carries_object_and_revision,
            watch_starts_after_acknowledged,
            watch_resumable,
            watch_compacted,
            watch_bookmarks,
            watch_slow_watcher_closed,
            watch_encoded_once,
            watch_filtered_by_range,
        );
    };
}

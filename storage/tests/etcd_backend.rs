//! Checks only etcd needs: reopening on a prefix, a dead etcd, value limits, writes from another store,
//! foreign keys, history replay through a temporary watch, compaction, and a store cut off from etcd while
//! another compacts.

#[path = "support/etcd.rs"]
mod etcd_support;

use std::time::{Duration, Instant};

use bytes::Bytes;
use kspaces_storage::conformance::{configmaps, key, space, test_config, value};
use kspaces_storage::etcd::proto::etcdserverpb::PutRequest;
use kspaces_storage::etcd::EtcdConfig;
use kspaces_storage::{
    Conflict, EventKind, HubConfig, KeyLayout, ListRequest, Refused, Revision, StorageError, Store, StoreConfig, Tally,
    TallyOp, WatchFrom, WatchItem, WatchOptions, Watcher, WriteOp, Written,
};

use etcd_support::EtcdServer;

fn config_on(layout: &KeyLayout) -> StoreConfig {
    StoreConfig { layout: layout.clone(), ..test_config() }
}

async fn open(etcd: &EtcdConfig, layout: &KeyLayout) -> Store {
    Store::open_etcd(etcd, config_on(layout)).await.expect("open an etcd store")
}

/// The next event of a watcher, within five seconds.
async fn next_event(watcher: &mut Watcher) -> (EventKind, String, Revision) {
    let item = tokio::time::timeout(Duration::from_secs(5), watcher.next()).await.expect("an event in time");
    match item.expect("watch open").expect("no watch error") {
        WatchItem::Event(event) => (event.kind, event.key.as_str().to_owned(), event.revision),
        WatchItem::Bookmark(revision) => panic!("expected an event, got a bookmark at {revision}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reopened_store_sees_the_data_and_continues_revisions() {
    let server = etcd_support::shared();
    let layout = etcd_support::unique_layout();
    let first = open(&server.config(), &layout).await;
    let a = key(&first, "t1", "default", "a");
    let created = first.create(&a, value("one")).await.expect("no error").expect("created");
    drop(first);

    let again = open(&server.config(), &layout).await;
    assert_eq!(again.get(&a).await.expect("no error"), Some(created.clone()));
    assert!(again.current_revision().await.expect("revision") >= created.revision);
    let b = key(&again, "t1", "default", "b");
    let next = again.create(&b, value("two")).await.expect("no error").expect("created");
    assert!(next.revision > created.revision, "revisions continue after reopening");
    let page = again.list(&configmaps(&again).all_spaces(), &ListRequest::default()).await.expect("list");
    let names: Vec<_> = page.items.iter().map(|r| r.key.as_str().rsplit('/').next().unwrap_or("").to_owned()).collect();
    assert_eq!(names, ["a", "b"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_etcd_is_unavailable_within_the_timeout() {
    let mut server = EtcdServer::start();
    let etcd = server.config();
    let store = open(&etcd, &etcd_support::unique_layout()).await;
    let a = key(&store, "t1", "default", "a");
    store.create(&a, value("one")).await.expect("no error").expect("created");
    server.kill();

    let bound = etcd.request_timeout + Duration::from_secs(2);
    let started = Instant::now();
    let got = store.get(&a).await;
    assert!(matches!(got, Err(StorageError::Unavailable(_))), "get: {got:?}");
    let listed = store.list(&configmaps(&store).all_spaces(), &ListRequest::default()).await;
    assert!(matches!(listed, Err(StorageError::Unavailable(_))), "list: {listed:?}");
    let b = key(&store, "t1", "default", "b");
    let created = store.create(&b, value("two")).await;
    assert!(matches!(created, Err(StorageError::Unavailable(_))), "create: {created:?}");
    assert!(started.elapsed() < bound * 3, "three calls took {:?}", started.elapsed());

    let reopened = Store::open_etcd(&etcd, test_config()).await;
    assert!(matches!(reopened, Err(StorageError::Unavailable(_))), "open: {:?}", reopened.err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_up_to_three_mebibytes_round_trip_and_larger_ones_are_refused() {
    let server = etcd_support::shared();
    let store = open(&server.config(), &etcd_support::unique_layout()).await;
    let limit = store.config().max_value_bytes;
    let big = Bytes::from(vec![b'x'; limit]);
    let a = key(&store, "t1", "default", "big");
    let mut watcher = store.watch(&configmaps(&store).all_spaces(), WatchFrom::Now, WatchOptions::default()).await.expect("watch");
    let created = store.create(&a, big.clone()).await.expect("no error").expect("created");
    assert_eq!(store.get(&a).await.expect("no error").map(|r| r.value), Some(big.clone()));
    let page = store.list(&configmaps(&store).all_spaces(), &ListRequest::default()).await.expect("list");
    assert_eq!(page.items, std::slice::from_ref(&created));
    assert_eq!(next_event(&mut watcher).await, (EventKind::Added, a.as_str().to_owned(), created.revision));

    let too_big = Bytes::from(vec![b'x'; limit + 1]);
    let b = key(&store, "t1", "default", "too-big");
    let refused = store.create(&b, too_big.clone()).await;
    assert_eq!(refused, Err(StorageError::ValueTooLarge { size: limit + 1, limit }));
    let refused = store.update(&a, too_big, None).await;
    assert!(matches!(refused, Err(StorageError::ValueTooLarge { .. })), "update: {refused:?}");
    assert_eq!(store.get(&b).await.expect("no error"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchers_see_writes_made_through_another_store_on_the_same_prefix() {
    let server = etcd_support::shared();
    let layout = etcd_support::unique_layout();
    let (reader, writer) = (open(&server.config(), &layout).await, open(&server.config(), &layout).await);
    let mut watcher = reader.watch(&configmaps(&reader).all_spaces(), WatchFrom::Now, WatchOptions::default()).await.expect("watch");
    let a = key(&writer, "t1", "default", "a");
    let created = writer.create(&a, value("one")).await.expect("no error").expect("created");
    let updated = writer.update(&a, value("two"), Some(created.revision)).await.expect("no error").expect("updated");
    let deleted = writer.delete(&a, Some(updated.revision)).await.expect("no error").expect("deleted");
    assert_eq!(next_event(&mut watcher).await, (EventKind::Added, a.as_str().to_owned(), created.revision));
    assert_eq!(next_event(&mut watcher).await, (EventKind::Modified, a.as_str().to_owned(), updated.revision));
    assert_eq!(next_event(&mut watcher).await, (EventKind::Deleted, a.as_str().to_owned(), deleted.revision));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_keys_under_the_prefix_are_skipped() {
    let server = etcd_support::shared();
    let layout = etcd_support::unique_layout();
    let store = open(&server.config(), &layout).await;
    let mut watcher = store.watch(&layout.everything(), WatchFrom::Now, WatchOptions::default()).await.expect("watch");
    let mut raw = kspaces_storage::etcd::kv_client(&server.config()).expect("raw client");
    let junk = PutRequest { key: format!("{}/not/an/object", layout.prefix()).into(), value: b"junk".to_vec(), ..PutRequest::default() };
    raw.put(junk).await.expect("raw put");
    let a = key(&store, "t1", "default", "a");
    let created = store.create(&a, value("one")).await.expect("no error").expect("created");
    assert_eq!(next_event(&mut watcher).await, (EventKind::Added, a.as_str().to_owned(), created.revision));
    let page = store.list(&layout.everything(), &ListRequest::default()).await.expect("list");
    assert_eq!(page.items, [created]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tallied_write_happens_only_with_the_tally_it_expects_and_changes_both_at_once() {
    let server = etcd_support::shared();
    let layout = etcd_support::unique_layout();
    let (one, other) = (open(&server.config(), &layout).await, open(&server.config(), &layout).await);
    let t1 = space("t1");
    let mut watcher = one.watch(&layout.everything(), WatchFrom::Now, WatchOptions::default()).await.expect("watch");
    // No tally yet: a write expecting none goes; the space's tally stays absent.
    let a = key(&one, "t1", "default", "a");
    let created = one.write_tallied(WriteOp::Create { key: a.clone(), value: value("one") }, &t1, Tally::Absent).await.expect("no error");
    let Ok(Written::Put(created)) = created else { panic!("created: {created:?}") };
    assert_eq!(one.tally(&t1).await.expect("read"), None);
    // Another process makes the tally: a write expecting none is refused with it, and stores nothing.
    let made = other.change_tally(&t1, TallyOp::Create(value("1"))).await.expect("no error").expect("made");
    let again = other.change_tally(&t1, TallyOp::Create(value("x"))).await.expect("no error");
    assert_eq!(again.expect_err("made once").map(|t| t.revision), Some(made));
    let b = key(&one, "t1", "default", "b");
    let refused = one.write_tallied(WriteOp::Create { key: b.clone(), value: value("two") }, &t1, Tally::Absent).await.expect("no error");
    let Err(Refused::Tally(Some(tally))) = refused else { panic!("refused for the tally: {refused:?}") };
    assert_eq!((tally.value, tally.revision, tally.create_revision), (value("1"), made, made));
    assert_eq!(one.get(&b).await.expect("read"), None);
    // With the tally it expects, the object and the tally change in one transaction, at one revision.
    let replace = Tally::Replace { revision: made, value: value("2") };
    let written = one.write_tallied(WriteOp::Create { key: b.clone(), value: value("two") }, &t1, replace.clone()).await.expect("no error");
    let Ok(Written::Put(b_record)) = written else { panic!("created: {written:?}") };
    let tally = one.tally(&t1).await.expect("read").expect("a tally");
    assert_eq!((tally.value, tally.revision), (value("2"), b_record.revision));
    // A stale expectation is refused, whoever's it is; an object's own conflict is told as one.
    let stale = other.write_tallied(WriteOp::Delete { key: a.clone(), expected: None }, &t1, replace).await.expect("no error");
    assert_eq!(stale.map_err(|r| matches!(r, Refused::Tally(Some(_)))).err(), Some(true), "stale tally");
    let current = Tally::Replace { revision: b_record.revision, value: value("3") };
    let taken = other.write_tallied(WriteOp::Create { key: a.clone(), value: value("dup") }, &t1, current.clone()).await.expect("no error");
    assert!(matches!(taken, Err(Refused::Conflict(Conflict::AlreadyExists(_)))), "{taken:?}");
    let deleted = other.write_tallied(WriteOp::Delete { key: a.clone(), expected: Some(created.revision) }, &t1, current).await.expect("no error");
    let Ok(Written::Deleted(deleted)) = deleted else { panic!("deleted: {deleted:?}") };
    assert_eq!(one.tally(&t1).await.expect("read").map(|t| (t.value, t.revision)), Some((value("3"), deleted.revision)));
    // Watchers and lists see the objects only; tallies are the store's bookkeeping.
    for expected in [(EventKind::Added, &a, created.revision), (EventKind::Added, &b, b_record.revision), (EventKind::Deleted, &a, deleted.revision)] {
        assert_eq!(next_event(&mut watcher).await, (expected.0, expected.1.as_str().to_owned(), expected.2));
    }
    let page = one.list(&layout.everything(), &ListRequest::default()).await.expect("list");
    assert_eq!(page.items, [b_record]);
    // Removed only at the revision it is at.
    assert!(other.change_tally(&t1, TallyOp::Delete { revision: made }).await.expect("no error").is_err());
    other.change_tally(&t1, TallyOp::Delete { revision: deleted.revision }).await.expect("no error").expect("removed");
    assert_eq!(one.tally(&t1).await.expect("read"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_before_the_hub_window_replays_from_etcd() {
    let server = etcd_support::shared();
    let config = StoreConfig { layout: etcd_support::unique_layout(), hub: HubConfig { window: 2, ..HubConfig::default() }, ..test_config() };
    let store = Store::open_etcd(&server.config(), config).await.expect("open");
    let before = store.current_revision().await.expect("revision");
    let mut written = Vec::new();
    for name in ["a", "b", "c", "d", "e"] {
        let k = key(&store, "t1", "default", name);
        written.push(store.create(&k, value(name)).await.expect("no error").expect("created").revision);
    }
    let other_space = configmaps(&store).space(&space("t2"));
    let k = key(&store, "t2", "default", "x");
    store.create(&k, value("x")).await.expect("no error").expect("created");
    let range = configmaps(&store).space(&space("t1"));
    assert!(!range.covers(&other_space));
    let mut watcher = store.watch(&range, WatchFrom::After(before), WatchOptions::default()).await.expect("watch");
    let mut seen = Vec::new();
    for _ in 0..written.len() {
        seen.push(next_event(&mut watcher).await.2);
    }
    assert_eq!(seen, written, "every event, in order, once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_is_physical_and_old_revisions_are_gone() {
    // Compaction is global in etcd, so this check has an etcd of its own.
    let server = EtcdServer::start();
    let store = open(&server.config(), &etcd_support::unique_layout()).await;
    let a = key(&store, "t1", "default", "a");
    let first = store.create(&a, value("one")).await.expect("no error").expect("created");
    let second = store.update(&a, value("two"), None).await.expect("no error").expect("updated");
    store.compact(second.revision).await.expect("compact");
    store.compact(first.revision).await.expect("compacting to an older revision is a no-op");
    assert_eq!(store.compacted_revision().await.expect("compacted"), second.revision);
    let request = ListRequest { revision: Some(first.revision), ..ListRequest::default() };
    let listed = store.list(&configmaps(&store).all_spaces(), &request).await;
    assert!(matches!(listed, Err(StorageError::Compacted { .. })), "list: {listed:?}");
    let resumed = store.watch(&configmaps(&store).all_spaces(), WatchFrom::After(Revision::ZERO), WatchOptions::default()).await;
    assert!(matches!(resumed, Err(StorageError::Compacted { .. })), "watch: {:?}", resumed.err());
    let future = store.compact(Revision(second.revision.0 + 1000)).await;
    assert!(matches!(future, Err(StorageError::FutureRevision { .. })), "compact: {future:?}");

    // A second store on the same etcd learns of the compaction from etcd's error.
    let other = open(&server.config(), &etcd_support::unique_layout()).await;
    let listed = other.list(&configmaps(&other).all_spaces(), &request).await;
    assert!(matches!(listed, Err(StorageError::Compacted { .. })), "list: {listed:?}");
    assert!(other.compacted_revision().await.expect("compacted") > first.revision);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_brings_bookmarks_up_to_the_current_revision() {
    let server = etcd_support::shared();
    let store = open(&server.config(), &etcd_support::unique_layout()).await;
    let mut watcher = store.watch(&configmaps(&store).all_spaces(), WatchFrom::Now, WatchOptions { bookmarks: true }).await.expect("watch");
    let current = store.current_revision().await.expect("revision");
    store.progress().await.expect("progress");
    let item = tokio::time::timeout(Duration::from_secs(5), watcher.next()).await.expect("in time");
    match item.expect("open").expect("no error") {
        WatchItem::Bookmark(revision) => assert!(revision >= current, "bookmark {revision} < {current}"),
        other => panic!("expected a bookmark, got {other:?}"),
    }
}

/// A TCP relay to etcd that can be cut (every connection dropped, new ones refused) and restored: a store behind
/// it is cut off from etcd while others go on.
struct Relay {
    endpoint: String,
    open: std::sync::Arc<std::sync::atomic::AtomicBool>,
    connections: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Relay {
    async fn start(target: &str) -> Relay {
        use std::sync::atomic::Ordering;
        let target = target.trim_start_matches("http://").to_owned();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the relay");
        let endpoint = format!("http://{}", listener.local_addr().expect("relay address"));
        let open = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let connections = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (accepting, tasks) = (open.clone(), connections.clone());
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if !accepting.load(Ordering::SeqCst) {
                    continue;
                }
                let target = target.clone();
                let task = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                tasks.lock().expect("relay tasks").push(task);
            }
        });
        Relay { endpoint, open, connections }
    }

    fn cut(&self) {
        self.open.store(false, std::sync::atomic::Ordering::SeqCst);
        for task in self.connections.lock().expect("relay tasks").drain(..) {
            task.abort();
        }
    }

    fn restore(&self) {
        self.open.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_cut_off_while_another_compacts_closes_its_watchers_and_goes_on() {
    // Its own etcd: the compaction below would cut other tests' history short.
    let server = EtcdServer::start();
    let layout = etcd_support::unique_layout();
    let relay = Relay::start(&server.endpoint).await;
    let mut cut_off = server.config();
    cut_off.endpoints = vec![relay.endpoint.clone()];
    let (behind, other) = (open(&cut_off, &layout).await, open(&server.config(), &layout).await);
    let range = configmaps(&behind).all_spaces();
    let mut watcher = behind.watch(&range, WatchFrom::Now, WatchOptions::default()).await.expect("watch");
    let a = key(&other, "t1", "default", "a");
    let created = other.create(&a, value("a")).await.expect("no error").expect("created");
    assert_eq!(next_event(&mut watcher).await.2, created.revision, "heard while connected");

    relay.cut();
    for name in ["b", "c"] {
        other.create(&key(&other, "t1", "default", name), value(name)).await.expect("no error").expect("created");
    }
    let compacted = other.current_revision().await.expect("revision");
    other.compact(compacted).await.expect("compact");
    relay.restore();

    // The feed cannot resume below the compacted revision: the watcher is told its history is gone (a client
    // re-lists), instead of waiting forever for events that will never come.
    let item = tokio::time::timeout(Duration::from_secs(20), watcher.next()).await.expect("the watcher is closed in time");
    assert!(matches!(item, Some(Err(StorageError::Compacted { .. }))), "expected Compacted, got {item:?}");

    // And the store goes on: a watch resumed from where a client re-listed hears later writes.
    let mut again = behind.watch(&range, WatchFrom::After(compacted), WatchOptions::default()).await.expect("watch again");
    let d = key(&other, "t1", "default", "d");
    let later = other.create(&d, value("d")).await.expect("no error").expect("created");
    assert_eq!(next_event(&mut again).await, (EventKind::Added, d.as_str().to_owned(), later.revision));
    assert_eq!(behind.get(&d).await.expect("get").map(|r| r.revision), Some(later.revision));
}

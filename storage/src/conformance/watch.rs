//! The watch checks of the conformance suite, one per guarantee in `docs/watch-guarantees.md`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::{configmaps, key, put_new, put_over, space, test_config, value, Factory};
use crate::watch::{Event, EventKind, WatchFrom, WatchItem, WatchOptions, Watcher};
use crate::{HubConfig, KeyRange, Revision, StorageError, Store, StoreConfig};

/// How long a check waits for an item that must come.
const WAIT: Duration = Duration::from_secs(10);
/// How long a check listens to make sure nothing more comes.
const QUIET: Duration = Duration::from_millis(200);

/// The next item of `watcher`, which must come within [`WAIT`].
pub async fn next_item(watcher: &mut Watcher) -> crate::Result<WatchItem> {
    tokio::time::timeout(WAIT, watcher.next()).await.expect("a watch item within 10 s").expect("the watch is open")
}

/// The next item of `watcher`, which must be an event.
pub async fn next_event(watcher: &mut Watcher) -> Arc<Event> {
    match next_item(watcher).await {
        Ok(WatchItem::Event(event)) => event,
        other => panic!("expected an event, got {other:?}"),
    }
}

/// Events (bookmarks skipped) until one at or above `through`.
pub async fn events_through(watcher: &mut Watcher, through: Revision) -> Vec<Arc<Event>> {
    let mut events: Vec<Arc<Event>> = Vec::new();
    while events.last().is_none_or(|event| event.revision < through) {
        match next_item(watcher).await.expect("no watch error") {
            WatchItem::Event(event) => events.push(event),
            WatchItem::Bookmark(_) => {}
        }
    }
    events
}

/// Asserts that `watcher` yields nothing for [`QUIET`].
pub async fn assert_quiet(watcher: &mut Watcher) {
    if let Ok(item) = tokio::time::timeout(QUIET, watcher.next()).await {
        panic!("expected no more items, got {item:?}");
    }
}

fn revisions(events: &[Arc<Event>]) -> Vec<Revision> {
    events.iter().map(|event| event.revision).collect()
}

fn tiny_window() -> StoreConfig {
    StoreConfig { hub: HubConfig { window: 2, ..HubConfig::default() }, ..test_config() }
}

async fn watch(store: &Store, range: &KeyRange, from: WatchFrom) -> Watcher {
    store.watch(range, from, WatchOptions::default()).await.expect("watch")
}

/// Writes a mix of creates, updates and deletes to keys `w0..w4` of `t1/default`; returns their revisions.
async fn write_mix(store: &Store, tag: &str) -> Vec<Revision> {
    let mut acked = Vec::new();
    for i in 0..5 {
        acked.push(put_new(store, &key(store, "t1", "default", &format!("{tag}{i}")), "v0").await.revision);
    }
    for i in [0, 2, 4, 2] {
        acked.push(put_over(store, &key(store, "t1", "default", &format!("{tag}{i}")), "v1").await.revision);
    }
    for i in [1, 3] {
        let deleted = store.delete(&key(store, "t1", "default", &format!("{tag}{i}")), None).await;
        acked.push(deleted.expect("no error").expect("deleted").revision);
    }
    acked
}

/// ordered: events come in strictly increasing revision order.
pub async fn watch_ordered(factory: &dyn Factory) {
    let store = factory.fresh(test_config()).await;
    let range = configmaps(&store).space(&space("t1"));
    let mut watcher = watch(&store, &range, WatchFrom::Now).await;
    let acked = write_mix(&store, "w").await;
    let events = events_through(&mut watcher, *acked.last().expect("writes")).await;
    assert!(revisions(&events).windows(2).all(|pair| pair[0] < pair[1]), "out of order: {:?}", revisions(&events));
    assert_eq!(revisions(&events), acked);
}

/// unique: no event is delivered twice, also when a watch starts in the past while writes continue, so that
/// it crosses the seam between history (in-memory window or backend) and live events.
pub async fn watch_unique(factory: &dyn Factory) {
    for config in [test_config(), tiny_window()] {
        let store = factory.fresh(config).await;
        let range = configmaps(&store).space(&space("t1"));
        let start = store.current_revision().await.expect("revision");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let writer = {
            let store = store.clone();
            tokio::spawn(async move {
                let k = key(&store, "t1", "default", "hot");
                let _ = tx.send(put_new(&store, &k, "0").await.revision);
                for i in 1..80 {
                    let _ = tx.send(put_over(&store, &k, &i.to_string()).await.revision);
                }
            })
        };
        let mut acked = Vec::new();
        while acked.len() < 20 {
            acked.push(rx.recv().await.expect("writer running"));
        }
        let mut watcher = watch(&store, &range, WatchFrom::After(start)).await;
        writer.await.expect("writer");
        while let Ok(revision) = rx.try_recv() {
            acked.push(revision);
        }
        let events = events_through(&mut watcher, *acked.last().expect("writes")).await;
        assert_eq!(revisions(&events), acked, "each write exactly once, in order (window {:?})", store.config().hub);
        assert_quiet(&mut watcher).await;
    }
}

/// complete: with many concurrent writers, a watcher sees every acknowledged write exactly once.
pub async fn watch_complete(factory: &dyn Factory) {
    let store = factory.fresh(test_config()).await;
    let range = configmaps(&store).space(&space("t1"));
    let mut watcher = watch(&store, &range, WatchFrom::Now).await;
    let writers = (0..8).map(|writer| {
        let store = store.clone();
        tokio::spawn(async move {
            let mut acked = Vec::new();
            for i in 0..12 {
                let k = key(&store, "t1", "default", &format!("w{writer}-{i}"));
                let created = put_new(&store, &k, "created").await;
                acked.push((created.revision, k.as_str().to_owned(), created.value));
                let updated = put_over(&store, &k, &format!("updated-{writer}-{i}")).await;
                acked.push((updated.revision, k.as_str().to_owned(), updated.value));
            }
            acked
        })
    });
    let mut acked = BTreeMap::new();
    for writer in writers.collect::<Vec<_>>() {
        for (revision, k, v) in writer.await.expect("writer") {
            assert!(acked.insert(revision, (k, v)).is_none(), "two writes share revision {revision}");
        }
    }
    let last = *acked.keys().next_back().expect("writes");
    let events = events_through(&mut watcher, last).await;
    let seen: BTreeMap<Revision, (String, Bytes)> =
        events.iter().map(|e| (e.revision, (e.key.as_str().to_owned(), e.value.clone()))).collect();
    assert_eq!(seen.len(), events.len(), "an event was delivered twice");
    assert_eq!(seen, acked, "the watcher saw exactly the acknowledged writes");
}

/// carries the object and its revision: each event has its kind, key, the object after the change (for a
/// delete, the object as it was) and the revision of the write.
pub async fn watch_carries_object_and_revision(factory: &dyn Factory) {
    let store = factory.fresh(test_config()).await;
    let range = configmaps(&store).space(&space("t1"));
    let mut watcher = watch(&store, &range, WatchFrom::Now).await;
    let k = key(&store, "t1", "default", "a");
    let created = put_new(&store, &k, "one").await;
    let updated = put_over(&store, &k, "two").await;
    let deleted = store.delete(&k, None).await.expect("no error").expect("deleted");
    let expected = [
        (EventKind::Added, value("one"), created.revision),
        (EventKind::Modified, value("two"), updated.revision),
        (EventKind::Deleted, value("two"), deleted.revision),
    ];
    for (kind, object, revision) in expected {
        let event = next_event(&mut watcher).await;
        assert_eq!((event.kind, &event.key, &event.value, event.revision), (kind, &k, &object, revision));
        if kind == EventKind::Added {
            assert_eq!(event.prev, None);
        }
    }
}

/// starts after what was acknowledged: a watch begun right after a write's answer, from `Now` or from the
/// answer's revision, never carries that write, however late the hub hears of it (etcd's feed lags its answers;
/// sled answers a commit's writers just before it publishes their events).
pub async fn watch_starts_after_acknowledged(factory: &dyn Factory) {
    let store = factory.fresh(test_config()).await;
    let range = configmaps(&store).space(&space("t1"));
    let k = key(&store, "t1", "default", "a");
    put_new(&store, &k, "0").await;
    for i in 1..=20 {
        let acked = put_over(&store, &k, &format!("{i}")).await;
        let mut now = watch(&store, &range, WatchFrom::Now).await;
        let mut after = watch(&store, &range, WatchFrom::After(acked.revision)).await;
        let next = put_over(&store, &k, &format!("{i}-next")).await;
        for watcher in [&mut now, &mut after] {
            assert_eq!(next_event(watcher).await.revision, next.revision, "the first event is the write after the watch began");
        }
    }
}

/// resumable: a watch from any revision in the history window gets exactly the later events, then live ones;
/// with a window of 2 the resume replays from the backend's history.
pub async fn watch_resumable(factory: &dyn Factory) {
    for config in [test_config(), tiny_window()] {
        let store = factory.fresh(config).await;
        let range = configmaps(&store).space(&space("t1"));
        let start = store.current_revision().await.expect("revision");
        let acked = write_mix(&store, "r").await;
        let mut written = acked.clone();
        for from in std::iter::once(start).chain(acked.iter().copied()) {
            let mut watcher = watch(&store, &range, WatchFrom::After(from)).await;
            let expected: Vec<Revision> = written.iter().copied().filter(|r| *r > from).collect();
            if let Some(last) = expected.last() {
                assert_eq!(revisions(&events_through(&mut watcher, *last).await), expected, "resume after {from}");
            }
            let live = put_over(&store, &key(&store, "t1", "default", "r0"), &format!("after-{from}")).await;
            assert_eq!(next_event(&mut watcher).await.revision, live.revision, "live events follow the replay");
            written.push(live.revision);
        }
    }
}

async fn expect_compacted(store: &Store, range: &KeyRange, from: Revision) {
    match store.watch(range, WatchFrom::After(from), WatchOptions::default()).await {
        Err(StorageError::Compacted { requested, .. }) => assert_eq!(requested, from),
        Err(other) => panic!("expected Compacted, got {other:?}"),
        Ok(mut watcher) => match next_item(&mut watcher).await {
            Err(StorageError::Compacted { .. }) => {}
            other => panic!("expected Compacted as the first item, got {other:?}"),
        },
    }
}

/// compacted: a resume from below the compaction point (and outside the window) fails with `Compacted`;
/// a resume from the compaction point itself still works.
pub async fn watch_compacted(factory: &dyn Factory) {
    let store = factory.fresh_for_compaction(tiny_window()).await;
    let range = configmaps(&store).space(&space("t1"));
    let k = key(&store, "t1", "default", "a");
    let mut acked = vec![put_new(&store, &k, "0").await.revision];
    for i in 1..6 {
        acked.push(put_over(&store, &k, &i.to_string()).await.revision);
    }
    store.compact(acked[3]).await.expect("compact");
    expect_compacted(&store, &range, acked[0]).await;
    expect_compacted(&store, &range, acked[1]).await;
    let mut watcher = watch(&store, &range, WatchFrom::After(acked[3])).await;
    assert_eq!(revisions(&events_through(&mut watcher, acked[5]).await), acked[4..].to_vec());
}

/// bookmarkable: after `progress`, a watcher that asked for bookmarks gets one whose revision is at least that
/// of every event before it, and equal to the current revision when the store is idle; others get none.
pub async fn watch_bookmarks(factory: &dyn Factory) {
    let store = factory.fresh(test_config()).await;
    let range = configmaps(&store).space(&space("t1"));
    let options = WatchOptions { bookmarks: true };
    let mut second = store.watch(&range, WatchFrom::Now, options).await.expect("watch");
    let mut with = store.watch(&range, WatchFrom::Now, options).await.expect("watch");
    let mut without = watch(&store, &range, WatchFrom::Now).await;
    let acked = write_mix(&store, "b").await;
    let last = *acked.last().expect("writes");
    let before = store.current_revision().await.expect("revision");
    store.progress().await.expect("progress");
    let after = store.current_revision().await.expect("revision");
    let mut delivered = Revision::ZERO;
    let bookmark = loop {
        match next_item(&mut with).await.expect("no error") {
            WatchItem::Event(event) => delivered = event.revision,
            WatchItem::Bookmark(revision) => break revision,
        }
    };
    assert_eq!(delivered, last, "every event came before the bookmark");
    assert!(bookmark >= delivered && bookmark >= before && bookmark <= after, "bookmark {bookmark}");
    if factory.exclusive_revisions() {
        assert_eq!(bookmark, after, "an idle store's bookmark is its current revision");
    }
    assert_eq!(revisions(&events_through(&mut without, last).await), acked);
    assert_quiet(&mut without).await;
    assert_eq!(revisions(&events_through(&mut second, last).await), acked);
    assert!(matches!(next_item(&mut second).await, Ok(WatchItem::Bookmark(revision)) if revision == bookmark));
    let mut fresh = store.watch(&range, WatchFrom::Now, options).await.expect("watch");
    store.progress().await.expect("progress");
    match next_item(&mut fresh).await.expect("no error") {
        WatchItem::Bookmark(revision) => assert!(revision >= last && revision >= bookmark),
        other => panic!("expected a bookmark, got {other:?}"),
    }
}

/// bounded: a watcher that never reads is closed with `WatchOverflow` after its queued events; writers never
/// wait for it, and a watcher that reads receives everything.
pub async fn watch_slow_watcher_closed(factory: &dyn Factory) {
    let config = StoreConfig { hub: HubConfig { queue_capacity: 4, ..HubConfig::default() }, ..test_config() };
    let store = factory.fresh(config).await;
    let range = configmaps(&store).space(&space("t1"));
    let mut slow = watch(&store, &range, WatchFrom::Now).await;
    let mut reader = watch(&store, &range, WatchFrom::Now).await;
    let mut acked = Vec::new();
    for i in 0..12 {
        let k = key(&store, "t1", "default", &format!("s{i}"));
        let write = store.create(&k, value("x"));
        let created = tokio::time::timeout(WAIT, write).await.expect("a writer never blocks on a slow watcher");
        acked.push(created.expect("no error").expect("created").revision);
        assert_eq!(next_event(&mut reader).await.revision, acked[i], "the reading watcher gets every event");
    }
    for revision in &acked[..4] {
        assert_eq!(next_event(&mut slow).await.revision, *revision, "queued events come before the error");
    }
    match next_item(&mut slow).await {
        Err(StorageError::WatchOverflow { capacity }) => assert_eq!(capacity, 4),
        other => panic!("expected WatchOverflow, got {other:?}"),
    }
    assert!(slow.next().await.is_none(), "an overflowed watcher is closed");
}

/// encoded once: however many watchers receive an event, each encoding of it is computed once.
pub async fn watch_encoded_once(factory: &dyn Factory) {
    let store = factory.fresh(test_config()).await;
    let range = configmaps(&store).space(&space("t1"));
    let mut watchers = Vec::new();
    for _ in 0..100 {
        watchers.push(watch(&store, &range, WatchFrom::Now).await);
    }
    let mut acked = Vec::new();
    for i in 0..5 {
        acked.push(put_new(&store, &key(&store, "t1", "default", &format!("e{i}")), "x").await.revision);
    }
    let encodings = AtomicUsize::new(0);
    let encode = |event: &Event| {
        encodings.fetch_add(1, Ordering::SeqCst);
        Bytes::from(format!("{}@{}", event.key, event.revision))
    };
    for watcher in &mut watchers {
        for revision in &acked {
            let event = next_event(watcher).await;
            assert_eq!(event.revision, *revision);
            assert_eq!(event.encoded(0, encode), Bytes::from(format!("{}@{}", event.key, event.revision)));
        }
    }
    assert_eq!(encodings.load(Ordering::SeqCst), acked.len(), "one encoding per event, not per watcher");
}

/// filtered by range: a watcher sees the events of its range and nothing else (t1 is not t10, a namespace is
/// not the cluster-scoped `_`).
pub async fn watch_filtered_by_range(factory: &dyn Factory) {
    let store = factory.fresh(test_config()).await;
    let keys = configmaps(&store);
    let ranges = [
        keys.space(&space("t1")),
        keys.namespace(&space("t1"), Some("default")).expect("range"),
        keys.namespace(&space("t1"), None).expect("range"),
        keys.space(&space("t10")),
        keys.all_spaces(),
    ];
    let mut watchers = Vec::new();
    for range in &ranges {
        watchers.push(watch(&store, range, WatchFrom::Now).await);
    }
    let written = [
        key(&store, "t1", "default", "a"),
        key(&store, "t1", "other", "b"),
        keys.object(&space("t1"), None, "c").expect("key"),
        key(&store, "t10", "default", "d"),
        key(&store, "t2", "default", "e"),
    ];
    for k in &written {
        put_new(&store, k, "x").await;
    }
    for (range, watcher) in ranges.iter().zip(&mut watchers) {
        let expected: Vec<_> = written.iter().filter(|k| range.contains(k.as_str())).cloned().collect();
        let mut seen = Vec::new();
        for _ in 0..expected.len() {
            seen.push(next_event(watcher).await.key.clone());
        }
        assert_eq!(seen, expected, "range {}", range.start());
        assert_quiet(watcher).await;
    }
}

//! The fan-out hub: one ordered stream of committed events in, bounded per-watcher queues out.
//!
//! Backends publish each committed batch in revision order. The hub keeps the most recent events in a ring
//! (the in-memory history window) so that most resumes never touch the backend, and hands each event, as one
//! shared `Arc`, to every watcher whose range contains its key. A watcher whose queue is full is closed with
//! an overflow error instead of blocking the writer or the other watchers.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use tokio::sync::mpsc;

use super::{Event, One, Replay, WatchItem, WatchOptions, Watcher};
use crate::backend::Backend;
use crate::error::StorageError;
use crate::key::KeyRange;
use crate::Revision;

/// Sizes of the hub's buffers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HubConfig {
    /// Items a watcher may fall behind before it is closed.
    pub queue_capacity: usize,
    /// Events kept in memory for resuming watches.
    pub window: usize,
}

impl Default for HubConfig {
    fn default() -> Self {
        HubConfig { queue_capacity: 4096, window: 10_000 }
    }
}

struct Slot {
    range: KeyRange,
    /// Live events at or below this revision are not sent (they are in the watcher's backlog or before it).
    from: Revision,
    bookmarks: bool,
    tx: mpsc::Sender<WatchItem>,
    closed: Arc<OnceLock<StorageError>>,
}

struct HubState {
    ring: VecDeque<Arc<Event>>,
    /// Every event with a revision above `floor` is in `ring`.
    floor: Revision,
    current: Revision,
    slots: Vec<Slot>,
}

/// Fans committed events out to watchers. Shared by a backend (which publishes) and the store (which
/// registers watchers).
pub struct WatchHub {
    config: HubConfig,
    state: Mutex<HubState>,
}

impl WatchHub {
    /// A hub whose history starts after `current`: older events are replayed from the backend.
    pub fn new(config: HubConfig, current: Revision) -> Arc<WatchHub> {
        let state = HubState { ring: VecDeque::new(), floor: current, current, slots: Vec::new() };
        Arc::new(WatchHub { config: HubConfig { queue_capacity: config.queue_capacity.max(1), ..config }, state: Mutex::new(state) })
    }

    fn lock(&self) -> MutexGuard<'_, HubState> {
        // A panic while holding the lock cannot leave the state half-updated in a way that matters more than
        // stopping every watch, so recover the guard.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The revision of the last event published (or progress reported).
    pub fn current(&self) -> Revision {
        self.lock().current
    }

    /// Events above this revision are in the in-memory window; older ones are replayed from the backend.
    pub fn floor(&self) -> Revision {
        self.lock().floor
    }

    /// Number of open watchers.
    pub fn watcher_count(&self) -> usize {
        self.lock().slots.len()
    }

    /// Publishes committed events; they must come in strictly increasing revision order, after everything
    /// published. Every write of every backend has its own revision (there are no multi-key transactions), so
    /// an event at or below the current revision can only be a replay, and is dropped.
    pub fn publish(&self, events: Vec<Event>) {
        self.publish_answering(events, || ());
    }

    /// Publishes `events` as [`publish`](Self::publish) does, running `answer` (the writers' replies) first, under
    /// the lock that registering a watcher takes. Each reply and each event wakes a task, on the HTTP workers in
    /// the order they are sent: a write's answer is not queued behind its hundred watchers' events, and a watch
    /// begun after an answer still finds its write published.
    pub fn publish_answering(&self, events: Vec<Event>, answer: impl FnOnce()) {
        let mut state = self.lock();
        answer();
        for event in events {
            if event.revision <= state.current {
                tracing::error!(revision = %event.revision, current = %state.current, "out-of-order event dropped");
                continue;
            }
            let event = Arc::new(event);
            state.current = event.revision;
            state.ring.push_back(event.clone());
            while state.ring.len() > self.config.window {
                if let Some(old) = state.ring.pop_front() {
                    state.floor = old.revision;
                }
            }
            let capacity = self.config.queue_capacity;
            state.slots.retain(|slot| deliver(slot, &event, capacity));
        }
    }

    /// Records that the backend has reached `revision` with no further events for this store (etcd progress).
    pub fn advance(&self, revision: Revision) {
        let mut state = self.lock();
        if revision > state.current {
            state.current = revision;
            if state.ring.is_empty() {
                state.floor = revision;
            }
        }
    }

    /// The backend's history skipped from the current revision to `compacted` (etcd compacted past where this
    /// store's feed had to resume, after it was cut off from etcd): the events in between are gone. Every
    /// watcher is closed with `Compacted` once it has read what it was sent (a client re-lists, as after kube's
    /// 410), and the hub goes on from `compacted`.
    pub fn skip_to(&self, compacted: Revision) {
        let mut state = self.lock();
        if compacted <= state.current {
            return;
        }
        tracing::error!(current = %state.current, %compacted, "watch history lost to compaction: closing every watcher");
        let requested = state.current;
        for slot in state.slots.drain(..) {
            let _ = slot.closed.set(StorageError::Compacted { requested, compacted });
        }
        state.ring.clear();
        state.current = compacted;
        state.floor = compacted;
    }

    /// Sends a bookmark with the current revision to every watcher that asked for bookmarks. A watcher with a
    /// full queue simply misses this one.
    pub fn progress(&self) {
        let mut state = self.lock();
        let current = state.current;
        state.slots.retain(|slot| {
            if !slot.bookmarks || current < slot.from {
                return !slot.tx.is_closed();
            }
            !matches!(slot.tx.try_send(WatchItem::Bookmark(current)), Err(mpsc::error::TrySendError::Closed(_)))
        });
    }

    /// Registers a watcher on `range` for the events after `from`, which may be ahead of what the hub has been
    /// sent. Events the ring still holds are copied into its backlog under the same lock that publishing takes,
    /// so nothing is missed or repeated between history and live events.
    pub(crate) fn watch(&self, backend: Arc<dyn Backend>, range: KeyRange, from: Revision, options: WatchOptions) -> Watcher {
        let mut state = self.lock();
        let replay = (from < state.floor).then(|| Replay {
            backend,
            range: range.clone(),
            after: from,
            through: state.floor,
        });
        let backlog = state
            .ring
            .iter()
            .filter(|event| event.revision > from && range.contains(event.key.as_str()))
            .cloned()
            .collect();
        let (tx, rx) = mpsc::channel(self.config.queue_capacity);
        let closed = Arc::new(OnceLock::new());
        let slot_from = from.max(state.current);
        state.slots.push(Slot { range, from: slot_from, bookmarks: options.bookmarks, tx, closed: closed.clone() });
        Watcher::one(One { replay, backlog, rx, closed, delivered: from, done: false })
    }
}

/// Offers `event` to one watcher; false if the watcher must be dropped (gone, or overflowed and closed).
fn deliver(slot: &Slot, event: &Arc<Event>, capacity: usize) -> bool {
    if event.revision <= slot.from || !slot.range.contains(event.key.as_str()) {
        return !slot.tx.is_closed();
    }
    match slot.tx.try_send(WatchItem::Event(event.clone())) {
        Ok(()) => true,
        Err(mpsc::error::TrySendError::Full(_)) => {
            tracing::warn!(capacity, "closing a watcher that fell behind");
            let _ = slot.closed.set(StorageError::WatchOverflow { capacity });
            false
        }
        Err(mpsc::error::TrySendError::Closed(_)) => false,
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use crate::key::{GroupResource, KeyLayout};
    use crate::watch::{WatchFrom, WatchItem, WatchOptions};
    use crate::{ApiIdentity, Revision, SpaceName, StorageError, Store, StoreConfig};

    #[tokio::test]
    async fn history_lost_to_compaction_closes_every_watcher_after_what_it_was_sent() {
        let store = Store::memory(StoreConfig { bookmark_interval: None, ..StoreConfig::default() });
        let keys = KeyLayout::default().resource(&GroupResource::new("", "configmaps"), &ApiIdentity::BuiltIn).unwrap_or_else(|e| panic!("{e}"));
        let everything = store.layout().everything();
        let mut watcher = store.watch(&everything, WatchFrom::Now, WatchOptions::default()).await.unwrap_or_else(|e| panic!("{e}"));
        let key = keys.object(&SpaceName::system(), Some("default"), "a").unwrap_or_else(|e| panic!("{e}"));
        let written = store.create(&key, Bytes::from_static(b"{}")).await.unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|e| panic!("{e:?}"));

        store.hub().skip_to(Revision(written.revision.0 + 10));

        match watcher.next().await {
            Some(Ok(WatchItem::Event(event))) => assert_eq!(event.revision, written.revision, "what it was sent comes first"),
            other => panic!("expected the event sent before the gap, got {other:?}"),
        }
        match watcher.next().await {
            Some(Err(StorageError::Compacted { requested, compacted })) => {
                assert_eq!((requested, compacted), (written.revision, Revision(written.revision.0 + 10)));
            }
            other => panic!("expected Compacted, got {other:?}"),
        }
        assert!(watcher.next().await.is_none());
        assert_eq!(store.hub().watcher_count(), 0);
        assert_eq!(store.hub().current(), Revision(written.revision.0 + 10), "the hub goes on after the gap");
    }
}

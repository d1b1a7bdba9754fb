//! Watch: events, the fan-out hub, and the watcher a client reads from.
//!
//! The guarantees (ordered, unique, complete, resumable, bookmarkable, bounded, encoded once) are written down
//! in `docs/watch-guarantees.md` and checked by name in [`crate::conformance`].

mod hub;

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use tokio::sync::mpsc;

pub use hub::{HubConfig, WatchHub};

use crate::backend::Backend;
use crate::error::{Result, StorageError};
use crate::key::{Key, KeyRange};
use crate::Revision;

/// How many cached encodings an event carries (one per wire format the API serves).
pub const ENCODING_SLOTS: usize = 4;

/// What happened to a key.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    Added,
    Modified,
    Deleted,
}

/// One committed change. Shared (`Arc`) by every watcher that receives it, so its bytes and its encodings
/// exist once however many watchers there are.
#[derive(Clone, Debug)]
pub struct Event {
    pub kind: EventKind,
    pub key: Key,
    /// The object after the change; for `Deleted`, the object as it was when deleted.
    pub value: Bytes,
    /// The object before the change (`None` for `Added`).
    pub prev: Option<Bytes>,
    /// The revision of the change.
    pub revision: Revision,
    encoded: [OnceLock<Bytes>; ENCODING_SLOTS],
}

impl PartialEq for Event {
    fn eq(&self, other: &Event) -> bool {
        (self.kind, &self.key, &self.value, &self.prev, self.revision)
            == (other.kind, &other.key, &other.value, &other.prev, other.revision)
    }
}

impl Eq for Event {}

impl Event {
    pub fn new(kind: EventKind, key: Key, value: Bytes, prev: Option<Bytes>, revision: Revision) -> Event {
        Event { kind, key, value, prev, revision, encoded: Default::default() }
    }

    /// The event encoded for wire format `slot` (`< ENCODING_SLOTS`), computed by `encode` at most once.
    pub fn encoded(&self, slot: usize, encode: impl FnOnce(&Event) -> Bytes) -> Bytes {
        match self.encoded.get(slot) {
            Some(cell) => cell.get_or_init(|| encode(self)).clone(),
            None => encode(self),
        }
    }
}

/// What a watcher yields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchItem {
    Event(Arc<Event>),
    /// Every event of the watched range up to this revision has been delivered.
    Bookmark(Revision),
}

/// Where a watch starts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WatchFrom {
    /// Only changes after the watch is registered.
    Now,
    /// Every change with a revision greater than this one (resume).
    After(Revision),
}

/// Options of one watch.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchOptions {
    /// Receive [`WatchItem::Bookmark`]s when the store sends progress.
    pub bookmarks: bool,
}

/// History older than the hub's window, still to be read from the backend.
struct Replay {
    backend: Arc<dyn Backend>,
    range: KeyRange,
    after: Revision,
    through: Revision,
}

/// A client's view of one watch. Yields events in revision order, each once, then bookmarks as asked.
pub struct Watcher {
    replay: Option<Replay>,
    backlog: VecDeque<Arc<Event>>,
    rx: mpsc::Receiver<WatchItem>,
    /// Set when the hub closes this watcher: it fell behind, or the history it needs is gone.
    closed: Arc<OnceLock<StorageError>>,
    /// The highest revision delivered (or the start point); nothing at or below it is delivered again.
    delivered: Revision,
    done: bool,
}

impl Watcher {
    /// The next item; `None` when the store has shut down; an error (then `None`) if the watcher fell behind
    /// or its history is gone.
    pub async fn next(&mut self) -> Option<Result<WatchItem>> {
        if self.done {
            return None;
        }
        if let Some(replay) = self.replay.take() {
            match replay.backend.history(&replay.range, replay.after, replay.through).await {
                Ok(events) => self.backlog = events.into_iter().map(Arc::new).chain(self.backlog.drain(..)).collect(),
                Err(err) => {
                    self.done = true;
                    return Some(Err(err));
                }
            }
        }
        while let Some(event) = self.backlog.pop_front() {
            if let Some(item) = self.accept(WatchItem::Event(event)) {
                return Some(Ok(item));
            }
        }
        loop {
            match self.rx.recv().await {
                Some(item) => {
                    if let Some(item) = self.accept(item) {
                        return Some(Ok(item));
                    }
                }
                None => {
                    self.done = true;
                    return self.closed.get().cloned().map(Err);
                }
            }
        }
    }

    /// Drops anything at or below what was already delivered, so no event is ever seen twice.
    fn accept(&mut self, item: WatchItem) -> Option<WatchItem> {
        match &item {
            WatchItem::Event(event) if event.revision <= self.delivered => None,
            WatchItem::Event(event) => {
                self.delivered = event.revision;
                Some(item)
            }
            WatchItem::Bookmark(revision) if *revision < self.delivered => None,
            WatchItem::Bookmark(_) => Some(item),
        }
    }

    /// The watcher as a `Stream`, for HTTP response bodies.
    pub fn into_stream(self) -> impl futures::Stream<Item = Result<WatchItem>> + Send {
        futures::stream::unfold(self, |mut watcher| async move {
            let item = watcher.next().await?;
            Some((item, watcher))
        })
    }
}

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
use crate::clusters::{ClusterId, Position};
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
pub(crate) struct Replay {
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) range: KeyRange,
    pub(crate) after: Revision,
    pub(crate) through: Revision,
}

/// A client's view of one watch. Yields events in revision order, each once, then bookmarks as asked.
///
/// A watch of a range across storage clusters (`crate::Clusters`) merges one watch per cluster: each cluster's
/// events in its own revision order, and [`Watcher::position`] says where the merged watch stands.
pub struct Watcher(Kind);

enum Kind {
    One(One),
    Merged(Merged),
}

/// A watch of one hub.
pub(crate) struct One {
    pub(crate) replay: Option<Replay>,
    pub(crate) backlog: VecDeque<Arc<Event>>,
    pub(crate) rx: mpsc::Receiver<WatchItem>,
    /// Set when the hub closes this watcher: it fell behind, or the history it needs is gone.
    pub(crate) closed: Arc<OnceLock<StorageError>>,
    /// The highest revision delivered (or the start point); nothing at or below it is delivered again.
    pub(crate) delivered: Revision,
    pub(crate) done: bool,
}

/// A watch of several storage clusters: one task per cluster forwards that cluster's items, tagged.
struct Merged {
    rx: mpsc::Receiver<(ClusterId, Result<WatchItem>)>,
    position: Position,
    done: bool,
}

impl Watcher {
    pub(crate) fn one(one: One) -> Watcher {
        Watcher(Kind::One(one))
    }

    /// Merges the watches of several storage clusters, each started after its revision in `start`.
    pub(crate) fn merged(watchers: Vec<(ClusterId, Watcher)>, start: Position) -> Watcher {
        let (tx, rx) = mpsc::channel(1024);
        for (cluster, mut watcher) in watchers {
            let tx = tx.clone();
            tokio::spawn(async move {
                loop {
                    let item = tokio::select! {
                        item = watcher.next() => item,
                        () = tx.closed() => return,
                    };
                    let Some(item) = item else { return };
                    let failed = item.is_err();
                    if tx.send((cluster, item)).await.is_err() || failed {
                        return;
                    }
                }
            });
        }
        Watcher(Kind::Merged(Merged { rx, position: start, done: false }))
    }

    /// Where a watch across storage clusters stands after the item `next` returned last: every cluster's
    /// revision, what a client resumes from. `None` for a watch of one store (its events' revisions say it).
    pub fn position(&self) -> Option<&Position> {
        match &self.0 {
            Kind::One(_) => None,
            Kind::Merged(merged) => Some(&merged.position),
        }
    }

    /// The next item; `None` when the store has shut down; an error (then `None`) if the watcher fell behind
    /// or its history is gone.
    pub async fn next(&mut self) -> Option<Result<WatchItem>> {
        match &mut self.0 {
            Kind::One(one) => one.next().await,
            Kind::Merged(merged) => merged.next().await,
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

impl Merged {
    async fn next(&mut self) -> Option<Result<WatchItem>> {
        if self.done {
            return None;
        }
        match self.rx.recv().await {
            Some((cluster, Ok(item))) => {
                let revision = match &item {
                    WatchItem::Event(event) => event.revision,
                    WatchItem::Bookmark(revision) => *revision,
                };
                self.position.advance(cluster, revision);
                Some(Ok(item))
            }
            Some((_, Err(err))) => {
                self.done = true;
                Some(Err(err))
            }
            None => {
                self.done = true;
                None
            }
        }
    }
}

impl One {
    async fn next(&mut self) -> Option<Result<WatchItem>> {
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
}

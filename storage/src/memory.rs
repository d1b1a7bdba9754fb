//! The in-memory backend: the reference model every other backend is checked against.
//!
//! It is deliberately plain: one mutex, a `BTreeMap` of every version of every key, and a log of which key
//! changed at which revision. Nothing is durable.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use bytes::Bytes;

use crate::backend::{Backend, Conflict, Deleted, RawPage, Record, WriteOp, Written};
use crate::error::{Result, StorageError};
use crate::key::{Key, KeyRange};
use crate::watch::{Event, EventKind, WatchHub};
use crate::Revision;

#[derive(Clone, Debug)]
struct Version {
    revision: Revision,
    create_revision: Revision,
    /// For a tombstone: the value as it was when deleted.
    value: Bytes,
    tombstone: bool,
}

#[derive(Default)]
struct State {
    versions: BTreeMap<Key, Vec<Version>>,
    log: BTreeMap<Revision, Key>,
    revision: Revision,
    compacted: Revision,
}

impl State {
    fn version_at(&self, key: &Key, at: Revision) -> Option<&Version> {
        self.versions.get(key)?.iter().rev().find(|v| v.revision <= at)
    }

    fn live_at(&self, key: &Key, at: Revision) -> Option<Record> {
        let version = self.version_at(key, at).filter(|v| !v.tombstone)?;
        Some(record(key, version))
    }

    fn check_at(&self, at: Revision) -> Result<()> {
        if at < self.compacted {
            return Err(StorageError::Compacted { requested: at, compacted: self.compacted });
        }
        if at > self.revision {
            return Err(StorageError::FutureRevision { requested: at, current: self.revision });
        }
        Ok(())
    }
}

fn record(key: &Key, version: &Version) -> Record {
    Record {
        key: key.clone(),
        value: version.value.clone(),
        revision: version.revision,
        create_revision: version.create_revision,
    }
}

/// The reference backend.
pub struct MemoryBackend {
    state: Mutex<State>,
    hub: Arc<WatchHub>,
}

impl MemoryBackend {
    pub fn new(hub: Arc<WatchHub>) -> MemoryBackend {
        MemoryBackend { state: Mutex::new(State::default()), hub }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl Backend for MemoryBackend {
    async fn get(&self, key: &Key) -> Result<Option<Record>> {
        let state = self.lock();
        Ok(state.live_at(key, state.revision))
    }

    async fn list(&self, range: &KeyRange, start: Option<&str>, at: Option<Revision>, limit: Option<usize>, count_remaining: bool)
        -> Result<RawPage> {
        let state = self.lock();
        let at = at.unwrap_or(state.revision);
        state.check_at(at)?;
        let from = start.filter(|s| *s > range.start()).unwrap_or(range.start());
        let end = range.end();
        let mut items = Vec::new();
        let mut beyond: u64 = 0;
        for key in state.versions.keys().skip_while(|k| k.as_str() < from).take_while(|k| k.as_str() < end.as_str()) {
            let Some(item) = state.live_at(key, at) else { continue };
            if limit.is_some_and(|limit| items.len() >= limit) {
                beyond += 1;
                if !count_remaining {
                    break;
                }
                continue;
            }
            items.push(item);
        }
        let more = beyond > 0;
        Ok(RawPage { items, revision: at, more, remaining: (more && count_remaining).then_some(beyond) })
    }

    async fn write(&self, op: WriteOp) -> Result<std::result::Result<Written, Conflict>> {
        let mut state = self.lock();
        let revision = state.revision;
        let current = state.live_at(op.key(), revision);
        let revision = state.revision.next();
        let (key, version, written, kind, prev) = match op {
            WriteOp::Create { key, value } => {
                if let Some(existing) = current {
                    return Ok(Err(Conflict::AlreadyExists(existing)));
                }
                let version = Version { revision, create_revision: revision, value, tombstone: false };
                let written = Written::Put(record(&key, &version));
                (key, version, written, EventKind::Added, None)
            }
            WriteOp::Update { key, value, expected } => {
                let existing = match check(current, expected) {
                    Ok(existing) => existing,
                    Err(conflict) => return Ok(Err(conflict)),
                };
                let version =
                    Version { revision, create_revision: existing.create_revision, value, tombstone: false };
                let written = Written::Put(record(&key, &version));
                (key, version, written, EventKind::Modified, Some(existing.value))
            }
            WriteOp::Delete { key, expected } => {
                let existing = match check(current, expected) {
                    Ok(existing) => existing,
                    Err(conflict) => return Ok(Err(conflict)),
                };
                let version = Version {
                    revision,
                    create_revision: existing.create_revision,
                    value: existing.value.clone(),
                    tombstone: true,
                };
                let prev = existing.value.clone();
                let written = Written::Deleted(Deleted { prev: existing, revision });
                (key, version, written, EventKind::Deleted, Some(prev))
            }
        };
        let event = Event::new(kind, key.clone(), version.value.clone(), prev, revision);
        state.versions.entry(key.clone()).or_default().push(version);
        state.log.insert(revision, key);
        state.revision = revision;
        // Publish under the state lock so events reach the hub in revision order.
        self.hub.publish(vec![event]);
        Ok(Ok(written))
    }

    async fn current_revision(&self) -> Result<Revision> {
        Ok(self.lock().revision)
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        let mut state = self.lock();
        if revision <= state.compacted {
            return Ok(());
        }
        if revision > state.revision {
            return Err(StorageError::FutureRevision { requested: revision, current: state.revision });
        }
        for versions in state.versions.values_mut() {
            // Keep every version above the compaction point and the newest at or below it, unless deleted.
            let keep_from = versions.iter().rposition(|v| v.revision <= revision).unwrap_or(0);
            versions.drain(..keep_from);
            if versions.first().is_some_and(|v| v.revision <= revision && v.tombstone) {
                versions.remove(0);
            }
        }
        state.versions.retain(|_, versions| !versions.is_empty());
        state.log = state.log.split_off(&revision.next());
        state.compacted = revision;
        Ok(())
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        Ok(self.lock().compacted)
    }

    async fn history(&self, range: &KeyRange, after: Revision, through: Revision) -> Result<Vec<Event>> {
        let state = self.lock();
        if after < state.compacted {
            return Err(StorageError::Compacted { requested: after, compacted: state.compacted });
        }
        let mut events = Vec::new();
        for (revision, key) in state.log.range(after.next()..=through) {
            if !range.contains(key.as_str()) {
                continue;
            }
            let versions = state.versions.get(key).map(Vec::as_slice).unwrap_or_default();
            let Some(index) = versions.iter().position(|v| v.revision == *revision) else { continue };
            let version = &versions[index];
            let prev = index.checked_sub(1).map(|i| &versions[i]).filter(|v| !v.tombstone).map(|v| v.value.clone());
            let kind = event_kind(version.tombstone, version.create_revision, version.revision);
            events.push(Event::new(kind, key.clone(), version.value.clone(), prev, *revision));
        }
        Ok(events)
    }
}

/// The event kind a stored version stands for.
pub(crate) fn event_kind(tombstone: bool, create_revision: Revision, revision: Revision) -> EventKind {
    if tombstone {
        EventKind::Deleted
    } else if create_revision == revision {
        EventKind::Added
    } else {
        EventKind::Modified
    }
}

/// Applies the precondition of an update or delete to the current record.
pub(crate) fn check(current: Option<Record>, expected: Option<Revision>) -> std::result::Result<Record, Conflict> {
    match (current, expected) {
        (None, _) => Err(Conflict::NotFound),
        (Some(existing), Some(expected)) if existing.revision != expected => Err(Conflict::RevisionMismatch(existing)),
        (Some(existing), _) => Ok(existing),
    }
}

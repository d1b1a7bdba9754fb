//! The embedded backend on sled 0.34.7 (the default).
//!
//! Everything lives in one sled tree, so that one commit's entries (each write's version and history entry, then
//! the stored revision) are one run of sled's log, which a crash cuts at most once (see `insert_in_order`):
//!
//! | key                               | value                                    |
//! |-----------------------------------|------------------------------------------|
//! | `v` key `\0` revision (8 bytes BE)| tag (0 live, 1 tombstone), create revision (8 BE), object bytes |
//! | `e` revision (8 bytes BE)         | the key written at that revision (the event log)                 |
//! | `m` `revision` / `compacted`      | the current and compacted revisions (8 BE)                       |
//!
//! All writes go through one writer thread. It drains every queued write into one batch, applies it, calls
//! `flush` (fsync) once for the whole batch, and only then publishes the events and acknowledges the writers:
//! group commit, so durability costs latency, not throughput. Readers read at the last durable revision, so
//! nobody ever sees a write that a crash could still take back.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::oneshot;

use crate::backend::{Backend, Conflict, Deleted, RawPage, Record, WriteOp, Written};
use crate::error::{Result, StorageError};
use crate::key::{Key, KeyRange};
use crate::memory::{check, event_kind};
use crate::watch::{Event, EventKind, WatchHub};
use crate::Revision;

const TREE: &str = "kspaces";
const META_REVISION: &[u8] = b"mrevision";
const META_COMPACTED: &[u8] = b"mcompacted";
/// Most writes committed by one flush.
const MAX_BATCH: usize = 4096;
/// Event-log entries removed per compaction batch.
const COMPACTION_CHUNK: usize = 10_000;

/// Where and how to open the sled database.
#[derive(Clone, Debug)]
pub struct SledConfig {
    pub path: PathBuf,
    /// sled's page cache size in bytes.
    pub cache_capacity: u64,
}

impl SledConfig {
    pub fn new(path: impl Into<PathBuf>) -> SledConfig {
        SledConfig { path: path.into(), cache_capacity: 64 * 1024 * 1024 }
    }
}

fn backend_err(err: sled::Error) -> StorageError {
    StorageError::Backend(format!("sled: {err}"))
}

fn version_key(key: &str, revision: Revision) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + 10);
    out.push(b'v');
    out.extend_from_slice(key.as_bytes());
    out.push(0);
    out.extend_from_slice(&revision.to_be_bytes());
    out
}

fn event_key(revision: Revision) -> [u8; 9] {
    let mut out = [b'e'; 9];
    out[1..].copy_from_slice(&revision.to_be_bytes());
    out
}

/// Decodes an `e` entry: the revision and the key written at it.
fn decode_event<'v>(raw_key: &[u8], raw_value: &'v [u8]) -> Result<(Revision, &'v str)> {
    let revision = Revision::from_be_slice(&raw_key[1..])
        .ok_or_else(|| StorageError::Backend("sled: corrupt event key".to_owned()))?;
    let key = std::str::from_utf8(raw_value).map_err(|_| StorageError::Backend("sled: corrupt event record".to_owned()))?;
    Ok((revision, key))
}

/// A stored version of a key.
#[derive(Clone, Debug)]
struct Version {
    revision: Revision,
    create_revision: Revision,
    tombstone: bool,
    value: Bytes,
}

impl Version {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.value.len() + 9);
        out.push(u8::from(self.tombstone));
        out.extend_from_slice(&self.create_revision.to_be_bytes());
        out.extend_from_slice(&self.value);
        out
    }

    /// Decodes a `v` entry.
    fn decode<'k>(raw_key: &'k [u8], raw_value: &[u8]) -> Result<(&'k str, Version)> {
        let corrupt = |what: &str| StorageError::Backend(format!("sled: corrupt version record: {what}"));
        if raw_key.len() < 10 || raw_key[0] != b'v' || raw_key[raw_key.len() - 9] != 0 {
            return Err(corrupt("bad key"));
        }
        let key = std::str::from_utf8(&raw_key[1..raw_key.len() - 9]).map_err(|_| corrupt("key is not UTF-8"))?;
        let revision = Revision::from_be_slice(&raw_key[raw_key.len() - 8..]).ok_or_else(|| corrupt("revision"))?;
        if raw_value.len() < 9 || raw_value[0] > 1 {
            return Err(corrupt("bad value header"));
        }
        let create_revision = Revision::from_be_slice(&raw_value[1..9]).ok_or_else(|| corrupt("create revision"))?;
        let version = Version {
            revision,
            create_revision,
            tombstone: raw_value[0] == 1,
            value: Bytes::copy_from_slice(&raw_value[9..]),
        };
        Ok((key, version))
    }

    /// Decodes a `v` entry whose value the record then shares with sled (no copy).
    fn decode_shared(raw_key: &[u8], raw_value: sled::IVec) -> Result<(&str, Version)> {
        let (key, mut version) = Version::decode(raw_key, &raw_value[..9.min(raw_value.len())])?;
        version.value = Bytes::from_owner(raw_value).slice(9..);
        Ok((key, version))
    }

    fn record(&self, key: &Key) -> Record {
        Record { key: key.clone(), value: self.value.clone(), revision: self.revision, create_revision: self.create_revision }
    }

    fn into_record(self, key: Key) -> Record {
        Record { key, value: self.value, revision: self.revision, create_revision: self.create_revision }
    }
}

/// The newest version of `key` at or below `at`.
fn version_at(tree: &sled::Tree, key: &str, at: Revision) -> Result<Option<Version>> {
    let Some(entry) = tree.range(version_key(key, Revision::ZERO)..=version_key(key, at)).next_back() else {
        return Ok(None);
    };
    let (raw_key, raw_value) = entry.map_err(backend_err)?;
    Ok(Some(Version::decode(&raw_key, &raw_value)?.1))
}

fn live_at(tree: &sled::Tree, key: &Key, at: Revision) -> Result<Option<Record>> {
    Ok(version_at(tree, key.as_str(), at)?.filter(|v| !v.tombstone).map(|v| v.record(key)))
}

fn read_meta(tree: &sled::Tree, name: &[u8]) -> Result<Revision> {
    match tree.get(name).map_err(backend_err)? {
        None => Ok(Revision::ZERO),
        Some(raw) => Revision::from_be_slice(&raw)
            .ok_or_else(|| StorageError::Backend("sled: corrupt meta record".to_owned())),
    }
}

type WriteReply = oneshot::Sender<Result<std::result::Result<Written, Conflict>>>;

enum Msg {
    Write(WriteOp, WriteReply),
    Compact(Revision, oneshot::Sender<Result<()>>),
}

/// State shared between the backend handle and its writer thread.
struct Shared {
    tree: sled::Tree,
    hub: Arc<WatchHub>,
    /// The last revision whose batch is flushed; readers never look past it.
    durable: AtomicU64,
    compacted: AtomicU64,
    /// Set when a batch failed to apply or flush: the on-disk state is then unknown, so refuse writes.
    failed: AtomicBool,
}

impl Shared {
    fn durable(&self) -> Revision {
        Revision(self.durable.load(Ordering::Acquire))
    }

    fn compacted(&self) -> Revision {
        Revision(self.compacted.load(Ordering::Acquire))
    }
}

/// The sled backend. Dropping it stops the writer after the queued writes are committed.
pub struct SledBackend {
    shared: Arc<Shared>,
    tx: Mutex<Option<mpsc::Sender<Msg>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    _db: sled::Db,
}

/// Opens (or creates) the database at `config.path` and kspaces' tree in it; the writer thread does the
/// flushing, so sled's own periodic flush is off.
fn open_tree(config: &SledConfig) -> Result<(sled::Db, sled::Tree)> {
    let db = sled::Config::new()
        .path(&config.path)
        .cache_capacity(config.cache_capacity)
        .flush_every_ms(None)
        .open()
        .map_err(|err| StorageError::Unavailable(format!("cannot open sled at {}: {err}", config.path.display())))?;
    let tree = db.open_tree(TREE).map_err(backend_err)?;
    Ok((db, tree))
}

impl SledBackend {
    /// Opens (or creates) the database; returns the backend and its current revision for the hub.
    pub fn open(config: &SledConfig, hub_for: impl FnOnce(Revision) -> Arc<WatchHub>) -> Result<(SledBackend, Arc<WatchHub>)> {
        let (db, tree) = open_tree(config)?;
        let revision = read_meta(&tree, META_REVISION)?;
        let discarded = discard_torn(&tree, revision)?;
        if discarded > 0 {
            tracing::warn!(discarded, %revision, "sled: removed the writes of a commit a crash interrupted (none was acknowledged)");
        }
        let compacted = read_meta(&tree, META_COMPACTED)?;
        let hub = hub_for(revision);
        let shared = Arc::new(Shared {
            tree,
            hub: hub.clone(),
            durable: AtomicU64::new(revision.0),
            compacted: AtomicU64::new(compacted.0),
            failed: AtomicBool::new(false),
        });
        let (tx, rx) = mpsc::channel();
        let writer_shared = shared.clone();
        let writer = std::thread::Builder::new()
            .name("kspaces-sled-writer".to_owned())
            .spawn(move || Writer { shared: writer_shared, revision }.run(rx))
            .map_err(|err| StorageError::Backend(format!("cannot start the sled writer: {err}")))?;
        let backend = SledBackend { shared, tx: Mutex::new(Some(tx)), writer: Mutex::new(Some(writer)), _db: db };
        Ok((backend, hub))
    }

    fn send(&self, msg: Msg) -> Result<()> {
        let tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        let tx = tx.as_ref().ok_or_else(|| StorageError::Unavailable("the store is shut down".to_owned()))?;
        tx.send(msg).map_err(|_| StorageError::Unavailable("the sled writer stopped".to_owned()))
    }

    /// Checks the on-disk invariants: every event has its version, every version newer than the compaction
    /// point has its event, create revisions chain correctly, nothing is newer than the stored revision.
    /// Returns the problems found (empty when consistent).
    pub fn check_consistency(&self) -> Result<Vec<String>> {
        check_tree(&self.shared.tree, Torn::Refused)
    }
}

impl Drop for SledBackend {
    fn drop(&mut self) {
        self.tx.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(writer) = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = writer.join();
        }
    }
}

#[async_trait]
impl Backend for SledBackend {
    async fn get(&self, key: &Key) -> Result<Option<Record>> {
        live_at(&self.shared.tree, key, self.shared.durable())
    }

    async fn list(&self, range: &KeyRange, start: Option<&str>, at: Option<Revision>, limit: Option<usize>, count_remaining: bool)
        -> Result<RawPage> {
        let durable = self.shared.durable();
        let at = at.unwrap_or(durable);
        check_revision(at, durable, self.shared.compacted())?;
        let from = start.filter(|s| *s > range.start()).unwrap_or(range.start()).to_owned();
        let cap = if count_remaining { REMAINING_COUNT_CAP } else { 1 };
        // A scan is long, synchronous work (and may fault pages in from disk): it runs on the blocking pool, so
        // the caller's thread keeps serving, or sends the page before it while this one is read.
        let (tree, end) = (self.shared.tree.clone(), range.end());
        let page = tokio::task::spawn_blocking(move || scan(&tree, &from, &end, at, limit, cap))
            .await
            .map_err(|err| StorageError::Backend(format!("sled: a scan stopped: {err}")))??;
        // Compaction may have run during the scan; a snapshot older than it may have lost versions.
        check_revision(at, durable, self.shared.compacted())?;
        Ok(page)
    }

    async fn occupied(&self, ranges: &[KeyRange]) -> Result<Vec<bool>> {
        let at = self.shared.durable();
        let tree = self.shared.tree.clone();
        let bounds: Vec<(String, String)> = ranges.iter().map(|range| (range.start().to_owned(), range.end())).collect();
        tokio::task::spawn_blocking(move || {
            bounds.iter().map(|(from, end)| Ok(!scan(&tree, from, end, at, Some(1), 1)?.items.is_empty())).collect()
        })
        .await
        .map_err(|err| StorageError::Backend(format!("sled: a scan stopped: {err}")))?
    }

    async fn write(&self, op: WriteOp) -> Result<std::result::Result<Written, Conflict>> {
        if self.shared.failed.load(Ordering::Acquire) {
            return Err(StorageError::Unavailable("a commit failed earlier; restart to recover".to_owned()));
        }
        let (reply, response) = oneshot::channel();
        self.send(Msg::Write(op, reply))?;
        response.await.map_err(|_| StorageError::Unavailable("the sled writer stopped".to_owned()))?
    }

    async fn current_revision(&self) -> Result<Revision> {
        Ok(self.shared.durable())
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        let (reply, response) = oneshot::channel();
        self.send(Msg::Compact(revision, reply))?;
        response.await.map_err(|_| StorageError::Unavailable("the sled writer stopped".to_owned()))?
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        Ok(self.shared.compacted())
    }

    async fn history(&self, range: &KeyRange, after: Revision, through: Revision) -> Result<Vec<Event>> {
        let tree = &self.shared.tree;
        let compacted = self.shared.compacted();
        if after < compacted {
            return Err(StorageError::Compacted { requested: after, compacted });
        }
        let through = through.min(self.shared.durable());
        let mut events = Vec::new();
        for entry in tree.range(event_key(after.next())..=event_key(through)) {
            let (raw_key, raw_value) = entry.map_err(backend_err)?;
            let (revision, key) = decode_event(&raw_key, &raw_value)?;
            if !range.contains(key) {
                continue;
            }
            let Some(version) = version_at(tree, key, revision)?.filter(|v| v.revision == revision) else {
                continue;
            };
            let prev = match revision.0.checked_sub(1) {
                Some(before) => version_at(tree, key, Revision(before))?.filter(|v| !v.tombstone).map(|v| v.value),
                None => None,
            };
            let kind = event_kind(version.tombstone, version.create_revision, revision);
            events.push(Event::new(kind, Key::from_stored(key), version.value, prev, revision));
        }
        let compacted = self.shared.compacted();
        if after < compacted {
            return Err(StorageError::Compacted { requested: after, compacted });
        }
        Ok(events)
    }
}

fn check_revision(at: Revision, durable: Revision, compacted: Revision) -> Result<()> {
    if at < compacted {
        return Err(StorageError::Compacted { requested: at, compacted });
    }
    if at > durable {
        return Err(StorageError::FutureRevision { requested: at, current: durable });
    }
    Ok(())
}

/// A key during a scan: its first raw key (the key's bytes inside it), its newest raw `(key, value)` entry at or
/// below the snapshot, and liveness.
type ScanEntry = (sled::IVec, Option<(sled::IVec, sled::IVec)>, bool);

/// How many keys past a page a scan counts for `remaining` before it gives up and reports none (Kubernetes
/// lets `remainingItemCount` be absent; kubectl does not read it). Without a bound, each page of a 100,000-key
/// range reads to its end; at 10,000 a `?limit=1` list of 100,000 Workspaces took 135 ms.
const REMAINING_COUNT_CAP: u64 = 1_000;

/// Scans versions in `[from, end)` and keeps, per key, the newest live version at or below `at`. Past `limit`,
/// it only counts the remaining live keys (headers only, no value copies) for `remaining`, up to `cap` (at
/// most [`REMAINING_COUNT_CAP`]; 1 only learns whether there are more).
fn scan(tree: &sled::Tree, from: &str, end: &str, at: Revision, limit: Option<usize>, cap: u64) -> Result<RawPage> {
    let mut items: Vec<Record> = Vec::new();
    let mut beyond: u64 = 0;
    // The key being scanned, its newest raw entry at or below `at`, and whether that entry is live.
    let mut current: Option<ScanEntry> = None;
    let mut start = vec![b'v'];
    match from.strip_suffix('\0') {
        // A continue position (`key \0`) means "after key": skip past all of its versions (`key \0 revision`).
        Some(after) => {
            start.extend_from_slice(after.as_bytes());
            start.push(1);
        }
        None => start.extend_from_slice(from.as_bytes()),
    }
    let mut stop = vec![b'v'];
    stop.extend_from_slice(end.as_bytes());
    // Adds a finished key to the page (or to the count past it); true once the count reaches its cap.
    let mut finish = |entry: Option<ScanEntry>, items: &mut Vec<Record>| -> Result<bool> {
        let Some((_, Some((raw_key, raw_value)), true)) = entry else { return Ok(false) };
        if limit.is_some_and(|limit| items.len() >= limit) {
            beyond += 1;
            return Ok(beyond >= cap);
        }
        let (key, version) = Version::decode_shared(&raw_key, raw_value)?;
        items.push(version.into_record(Key::from_stored(key)));
        Ok(false)
    };
    for entry in tree.range(start..stop) {
        let (raw_key, raw_value) = entry.map_err(backend_err)?;
        let (key_bytes, revision, tombstone) = header(&raw_key, &raw_value)?;
        // The key's first entry stands for it (its bytes shared with sled, not copied).
        let is_other_key = |(first, _, _): &ScanEntry| &first[1..first.len() - 9] != key_bytes;
        if current.as_ref().is_some_and(is_other_key) && finish(current.take(), &mut items)? {
            break;
        }
        let entry = current.get_or_insert_with(|| (raw_key.clone(), None, false));
        if revision <= at {
            let counting = limit.is_some_and(|limit| items.len() >= limit);
            // While counting, only liveness matters: skip keeping the record. Otherwise keep sled's own buffers
            // (shared, not copied); the record's value is a view of them.
            entry.1 = Some(if counting { (sled::IVec::default(), sled::IVec::default()) } else { (raw_key, raw_value) });
            entry.2 = !tombstone;
        }
    }
    finish(current, &mut items)?;
    let more = beyond > 0;
    let counted = beyond < cap;
    Ok(RawPage { items, revision: at, more, remaining: (more && counted).then_some(beyond) })
}

/// The key bytes, revision and tombstone flag of a `v` entry, without copying its value.
fn header<'a>(raw_key: &'a [u8], raw_value: &[u8]) -> Result<(&'a [u8], Revision, bool)> {
    let corrupt = || StorageError::Backend("sled: corrupt version record".to_owned());
    if raw_key.len() < 10 || raw_value.is_empty() {
        return Err(corrupt());
    }
    let revision = Revision::from_be_slice(&raw_key[raw_key.len() - 8..]).ok_or_else(corrupt)?;
    Ok((&raw_key[1..raw_key.len() - 9], revision, raw_value[0] == 1))
}

/// The single writer: turns queued messages into group commits.
struct Writer {
    shared: Arc<Shared>,
    revision: Revision,
}

impl Writer {
    fn run(mut self, rx: mpsc::Receiver<Msg>) {
        while let Ok(first) = rx.recv() {
            let mut writes = Vec::new();
            let mut next = Some(first);
            while let Some(msg) = next.take() {
                match msg {
                    Msg::Write(op, reply) => writes.push((op, reply)),
                    Msg::Compact(revision, reply) => {
                        self.commit(std::mem::take(&mut writes));
                        let _ = reply.send(self.compact(revision));
                    }
                }
                if writes.len() < MAX_BATCH {
                    next = rx.try_recv().ok();
                }
            }
            self.commit(writes);
        }
    }

    fn commit(&mut self, writes: Vec<(WriteOp, WriteReply)>) {
        if writes.is_empty() {
            return;
        }
        if self.shared.failed.load(Ordering::Acquire) {
            for (_, reply) in writes {
                let _ = reply.send(Err(StorageError::Unavailable("a commit failed earlier; restart".to_owned())));
            }
            return;
        }
        let tree = &self.shared.tree;
        let mut overlay: HashMap<Key, Option<Record>> = HashMap::new();
        // The commit's entries in the order they are inserted (see `insert_in_order`).
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(2 * writes.len() + 1);
        let mut events = Vec::new();
        let mut outcomes = Vec::with_capacity(writes.len());
        let mut revision = self.revision;
        for (op, reply) in writes {
            let key = op.key().clone();
            let current = match overlay.get(&key) {
                Some(current) => current.clone(),
                None => match live_at(tree, &key, revision) {
                    Ok(current) => current,
                    Err(err) => {
                        outcomes.push((reply, Err(err)));
                        continue;
                    }
                },
            };
            let next = revision.next();
            let (version, written, kind, prev) = match apply(op, current, next) {
                Ok(applied) => applied,
                Err(conflict) => {
                    outcomes.push((reply, Ok(Err(conflict))));
                    continue;
                }
            };
            revision = next;
            // The event first: a version newer than the stored revision then always has its event, which is how
            // `discard_torn` finds it after a crash.
            entries.push((event_key(revision).to_vec(), key.as_str().as_bytes().to_vec()));
            entries.push((version_key(key.as_str(), revision), version.encode()));
            overlay.insert(key.clone(), (!version.tombstone).then(|| version.record(&key)));
            events.push(Event::new(kind, key, version.value, prev, revision));
            outcomes.push((reply, Ok(Ok(written))));
        }
        if revision != self.revision {
            entries.push((META_REVISION.to_vec(), revision.to_be_bytes().to_vec()));
            let committed = insert_in_order(tree, entries).and_then(|()| tree.flush().map(drop));
            if let Err(err) = committed {
                tracing::error!(%err, "sled commit failed; refusing further writes");
                self.shared.failed.store(true, Ordering::Release);
                for (reply, outcome) in outcomes {
                    let failed = outcome.and_then(|_| Err(backend_err(err.clone())));
                    let _ = reply.send(failed);
                }
                return;
            }
            self.revision = revision;
            self.shared.durable.store(revision.0, Ordering::Release);
        }
        let answer = || {
            for (reply, outcome) in outcomes {
                let _ = reply.send(outcome);
            }
        };
        // The writers first, then their watchers (see `publish_answering`).
        if events.is_empty() {
            answer();
        } else {
            self.shared.hub.publish_answering(events, answer);
        }
    }

    /// Removes history at or below `revision`, in chunks, after recording the new compaction point.
    fn compact(&mut self, revision: Revision) -> Result<()> {
        let tree = &self.shared.tree;
        if revision <= self.shared.compacted() {
            return Ok(());
        }
        if revision > self.revision {
            return Err(StorageError::FutureRevision { requested: revision, current: self.revision });
        }
        tree.insert(META_COMPACTED, &revision.to_be_bytes()).map_err(backend_err)?;
        tree.flush().map_err(backend_err)?;
        self.shared.compacted.store(revision.0, Ordering::Release);
        // Removed key by key, not as a `sled::Batch`: after one batch sled makes every later read take a lock that
        // each batch then holds exclusively. The order keeps each crash prefix (see `insert_in_order`) consistent:
        // an event goes after the versions it supersedes and before its own tombstone, so an event still there is
        // compacted again next time, and no event is left without its version.
        loop {
            let mut doomed: Vec<sled::IVec> = Vec::new();
            let mut removed = 0;
            for entry in tree.range(event_key(Revision::ZERO)..=event_key(revision)).take(COMPACTION_CHUNK) {
                let (raw_key, raw_value) = entry.map_err(backend_err)?;
                let (at, key) = decode_event(&raw_key, &raw_value)?;
                // Every older version is superseded by this one.
                for older in tree.range(version_key(key, Revision::ZERO)..version_key(key, at)).keys() {
                    doomed.push(older.map_err(backend_err)?);
                }
                doomed.push(raw_key);
                if version_at(tree, key, at)?.is_some_and(|v| v.revision == at && v.tombstone) {
                    doomed.push(version_key(key, at).into());
                }
                removed += 1;
            }
            if removed == 0 {
                break;
            }
            for key in doomed {
                tree.remove(key).map_err(backend_err)?;
            }
        }
        tree.flush().map_err(backend_err)?;
        Ok(())
    }
}

/// Inserts a commit's entries one after another, the stored revision last.
///
/// Not a `sled::Batch`: sled 0.34 gives a batch's manifest an I/O buffer of its own (`PageCache::pin_log`), so
/// each batch cost two log writes, each with its own `sync_file_range`, the second waiting for the first. Single
/// inserts share one buffer, written once at `flush`. Atomicity, which the batch gave, comes from how sled
/// recovers: it replays its log up to the first torn message, so after a crash the tree holds a prefix of what was
/// inserted in log order. This thread is the only one that writes, so log order is this order. The stored
/// revision, last, is there only if everything before it is; what a commit that did not finish left is newer
/// than the stored revision, and [`discard_torn`] removes it at open.
fn insert_in_order(tree: &sled::Tree, entries: Vec<(Vec<u8>, Vec<u8>)>) -> sled::Result<()> {
    for (key, value) in entries {
        tree.insert(key, value)?;
    }
    Ok(())
}

/// Removes what a commit cut short by a crash left behind: the events newer than the stored revision and their
/// versions (each event is inserted before its version, so no such version is without its event). None of those
/// writes was acknowledged. Returns how many writes were removed.
fn discard_torn(tree: &sled::Tree, revision: Revision) -> Result<usize> {
    let mut torn = Vec::new();
    for entry in tree.range(event_key(revision.next())..=event_key(Revision(u64::MAX))) {
        let (raw_key, raw_value) = entry.map_err(backend_err)?;
        let (at, key) = decode_event(&raw_key, &raw_value)?;
        torn.push((version_key(key, at), raw_key));
    }
    // Versions first: a crash during this leaves events whose versions are gone, which the next open removes.
    for (version, _) in &torn {
        tree.remove(version).map_err(backend_err)?;
    }
    for (_, event) in &torn {
        tree.remove(event).map_err(backend_err)?;
    }
    if !torn.is_empty() {
        tree.flush().map_err(backend_err)?;
    }
    Ok(torn.len())
}

/// Applies one write to the current record: the new version, the outcome, the event kind and previous value.
fn apply(op: WriteOp, current: Option<Record>, revision: Revision)
    -> std::result::Result<(Version, Written, EventKind, Option<Bytes>), Conflict> {
    match op {
        WriteOp::Create { key, value } => {
            if let Some(existing) = current {
                return Err(Conflict::AlreadyExists(existing));
            }
            let version = Version { revision, create_revision: revision, tombstone: false, value };
            let written = Written::Put(version.record(&key));
            Ok((version, written, EventKind::Added, None))
        }
        WriteOp::Update { key, value, expected } => {
            let existing = check(current, expected)?;
            let version = Version { revision, create_revision: existing.create_revision, tombstone: false, value };
            let written = Written::Put(version.record(&key));
            Ok((version, written, EventKind::Modified, Some(existing.value)))
        }
        WriteOp::Delete { expected, .. } => {
            let existing = check(current, expected)?;
            let version = Version {
                revision,
                create_revision: existing.create_revision,
                tombstone: true,
                value: existing.value.clone(),
            };
            let prev = Some(existing.value.clone());
            Ok((version, Written::Deleted(Deleted { prev: existing, revision }), EventKind::Deleted, prev))
        }
    }
}

/// See [`SledBackend::check_consistency`].
fn check_tree(tree: &sled::Tree, torn: Torn) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let revision = read_meta(tree, META_REVISION)?;
    let compacted = read_meta(tree, META_COMPACTED)?;
    if compacted > revision {
        problems.push(format!("compacted revision {compacted} is newer than the store's revision {revision}"));
    }
    let mut previous: Option<(String, Version)> = None;
    for entry in tree.range(b"v".as_slice()..b"w".as_slice()) {
        let (raw_key, raw_value) = entry.map_err(backend_err)?;
        let (key, version) = match Version::decode(&raw_key, &raw_value) {
            Ok(decoded) => decoded,
            Err(err) => {
                problems.push(err.to_string());
                continue;
            }
        };
        if version.revision > revision && torn == Torn::Refused {
            problems.push(format!("{key}@{} is newer than the store's revision {revision}", version.revision));
        }
        if version.revision > compacted {
            match tree.get(event_key(version.revision)).map_err(backend_err)? {
                Some(logged) if logged.as_ref() == key.as_bytes() => {}
                _ => problems.push(format!("{key}@{} has no event-log entry", version.revision)),
            }
        }
        let same_key_before = previous.as_ref().filter(|(k, _)| *k == key).map(|(_, v)| v);
        let at = version.revision;
        match same_key_before {
            Some(before) if !before.tombstone && version.create_revision != before.create_revision => {
                problems.push(format!("{key}@{at} has create revision {} after {}", version.create_revision, before.create_revision));
            }
            Some(before) if !before.tombstone => {}
            Some(_) if version.tombstone => problems.push(format!("{key}@{at} deletes a key that was already deleted")),
            Some(_) if version.create_revision != at => {
                problems.push(format!("{key}@{at} re-creates the key but has create revision {}", version.create_revision));
            }
            Some(_) => {}
            None if version.create_revision > at => {
                problems.push(format!("{key}@{at} has a create revision in its future"));
            }
            None => {}
        }
        previous = Some((key.to_owned(), version));
    }
    for entry in tree.range(event_key(Revision::ZERO)..=event_key(Revision(u64::MAX))) {
        let (raw_key, raw_value) = entry.map_err(backend_err)?;
        let Some(at) = Revision::from_be_slice(&raw_key[1..]) else {
            problems.push("malformed event key".to_owned());
            continue;
        };
        let key = String::from_utf8_lossy(&raw_value);
        if at > revision && torn == Torn::Allowed {
            continue;
        }
        if tree.get(version_key(&key, at)).map_err(backend_err)?.is_none() {
            problems.push(format!("event {at} names {key}, which has no version at that revision"));
        }
        if at > revision {
            problems.push(format!("event {at} is newer than the store's revision {revision}"));
        }
    }
    Ok(problems)
}

/// Opens the database at `path` (no writer) and checks it, changing nothing: for tools and tests that inspect a
/// store after a crash. What a crash may leave of a commit it cut short is not a problem: the prefix of its inserts,
/// newer than the stored revision, that the next open removes ([`discard_torn`]; none of it was acknowledged).
pub fn check_path(path: &Path) -> Result<Vec<String>> {
    let db = sled::Config::new()
        .path(path)
        .open()
        .map_err(|err| StorageError::Unavailable(format!("cannot open sled at {}: {err}", path.display())))?;
    let tree = db.open_tree(TREE).map_err(backend_err)?;
    check_tree(&tree, Torn::Allowed)
}

/// Fills a new sled store with records as they were at one revision (a snapshot's restore), keeping each
/// record's revisions so `resourceVersion`s survive. History before that revision is not there: the store is
/// compacted to it, so a list or watch from an older revision gets `Compacted` (410) and clients relist.
pub struct SledLoader {
    tree: sled::Tree,
    _db: sled::Db,
}

impl SledLoader {
    /// Opens (creating) the store at `config.path`, which must hold nothing yet.
    pub fn create(config: &SledConfig) -> Result<SledLoader> {
        let (db, tree) = open_tree(config)?;
        if !tree.is_empty() {
            return Err(StorageError::Backend(format!("{} already holds a store", config.path.display())));
        }
        Ok(SledLoader { tree, _db: db })
    }

    /// Adds one live record at its own revisions.
    pub fn put(&self, record: &Record) -> Result<()> {
        let version = Version { revision: record.revision, create_revision: record.create_revision, tombstone: false, value: record.value.clone() };
        self.tree.insert(version_key(record.key.as_str(), record.revision), version.encode()).map_err(backend_err)?;
        Ok(())
    }

    /// Records `revision` as both the current and the compacted revision, and makes everything durable.
    pub fn finish(self, revision: Revision) -> Result<()> {
        self.tree.insert(META_COMPACTED, &revision.to_be_bytes()).map_err(backend_err)?;
        self.tree.insert(META_REVISION, &revision.to_be_bytes()).map_err(backend_err)?;
        self.tree.flush().map_err(backend_err)?;
        Ok(())
    }
}

/// Whether [`check_tree`] accepts what a crash leaves of a commit: events newer than the stored revision, each
/// version among them with its event (a commit inserts each write's event before its version).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Torn {
    Allowed,
    Refused,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::KeyLayout;
    use crate::watch::HubConfig;

    fn open(path: &Path) -> SledBackend {
        SledBackend::open(&SledConfig::new(path), |revision| WatchHub::new(HubConfig::default(), revision)).expect("open").0
    }

    async fn create(backend: &SledBackend, key: &Key, value: &'static str) -> Record {
        match backend.write(WriteOp::Create { key: key.clone(), value: Bytes::from_static(value.as_bytes()) }).await {
            Ok(Ok(Written::Put(record))) => record,
            other => panic!("create: {other:?}"),
        }
    }

    /// A loaded store is consistent, serves each record at its own revisions, writes on from the loaded revision,
    /// and has no history before it.
    #[tokio::test]
    async fn a_loaded_store_keeps_each_record_s_revisions_and_no_history_before_them() {
        let dir = tempfile::tempdir().expect("temp dir");
        let key = Key::from_stored("/registry/core/configmaps/builtin/t1/default/a");
        let loader = SledLoader::create(&SledConfig::new(dir.path())).expect("create");
        let loaded = Record { key: key.clone(), value: Bytes::from_static(b"a1"), revision: Revision(7), create_revision: Revision(3) };
        loader.put(&loaded).expect("put");
        loader.finish(Revision(9)).expect("finish");
        let backend = open(dir.path());
        assert!(backend.check_consistency().expect("check").is_empty());
        assert_eq!(backend.current_revision().await.expect("revision"), Revision(9));
        assert_eq!(backend.get(&key).await.expect("get"), Some(loaded));
        let range = KeyLayout::default().everything();
        let older = backend.list(&range, None, Some(Revision(8)), None, false).await;
        assert!(matches!(older, Err(StorageError::Compacted { .. })), "{older:?}");
        let next = create(&backend, &Key::from_stored("/registry/core/configmaps/builtin/t1/default/b"), "b1").await;
        assert_eq!(next.revision, Revision(10));
        drop(backend);
        assert!(SledLoader::create(&SledConfig::new(dir.path())).is_err(), "a store that holds something is refused");
    }

    /// What a crash leaves when it cuts a commit after some of its inserts: the events and versions of writes
    /// that were never acknowledged, newer than the stored revision.
    #[tokio::test]
    async fn a_commit_cut_short_by_a_crash_is_discarded_at_open() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (kept, replaced) = (Key::from_stored("/registry/configmaps/a"), Key::from_stored("/registry/configmaps/b"));
        let stored = {
            let backend = open(dir.path());
            create(&backend, &kept, "a1").await;
            create(&backend, &replaced, "b1").await.revision
        };
        {
            // The prefix of a commit at the next two revisions: the first write whole, the second's event only.
            let db = sled::Config::new().path(dir.path()).open().expect("raw open");
            let tree = db.open_tree(TREE).expect("tree");
            let (first, second) = (stored.next(), stored.next().next());
            let version = Version { revision: first, create_revision: first, tombstone: false, value: Bytes::from_static(b"c1") };
            tree.insert(event_key(first), "/registry/configmaps/c".as_bytes()).expect("insert");
            tree.insert(version_key("/registry/configmaps/c", first), version.encode()).expect("insert");
            tree.insert(event_key(second), replaced.as_str().as_bytes()).expect("insert");
            tree.flush().expect("flush");
            let refused = check_tree(&tree, Torn::Refused).expect("check");
            let allowed = check_tree(&tree, Torn::Allowed).expect("check");
            assert!(!refused.is_empty(), "the torn commit is visible to the live checker");
            assert!(allowed.is_empty(), "and it is what a crash may leave: {allowed:?}");
        }
        let backend = open(dir.path());
        assert!(backend.check_consistency().expect("check").is_empty(), "nothing of the torn commit is left");
        assert_eq!(backend.current_revision().await.expect("revision"), stored);
        assert_eq!(backend.get(&Key::from_stored("/registry/configmaps/c")).await.expect("get"), None);
        let b = backend.get(&replaced).await.expect("get").expect("b is kept");
        assert_eq!((b.value.as_ref(), b.revision), (b"b1".as_slice(), stored));
        let next = create(&backend, &Key::from_stored("/registry/configmaps/d"), "d1").await;
        assert_eq!(next.revision, stored.next(), "revisions go on from the stored one");
        assert!(backend.check_consistency().expect("check").is_empty());
    }
}

//! The etcd v3 backend: revisions are etcd's, writes are compare-and-swap transactions, one watch feeds the hub.
//!
//! | trait operation   | etcd request                                                                           |
//! |-------------------|----------------------------------------------------------------------------------------|
//! | `get`             | `Range key` (linearizable)                                                              |
//! | `list`            | `Range [start, end)` at a revision, paged internally by [`LIST_CHUNK`]                  |
//! | create            | `Txn(create_revision(key) == 0 → Put, else Get)`                                       |
//! | update / delete   | `Txn(create_revision > 0 ∧ mod_revision == expected → Put/Delete + prev_kv, else Get)` |
//! | `compact`         | `Compact(revision, physical)`                                                           |
//! | `history`         | a temporary watch from `after + 1`, read up to a progress marker                        |
//! | `request_progress`| a put of the progress marker, then waiting for the feed to see it                      |
//!
//! **The feed.** One background task holds one etcd watch on the layout's whole key space (with `prev_kv`
//! and `progress_notify`), turns every event into an [`Event`] and publishes it to the [`WatchHub`] in order.
//! If the watch breaks it is re-established from the last revision seen. If that revision has been compacted
//! meanwhile, the feed logs an error and stops: existing watchers then receive nothing more, and the store
//! must be reopened (the same thing kube-apiserver's watch cache does by re-listing).
//!
//! **Writes wait for the feed.** A write returns only once the feed has published its event, so, exactly as
//! with the memory and sled backends, a watch opened after a write returns never sees that write.
//!
//! **Why progress is a marker write, not etcd's `RequestProgress`.** etcd before 3.4.25/3.5.8 (Debian ships
//! 3.4.23) can send a requested progress notification *ahead* of events it already queued
//! (etcd-io/etcd#15220). Advancing the hub past such events would make it drop them. Instead
//! `request_progress` puts `<prefix>//kspaces-progress` (a key no layout can build, so lists skip it), and
//! the feed advances the hub when that put arrives in the ordered event stream. Periodic progress
//! notifications that etcd sends to our own watch id travel with the events and are used as they come.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use etcd_client::{
    Client, Compare, CompareOp, CompactionOptions, ConnectOptions, DeleteOptions, GetOptions, KeyValue, KvClient,
    PutOptions, Txn, TxnOp, TxnOpResponse, TxnResponse, WatchClient, WatchOptions, WatchResponse, WatchStream,
};
use tokio::sync::{oneshot, watch};

use crate::backend::{Backend, Conflict, Deleted, RawPage, Record, WriteOp, Written};
use crate::error::{Result, StorageError};
use crate::key::{Key, KeyLayout, KeyRange};
use crate::store::{Store, StoreConfig};
use crate::watch::{Event, EventKind, WatchHub};
use crate::Revision;

/// Keys fetched per etcd range request; halved while a page is too big to decode.
pub const LIST_CHUNK: usize = 1000;
/// Largest KV response accepted: a full chunk of ordinary objects, or several 3 MiB ones.
const KV_DECODE_LIMIT: usize = 64 * 1024 * 1024;
/// Largest watch response accepted: etcd batches up to 1000 revisions of history in one response.
const WATCH_DECODE_LIMIT: usize = 512 * 1024 * 1024;
/// etcd's default `--max-request-bytes`; reported when etcd refuses a value as too large.
const ETCD_DEFAULT_MAX_REQUEST_BYTES: usize = 1536 * 1024;
/// The progress marker's key, relative to the layout prefix (an empty segment: no object key has one).
const PROGRESS_MARKER: &str = "//kspaces-progress";

/// How to reach etcd.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdConfig {
    /// Client URLs or `host:port` pairs (`--etcd-servers`).
    pub endpoints: Vec<String>,
    /// How long to wait for a TCP/HTTP2 connection.
    pub connect_timeout: Duration,
    /// Every request fails with `Unavailable` after this long, so a dead etcd never hangs a caller.
    pub request_timeout: Duration,
}

impl EtcdConfig {
    /// `endpoints` with a 5 s connect timeout and a 10 s request timeout.
    pub fn new(endpoints: Vec<String>) -> EtcdConfig {
        EtcdConfig { endpoints, connect_timeout: Duration::from_secs(5), request_timeout: Duration::from_secs(10) }
    }
}

impl Store {
    /// A store on etcd under `config.layout`'s prefix. Fails with `Unavailable` if etcd does not answer.
    pub async fn open_etcd(etcd: &EtcdConfig, config: StoreConfig) -> Result<Store> {
        let (backend, hub) = EtcdBackend::open(etcd, &config).await?;
        Ok(Store::from_parts(Arc::new(backend), hub, config))
    }
}

/// What the feed has done so far; writers wait on it.
#[derive(Copy, Clone, Debug, Default)]
struct FeedState {
    /// Every event up to this revision has been published (or the hub advanced to it).
    revision: u64,
    /// The feed gave up (compacted past its resume point); nobody should wait for it.
    stopped: bool,
}

/// State shared by the backend handle and its feed task.
struct Shared {
    layout: KeyLayout,
    /// The progress marker's full key.
    marker: String,
    compacted: AtomicU64,
    feed: watch::Sender<FeedState>,
}

impl Shared {
    fn compacted(&self) -> Revision {
        Revision(self.compacted.load(Ordering::Acquire))
    }

    fn record_compacted(&self, revision: Revision) -> Revision {
        Revision(self.compacted.fetch_max(revision.0, Ordering::AcqRel).max(revision.0))
    }

    fn marker(&self) -> &str {
        &self.marker
    }
}

/// The etcd backend. Dropping it stops the feed.
pub struct EtcdBackend {
    kv: KvClient,
    watch: WatchClient,
    shared: Arc<Shared>,
    request_timeout: Duration,
    shutdown: Mutex<Option<oneshot::Sender<()>>>,
}

/// An etcd failure, before the caller adds what it was doing.
enum Failure {
    Compacted,
    Future,
    TooLarge,
    /// The response was over the client's decode limit (the request may be retried with a smaller page).
    TooBigToDecode,
    Unavailable(String),
    Other(String),
}

/// gRPC status codes that mean "etcd cannot be reached right now" (tonic is not a direct dependency, so the
/// codes are compared by their wire numbers): Cancelled, Unknown, DeadlineExceeded, Aborted, Unavailable.
const UNAVAILABLE_CODES: [i32; 5] = [1, 2, 4, 10, 14];

fn classify(err: etcd_client::Error) -> Failure {
    match err {
        etcd_client::Error::GRpcStatus(status) => {
            let message = status.message();
            if message.contains("required revision has been compacted") {
                Failure::Compacted
            } else if message.contains("future revision") {
                Failure::Future
            } else if message.contains("request is too large") {
                Failure::TooLarge
            } else if message.contains("message length too large") {
                Failure::TooBigToDecode
            } else if UNAVAILABLE_CODES.contains(&(status.code() as i32)) {
                Failure::Unavailable(format!("etcd: {message} ({:?})", status.code()))
            } else {
                Failure::Other(format!("etcd: {message} ({:?})", status.code()))
            }
        }
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) | etcd_client::Error::WatchError(_) => {
            Failure::Unavailable(format!("etcd: {err}"))
        }
        other => Failure::Other(format!("etcd: {other}")),
    }
}

/// The error for a request that needs no revision context.
fn plain(failure: Failure) -> StorageError {
    match failure {
        Failure::Unavailable(why) => StorageError::Unavailable(why),
        Failure::Other(why) => StorageError::Backend(why),
        Failure::Compacted => StorageError::Backend("etcd: unexpected compaction error".to_owned()),
        Failure::Future => StorageError::Backend("etcd: unexpected future-revision error".to_owned()),
        Failure::TooLarge => StorageError::Backend("etcd: request too large".to_owned()),
        Failure::TooBigToDecode => StorageError::Backend("etcd: response over the client's decode limit".to_owned()),
    }
}

fn to_i64(revision: Revision) -> i64 {
    i64::try_from(revision.0).unwrap_or(i64::MAX)
}

fn to_revision(raw: i64) -> Revision {
    Revision(u64::try_from(raw).unwrap_or(0))
}

impl EtcdBackend {
    /// Connects, reads the current revision, creates the hub there and starts the feed.
    pub async fn open(etcd: &EtcdConfig, config: &StoreConfig) -> Result<(EtcdBackend, Arc<WatchHub>)> {
        let options = ConnectOptions::new()
            .with_connect_timeout(etcd.connect_timeout)
            .with_keep_alive(Duration::from_secs(10), etcd.request_timeout);
        let connect = Client::connect(&etcd.endpoints, Some(options));
        let client = tokio::time::timeout(etcd.request_timeout, connect)
            .await
            .map_err(|_| StorageError::Unavailable("etcd: connecting timed out".to_owned()))?
            .map_err(|err| plain(classify(err)))?;
        let (feed, _) = watch::channel(FeedState::default());
        let marker = format!("{}{}", config.layout.prefix(), PROGRESS_MARKER);
        let shared = Arc::new(Shared { layout: config.layout.clone(), marker, compacted: AtomicU64::new(0), feed });
        let mut backend = EtcdBackend {
            kv: client.kv_client().max_decoding_message_size(KV_DECODE_LIMIT),
            watch: client.watch_client().max_decoding_message_size(WATCH_DECODE_LIMIT),
            shared,
            request_timeout: etcd.request_timeout,
            shutdown: Mutex::new(None),
        };
        let current = backend.current_revision().await?;
        backend.shared.feed.send_modify(|state| state.revision = current.0);
        let hub = WatchHub::new(config.hub, current);
        let (stop, stopped) = oneshot::channel();
        backend.shutdown = Mutex::new(Some(stop));
        let feed = Feed { watch: backend.watch.clone(), shared: backend.shared.clone(), hub: hub.clone(), last: current, id: None };
        tokio::spawn(feed.run(stopped, etcd.request_timeout));
        Ok((backend, hub))
    }

    /// Runs `request` under the request timeout.
    async fn call<T>(&self, what: &str, request: impl std::future::Future<Output = std::result::Result<T, etcd_client::Error>>)
        -> std::result::Result<T, Failure> {
        match tokio::time::timeout(self.request_timeout, request).await {
            Ok(result) => result.map_err(classify),
            Err(_) => Err(Failure::Unavailable(format!("etcd: {what} timed out after {:?}", self.request_timeout))),
        }
    }

    fn record(&self, kv: &KeyValue) -> Result<Record> {
        let raw = std::str::from_utf8(kv.key()).map_err(|_| StorageError::Backend("etcd: key is not UTF-8".to_owned()))?;
        Ok(Record {
            key: Key::parse(&self.shared.layout, raw)?,
            value: Bytes::copy_from_slice(kv.value()),
            revision: to_revision(kv.mod_revision()),
            create_revision: to_revision(kv.create_revision()),
        })
    }

    /// Waits until the feed has published everything up to `revision` (writes and progress markers).
    async fn wait_for_feed(&self, revision: Revision) -> bool {
        let mut feed = self.shared.feed.subscribe();
        let caught_up = feed.wait_for(|state| state.stopped || state.revision >= revision.0);
        match tokio::time::timeout(self.request_timeout, caught_up).await.map(|waited| waited.map(|state| state.stopped)) {
            Ok(Ok(stopped)) => !stopped,
            Ok(Err(_)) => false,
            Err(_) => {
                tracing::warn!(%revision, "the etcd watch feed did not deliver a committed write in time");
                false
            }
        }
    }

    async fn range(&self, from: &str, end: &str, at: i64, limit: usize) -> std::result::Result<etcd_client::GetResponse, Failure> {
        let options = GetOptions::new()
            .with_range(end)
            .with_revision(at)
            .with_limit(i64::try_from(limit).unwrap_or(i64::MAX));
        self.call("range", self.kv.clone().get(from, Some(options))).await
    }

    /// One internal chunk of a list, shrinking the chunk while responses are too large to decode.
    async fn chunk(&self, from: &str, end: &str, at: i64, chunk: &mut usize) -> Result<etcd_client::GetResponse> {
        loop {
            match self.range(from, end, at, *chunk).await {
                Err(Failure::TooBigToDecode) if *chunk > 1 => *chunk /= 2,
                Err(Failure::Compacted) => {
                    let requested = to_revision(at);
                    let compacted = self.shared.record_compacted(requested.next());
                    return Err(StorageError::Compacted { requested, compacted });
                }
                Err(Failure::Future) => {
                    let current = self.current_revision().await.unwrap_or(Revision::ZERO);
                    return Err(StorageError::FutureRevision { requested: to_revision(at), current });
                }
                Err(failure) => return Err(plain(failure)),
                Ok(response) => return Ok(response),
            }
        }
    }

    async fn txn(&self, txn: Txn, size: usize) -> Result<TxnResponse> {
        self.call("txn", self.kv.clone().txn(txn)).await.map_err(|failure| match failure {
            Failure::TooLarge => StorageError::ValueTooLarge { size, limit: ETCD_DEFAULT_MAX_REQUEST_BYTES },
            other => plain(other),
        })
    }

    /// The record a failed transaction read back with its `Get`.
    fn current_of(&self, response: &TxnResponse) -> Result<Option<Record>> {
        for op in response.op_responses() {
            if let TxnOpResponse::Get(get) = op {
                return get.kvs().first().map(|kv| self.record(kv)).transpose();
            }
        }
        Err(StorageError::Backend("etcd: transaction response has no read".to_owned()))
    }

    fn prev_of(&self, response: &TxnResponse) -> Result<Record> {
        let prev = response.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Put(mut put) => put.take_prev_key(),
            TxnOpResponse::Delete(mut delete) => delete.take_prev_kvs().into_iter().next(),
            _ => None,
        });
        let prev = prev.ok_or_else(|| StorageError::Backend("etcd: write response has no previous value".to_owned()))?;
        self.record(&prev)
    }

    async fn create(&self, key: Key, value: Bytes) -> Result<std::result::Result<Written, Conflict>> {
        let size = value.len();
        let txn = Txn::new()
            .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(key.as_str(), value.to_vec(), None)])
            .or_else([TxnOp::get(key.as_str(), None)]);
        let response = self.txn(txn, size).await?;
        if !response.succeeded() {
            let existing = self.current_of(&response)?;
            let existing = existing.ok_or_else(|| StorageError::Backend("etcd: create conflict without a record".to_owned()))?;
            return Ok(Err(Conflict::AlreadyExists(existing)));
        }
        let revision = header_revision(response.header());
        Ok(Ok(Written::Put(Record { key, value, revision, create_revision: revision })))
    }

    /// Update (`value` is `Some`) or delete under the precondition `expected`.
    async fn replace(&self, key: Key, value: Option<Bytes>, expected: Option<Revision>)
        -> Result<std::result::Result<Written, Conflict>> {
        let mut when = vec![Compare::create_revision(key.as_str(), CompareOp::Greater, 0)];
        if let Some(expected) = expected {
            when.push(Compare::mod_revision(key.as_str(), CompareOp::Equal, to_i64(expected)));
        }
        let size = value.as_ref().map_or(0, Bytes::len);
        let op = match &value {
            Some(value) => TxnOp::put(key.as_str(), value.to_vec(), Some(PutOptions::new().with_prev_key())),
            None => TxnOp::delete(key.as_str(), Some(DeleteOptions::new().with_prev_key())),
        };
        let txn = Txn::new().when(when).and_then([op]).or_else([TxnOp::get(key.as_str(), None)]);
        let response = self.txn(txn, size).await?;
        if !response.succeeded() {
            return Ok(Err(match self.current_of(&response)? {
                None => Conflict::NotFound,
                Some(existing) => Conflict::RevisionMismatch(existing),
            }));
        }
        let revision = header_revision(response.header());
        let prev = self.prev_of(&response)?;
        Ok(Ok(match value {
            Some(value) => Written::Put(Record { key, value, revision, create_revision: prev.create_revision }),
            None => Written::Deleted(Deleted { prev, revision }),
        }))
    }

    /// Puts the progress marker; returns its revision.
    async fn put_marker(&self) -> Result<Revision> {
        let mut kv = self.kv.clone();
        let response = self.call("put", kv.put(self.shared.marker(), Vec::<u8>::new(), None)).await.map_err(plain)?;
        Ok(header_revision(response.header()))
    }
}

fn header_revision(header: Option<&etcd_client::ResponseHeader>) -> Revision {
    to_revision(header.map_or(0, |header| header.revision()))
}

impl Drop for EtcdBackend {
    fn drop(&mut self) {
        if let Some(stop) = self.shutdown.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = stop.send(());
        }
    }
}

#[async_trait]
impl Backend for EtcdBackend {
    async fn get(&self, key: &Key) -> Result<Option<Record>> {
        let response = self.call("get", self.kv.clone().get(key.as_str(), None)).await.map_err(plain)?;
        response.kvs().first().map(|kv| self.record(kv)).transpose()
    }

    async fn list(&self, range: &KeyRange, start: Option<&str>, at: Option<Revision>, limit: Option<usize>)
        -> Result<RawPage> {
        if let Some(at) = at {
            let compacted = self.shared.compacted();
            if at < compacted {
                return Err(StorageError::Compacted { requested: at, compacted });
            }
        }
        let end = range.end();
        let mut cursor = start.filter(|s| *s > range.start()).unwrap_or(range.start()).to_owned();
        let mut snapshot = at.map_or(0, to_i64);
        let mut chunk = LIST_CHUNK;
        let mut page = RawPage { items: Vec::new(), revision: at.unwrap_or_default(), more: false, remaining: None };
        loop {
            let wanted = limit.map_or(chunk, |limit| limit.saturating_sub(page.items.len()).min(chunk)).max(1);
            let mut want = wanted;
            let response = self.chunk(&cursor, &end, snapshot, &mut want).await?;
            chunk = chunk.min(want);
            if snapshot == 0 {
                snapshot = header_revision(response.header()).0.try_into().unwrap_or(i64::MAX);
                page.revision = to_revision(snapshot);
            }
            let kvs = response.kvs();
            for kv in kvs {
                match self.record(kv) {
                    Ok(record) => page.items.push(record),
                    Err(_) => tracing::debug!(key = %String::from_utf8_lossy(kv.key()), "skipping a foreign key"),
                }
            }
            let Some(last) = kvs.last() else { break };
            if let Some(limit) = limit.filter(|limit| page.items.len() > *limit) {
                page.items.truncate(limit);
                page.more = true;
                break;
            }
            if !response.more() {
                break;
            }
            if limit.is_some_and(|limit| page.items.len() >= limit) {
                page.more = true;
                page.remaining = u64::try_from(response.count()).ok().map(|count| count.saturating_sub(kvs.len() as u64));
                break;
            }
            cursor = format!("{}\0", String::from_utf8_lossy(last.key()));
        }
        Ok(page)
    }

    async fn write(&self, op: WriteOp) -> Result<std::result::Result<Written, Conflict>> {
        let key_in_layout = match &op {
            WriteOp::Create { key, .. } | WriteOp::Update { key, .. } | WriteOp::Delete { key, .. } => {
                self.shared.layout.everything().contains(key.as_str())
            }
        };
        let written = match op {
            WriteOp::Create { key, value } => self.create(key, value).await?,
            WriteOp::Update { key, value, expected } => self.replace(key, Some(value), expected).await?,
            WriteOp::Delete { key, expected } => self.replace(key, None, expected).await?,
        };
        if let (Ok(written), true) = (&written, key_in_layout) {
            let revision = match written {
                Written::Put(record) => record.revision,
                Written::Deleted(deleted) => deleted.revision,
            };
            self.wait_for_feed(revision).await;
        }
        Ok(written)
    }

    async fn current_revision(&self) -> Result<Revision> {
        let options = GetOptions::new().with_count_only();
        let response = self.call("range", self.kv.clone().get(self.shared.marker(), Some(options))).await.map_err(plain)?;
        Ok(header_revision(response.header()))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        if revision <= self.shared.compacted() {
            return Ok(());
        }
        let options = CompactionOptions::new().with_physical();
        match self.call("compact", self.kv.clone().compact(to_i64(revision), Some(options))).await {
            Ok(_) | Err(Failure::Compacted) => {
                self.shared.record_compacted(revision);
                Ok(())
            }
            Err(Failure::Future) => {
                let current = self.current_revision().await?;
                Err(StorageError::FutureRevision { requested: revision, current })
            }
            Err(failure) => Err(plain(failure)),
        }
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        Ok(self.shared.compacted())
    }

    async fn history(&self, range: &KeyRange, after: Revision, through: Revision) -> Result<Vec<Event>> {
        let compacted = self.shared.compacted();
        if after < compacted {
            return Err(StorageError::Compacted { requested: after, compacted });
        }
        if through <= after {
            return Ok(Vec::new());
        }
        let everything = self.shared.layout.everything();
        if !everything.covers(range) {
            return Err(StorageError::Backend(format!("range {} is outside the layout", range.start())));
        }
        // The marker's revision is above `through`, so the ordered replay below always reaches it.
        self.put_marker().await?;
        let read = read_history(self.watch.clone(), &self.shared, range, after, through);
        match tokio::time::timeout(self.request_timeout, read).await {
            Ok(result) => result,
            Err(_) => Err(StorageError::Unavailable(format!("etcd: history timed out after {:?}", self.request_timeout))),
        }
    }

    async fn request_progress(&self) -> Result<()> {
        let revision = self.put_marker().await?;
        if self.wait_for_feed(revision).await {
            Ok(())
        } else {
            Err(StorageError::Unavailable("etcd: the watch feed has not caught up".to_owned()))
        }
    }
}

/// Replays the events of `range` in `(after, through]` with a temporary watch on the whole layout.
async fn read_history(mut client: WatchClient, shared: &Shared, range: &KeyRange, after: Revision, through: Revision)
    -> Result<Vec<Event>> {
    let everything = shared.layout.everything();
    let options = WatchOptions::new()
        .with_range(everything.end())
        .with_start_revision(to_i64(after.next()))
        .with_prev_key();
    let mut stream = client.watch(everything.start(), Some(options)).await.map_err(|err| plain(classify(err)))?;
    let mut events = Vec::new();
    loop {
        let response = stream.message().await.map_err(|err| plain(classify(err)))?;
        let response = response.ok_or_else(|| StorageError::Unavailable("etcd: history watch closed".to_owned()))?;
        if response.compact_revision() > 0 {
            let compacted = shared.record_compacted(to_revision(response.compact_revision()));
            return Err(StorageError::Compacted { requested: after, compacted });
        }
        if response.canceled() {
            return Err(StorageError::Backend(format!("etcd: history watch canceled: {}", response.cancel_reason())));
        }
        for raw in response.events() {
            let Some(kv) = raw.kv() else { continue };
            let revision = to_revision(kv.mod_revision());
            if revision > through {
                return Ok(events);
            }
            if let Some(event) = convert(&shared.layout, raw).filter(|event| range.contains(event.key.as_str())) {
                events.push(event);
            }
            if revision == through {
                return Ok(events);
            }
        }
    }
}

/// Turns an etcd event into a store event; `None` for keys outside the layout's object keys.
fn convert(layout: &KeyLayout, raw: &etcd_client::Event) -> Option<Event> {
    let kv = raw.kv()?;
    let key = std::str::from_utf8(kv.key()).ok().and_then(|key| Key::parse(layout, key).ok())?;
    let revision = to_revision(kv.mod_revision());
    let prev = raw.prev_kv().map(|prev| Bytes::copy_from_slice(prev.value()));
    // A delete's `kv` is a tombstone with version 0; reading the type this way cannot panic on unknown types.
    if kv.version() == 0 {
        let value = prev.clone().unwrap_or_default();
        return Some(Event::new(EventKind::Deleted, key, value, prev, revision));
    }
    let value = Bytes::copy_from_slice(kv.value());
    if kv.create_revision() == kv.mod_revision() {
        Some(Event::new(EventKind::Added, key, value, None, revision))
    } else {
        Some(Event::new(EventKind::Modified, key, value, prev, revision))
    }
}

/// The background task that keeps one etcd watch and publishes what it sees.
struct Feed {
    watch: WatchClient,
    shared: Arc<Shared>,
    hub: Arc<WatchHub>,
    /// Every event up to here has been published.
    last: Revision,
    /// The id of the current etcd watch (progress notifications for it are ordered with its events).
    id: Option<i64>,
}

/// What to do after the watch stream ended.
enum Next {
    Reconnect,
    Stop,
}

impl Feed {
    async fn run(mut self, mut shutdown: oneshot::Receiver<()>, timeout: Duration) {
        let mut backoff = Duration::from_millis(50);
        loop {
            let next = tokio::select! {
                _ = &mut shutdown => return,
                next = self.watch_once(timeout) => next,
            };
            match next {
                Next::Stop => {
                    self.shared.feed.send_modify(|state| state.stopped = true);
                    return;
                }
                Next::Reconnect => {
                    tokio::select! {
                        _ = &mut shutdown => return,
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
            }
        }
    }

    /// Establishes the watch from `last + 1` and follows it until it breaks.
    async fn watch_once(&mut self, timeout: Duration) -> Next {
        let everything = self.shared.layout.everything();
        let options = WatchOptions::new()
            .with_range(everything.end())
            .with_start_revision(to_i64(self.last.next()))
            .with_prev_key()
            .with_progress_notify();
        let mut stream: WatchStream = match tokio::time::timeout(timeout, self.watch.watch(everything.start(), Some(options))).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(err)) => {
                tracing::warn!(%err, "cannot establish the etcd watch feed; retrying");
                return Next::Reconnect;
            }
            Err(_) => {
                tracing::warn!("establishing the etcd watch feed timed out; retrying");
                return Next::Reconnect;
            }
        };
        loop {
            match stream.message().await {
                Ok(Some(response)) => {
                    if let Some(next) = self.handle(response) {
                        return next;
                    }
                }
                Ok(None) => {
                    tracing::warn!(last = %self.last, "the etcd watch feed closed; re-establishing");
                    return Next::Reconnect;
                }
                Err(err) => {
                    tracing::warn!(%err, last = %self.last, "the etcd watch feed broke; re-establishing");
                    return Next::Reconnect;
                }
            }
        }
    }

    /// Publishes one watch response; `Some` if the watch is over.
    fn handle(&mut self, response: WatchResponse) -> Option<Next> {
        if response.compact_revision() > 0 {
            let compacted = self.shared.record_compacted(to_revision(response.compact_revision()));
            tracing::error!(resume = %self.last.next(), %compacted,
                "etcd compacted past the watch feed's resume point; this store delivers no more watch events");
            return Some(Next::Stop);
        }
        if response.canceled() {
            tracing::warn!(reason = response.cancel_reason(), "etcd canceled the watch feed; re-establishing");
            return Some(Next::Reconnect);
        }
        if response.created() {
            self.id = Some(response.watch_id());
        }
        let mut top = self.last;
        let mut events = Vec::with_capacity(response.events().len());
        for raw in response.events() {
            let Some(kv) = raw.kv() else { continue };
            top = top.max(to_revision(kv.mod_revision()));
            match convert(&self.shared.layout, raw) {
                Some(event) => events.push(event),
                None if kv.key() == self.shared.marker().as_bytes() => {}
                None => tracing::warn!(key = %String::from_utf8_lossy(kv.key()), "the watch feed skips a foreign key"),
            }
        }
        let progress = response.events().is_empty() && !response.created() && self.id == Some(response.watch_id());
        if progress {
            top = top.max(header_revision(response.header()));
        }
        if !events.is_empty() {
            self.hub.publish(events);
        }
        if top > self.last {
            self.hub.advance(top);
            self.last = top;
            self.shared.feed.send_modify(|state| state.revision = state.revision.max(top.0));
        }
        None
    }
}

//! `Store`: a backend plus its watch hub, continue tokens and input limits. The API server only sees this.

use std::sync::{Arc, Weak};
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::backend::{Backend, Conflict, Deleted, Record, WriteOp, Written};
use crate::error::{Result, StorageError};
use crate::key::{Key, KeyLayout, KeyRange, SpaceName};
use crate::memory::MemoryBackend;
use crate::sled::{SledBackend, SledConfig};
use crate::tally::{Refused, Tally, TallyChange, TallyOp, TallyRecord};
use crate::watch::{HubConfig, WatchFrom, WatchHub, WatchOptions, Watcher};
use crate::Revision;

/// kube-apiserver's limit on a stored object.
pub const DEFAULT_MAX_VALUE_BYTES: usize = 3 * 1024 * 1024;

/// Settings common to every backend.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    pub layout: KeyLayout,
    pub max_value_bytes: usize,
    pub hub: HubConfig,
    /// How often watchers that asked for bookmarks get one; `None` turns the ticker off (tests call
    /// [`Store::progress`] themselves).
    pub bookmark_interval: Option<Duration>,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            layout: KeyLayout::default(),
            max_value_bytes: DEFAULT_MAX_VALUE_BYTES,
            hub: HubConfig::default(),
            bookmark_interval: Some(Duration::from_secs(30)),
        }
    }
}

/// What to list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListRequest {
    /// Read at this revision (`None`: the latest). Ignored when `continue_token` is set: the token names its
    /// own snapshot.
    pub revision: Option<Revision>,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    /// Do not count the keys past a limited page: `remaining` is then `None` (a reader that pages through
    /// everything saves the count's scan on every page).
    pub skip_remaining: bool,
}

/// One page of a list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListPage {
    pub items: Vec<Record>,
    /// The snapshot every page of this list is read at.
    pub revision: Revision,
    /// Set when more items follow; pass it back to get them from the same snapshot.
    pub continue_token: Option<String>,
    pub remaining: Option<u64>,
}

/// The decoded form of a continue token. `start` is relative to the listed range, so a token can never
/// reach outside the range it is used with.
#[derive(Serialize, Deserialize)]
struct ContinueToken {
    v: u8,
    rv: u64,
    start: String,
}

const TOKEN_VERSION: u8 = 1;

fn encode_token(revision: Revision, range: &KeyRange, last: &Key) -> String {
    let mut start = last.as_str()[range.start().len()..].to_owned();
    start.push('\0');
    let json = serde_json::to_vec(&ContinueToken { v: TOKEN_VERSION, rv: revision.0, start }).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
}

fn decode_token(token: &str) -> Result<(Revision, String)> {
    let invalid = |why: &str| StorageError::InvalidContinue(why.to_owned());
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| invalid("not base64"))?;
    let token: ContinueToken = serde_json::from_slice(&raw).map_err(|_| invalid("not a continue token"))?;
    if token.v != TOKEN_VERSION || token.rv == 0 || token.start.is_empty() {
        return Err(invalid("unknown version or empty position"));
    }
    Ok((Revision(token.rv), token.start))
}

/// A revisioned, watchable object store over one backend.
#[derive(Clone)]
pub struct Store {
    backend: Arc<dyn Backend>,
    hub: Arc<WatchHub>,
    config: StoreConfig,
}

impl Store {
    /// The in-memory reference store.
    pub fn memory(config: StoreConfig) -> Store {
        let hub = WatchHub::new(config.hub, Revision::ZERO);
        Store::from_parts(Arc::new(MemoryBackend::new(hub.clone())), hub, config)
    }

    /// The sled store in `sled.path`, created if missing.
    pub fn open_sled(sled: &SledConfig, config: StoreConfig) -> Result<Store> {
        let hub_config = config.hub;
        let (backend, hub) = SledBackend::open(sled, |revision| WatchHub::new(hub_config, revision))?;
        Ok(Store::from_parts(Arc::new(backend), hub, config))
    }

    /// A store over any backend that publishes to `hub`. Starts the bookmark ticker if configured and a tokio
    /// runtime is running.
    pub fn from_parts(backend: Arc<dyn Backend>, hub: Arc<WatchHub>, config: StoreConfig) -> Store {
        if let (Some(interval), Ok(runtime)) = (config.bookmark_interval, tokio::runtime::Handle::try_current()) {
            runtime.spawn(tick_bookmarks(Arc::downgrade(&backend), Arc::downgrade(&hub), interval));
        }
        Store { backend, hub, config }
    }

    pub fn layout(&self) -> &KeyLayout {
        &self.config.layout
    }

    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    pub async fn get(&self, key: &Key) -> Result<Option<Record>> {
        self.backend.get(key).await
    }

    /// One page of `range`. A continue token resumes the snapshot it came from, or fails with `Expired` once
    /// that snapshot is compacted.
    pub async fn list(&self, range: &KeyRange, request: &ListRequest) -> Result<ListPage> {
        let (at, start) = match &request.continue_token {
            Some(token) => {
                let (revision, start) = decode_token(token)?;
                (Some(revision), Some(format!("{}{}", range.start(), start)))
            }
            None => (request.revision, None),
        };
        let limit = request.limit.filter(|limit| *limit > 0);
        let page = self.backend.list(range, start.as_deref(), at, limit, !request.skip_remaining).await.map_err(|err| match err {
            StorageError::Compacted { requested, compacted } if request.continue_token.is_some() => {
                StorageError::Expired { requested, compacted }
            }
            // A token naming a revision that has not happened was not issued by this store.
            StorageError::FutureRevision { .. } if request.continue_token.is_some() => {
                StorageError::InvalidContinue("names a revision newer than the store's".to_owned())
            }
            other => other,
        })?;
        let continue_token = match page.items.last() {
            Some(last) if page.more => Some(encode_token(page.revision, range, &last.key)),
            _ => None,
        };
        Ok(ListPage { items: page.items, revision: page.revision, continue_token, remaining: page.remaining })
    }

    /// One page of `range` from `start` (inclusive) at revision `at`, as the backend reads it: what a list across
    /// storage clusters (`Clusters`) merges.
    pub(crate) async fn list_raw(&self, range: &KeyRange, start: Option<&str>, at: Option<Revision>, limit: Option<usize>, count_remaining: bool)
        -> Result<crate::backend::RawPage> {
        self.backend.list(range, start, at, limit, count_remaining).await
    }

    /// For each range, whether it holds any object now (one call, however many ranges: how a controller finds
    /// what is left in a space it empties without a list per resource).
    pub async fn occupied(&self, ranges: &[KeyRange]) -> Result<Vec<bool>> {
        self.backend.occupied(ranges).await
    }

    fn check_size(&self, value: &Bytes) -> Result<()> {
        if value.len() > self.config.max_value_bytes {
            return Err(StorageError::ValueTooLarge { size: value.len(), limit: self.config.max_value_bytes });
        }
        Ok(())
    }

    /// A write's value within the size limit (a delete has none).
    fn check_op(&self, op: &WriteOp) -> Result<()> {
        match op {
            WriteOp::Create { value, .. } | WriteOp::Update { value, .. } => self.check_size(value),
            WriteOp::Delete { .. } => Ok(()),
        }
    }

    /// Performs one write (a create, update or delete).
    pub async fn write(&self, op: WriteOp) -> Result<std::result::Result<Written, Conflict>> {
        self.check_op(&op)?;
        self.backend.write(op).await
    }

    /// Creates `key`; a conflict carries the existing record.
    pub async fn create(&self, key: &Key, value: Bytes) -> Result<std::result::Result<Record, Conflict>> {
        Ok(self.write(WriteOp::Create { key: key.clone(), value }).await?.map(Written::into_record))
    }

    /// Replaces `key` if it exists and, when `expected` is given, is still at that revision.
    pub async fn update(&self, key: &Key, value: Bytes, expected: Option<Revision>)
        -> Result<std::result::Result<Record, Conflict>> {
        Ok(self.write(WriteOp::Update { key: key.clone(), value, expected }).await?.map(Written::into_record))
    }

    /// Deletes `key` if it exists and, when `expected` is given, is still at that revision.
    pub async fn delete(&self, key: &Key, expected: Option<Revision>) -> Result<std::result::Result<Deleted, Conflict>> {
        Ok(self.write(WriteOp::Delete { key: key.clone(), expected }).await?.map(Written::into_deleted))
    }

    /// Performs `op` if `space`'s tally is as `tally` expects, replacing the tally in the same transaction (see
    /// [`crate::tally`]).
    pub async fn write_tallied(&self, op: WriteOp, space: &SpaceName, tally: Tally) -> Result<std::result::Result<Written, Refused>> {
        self.check_op(&op)?;
        self.backend.write_tallied(op, space, tally).await
    }

    /// `space`'s tally, if it has one.
    pub async fn tally(&self, space: &SpaceName) -> Result<Option<TallyRecord>> {
        self.backend.tally(space).await
    }

    /// Every change of any space's tally from now on (`None`: this store keeps no tallies).
    pub fn tally_changes(&self) -> Option<tokio::sync::broadcast::Receiver<TallyChange>> {
        self.backend.tally_changes()
    }

    /// Changes `space`'s tally alone: the revision of the change, or the tally as it is now.
    pub async fn change_tally(&self, space: &SpaceName, op: TallyOp) -> Result<std::result::Result<Revision, Option<TallyRecord>>> {
        self.backend.change_tally(space, op).await
    }

    pub async fn current_revision(&self) -> Result<Revision> {
        self.backend.current_revision().await
    }

    pub async fn compact(&self, revision: Revision) -> Result<()> {
        self.backend.compact(revision).await
    }

    pub async fn compacted_revision(&self) -> Result<Revision> {
        self.backend.compacted_revision().await
    }

    /// Watches `range`. Resuming from a revision that is compacted fails at once with `Compacted`. `Now` starts
    /// after the backend's current revision, not the hub's: a write acknowledged before the watch may not have
    /// reached the hub yet (etcd's feed lags its answers), and is not an event of it.
    pub async fn watch(&self, range: &KeyRange, from: WatchFrom, options: WatchOptions) -> Result<Watcher> {
        let revision = match from {
            WatchFrom::Now => self.backend.current_revision().await?,
            WatchFrom::After(revision) => revision,
        };
        let compacted = self.backend.compacted_revision().await?;
        if revision < compacted && revision < self.hub.floor() {
            return Err(StorageError::Compacted { requested: revision, compacted });
        }
        Ok(self.hub.watch(self.backend.clone(), range.clone(), revision, options))
    }

    /// Sends a bookmark to every watcher that asked for them (after asking the backend for progress).
    pub async fn progress(&self) -> Result<()> {
        self.backend.request_progress().await?;
        self.hub.progress();
        Ok(())
    }

    /// True if other processes may write this store too (see [`Backend::shared`]).
    pub fn shared(&self) -> bool {
        self.backend.shared()
    }

    /// The fan-out hub (watcher counts, current revision as seen by watchers).
    pub fn hub(&self) -> &Arc<WatchHub> {
        &self.hub
    }
}

async fn tick_bookmarks(backend: Weak<dyn Backend>, hub: Weak<WatchHub>, interval: Duration) {
    let mut ticker = tokio::time::interval(interval);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        let (Some(backend), Some(hub)) = (backend.upgrade(), hub.upgrade()) else { return };
        if let Err(err) = backend.request_progress().await {
            tracing::debug!(%err, "progress request failed");
        }
        hub.progress();
    }
}
